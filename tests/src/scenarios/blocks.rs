//! Block lists: a player's avoid list is kept as pairs, and two players of
//! one pair (either avoiding the other) are never put in one match or one
//! backfill, in any world: FIFO (the fast path and the one-ticket-at-a-time
//! path), parties and teams, rated worlds and backfills.

use shared::store::{AssignOutcome, BackfillOutcome};
use shared::{Assignment, PartyCreateOutcome, PartyJoinOutcome};

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
