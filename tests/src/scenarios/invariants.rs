//! The concurrency invariant: many clients join, leave, form, join and
//! cancel parties, answer ready checks and ask for status at random while
//! several matchers form matches and expire unassembled parties and
//! unanswered proposals, in FIFO, rated, team and ready-check worlds.
//! Afterwards every ticket is accounted for exactly once, every match has
//! exactly its seats, no party is ever split (across matches or teams), no
//! player holds two tickets or is in two proposals, and nothing of a failed
//! party or proposal is left. A game-server task assigns matches, asks for
//! backfills and finishes matches meanwhile: a backfilled ticket is one of
//! its player's matches, and a backfill seats no more than it opened.

use serde_json::Value;
use shared::{
    AnswerOutcome, PartyCancelOutcome, PartyCreateOutcome, PartyId, PartyJoinOutcome, PartyState,
    Rejection,
};

use super::*;

/// What the invariant run observed.
#[derive(Debug, Default)]
pub struct InvariantReport {
    pub operations: u64,
    pub joins: u64,
    pub matches: u64,
    /// Parties that entered a queue.
    pub parties_queued: u64,
    /// Matches of the ready-check world (every one accepted by all).
    pub accepted_matches: u64,
    /// Tickets removed from cancelled proposals.
    pub removed_from_proposals: u64,
    /// Backfills the game servers asked for, and players they seated.
    pub backfills_requested: u64,
    pub backfilled_players: u64,
}

#[derive(Default)]
struct PlayerLedger {
    /// Tickets the player held (a solo join that queued or matched, or a
    /// party of theirs that entered the queue).
    tickets: u64,
    left: u64,
    /// What the player's client last did and heard (at most
    /// `HISTORY_KEPT` events, oldest first): printed when the player's
    /// tickets do not add up. Bounded, so a long soak does not grow it.
    history: std::collections::VecDeque<String>,
}

/// Events of each player's history kept for a failure's report.
const HISTORY_KEPT: usize = 200;

/// The worlds of the concurrency invariant: three FIFO worlds, a rated one
/// (window from 100, widening 50/s, no limit after 2 s, so its groups keep
/// forming while clients churn), two worlds of 2 x 2 teams, FIFO and rated,
/// a world with a ready check (one second to accept, one second of
/// cool-down), and two worlds with regions, FIFO and rated 2 x 2 teams
/// (players measure 20-50 ms to their home region and 80-250 ms elsewhere,
/// the cap widens from 60 to 200 ms within 3.5 s).
pub const INVARIANT_RULES: &str = r#"{"worlds": [
    {"name": "world1", "teamSize": 3},
    {"name": "world2", "teamSize": 2},
    {"name": "world3", "teamSize": 5},
    {"name": "ranked", "teamSize": 4, "mode": "rating",
     "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 2}},
    {"name": "arena", "teamSize": 2, "teams": 2},
    {"name": "ranked_teams", "teamSize": 2, "teams": 2, "mode": "rating",
     "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 2}},
    {"name": "ready", "teamSize": 2, "readyCheck": {"acceptSeconds": 1, "declineCooldownSeconds": 1}},
    {"name": "geo", "teamSize": 3,
     "regions": {"names": ["eu", "us", "asia"], "maxLatencyMs": 60, "widenPerSecond": 40, "maxLatencyCapMs": 200}},
    {"name": "geo_ranked", "teamSize": 2, "teams": 2, "mode": "rating",
     "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 2},
     "regions": {"names": ["eu", "us", "asia"], "maxLatencyMs": 60, "widenPerSecond": 40, "maxLatencyCapMs": 200}}
]}"#;

/// A player's fixed latencies in the invariant run's worlds with regions:
/// 20-50 ms to a home region, 80-250 ms to the others.
fn invariant_latencies(world: &shared::World, p: &str) -> Option<shared::Latencies> {
    let regions = world.regions.as_ref()?;
    let hash = p
        .bytes()
        .fold(11u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
    let home = (hash % regions.names.len() as u64) as usize;
    let map: serde_json::Map<String, Value> = regions
        .names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let ms = if i == home {
                20 + (hash >> 8) % 31
            } else {
                80 + (hash >> (8 + 4 * i)) % 171
            };
            (name.clone(), Value::from(ms))
        })
        .collect();
    Some(shared::Latencies::from_value(&Value::Object(map), &regions.names).expect("latencies"))
}

/// A player's fixed rating in the invariant run (1000..=2000).
fn invariant_rating(p: &str) -> shared::Rating {
    let hash = p
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    shared::Rating::new(1000.0 + (hash % 1001) as f64).expect("finite")
}

/// A party one client created: two of its players.
#[derive(Debug, Clone)]
struct KnownParty {
    id: PartyId,
    members: [String; 2],
    joined: [bool; 2],
    queued: bool,
}

/// Every party any client created, by id: its members.
type PartyBook = Arc<Mutex<HashMap<String, Vec<String>>>>;

pub async fn concurrency_invariants(
    env: &Env,
    ns: &str,
    clients: usize,
    matchers: usize,
    operations: u64,
) -> InvariantReport {
    // Unassembled parties expire after a second and the matchers sweep
    // them, so failed assemblies happen throughout the run.
    let store = env.store_with(
        ns,
        "",
        &[("MM_RULES", INVARIANT_RULES), ("MM_PARTY_TTL_SECS", "1")],
    );
    let world_names: Vec<String> = store
        .settings()
        .worlds
        .iter()
        .map(|w| w.name.to_string())
        .collect();
    let ledger: Arc<Mutex<HashMap<String, PlayerLedger>>> = Arc::default();
    let formed: Arc<Mutex<Vec<MatchRecord>>> = Arc::default();
    let book: PartyBook = Arc::default();
    let remaining = Arc::new(AtomicU64::new(operations));
    let done = Arc::new(AtomicBool::new(false));

    let mut matcher_tasks = Vec::new();
    for m in 0..matchers {
        let (store, formed, done) = (store.clone(), formed.clone(), done.clone());
        matcher_tasks.push(tokio::spawn(async move {
            let worlds: Vec<_> = store.settings().worlds.iter().cloned().collect();
            while !done.load(Ordering::Relaxed) {
                for w in &worlds {
                    let batch = store.form_matches(w, 0).await.expect("form matches");
                    formed.lock().unwrap().extend(batch.matches);
                }
                if m == 0 {
                    store.housekeeping(100).await.expect("housekeeping");
                }
                if m % 2 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }

    // A game server side: assigns formed matches, asks for a backfill when
    // one of a match's solo players "leaves", and finishes matches a little
    // later, so backfills open, fill, lapse and end throughout the run.
    let server_task = {
        let (store, formed, done) = (store.clone(), formed.clone(), done.clone());
        tokio::spawn(async move { game_servers(&store, &formed, &done).await })
    };

    let mut client_tasks = Vec::new();
    for c in 0..clients {
        let (store, ledger, formed, remaining, book) = (
            store.clone(),
            ledger.clone(),
            formed.clone(),
            remaining.clone(),
            book.clone(),
        );
        let world_names = world_names.clone();
        client_tasks.push(tokio::spawn(async move {
            let mut client = Client {
                store: &store,
                ledger: &ledger,
                formed: &formed,
                book: &book,
                parties: Vec::new(),
                queued_parties: 0,
            };
            let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64);
            let players: Vec<String> = (0..4).map(|j| format!("c{c}:p{j}")).collect();
            let mut ops = 0u64;
            while remaining
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                ops += 1;
                let i = rng.random_range(0..players.len());
                let p = &players[i];
                let w = &world_names[rng.random_range(0..world_names.len())];
                match rng.random_range(0..100) {
                    0..35 => client.join(w, p).await,
                    35..42 => {
                        let other =
                            &players[(i + rng.random_range(1..players.len())) % players.len()];
                        client.create_party(w, p, other).await;
                    }
                    42..54 if !client.parties.is_empty() => {
                        let k = rng.random_range(0..client.parties.len());
                        let m = rng.random_range(0..2);
                        client.join_party(k, m).await;
                    }
                    54..57 if !client.parties.is_empty() => {
                        let k = rng.random_range(0..client.parties.len());
                        let m = rng.random_range(0..2);
                        client.cancel_party(k, m).await;
                    }
                    57..72 => client.leave(w, p).await,
                    72..86 => client.answer(p, rng.random_range(0..100) < 85).await,
                    _ => client.status(p).await,
                }
            }
            (ops, client.queued_parties)
        }));
    }
    let mut total_ops = 0;
    let mut parties_queued = 0;
    for t in client_tasks {
        let (ops, queued) = t.await.expect("client task");
        total_ops += ops;
        parties_queued += queued;
    }
    done.store(true, Ordering::Relaxed);
    for t in matcher_tasks {
        t.await.expect("matcher task");
    }
    let backfills_requested = server_task.await.expect("server task");
    drain_rated_worlds(&store, &formed).await;
    // Every proposal still open times out (1 s) and is settled.
    eventually(
        "open proposals to time out",
        Duration::from_secs(30),
        || async {
            store.housekeeping(1000).await.unwrap();
            (zcard(&store, &store.keys().proposal_expiry()).await == 0).then_some(())
        },
    )
    .await;
    // Backfills still open are cancelled; their held seats go back.
    let open: Vec<String> = store
        .command(redis::cmd("HKEYS").arg(store.keys().backfills()))
        .await
        .unwrap();
    for id in open {
        store
            .cancel_backfill(&shared::MatchId::parse(&id).unwrap())
            .await
            .unwrap();
    }
    // Every unassembled party expires (1 s) and leaves nothing behind.
    eventually(
        "unassembled parties to expire",
        Duration::from_secs(30),
        || async {
            store.housekeeping(1000).await.unwrap();
            (zcard(&store, &store.keys().party_expiry()).await == 0).then_some(())
        },
    )
    .await;
    // Nothing expires in this run (10-minute tickets), but account for it anyway.
    let book = std::mem::take(&mut *book.lock().unwrap());
    let mut expired: HashMap<String, u64> = HashMap::new();
    for w in store.settings().worlds.iter() {
        for t in store.sweep_expired_tickets(w, 100_000).await.unwrap() {
            let members = match &t {
                shared::TicketId::Solo(p) => vec![p.to_string()],
                shared::TicketId::Party(id) => book[id.as_str()].clone(),
            };
            for m in members {
                *expired.entry(m).or_default() += 1;
            }
        }
    }

    let formed = formed.lock().unwrap().clone();
    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    let mut per_player_matches = check_matches(&store, &formed, &book).await;
    let backfilled = check_additions(&store, &formed, &mut per_player_matches).await;
    let queued = check_queues(&store, &book).await;
    let removed = removed_from_proposals(&store).await;

    // Every ticket is accounted for exactly once.
    let mut all_players: BTreeSet<&str> = ledger.keys().map(String::as_str).collect();
    all_players.extend(per_player_matches.keys().map(String::as_str));
    let mut joins = 0;
    for p in all_players {
        let l = ledger.get(p);
        let tickets = l.map_or(0, |l| l.tickets);
        let left = l.map_or(0, |l| l.left);
        let matched = per_player_matches.get(p).copied().unwrap_or(0);
        let exp = expired.get(p).copied().unwrap_or(0);
        let out = removed.get(p).copied().unwrap_or(0);
        let still = u64::from(queued.contains_key(p));
        if tickets != matched + left + exp + out + still {
            let history = l
                .map(|l| Vec::from(l.history.clone()).join("\n  "))
                .unwrap_or_default();
            let trail = trail_of(&store, &formed, p).await;
            panic!(
                "{p}: {tickets} tickets but {matched} matched + {left} left + {exp} expired + {out} removed from proposals + {still} queued\n\
                 what its client last did and heard:\n  {history}\n{trail}"
            );
        }
        joins += tickets;
    }
    // A world of solo tickets never holds a full match (the last join, or
    // the matcher, would have formed it).
    let mut by_world: BTreeMap<&String, (usize, bool)> = BTreeMap::new();
    for (_, (w, party)) in queued.iter() {
        let e = by_world.entry(w).or_default();
        e.0 += 1;
        e.1 |= *party;
    }
    for (w, (n, has_party)) in by_world {
        let world = store.settings().worlds.get(w).unwrap();
        let seats = world.seats() as usize;
        // Timed-out proposals put players back after the matchers stopped;
        // players of a world with regions may share no region under the cap.
        assert!(
            has_party || world.ready_check.is_some() || world.regions.is_some() || n < seats,
            "{w} still holds {n} solo players, a full match of {seats}"
        );
    }
    assert_eq!(total_ops, operations);
    InvariantReport {
        backfills_requested,
        backfilled_players: backfilled,
        operations: total_ops,
        joins,
        matches: formed.len() as u64,
        parties_queued,
        accepted_matches: formed.iter().filter(|m| m.world_type == "ready").count() as u64,
        removed_from_proposals: removed.values().sum(),
    }
}

/// One client: its players only ever act through it, one at a time, so its
/// ledger is exact.
struct Client<'a> {
    store: &'a MatchStore,
    ledger: &'a Mutex<HashMap<String, PlayerLedger>>,
    formed: &'a Mutex<Vec<MatchRecord>>,
    book: &'a PartyBook,
    /// Parties of this client that may still exist.
    parties: Vec<KnownParty>,
    queued_parties: u64,
}

impl Client<'_> {
    fn count(&self, players: &[String], tickets: u64, left: u64) {
        let mut ledger = self.ledger.lock().unwrap();
        for p in players {
            let l = ledger.entry(p.clone()).or_default();
            l.tickets += tickets;
            l.left += left;
        }
    }

    /// Adds `event` (an operation and its outcome, shortened) to the
    /// history of `players`.
    fn log(&self, players: &[String], event: impl std::fmt::Debug) {
        let mut text = format!("{event:?}");
        if let Some((cut, _)) = text.char_indices().nth(240) {
            text.truncate(cut);
        }
        let mut ledger = self.ledger.lock().unwrap();
        for p in players {
            let history = &mut ledger.entry(p.clone()).or_default().history;
            if history.len() == HISTORY_KEPT {
                history.pop_front();
            }
            history.push_back(text.clone());
        }
    }

    fn world(&self, name: &str) -> &shared::World {
        self.store.settings().worlds.get(name).expect("world")
    }

    fn party_of(&self, p: &str) -> Option<usize> {
        self.parties
            .iter()
            .position(|k| k.members.iter().any(|m| m == p))
    }

    async fn join(&mut self, w: &str, p: &str) {
        let id = player(p);
        let world = self.world(w);
        let latencies = invariant_latencies(world, p);
        let input = shared::store::JoinInput {
            claimed: Some(invariant_rating(p)),
            latencies: latencies.as_ref(),
            ..Default::default()
        };
        let outcome = self
            .store
            .join_reply(world, &id, &input, false)
            .await
            .expect("join")
            .outcome;
        self.log(&[p.to_owned()], ("join", w, &outcome));
        match outcome {
            JoinOutcome::Queued(q) => {
                assert!(q.position >= 1 && q.position <= q.queue_size, "{q:?}");
                self.count(&[p.to_owned()], 1, 0);
                self.forget_matched_party(p);
            }
            JoinOutcome::Matched { record, formed, .. } => {
                assert!(record.includes(&id));
                self.count(&[p.to_owned()], 1, 0);
                self.formed.lock().unwrap().extend(formed);
                self.forget_matched_party(p);
            }
            JoinOutcome::Proposed(view) => {
                assert!(view.participants.contains(&id), "{view:?}");
                self.count(&[p.to_owned()], 1, 0);
                self.forget_matched_party(p);
            }
            JoinOutcome::Backfilled { joined, .. } => {
                assert!(joined.includes(&id), "{joined:?}");
                assert!(joined.lifecycle.fill_of(&id).is_some(), "{joined:?}");
                self.count(&[p.to_owned()], 1, 0);
                self.forget_matched_party(p);
            }
            JoinOutcome::Rejected(Rejection::AlreadyQueued(q)) => assert!(q.position >= 1, "{q:?}"),
            JoinOutcome::Rejected(Rejection::InParty { .. })
            | JoinOutcome::Rejected(Rejection::ProposalPending(_))
            | JoinOutcome::Rejected(Rejection::CoolingDown { .. })
            | JoinOutcome::Rejected(Rejection::InMatch { .. }) => {}
            other => panic!("{p} joining {w}: {other:?}"),
        }
    }

    /// A member who had joined a party queued alone: the party is gone
    /// (matched if it was queued, expired if it was still assembling). An
    /// invited player who had not joined may queue alone meanwhile.
    fn forget_matched_party(&mut self, p: &str) {
        if let Some(k) = self.party_of(p) {
            let party = &self.parties[k];
            let i = party.members.iter().position(|m| m == p).unwrap_or(0);
            if party.joined[i] {
                self.parties.remove(k);
            }
        }
    }

    async fn create_party(&mut self, w: &str, leader: &str, other: &str) {
        if self.party_of(leader).is_some() || self.party_of(other).is_some() {
            return;
        }
        let world = self.world(w);
        let latencies = invariant_latencies(world, leader);
        let input = shared::store::JoinInput {
            claimed: Some(invariant_rating(leader)),
            latencies: latencies.as_ref(),
            ..Default::default()
        };
        let outcome = self
            .store
            .create_party_with(world, &player(leader), &[player(other)], &input)
            .await
            .expect("create party");
        self.log(
            &[leader.to_owned(), other.to_owned()],
            ("create party", w, &outcome),
        );
        match outcome {
            PartyCreateOutcome::Created(view) => {
                assert_eq!(view.state, PartyState::Assembling);
                self.book.lock().unwrap().insert(
                    view.party_id.to_string(),
                    vec![leader.to_owned(), other.to_owned()],
                );
                self.parties.push(KnownParty {
                    id: view.party_id,
                    members: [leader.to_owned(), other.to_owned()],
                    joined: [true, false],
                    queued: false,
                });
            }
            // A leader in a ready check was answered LeaderQueued before
            // admission was one; it is PROPOSAL_PENDING now, as on join.
            PartyCreateOutcome::Rejected(Rejection::AlreadyQueued(_))
            | PartyCreateOutcome::Rejected(Rejection::ProposalPending(_))
            | PartyCreateOutcome::Rejected(Rejection::InMatch { .. })
            | PartyCreateOutcome::MemberBusy { .. }
            | PartyCreateOutcome::Rejected(Rejection::CoolingDown { .. }) => {}
            refused => panic!("creating a party of {leader} and {other}: {refused:?}"),
        }
    }

    async fn join_party(&mut self, k: usize, m: usize) {
        let party = self.parties[k].clone();
        let p = &party.members[m];
        let w = self.world(party.id.world().as_str()).clone();
        let latencies = invariant_latencies(&w, p);
        let input = shared::store::JoinInput {
            claimed: Some(invariant_rating(p)),
            latencies: latencies.as_ref(),
            ..Default::default()
        };
        let outcome = self
            .store
            .join_party_claiming(&w, &party.id, &player(p), &input, false)
            .await
            .expect("join party");
        self.log(&party.members, ("join party", p, &outcome));
        match outcome {
            PartyJoinOutcome::Joined(view) | PartyJoinOutcome::AlreadyJoined(view) => {
                assert_eq!(view.party_id, party.id);
                self.parties[k].joined[m] = true;
            }
            PartyJoinOutcome::Queued(q) => {
                assert!(q.position >= 1 && q.position <= q.queue_size, "{q:?}");
                self.count(&party.members, 1, 0);
                self.queued_parties += 1;
                self.parties[k].joined[m] = true;
                self.parties[k].queued = true;
            }
            PartyJoinOutcome::Matched { record, formed, .. } => {
                for member in &party.members {
                    assert!(record.includes(&player(member)), "{record:?}");
                }
                self.count(&party.members, 1, 0);
                self.queued_parties += 1;
                self.formed.lock().unwrap().extend(formed);
                self.parties.remove(k);
            }
            PartyJoinOutcome::Proposed(view) => {
                for member in &party.members {
                    assert!(view.participants.contains(&player(member)), "{view:?}");
                }
                self.count(&party.members, 1, 0);
                self.queued_parties += 1;
                self.parties[k].joined[m] = true;
                self.parties[k].queued = true;
            }
            // Expired, matched, or cancelled: gone.
            PartyJoinOutcome::NotFound => {
                self.parties.remove(k);
            }
            PartyJoinOutcome::Rejected(Rejection::AlreadyQueued(_))
            | PartyJoinOutcome::Rejected(Rejection::ProposalPending(_))
            | PartyJoinOutcome::Rejected(Rejection::CoolingDown { .. })
            | PartyJoinOutcome::Rejected(Rejection::InMatch { .. }) => {}
            other => panic!("{p} joining {party:?}: {other:?}"),
        }
    }

    async fn cancel_party(&mut self, k: usize, m: usize) {
        let party = self.parties.remove(k);
        let outcome = self
            .store
            .cancel_party(&party.id, &player(&party.members[m]))
            .await
            .expect("cancel party");
        self.log(
            &party.members,
            ("cancel party", &party.members[m], &outcome),
        );
        match outcome {
            PartyCancelOutcome::Cancelled(view) => {
                if view.state == PartyState::Queued {
                    self.count(&party.members, 0, 1);
                }
            }
            PartyCancelOutcome::NotFound => {}
        }
    }

    async fn leave(&mut self, w: &str, p: &str) {
        let outcome = self
            .store
            .leave(self.world(w), &player(p))
            .await
            .expect("leave");
        self.log(&[p.to_owned()], ("leave", w, &outcome));
        let in_party = self.party_of(p).filter(|&k| {
            let party = &self.parties[k];
            let i = party.members.iter().position(|m| m == p).unwrap_or(0);
            party.joined[i] && party.id.world() == w
        });
        match (outcome, in_party) {
            (
                LeaveOutcome::Left {
                    previous_position,
                    remaining_queue_size,
                },
                in_party,
            ) => {
                assert!(
                    previous_position <= remaining_queue_size + 1,
                    "{previous_position} of {remaining_queue_size}"
                );
                // Position 0: an assembling party, or a match proposal (whose
                // removals the notes account for).
                match in_party {
                    Some(k) => {
                        let party = self.parties.remove(k);
                        if previous_position >= 1 {
                            assert!(party.queued, "{party:?}");
                            self.count(&party.members, 0, 1);
                        }
                    }
                    None => {
                        if previous_position >= 1 {
                            self.count(&[p.to_owned()], 0, 1);
                        } else {
                            assert_eq!(
                                w, "ready",
                                "only a ready check holds tickets outside a queue"
                            );
                        }
                    }
                }
            }
            // A queued party of this world that is not there was matched.
            (LeaveOutcome::NotQueued { .. }, Some(k)) if self.parties[k].queued => {
                self.parties.remove(k);
            }
            (LeaveOutcome::NotQueued { .. }, _) => {}
        }
    }

    /// Answers the player's pending proposal, if any.
    async fn answer(&mut self, p: &str, accept: bool) {
        let id = player(p);
        let PlayerStatus::Proposed(view) = self.store.player_status(&id).await.expect("status")
        else {
            return;
        };
        assert!(view.participants.contains(&id), "{view:?}");
        let outcome = self
            .store
            .answer_proposal(&view.match_id, &id, accept)
            .await
            .expect("answer");
        self.log(
            &[p.to_owned()],
            ("answer", &view.match_id, accept, &outcome),
        );
        match outcome {
            // The last accept reports the match once, like a join.
            AnswerOutcome::Matched { record, .. } => {
                assert_eq!(record.match_id, view.match_id);
                assert_eq!(record.participants, view.participants);
                self.formed.lock().unwrap().push(*record);
            }
            AnswerOutcome::Backfilled { joined, .. } => {
                assert!(joined.includes(&id), "{joined:?}");
            }
            // Who was removed is told by a note (counted at the end).
            AnswerOutcome::Cancelled { .. }
            | AnswerOutcome::Expired { .. }
            | AnswerOutcome::Accepted { .. }
            | AnswerOutcome::AlreadyAccepted { .. }
            | AnswerOutcome::NotFound => {}
        }
    }

    async fn status(&mut self, p: &str) {
        let id = player(p);
        match self.store.player_status(&id).await.expect("status") {
            PlayerStatus::Queued(q) => {
                assert!(q.position >= 1 && q.position <= q.queue_size, "{q:?}");
                if let Some(party) = q.party {
                    assert!(party.members.iter().any(|m| m.player_id == id));
                    assert_eq!(party.state, PartyState::Queued);
                }
            }
            PlayerStatus::Party(view) => {
                assert_eq!(view.state, PartyState::Assembling);
                assert!(view.members.iter().any(|m| m.player_id == id && m.joined));
            }
            PlayerStatus::Proposed(p) => assert!(p.participants.contains(&id), "{p:?}"),
            PlayerStatus::Matched(m) => assert!(m.includes(&id)),
            PlayerStatus::Idle => {}
        }
    }
}

/// A rated world may hold a full match whose tickets are outside each
/// other's windows; once the oldest anchor relaxes (2 s), it is matched.
async fn drain_rated_worlds(store: &MatchStore, formed: &Mutex<Vec<MatchRecord>>) {
    // In worlds with regions, players may share no region under the cap:
    // those are drained until nothing more forms.
    for w in store
        .settings()
        .worlds
        .iter()
        .filter(|w| w.regions.is_some())
    {
        loop {
            let batch = store.form_matches(w, 0).await.expect("form matches");
            let formed_now = !batch.matches.is_empty();
            formed.lock().unwrap().extend(batch.matches);
            if !formed_now && !batch.more_due {
                break;
            }
        }
    }
    for w in store
        .settings()
        .worlds
        .iter()
        .filter(|w| w.rating().is_some() && w.regions.is_none())
    {
        let wk = store.keys().world(&w.name);
        eventually(
            "the rated world to hold less than a match",
            Duration::from_secs(30),
            || async {
                let batch = store.form_matches(w, 0).await.expect("form matches");
                formed.lock().unwrap().extend(batch.matches);
                (zcard(store, &wk.queue).await < u64::from(w.seats())).then_some(())
            },
        )
        .await;
    }
}

/// Every match: exactly its seats of distinct players of its world, stored
/// and reported once; its parties whole, each one a party a client made and
/// inside one team; teams of exactly the team size; ratings as joined.
/// Returns how many matches each player was in.
async fn check_matches(
    store: &MatchStore,
    formed: &[MatchRecord],
    book: &HashMap<String, Vec<String>>,
) -> HashMap<String, u64> {
    let k = store.keys();
    let stored: HashMap<String, String> = store
        .command(redis::cmd("HGETALL").arg(k.matches()))
        .await
        .unwrap();
    assert_eq!(
        stored.len(),
        formed.len(),
        "every formed match is stored, and only those"
    );
    let parties: BTreeSet<Vec<String>> = book.values().cloned().collect();
    let mut per_player: HashMap<String, u64> = HashMap::new();
    let mut ids = BTreeSet::new();
    for m in formed {
        assert!(
            ids.insert(m.match_id.clone()),
            "match {} reported twice",
            m.match_id
        );
        let w = store
            .settings()
            .worlds
            .get(&m.world_type)
            .expect("configured world");
        let distinct: BTreeSet<_> = m.participants.iter().collect();
        assert_eq!(m.participants.len(), w.seats() as usize, "{m:?}");
        assert_eq!(
            distinct.len(),
            m.participants.len(),
            "duplicate player in {m:?}"
        );
        let stored_record: MatchRecord =
            serde_json::from_str(&stored[m.match_id.as_str()]).unwrap();
        assert_eq!(&stored_record, m);
        for p in &m.participants {
            *per_player.entry(p.to_string()).or_default() += 1;
        }
        // Regions: one of the world's, every member within the cap there,
        // as they measured it.
        if let Some(regions) = &w.regions {
            let region = m.region.as_deref().expect("a region");
            assert!(regions.names.iter().any(|r| r == region), "{m:?}");
            let lat = m.latencies.as_ref().expect("latencies");
            assert_eq!(lat.len(), m.participants.len(), "{m:?}");
            for p in &m.participants {
                let measured = invariant_latencies(w, p.as_str())
                    .and_then(|l| l.get(region))
                    .expect("a measured latency");
                assert_eq!(lat[p.as_str()], measured, "{m:?}");
                assert!(f64::from(measured) <= regions.latency_cap_ms, "{m:?}");
            }
            assert_eq!(m.worst_latency, lat.values().max().copied(), "{m:?}");
        } else {
            assert!(m.region.is_none(), "{m:?}");
        }
        // Parties whole, and each a real party.
        let in_parties: Vec<&PlayerId> = m.parties.iter().flatten().flatten().collect();
        for group in m.parties.iter().flatten() {
            let names: Vec<String> = group.iter().map(|p| p.to_string()).collect();
            assert!(
                parties.contains(&names),
                "{names:?} in {m:?} is not a party"
            );
        }
        let distinct_party_members: BTreeSet<_> = in_parties.iter().collect();
        assert_eq!(distinct_party_members.len(), in_parties.len(), "{m:?}");
        // Teams: exactly the team size each, every party inside one.
        match (&m.teams, w.teams) {
            (None, 1) => {}
            (Some(teams), n) if n > 1 => {
                assert_eq!(teams.len(), n as usize, "{m:?}");
                assert!(
                    teams.iter().all(|t| t.len() == w.team_size as usize),
                    "{m:?}"
                );
                assert_eq!(
                    &teams.concat(),
                    &m.participants,
                    "participants team by team"
                );
                for group in m.parties.iter().flatten() {
                    assert!(
                        teams.iter().any(|t| group.iter().all(|p| t.contains(p))),
                        "party {group:?} split across teams in {m:?}"
                    );
                }
            }
            (teams, n) => panic!("{n} teams but {teams:?} in {m:?}"),
        }
        match w.rating() {
            None => assert!(m.ratings.is_none() && m.spread.is_none(), "{m:?}"),
            Some(_) => {
                let ratings = m.ratings.as_ref().expect("a rated match has ratings");
                assert_eq!(ratings.len(), w.seats() as usize, "{m:?}");
                let values: Vec<f64> = m
                    .participants
                    .iter()
                    .map(|p| {
                        let r = ratings[p.as_str()];
                        assert_eq!(r, invariant_rating(p), "{p} in {m:?}");
                        r.value()
                    })
                    .collect();
                let spread = values.iter().cloned().fold(f64::MIN, f64::max)
                    - values.iter().cloned().fold(f64::MAX, f64::min);
                assert_eq!(m.spread, Some(spread), "{m:?}");
                if let Some(teams) = &m.teams {
                    let averages: Vec<f64> = teams
                        .iter()
                        .map(|t| {
                            t.iter().map(|p| ratings[p.as_str()].value()).sum::<f64>()
                                / t.len() as f64
                        })
                        .collect();
                    let difference = averages.iter().cloned().fold(f64::MIN, f64::max)
                        - averages.iter().cloned().fold(f64::MAX, f64::min);
                    let reported = m.team_difference.expect("a rated team match reports it");
                    assert!((reported - difference).abs() < 1e-9, "{m:?}");
                }
            }
        }
    }
    per_player
}

/// Queue, ticket, party and pointer structures agree with each other and
/// with my-status. Returns every queued player: their world and whether
/// they wait with a party.
async fn check_queues(
    store: &MatchStore,
    book: &HashMap<String, Vec<String>>,
) -> HashMap<String, (String, bool)> {
    let k = store.keys();
    let parties: HashMap<String, String> = store
        .command(redis::cmd("HGETALL").arg(k.parties()))
        .await
        .unwrap();
    let pointers: BTreeMap<String, String> = states_of(store, StateKind::Party)
        .await
        .into_iter()
        .map(|(p, v)| (p, v.trim_start_matches("P ").to_string()))
        .collect();
    let mut queued: HashMap<String, (String, bool)> = HashMap::new();
    let mut total_tickets = 0;
    let mut queued_parties: BTreeSet<String> = BTreeSet::new();
    for w in store.settings().worlds.iter() {
        let wk = k.world(&w.name);
        let members: Vec<String> = store
            .command(redis::cmd("ZRANGE").arg(&wk.queue).arg(0).arg(-1))
            .await
            .unwrap();
        // Deadlines of tickets that left stay until due; every waiting
        // ticket has its own.
        let with_deadline: Vec<Option<f64>> = if members.is_empty() {
            Vec::new()
        } else {
            store
                .command(redis::cmd("ZMSCORE").arg(&wk.deadlines).arg(&members))
                .await
                .unwrap()
        };
        assert!(
            with_deadline.iter().all(Option::is_some),
            "a ticket of {} without a deadline",
            w.name
        );
        let rated: Vec<String> = store
            .command(redis::cmd("ZRANGE").arg(&wk.ratings).arg(0).arg(-1))
            .await
            .unwrap();
        let due: Vec<String> = store
            .command(redis::cmd("ZRANGE").arg(&wk.due).arg(0).arg(-1))
            .await
            .unwrap();
        let mut expected = members.clone();
        expected.sort();
        if w.rating().is_some() {
            let mut from_ratings: Vec<String> = rated.iter().map(|m| m[13..].to_owned()).collect();
            from_ratings.sort();
            assert_eq!(from_ratings, expected, "ratings of {}", w.name);
        } else {
            assert!(rated.is_empty(), "{} is FIFO", w.name);
        }
        if w.rating().is_some() || w.regions.is_some() {
            let mut due = due;
            due.sort();
            assert_eq!(due, expected, "due of {}", w.name);
        } else {
            assert!(due.is_empty(), "{} is FIFO", w.name);
        }
        check_regions(store, w, &members).await;
        let mut party_tickets = 0;
        for (i, ticket) in members.iter().enumerate() {
            let (players, party) = match ticket.strip_prefix('\u{1}') {
                Some(id) => {
                    party_tickets += 1;
                    queued_parties.insert(id.to_owned());
                    let party: Value = serde_json::from_str(&parties[id]).unwrap();
                    assert_eq!(party["state"], "QUEUED", "{party}");
                    assert_eq!(party["world"], w.name.as_str());
                    let names: Vec<String> = party["members"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| m["p"].as_str().unwrap().to_owned())
                        .collect();
                    assert_eq!(&names, &book[id], "party {id}");
                    for n in &names {
                        assert_eq!(pointers.get(n).map(String::as_str), Some(id), "{n}");
                    }
                    (names, true)
                }
                None => (vec![ticket.clone()], false),
            };
            for p in players {
                assert!(
                    queued
                        .insert(p.clone(), (w.name.to_string(), party))
                        .is_none(),
                    "{p} holds two tickets"
                );
                match store.player_status(&player(&p)).await.unwrap() {
                    PlayerStatus::Queued(q) => {
                        assert_eq!(
                            (q.world_type.as_str(), q.position, q.queue_size),
                            (w.name.as_str(), i as u64 + 1, members.len() as u64)
                        );
                        assert_eq!(q.party.is_some(), party, "{p}");
                    }
                    other => panic!("{p} is in the queue but status says {other:?}"),
                }
            }
        }
        let counted: u64 = store
            .command::<Option<u64>>(
                redis::cmd("HGET")
                    .arg(k.world(&w.name).stats)
                    .arg("parties"),
            )
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(counted, party_tickets, "queued parties of {}", w.name);
        total_tickets += members.len() as u64;
    }
    assert_eq!(
        count_states(store, StateKind::Waiting).await,
        total_tickets,
        "one ticket per queued ticket id"
    );
    // Only queued parties remain (unassembled ones expired), each with its
    // ticket; no pointer outlives its party.
    let remaining: BTreeSet<String> = parties.keys().cloned().collect();
    assert_eq!(remaining, queued_parties, "parties left behind");
    for (p, id) in &pointers {
        assert!(queued_parties.contains(id), "{p} points at gone party {id}");
    }
    queued
}

/// A world's region structures hold exactly its waiting tickets: their
/// latencies, one queue entry per region within the cap (and, rated, one
/// ratings entry there).
async fn check_regions(store: &MatchStore, w: &shared::World, members: &[String]) {
    let wk = store.keys().world(&w.name);
    let latencies: HashMap<String, String> = store
        .command(redis::cmd("HGETALL").arg(&wk.latencies))
        .await
        .unwrap();
    let queue: BTreeSet<String> = store
        .command::<Vec<String>>(redis::cmd("ZRANGE").arg(&wk.region_queue).arg(0).arg(-1))
        .await
        .unwrap()
        .into_iter()
        .collect();
    let rated: BTreeSet<String> = store
        .command::<Vec<String>>(redis::cmd("ZRANGE").arg(&wk.region_ratings).arg(0).arg(-1))
        .await
        .unwrap()
        .into_iter()
        .collect();
    let Some(regions) = &w.regions else {
        assert!(
            latencies.is_empty() && queue.is_empty() && rated.is_empty(),
            "{}",
            w.name
        );
        return;
    };
    let mut stored: Vec<&String> = latencies.keys().collect();
    stored.sort();
    let mut expected: Vec<&String> = members.iter().collect();
    expected.sort();
    assert_eq!(stored, expected, "latencies of {}", w.name);
    let mut want_queue = BTreeSet::new();
    let mut want_rated = 0;
    for (ticket, lat) in &latencies {
        for part in lat.split(',').filter(|p| !p.is_empty()) {
            let (region, ms) = part.split_once('=').expect("region=ms");
            assert!(regions.names.iter().any(|r| r == region), "{part}");
            assert!(
                ms.parse::<f64>().unwrap() <= regions.latency_cap_ms,
                "{part}"
            );
            want_queue.insert(format!("{region}|{ticket}"));
            want_rated += 1;
        }
    }
    assert_eq!(queue, want_queue, "region queue of {}", w.name);
    if w.rating().is_some() {
        assert_eq!(rated.len(), want_rated, "region ratings of {}", w.name);
    } else {
        assert!(rated.is_empty(), "{}", w.name);
    }
}

/// Operations for the invariant run: 50 000 by default, `MM_SOAK_OPS` to scale.
pub fn invariant_operations() -> u64 {
    std::env::var("MM_SOAK_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000)
}

/// The game servers of the run: each formed match is assigned; about half
/// of them lose one solo player and ask for a backfill of that seat (its
/// keep-alive lapses, it is filled, or it ends with the match); a match is
/// finished (a cancelled game) once a few newer ones run. Returns how many
/// backfills were requested.
async fn game_servers(
    store: &MatchStore,
    formed: &Mutex<Vec<MatchRecord>>,
    done: &AtomicBool,
) -> u64 {
    let mut seen = 0;
    let mut running: std::collections::VecDeque<shared::MatchId> = Default::default();
    let mut requested = 0;
    let assignment: shared::Assignment =
        serde_json::from_value(serde_json::json!({"connection": "127.0.0.1:1"})).unwrap();
    let cancelled: shared::MatchReport =
        serde_json::from_value(serde_json::json!({"cancelled": true})).unwrap();
    while !done.load(Ordering::Relaxed) {
        let next = formed.lock().unwrap().get(seen).cloned();
        let Some(m) = next else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        seen += 1;
        if !matches!(
            store
                .assign_match(&m.match_id, &assignment)
                .await
                .expect("assign"),
            shared::store::AssignOutcome::Assigned(_)
        ) {
            continue;
        }
        running.push_back(m.match_id.clone());
        let in_party: BTreeSet<&PlayerId> = m.parties.iter().flatten().flatten().collect();
        let teams = m
            .teams
            .clone()
            .unwrap_or_else(|| vec![m.participants.clone()]);
        let leaving = teams
            .iter()
            .flatten()
            .find(|p| !in_party.contains(p))
            .cloned();
        if let Some(gone) = leaving.filter(|_| seen % 2 == 0) {
            let now: Vec<Vec<PlayerId>> = teams
                .iter()
                .map(|t| t.iter().filter(|p| **p != gone).cloned().collect())
                .collect();
            match store
                .request_backfill(&m.match_id, &now, None)
                .await
                .expect("backfill")
            {
                shared::store::BackfillOutcome::Open { .. } => requested += 1,
                other => panic!("backfill of {m:?}: {other:?}"),
            }
        }
        while running.len() > 4 {
            let id = running.pop_front().expect("a running match");
            shared::use_cases::report_result(store, &id, &cancelled)
                .await
                .expect("result");
        }
    }
    requested
}

/// Every match's additions (players backfills seated) are checked and
/// counted as matches of their players: at most the one seat each backfill
/// opened, in a team of the match, players new to it, rated players with
/// their rating, parties whole. Returns the players seated.
async fn check_additions(
    store: &MatchStore,
    formed: &[MatchRecord],
    per_player: &mut HashMap<String, u64>,
) -> u64 {
    let mut seated = 0;
    for m in formed {
        let Some(joined) = store.match_record(&m.match_id).await.unwrap() else {
            continue;
        };
        let w = store
            .settings()
            .worlds
            .get(&m.world_type)
            .expect("configured world");
        let added: usize = joined
            .lifecycle
            .additions
            .iter()
            .map(|a| a.players.len())
            .sum();
        assert!(added <= 1, "one seat was opened: {joined:?}");
        for a in &joined.lifecycle.additions {
            assert!((1..=w.teams as usize).contains(&a.team), "{a:?}");
            for (j, p) in a.players.iter().enumerate() {
                assert!(!m.includes(p), "{p} was in {m:?} already");
                if w.rating().is_some() {
                    let r = a.ratings.as_ref().expect("ratings")[j];
                    assert_eq!(r, invariant_rating(p.as_str()).value(), "{a:?}");
                }
                *per_player.entry(p.to_string()).or_default() += 1;
                seated += 1;
            }
        }
        assert_eq!(
            joined.participants.len(),
            m.participants.len() + added,
            "{joined:?}"
        );
    }
    seated
}

/// Where player `p` ended up: the matches it is in (formed with it, or
/// joined by a backfill) and the notes that name it.
async fn trail_of(store: &MatchStore, formed: &[MatchRecord], p: &str) -> String {
    let id = player(p);
    let mut trail = String::from("matches:\n");
    for m in formed {
        let joined = store.match_record(&m.match_id).await.ok().flatten();
        let added = joined
            .iter()
            .flat_map(|j| &j.lifecycle.additions)
            .any(|a| a.players.contains(&id));
        if m.includes(&id) || added {
            let how = if added {
                "backfilled into"
            } else {
                "formed with"
            };
            trail += &format!("  {how} {} ({})\n", m.match_id, m.world_type);
        }
    }
    trail += "notes:\n";
    let notes: HashMap<String, String> = store
        .command(redis::cmd("HGETALL").arg(store.keys().notes()))
        .await
        .unwrap_or_default();
    let mut named: Vec<(u64, &String)> = notes
        .iter()
        .filter(|(_, note)| note.split('\n').skip(1).any(|q| q == p))
        .map(|(n, note)| (n.parse().unwrap_or(0), note))
        .collect();
    named.sort();
    for (n, note) in named {
        trail += &format!("  {n}: {}\n", note.replace('\n', " | "));
    }
    trail
}

/// Players whose ticket a cancelled proposal removed (declined, left, timed
/// out, or in a party with such a player), by how many times: every
/// MATCH_CANCELLED note that did not requeue them. Nobody delivers the
/// outbox in this run, so every note is still there.
async fn removed_from_proposals(store: &MatchStore) -> HashMap<String, u64> {
    let k = store.keys();
    assert_eq!(
        hlen(store, &k.proposals()).await,
        0,
        "proposals left behind"
    );
    assert_eq!(
        count_states(store, StateKind::Proposal).await,
        0,
        "proposal states left behind"
    );
    let notes: HashMap<String, String> = store
        .command(redis::cmd("HGETALL").arg(k.notes()))
        .await
        .unwrap();
    let mut removed: HashMap<String, u64> = HashMap::new();
    for note in notes.values() {
        let mut lines = note.split('\n');
        let message: Value = serde_json::from_str(lines.next().unwrap_or_default()).unwrap();
        if message["type"] == "MATCH_CANCELLED" && message["requeued"] == false {
            for p in lines {
                *removed.entry(p.to_owned()).or_default() += 1;
            }
        }
    }
    removed
}
