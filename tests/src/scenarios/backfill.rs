//! Backfills: a running match's open seats are filled from the waiting
//! tickets before any new match forms, with the match's rules; a backfill
//! is replaced atomically, renewed or it lapses, and bad requests change
//! nothing.

use shared::delivery::drain_outbox;
use shared::store::{AssignOutcome, BackfillOutcome};
use shared::use_cases::{self, ResultReport};
use shared::{Assignment, MatchState, PartyCreateOutcome, PartyJoinOutcome, Rejection};

use super::lifecycle::{RecordingEvents, RecordingPusher};
use super::*;

fn squad_rules(extra_world: &str) -> String {
    format!(
        r#"{{"worlds": [{{"name": "squad", "teamSize": 2, "teams": 2, {extra_world}
            "maxPartySize": 2}}]}}"#
    )
}

fn teams(lists: &[&[&str]]) -> Vec<Vec<PlayerId>> {
    lists
        .iter()
        .map(|t| t.iter().map(|p| player(p)).collect())
        .collect()
}

async fn assign(store: &MatchStore, id: &shared::MatchId) {
    let a: Assignment =
        serde_json::from_value(serde_json::json!({"connection": "10.0.0.1:7777"})).unwrap();
    assert!(matches!(
        store.assign_match(id, &a).await.unwrap(),
        AssignOutcome::Assigned(_)
    ));
}

/// Forms one 2 x 2 match of a, b, c, d (instant matching off: the matcher
/// forms it) and assigns it.
async fn running_match(store: &MatchStore) -> MatchRecord {
    for p in ["a", "b", "c", "d"] {
        assert!(matches!(
            join(store, "squad", p).await,
            JoinOutcome::Queued(_)
        ));
    }
    let batch = store.form_matches(world(store, "squad"), 0).await.unwrap();
    let record = batch.matches.into_iter().next().expect("a match");
    assign(store, &record.match_id).await;
    record
}

fn open_backfill(outcome: BackfillOutcome) -> shared::domain::Backfill {
    match outcome {
        BackfillOutcome::Open { backfill, .. } => backfill,
        other => panic!("{other:?}"),
    }
}

async fn matched_in(store: &MatchStore, p: &str) -> Option<shared::MatchWithLifecycle> {
    match store.player_status(&player(p)).await.unwrap() {
        PlayerStatus::Matched(m) => Some(*m),
        _ => None,
    }
}

/// A seat the backfill opened is taken by the oldest waiting ticket before
/// the matcher forms a new match from the same tickets; the new player is
/// in the record (in the team with the seat), is told MATCH_FOUND (marked
/// backfill) and MATCH_ASSIGNED, and plays (IN_MATCH) like the others.
pub async fn a_backfilled_seat_is_taken_before_a_new_match_forms(env: &Env) {
    let store = env.store_with(
        "backfill-first",
        "",
        &[
            ("MM_RULES", &squad_rules("")),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let record = running_match(&store).await;
    let t = record.teams.clone().unwrap();
    let (stay1, gone, team2) = (t[0][0].as_str(), t[0][1].as_str(), &t[1]);
    // `gone` left team 1.
    assert!(!gone.is_empty());
    let b = open_backfill(
        store
            .request_backfill(
                &record.match_id,
                &teams(&[&[stay1], &[team2[0].as_str(), team2[1].as_str()]]),
                None,
            )
            .await
            .unwrap(),
    );
    assert_eq!(b.open, [1, 0]);
    let status = store.queue_status(world(&store, "squad")).await.unwrap();
    assert_eq!((status.open_backfills, status.waiting), (1, 0));
    connect(&store, "e").await;
    for p in ["e", "f", "g", "h", "i"] {
        assert!(matches!(
            join(&store, "squad", p).await,
            JoinOutcome::Queued(_)
        ));
    }
    let batch = store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert_eq!(batch.backfilled, 1);
    assert_eq!(batch.matches.len(), 1, "f, g, h, i form a new match");
    let mut fresh = batch.matches[0].participants.clone();
    fresh.sort();
    assert_eq!(fresh, ["f", "g", "h", "i"].map(player));

    let joined = matched_in(&store, "e").await.expect("e plays in the match");
    assert_eq!(joined.match_id, record.match_id);
    assert_eq!(joined.lifecycle.state, MatchState::Assigned);
    assert_eq!(joined.teams.as_ref().unwrap()[0].last(), Some(&player("e")));
    assert_eq!(joined.participants.len(), 5, "the record keeps who left");
    // The seats are filled: the backfill is done.
    assert_eq!(hlen(&store, &store.keys().backfills()).await, 0);
    let w = store.keys().world(&world_name("squad"));
    assert_eq!(zcard(&store, &w.backfill_queue).await, 0);

    let pusher = RecordingPusher::default();
    drain_outbox(&store, &pusher, &shared::NoEvents)
        .await
        .unwrap();
    let to_e = pushed_to(&pusher, "conn-e");
    let kinds: Vec<&str> = to_e.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["MATCH_FOUND", "MATCH_ASSIGNED"], "{to_e:?}");
    assert_eq!(to_e[0]["backfill"], true);
    assert_eq!(to_e[0]["matchId"], record.match_id.as_str());
    assert_eq!(to_e[1]["assignment"]["connection"], "10.0.0.1:7777");

    // e plays: IN_MATCH until the result, which covers e's team too.
    assert!(matches!(
        join(&store, "squad", "e").await,
        JoinOutcome::Rejected(Rejection::InMatch { .. })
    ));
    let done = use_cases::report_result(
        &store,
        &record.match_id,
        &serde_json::from_value(serde_json::json!({"teamRanks": [1, 2]})).unwrap(),
    )
    .await
    .unwrap();
    assert!(matches!(done, ResultReport::Finished(_)), "{done:?}");
}

/// A join (instant matching on) that fits an open seat takes it at once:
/// BACKFILLED, with its MATCH_FOUND claimed for delivery right away; one
/// that does not fit (a party larger than any open seat in one team) is
/// not used and queues instead.
pub async fn a_joiner_takes_an_open_seat_and_a_party_too_large_does_not(env: &Env) {
    let store = env.store_with("backfill-join", "", &[("MM_RULES", &squad_rules(""))]);
    let record = {
        for p in ["a", "b", "c"] {
            join(&store, "squad", p).await;
        }
        match join(&store, "squad", "d").await {
            JoinOutcome::Matched { record, .. } => record,
            other => panic!("{other:?}"),
        }
    };
    assign(&store, &record.match_id).await;
    let t = record.teams.clone().unwrap();
    // One seat open in each team.
    open_backfill(
        store
            .request_backfill(
                &record.match_id,
                &teams(&[&[t[0][0].as_str()], &[t[1][0].as_str()]]),
                None,
            )
            .await
            .unwrap(),
    );
    // A party of two fits no team (one seat each): it queues.
    let created = create(&store, "squad", "p1", &["p2"]).await;
    let PartyCreateOutcome::Created(party) = created else {
        panic!("{created:?}")
    };
    let joined = store
        .join_party(
            world(&store, "squad"),
            &party.party_id,
            &player("p2"),
            None,
            None,
        )
        .await
        .unwrap();
    assert!(matches!(joined, PartyJoinOutcome::Queued(_)), "{joined:?}");
    store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert!(
        matched_in(&store, "p1").await.is_none(),
        "the party is not split"
    );

    match store
        .join_reply(
            world(&store, "squad"),
            &player("x"),
            &Default::default(),
            true,
        )
        .await
        .unwrap()
        .outcome
    {
        JoinOutcome::Backfilled { joined, claimed } => {
            assert_eq!(joined.match_id, record.match_id);
            assert_eq!(claimed.len(), 1);
            assert_eq!(claimed[0].targets.len(), 1);
            assert_eq!(claimed[0].targets[0].player, player("x"));
        }
        other => panic!("{other:?}"),
    }
    let left = store.match_record(&record.match_id).await.unwrap().unwrap();
    assert_eq!(left.participants.len(), 5);
    let b = store.renew_backfill(&record.match_id).await.unwrap();
    match b {
        BackfillOutcome::Renewed(b) => assert_eq!(b.open.iter().sum::<u32>(), 1),
        other => panic!("{other:?}"),
    }
}

/// Rated worlds: a ticket far from the match's reference rating is not
/// used; one within the window is, in the team that keeps the averages
/// closest.
pub async fn a_rated_backfill_takes_players_within_the_window(env: &Env) {
    let rules = r#"{"ratings": {"min": 0, "max": 5000},
        "worlds": [{"name": "squad", "teamSize": 2, "teams": 2, "mode": "rating",
          "rating": {"baseWindow": 100, "widenPerSecond": 0, "maxWindow": 100,
                     "relaxAfterSeconds": 600}}]}"#;
    let store = env.store_with(
        "backfill-rated",
        "",
        &[("MM_RULES", rules), ("MM_INSTANT_MATCH", "false")],
    );
    let sq = world(&store, "squad");
    for (p, r) in [("a", 1500.0), ("b", 1510.0), ("c", 1490.0), ("d", 1500.0)] {
        store
            .join(sq, &player(p), None, Some(rating(r)))
            .await
            .unwrap();
    }
    let mut record = None;
    for _ in 0..5 {
        let batch = store.form_matches(sq, 0).await.unwrap();
        if let Some(m) = batch.matches.into_iter().next() {
            record = Some(m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let record = record.expect("the four match");
    assign(&store, &record.match_id).await;
    let t = record.teams.clone().unwrap();
    let b = open_backfill(
        store
            .request_backfill(
                &record.match_id,
                &teams(&[&[t[0][0].as_str()], &[t[1][0].as_str(), t[1][1].as_str()]]),
                None,
            )
            .await
            .unwrap(),
    );
    let reference = b.r#ref.expect("a reference rating");
    store
        .join(sq, &player("far"), None, Some(rating(reference + 400.0)))
        .await
        .unwrap();
    let batch = store.form_matches(sq, 0).await.unwrap();
    assert_eq!(
        batch.backfilled, 0,
        "400 points off: outside the 100 window"
    );
    store
        .join(sq, &player("near"), None, Some(rating(reference + 30.0)))
        .await
        .unwrap();
    let batch = store.form_matches(sq, 0).await.unwrap();
    assert_eq!(batch.backfilled, 1);
    let m = matched_in(&store, "near").await.expect("near is seated");
    assert!(m.teams.as_ref().unwrap()[0].contains(&player("near")));
    assert!(m.ratings.as_ref().unwrap().contains_key("near"));
    assert!(matched_in(&store, "far").await.is_none());
}

/// Two requests at once leave exactly one backfill; a lapsed backfill takes
/// nobody and cannot be renewed; a cancelled one neither; bad requests
/// (unknown, unassigned or finished match, a stranger, a team over its
/// size, a party split over teams, nothing open) write nothing.
pub async fn backfills_are_replaced_renewed_and_refused_cleanly(env: &Env) {
    let store = env.store_with(
        "backfill-rules",
        "",
        &[
            ("MM_RULES", &squad_rules("")),
            ("MM_INSTANT_MATCH", "false"),
            ("MM_BACKFILL_KEEPALIVE_SECS", "1"),
        ],
    );
    let record = running_match(&store).await;
    let id = &record.match_id;
    let t = record.teams.clone().unwrap();
    let (a0, a1, b0, b1) = (
        t[0][0].as_str(),
        t[0][1].as_str(),
        t[1][0].as_str(),
        t[1][1].as_str(),
    );

    let before = snapshot(&store).await;
    let unknown = shared::MatchId::parse("18c1f2a3b4d-ff").unwrap();
    assert_eq!(
        store
            .request_backfill(&unknown, &teams(&[&[a0], &[]]), None)
            .await
            .unwrap(),
        BackfillOutcome::MatchNotFound
    );
    assert_eq!(
        store.cancel_backfill(&unknown).await.unwrap(),
        BackfillOutcome::MatchNotFound
    );
    assert_eq!(
        store.renew_backfill(&unknown).await.unwrap(),
        BackfillOutcome::NotFound
    );
    for (bad, why) in [
        (teams(&[&[a0]]), "one team of two"),
        (teams(&[&[a0, "zed"], &[b0]]), "a stranger"),
        (teams(&[&[a0, a0], &[b0]]), "twice"),
        (teams(&[&[a0, a1, b0], &[]]), "over the team size"),
        (teams(&[&[a0, a1], &[b0, b1]]), "nothing open"),
    ] {
        assert!(
            matches!(
                store.request_backfill(id, &bad, None).await.unwrap(),
                BackfillOutcome::Invalid(_)
            ),
            "{why}"
        );
    }
    assert_eq!(
        store.renew_backfill(id).await.unwrap(),
        BackfillOutcome::NotFound
    );
    assert_eq!(
        store.cancel_backfill(id).await.unwrap(),
        BackfillOutcome::NotFound
    );
    assert_eq!(snapshot(&store).await, before, "refusals write nothing");

    // A formed match that was never assigned takes no backfill.
    for p in ["e", "f", "g", "h"] {
        join(&store, "squad", p).await;
    }
    let other = store
        .form_matches(world(&store, "squad"), 0)
        .await
        .unwrap()
        .matches;
    let other = &other[0];
    let ot = other.teams.clone().unwrap();
    assert_eq!(
        store
            .request_backfill(&other.match_id, &teams(&[&[ot[0][0].as_str()], &[]]), None)
            .await
            .unwrap(),
        BackfillOutcome::NotAssigned
    );

    // Two requests at once: exactly one backfill stays.
    let one = teams(&[&[a0], &[b0, b1]]);
    let two = teams(&[&[a0, a1], &[b0]]);
    let (x, y) = tokio::join!(
        store.request_backfill(id, &one, None),
        store.request_backfill(id, &two, None)
    );
    let replaced = [x.unwrap(), y.unwrap()]
        .iter()
        .filter(|o| matches!(o, BackfillOutcome::Open { replaced: true, .. }))
        .count();
    assert_eq!(replaced, 1, "the second replaced the first");
    let w = store.keys().world(&world_name("squad"));
    assert_eq!(hlen(&store, &store.keys().backfills()).await, 1);
    assert_eq!(zcard(&store, &w.backfill_queue).await, 1);
    assert_eq!(zcard(&store, &store.keys().backfill_expiry()).await, 1);
    let counted: Option<u64> = store
        .command(redis::cmd("HGET").arg(&w.stats).arg("backfills"))
        .await
        .unwrap();
    assert_eq!(counted, Some(1));

    // It lapses without renewal: nobody is seated, and it cannot be renewed.
    eventually("the backfill to lapse", Duration::from_secs(10), || async {
        store.housekeeping(100).await.unwrap();
        (hlen(&store, &store.keys().backfills()).await == 0).then_some(())
    })
    .await;
    assert_eq!(
        store.renew_backfill(id).await.unwrap(),
        BackfillOutcome::NotFound
    );
    join(&store, "squad", "late").await;
    let batch = store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert_eq!(batch.backfilled, 0);
    assert!(matched_in(&store, "late").await.is_none());
    assert_eq!(zcard(&store, &w.backfill_queue).await, 0);
    let counted: Option<u64> = store
        .command(redis::cmd("HGET").arg(&w.stats).arg("backfills"))
        .await
        .unwrap();
    assert_eq!(counted, Some(0));

    // Cancelled: gone at once.
    open_backfill(store.request_backfill(id, &one, None).await.unwrap());
    assert!(matches!(
        store.cancel_backfill(id).await.unwrap(),
        BackfillOutcome::Cancelled(_)
    ));
    assert_eq!(
        store.renew_backfill(id).await.unwrap(),
        BackfillOutcome::NotFound
    );

    // Finished: refused, and an open backfill ends with the match.
    open_backfill(store.request_backfill(id, &one, None).await.unwrap());
    use_cases::report_result(
        &store,
        id,
        &serde_json::from_value(serde_json::json!({"teamRanks": [2, 1]})).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        store.renew_backfill(id).await.unwrap(),
        BackfillOutcome::NotFound
    );
    assert_eq!(
        store.request_backfill(id, &one, None).await.unwrap(),
        BackfillOutcome::Finished
    );
    // Its index entries go the next time the matcher meets them.
    store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert_eq!(zcard(&store, &w.backfill_queue).await, 0);
}

/// A party that left splits nothing: its remaining members must stay in one
/// team.
pub async fn a_backfill_never_splits_a_party(env: &Env) {
    let store = env.store_with(
        "backfill-party",
        "",
        &[
            ("MM_RULES", &squad_rules("")),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let created = store
        .create_party(
            world(&store, "squad"),
            &player("p1"),
            &[player("p2")],
            None,
            None,
        )
        .await
        .unwrap();
    let PartyCreateOutcome::Created(party) = created else {
        panic!("{created:?}")
    };
    store
        .join_party(
            world(&store, "squad"),
            &party.party_id,
            &player("p2"),
            None,
            None,
        )
        .await
        .unwrap();
    for p in ["s1", "s2"] {
        join(&store, "squad", p).await;
    }
    let record = store
        .form_matches(world(&store, "squad"), 0)
        .await
        .unwrap()
        .matches[0]
        .clone();
    assign(&store, &record.match_id).await;
    let split = teams(&[&["p1", "s1"], &["p2"]]);
    assert!(matches!(
        store
            .request_backfill(&record.match_id, &split, None)
            .await
            .unwrap(),
        BackfillOutcome::Invalid(_)
    ));
    let whole = teams(&[&["p1", "p2"], &["s1"]]);
    let b = open_backfill(
        store
            .request_backfill(&record.match_id, &whole, None)
            .await
            .unwrap(),
    );
    assert_eq!(b.open, [0, 1]);
}

/// A match of a, b, c, d in a ready-check world: proposed, everyone
/// accepts, then assigned.
async fn running_checked_match(store: &MatchStore) -> MatchRecord {
    for p in ["a", "b", "c", "d"] {
        join(store, "squad", p).await;
    }
    store.form_matches(world(store, "squad"), 0).await.unwrap();
    let PlayerStatus::Proposed(view) = store.player_status(&player("a")).await.unwrap() else {
        panic!("a proposal")
    };
    let mut record = None;
    for p in ["a", "b", "c", "d"] {
        if let shared::AnswerOutcome::Matched { record: r, .. } = store
            .answer_proposal(&view.match_id, &player(p), true)
            .await
            .unwrap()
        {
            record = Some(*r);
        }
    }
    let record = record.expect("the last accept makes the match");
    assign(store, &record.match_id).await;
    record
}

/// A 2 x 2 ready-check world (instant matching off, `extra` settings) with
/// a running match of a, b, c, d whose first team lost a player: its
/// backfill is open for that seat. Returns the store, the match and the
/// teams the backfill was asked with.
async fn ready_match_with_an_open_seat(
    env: &Env,
    ns: &str,
    extra: &[(&str, &str)],
) -> (MatchStore, MatchRecord, Vec<Vec<PlayerId>>) {
    let rules = squad_rules(r#""readyCheck": {"acceptSeconds": 30},"#);
    let mut settings = vec![("MM_RULES", rules.as_str()), ("MM_INSTANT_MATCH", "false")];
    settings.extend_from_slice(extra);
    let store = env.store_with(ns, "", &settings);
    let record = running_checked_match(&store).await;
    let current = open_a_first_team_seat(&store, &record).await;
    (store, record, current)
}

/// Asks for a backfill of running 2 x 2 match `record` whose first team
/// lost its first player; returns the teams it was asked with.
async fn open_a_first_team_seat(store: &MatchStore, record: &MatchRecord) -> Vec<Vec<PlayerId>> {
    let t = record.teams.clone().unwrap();
    let current = teams(&[&[t[0][1].as_str()], &[t[1][0].as_str(), t[1][1].as_str()]]);
    open_backfill(
        store
            .request_backfill(&record.match_id, &current, None)
            .await
            .unwrap(),
    );
    current
}

/// The messages `pusher` sent to connection `conn`, in order.
fn pushed_to(pusher: &RecordingPusher, conn: &str) -> Vec<serde_json::Value> {
    pusher
        .pushed
        .lock()
        .unwrap()
        .iter()
        .filter(|(c, _)| c == conn)
        .map(|(_, m)| m.clone())
        .collect()
}

/// In a ready-check world only the new players are asked: a seat is held
/// for them by a proposal (MATCH_PROPOSED naming the running match); when
/// they accept they join it. A backfill that lapses while a proposal holds
/// its seats returns the proposed players to their original places.
pub async fn backfill_proposals_ask_only_new_players_and_lapse_back_to_the_queue(env: &Env) {
    let (store, record, current) = ready_match_with_an_open_seat(
        env,
        "backfill-ready",
        &[("MM_BACKFILL_KEEPALIVE_SECS", "2")],
    )
    .await;
    let id = &record.match_id;
    for p in ["e", "f", "g"] {
        join(&store, "squad", p).await;
    }
    let batch = store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert_eq!(batch.proposed, 1, "{batch:?}");
    let PlayerStatus::Proposed(view) = store.player_status(&player("e")).await.unwrap() else {
        panic!("e is asked")
    };
    assert_eq!(
        view.participants,
        [player("e")],
        "only the new player is asked"
    );
    assert_ne!(&view.match_id, id, "the proposal has an id of its own");

    // The backfill lapses: e goes back to the front of the queue, before f.
    eventually("the backfill to lapse", Duration::from_secs(10), || async {
        store.housekeeping(100).await.unwrap();
        (hlen(&store, &store.keys().backfills()).await == 0).then_some(())
    })
    .await;
    match store.player_status(&player("e")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!(q.position, 1, "{q:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(hlen(&store, &store.keys().proposals()).await, 0);

    // A new backfill: e is asked again and accepts, joining the match.
    open_backfill(store.request_backfill(id, &current, None).await.unwrap());
    store.form_matches(world(&store, "squad"), 0).await.unwrap();
    let PlayerStatus::Proposed(view) = store.player_status(&player("e")).await.unwrap() else {
        panic!("e is asked again")
    };
    match store
        .answer_proposal(&view.match_id, &player("e"), true)
        .await
        .unwrap()
    {
        shared::AnswerOutcome::Backfilled {
            joined,
            notification,
        } => {
            assert_eq!(&joined.match_id, id);
            assert!(joined.teams.as_ref().unwrap()[0].contains(&player("e")));
            assert!(notification.as_str().starts_with("B|"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        matched_in(&store, "e").await.map(|m| m.match_id.clone()),
        Some(id.clone())
    );
    assert_eq!(
        hlen(&store, &store.keys().backfills()).await,
        0,
        "its one seat is filled"
    );
    // f and g still wait, in order.
    match store.player_status(&player("f")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!(q.position, 1),
        other => panic!("{other:?}"),
    }
}

/// With match events on, the allocator hears each fill (BackfillFilled:
/// the fill, the players it seated and their teams, the match as it is
/// now) and each lapse (BackfillExpired).
pub async fn backfill_events_reach_the_allocator(env: &Env) {
    let store = env.store_with(
        "backfill-events",
        "",
        &[
            ("MM_RULES", &squad_rules("")),
            ("MM_INSTANT_MATCH", "false"),
            ("MM_MATCH_EVENTS", "true"),
            ("MM_BACKFILL_KEEPALIVE_SECS", "1"),
        ],
    );
    let record = running_match(&store).await;
    let t = record.teams.clone().unwrap();
    let current = teams(&[&[t[0][0].as_str()], &[t[1][0].as_str()]]);
    open_backfill(
        store
            .request_backfill(&record.match_id, &current, None)
            .await
            .unwrap(),
    );
    join(&store, "squad", "e").await;
    store.form_matches(world(&store, "squad"), 0).await.unwrap();
    let events = RecordingEvents::default();
    let pusher = RecordingPusher::default();
    drain_outbox(&store, &pusher, &events).await.unwrap();
    let filled: Vec<serde_json::Value> = {
        let kinds = events.kinds.lock().unwrap();
        let published = events.published.lock().unwrap();
        kinds
            .iter()
            .zip(published.iter())
            .filter(|(k, _)| **k == "BackfillFilled")
            .map(|(_, e)| serde_json::from_str(e).unwrap())
            .collect()
    };
    assert_eq!(filled.len(), 1, "{:?}", events.kinds.lock().unwrap());
    assert_eq!(filled[0]["matchId"], record.match_id.as_str());
    assert_eq!(filled[0]["fill"], 1);
    assert_eq!(
        filled[0]["added"],
        serde_json::json!([{"playerId": "e", "team": 1}])
    );
    let everyone: Vec<&str> = filled[0]["teams"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| {
            t.as_array()
                .unwrap()
                .iter()
                .map(|p| p["playerId"].as_str().unwrap())
        })
        .collect();
    assert!(everyone.contains(&"e"), "{everyone:?}");

    // The other seat stays open until the keep-alive lapses.
    eventually(
        "the lapse to be published",
        Duration::from_secs(15),
        || async {
            store.housekeeping(100).await.unwrap();
            drain_outbox(&store, &pusher, &events).await.unwrap();
            events
                .kinds
                .lock()
                .unwrap()
                .contains(&"BackfillExpired")
                .then_some(())
        },
    )
    .await;
}

/// Fills are numbered over all of a match's backfills: a backfill opened
/// after an earlier one was filled counts on from its fills (each fill's
/// outbox entry, `B|<match>|<fill>`, and record addition names its number),
/// so the second newcomer is told as surely as the first, even while the
/// first fill's entry still waits in the outbox.
pub async fn a_later_backfill_numbers_its_fills_on(env: &Env) {
    let store = env.store_with(
        "backfill-again",
        "",
        &[
            ("MM_RULES", &squad_rules("")),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let record = running_match(&store).await;
    let id = &record.match_id;
    let t = record.teams.clone().unwrap();
    let (a0, a1, b0, b1) = (
        t[0][0].as_str(),
        t[0][1].as_str(),
        t[1][0].as_str(),
        t[1][1].as_str(),
    );
    for newcomer in ["e", "f"] {
        connect(&store, newcomer).await;
    }
    // a1 left: e takes the seat, and the backfill is done.
    open_backfill(
        store
            .request_backfill(id, &teams(&[&[a0], &[b0, b1]]), None)
            .await
            .unwrap(),
    );
    join(&store, "squad", "e").await;
    assert_eq!(
        store
            .form_matches(world(&store, "squad"), 0)
            .await
            .unwrap()
            .backfilled,
        1
    );
    assert_eq!(hlen(&store, &store.keys().backfills()).await, 0);
    // Then b1 left: a new backfill, whose fill is the match's second.
    let second = open_backfill(
        store
            .request_backfill(id, &teams(&[&[a0, "e"], &[b0]]), None)
            .await
            .unwrap(),
    );
    assert_eq!(second.fills, 1, "counted on from the first backfill");
    join(&store, "squad", "f").await;
    assert_eq!(
        store
            .form_matches(world(&store, "squad"), 0)
            .await
            .unwrap()
            .backfilled,
        1
    );
    let m = matched_in(&store, "f").await.expect("f plays in the match");
    let fills: Vec<u32> = m.lifecycle.additions.iter().map(|a| a.fill).collect();
    assert_eq!(fills, [1, 2]);
    assert!(m.participants.iter().any(|p| p.as_str() == a1));
    // Both newcomers are told (neither fill's entry took the other's place).
    let pusher = RecordingPusher::default();
    drain_outbox(&store, &pusher, &shared::NoEvents)
        .await
        .unwrap();
    let pushed = pusher.pushed.lock().unwrap().clone();
    for conn in ["conn-e", "conn-f"] {
        let found: Vec<&serde_json::Value> = pushed
            .iter()
            .filter(|(c, m)| c == conn && m["type"] == "MATCH_FOUND")
            .map(|(_, m)| m)
            .collect();
        assert_eq!(found.len(), 1, "{conn}: {pushed:?}");
        assert_eq!(found[0]["backfill"], true);
    }
}

/// A server that sends a new request before it heard of a fill (a join took
/// a seat while it was listing its players) names the fills it has heard
/// of: the newcomer keeps their seat, and the seat is not offered twice.
/// Without that count the list is everyone (the newcomer's seat opens
/// again); a list that leaves no room for an unseen newcomer is refused.
pub async fn a_fill_the_server_has_not_heard_of_keeps_its_seat(env: &Env) {
    let store = env.store_with(
        "backfill-unseen",
        "",
        &[
            ("MM_RULES", &squad_rules("")),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let record = running_match(&store).await;
    let id = &record.match_id;
    let t = record.teams.clone().unwrap();
    let (a0, b0, b1) = (t[0][0].as_str(), t[1][0].as_str(), t[1][1].as_str());
    // One seat open in each team; e takes one of them (fill 1).
    open_backfill(
        store
            .request_backfill(id, &teams(&[&[a0], &[b0]]), None)
            .await
            .unwrap(),
    );
    join(&store, "squad", "e").await;
    store.form_matches(world(&store, "squad"), 0).await.unwrap();
    let m = matched_in(&store, "e").await.expect("e plays in the match");
    let e_team = m.lifecycle.additions[0].team;
    // The server, having heard of no fill, lists the same players again.
    let before = snapshot(&store).await;
    let kept = open_backfill(
        store
            .request_backfill(id, &teams(&[&[a0], &[b0]]), Some(0))
            .await
            .unwrap(),
    );
    let mut open = vec![1, 1];
    open[e_team - 1] = 0;
    assert_eq!(kept.open, open, "e keeps the seat");
    assert_eq!(kept.counts.iter().sum::<u32>(), 3);
    // Having heard of fill 1, the same list means e left.
    let reopened = open_backfill(
        store
            .request_backfill(id, &teams(&[&[a0], &[b0]]), Some(1))
            .await
            .unwrap(),
    );
    assert_eq!(reopened.open, [1, 1]);
    // Full teams besides an unseen newcomer: refused, nothing written.
    let now = snapshot(&store).await;
    assert_ne!(now, before, "the requests above were stored");
    let full = if e_team == 1 {
        teams(&[&[a0, b1], &[b0]])
    } else {
        teams(&[&[a0], &[b0, b1]])
    };
    assert!(matches!(
        store.request_backfill(id, &full, Some(0)).await.unwrap(),
        BackfillOutcome::Invalid(_)
    ));
    assert_eq!(snapshot(&store).await, now, "a refusal writes nothing");
}

/// Assigns `record` (two teams of two) and asks for a backfill of one seat:
/// the team with `whole` stays whole, the other keeps its first player.
async fn backfill_one_seat(
    store: &MatchStore,
    record: &MatchRecord,
    whole: &PlayerId,
) -> shared::domain::Backfill {
    assign(store, &record.match_id).await;
    let t = record.teams.clone().unwrap();
    let (full, short) = if t[0].contains(whole) { (0, 1) } else { (1, 0) };
    let mut now = [Vec::new(), Vec::new()];
    now[full] = t[full].iter().map(|p| p.as_str()).collect::<Vec<_>>();
    now[short] = vec![t[short][0].as_str()];
    open_backfill(
        store
            .request_backfill(&record.match_id, &teams(&[&now[0], &now[1]]), None)
            .await
            .unwrap(),
    )
}

/// In a rated world with balance, the matcher seats the waiting ticket that
/// balances the teams best, not merely the one nearest the match's average:
/// with one team at 1400 and 1700 and the other at 1500 with a seat open, a
/// 1600 player evens the averages (1550 and 1550) where a 1530 one, nearer
/// the reference (1533.3), would leave them 35 apart.
pub async fn a_rated_backfill_seats_the_player_who_balances_the_teams_best(env: &Env) {
    let rules = r#"{"ratings": {"min": 0, "max": 5000},
        "worlds": [{"name": "squad", "teamSize": 2, "teams": 2, "mode": "rating",
          "rating": {"baseWindow": 400, "widenPerSecond": 0, "maxWindow": 400,
                     "relaxAfterSeconds": 600},
          "balance": {"baseWindow": 100, "widenPerSecond": 0, "maxWindow": 100}}]}"#;
    let store = env.store_with(
        "backfill-balance",
        "",
        &[("MM_RULES", rules), ("MM_INSTANT_MATCH", "false")],
    );
    let sq = world(&store, "squad");
    for (p, r) in [("a", 1400.0), ("b", 1700.0), ("c", 1500.0), ("d", 1500.0)] {
        store
            .join(sq, &player(p), None, Some(rating(r)))
            .await
            .unwrap();
    }
    let record = eventually("the four to match", Duration::from_secs(5), || async {
        store
            .form_matches(sq, 0)
            .await
            .unwrap()
            .matches
            .into_iter()
            .next()
    })
    .await;
    // The team with a and b stays whole; one of c and d left.
    let b = backfill_one_seat(&store, &record, &player("a")).await;
    let reference = b.r#ref.expect("a reference rating");
    assert!((reference - 4600.0 / 3.0).abs() < 1e-6, "{reference}");
    // Nearer the reference but off balance, then the one who evens it.
    for (p, r) in [("near", 1530.0), ("even", 1600.0)] {
        store
            .join(sq, &player(p), None, Some(rating(r)))
            .await
            .unwrap();
    }
    let batch = store.form_matches(sq, 0).await.unwrap();
    assert_eq!(batch.backfilled, 1);
    let seated = matched_in(&store, "even").await.expect("the balancing one");
    assert!(matched_in(&store, "near").await.is_none());
    // The record keeps the player who left, but its team difference and
    // spread are the teams it plays with now: 1550 and 1550, 1400..1700
    // (counting the 1500 who left, team 2 would be 1533.3).
    let record = &seated.record;
    assert_eq!(record.participants.len(), 5, "{record:?}");
    assert_eq!(record.team_difference, Some(0.0), "{record:?}");
    assert_eq!(record.spread, Some(300.0), "{record:?}");
}

/// A world's `backfill.balance` holds a backfill's fills to their own
/// balance window, apart from the fresh matches': with one team at 1400 and
/// 1700 and the other at 1500 with a seat open, a 1530 joiner leaves the
/// averages 35 apart. The world's balance window (100) would seat it at
/// once, and does where no backfill window is set ("plain"); a backfill
/// window of 5 leaves it waiting and seats a 1598 joiner (1 apart) instead
/// ("kept", never lifted), and one lifted after 2 s of the backfill's wait
/// seats the 1530 player once that has passed ("lifted").
pub async fn a_backfill_keeps_its_own_balance_window(env: &Env) {
    let world_rules = |name: &str, backfill: &str| {
        format!(
            r#"{{"name": "{name}", "teamSize": 2, "teams": 2, "mode": "rating",
              "rating": {{"baseWindow": 400, "widenPerSecond": 0, "maxWindow": 400,
                         "relaxAfterSeconds": 600}},
              "balance": {{"baseWindow": 100, "widenPerSecond": 0, "maxWindow": 100}}{backfill}}}"#
        )
    };
    let rules = format!(
        r#"{{"ratings": {{"min": 0, "max": 5000}}, "worlds": [{}, {}, {}]}}"#,
        world_rules("plain", ""),
        world_rules(
            "kept",
            r#", "backfill": {"balance": {"baseWindow": 5, "widenPerSecond": 0, "maxWindow": 5}}"#
        ),
        world_rules(
            "lifted",
            r#", "backfill": {"balance": {"baseWindow": 5, "widenPerSecond": 0, "maxWindow": 5, "relaxAfterSeconds": 2}}"#
        ),
    );
    let store = env.store_with("backfill-own-balance", "", &[("MM_RULES", &rules)]);
    for name in ["plain", "kept", "lifted"] {
        let w = world(&store, name);
        let p = |s: &str| player(&format!("{name}-{s}"));
        let mut record = None;
        for (s, r) in [("a", 1400.0), ("b", 1700.0), ("c", 1500.0), ("d", 1500.0)] {
            if let JoinOutcome::Matched { record: m, .. } =
                store.join(w, &p(s), None, Some(rating(r))).await.unwrap()
            {
                record = Some(m);
            }
        }
        let record = record.expect("the fourth join matches all four");
        let t = record.teams.clone().unwrap();
        assert!(
            t.iter()
                .any(|team| team.contains(&p("a")) && team.contains(&p("b"))),
            "{name}: a and b together: {t:?}"
        );
        let requested = std::time::Instant::now();
        backfill_one_seat(&store, &record, &p("a")).await;
        let near = store
            .join(w, &p("near"), None, Some(rating(1530.0)))
            .await
            .unwrap();
        let seated_at_once = matches!(near, JoinOutcome::Backfilled { .. });
        match name {
            "plain" => {
                assert!(
                    seated_at_once,
                    "plain: the world's balance window seats it: {near:?}"
                );
                continue;
            }
            _ if requested.elapsed() < Duration::from_secs(2) => {
                assert!(!seated_at_once, "{name}: 35 apart is outside 5: {near:?}")
            }
            _ => {}
        }
        if name == "kept" {
            let even = store
                .join(w, &p("even"), None, Some(rating(1598.0)))
                .await
                .unwrap();
            assert!(
                matches!(even, JoinOutcome::Backfilled { .. }),
                "kept: 1 apart fits: {even:?}"
            );
            assert!(matched_in(&store, &format!("{name}-near")).await.is_none());
        } else {
            eventually(
                "the lifted window to seat near",
                Duration::from_secs(10),
                || async {
                    store.form_matches(w, 0).await.unwrap();
                    matched_in(&store, &format!("{name}-near")).await
                },
            )
            .await;
            assert!(
                requested.elapsed() >= Duration::from_secs(2),
                "lifted: seated before its window was lifted"
            );
        }
    }
}

/// A joiner an open backfill seats at once leaves nothing of its ticket in
/// the world's structures: in a rated world with teams a join files its
/// ticket in `ratings` before trying the backfills (and in `due` only
/// after), so removing it must not depend on `due` holding anything. A
/// ratings entry left behind was taken for a waiting ticket by a later
/// anchor, and the player, with one ticket, was in two matches (found by
/// the concurrency invariant as one ticket counted twice).
pub async fn a_backfilled_joiner_leaves_nothing_of_its_ticket_behind(env: &Env) {
    let rules = r#"{"worlds": [{"name": "squad", "teamSize": 2, "teams": 2, "mode": "rating",
          "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400,
                     "relaxAfterSeconds": 2}}]}"#;
    let store = env.store_with("backfill-stale-rating", "", &[("MM_RULES", rules)]);
    let squad = world(&store, "squad");
    let wk = store.keys().world(&squad.name);
    let join_at_1500 = |p: &'static str| {
        let store = store.clone();
        async move {
            store
                .join(squad, &player(p), None, Some(rating(1500.0)))
                .await
                .unwrap()
        }
    };
    let mut first = None;
    for p in ["a", "b", "c", "d"] {
        if let JoinOutcome::Matched { record, .. } = join_at_1500(p).await {
            first = Some(record);
        }
    }
    let first = first.expect("the fourth join matches all four");
    // Nothing waits: the world's due set (and its key) is gone.
    assert_eq!(zcard(&store, &wk.due).await, 0);
    assign(&store, &first.match_id).await;
    open_a_first_team_seat(&store, &first).await;
    let x = join_at_1500("x").await;
    assert!(matches!(x, JoinOutcome::Backfilled { .. }), "{x:?}");
    for key in [&wk.queue, &wk.ratings, &wk.due] {
        assert_eq!(zcard(&store, key).await, 0, "{key} still holds x's ticket");
    }
    // Three more at the same rating: not a match without x.
    for p in ["e", "f", "g"] {
        let out = join_at_1500(p).await;
        assert!(matches!(out, JoinOutcome::Queued(_)), "{p}: {out:?}");
    }
    assert_eq!(zcard(&store, &wk.ratings).await, 3);
    let batch = store.form_matches(squad, 10).await.unwrap();
    assert!(batch.matches.is_empty(), "{batch:?}");
    assert_eq!(
        matched_in(&store, "x").await.map(|m| m.match_id.clone()),
        Some(first.match_id.clone())
    );
}

/// A match that finishes while a ready check holds one of its backfill's
/// seats cancels that proposal: the new player is not asked to accept a
/// seat in a game that is over (nor removed and cooled down for missing
/// it), but goes back to the queue at their place and is told
/// MATCH_CANCELLED (reason BACKFILL_ENDED, requeued).
pub async fn a_finished_match_cancels_the_proposals_of_its_backfill(env: &Env) {
    let (store, record, _) = ready_match_with_an_open_seat(env, "backfill-finished", &[]).await;
    let id = &record.match_id;
    connect(&store, "e").await;
    for p in ["e", "f"] {
        join(&store, "squad", p).await;
    }
    let batch = store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert_eq!(batch.proposed, 1, "{batch:?}");
    assert!(matches!(
        store.player_status(&player("e")).await.unwrap(),
        PlayerStatus::Proposed(_)
    ));

    let done = use_cases::report_result(
        &store,
        id,
        &serde_json::from_value(serde_json::json!({"cancelled": true})).unwrap(),
    )
    .await
    .unwrap();
    assert!(matches!(done, ResultReport::Finished(_)), "{done:?}");
    match store.player_status(&player("e")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!(q.position, 1, "e is back before f: {q:?}"),
        other => panic!("e is queued again, not {other:?}"),
    }
    let k = store.keys();
    assert_eq!(hlen(&store, &k.proposals()).await, 0);
    assert_eq!(zcard(&store, &k.proposal_expiry()).await, 0);
    assert_eq!(hlen(&store, &k.backfills()).await, 0);
    let w = k.world(&world_name("squad"));
    assert_eq!(
        zcard(&store, &w.backfill_queue).await,
        0,
        "unindexed at once"
    );

    let pusher = RecordingPusher::default();
    drain_outbox(&store, &pusher, &shared::NoEvents)
        .await
        .unwrap();
    let to_e = pushed_to(&pusher, "conn-e");
    let cancelled = to_e
        .iter()
        .find(|m| m["type"] == "MATCH_CANCELLED")
        .unwrap_or_else(|| panic!("e hears the cancellation: {to_e:?}"));
    assert_eq!(cancelled["reason"], "BACKFILL_ENDED", "{cancelled}");
    assert_eq!(cancelled["requeued"], true, "{cancelled}");
}
