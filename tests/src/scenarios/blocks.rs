//! Block lists: a player's avoid list is kept as pairs, and two players of
//! one pair (either avoiding the other) are never put in one match or one
//! backfill, in any world: FIFO (the fast path and the one-ticket-at-a-time
//! path), parties and teams, rated worlds and backfills.

use shared::store::{AssignOutcome, BackfillOutcome};
use shared::{Assignment, PartyJoinOutcome};

use super::*;

/// Every kind of world, in a namespace that keeps block lists.
const BLOCK_RULES: &str = r#"{"blockLists": {"maxEntries": 3}, "worlds": [
    {"name": "duel", "teamSize": 1, "teams": 2},
    {"name": "squad", "teamSize": 2, "teams": 2, "maxPartySize": 2},
    {"name": "ranked", "teamSize": 2, "mode": "rating",
     "rating": {"baseWindow": 50, "widenPerSecond": 0, "maxWindow": 50, "relaxAfterSeconds": 600}}
]}"#;

fn store_for(env: &Env, ns: &str) -> MatchStore {
    env.store_with(ns, "", &[("MM_RULES", BLOCK_RULES)])
}

async fn avoid(store: &MatchStore, p: &str, avoided: &[&str]) -> Vec<String> {
    store
        .set_avoid_list(&player(p), &players(avoided))
        .await
        .expect("avoid list stored")
}

async fn hash_of(store: &MatchStore, key: String) -> BTreeMap<String, String> {
    store
        .command(redis::cmd("HGETALL").arg(key))
        .await
        .expect("HGETALL")
}

fn matched_record(outcome: JoinOutcome) -> MatchRecord {
    match outcome {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("expected MATCHED, got {other:?}"),
    }
}

fn is_queued(outcome: &JoinOutcome) -> bool {
    matches!(outcome, JoinOutcome::Queued(_))
}

fn sorted(record: &MatchRecord) -> Vec<String> {
    let mut out: Vec<String> = record.participants.iter().map(|p| p.to_string()).collect();
    out.sort();
    out
}

/// The avoid list is stored as written and as pairs: one field per pair
/// with a bit per direction, a count per player in any pair (none at 0).
/// Replacing a list moves only the pairs that changed; a bad list (the
/// player itself, a duplicate, more than `maxEntries`) changes nothing; a
/// namespace without `blockLists` refuses the write.
pub async fn an_avoid_list_is_kept_as_pairs_in_both_directions(env: &Env) {
    let store = store_for(env, "avoid-pairs");
    let keys = store.keys();
    assert!(avoid(&store, "a", &["b", "c"]).await.is_empty());
    assert_eq!(avoid(&store, "b", &["a"]).await, Vec::<String>::new());
    let pairs = hash_of(&store, keys.block_pairs()).await;
    assert_eq!(
        pairs,
        BTreeMap::from([("a\nb".into(), "3".into()), ("a\nc".into(), "1".into())])
    );
    let counts = hash_of(&store, keys.block_counts()).await;
    assert_eq!(
        counts,
        BTreeMap::from([
            ("a".into(), "2".into()),
            ("b".into(), "1".into()),
            ("c".into(), "1".into())
        ])
    );
    // a now avoids c and d, no longer b: b still avoids a.
    assert_eq!(avoid(&store, "a", &["c", "d"]).await, ["b", "c"]);
    assert_eq!(
        hash_of(&store, keys.block_pairs()).await,
        BTreeMap::from([
            ("a\nb".into(), "2".into()),
            ("a\nc".into(), "1".into()),
            ("a\nd".into(), "1".into())
        ])
    );
    assert_eq!(
        store.avoid_list(&player("a")).await.unwrap(),
        ["c", "d"].map(String::from)
    );
    // Refused whole: nothing moves.
    let before = snapshot(&store).await;
    for bad in [&["a"][..], &["c", "c"], &["e", "f", "g", "h"]] {
        let result = store.set_avoid_list(&player("a"), &players(bad)).await;
        assert!(result.is_err(), "{bad:?} is refused: {result:?}");
    }
    assert_eq!(snapshot(&store).await, before);
    // Cleared by both: no pair, no count, no list.
    avoid(&store, "a", &[]).await;
    avoid(&store, "b", &[]).await;
    assert!(hash_of(&store, keys.block_pairs()).await.is_empty());
    assert!(hash_of(&store, keys.block_counts()).await.is_empty());
    assert!(hash_of(&store, keys.avoid()).await.is_empty());

    let off = env.store("avoid-off", "world1:2");
    let refused = off.set_avoid_list(&player("a"), &players(&["b"])).await;
    assert!(
        matches!(refused, Err(shared::error::StoreError::Rejected(_))),
        "{refused:?}"
    );
}

/// In a 1 v 1 world the pair waits while others are matched around it, in
/// either direction of the block, through the join's instant match and
/// the matcher alike; lifting the block lets them meet.
pub async fn a_blocked_pair_never_forms_the_only_possible_match(env: &Env) {
    let store = store_for(env, "avoid-duel");
    avoid(&store, "a", &["b"]).await;
    assert!(is_queued(&join(&store, "duel", "a").await));
    assert!(is_queued(&join(&store, "duel", "b").await), "a avoids b");
    let batch = store.form_matches(world(&store, "duel"), 0).await.unwrap();
    assert!(batch.matches.is_empty(), "{:?}", batch.matches);
    // c takes the oldest seat it may: a's.
    let record = matched_record(join(&store, "duel", "c").await);
    assert_eq!(sorted(&record), ["a", "c"]);
    // e avoids b (the other direction): e and b wait.
    avoid(&store, "e", &["b"]).await;
    assert!(is_queued(&join(&store, "duel", "e").await));
    let batch = store.form_matches(world(&store, "duel"), 0).await.unwrap();
    assert!(batch.matches.is_empty(), "{:?}", batch.matches);
    // Once e forgives b, the matcher pairs them.
    avoid(&store, "e", &[]).await;
    let batch = store.form_matches(world(&store, "duel"), 0).await.unwrap();
    assert_eq!(batch.matches.len(), 1);
    assert_eq!(sorted(&batch.matches[0]), ["b", "e"]);
}

/// With parties and teams (2 v 2): a solo who avoids a party's member is
/// kept out of the party's match, and takes the next one; the party is
/// matched whole with the others.
pub async fn parties_and_teams_keep_blocked_players_apart(env: &Env) {
    let store = store_for(env, "avoid-squad");
    avoid(&store, "s1", &["p2"]).await;
    let joined = queue_party(&store, "squad", "p1", &["p2"]).await;
    assert!(matches!(joined, PartyJoinOutcome::Queued(_)), "{joined:?}");
    assert!(is_queued(&join(&store, "squad", "s1").await));
    assert!(is_queued(&join(&store, "squad", "s2").await));
    let record = matched_record(join(&store, "squad", "s3").await);
    assert_eq!(sorted(&record), ["p1", "p2", "s2", "s3"]);
    for p in ["t1", "t2"] {
        assert!(is_queued(&join(&store, "squad", p).await));
    }
    let record = matched_record(join(&store, "squad", "t3").await);
    assert_eq!(sorted(&record), ["s1", "t1", "t2", "t3"]);
}

/// In a rated world the nearest candidate is skipped when blocked: the
/// anchor takes the next one within its window, and the blocked one waits
/// for someone else.
pub async fn a_rated_match_skips_a_blocked_neighbour(env: &Env) {
    let store = store_for(env, "avoid-ranked");
    avoid(&store, "b", &["a"]).await;
    let ranked = world(&store, "ranked");
    let join_at = |p: &'static str, r: f64| {
        let store = store.clone();
        async move {
            store
                .join(
                    world(&store, "ranked"),
                    &player(p),
                    None,
                    Some(shared::Rating::new(r).unwrap()),
                )
                .await
                .expect("join")
        }
    };
    assert!(is_queued(&join_at("a", 1000.0).await));
    assert!(is_queued(&join_at("b", 1001.0).await), "b avoids a");
    let record = matched_record(join_at("c", 1010.0).await);
    assert_eq!(sorted(&record), ["b", "c"]);
    let batch = store.form_matches(ranked, 0).await.unwrap();
    assert!(batch.matches.is_empty());
    let record = matched_record(join_at("d", 990.0).await);
    assert_eq!(sorted(&record), ["a", "d"]);
}

/// A backfill never seats a player blocked by (or blocking) one of the
/// match's players: the joiner waits and the matcher leaves it waiting;
/// the next player takes the seat.
pub async fn a_backfill_never_seats_a_blocked_player(env: &Env) {
    let store = store_for(env, "avoid-backfill");
    for p in ["a", "b", "c"] {
        assert!(is_queued(&join(&store, "squad", p).await));
    }
    let record = matched_record(join(&store, "squad", "d").await);
    let a: Assignment =
        serde_json::from_value(serde_json::json!({"connection": "10.0.0.1:7777"})).unwrap();
    assert!(matches!(
        store.assign_match(&record.match_id, &a).await.unwrap(),
        AssignOutcome::Assigned(_)
    ));
    let t = record.teams.clone().unwrap();
    let stay = vec![vec![t[0][0].clone()], t[1].clone()];
    let opened = store
        .request_backfill(&record.match_id, &stay, None)
        .await
        .unwrap();
    assert!(matches!(opened, BackfillOutcome::Open { .. }), "{opened:?}");
    // x is avoided by a player who stays.
    avoid(&store, t[1][0].as_str(), &["x"]).await;
    assert!(is_queued(&join(&store, "squad", "x").await));
    let batch = store.form_matches(world(&store, "squad"), 0).await.unwrap();
    assert_eq!(batch.backfilled, 0);
    let joined = join(&store, "squad", "y").await;
    let JoinOutcome::Backfilled { joined, .. } = joined else {
        panic!("y takes the seat: {joined:?}")
    };
    assert_eq!(joined.match_id, record.match_id);
    assert!(matches!(
        store.player_status(&player("x")).await.unwrap(),
        PlayerStatus::Queued(_)
    ));
}

/// The racing run's worlds: FIFO 1 v 1 (the fast path), FIFO 2 v 2 (one
/// ticket at a time, and backfills) and rated 3-player matches.
const RACING_RULES: &str = r#"{"servers": {"scope": "matchmaking/server"},
  "blockLists": {"maxEntries": 6},
  "worlds": [
    {"name": "duel", "teamSize": 1, "teams": 2},
    {"name": "squad", "teamSize": 2, "teams": 2},
    {"name": "ranked", "teamSize": 3, "mode": "rating",
     "rating": {"baseWindow": 300, "widenPerSecond": 300, "maxWindow": 3000,
                "relaxAfterSeconds": 600}}]}"#;

/// Players of the racing run, and the one pair (q1, q2) whose block is
/// lifted and restored throughout.
const RACING_PLAYERS: usize = 60;

fn unordered(a: &str, b: &str) -> (String, String) {
    if a < b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

/// Concurrency: clients join, leave and ask for their status in three
/// worlds while two matchers race, a game server assigns squads, opens a
/// backfill in each and finishes them, and one block is lifted and
/// restored again and again. No match or backfill ever holds two players
/// of a pair that stood throughout (every record and every addition is
/// re-checked), no player is twice in one match, and no ticket is lost:
/// each successful join is matched, seated by a backfill, left, or still
/// waiting.
pub async fn racing_matchers_never_match_a_blocked_pair(env: &Env) {
    let store = env.store_with("avoid-racing", "", &[("MM_RULES", RACING_RULES)]);
    let names: Vec<String> = (0..RACING_PLAYERS).map(|i| format!("q{i}")).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut pairs: BTreeSet<(String, String)> = BTreeSet::new();
    for i in (0..RACING_PLAYERS).step_by(3) {
        let mut listed: Vec<&str> = Vec::new();
        while listed.len() < 4 {
            let j = rng.random_range(0..RACING_PLAYERS);
            if j != i && !listed.contains(&names[j].as_str()) {
                listed.push(&names[j]);
            }
        }
        avoid(&store, &names[i], &listed).await;
        for q in listed {
            pairs.insert(unordered(&names[i], q));
        }
    }
    assert!(!pairs.contains(&unordered("q1", "q2")));

    let formed: Arc<Mutex<Vec<MatchRecord>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let mut background = Vec::new();
    for _ in 0..2 {
        let (store, formed, done) = (store.clone(), formed.clone(), done.clone());
        background.push(tokio::spawn(async move {
            let worlds: Vec<_> = store.settings().worlds.iter().cloned().collect();
            while !done.load(Ordering::Relaxed) {
                for w in &worlds {
                    let batch = store.form_matches(w, 0).await.expect("form matches");
                    formed.lock().unwrap().extend(batch.matches);
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    {
        let (store, done) = (store.clone(), done.clone());
        background.push(tokio::spawn(async move {
            let mut on = false;
            while !done.load(Ordering::Relaxed) {
                on = !on;
                avoid(&store, "q1", if on { &["q2"] } else { &[] }).await;
                tokio::task::yield_now().await;
            }
        }));
    }
    {
        let (store, formed, done) = (store.clone(), formed.clone(), done.clone());
        background.push(tokio::spawn(async move {
            let a: Assignment =
                serde_json::from_value(serde_json::json!({"connection": "10.0.0.1:7777"})).unwrap();
            let two: shared::MatchReport =
                serde_json::from_value(serde_json::json!({"teamRanks": [1, 2]})).unwrap();
            let one: shared::MatchReport =
                serde_json::from_value(serde_json::json!({"cancelled": true})).unwrap();
            let (mut served, mut running) = (0, Vec::new());
            while !done.load(Ordering::Relaxed) {
                let fresh: Vec<MatchRecord> = {
                    let all = formed.lock().unwrap();
                    let out = all[served..].to_vec();
                    served = all.len();
                    out
                };
                // A round per batch of new matches: until the matchers form
                // more, the running ones keep their open seats.
                if fresh.is_empty() {
                    tokio::task::yield_now().await;
                    continue;
                }
                // Matches from the previous round end; this round's open a seat.
                for (id, teams) in running.drain(..) {
                    let report = if teams > 1 { &two } else { &one };
                    shared::use_cases::report_result(&store, &id, report)
                        .await
                        .expect("result");
                }
                // A player plays one unfinished match at a time: every match
                // is assigned and finished, each squad opening a seat first.
                for m in &fresh {
                    store.assign_match(&m.match_id, &a).await.expect("assign");
                    if m.world_type == "squad" {
                        let t = m.teams.clone().expect("teams");
                        let stay = vec![vec![t[0][0].clone()], t[1].clone()];
                        store
                            .request_backfill(&m.match_id, &stay, None)
                            .await
                            .expect("backfill");
                    }
                    running.push((
                        m.match_id.clone(),
                        world(&store, m.world_type.as_str()).teams,
                    ));
                }
            }
        }));
    }

    // Per player: successful joins and leaves.
    let ledger: Arc<Mutex<HashMap<String, (u64, u64)>>> = Arc::default();
    let mut clients = Vec::new();
    for c in 0..6 {
        let (store, formed, ledger) = (store.clone(), formed.clone(), ledger.clone());
        let mine: Vec<String> = names[c * 10..c * 10 + 10].to_vec();
        clients.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(100 + c as u64);
            let worlds = ["duel", "squad", "ranked"];
            // Where each player last queued: leaves go there.
            let mut queued_in: HashMap<String, &str> = HashMap::new();
            for _ in 0..400 {
                let p = &mine[rng.random_range(0..mine.len())];
                let mut name = worlds[rng.random_range(0..worlds.len())];
                if rng.random_range(0..100) >= 60 {
                    name = queued_in.get(p).copied().unwrap_or(name);
                }
                let w = world(&store, name);
                match rng.random_range(0..100) {
                    0..60 => {
                        let rating = (w.name.as_str() == "ranked").then(|| {
                            let n: f64 = p[1..].parse().unwrap();
                            shared::Rating::new(1000.0 + (n * 37.0) % 500.0).unwrap()
                        });
                        let outcome = store.join(w, &player(p), None, rating).await.expect("join");
                        let taken = match outcome {
                            JoinOutcome::Queued(_) | JoinOutcome::Backfilled { .. } => true,
                            JoinOutcome::Matched { record, .. } => {
                                formed.lock().unwrap().push(record);
                                true
                            }
                            _ => false,
                        };
                        if taken {
                            queued_in.insert(p.clone(), name);
                            ledger.lock().unwrap().entry(p.clone()).or_default().0 += 1;
                        }
                    }
                    60..80 => {
                        let left = store.leave(w, &player(p)).await.expect("leave");
                        if matches!(left, shared::LeaveOutcome::Left { .. }) {
                            ledger.lock().unwrap().entry(p.clone()).or_default().1 += 1;
                        }
                    }
                    _ => {
                        store.player_status(&player(p)).await.expect("status");
                    }
                }
            }
        }));
    }
    for c in clients {
        c.await.expect("client");
    }
    done.store(true, Ordering::Relaxed);
    for t in background {
        t.await.expect("background task");
    }

    let formed = formed.lock().unwrap().clone();
    let mut in_matches: HashMap<String, u64> = HashMap::new();
    let mut additions = 0;
    for m in &formed {
        let distinct: BTreeSet<&PlayerId> = m.participants.iter().collect();
        assert_eq!(distinct.len(), m.participants.len(), "{m:?}");
        for (i, a) in m.participants.iter().enumerate() {
            *in_matches.entry(a.to_string()).or_default() += 1;
            for b in &m.participants[i + 1..] {
                assert!(
                    !pairs.contains(&unordered(a.as_str(), b.as_str())),
                    "{a} and {b} avoid each other, yet met in {m:?}"
                );
            }
        }
        let Some(joined) = store.match_record(&m.match_id).await.unwrap() else {
            continue;
        };
        let mut seated: Vec<&PlayerId> = m.participants.iter().collect();
        for addition in &joined.lifecycle.additions {
            for p in &addition.players {
                for q in &seated {
                    assert!(
                        !pairs.contains(&unordered(p.as_str(), q.as_str())),
                        "{p} was backfilled into a match with {q}, whom they avoid: {joined:?}"
                    );
                }
                *in_matches.entry(p.to_string()).or_default() += 1;
                additions += 1;
            }
            seated.extend(addition.players.iter());
        }
    }
    let ledger = ledger.lock().unwrap().clone();
    let mut joins = 0;
    for p in &names {
        let (tickets, left) = ledger.get(p).copied().unwrap_or_default();
        let matched = in_matches.get(p).copied().unwrap_or(0);
        let waiting = matches!(
            store.player_status(&player(p)).await.unwrap(),
            PlayerStatus::Queued(_)
        );
        assert_eq!(
            tickets,
            matched + left + u64::from(waiting),
            "{p}: {tickets} tickets, {matched} matched, {left} left, waiting {waiting}"
        );
        joins += tickets;
    }
    assert!(
        formed.len() > 50 && additions > 0 && joins > 200,
        "{} matches, {additions} additions, {joins} joins",
        formed.len()
    );
}
