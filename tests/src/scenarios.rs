//! The core's behaviour, written once and run against every Redis topology
//! (a standalone server and a 3-master cluster): see `tests/standalone.rs`
//! and `tests/cluster.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use shared::store::{Housekeeping, MatchBatch};
use shared::{
    JoinOutcome, LeaveOutcome, MatchRecord, MatchStore, NotificationKind, PlayerId, PlayerStatus,
    Rejection, Settlement, TicketData, WorldName,
};

use crate::keyspace::{walk, Keyspace, Scope};
use crate::{eventually, settings_for};

mod admin;
mod attributes;
mod backfill;
mod blocks;
mod grouped;
mod invariants;
mod lifecycle;
mod parties;
mod ready_check;
mod regions;
mod roles;
mod several_worlds;
mod several_worlds_parties;
mod sleep;
pub use admin::*;
pub use attributes::*;
pub use backfill::*;
pub use blocks::*;
pub use invariants::*;
pub use lifecycle::*;
pub use parties::*;
pub use ready_check::*;
pub use regions::*;
pub use roles::*;
pub use several_worlds::*;
pub use several_worlds_parties::*;
pub use sleep::*;

/// Every scenario, listed once. `$callback!(a, b, ...)` is called with all
/// of their names: `tests/standalone.rs` makes one test of each on its own
/// server, `tests/cluster.rs` runs them all on one cluster.
#[macro_export]
macro_rules! for_each_scenario {
    ($callback:ident) => {
        $callback!(
            join_positions_and_instant_match,
            instant_match_can_be_turned_off,
            one_ticket_per_player_across_worlds,
            an_expired_ticket_elsewhere_gives_way_to_a_join,
            leave_outcomes,
            matcher_forms_all_complete_groups,
            ticket_data_reaches_the_match,
            player_ids_round_trip_through_match_records,
            queue_capacity_is_enforced,
            tickets_expire_individually,
            match_records_expire,
            outbox_claim_and_settle,
            connection_registry,
            matcher_lease,
            wait_estimate_follows_match_rate,
            wait_estimate_forgets_old_history,
            scripts_validate_before_writing,
            presence_decides_who_waits_and_who_is_matched,
            a_new_connection_gets_a_recent_match_again,
            nobody_is_matched_or_shown_past_their_deadline,
            rated_matches_form_within_the_anchors_window,
            a_rated_window_widens_with_wait_and_relaxes,
            equally_rated_players_are_taken_oldest_first,
            ratings_come_from_the_store_then_the_claim_then_the_default,
            rated_tickets_leave_expire_and_disconnect_cleanly,
            parties_queue_as_one_ticket_and_are_matched_whole,
            a_party_waits_for_a_match_it_fits_whole,
            party_requests_that_cannot_be_met_write_nothing,
            a_party_ends_as_a_whole,
            teams_hold_parties_whole_and_balance_ratings,
            nearest_first_never_strands_a_match_that_exists,
            oldest_first_never_strands_a_match_that_exists,
            unplaceable_older_tickets_do_not_block_younger_matches,
            fifo_leftovers_hold_no_match_whatever_the_arrival_order,
            a_ready_check_makes_the_match_final_when_all_accept,
            decliners_are_removed_and_everyone_else_keeps_their_place,
            a_proposal_that_times_out_removes_only_the_silent,
            a_party_in_a_proposal_stays_whole,
            leaving_during_a_proposal_cancels_it,
            regions_match_only_where_everyone_is_within_the_widening_cap,
            the_region_with_the_lowest_worst_latency_is_chosen,
            a_party_is_placed_only_where_all_its_members_qualify,
            latencies_are_required_or_defaulted_and_spread_is_bounded,
            rated_worlds_with_regions_match_by_rating_within_a_region,
            a_ready_check_keeps_regions_through_a_cancelled_proposal,
            an_optional_build_rule_matches_any_when_not_specified,
            cross_mode_matches_share_a_mode_until_the_rule_is_optional,
            the_matcher_tick_forms_matches_in_a_fifo_world_with_attributes,
            a_distance_rule_widens_linearly_with_the_anchors_wait,
            same_mode_and_all_different_characters,
            a_compound_rule_records_the_branch_that_held,
            a_party_agrees_on_equal_attributes_and_averages_numbers,
            trusted_attributes_come_from_the_store,
            a_backfill_keeps_the_rules_of_its_match,
            racing_matchers_never_break_a_rule,
            an_equality_rule_finds_a_rare_value_behind_the_candidate_window,
            intersection_and_distance_rules_find_a_fit_behind_the_candidate_window,
            a_wider_candidate_window_finds_what_an_unindexed_rule_missed,
            an_assignment_reaches_every_participant_with_their_own_token,
            a_player_in_a_game_queues_again_only_after_its_result,
            a_player_holds_a_seat_in_one_unfinished_match_at_most,
            a_result_updates_every_rating_once,
            match_events_are_published_at_least_once,
            a_backfilled_seat_is_taken_before_a_new_match_forms,
            a_joiner_takes_an_open_seat_and_a_party_too_large_does_not,
            a_rated_backfill_takes_players_within_the_window,
            backfills_are_replaced_renewed_and_refused_cleanly,
            a_backfill_never_splits_a_party,
            backfill_proposals_ask_only_new_players_and_lapse_back_to_the_queue,
            backfill_events_reach_the_allocator,
            a_later_backfill_numbers_its_fills_on,
            a_fill_the_server_has_not_heard_of_keeps_its_seat,
            a_rated_backfill_seats_the_player_who_balances_the_teams_best,
            a_backfill_keeps_its_own_balance_window,
            a_backfilled_joiner_leaves_nothing_of_its_ticket_behind,
            a_finished_match_cancels_the_proposals_of_its_backfill,
            the_matcher_sleeps_only_when_idle_and_work_wakes_it,
            an_operator_pages_through_a_queue_and_removes_a_ticket,
            an_operator_cancels_a_proposal_and_lists_matches,
            an_avoid_list_is_kept_as_pairs_in_both_directions,
            a_blocked_pair_never_forms_the_only_possible_match,
            parties_and_teams_keep_blocked_players_apart,
            a_rated_match_skips_a_blocked_neighbour,
            a_backfill_never_seats_a_blocked_player,
            racing_matchers_never_match_a_blocked_pair,
            a_role_queue_fills_every_team_with_its_quotas,
            role_totals_per_match_admit_ranges_and_players_without_a_role,
            a_party_with_roles_stays_on_one_team,
            a_rated_role_queue_balances_teams_within_each_role,
            a_scarce_role_is_found_behind_a_backlog_of_another,
            a_declined_role_is_filled_again_from_the_queue,
            a_backfill_seats_the_role_of_the_player_who_left,
            a_declined_backfill_seat_opens_its_role_again,
            racing_matchers_keep_every_team_within_its_quotas,
            a_player_in_two_worlds_is_matched_in_the_first_that_completes,
            leaving_one_world_leaves_every_world_of_the_ticket,
            a_matcher_or_a_sweep_in_one_world_takes_the_ticket_from_all,
            a_ready_check_holds_a_shared_ticket_out_of_every_world,
            a_shared_ticket_carries_each_worlds_attributes,
            a_lost_connection_or_a_backfill_seat_takes_the_ticket_from_all,
            racing_matchers_never_match_a_shared_ticket_twice,
            a_party_in_two_worlds_is_matched_in_the_first_that_completes,
            leaving_a_party_in_one_of_its_worlds_ends_it_in_all,
            a_partys_rating_and_attributes_are_each_worlds,
            a_ready_check_holds_a_party_out_of_all_its_worlds,
            a_sweep_or_an_operator_in_one_world_ends_a_party_in_all,
            role_totals_of_number_attributes_bound_the_match,
            a_total_per_team_splits_the_teams_and_backfills_keep_it,
        );
    };
}

/// Where the scenarios run: one Redis topology.
#[derive(Debug, Clone)]
pub struct Env {
    pub urls: String,
    pub cluster: bool,
}

impl Env {
    /// A store for namespace `ns` with `worlds` (`MM_WORLDS` syntax) and extra settings.
    pub fn store_with(&self, ns: &str, worlds: &str, overrides: &[(&str, &str)]) -> MatchStore {
        MatchStore::new(settings_for(
            &self.urls,
            self.cluster,
            ns,
            worlds,
            overrides,
        ))
        .expect("store")
    }

    pub fn store(&self, ns: &str, worlds: &str) -> MatchStore {
        self.store_with(ns, worlds, &[])
    }
}

/// The "registered moments ago" threshold the scenarios claim with.
const YOUNG: Duration = shared::store::YOUNG_CONNECTION;

pub fn player(s: &str) -> PlayerId {
    PlayerId::parse(s).expect("valid player id")
}

pub fn world_name(s: &str) -> WorldName {
    WorldName::parse(s).expect("valid world name")
}

fn world<'a>(store: &'a MatchStore, name: &str) -> &'a shared::World {
    store.settings().worlds.get(name).expect("configured world")
}

/// Registers connection "conn-<p>" for player `p`.
async fn connect(store: &MatchStore, p: &str) {
    store
        .register_connection(
            &shared::ConnectionId::parse(&format!("conn-{p}")).unwrap(),
            &player(p),
        )
        .await
        .unwrap();
}

async fn join(store: &MatchStore, w: &str, p: &str) -> JoinOutcome {
    store
        .join(world(store, w), &player(p), None, None)
        .await
        .expect("join")
}

fn players(names: &[&str]) -> Vec<PlayerId> {
    names.iter().map(|p| player(p)).collect()
}

/// Creates a party of `leader` inviting `members` in world `w`.
async fn create(
    store: &MatchStore,
    w: &str,
    leader: &str,
    members: &[&str],
) -> shared::PartyCreateOutcome {
    store
        .create_party(
            world(store, w),
            &player(leader),
            &players(members),
            None,
            None,
        )
        .await
        .expect("create party")
}

/// Queues a party of `leader` and `members` in `w` (every member joins);
/// the last member's join outcome.
async fn queue_party(
    store: &MatchStore,
    w: &str,
    leader: &str,
    members: &[&str],
) -> shared::PartyJoinOutcome {
    let created = create(store, w, leader, members).await;
    let shared::PartyCreateOutcome::Created(party) = created else {
        panic!("{created:?}")
    };
    let mut last = None;
    for m in members {
        let joined = store
            .join_party(world(store, w), &party.party_id, &player(m), None, None)
            .await
            .expect("join party");
        last = Some(joined);
    }
    last.expect("a party has members")
}

fn queued_at(outcome: &JoinOutcome) -> (u64, u64) {
    match outcome {
        JoinOutcome::Queued(q) => (q.position, q.queue_size),
        other => panic!("expected QUEUED, got {other:?}"),
    }
}

/// Every key of the namespace's layout with its logical contents, to prove
/// an operation wrote nothing (see [`crate::keyspace`]).
pub async fn snapshot(store: &MatchStore) -> Keyspace {
    walk(store, Scope::Layout).await
}

async fn zcard(store: &MatchStore, key: &str) -> u64 {
    store
        .command(redis::cmd("ZCARD").arg(key))
        .await
        .expect("ZCARD")
}

async fn hlen(store: &MatchStore, key: &str) -> u64 {
    store
        .command(redis::cmd("HLEN").arg(key))
        .await
        .expect("HLEN")
}

/// The kinds of player state (`shared::PlayerState`), for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    Waiting,
    Matched,
    Party,
    Proposal,
    CoolingDown,
}

/// Every entry of the `players` hash whose state is of `kind`.
pub async fn states_of(store: &MatchStore, kind: StateKind) -> BTreeMap<String, String> {
    let all: HashMap<String, String> = store
        .command(redis::cmd("HGETALL").arg(store.keys().players()))
        .await
        .expect("HGETALL players");
    all.into_iter()
        .filter(|(_, v)| {
            let state = shared::PlayerState::parse(v)
                .unwrap_or_else(|| panic!("malformed player state {v:?}"));
            let of = match state {
                shared::PlayerState::Waiting { .. } => StateKind::Waiting,
                shared::PlayerState::Matched(_) => StateKind::Matched,
                shared::PlayerState::Party(_) => StateKind::Party,
                shared::PlayerState::Proposal(_) => StateKind::Proposal,
                shared::PlayerState::CoolingDown(_) => StateKind::CoolingDown,
            };
            of == kind
        })
        .collect()
}

/// How many `players` entries are in state `kind`.
pub async fn count_states(store: &MatchStore, kind: StateKind) -> u64 {
    states_of(store, kind).await.len() as u64
}

/// Joins queue in FIFO order, report 1-based positions, the third join forms
/// the match at once, and a matched player may join again immediately.
pub async fn join_positions_and_instant_match(env: &Env) {
    let store = env.store("join-instant", "world1:3");
    assert_eq!(queued_at(&join(&store, "world1", "alice").await), (1, 1));
    assert_eq!(queued_at(&join(&store, "world1", "bob").await), (2, 2));
    match store.player_status(&player("alice")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!(
            (q.world_type.as_str(), q.position, q.queue_size),
            ("world1", 1, 2)
        ),
        other => panic!("{other:?}"),
    }
    let record = match join(&store, "world1", "carol").await {
        JoinOutcome::Matched { record, formed, .. } => {
            assert_eq!(formed, vec![record.clone()]);
            record
        }
        other => panic!("expected MATCHED, got {other:?}"),
    };
    assert_eq!(record.participants, ["alice", "bob", "carol"]);
    assert_eq!(record.world_type, "world1");
    assert!(
        record.matched_at > 1_600_000_000_000,
        "matchedAt is Unix ms: {}",
        record.matched_at
    );
    for p in ["alice", "bob", "carol"] {
        assert_eq!(
            store.player_status(&player(p)).await.unwrap(),
            PlayerStatus::Matched(Box::new(shared::MatchWithLifecycle {
                record: record.clone(),
                lifecycle: shared::MatchLifecycle::FORMED,
            }))
        );
    }
    assert_eq!(
        zcard(
            &store,
            &store.keys().world(&world(&store, "world1").name).queue
        )
        .await,
        0
    );
    assert_eq!(
        count_states(&store, StateKind::Waiting).await,
        0,
        "matched tickets are gone"
    );
    // Matched players may queue again at once; the queued state wins in status.
    assert_eq!(queued_at(&join(&store, "world1", "alice").await), (1, 1));
    assert!(matches!(
        store.player_status(&player("alice")).await.unwrap(),
        PlayerStatus::Queued(_)
    ));
    assert_eq!(
        store.player_status(&player("dave")).await.unwrap(),
        PlayerStatus::Idle
    );
}

/// With instant matching off, joins only queue; the matcher forms the groups.
pub async fn instant_match_can_be_turned_off(env: &Env) {
    let store = env.store_with("no-instant", "world1:3", &[("MM_INSTANT_MATCH", "false")]);
    for (i, p) in ["a", "b", "c", "d"].iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(queued_at(&join(&store, "world1", p).await), (n, n));
    }
    let batch = store
        .form_matches(world(&store, "world1"), 0)
        .await
        .unwrap();
    assert_eq!(batch.matches.len(), 1);
    assert_eq!(batch.matches[0].participants, ["a", "b", "c"]);
    assert_eq!(batch.queue_size, 1);
    match store.player_status(&player("d")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!((q.position, q.queue_size), (1, 1)),
        other => panic!("{other:?}"),
    }
}

/// One ticket per player in the whole namespace; a second join changes nothing.
pub async fn one_ticket_per_player_across_worlds(env: &Env) {
    let store = env.store("one-ticket", "world1:3,world2:2");
    join(&store, "world1", "x").await;
    join(&store, "world1", "alice").await;
    let before = snapshot(&store).await;
    for w in ["world1", "world2"] {
        match join(&store, w, "alice").await {
            JoinOutcome::Rejected(Rejection::AlreadyQueued(q)) => {
                assert_eq!(
                    (q.world_type.as_str(), q.position, q.queue_size),
                    ("world1", 2, 2)
                );
            }
            other => panic!("expected ALREADY, got {other:?}"),
        }
    }
    assert_eq!(
        snapshot(&store).await,
        before,
        "an already-queued join must not write"
    );
}

/// A ticket of another world that is past its deadline (not swept yet) is
/// expired by the join itself, which then queues the player: the join is
/// given that world's keys only when it needs them.
pub async fn an_expired_ticket_elsewhere_gives_way_to_a_join(env: &Env) {
    let store = env.store("expired-elsewhere", "world1:3:1,world2:3");
    join(&store, "world1", "x").await;
    join(&store, "world1", "alice").await;
    let queued = eventually(
        "alice's world1 ticket to expire",
        Duration::from_secs(20),
        || {
            let store = store.clone();
            async move {
                match join(&store, "world2", "alice").await {
                    JoinOutcome::Rejected(Rejection::AlreadyQueued(q)) => {
                        assert_eq!(q.world_type.as_str(), "world1");
                        None
                    }
                    JoinOutcome::Queued(q) => Some(q),
                    other => panic!("expected ALREADY or QUEUED, got {other:?}"),
                }
            }
        },
    )
    .await;
    assert_eq!(
        (
            queued.world_type.as_str(),
            queued.position,
            queued.queue_size
        ),
        ("world2", 1, 1)
    );
    let w1 = store.keys().world(&world_name("world1"));
    assert_eq!(
        zcard_of(&store, w1.queue).await,
        1,
        "only x is left in world1"
    );
    match store.player_status(&player("alice")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!(q.world_type.as_str(), "world2"),
        other => panic!("{other:?}"),
    }
}

/// Leave reports the previous position and the remaining size; leaving when
/// not queued (or from the wrong world) is a distinct outcome.
pub async fn leave_outcomes(env: &Env) {
    let store = env.store_with(
        "leave",
        "world1:3,world2:3",
        &[("MM_INSTANT_MATCH", "false")],
    );
    for p in ["a", "b", "c", "d"] {
        join(&store, "world1", p).await;
    }
    let w1 = world(&store, "world1");
    assert_eq!(
        store.leave(w1, &player("b")).await.unwrap(),
        LeaveOutcome::Left {
            previous_position: 2,
            remaining_queue_size: 3
        }
    );
    assert_eq!(
        store.leave(w1, &player("b")).await.unwrap(),
        LeaveOutcome::NotQueued { queued_in: None }
    );
    let before = snapshot(&store).await;
    assert_eq!(
        store
            .leave(world(&store, "world2"), &player("a"))
            .await
            .unwrap(),
        LeaveOutcome::NotQueued {
            queued_in: Some(world_name("world1"))
        }
    );
    assert_eq!(
        snapshot(&store).await,
        before,
        "a not-queued leave must not write"
    );
    for (p, pos) in [("a", 1), ("c", 2), ("d", 3)] {
        match store.player_status(&player(p)).await.unwrap() {
            PlayerStatus::Queued(q) => assert_eq!(q.position, pos, "{p}"),
            other => panic!("{other:?}"),
        }
    }
    // Leaving from the back and the front keeps positions contiguous.
    assert!(matches!(
        store.leave(w1, &player("d")).await.unwrap(),
        LeaveOutcome::Left {
            previous_position: 3,
            ..
        }
    ));
    assert!(matches!(
        store.leave(w1, &player("a")).await.unwrap(),
        LeaveOutcome::Left {
            previous_position: 1,
            ..
        }
    ));
    match store.player_status(&player("c")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!((q.position, q.queue_size), (1, 1)),
        other => panic!("{other:?}"),
    }
}

/// The matcher forms every complete group, oldest first, records each match
/// durably with one outbox entry, and never takes a partial group.
pub async fn matcher_forms_all_complete_groups(env: &Env) {
    let store = env.store_with("extract", "world1:3", &[("MM_INSTANT_MATCH", "false")]);
    let w1 = world(&store, "world1");
    let players: Vec<String> = (0..10).map(|i| format!("p{i:02}")).collect();
    for p in &players {
        join(&store, "world1", p).await;
    }
    let MatchBatch {
        matches,
        queue_size,
        ..
    } = store.form_matches(w1, 0).await.unwrap();
    assert_eq!(queue_size, 1);
    let groups: Vec<Vec<PlayerId>> = matches.iter().map(|m| m.participants.clone()).collect();
    assert_eq!(
        groups,
        vec![
            players[0..3].to_vec(),
            players[3..6].to_vec(),
            players[6..9].to_vec()
        ]
    );
    let ids: BTreeSet<_> = matches.iter().map(|m| m.match_id.clone()).collect();
    assert_eq!(ids.len(), 3, "match ids are unique");
    assert_eq!(hlen(&store, &store.keys().matches()).await, 3);
    assert_eq!(
        zcard(&store, &store.keys().outbox()).await,
        3,
        "one notification per match (it names every participant)"
    );
    // Nothing more to form: a partial group stays queued.
    let again = store.form_matches(w1, 0).await.unwrap();
    assert!(again.matches.is_empty());
    assert_eq!(again.queue_size, 1);
    match store.player_status(&player("p09")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!((q.position, q.queue_size), (1, 1)),
        other => panic!("{other:?}"),
    }
    // max_groups bounds one call.
    for i in 10..16 {
        join(&store, "world1", &format!("p{i:02}")).await;
    }
    let limited = store.form_matches(w1, 1).await.unwrap();
    assert_eq!(limited.matches.len(), 1);
    assert_eq!(limited.matches[0].participants, ["p09", "p10", "p11"]);
    assert_eq!(limited.queue_size, 4);
}

/// Ticket data travels into the match record verbatim.
pub async fn ticket_data_reaches_the_match(env: &Env) {
    let store = env.store("data", "duel:2");
    let duel = world(&store, "duel");
    let data = TicketData::from_value(
        &serde_json::json!({"mmr": 1234567890123456789u64, "tags": [], "o": {}}),
    )
    .unwrap();
    store
        .join(duel, &player("a"), Some(&data), None)
        .await
        .unwrap();
    let record = match store.join(duel, &player("b"), None, None).await.unwrap() {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let pd = record.player_data.expect("player data");
    assert_eq!(pd.len(), 1);
    assert_eq!(
        pd["a"],
        serde_json::json!({"mmr": 1234567890123456789u64, "o": {}, "tags": []})
    );
}

/// Player ids that JSON must escape (quotes, backslashes, slashes, non-ASCII)
/// come back exactly from the hand-built match record.
pub async fn player_ids_round_trip_through_match_records(env: &Env) {
    let store = env.store("escaping", "four:4");
    let ids = ["a\"b", "c\\d", "e/f", "ü{x}:*|y z"];
    let mut record = None;
    for id in ids {
        if let JoinOutcome::Matched { record: r, .. } = join(&store, "four", id).await {
            record = Some(r);
        }
    }
    let record = record.expect("the fourth join matches");
    assert_eq!(record.participants, ids);
    assert_eq!(
        store.player_status(&player(ids[0])).await.unwrap(),
        PlayerStatus::Matched(Box::new(shared::MatchWithLifecycle {
            record,
            lifecycle: shared::MatchLifecycle::FORMED,
        }))
    );
}

/// A world at capacity refuses joins and writes nothing.
pub async fn queue_capacity_is_enforced(env: &Env) {
    let store = env.store_with(
        "capacity",
        "world1:3",
        &[("MM_QUEUE_CAPACITY", "2"), ("MM_INSTANT_MATCH", "false")],
    );
    join(&store, "world1", "a").await;
    join(&store, "world1", "b").await;
    let before = snapshot(&store).await;
    assert_eq!(
        join(&store, "world1", "c").await,
        JoinOutcome::Rejected(Rejection::QueueFull {
            world_type: world_name("world1"),
            queue_size: 2
        })
    );
    assert_eq!(snapshot(&store).await, before);
}

/// Each ticket expires on its own deadline; the queue key itself never gets
/// an EXPIRE; expired players get a TICKET_EXPIRED notification.
pub async fn tickets_expire_individually(env: &Env) {
    let store = env.store_with(
        "expiry",
        "short:3:1,long:3",
        &[("MM_INSTANT_MATCH", "false")],
    );
    let short = world(&store, "short");
    join(&store, "short", "early").await;
    join(&store, "long", "stays").await;
    let queue_key = store.keys().world(&short.name).queue;
    let pttl: i64 = store
        .command(redis::cmd("PTTL").arg(&queue_key))
        .await
        .unwrap();
    assert_eq!(pttl, -1, "the queue key must not carry an EXPIRE");
    assert!(
        store
            .sweep_expired_tickets(short, 100)
            .await
            .unwrap()
            .is_empty(),
        "nothing expired yet"
    );
    let expired = eventually(
        "the short ticket to expire",
        Duration::from_secs(5),
        || async {
            let swept = store.sweep_expired_tickets(short, 100).await.unwrap();
            (!swept.is_empty()).then_some(swept)
        },
    )
    .await;
    assert_eq!(expired, ["early"]);
    assert_eq!(
        store.player_status(&player("early")).await.unwrap(),
        PlayerStatus::Idle
    );
    assert!(matches!(
        store.player_status(&player("stays")).await.unwrap(),
        PlayerStatus::Queued(_)
    ));
    let claimed = store
        .claim_notifications(Duration::from_secs(5), 10, YOUNG, &[])
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        claimed[0].id.kind(),
        &NotificationKind::TicketExpired {
            world: world_name("short"),
            player: player("early")
        }
    );
    assert_eq!(claimed[0].targets.len(), 1);
    assert_eq!(claimed[0].targets[0].player, player("early"));
}

/// Match records outlive the queue for the configured time, then go away
/// (status turns IDLE at once; housekeeping deletes them in batches).
pub async fn match_records_expire(env: &Env) {
    let store = env.store_with("match-expiry", "duel:2", &[("MM_MATCH_TTL_SECS", "1")]);
    join(&store, "duel", "a").await;
    assert!(matches!(
        join(&store, "duel", "b").await,
        JoinOutcome::Matched { .. }
    ));
    assert!(matches!(
        store.player_status(&player("a")).await.unwrap(),
        PlayerStatus::Matched(_)
    ));
    assert_eq!(
        store.housekeeping(100).await.unwrap(),
        Housekeeping::default(),
        "not expired yet"
    );
    eventually("the match to expire", Duration::from_secs(5), || async {
        (store.player_status(&player("a")).await.unwrap() == PlayerStatus::Idle).then_some(())
    })
    .await;
    let swept = store.housekeeping(100).await.unwrap();
    assert_eq!(swept.matches_removed, 1);
    assert_eq!(hlen(&store, &store.keys().matches()).await, 0);
    assert_eq!(count_states(&store, StateKind::Matched).await, 0);
}

/// The outbox: one entry per match, naming every participant with their
/// connections; claim hides entries for the lease, a retry keeps only the
/// participants still untold and counts attempts, done removes the entry;
/// explicit ids claim only those.
pub async fn outbox_claim_and_settle(env: &Env) {
    let store = env.store("outbox", "duel:2,other:2");
    store
        .register_connection(&shared::ConnectionId::parse("connA").unwrap(), &player("a"))
        .await
        .unwrap();
    join(&store, "duel", "a").await;
    let record = match join(&store, "duel", "b").await {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let ids: Vec<shared::NotificationId> = outbox_ids(&store)
        .await
        .iter()
        .filter(|id| id.contains(record.match_id.as_str()))
        .map(|id| shared::NotificationId::parse(id).unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "one outbox entry per match");
    join(&store, "other", "c").await;
    let other = match join(&store, "other", "d").await {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let lease = Duration::from_secs(30);
    let only_duel = store
        .claim_notifications(lease, 10, YOUNG, &ids)
        .await
        .unwrap();
    assert_eq!(only_duel.len(), 1);
    let entry = &only_duel[0];
    assert_eq!(entry.attempts, 1);
    assert_eq!(entry.record.as_ref(), Some(&record));
    let targets: Vec<(u32, &str, Vec<&str>)> = entry
        .targets
        .iter()
        .map(|t| {
            (
                t.index,
                t.player.as_str(),
                t.connections.iter().map(|c| c.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(targets, [(1, "a", vec!["connA"]), (2, "b", vec![])]);
    assert_eq!(
        entry.targets[0].young.len(),
        1,
        "connA registered moments ago"
    );

    let rest = store
        .claim_notifications(lease, 10, YOUNG, &[])
        .await
        .unwrap();
    assert_eq!(
        rest.len(),
        1,
        "the duel entry is leased, only the other is due"
    );
    assert_eq!(rest[0].record.as_ref(), Some(&other));
    assert!(store
        .claim_notifications(lease, 10, YOUNG, &[])
        .await
        .unwrap()
        .is_empty());

    // a was told, b was not: the retry is for b only.
    store
        .settle_notifications(&[(
            entry.id.clone(),
            Settlement::RetryAfter(Duration::ZERO, vec![2]),
        )])
        .await
        .unwrap();
    let retried = store
        .claim_notifications(lease, 10, YOUNG, &[])
        .await
        .unwrap();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].attempts, 2);
    let left: Vec<(u32, &str)> = retried[0]
        .targets
        .iter()
        .map(|t| (t.index, t.player.as_str()))
        .collect();
    assert_eq!(left, [(2, "b")]);
    store
        .settle_notifications(&[
            (retried[0].id.clone(), Settlement::Done),
            (rest[0].id.clone(), Settlement::Done),
        ])
        .await
        .unwrap();
    assert_eq!(zcard(&store, &store.keys().outbox()).await, 0);
    assert_eq!(hlen(&store, &store.keys().outbox_meta()).await, 0);
}

/// The connection registry: several connections per player, a cap, and the
/// last disconnect removing the ticket (configurable).
pub async fn connection_registry(env: &Env) {
    let store = env.store_with(
        "conns",
        "world1:3",
        &[("MM_MAX_CONNECTIONS_PER_PLAYER", "2")],
    );
    let conn = |s: &str| shared::ConnectionId::parse(s).unwrap();
    let alice = player("alice");
    assert_eq!(
        store
            .register_connection(&conn("c1"), &alice)
            .await
            .unwrap()
            .connections,
        1
    );
    assert_eq!(
        store
            .register_connection(&conn("c2"), &alice)
            .await
            .unwrap()
            .connections,
        2
    );
    let third = store
        .register_connection(&conn("c3"), &alice)
        .await
        .unwrap();
    assert_eq!(
        (third.connections, third.evicted.as_deref()),
        (2, Some("c1"))
    );
    assert_eq!(store.connections_of(&alice).await.unwrap(), ["c2", "c3"]);
    join(&store, "world1", "alice").await;
    let first = store.unregister_connection(&conn("c2")).await.unwrap();
    assert_eq!(
        (
            first.player.as_deref(),
            first.remaining_connections,
            first.removed_ticket_world.as_deref()
        ),
        (Some("alice"), 1, None)
    );
    assert!(matches!(
        store.player_status(&alice).await.unwrap(),
        PlayerStatus::Queued(_)
    ));
    let last = store.unregister_connection(&conn("c3")).await.unwrap();
    assert_eq!(
        (
            last.remaining_connections,
            last.removed_ticket_world.as_deref()
        ),
        (0, Some("world1"))
    );
    assert_eq!(
        store.player_status(&alice).await.unwrap(),
        PlayerStatus::Idle
    );
    let unknown = store.unregister_connection(&conn("nope")).await.unwrap();
    assert_eq!(unknown.player, None);

    let keep = env.store_with(
        "conns-keep",
        "world1:3",
        &[("MM_REMOVE_TICKET_ON_DISCONNECT", "false")],
    );
    keep.register_connection(&conn("k1"), &alice).await.unwrap();
    join(&keep, "world1", "alice").await;
    assert_eq!(
        keep.unregister_connection(&conn("k1"))
            .await
            .unwrap()
            .removed_ticket_world,
        None
    );
    assert!(matches!(
        keep.player_status(&alice).await.unwrap(),
        PlayerStatus::Queued(_)
    ));

    // Registry entries expire; housekeeping treats that as a disconnect.
    let short = env.store_with(
        "conns-expire",
        "world1:3",
        &[
            ("MM_PRESENCE_TIMEOUT_SECS", "2"),
            ("MM_HEARTBEAT_SECS", "1"),
        ],
    );
    short
        .register_connection(&conn("e1"), &alice)
        .await
        .unwrap();
    join(&short, "world1", "alice").await;
    let swept = eventually(
        "the connection to expire",
        Duration::from_secs(5),
        || async {
            let h = short.housekeeping(100).await.unwrap();
            (h.connections_removed > 0).then_some(h)
        },
    )
    .await;
    assert_eq!((swept.connections_removed, swept.tickets_removed), (1, 1));
    assert!(short.connections_of(&alice).await.unwrap().is_empty());
}

/// The matcher lease is held by one token at a time.
pub async fn matcher_lease(env: &Env) {
    let store = env.store("lease", "world1:3");
    let ttl = Duration::from_secs(10);
    assert!(store.acquire_lease("t1", ttl).await.unwrap());
    assert!(!store.acquire_lease("t2", ttl).await.unwrap());
    assert!(
        store.acquire_lease("t1", ttl).await.unwrap(),
        "the holder renews"
    );
    assert!(!store.release_lease("t2").await.unwrap());
    assert!(store.release_lease("t1").await.unwrap());
    assert!(store.acquire_lease("t2", ttl).await.unwrap());
}

/// The wait estimate comes from the recent match rate: unknown before any
/// match, a number after.
pub async fn wait_estimate_follows_match_rate(env: &Env) {
    let store = env.store_with("estimate", "world1:3", &[("MM_INSTANT_MATCH", "false")]);
    let w1 = world(&store, "world1");
    let status = store.queue_status(w1).await.unwrap();
    assert_eq!(
        (
            status.waiting,
            status.team_size,
            status.estimated_wait_seconds
        ),
        (0, 3, None)
    );
    for i in 0..7 {
        join(&store, "world1", &format!("p{i}")).await;
    }
    store.form_matches(w1, 0).await.unwrap();
    let status = store.queue_status(w1).await.unwrap();
    assert_eq!(status.waiting, 1);
    let estimate = status
        .estimated_wait_seconds
        .expect("an estimate after matches");
    assert!(
        (1..=2).contains(&estimate),
        "6 players matched just now: a group of 3 takes ~1 s, got {estimate}"
    );
    match store.player_status(&player("p6")).await.unwrap() {
        PlayerStatus::Queued(q) => assert!(q.estimated_wait_seconds.is_some()),
        other => panic!("{other:?}"),
    }
}

/// The rate statistics slide: after two windows without matches the world
/// has no history and the estimate is unknown again.
pub async fn wait_estimate_forgets_old_history(env: &Env) {
    let store = env.store_with(
        "estimate-window",
        "duel:2",
        &[("MM_INSTANT_MATCH", "false"), ("MM_WAIT_WINDOW_SECS", "1")],
    );
    let duel = world(&store, "duel");
    for p in ["a", "b"] {
        join(&store, "duel", p).await;
    }
    assert_eq!(store.form_matches(duel, 0).await.unwrap().matches.len(), 1);
    assert!(store
        .queue_status(duel)
        .await
        .unwrap()
        .estimated_wait_seconds
        .is_some());
    eventually("the history to age out", Duration::from_secs(5), || async {
        store
            .queue_status(duel)
            .await
            .unwrap()
            .estimated_wait_seconds
            .is_none()
            .then_some(())
    })
    .await;
}

/// Every script rejects bad arguments before its first write.
pub async fn scripts_validate_before_writing(env: &Env) {
    let store = env.store_with("validate", "world1:3", &[("MM_INSTANT_MATCH", "false")]);
    join(&store, "world1", "seed-player").await;
    // KEYS as each script declares them (shared/src/scripts/mod.rs), with a
    // world block for each of `worlds`.
    let keys = |file: &str, worlds: &[&str]| -> Vec<String> {
        let d = shared::scripts::declaration(file).expect(file);
        let mut v: Vec<String> = d
            .keys
            .iter()
            .map(|k| store.keys().namespace_key(*k))
            .collect();
        for w in worlds {
            v.extend(store.keys().world(&world_name(w)).block());
        }
        v
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // `good` with argument `i` replaced by `bad`.
    let with_arg = |good: &[String], i: usize, bad: &str| {
        let mut args = good.to_vec();
        args[i] = bad.to_string();
        args
    };
    // The world configuration argument (`lua/_config.lua`): a FIFO and a
    // rated one, and the same with fields replaced (JSON pointers).
    let fifo_config = serde_json::json!({
        "seats": 3, "teams": 1, "ticket_ttl": 60000, "match_ttl": 60000, "instant": true,
        "capacity": 0, "window": 1000, "presence": false, "max_party": 3, "party_ttl": 60000,
        "ratings": {"min": 0, "max": 10}, "party_rating": "average",
        "claim": {"lease_ms": 15000, "young_ms": 10000}
    });
    let mut rated_config = fifo_config.clone();
    rated_config["ratings"] = serde_json::json!({"min": 0, "max": 3000});
    rated_config["rating"] = serde_json::json!({
        "base": 50, "per_sec": 10, "max": 400, "relax_ms": 60000, "retry_ms": 1000
    });
    let config = |base: &serde_json::Value, changes: &[(&str, serde_json::Value)]| {
        let mut c = base.clone();
        for (path, v) in changes {
            match c.pointer_mut(path) {
                Some(field) => *field = v.clone(),
                // A field the base lacks: only top-level ones are added.
                None => {
                    let name = path.strip_prefix('/').unwrap_or_else(|| panic!("{path}"));
                    assert!(!name.contains('/'), "{path}");
                    c[name] = v.clone();
                }
            }
        }
        c.to_string()
    };
    use serde_json::json;
    let join_args =
        |claimed: &str, config: String| s(&["p", "", claimed, "", "", &config, "0", "world1"]);
    let good_join = join_args("", config(&fifo_config, &[]));
    let good_rated = join_args("1500", config(&rated_config, &[]));
    let good_match = s(&["0", &config(&fifo_config, &[]), "world1"]);
    let good_party = s(&[
        "leader",
        "",
        "",
        "",
        "",
        &config(&fifo_config, &[]),
        "0",
        "world1",
        "friend",
    ]);
    let join_keys = keys("join.lua", &["world1"]);
    let match_keys = keys("form_matches.lua", &["world1"]);
    let party_create_keys = keys("party_create.lua", &["world1"]);
    // The well-formed calls the bad ones are made from do succeed: each bad
    // case below fails for its one bad value, not for a wrong shape.
    for (name, keys, args) in [
        ("join.lua", join_keys.clone(), good_join.clone()),
        ("join.lua", join_keys.clone(), good_rated.clone()),
        ("form_matches.lua", match_keys.clone(), good_match.clone()),
        (
            "party_create.lua",
            party_create_keys.clone(),
            good_party.clone(),
        ),
    ] {
        eval_script(&store, name, &keys, &args)
            .await
            .unwrap_or_else(|e| panic!("{name} {args:?} must be accepted: {e}"));
    }

    let mut cases: Vec<(&str, Vec<String>, Vec<String>)> = Vec::new();
    for (i, bad) in [
        (0, ""),
        (2, "high"),
        // The claim's text goes to ZADD and the reply as it is: only the
        // plain decimals Rust writes (Lua's tonumber would take these).
        (2, "1e3"),
        (2, "0x10"),
        (2, " 1500"),
        (2, "nan"),
        (2, "inf"),
        (3, "eu=5"),
        // Attributes for a world that declares none.
        (4, "mode=ranked"),
        (5, ""),
        (5, "{"),
        (5, "[]"),
        (6, "yes"),
        (7, ""),
    ] {
        cases.push(("join.lua", join_keys.clone(), with_arg(&good_join, i, bad)));
    }
    // Too few keys for the world block, a world block without its name, an
    // argument too many.
    cases.push(("join.lua", join_keys[..12].to_vec(), good_join.clone()));
    cases.push(("join.lua", join_keys.clone(), good_join[..7].to_vec()));
    let mut extra = good_join.clone();
    extra.push("world2".into());
    cases.push(("join.lua", join_keys.clone(), extra));
    // One bad configuration field each.
    for changes in [
        vec![("/seats", json!(1))],
        vec![("/seats", json!("x"))],
        vec![("/teams", json!(0))],
        vec![("/teams", json!(2))],
        vec![("/ticket_ttl", json!(0))],
        vec![("/match_ttl", json!(-5))],
        vec![("/instant", json!("yes"))],
        vec![("/capacity", json!(1.5))],
        vec![("/window", json!(-1))],
        vec![("/presence", json!(2))],
        vec![("/max_party", json!(0))],
        vec![("/party_ttl", json!(0))],
        vec![("/ratings/min", json!(50)), ("/ratings/max", json!(10))],
        vec![("/ratings", json!({"min": 0, "max": 10, "default": "1.5e"}))],
        vec![("/party_rating", json!("median"))],
        vec![("/seats", json!({"ready_check": true}))],
        vec![("/claim/lease_ms", json!(0))],
        // Attributes and match rules: no list, an unknown type, rules
        // without attributes, a rule on an undeclared attribute.
        vec![("/attributes", json!("mode")), ("/retry_ms", json!(1000))],
        vec![
            (
                "/attributes",
                json!([{"name": "mode", "type": "blob", "trusted": false}]),
            ),
            ("/retry_ms", json!(1000)),
        ],
        vec![(
            "/match_rules",
            json!([{"name": "same", "kind": "equality", "attr": "mode", "top": true}]),
        )],
        vec![
            (
                "/attributes",
                json!([{"name": "mode", "type": "string", "trusted": false}]),
            ),
            ("/retry_ms", json!(1000)),
            (
                "/match_rules",
                json!([{"name": "same", "kind": "equality", "attr": "map", "top": true}]),
            ),
        ],
    ] {
        cases.push((
            "join.lua",
            join_keys.clone(),
            join_args("", config(&fifo_config, &changes)),
        ));
    }
    let mut with_ready = fifo_config.clone();
    with_ready["ready_check"] = json!({"accept_ms": -1, "cooldown_ms": 0});
    cases.push((
        "join.lua",
        join_keys.clone(),
        join_args("", config(&with_ready, &[])),
    ));
    with_ready["ready_check"] = json!({"accept_ms": 1000, "cooldown_ms": "x"});
    cases.push((
        "join.lua",
        join_keys.clone(),
        join_args("", config(&with_ready, &[])),
    ));
    // Rated rules: a negative base, a widening that is no number, a
    // maximum below the base, a zero retry, a balance window that is no
    // number (with teams).
    for changes in [
        vec![("/rating/base", json!(-1))],
        vec![("/rating/per_sec", json!("x"))],
        vec![("/rating/max", json!(10))],
        vec![("/rating/retry_ms", json!(0))],
        vec![
            ("/teams", json!(3)),
            (
                "/rating",
                json!({"base": 50, "per_sec": 10, "max": 400, "relax_ms": 60000,
                "retry_ms": 1000, "balance": {"base": "x", "per_sec": 1, "max": 5}}),
            ),
        ],
    ] {
        cases.push((
            "join.lua",
            join_keys.clone(),
            join_args("1500", config(&rated_config, &changes)),
        ));
    }
    cases.push((
        "join.lua",
        join_keys.clone(),
        with_arg(&good_rated, 2, "1.5e"),
    ));
    for args in [
        with_arg(&good_match, 2, ""),
        with_arg(&good_match, 0, "x"),
        with_arg(
            &good_match,
            1,
            &config(&fifo_config, &[("/seats", json!(1))]),
        ),
        with_arg(
            &good_match,
            1,
            &config(&fifo_config, &[("/teams", json!(0))]),
        ),
        with_arg(
            &good_match,
            1,
            &config(&fifo_config, &[("/match_ttl", json!(0))]),
        ),
        with_arg(
            &good_match,
            1,
            &config(&fifo_config, &[("/window", json!(-1))]),
        ),
        with_arg(
            &good_match,
            1,
            &config(&fifo_config, &[("/presence", json!("yes"))]),
        ),
        // A rated world needs a limit of anchors, and sane rules.
        with_arg(&good_match, 1, &config(&rated_config, &[])),
        s(&[
            "5",
            &config(&rated_config, &[("/rating/max", json!(40))]),
            "world1",
        ]),
    ] {
        cases.push(("form_matches.lua", match_keys.clone(), args));
    }
    cases.push((
        "leave.lua",
        keys("leave.lua", &["world1"]),
        s(&["", "world1"]),
    ));
    cases.push((
        "drop_stale_ticket.lua",
        keys("drop_stale_ticket.lua", &["world1"]),
        s(&["", "world1"]),
    ));
    cases.push((
        "sweep_tickets.lua",
        keys("sweep_tickets.lua", &["world1"]),
        s(&["0", "world1"]),
    ));
    for args in [
        s(&["*", "p", "5000", "0", "3000"]),
        s(&["*", "p", "x", "0", "3000"]),
        s(&["w|x", "p", "1", "0", "3000"]),
        s(&["*", "", "1", "0", "3000"]),
        s(&["*", "p", "1", "10", "3"]),
    ] {
        cases.push(("rating_set.lua", keys("rating_set.lua", &[]), args));
    }
    let claim_keys = keys("outbox_claim.lua", &[]);
    cases.push(("outbox_claim.lua", claim_keys.clone(), s(&["0", "10", "0"])));
    cases.push(("outbox_claim.lua", claim_keys, s(&["10", "10", "-1"])));
    for args in [
        s(&["id", "-7", "", ""]),
        s(&["id", "5", ""]),
        s(&["id", "5", "1;2", ""]),
        s(&["X|w|p", "-1", "", "conn"]),
        s(&["M|1-a", "-1", "", "a|b"]),
    ] {
        cases.push(("outbox_settle.lua", keys("outbox_settle.lua", &[]), args));
    }
    for args in [
        s(&["a b", "p", "1000", "2", "0"]),
        s(&["c", "p", "0", "2", "0"]),
        s(&["c", "p", "1000", "2", "-1"]),
    ] {
        cases.push(("conn_register.lua", keys("conn_register.lua", &[]), args));
    }
    cases.push((
        "conn_heartbeat.lua",
        keys("conn_heartbeat.lua", &[]),
        s(&["c", "0"]),
    ));
    cases.push((
        "conn_unregister.lua",
        keys("conn_unregister.lua", &["world1"]),
        s(&["c", "maybe", "world1"]),
    ));
    // A world name without its keys.
    cases.push((
        "housekeeping.lua",
        keys("housekeeping.lua", &[]),
        s(&["10", "1", "world1"]),
    ));
    cases.push(("match_record.lua", keys("match_record.lua", &[]), s(&[""])));
    cases.push((
        "lease_acquire.lua",
        keys("lease_acquire.lua", &[]),
        s(&["", "1000"]),
    ));
    for args in [s(&["-1", "5", "world1"]), s(&["1000", "0", "world1"])] {
        cases.push((
            "queue_status.lua",
            keys("queue_status.lua", &["world1"]),
            args,
        ));
    }
    // Parties: every malformed request, and well-formed ones that must be
    // refused, write nothing.
    for (i, bad) in [
        (0, ""),
        (2, "x"),
        (3, "eu=5"),
        (4, "mode=ranked"),
        (5, "{}"),
        (6, "x"),
        // One other world, but no configuration for it.
        (6, "1"),
        (7, ""),
        (8, "leader"),
    ] {
        cases.push((
            "party_create.lua",
            party_create_keys.clone(),
            with_arg(&good_party, i, bad),
        ));
    }
    let mut too_many = good_party.clone();
    too_many.extend(s(&["f2", "f3"]));
    cases.push(("party_create.lua", party_create_keys.clone(), too_many));
    let mut twice = good_party.clone();
    twice.push("friend".to_string());
    cases.push(("party_create.lua", party_create_keys.clone(), twice));
    cases.push((
        "party_create.lua",
        party_create_keys.clone(),
        good_party[..8].to_vec(),
    ));
    let party_join_keys = keys("party_join.lua", &["world1"]);
    let party_join_args = |config: String| {
        s(&[
            "friend",
            "world1.1-1",
            "",
            "",
            "",
            "",
            &config,
            "0",
            "world1",
        ])
    };
    let good_party_join = party_join_args(config(&fifo_config, &[]));
    // `also` is a configuration and attributes per other world: half of it.
    let mut half_also = good_party_join.clone();
    half_also.push(config(&fifo_config, &[]));
    cases.push(("party_join.lua", party_join_keys.clone(), half_also));
    for (i, bad) in [
        (0, ""),
        (1, ""),
        (3, "x"),
        (3, "1e3"),
        (4, "eu=1"),
        (5, "mode=ranked"),
        (7, "2"),
        (8, ""),
    ] {
        cases.push((
            "party_join.lua",
            party_join_keys.clone(),
            with_arg(&good_party_join, i, bad),
        ));
    }
    for changes in [
        vec![("/seats", json!(1))],
        vec![("/ticket_ttl", json!(0))],
        vec![("/capacity", json!("x"))],
        vec![("/teams", json!(2))],
        vec![("/party_rating", json!("median"))],
    ] {
        cases.push((
            "party_join.lua",
            party_join_keys.clone(),
            party_join_args(config(&fifo_config, &changes)),
        ));
    }
    cases.push((
        "party_cancel.lua",
        keys("party_cancel.lua", &["world1"]),
        s(&["", "world1.1-1", "world1"]),
    ));
    let answer_keys = keys("proposal_answer.lua", &["world1"]);
    let good_config = config(&fifo_config, &[]);
    for args in [
        s(&["", "1-a", "1", &good_config, "world1"]),
        s(&["p", "", "1", &good_config, "world1"]),
        s(&["p", "1-a", "yes", &good_config, "world1"]),
        s(&["p", "1-a", "1", &good_config, ""]),
        s(&[
            "p",
            "1-a",
            "1",
            &config(&fifo_config, &[("/match_ttl", json!(0))]),
            "world1",
        ]),
        s(&[
            "p",
            "1-a",
            "1",
            &config(&fifo_config, &[("/window", json!(-1))]),
            "world1",
        ]),
    ] {
        cases.push(("proposal_answer.lua", answer_keys.clone(), args));
    }

    let before = snapshot(&store).await;
    for (name, keys, args) in cases {
        let err = eval_script(&store, name, &keys, &args)
            .await
            .expect_err(&format!("{name} {args:?} must be rejected"));
        assert!(
            err.to_string().contains("ERR_ARG"),
            "{name} {args:?}: {err}"
        );
        assert_eq!(
            snapshot(&store).await,
            before,
            "{name} {args:?} wrote before failing"
        );
    }
}

/// Runs script `name` (with the library) by EVAL, with every feature (the
/// first argument; the cases' `args` follow it).
async fn eval_script(
    store: &MatchStore,
    name: &str,
    keys: &[String],
    args: &[String],
) -> Result<redis::Value, shared::StoreError> {
    let src = &shared::scripts::SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .expect("script")
        .1;
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(src).arg(keys.len());
    for key in keys {
        cmd.arg(key);
    }
    cmd.arg(shared::keys::Features::ALL.letters());
    for arg in args {
        cmd.arg(arg);
    }
    store.command(&cmd).await
}

/// Redis's clock, in Unix ms.
async fn redis_now_ms(store: &MatchStore) -> u64 {
    let (secs, micros): (u64, u64) = store.command(&redis::cmd("TIME")).await.expect("TIME");
    secs * 1000 + micros / 1000
}

/// The outbox's entry ids, oldest due first.
async fn outbox_ids(store: &MatchStore) -> Vec<String> {
    store
        .command(
            redis::cmd("ZRANGE")
                .arg(store.keys().outbox())
                .arg(0)
                .arg(-1),
        )
        .await
        .expect("ZRANGE outbox")
}

/// A world that requires presence: joining needs a live connection, and a
/// player whose registration lapsed (no heartbeat) is removed with
/// TICKET_REMOVED instead of being matched; heartbeats keep a registration.
pub async fn presence_decides_who_waits_and_who_is_matched(env: &Env) {
    let store = env.store_with(
        "presence",
        "",
        &[
            (
                "MM_RULES",
                r#"{"worlds":[{"name":"live","teamSize":2,"requirePresence":true}]}"#,
            ),
            ("MM_PRESENCE_TIMEOUT_SECS", "2"),
            ("MM_HEARTBEAT_SECS", "1"),
            ("MM_REMOVE_TICKET_ON_DISCONNECT", "false"),
        ],
    );
    let conn = |s: &str| shared::ConnectionId::parse(s).unwrap();
    let before = snapshot(&store).await;
    assert_eq!(
        join(&store, "live", "a").await,
        JoinOutcome::Rejected(Rejection::NotConnected {
            world_type: world_name("live")
        })
    );
    assert_eq!(
        snapshot(&store).await,
        before,
        "a refused join writes nothing"
    );

    store
        .register_connection(&conn("ca"), &player("a"))
        .await
        .unwrap();
    assert_eq!(queued_at(&join(&store, "live", "a").await), (1, 1));
    let lapse = eventually(
        "a's registration to lapse",
        Duration::from_secs(10),
        || async {
            let until: Option<f64> = store
                .command(redis::cmd("ZSCORE").arg(store.keys().presence()).arg("a"))
                .await
                .unwrap();
            let now = redis_now_ms(&store).await;
            until.is_some_and(|u| (u as u64) <= now).then_some(())
        },
    )
    .await;
    let () = lapse;
    store
        .register_connection(&conn("cb"), &player("b"))
        .await
        .unwrap();
    // b's join would complete a group with a, but a is not present: a's
    // ticket goes (TICKET_REMOVED) and b waits alone.
    assert_eq!(queued_at(&join(&store, "live", "b").await), (1, 1));
    assert_eq!(
        store.player_status(&player("a")).await.unwrap(),
        PlayerStatus::Idle
    );
    assert!(outbox_ids(&store).await.contains(&"G|live|a".to_owned()));

    match store.heartbeat(&conn("cb")).await.unwrap() {
        shared::store::Heartbeat::Renewed {
            player: p,
            expires_at_ms,
        } => {
            assert_eq!(p, player("b"));
            assert!(expires_at_ms > redis_now_ms(&store).await);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.heartbeat(&conn("nobody")).await.unwrap(),
        shared::store::Heartbeat::Unknown
    );
    // A present player completes b's group.
    store
        .register_connection(&conn("cc"), &player("c"))
        .await
        .unwrap();
    match join(&store, "live", "c").await {
        JoinOutcome::Matched { record, .. } => {
            assert_eq!(record.participants, [player("b"), player("c")])
        }
        other => panic!("{other:?}"),
    }
}

/// A connection that opens just after its player's match formed (it may
/// have missed the push) gets MATCH_FOUND queued for it alone.
pub async fn a_new_connection_gets_a_recent_match_again(env: &Env) {
    let store = env.store("replay", "duel:2");
    join(&store, "duel", "a").await;
    let record = match join(&store, "duel", "b").await {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    // Before the match's own notification is claimed, it will reach any new
    // connection by itself: nothing is replayed.
    let early = store
        .register_connection(
            &shared::ConnectionId::parse("early-a").unwrap(),
            &player("a"),
        )
        .await
        .unwrap();
    assert_eq!(early.replayed, None);
    let claimed = store
        .claim_notifications(Duration::from_secs(30), 10, YOUNG, &[])
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        claimed[0].targets[0].connections.len(),
        1,
        "early-a was in the claim"
    );
    // In flight: a connection opening now is not in the claim's list.
    let conn = shared::ConnectionId::parse("late-a").unwrap();
    let registered = store
        .register_connection(&conn, &player("a"))
        .await
        .unwrap();
    assert_eq!(registered.replayed.as_ref(), Some(&record.match_id));
    let replay = format!("C|{}|late-a", record.match_id);
    assert!(outbox_ids(&store).await.contains(&replay));
    let id = shared::NotificationId::parse(&replay).unwrap();
    let claimed = store
        .claim_notifications(Duration::from_secs(30), 10, YOUNG, &[id])
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].record.as_ref(), Some(&record));
    assert_eq!(claimed[0].targets.len(), 1);
    assert_eq!(claimed[0].targets[0].player, player("a"));
    assert_eq!(
        claimed[0].targets[0].connections,
        std::slice::from_ref(&conn)
    );
    // A player without a recent match gets nothing replayed.
    let other = store
        .register_connection(&shared::ConnectionId::parse("c1").unwrap(), &player("c"))
        .await
        .unwrap();
    assert_eq!(other.replayed, None);
    // Delivered to everyone: a connection opening afterwards gets a copy.
    store
        .settle_notifications(&[(claimed[0].id.clone(), Settlement::Done)])
        .await
        .unwrap();
    let after = store
        .register_connection(
            &shared::ConnectionId::parse("after-b").unwrap(),
            &player("b"),
        )
        .await
        .unwrap();
    assert_eq!(after.replayed.as_ref(), Some(&record.match_id));
}

/// A ticket past its deadline is gone even before the sweep removes it:
/// my-status shows IDLE, leave answers NOT_QUEUED and writes nothing, and a
/// join that would complete a group with it sweeps it instead.
pub async fn nobody_is_matched_or_shown_past_their_deadline(env: &Env) {
    let store = env.store("deadline", "quick:2:1");
    join(&store, "quick", "early").await;
    let wk = store.keys().world(&world_name("quick"));
    let deadline: f64 = store
        .command(redis::cmd("ZSCORE").arg(&wk.deadlines).arg("early"))
        .await
        .unwrap();
    eventually(
        "Redis time to pass the deadline",
        Duration::from_secs(10),
        || async { (redis_now_ms(&store).await > deadline as u64).then_some(()) },
    )
    .await;
    assert_eq!(
        store.player_status(&player("early")).await.unwrap(),
        PlayerStatus::Idle
    );
    let before = snapshot(&store).await;
    assert_eq!(
        store
            .leave(world(&store, "quick"), &player("early"))
            .await
            .unwrap(),
        LeaveOutcome::NotQueued { queued_in: None }
    );
    assert_eq!(snapshot(&store).await, before, "leave wrote nothing");
    assert_eq!(queued_at(&join(&store, "quick", "late").await), (1, 1));
    assert!(outbox_ids(&store)
        .await
        .contains(&"X|quick|early".to_owned()));
    // early may join again at once.
    match join(&store, "quick", "early").await {
        JoinOutcome::Matched { record, .. } => {
            assert_eq!(record.participants, [player("late"), player("early")])
        }
        other => panic!("{other:?}"),
    }
}

/// A rated world's rule set: `team` players, window `base` widening
/// `per_sec` up to `max`, no limit after `relax` seconds.
fn rated_rules(team: u32, base: f64, per_sec: f64, max: f64, relax: f64, extra: &str) -> String {
    format!(
        r#"{{{extra}"worlds": [{{"name": "ranked", "teamSize": {team}, "mode": "rating",
            "rating": {{"baseWindow": {base}, "widenPerSecond": {per_sec},
                        "maxWindow": {max}, "relaxAfterSeconds": {relax}}}}}]}}"#
    )
}

fn rating(r: f64) -> shared::Rating {
    shared::Rating::new(r).expect("finite")
}

async fn join_rated(store: &MatchStore, p: &str, r: f64) -> JoinOutcome {
    store
        .join(world(store, "ranked"), &player(p), None, Some(rating(r)))
        .await
        .expect("join")
}

async fn zcard_of(store: &MatchStore, key: String) -> u64 {
    zcard(store, &key).await
}

/// A rated join is matched only with players inside its window (the base
/// window, for a new ticket), nearest first; the record carries everyone's
/// rating and the spread; a waiting rated ticket shows its rating and window.
pub async fn rated_matches_form_within_the_anchors_window(env: &Env) {
    let store = env.store_with(
        "rated-window",
        "",
        &[("MM_RULES", &rated_rules(2, 50.0, 100.0, 400.0, 60.0, ""))],
    );
    assert_eq!(queued_at(&join_rated(&store, "a", 1500.0).await), (1, 1));
    // b is 200 away from a: outside b's base window of 50.
    assert_eq!(queued_at(&join_rated(&store, "b", 1700.0).await), (2, 2));
    // c is 20 away from a (and 180 from b): matched with a.
    let record = match join_rated(&store, "c", 1520.0).await {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    assert_eq!(record.participants, [player("a"), player("c")]);
    assert_eq!(record.spread, Some(20.0));
    let ratings = record.ratings.expect("ratings");
    assert_eq!(
        (ratings["a"], ratings["c"]),
        (rating(1500.0), rating(1520.0))
    );
    match store.player_status(&player("b")).await.unwrap() {
        PlayerStatus::Queued(q) => {
            let rated = q.rated.expect("a rated ticket shows its rating");
            assert_eq!(rated.rating, rating(1700.0));
            let window = rated.rating_window.expect("not relaxed");
            assert!((50.0..=400.0).contains(&window), "{window}");
            assert!(rated.relaxes_in_seconds <= 60);
            assert_eq!((q.position, q.queue_size), (1, 1));
        }
        other => panic!("{other:?}"),
    }
    let status = store.queue_status(world(&store, "ranked")).await.unwrap();
    let dist = status.ratings.expect("a rated world shows its ratings");
    assert_eq!(
        (dist.lowest, dist.highest),
        (rating(1700.0), rating(1700.0))
    );
    assert_eq!(dist.buckets.iter().map(|b| b.count).sum::<u64>(), 1);
}

/// An anchor's window widens with its own wait; past the relax time it takes
/// the nearest players whatever their rating. Matches form on the matcher's
/// step, oldest anchor first.
pub async fn a_rated_window_widens_with_wait_and_relaxes(env: &Env) {
    let store = env.store_with(
        "rated-relax",
        "",
        &[
            ("MM_RULES", &rated_rules(2, 10.0, 100.0, 300.0, 3.0, "")),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let ranked = world(&store, "ranked");
    join_rated(&store, "low", 1000.0).await;
    join_rated(&store, "high", 2000.0).await;
    let joined = redis_now_ms(&store).await;
    // 1000 apart: no window reaches before the relax time (max 300).
    let formed = eventually(
        "a match after the relax time",
        Duration::from_secs(20),
        || async {
            let batch = store.form_matches(ranked, 0).await.unwrap();
            let now = redis_now_ms(&store).await;
            if batch.matches.is_empty() {
                return None;
            }
            Some((batch, now))
        },
    )
    .await;
    let (batch, at) = formed;
    assert!(
        at >= joined + 2_500,
        "matched only {} ms after joining",
        at - joined
    );
    let m = &batch.matches[0];
    assert_eq!(m.participants, [player("low"), player("high")]);
    assert_eq!(m.spread, Some(1000.0));

    // A window that widened enough matches before the relax time: 150
    // apart, the base is 10 and it widens 100/s.
    join_rated(&store, "p", 1500.0).await;
    join_rated(&store, "q", 1650.0).await;
    let batch = eventually("the widened window", Duration::from_secs(20), || async {
        let b = store.form_matches(ranked, 0).await.unwrap();
        (!b.matches.is_empty()).then_some(b)
    })
    .await;
    assert_eq!(batch.matches[0].participants, [player("p"), player("q")]);
    assert_eq!(
        zcard_of(&store, store.keys().world(&ranked.name).ratings).await,
        0
    );
    assert_eq!(
        zcard_of(&store, store.keys().world(&ranked.name).due).await,
        0
    );
}

/// Among equally rated players (everyone on the default rating), the oldest
/// are taken first, whatever their ids.
pub async fn equally_rated_players_are_taken_oldest_first(env: &Env) {
    let store = env.store_with(
        "rated-ties",
        "",
        &[
            (
                "MM_RULES",
                &rated_rules(3, 0.0, 0.0, 0.0, 60.0, r#""ratings": {"default": 1500},"#),
            ),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let ranked = world(&store, "ranked");
    // Ids in reverse alphabetical order of joining.
    for p in ["z1", "y2", "x3", "w4", "v5"] {
        store
            .join(ranked, &player(p), None, None)
            .await
            .expect("join");
    }
    let batch = eventually(
        "the first anchors to be due",
        Duration::from_secs(10),
        || async {
            let b = store.form_matches(ranked, 0).await.unwrap();
            (!b.matches.is_empty()).then_some(b)
        },
    )
    .await;
    assert_eq!(batch.matches.len(), 1);
    assert_eq!(
        batch.matches[0].participants,
        [player("z1"), player("y2"), player("x3")]
    );
    assert_eq!(batch.matches[0].spread, Some(0.0));
    assert_eq!(batch.queue_size, 2);
}

/// A rated world's rating is the ratings store's entry for the world, else
/// its entry for every world, else the verified claim, else the default;
/// without any, or out of range, the join is refused and writes nothing.
pub async fn ratings_come_from_the_store_then_the_claim_then_the_default(env: &Env) {
    let rules = rated_rules(
        2,
        0.0,
        0.0,
        0.0,
        60.0,
        r#""ratings": {"min": 0, "max": 3000, "writerScope": "ratings.write"},"#,
    );
    let store = env.store_with("rated-sources", "", &[("MM_RULES", &rules)]);
    let ranked = world(&store, "ranked");
    let shown = |outcome: JoinOutcome| match outcome {
        JoinOutcome::Queued(q) => q.rated.expect("rated").rating,
        other => panic!("{other:?}"),
    };
    // No store entry, no claim, no default: refused.
    let before = snapshot(&store).await;
    assert_eq!(
        store.join(ranked, &player("n"), None, None).await.unwrap(),
        JoinOutcome::Rejected(Rejection::RatingRequired {
            world_type: world_name("ranked")
        })
    );
    assert_eq!(snapshot(&store).await, before);
    // The claim is used when the store has nothing.
    assert_eq!(
        shown(
            store
                .join(ranked, &player("c"), None, Some(rating(1234.0)))
                .await
                .unwrap()
        ),
        rating(1234.0)
    );
    store.leave(ranked, &player("c")).await.unwrap();
    // The store wins over the claim; the world's own entry over "every world".
    store
        .set_rating(&player("c"), None, rating(1800.0))
        .await
        .unwrap();
    assert_eq!(
        shown(
            store
                .join(ranked, &player("c"), None, Some(rating(1234.0)))
                .await
                .unwrap()
        ),
        rating(1800.0)
    );
    store.leave(ranked, &player("c")).await.unwrap();
    let previous = store
        .set_rating(&player("c"), Some(&world_name("ranked")), rating(2100.5))
        .await
        .unwrap();
    assert_eq!(previous, None);
    assert_eq!(
        shown(
            store
                .join(ranked, &player("c"), None, Some(rating(1234.0)))
                .await
                .unwrap()
        ),
        rating(2100.5)
    );
    // A stored rating outside today's range (the range changed) is refused.
    let narrow = env.store_with(
        "rated-sources",
        "",
        &[(
            "MM_RULES",
            &rated_rules(
                2,
                0.0,
                0.0,
                0.0,
                60.0,
                r#""ratings": {"min": 0, "max": 2000},"#,
            ),
        )],
    );
    let before = snapshot(&narrow).await;
    assert_eq!(
        narrow
            .join(world(&narrow, "ranked"), &player("c2"), None, None)
            .await
            .unwrap(),
        JoinOutcome::Rejected(Rejection::RatingRequired {
            world_type: world_name("ranked")
        })
    );
    narrow
        .set_rating(&player("d"), None, rating(1999.0))
        .await
        .unwrap();
    store
        .set_rating(&player("d"), None, rating(2500.0))
        .await
        .unwrap();
    let before_d = snapshot(&narrow).await;
    assert_eq!(
        narrow
            .join(world(&narrow, "ranked"), &player("d"), None, None)
            .await
            .unwrap(),
        JoinOutcome::Rejected(Rejection::InvalidRating {
            world_type: world_name("ranked"),
            rating: rating(2500.0)
        })
    );
    assert_eq!(snapshot(&narrow).await, before_d);
    let _ = before;
}

/// Leaving, expiring and the last disconnect take a rated ticket out of the
/// world's ratings and due sets too.
pub async fn rated_tickets_leave_expire_and_disconnect_cleanly(env: &Env) {
    let rules = r#"{"worlds": [{"name": "ranked", "teamSize": 5, "mode": "rating", "ticketTtlSeconds": 1,
        "rating": {"baseWindow": 10, "widenPerSecond": 1, "maxWindow": 20, "relaxAfterSeconds": 60}}]}"#;
    let store = env.store_with("rated-cleanup", "", &[("MM_RULES", rules)]);
    let ranked = world(&store, "ranked");
    let wk = store.keys().world(&ranked.name);
    for (p, r) in [("l", 1000.0), ("e", 1100.0), ("d", 1200.0)] {
        join_rated(&store, p, r).await;
    }
    store
        .register_connection(
            &shared::ConnectionId::parse("conn-d").unwrap(),
            &player("d"),
        )
        .await
        .unwrap();
    assert_eq!(zcard(&store, &wk.ratings).await, 3);
    assert!(matches!(
        store.leave(ranked, &player("l")).await.unwrap(),
        LeaveOutcome::Left { .. }
    ));
    store
        .unregister_connection(&shared::ConnectionId::parse("conn-d").unwrap())
        .await
        .unwrap();
    assert_eq!(zcard(&store, &wk.ratings).await, 1, "only e is left");
    assert_eq!(zcard(&store, &wk.due).await, 1);
    eventually("e to expire", Duration::from_secs(10), || async {
        let swept = store.sweep_expired_tickets(ranked, 10).await.unwrap();
        (!swept.is_empty()).then_some(())
    })
    .await;
    assert_eq!(zcard(&store, &wk.ratings).await, 0);
    assert_eq!(zcard(&store, &wk.due).await, 0);
    assert_eq!(zcard(&store, &wk.queue).await, 0);
}

/// Keys of a namespace all carry its hash tag (checked on the raw key space).
pub async fn keys_stay_in_the_namespace(store: &MatchStore, all_keys: &[String]) {
    let prefix = store.keys().prefix();
    let ours: Vec<_> = all_keys
        .iter()
        .filter(|k| k.contains(store.keys().hash_tag()))
        .collect();
    assert!(!ours.is_empty(), "the namespace wrote keys");
    for k in ours {
        assert!(k.starts_with(prefix), "{k} does not start with {prefix}");
    }
}
