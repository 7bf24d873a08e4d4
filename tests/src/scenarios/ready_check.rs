//! Ready checks: a formed match is a proposal until everyone accepts; a
//! decline, a leave or silence cancels it, removes only those at fault and
//! puts everyone else back at their original place.

use shared::{
    AnswerOutcome, MatchId, PartyCreateOutcome, PartyJoinOutcome, PartyState, ProposalCancelReason,
    ProposalView, Rejection, ServerMessage,
};

use super::*;

fn ready_rules(world: &str, team: u32, teams: u32, accept: u64, cooldown: u64) -> String {
    format!(
        r#"{{"worlds": [{{"name": "{world}", "teamSize": {team}, "teams": {teams},
            "readyCheck": {{"acceptSeconds": {accept}, "declineCooldownSeconds": {cooldown}}}}}]}}"#
    )
}

async fn proposed(store: &MatchStore, w: &str, p: &str) -> ProposalView {
    match join(store, w, p).await {
        JoinOutcome::Proposed(view) => view,
        other => panic!("{p}: {other:?}"),
    }
}

async fn answer(store: &MatchStore, id: &MatchId, p: &str, accept: bool) -> AnswerOutcome {
    store
        .answer_proposal(id, &player(p), accept)
        .await
        .expect("answer")
}

/// The messages due now (claimed and settled), with their recipients.
pub(super) async fn take_messages(store: &MatchStore) -> Vec<(ServerMessage, Vec<String>)> {
    let entries = store
        .claim_notifications(Duration::from_secs(30), 1000, YOUNG, &[])
        .await
        .expect("claim");
    let mut out = Vec::new();
    let mut done = Vec::new();
    for e in entries {
        if let Some(m) = e.message() {
            out.push((m, e.targets.iter().map(|t| t.player.to_string()).collect()));
        }
        done.push((e.id.clone(), Settlement::Done));
    }
    store.settle_notifications(&done).await.expect("settle");
    out
}

fn cancelled(
    messages: &[(ServerMessage, Vec<String>)],
) -> Vec<(ProposalCancelReason, bool, Vec<String>)> {
    messages
        .iter()
        .filter_map(|(m, to)| match m {
            ServerMessage::MatchCancelled {
                reason, requeued, ..
            } => Some((*reason, *requeued, to.clone())),
            _ => None,
        })
        .collect()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Nothing of any proposal is left.
async fn no_proposal_state(store: &MatchStore) {
    let k = store.keys();
    assert_eq!(hlen(store, &k.proposals()).await, 0);
    assert_eq!(count_states(store, StateKind::Proposal).await, 0);
    assert_eq!(zcard(store, &k.proposal_expiry()).await, 0);
}

/// With everyone accepting, the proposal becomes exactly the match it would
/// have been, announced once (one MATCH_FOUND entry per match id); progress
/// is pushed on the way and a member may not queue elsewhere meanwhile.
pub async fn a_ready_check_makes_the_match_final_when_all_accept(env: &Env) {
    let store = env.store_with(
        "ready-accept",
        "",
        &[("MM_RULES", &ready_rules("duel", 2, 1, 30, 0))],
    );
    join(&store, "duel", "a").await;
    let proposal = proposed(&store, "duel", "b").await;
    assert_eq!(proposal.participants, [player("a"), player("b")]);
    assert!(proposal.accepted.is_empty());
    let id = proposal.match_id.clone();
    let asked = take_messages(&store).await;
    assert!(
        matches!(&asked[..], [(ServerMessage::MatchProposed { match_id, .. }, to)] if *match_id == id && *to == names(&["a", "b"])),
        "{asked:?}"
    );
    assert!(matches!(
        store.player_status(&player("a")).await.unwrap(),
        PlayerStatus::Proposed(p) if p.match_id == id
    ));
    assert!(matches!(
        join(&store, "duel", "a").await,
        JoinOutcome::Rejected(Rejection::ProposalPending(p)) if p.match_id == id
    ));
    assert!(matches!(
        answer(&store, &id, "stranger", true).await,
        AnswerOutcome::NotFound
    ));
    assert!(matches!(
        answer(&store, &id, "a", true).await,
        AnswerOutcome::Accepted {
            accepted: 1,
            total: 2
        }
    ));
    assert!(matches!(
        answer(&store, &id, "a", true).await,
        AnswerOutcome::AlreadyAccepted {
            accepted: 1,
            total: 2
        }
    ));
    let progress = take_messages(&store).await;
    assert!(
        matches!(&progress[..], [(ServerMessage::MatchAcceptProgress { accepted: 1, total: 2, .. }, to)] if *to == names(&["a", "b"])),
        "{progress:?}"
    );
    let record = match answer(&store, &id, "b", true).await {
        AnswerOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    assert_eq!(record.match_id, id);
    assert_eq!(record.participants, [player("a"), player("b")]);
    for p in ["a", "b"] {
        assert!(matches!(
            store.player_status(&player(p)).await.unwrap(),
            PlayerStatus::Matched(m) if m.match_id == id
        ));
    }
    let found = take_messages(&store).await;
    let announcements: Vec<&Vec<String>> = found
        .iter()
        .filter_map(|(m, to)| {
            matches!(m, ServerMessage::MatchFound { record, .. } if record.match_id == id)
                .then_some(to)
        })
        .collect();
    assert_eq!(
        announcements,
        [&names(&["a", "b"])],
        "one MATCH_FOUND per participant: {found:?}"
    );
    assert!(matches!(
        answer(&store, &id, "b", true).await,
        AnswerOutcome::NotFound
    ));
    no_proposal_state(&store).await;
}

/// A decline removes the decliner (who cools down) and puts everyone else
/// back with their original sequence, relative order and a deadline
/// extended by the time they spent in the proposal.
pub async fn decliners_are_removed_and_everyone_else_keeps_their_place(env: &Env) {
    let store = env.store_with(
        "ready-decline",
        "",
        &[("MM_RULES", &ready_rules("squad", 3, 1, 30, 60))],
    );
    let squad = world(&store, "squad");
    let wk = store.keys().world(&squad.name);
    join(&store, "squad", "p1").await;
    join(&store, "squad", "p2").await;
    let seq = |p: &'static str| {
        let store = store.clone();
        let key = wk.queue.clone();
        async move {
            let score: Option<u64> = store
                .command(redis::cmd("ZSCORE").arg(&key).arg(p))
                .await
                .unwrap();
            score
        }
    };
    let deadline = |p: &'static str| {
        let store = store.clone();
        let key = wk.deadlines.clone();
        async move {
            let score: Option<u64> = store
                .command(redis::cmd("ZSCORE").arg(&key).arg(p))
                .await
                .unwrap();
            score.expect("a deadline")
        }
    };
    let (s1, d1) = (seq("p1").await.unwrap(), deadline("p1").await);
    let proposal = proposed(&store, "squad", "p3").await;
    let s3: u64 = store
        .command(redis::cmd("GET").arg(store.keys().ticket_seq()))
        .await
        .unwrap();
    join(&store, "squad", "q1").await;
    assert_eq!(zcard(&store, &wk.queue).await, 1, "only q1 waits");
    take_messages(&store).await;

    assert!(matches!(
        answer(&store, &proposal.match_id, "p1", true).await,
        AnswerOutcome::Accepted { .. }
    ));
    assert!(matches!(
        answer(&store, &proposal.match_id, "p2", false).await,
        AnswerOutcome::Cancelled { requeued: 2, .. }
    ));
    // p2 is out and cools down; p1 and p3 are back in front of q1, with
    // their own sequences and longer deadlines.
    assert_eq!(
        store.player_status(&player("p2")).await.unwrap(),
        PlayerStatus::Idle
    );
    assert!(matches!(
        join(&store, "squad", "p2").await,
        JoinOutcome::Rejected(Rejection::CoolingDown { retry_after_ms, .. }) if retry_after_ms > 50_000
    ));
    let order: Vec<String> = store
        .command(redis::cmd("ZRANGE").arg(&wk.queue).arg(0).arg(-1))
        .await
        .unwrap();
    assert_eq!(order, names(&["p1", "p3", "q1"]));
    assert_eq!(seq("p1").await, Some(s1));
    assert_eq!(seq("p3").await, Some(s3));
    assert!(
        deadline("p1").await >= d1,
        "the deadline is extended, never shortened"
    );
    assert_eq!(
        cancelled(&take_messages(&store).await),
        [
            (ProposalCancelReason::Declined, true, names(&["p1", "p3"])),
            (ProposalCancelReason::Declined, false, names(&["p2"])),
        ]
    );
    // The matcher refills the missing seat from the queue: a new proposal
    // of p1, p3 and q1.
    let batch = store.form_matches(squad, 0).await.unwrap();
    assert_eq!(batch.proposed, 1);
    match store.player_status(&player("q1")).await.unwrap() {
        PlayerStatus::Proposed(p) => {
            assert_eq!(p.participants, [player("p1"), player("p3"), player("q1")])
        }
        other => panic!("{other:?}"),
    }
}

/// Silence: at the time limit the proposal is cancelled (by housekeeping,
/// or by a late answer), only those who did not accept are removed.
pub async fn a_proposal_that_times_out_removes_only_the_silent(env: &Env) {
    let store = env.store_with(
        "ready-timeout",
        "",
        &[("MM_RULES", &ready_rules("duel", 2, 1, 1, 0))],
    );
    let duel = world(&store, "duel");
    let wk = store.keys().world(&duel.name);
    join(&store, "duel", "a").await;
    let first = proposed(&store, "duel", "b").await;
    answer(&store, &first.match_id, "a", true).await;
    take_messages(&store).await;
    let swept = eventually(
        "the proposal to time out",
        Duration::from_secs(10),
        || async {
            let h = store.housekeeping(100).await.unwrap();
            (h.proposals_expired == 1).then_some(h)
        },
    )
    .await;
    assert_eq!(swept.proposals_expired, 1);
    assert_eq!(
        cancelled(&take_messages(&store).await),
        [
            (ProposalCancelReason::Timeout, true, names(&["a"])),
            (ProposalCancelReason::Timeout, false, names(&["b"])),
        ]
    );
    assert!(matches!(
        store.player_status(&player("a")).await.unwrap(),
        PlayerStatus::Queued(_)
    ));
    assert_eq!(
        store.player_status(&player("b")).await.unwrap(),
        PlayerStatus::Idle
    );
    // No cool-down configured: b may come back at once; a late answer to a
    // second proposal cancels it as timed out.
    let second = proposed(&store, "duel", "b").await;
    eventually(
        "the time to accept to run out",
        Duration::from_secs(10),
        || async { (redis_now_ms(&store).await > second.accept_by).then_some(()) },
    )
    .await;
    assert!(matches!(
        answer(&store, &second.match_id, "b", true).await,
        AnswerOutcome::Expired { requeued: 0, .. }
    ));
    assert_eq!(zcard(&store, &wk.queue).await, 0, "nobody accepted in time");
    no_proposal_state(&store).await;
}

/// A party in a proposal goes back whole or leaves whole: a member's
/// decline takes the party out (only the decliner cools down); anyone
/// else's decline sends it back to the queue, whole and queued.
pub async fn a_party_in_a_proposal_stays_whole(env: &Env) {
    let store = env.store_with(
        "ready-party",
        "",
        &[("MM_RULES", &ready_rules("arena", 2, 2, 30, 60))],
    );
    let arena = world(&store, "arena");
    let duo = match store
        .create_party(arena, &player("x"), &[player("y")], None, None)
        .await
        .unwrap()
    {
        PartyCreateOutcome::Created(v) => v.party_id,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        store
            .join_party(arena, &duo, &player("y"), None, None)
            .await
            .unwrap(),
        PartyJoinOutcome::Queued(_)
    ));
    join(&store, "arena", "s1").await;
    let proposal = proposed(&store, "arena", "s2").await;
    // s1 declines: the party goes back whole, s2 too.
    assert!(matches!(
        answer(&store, &proposal.match_id, "s1", false).await,
        AnswerOutcome::Cancelled { requeued: 2, .. }
    ));
    match store.player_status(&player("y")).await.unwrap() {
        PlayerStatus::Queued(q) => {
            let party = q.party.expect("with its party");
            assert_eq!(party.state, PartyState::Queued);
            assert_eq!(q.position, 1, "the party keeps its place in front");
        }
        other => panic!("{other:?}"),
    }
    let queued_parties: Option<String> = store
        .command(
            redis::cmd("HGET")
                .arg(store.keys().world(&world_name("arena")).stats)
                .arg("parties"),
        )
        .await
        .unwrap();
    assert_eq!(queued_parties.as_deref(), Some("1"));
    // s3 completes it again; x declines: the party leaves whole.
    let again = proposed(&store, "arena", "s3").await;
    assert_eq!(again.participants.len(), 4);
    assert!(matches!(
        answer(&store, &again.match_id, "x", false).await,
        AnswerOutcome::Cancelled { requeued: 2, .. }
    ));
    for p in ["x", "y"] {
        assert_eq!(
            store.player_status(&player(p)).await.unwrap(),
            PlayerStatus::Idle,
            "{p}"
        );
    }
    assert!(matches!(
        join(&store, "arena", "x").await,
        JoinOutcome::Rejected(Rejection::CoolingDown { .. })
    ));
    assert!(
        matches!(join(&store, "arena", "y").await, JoinOutcome::Queued(_)),
        "only the decliner cools down"
    );
    let k = store.keys();
    assert_eq!(hlen(&store, &k.parties()).await, 0);
    assert_eq!(count_states(&store, StateKind::Party).await, 0);
}

/// Leaving the queue during a proposal declines it (reason LEFT).
pub async fn leaving_during_a_proposal_cancels_it(env: &Env) {
    let store = env.store_with(
        "ready-leave",
        "",
        &[("MM_RULES", &ready_rules("duel", 2, 1, 30, 0))],
    );
    let duel = world(&store, "duel");
    join(&store, "duel", "a").await;
    let proposal = proposed(&store, "duel", "b").await;
    take_messages(&store).await;
    assert!(matches!(
        store.leave(duel, &player("b")).await.unwrap(),
        LeaveOutcome::Left {
            previous_position: 0,
            remaining_queue_size: 1
        }
    ));
    assert_eq!(
        cancelled(&take_messages(&store).await),
        [
            (ProposalCancelReason::Left, true, names(&["a"])),
            (ProposalCancelReason::Left, false, names(&["b"])),
        ]
    );
    assert!(matches!(
        answer(&store, &proposal.match_id, "a", true).await,
        AnswerOutcome::NotFound
    ));
    no_proposal_state(&store).await;
}
