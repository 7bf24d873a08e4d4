//! One ticket in several worlds (a `queueGroup`): a player waits in up to
//! four worlds at once, at one place in each; the first match in any of
//! them takes the ticket from all, in the same atomic call, and a leave,
//! an expiry, a lost connection or a ready check covers every world the
//! ticket waits in. `assert_consistent` checks after each step that every
//! queue entry belongs to a waiting ticket that names that world, and that
//! a ticket waits in exactly the worlds its state names.

use serde_json::json;
use shared::{AnswerOutcome, PartyJoinOutcome};

use super::attributes::store_for;
use super::grouped::{created, grouped, join_in, join_many, queue_of, swept_in};
use super::*;
use crate::assert_consistent;

fn also_of(outcome: &JoinOutcome) -> Vec<&str> {
    match outcome {
        JoinOutcome::Queued(q) => q.also_queued_in.iter().map(WorldName::as_str).collect(),
        other => panic!("expected QUEUED, got {other:?}"),
    }
}

fn matched(outcome: &JoinOutcome) -> &MatchRecord {
    match outcome {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("expected MATCHED, got {other:?}"),
    }
}

/// "Casual or ranked, whichever comes first": a player waiting in a duo
/// and a trio world is matched in the one that completes first, and leaves
/// the other in the same step; others keep their places.
pub async fn a_player_in_two_worlds_is_matched_in_the_first_that_completes(env: &Env) {
    let rules = grouped(
        json!([{"name": "duo", "teamSize": 2}, {"name": "trio", "teamSize": 3}]),
        json!({}),
    );
    let store = store_for(env, "several-first", &rules, true);
    let none = json!({});
    let first = join_many(&store, "p1", "trio", &["duo"], &none).await;
    assert_eq!(also_of(&first), ["duo"]);
    match store.player_status(&player("p1")).await.expect("status") {
        PlayerStatus::Queued(q) => {
            assert_eq!(q.world_type.as_str(), "trio");
            assert_eq!(q.also_queued_in, [world_name("duo")]);
        }
        other => panic!("p1 waits: {other:?}"),
    }
    assert!(queued(&join(&store, "trio", "p2").await));
    assert_eq!(queue_of(&store, "trio").await, ["p1", "p2"]);
    assert_eq!(queue_of(&store, "duo").await, ["p1"]);
    assert_consistent(&store, false).await;

    // The duo completes first: p1 plays there and leaves the trio queue.
    let record = matched(&join(&store, "duo", "p3").await).clone();
    assert_eq!(record.world_type.as_str(), "duo");
    assert_eq!(super::attributes::names(&record), ["p1", "p3"]);
    assert_eq!(queue_of(&store, "trio").await, ["p2"]);
    assert!(queue_of(&store, "duo").await.is_empty());
    assert_consistent(&store, false).await;
    // The trio now needs two more: p1 is not counted twice.
    assert!(queued(&join(&store, "trio", "p4").await));
    assert_eq!(queue_of(&store, "trio").await, ["p2", "p4"]);
}

fn queued(outcome: &JoinOutcome) -> bool {
    matches!(outcome, JoinOutcome::Queued(_))
}

/// Leaving any of the worlds leaves all of them; the ticket keeps one
/// place (one sequence) in each, so FIFO order is the same everywhere.
pub async fn leaving_one_world_leaves_every_world_of_the_ticket(env: &Env) {
    let rules = grouped(
        json!([{"name": "red", "teamSize": 3}, {"name": "blue", "teamSize": 3},
               {"name": "green", "teamSize": 3}]),
        json!({}),
    );
    let store = store_for(env, "several-leave", &rules, false);
    let none = json!({});
    assert!(queued(&join(&store, "blue", "early").await));
    let outcome = join_many(&store, "p", "red", &["blue", "green"], &none).await;
    assert_eq!(also_of(&outcome), ["blue", "green"]);
    assert_eq!(queue_of(&store, "blue").await, ["early", "p"]);
    // Joining again, in any world of the ticket, is refused, naming them.
    match join(&store, "green", "p").await {
        JoinOutcome::Rejected(Rejection::AlreadyQueued(q)) => {
            assert_eq!(q.world_type.as_str(), "red");
            assert_eq!(q.also_queued_in, [world_name("blue"), world_name("green")]);
        }
        other => panic!("p holds a ticket: {other:?}"),
    }
    assert_consistent(&store, false).await;
    let left = store.leave(world(&store, "green"), &player("p")).await;
    assert!(matches!(left, Ok(LeaveOutcome::Left { .. })), "{left:?}");
    for w in ["red", "green"] {
        assert!(queue_of(&store, w).await.is_empty(), "{w} still holds p");
    }
    assert_eq!(queue_of(&store, "blue").await, ["early"]);
    assert!(matches!(
        store.player_status(&player("p")).await.expect("status"),
        PlayerStatus::Idle
    ));
    assert_consistent(&store, false).await;
}

/// The matcher of one world takes a shared ticket from the others; an
/// expired shared ticket leaves every world when any world sweeps it.
pub async fn a_matcher_or_a_sweep_in_one_world_takes_the_ticket_from_all(env: &Env) {
    let rules = grouped(
        json!([{"name": "east", "teamSize": 2, "ticketTtlSeconds": 1},
               {"name": "west", "teamSize": 2, "ticketTtlSeconds": 1}]),
        json!({}),
    );
    let store = store_for(env, "several-matcher", &rules, false);
    let none = json!({});
    join_many(&store, "a", "east", &["west"], &none).await;
    join_many(&store, "b", "west", &["east"], &none).await;
    assert_eq!(queue_of(&store, "east").await, ["a", "b"]);
    let formed = tick(&store, "west").await;
    assert_eq!(formed.len(), 1);
    assert_eq!(formed[0].world_type.as_str(), "west");
    for w in ["east", "west"] {
        assert!(
            queue_of(&store, w).await.is_empty(),
            "{w} still holds a shared ticket"
        );
    }
    assert!(
        tick(&store, "east").await.is_empty(),
        "nobody is matched twice"
    );
    assert_consistent(&store, false).await;

    join_many(&store, "c", "east", &["west"], &none).await;
    let east = world(&store, "east");
    swept_in(&store, "west").await;
    assert!(queue_of(&store, "east").await.is_empty());
    assert!(store.queue_status(east).await.expect("status").waiting == 0);
    assert_consistent(&store, false).await;

    // An expired shared ticket not swept yet gives way to a join into its
    // second world: it leaves both, and the new place is counted without it.
    join_many(&store, "d", "east", &["west"], &none).await;
    eventually("d's ticket to expire", Duration::from_secs(5), || async {
        let idle = matches!(
            store.player_status(&player("d")).await.expect("status"),
            PlayerStatus::Idle
        );
        idle.then_some(())
    })
    .await;
    assert_eq!(queue_of(&store, "west").await, ["d"], "not swept yet");
    let again = join(&store, "west", "d").await;
    assert_eq!(super::queued_at(&again), (1, 1), "{again:?}");
    assert!(queue_of(&store, "east").await.is_empty());
    assert_consistent(&store, false).await;
}

async fn tick(store: &MatchStore, w: &str) -> Vec<MatchRecord> {
    super::attributes::tick(store, w).await
}

/// A ready check in one world holds the shared ticket out of every world;
/// when another player declines, it goes back to all of them at its old
/// place, and a decline of its own removes it from all.
pub async fn a_ready_check_holds_a_shared_ticket_out_of_every_world(env: &Env) {
    let rules = grouped(
        json!([{"name": "ranked", "teamSize": 2,
                "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 0}},
               {"name": "casual", "teamSize": 3}]),
        json!({}),
    );
    let store = store_for(env, "several-ready", &rules, true);
    let none = json!({});
    assert!(queued(&join(&store, "casual", "first").await));
    join_many(&store, "p", "casual", &["ranked"], &none).await;
    assert_eq!(queue_of(&store, "casual").await, ["first", "p"]);
    let proposal = match join(&store, "ranked", "q").await {
        JoinOutcome::Proposed(view) => view,
        other => panic!("a ready check: {other:?}"),
    };
    assert!(
        queue_of(&store, "casual").await == ["first"],
        "held out of casual"
    );
    assert!(queue_of(&store, "ranked").await.is_empty());
    assert_consistent(&store, false).await;
    let answer = store
        .answer_proposal(&proposal.match_id, &player("q"), false)
        .await
        .expect("decline");
    assert!(
        matches!(answer, AnswerOutcome::Cancelled { .. }),
        "{answer:?}"
    );
    // p is back in both worlds, behind `first` as before.
    assert_eq!(queue_of(&store, "casual").await, ["first", "p"]);
    assert_eq!(queue_of(&store, "ranked").await, ["p"]);
    match store.player_status(&player("p")).await.expect("status") {
        PlayerStatus::Queued(q) => {
            assert_eq!(q.world_type.as_str(), "casual");
            assert_eq!(q.also_queued_in, [world_name("ranked")]);
        }
        other => panic!("p is requeued: {other:?}"),
    }
    assert_consistent(&store, false).await;

    let again = match join(&store, "ranked", "r").await {
        JoinOutcome::Proposed(view) => view,
        other => panic!("a ready check: {other:?}"),
    };
    store
        .answer_proposal(&again.match_id, &player("p"), false)
        .await
        .expect("decline");
    for w in ["ranked", "casual"] {
        assert!(
            !queue_of(&store, w).await.contains(&"p".to_string()),
            "{w} holds p"
        );
    }
    assert_consistent(&store, false).await;
}

/// A ticket's attributes differ per world: a role in the role queue, none
/// in the casual world; each world's rules see its own. A world that
/// refuses the player refuses the whole join, and nothing is written.
pub async fn a_shared_ticket_carries_each_worlds_attributes(env: &Env) {
    let rules = grouped(
        json!([{"name": "roles", "teamSize": 2, "rules": [
                   {"name": "one", "type": "quota", "attribute": "role", "quotas": [
                       {"value": "tank", "min": 1, "max": 1}, {"value": "healer", "min": 1, "max": 1}]}]},
               {"name": "plain", "teamSize": 3}]),
        json!({"attributes": {"role": {"type": "string", "values": ["tank", "healer"], "missing": "refuse"}}}),
    );
    let store = store_for(env, "several-attrs", &rules, true);
    // No role for the role queue: refused there, so queued nowhere.
    let before = snapshot(&store).await;
    let refused = join_many(&store, "x", "plain", &["roles"], &json!({})).await;
    assert!(
        matches!(
            refused,
            JoinOutcome::Rejected(Rejection::AttributesRequired { .. })
        ),
        "{refused:?}"
    );
    assert_eq!(
        snapshot(&store).await,
        before,
        "a refused join writes nothing"
    );

    let tank = json!({"roles": {"role": "tank"}});
    join_many(&store, "t", "plain", &["roles"], &tank).await;
    let record = match join_many(
        &store,
        "h",
        "roles",
        &[],
        &json!({"roles": {"role": "healer"}}),
    )
    .await
    {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("tank and healer: {other:?}"),
    };
    super::attributes::recheck(&store, &record);
    let roles = record.roles.clone().expect("roles");
    assert_eq!(roles.get("t").map(String::as_str), Some("tank"));
    assert!(queue_of(&store, "plain").await.is_empty());
    assert_consistent(&store, false).await;
}

/// A player who loses their last connection leaves every world their
/// ticket waits in; a backfill of one world seats a shared ticket and takes
/// it from the others.
pub async fn a_lost_connection_or_a_backfill_seat_takes_the_ticket_from_all(env: &Env) {
    let rules = grouped(
        json!([{"name": "live", "teamSize": 2, "requirePresence": true},
               {"name": "any", "teamSize": 2, "teams": 2}]),
        json!({}),
    );
    let store = env.store_with(
        "several-presence",
        "",
        &[
            ("MM_RULES", &rules.to_string()),
            ("MM_REMOVE_TICKET_ON_DISCONNECT", "true"),
        ],
    );
    let none = json!({});
    let conn = shared::ConnectionId::parse("conn-a").expect("id");
    store
        .register_connection(&conn, &player("a"))
        .await
        .expect("register");
    join_many(&store, "a", "live", &["any"], &none).await;
    assert_eq!(queue_of(&store, "any").await, ["a"]);
    store
        .unregister_connection(&conn)
        .await
        .expect("unregister");
    for w in ["live", "any"] {
        assert!(queue_of(&store, w).await.is_empty(), "{w} still holds a");
    }
    assert!(matches!(
        store.player_status(&player("a")).await.expect("status"),
        PlayerStatus::Idle
    ));
    assert_consistent(&store, false).await;

    // A running 2 v 2 in `any` asks for one player; a shared ticket takes
    // the seat and leaves `live`.
    for p in ["p1", "p2", "p3"] {
        assert!(queued(&join(&store, "any", p).await));
    }
    let record = matched(&join(&store, "any", "p4").await).clone();
    super::roles::assign(&store, &record).await;
    let teams = super::roles::staying(&record, "p1");
    let asked = store
        .request_backfill(&record.match_id, &teams, None)
        .await
        .expect("backfill");
    assert!(
        matches!(asked, shared::store::BackfillOutcome::Open { .. }),
        "{asked:?}"
    );
    let b = shared::ConnectionId::parse("conn-b").expect("id");
    store
        .register_connection(&b, &player("b"))
        .await
        .expect("register");
    let seated = join_many(&store, "b", "live", &["any"], &none).await;
    assert!(
        matches!(seated, JoinOutcome::Backfilled { .. }),
        "b fills the open seat in `any`: {seated:?}"
    );
    assert!(queue_of(&store, "live").await.is_empty(), "b left live");
    assert!(matches!(
        store.player_status(&player("b")).await.expect("status"),
        PlayerStatus::Matched(_)
    ));
}

/// Players in worlds of their own choosing while matchers of every world
/// race (FIFO, rated, teams and a ready check), some leaving and some
/// declining: no player is matched twice, no ticket is lost (everyone is
/// matched, still waiting or in a proposal, or left or declined), and every
/// ticket waits in exactly the worlds its state names.
pub async fn racing_matchers_never_match_a_shared_ticket_twice(env: &Env) {
    let rules = grouped(
        json!([{"name": "w1", "teamSize": 2}, {"name": "w2", "teamSize": 3, "mode": "rating",
                "rating": {"baseWindow": 100, "widenPerSecond": 1000, "maxWindow": 3000,
                           "relaxAfterSeconds": 1}},
               {"name": "w3", "teamSize": 2, "teams": 2},
               {"name": "w4", "teamSize": 2,
                "readyCheck": {"acceptSeconds": 60, "declineCooldownSeconds": 0}}]),
        json!({"ratings": {"default": 1500, "min": 0, "max": 3000}}),
    );
    let store = Arc::new(store_for(env, "several-race", &rules, true));
    let names = ["w1", "w2", "w3", "w4"];
    let stop = Arc::new(AtomicBool::new(false));
    let mut matchers = Vec::new();
    for w in names {
        let (store, stop) = (store.clone(), stop.clone());
        matchers.push(tokio::spawn(async move {
            let mut records = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                records.extend(tick(&store, w).await);
            }
            records
        }));
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(38);
    let mut joined = Vec::new();
    let (mut left, mut declined) = (BTreeSet::new(), BTreeSet::new());
    let mut records: Vec<MatchRecord> = Vec::new();
    // Party members, each to the other.
    let mut mates: BTreeMap<String, String> = BTreeMap::new();
    // Running 2 v 2 matches of w3 that asked for a player: their players.
    let mut backfills: BTreeMap<shared::MatchId, Vec<PlayerId>> = BTreeMap::new();
    let none = json!({});
    for i in 0..240 {
        let p = format!("p{i}");
        let k = rng.random_range(1..=3);
        let mut picked: Vec<&str> = names.to_vec();
        for j in 0..names.len() {
            picked.swap(j, rng.random_range(j..names.len()));
        }
        picked.truncate(k);
        if rng.random_bool(0.15) {
            // A party of two in the same worlds.
            let mate = format!("{p}m");
            let party = created(&store, (picked[0], &picked[1..]), &p, &[&mate]).await;
            match join_in(&store, &party.party_id, &mate, &none).await {
                PartyJoinOutcome::Matched { formed, .. } => records.extend(formed),
                PartyJoinOutcome::Queued(_) | PartyJoinOutcome::Proposed(_) => {}
                other => panic!("{mate} completes the party: {other:?}"),
            }
            mates.insert(mate.clone(), p.clone());
            mates.insert(p.clone(), mate.clone());
            joined.push(mate);
        } else {
            let outcome = join_many(&store, &p, picked[0], &picked[1..], &none).await;
            if let JoinOutcome::Matched { formed, .. } = &outcome {
                records.extend(formed.iter().cloned());
            }
        }
        if rng.random_bool(0.1) {
            let leave_in = world(&store, picked[k - 1]);
            if let LeaveOutcome::Left { .. } =
                store.leave(leave_in, &player(&p)).await.expect("leave")
            {
                left.insert(p.clone());
            }
        }
        joined.push(p);
        if i % 20 == 19 {
            answer_proposals(&store, &joined, &mut rng, &mut declined, &mut records).await;
        }
        if i % 30 == 29 {
            // A player of a running w3 match leaves: its server asks for one
            // more, whom a join or a matcher seats.
            let running = records
                .iter()
                .find(|r| r.world_type.as_str() == "w3" && !backfills.contains_key(&r.match_id));
            if let Some(r) = running {
                super::roles::assign(&store, r).await;
                let teams = super::roles::staying(r, r.participants[0].as_str());
                let asked = store
                    .request_backfill(&r.match_id, &teams, None)
                    .await
                    .expect("backfill");
                if matches!(asked, shared::store::BackfillOutcome::Open { .. }) {
                    backfills.insert(r.match_id.clone(), r.participants.clone());
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for m in matchers {
        records.extend(m.await.expect("matcher"));
    }
    let mut seen = BTreeSet::new();
    for r in &records {
        for p in &r.participants {
            assert!(seen.insert(p.to_string()), "{p} matched twice");
        }
    }
    assert!(records.len() > 20, "matches formed: {}", records.len());
    assert!(!declined.is_empty(), "someone declined a ready check");
    assert!(
        mates.keys().any(|p| seen.contains(p)),
        "a party was matched"
    );
    // A member who left or declined took the party with them.
    let gone = |p: &String| left.contains(p) || declined.contains(p);
    // Players a backfill seated: never also in a match formed from the
    // queues (one unfinished match each).
    let mut seated = BTreeSet::new();
    for p in &joined {
        if let PlayerStatus::Matched(m) = store.player_status(&player(p)).await.expect("status") {
            let Some(original) = backfills.get(&m.record.match_id) else {
                continue;
            };
            if !original.iter().any(|o| o.as_str() == p) {
                assert!(!seen.contains(p), "{p} seated by a backfill and matched");
                seated.insert(p.clone());
            }
        }
    }
    assert!(
        !seated.is_empty(),
        "a backfill seated someone: {backfills:?}"
    );
    for p in &joined {
        if seen.contains(p) || seated.contains(p) || gone(p) || mates.get(p).is_some_and(gone) {
            continue;
        }
        let status = store.player_status(&player(p)).await.expect("status");
        assert!(
            matches!(status, PlayerStatus::Queued(_) | PlayerStatus::Proposed(_)),
            "{p} was neither matched nor gone, yet {status:?}"
        );
    }
    assert_consistent(&store, false).await;
}

/// Answers the pending ready checks of `players`: one in five declines
/// (and is out), the others accept; a match made final is recorded.
async fn answer_proposals(
    store: &MatchStore,
    players: &[String],
    rng: &mut rand::rngs::StdRng,
    declined: &mut BTreeSet<String>,
    records: &mut Vec<MatchRecord>,
) {
    for p in players {
        let PlayerStatus::Proposed(view) = store.player_status(&player(p)).await.expect("status")
        else {
            continue;
        };
        let accept = !rng.random_bool(0.2);
        match store
            .answer_proposal(&view.match_id, &player(p), accept)
            .await
            .expect("answer")
        {
            AnswerOutcome::Matched { record, .. } => records.push(*record),
            AnswerOutcome::Cancelled { .. } => {
                declined.insert(p.clone());
            }
            _ => {}
        }
    }
}
