//! The operator's scripts: a queue read page by page, a ticket removed with
//! its player told, a proposal cancelled with everyone back at their place,
//! a world's matches listed with their lifecycles.

use shared::domain::{ProposalCancellation, RemovalReason, TicketRemoval};
use shared::{ProposalCancelReason, ServerMessage};

use super::ready_check::take_messages;
use super::*;

/// Pages of `limit` tickets cover the whole queue once, oldest first; a
/// removal takes exactly one ticket, tells its player (OPERATOR) and a
/// repeat finds nothing.
pub async fn an_operator_pages_through_a_queue_and_removes_a_ticket(env: &Env) {
    let store = env.store("admin-tickets", "wide:10");
    let wide = world(&store, "wide");
    let names = ["a1", "a2", "a3", "a4", "a5", "a6", "a7"];
    // Fewer than a match (ten): everyone waits.
    for p in names {
        join(&store, "wide", p).await;
    }
    let mut seen = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let page = store.admin_tickets(wide, after, 3).await.expect("page");
        assert_eq!(page.waiting, 7);
        assert!(page.tickets.len() <= 3);
        pages += 1;
        for t in &page.tickets {
            assert!(t.joined_at > 0 && t.deadline_at > t.joined_at, "{t:?}");
            seen.extend(t.players.iter().map(|p| p.to_string()));
        }
        match page.next_after {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, names);
    take_messages(&store).await;

    let removed = store
        .admin_remove_ticket(wide, &player("a2"))
        .await
        .expect("remove");
    assert_eq!(
        removed,
        TicketRemoval::Removed {
            previous_position: 2,
            remaining_queue_size: 6,
            players_told: 1
        }
    );
    let told: Vec<_> = take_messages(&store).await;
    assert_eq!(
        told,
        vec![(
            ServerMessage::TicketRemoved {
                world_type: wide.name.clone(),
                reason: RemovalReason::Operator
            },
            vec!["a2".to_owned()]
        )]
    );
    assert!(matches!(
        store.player_status(&player("a2")).await.expect("status"),
        PlayerStatus::Idle
    ));
    let again = store
        .admin_remove_ticket(wide, &player("a2"))
        .await
        .expect("again");
    assert_eq!(
        again,
        TicketRemoval::NotQueued {
            state: "idle".into(),
            world: None
        }
    );
    assert!(
        take_messages(&store).await.is_empty(),
        "a repeat tells nobody"
    );
    let page = store.admin_tickets(wide, 0, 200).await.expect("page");
    assert_eq!(page.waiting, 6);
    assert!(!page.tickets.iter().any(|t| t.players == [player("a2")]));
}

/// A cancelled proposal puts both tickets back at their places, nobody
/// cools down, both hear MATCH_CANCELLED (OPERATOR, requeued); a repeat
/// finds nothing. The matches page lists the proposal, then the matches.
pub async fn an_operator_cancels_a_proposal_and_lists_matches(env: &Env) {
    let rules = r#"{"worlds": [
        {"name": "duel", "teamSize": 2, "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 60}},
        {"name": "pair", "teamSize": 2}]}"#;
    let store = env.store_with("admin-proposal", "", &[("MM_RULES", rules)]);
    let duel = world(&store, "duel");
    let wk = store.keys().world(&duel.name);
    join(&store, "duel", "d1").await;
    let seq_before: Option<u64> = store
        .command(redis::cmd("ZSCORE").arg(&wk.queue).arg("d1"))
        .await
        .expect("zscore");
    let id = match join(&store, "duel", "d2").await {
        JoinOutcome::Proposed(view) => view.match_id,
        other => panic!("{other:?}"),
    };
    let page = store
        .admin_matches(&duel.name, 0, 10)
        .await
        .expect("matches");
    assert_eq!(page.proposals.len(), 1);
    assert_eq!(page.proposals[0].match_id, id);
    assert_eq!(page.proposals[0].players, [player("d1"), player("d2")]);
    take_messages(&store).await;

    let cancelled = store.admin_cancel_proposal(&id).await.expect("cancel");
    assert_eq!(
        cancelled,
        ProposalCancellation::Cancelled {
            world: "duel".into(),
            requeued: 2
        }
    );
    let seq_after: Option<u64> = store
        .command(redis::cmd("ZSCORE").arg(&wk.queue).arg("d1"))
        .await
        .expect("zscore");
    assert_eq!(seq_after, seq_before, "d1 keeps its place");
    for p in ["d1", "d2"] {
        assert!(
            matches!(
                store.player_status(&player(p)).await.expect("status"),
                PlayerStatus::Queued(_)
            ),
            "{p} is back in the queue, not cooling down"
        );
    }
    let told: Vec<_> = take_messages(&store)
        .await
        .into_iter()
        .filter_map(|(m, to)| match m {
            ServerMessage::MatchCancelled {
                reason, requeued, ..
            } => Some((reason, requeued, to)),
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        vec![(
            ProposalCancelReason::Operator,
            true,
            vec!["d1".to_owned(), "d2".to_owned()]
        )]
    );
    assert_eq!(
        store.admin_cancel_proposal(&id).await.expect("again"),
        ProposalCancellation::NotFound
    );

    // Matches of another world are not on this world's page.
    for p in ["m1", "m2", "m3", "m4"] {
        join(&store, "pair", p).await;
    }
    let pair = world(&store, "pair");
    let page = store.admin_matches(&pair.name, 0, 10).await.expect("page");
    assert!(page.proposals.is_empty());
    assert_eq!(page.matches.len(), 2);
    assert_eq!(page.next_offset, None);
    for m in &page.matches {
        assert_eq!(m.record.world_type, pair.name);
        assert_eq!(m.lifecycle.state, shared::MatchState::Formed);
    }
    let one = store.admin_matches(&pair.name, 0, 1).await.expect("page");
    assert_eq!(one.matches.len(), 1);
    assert_eq!(one.next_offset, Some(1));
    let duel_page = store.admin_matches(&duel.name, 0, 10).await.expect("page");
    assert!(duel_page.matches.is_empty());
}
