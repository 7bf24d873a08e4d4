//! A party in several worlds of a `queueGroup`: created with `alsoIn`, its
//! members admitted by every one of its worlds, its one ticket waiting in
//! each with a rating and attributes per world; the first match in any of
//! them takes it from all, and a leave, a decline or a cancelled proposal
//! covers every world. `assert_consistent` checks after each step that each
//! world's count of waiting parties matches its queue.

use serde_json::json;
use shared::use_cases::PartyRejection;
use shared::{
    AnswerOutcome, PartyCreateOutcome, PartyJoinOutcome, PartyState, PartyView, QueuePosition,
};

use super::attributes::store_for;
use super::grouped::{create_in, created, grouped, join_in, queue_of, swept_in};
use super::*;
use crate::assert_consistent;

fn ticket(party: &PartyView) -> String {
    format!("\u{1}{}", party.party_id)
}

fn queued(outcome: &PartyJoinOutcome) -> &QueuePosition {
    match outcome {
        PartyJoinOutcome::Queued(q) => q,
        other => panic!("the party waits: {other:?}"),
    }
}

/// A party waiting in a trio world and a 2 v 2 world is matched in the one
/// that completes first, as one team, and leaves the other in the same
/// step; the members are told its worlds (`alsoQueuedIn`) from creation on.
pub async fn a_party_in_two_worlds_is_matched_in_the_first_that_completes(env: &Env) {
    let rules = grouped(
        json!([{"name": "trio", "teamSize": 3}, {"name": "pairs", "teamSize": 2, "teams": 2}]),
        json!({}),
    );
    let store = store_for(env, "several-party-first", &rules, true);
    let party = created(&store, ("trio", &["pairs"]), "a", &["b"]).await;
    assert_eq!(party.also_queued_in, [world_name("pairs")]);
    let q = queued(&join_in(&store, &party.party_id, "b", &json!({})).await).clone();
    assert_eq!((q.world_type.as_str(), q.position), ("trio", 1));
    assert_eq!(q.also_queued_in, [world_name("pairs")]);
    let view = q.party.as_ref().expect("the party");
    assert_eq!(view.state, PartyState::Queued);
    assert_eq!(view.also_queued_in, [world_name("pairs")]);
    for w in ["trio", "pairs"] {
        assert_eq!(queue_of(&store, w).await, [ticket(&party)], "{w}");
    }
    match store.player_status(&player("a")).await.expect("status") {
        PlayerStatus::Queued(q) => {
            assert_eq!(q.also_queued_in, [world_name("pairs")]);
            assert!(q.party.is_some(), "{q:?}");
        }
        other => panic!("a waits with the party: {other:?}"),
    }
    assert_consistent(&store, false).await;
    // A member cannot queue alone meanwhile, in any of the worlds.
    assert!(matches!(
        join(&store, "pairs", "b").await,
        JoinOutcome::Rejected(Rejection::InParty { .. })
    ));

    // Two solo players complete the 2 v 2 first: the party is one team.
    assert!(matches!(
        join(&store, "pairs", "s1").await,
        JoinOutcome::Queued(_)
    ));
    let JoinOutcome::Matched { record, .. } = join(&store, "pairs", "s2").await else {
        panic!("the 2 v 2 completes");
    };
    assert_eq!(record.world_type.as_str(), "pairs");
    let teams = record.teams.as_ref().expect("teams");
    assert!(
        teams
            .iter()
            .any(|t| t.iter().map(PlayerId::as_str).eq(["a", "b"])),
        "the party plays in one team: {teams:?}"
    );
    assert!(queue_of(&store, "trio").await.is_empty(), "left trio");
    assert_consistent(&store, false).await;
    // The trio world counts no party any more: two solo joins wait.
    for p in ["t1", "t2"] {
        assert!(matches!(
            join(&store, "trio", p).await,
            JoinOutcome::Queued(_)
        ));
    }
    assert_consistent(&store, false).await;
}

/// A member who leaves in any of the party's worlds ends it in all; a
/// member who leaves while the party assembles leaves nothing behind.
pub async fn leaving_a_party_in_one_of_its_worlds_ends_it_in_all(env: &Env) {
    let rules = grouped(
        json!([{"name": "red", "teamSize": 4}, {"name": "blue", "teamSize": 4},
               {"name": "green", "teamSize": 4}]),
        json!({}),
    );
    let store = store_for(env, "several-party-leave", &rules, true);
    let party = created(&store, ("red", &["blue", "green"]), "a", &["b", "c"]).await;
    assert!(matches!(
        join_in(&store, &party.party_id, "b", &json!({})).await,
        PartyJoinOutcome::Joined(_)
    ));
    queued(&join_in(&store, &party.party_id, "c", &json!({})).await);
    for w in ["red", "blue", "green"] {
        assert_eq!(queue_of(&store, w).await, [ticket(&party)], "{w}");
    }
    assert_consistent(&store, false).await;
    let left = store
        .leave(world(&store, "green"), &player("c"))
        .await
        .expect("leave");
    assert!(matches!(left, LeaveOutcome::Left { .. }), "{left:?}");
    for w in ["red", "blue", "green"] {
        assert!(
            queue_of(&store, w).await.is_empty(),
            "{w} still holds the party"
        );
    }
    for p in ["a", "b", "c"] {
        let status = store.player_status(&player(p)).await.expect("status");
        assert!(matches!(status, PlayerStatus::Idle), "{p}: {status:?}");
    }
    assert_consistent(&store, false).await;
}

/// Each rated world rates the party from its members' ratings there; each
/// world with attributes admits every member by its own declaration, and
/// one that refuses a member refuses the join, which writes nothing. A
/// party too large for one of its worlds is refused at creation.
pub async fn a_partys_rating_and_attributes_are_each_worlds(env: &Env) {
    let rules = grouped(
        json!([{"name": "casual", "teamSize": 3},
               {"name": "ranked", "teamSize": 3, "mode": "rating",
                "rating": {"baseWindow": 100, "widenPerSecond": 10, "maxWindow": 400,
                           "relaxAfterSeconds": 60}},
               {"name": "roles", "teamSize": 3, "rules": [
                   {"name": "one", "type": "quota", "attribute": "role", "quotas": [
                       {"value": "tank", "min": 1, "max": 1}, {"value": "healer", "min": 1, "max": 1},
                       {"value": "damage", "min": 1, "max": 1}]}]},
               {"name": "duel", "teamSize": 1, "teams": 2}]),
        json!({"attributes": {"role": {"type": "string", "values": ["tank", "healer", "damage"],
                                       "missing": "refuse"}},
               "ratings": {"default": 1500, "min": 0, "max": 3000}}),
    );
    let store = store_for(env, "several-party-rated", &rules, true);
    for (p, r) in [("a", 1000.0), ("b", 2000.0)] {
        store
            .set_rating(&player(p), Some(&world_name("ranked")), rating(r))
            .await
            .expect("set rating");
    }
    // A duel world takes no parties: the party fits every world or none.
    let refused = create_in(&store, ("casual", &["duel"]), "a", &["b"], &json!({})).await;
    assert!(
        matches!(&refused, Err(PartyRejection::TooLarge { world, .. }) if world.as_str() == "duel"),
        "{refused:?}"
    );
    let worlds: (&str, &[&str]) = ("casual", &["ranked", "roles"]);
    let leader = json!({"roles": {"role": "tank"}});
    let party = match create_in(&store, worlds, "a", &["b"], &leader).await {
        Ok(PartyCreateOutcome::Created(view)) => view,
        other => panic!("created: {other:?}"),
    };
    // b gives no role: the role queue refuses b, and nothing is written.
    let refused = join_in(&store, &party.party_id, "b", &json!({})).await;
    assert!(
        matches!(&refused, PartyJoinOutcome::Rejected(Rejection::AttributesRequired { world_type, .. })
            if world_type.as_str() == "roles"),
        "{refused:?}"
    );
    let status = store.player_status(&player("b")).await.expect("status");
    assert!(matches!(status, PlayerStatus::Idle), "b: {status:?}");
    let joined = join_in(
        &store,
        &party.party_id,
        "b",
        &json!({"roles": {"role": "healer"}}),
    )
    .await;
    queued(&joined);
    // Ranked rates the party 1500, the mean of its members' ranked ratings.
    let ranked = store.keys().world(&world_name("ranked"));
    let rated: Vec<(String, f64)> = store
        .command(
            redis::cmd("ZRANGE")
                .arg(&ranked.ratings)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES"),
        )
        .await
        .expect("ratings");
    assert_eq!(rated.len(), 1, "{rated:?}");
    assert_eq!(rated[0].1, 1500.0, "{rated:?}");
    assert_consistent(&store, false).await;
    // The role queue completes with a damage player, each in their role.
    let JoinOutcome::Matched { record, .. } =
        super::attributes::join_with(&store, "roles", "d", json!({"role": "damage"})).await
    else {
        panic!("the role queue completes");
    };
    let roles = record.roles.as_ref().expect("roles");
    let role = |p: &str| roles.get(p).map(String::as_str);
    assert_eq!(
        (role("a"), role("b"), role("d")),
        (Some("tank"), Some("healer"), Some("damage"))
    );
    for w in ["casual", "ranked"] {
        assert!(queue_of(&store, w).await.is_empty(), "{w}");
    }
    assert_consistent(&store, false).await;
}

/// A ready check in one world holds the party out of all its worlds; when
/// another player declines, the party goes back to every world at its old
/// place (and is counted there again); a member's decline ends it in all.
pub async fn a_ready_check_holds_a_party_out_of_all_its_worlds(env: &Env) {
    let rules = grouped(
        json!([{"name": "ready", "teamSize": 4,
                "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 0}},
               {"name": "casual", "teamSize": 4}]),
        json!({}),
    );
    let store = store_for(env, "several-party-ready", &rules, true);
    assert!(matches!(
        join(&store, "casual", "first").await,
        JoinOutcome::Queued(_)
    ));
    let party = created(&store, ("casual", &["ready"]), "a", &["b"]).await;
    queued(&join_in(&store, &party.party_id, "b", &json!({})).await);
    assert_eq!(
        queue_of(&store, "casual").await,
        ["first".to_string(), ticket(&party)]
    );
    assert!(matches!(
        join(&store, "ready", "q1").await,
        JoinOutcome::Queued(_)
    ));
    let JoinOutcome::Proposed(proposal) = join(&store, "ready", "q2").await else {
        panic!("a ready check");
    };
    assert_eq!(
        queue_of(&store, "casual").await,
        ["first"],
        "held out of casual"
    );
    assert_consistent(&store, false).await;
    let answer = store
        .answer_proposal(&proposal.match_id, &player("q1"), false)
        .await
        .expect("decline");
    assert!(
        matches!(answer, AnswerOutcome::Cancelled { .. }),
        "{answer:?}"
    );
    assert_eq!(
        queue_of(&store, "casual").await,
        ["first".to_string(), ticket(&party)]
    );
    assert!(queue_of(&store, "ready").await.contains(&ticket(&party)));
    assert_consistent(&store, false).await;

    let JoinOutcome::Proposed(again) = join(&store, "ready", "q3").await else {
        panic!("a second ready check");
    };
    store
        .answer_proposal(&again.match_id, &player("b"), false)
        .await
        .expect("decline");
    for w in ["ready", "casual"] {
        assert!(!queue_of(&store, w).await.contains(&ticket(&party)), "{w}");
    }
    for p in ["a", "b"] {
        let status = store.player_status(&player(p)).await.expect("status");
        assert!(matches!(status, PlayerStatus::Idle), "{p}: {status:?}");
    }
    assert_consistent(&store, false).await;
}

/// An expired party ticket leaves every world when any of them sweeps it,
/// and an operator's removal in one of its worlds removes it from all;
/// each world's waiting-party count follows.
pub async fn a_sweep_or_an_operator_in_one_world_ends_a_party_in_all(env: &Env) {
    let rules = grouped(
        json!([{"name": "east", "teamSize": 3, "ticketTtlSeconds": 1},
               {"name": "west", "teamSize": 3, "ticketTtlSeconds": 1}]),
        json!({}),
    );
    let store = store_for(env, "several-party-sweep", &rules, false);
    let party = created(&store, ("east", &["west"]), "a", &["b"]).await;
    queued(&join_in(&store, &party.party_id, "b", &json!({})).await);
    assert_eq!(queue_of(&store, "east").await, [ticket(&party)]);
    swept_in(&store, "west").await;
    for w in ["east", "west"] {
        assert!(queue_of(&store, w).await.is_empty(), "{w} holds the party");
    }
    for p in ["a", "b"] {
        let status = store.player_status(&player(p)).await.expect("status");
        assert!(matches!(status, PlayerStatus::Idle), "{p}: {status:?}");
    }
    assert_consistent(&store, false).await;

    let party = created(&store, ("west", &["east"]), "c", &["d"]).await;
    queued(&join_in(&store, &party.party_id, "d", &json!({})).await);
    let removed = store
        .admin_remove_ticket(world(&store, "east"), &player("c"))
        .await
        .expect("remove");
    assert!(
        matches!(
            removed,
            shared::domain::TicketRemoval::Removed {
                players_told: 2,
                ..
            }
        ),
        "{removed:?}"
    );
    for w in ["east", "west"] {
        assert!(queue_of(&store, w).await.is_empty(), "{w} holds the party");
    }
    assert_consistent(&store, false).await;
}
