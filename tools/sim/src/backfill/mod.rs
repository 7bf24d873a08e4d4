//! The backfill scenario (`--backfill`): a Poisson trace of new players
//! joins a world; every match the core forms is assigned to a simulated
//! game server and played for a while; each of its players leaves early
//! with a documented probability, and the game server asks for the empty
//! seats (`MatchStore::request_backfill` with the players it still has,
//! what the backfill route runs), renews the backfill every few seconds of
//! the simulated clock (`renew_backfill`) until the seats are filled, and
//! reports the result when the game ends. The same trace and the same
//! leavers are played again without backfill (short-handed matches).
//! Reports how long seats stay empty and the quality of backfilled players
//! ([`report`], [`plot`]).
//!
//! Keep-alives are checked by the core against Redis's `TIME`, which in the
//! simulator is libfaketime's compressed clock: the same clock the
//! simulated time runs on (see [`crate::clock`]), so renewing every `renew`
//! simulated seconds is what a server renewing every `renew` real seconds
//! does. A renewal that finds its backfill gone while seats are open is a
//! lapse (counted), and the server requests again.

pub mod plot;
pub mod report;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use shared::store::{BackfillOutcome, JoinInput};
use shared::use_cases::{self, ResultReport};
use shared::{JoinOutcome, MatchId, MatchMode, MatchRecord, MatchStore, PlayerId, Rating, World};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::clock::SimClock;
use crate::play::{self, lock, stream, uniform, Anomalies, Performance, Ticks};
use crate::rules::RuleSet;
use crate::scenario::Scenario;

/// How a lane plays the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Servers request backfill for every empty seat.
    Backfill,
    /// The same leavers, no backfill: matches play on short-handed.
    ShortHanded,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::Backfill, Variant::ShortHanded];

    pub fn describe(self) -> &'static str {
        match self {
            Variant::Backfill => "with backfill",
            Variant::ShortHanded => "without backfill",
        }
    }
}

/// When in a game a leaver leaves: uniformly within this fraction of its
/// length (so a backfilled player still has a game to play).
pub const LEAVE_WITHIN: (f64, f64) = (0.05, 0.75);

/// Everything one backfill simulation needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub scenario: Scenario,
    pub rule_sets: Vec<RuleSet>,
    /// Each player of a freshly formed match leaves it early with this
    /// probability (independently).
    pub leave_probability: f64,
    /// A game lasts uniformly this long (simulated s).
    pub game_seconds: (f64, f64),
    /// The server renews its backfill every this many simulated seconds.
    pub renew: f64,
    /// The outcome model's noise (results decide nothing here).
    pub noise: f64,
    pub seed: u64,
    pub speed: f64,
    pub in_flight: usize,
    pub redis_server: String,
    pub work_dir: PathBuf,
}

/// A seat a leaver emptied.
#[derive(Debug, Clone, PartialEq)]
pub struct Seat {
    pub left_at: f64,
    /// When a backfill filled it.
    pub filled_at: Option<f64>,
    /// When its game ended (the seat stays empty until then if unfilled).
    pub game_end: f64,
}

impl Seat {
    /// How long it stayed empty: until filled, else until the game ended.
    pub fn empty_for(&self) -> f64 {
        self.filled_at.unwrap_or(self.game_end) - self.left_at
    }
}

/// One backfilled player (one ticket).
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    pub rating: f64,
    /// The match's reference when it was filled: the average rating of
    /// the players it had (what the core widens its window around); `None`
    /// when it had nobody left, and the core holds the newcomer to no
    /// window (the first fill sets the reference).
    pub reference: Option<f64>,
    /// Simulated seconds since the backfill (its latest request) opened.
    pub wait: f64,
    /// The world's rating window at that wait (`None`: FIFO).
    pub window: Option<f64>,
    /// Whether the window was lifted (wait past relaxAfterSeconds).
    pub relaxed: bool,
    /// Team-average difference right after this fill.
    pub team_difference: f64,
    /// The world's balance window at the wait (`None`: none, or lifted).
    pub balance_window: Option<f64>,
    /// This fill left no seat open.
    pub completes: bool,
}

impl Fill {
    /// How far the newcomer's rating was from the reference (`None`: none).
    pub fn distance(&self) -> Option<f64> {
        self.reference.map(|r| (self.rating - r).abs())
    }

    /// Seated farther from the reference than the window (not lifted) allowed.
    pub fn over_window(&self) -> bool {
        !self.relaxed
            && self
                .window
                .zip(self.distance())
                .is_some_and(|(w, d)| d > w + 1e-6)
    }
}

/// One match as it was played.
#[derive(Debug, Clone, PartialEq)]
pub struct Game {
    pub formed_at: f64,
    pub ended_at: f64,
    /// Team-average difference when it formed (from the trace).
    pub team_difference: f64,
    /// Its players who left.
    pub leavers: usize,
    /// Team-average difference of the players left after each leave
    /// (without backfill: the short-handed match).
    pub after_leaves: Vec<f64>,
    /// Player-seconds the match played with empty seats.
    pub empty_seconds: f64,
    /// Seats it has when full.
    pub seats: usize,
    /// Players it ended with in each team.
    pub final_counts: Vec<usize>,
}

/// What one lane did.
#[derive(Debug, Clone)]
pub struct LaneResult {
    pub label: String,
    pub file: String,
    pub rule_set: String,
    pub variant: Variant,
    pub games: Vec<Game>,
    pub seats: Vec<Seat>,
    pub fills: Vec<Fill>,
    /// Waits of players who joined a fresh match, and of those who took a
    /// backfilled seat (simulated s from their join).
    pub fresh_waits: Vec<f64>,
    pub backfill_waits: Vec<f64>,
    /// Fills learnt from join replies (the joiner took the seat) and from
    /// reading the record after a tick (the matcher filled it).
    pub by_join: u64,
    pub by_matcher: u64,
    pub requests: u64,
    pub renewals: u64,
    /// Renewals that found the backfill gone with seats still open.
    pub lapsed: u64,
    /// Players still waiting at the end, and arrivals never matched.
    pub waiting: usize,
    pub anomalies: Anomalies,
    pub failures: u64,
    pub first_error: Option<String>,
    pub ticks: Ticks,
    pub notes: Vec<String>,
    pub lagging: Option<String>,
    /// Record cross-checks: fills whose additions did not match the open
    /// seats, records whose team difference differs from the trace.
    pub mismatches: u64,
}

/// What a backfill simulation produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub lanes: Vec<LaneResult>,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
    /// (label, file, world description) per rule set.
    pub rule_sets: Vec<(String, String, String)>,
    /// The keep-alive the core applies (simulated s).
    pub keepalive: f64,
    /// The trace's last arrival (simulated s).
    pub last_arrival: f64,
}

/// The rated window of `world` at a backfill's `wait`: (window, relaxed);
/// `None` for a FIFO world.
pub fn window_at(world: &World, wait: f64) -> Option<(f64, bool)> {
    let MatchMode::Rating(r) = &world.mode else {
        return None;
    };
    let w = (r.base_window + r.widen_per_second * wait).min(r.max_window);
    Some((w, wait >= r.relax_after.as_secs_f64()))
}

/// The balance window a fill of a backfill that has waited `wait` keeps in
/// `world` (`None`: the world has none, or it is lifted).
pub fn balance_at(world: &World, wait: f64) -> Option<f64> {
    let MatchMode::Rating(r) = &world.mode else {
        return None;
    };
    r.backfill_balance_after(Duration::from_secs_f64(wait.max(0.0)))
}

/// Runs every rule set twice ([`Variant`]) on the trace.
pub async fn simulate(config: &Config) -> Result<Outcome, String> {
    if config.rule_sets.is_empty() {
        return Err("--backfill: no rule set".into());
    }
    if config.scenario.has_parties() {
        return Err("--backfill: the scenario plays solo arrivals only (no --party-sizes)".into());
    }
    let mut specs = Vec::new();
    let mut meta = Vec::new();
    let mut described = Vec::new();
    for (i, rs) in config.rule_sets.iter().enumerate() {
        let (_, world) = rs.settings(
            &crate::rules::Environment {
                redis_url: "redis://127.0.0.1:1".into(),
                ticket_ttl_secs: 900,
                instant_match: true,
            },
            "simcheck",
        )?;
        if world.teams < 2 {
            return Err(format!(
                "rule set {}: the backfill scenario needs a world with teams",
                rs.file
            ));
        }
        described.push((
            rs.label.clone(),
            rs.file.clone(),
            crate::rules::describe(&world),
        ));
        for (j, v) in Variant::ALL.into_iter().enumerate() {
            let mut vrs = rs.clone();
            vrs.label = format!("{} {}", rs.label, v.describe());
            specs.push((vrs.label.clone(), vrs, format!("b{i}{j}")));
            meta.push((rs.file.clone(), rs.label.clone(), v));
        }
    }
    let (lanes, servers) =
        play::start(&specs, config.speed, &config.redis_server, &config.work_dir).await?;
    let keepalive = lanes.first().map_or(15.0, |l| {
        l.store.settings().backfill_keepalive.as_secs_f64()
    });
    let scenario = Arc::new(config.scenario.clone());
    let params = Arc::new(config.clone());
    let handles: Vec<_> = lanes
        .into_iter()
        .zip(meta)
        .map(|(lane, m)| tokio::spawn(drive(lane, m, scenario.clone(), params.clone())))
        .collect();
    let (results, measured_speed, clock_error) = servers.collect(handles, |r| &mut r.notes).await?;
    Ok(Outcome {
        lanes: results,
        measured_speed,
        clock_error,
        rule_sets: described,
        keepalive,
        last_arrival: config.scenario.last_arrival(),
    })
}

/// What the lane's tasks share.
struct Ctx {
    store: MatchStore,
    world: World,
    clock: SimClock,
    variant: Variant,
    scenario: Arc<Scenario>,
    index: HashMap<String, usize>,
    config: Arc<Config>,
    state: Mutex<State>,
    /// The simulated time the latest tick ended.
    ticked: watch::Receiver<f64>,
}

#[derive(Default)]
struct State {
    joined_ms: HashMap<usize, f64>,
    games: Vec<Game>,
    seats: Vec<Seat>,
    fills: Vec<Fill>,
    fresh_waits: Vec<f64>,
    backfill_waits: Vec<f64>,
    by_join: u64,
    by_matcher: u64,
    requests: u64,
    renewals: u64,
    lapsed: u64,
    anomalies: Anomalies,
    failures: u64,
    first_error: Option<String>,
    mismatches: u64,
    join_lag: Vec<f64>,
    /// Players a fresh match or a backfill took.
    /// Where each placed player went ("match <id>", "fill <n> of <id>"):
    /// a player placed twice is an anomaly naming both.
    placements: HashMap<usize, Vec<String>>,
}

impl State {
    /// Files player `i` (`p`) as placed `where_`; a second placement is an
    /// anomaly (one ticket, two seats).
    fn place(&mut self, i: usize, p: &str, where_: String) {
        let list = self.placements.entry(i).or_default();
        list.push(where_);
        if list.len() > 1 {
            let list = list.join(", ");
            self.anomalies.note(format!("{p} placed twice: {list}"));
        }
    }

    fn fail(&mut self, what: String) {
        self.failures += 1;
        self.first_error.get_or_insert(what);
    }
}

/// What the coordinator hears.
enum Event {
    Formed(Box<MatchRecord>),
    /// A join took a backfilled seat of match `.0` (player, simulated time).
    Filled(MatchId, usize, f64),
}

async fn drive(
    lane: play::Lane,
    (file, rule_set, variant): (String, String, Variant),
    scenario: Arc<Scenario>,
    config: Arc<Config>,
) -> LaneResult {
    let index: HashMap<String, usize> = scenario
        .arrivals
        .iter()
        .enumerate()
        .map(|(i, a)| (a.player.clone(), i))
        .collect();
    let (tick_done_tx, tick_done_rx) = watch::channel(0.0);
    let ctx = Arc::new(Ctx {
        store: lane.store.clone(),
        world: lane.world.clone(),
        clock: lane.clock,
        variant,
        scenario: scenario.clone(),
        index,
        config: config.clone(),
        state: Mutex::new(State::default()),
        ticked: tick_done_rx,
    });
    let (events_tx, events_rx) = mpsc::unbounded_channel::<Event>();
    let (formed_tx, formed_rx) = mpsc::unbounded_channel::<MatchRecord>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let ticker = play::spawn_ticker(
        lane.matcher.clone(),
        lane.clock,
        formed_tx,
        tick_done_tx,
        stop_rx,
    );
    let coordinator = tokio::spawn(coordinate(ctx.clone(), events_rx, formed_rx));

    // Arrivals, each when its time comes.
    let permits = Arc::new(Semaphore::new(config.in_flight.max(1)));
    let mut joins = tokio::task::JoinSet::new();
    for (i, arrival) in scenario.arrivals.iter().enumerate() {
        play::sleep_until(&ctx.clock, arrival.time).await;
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let ctx = ctx.clone();
        let events = events_tx.clone();
        joins.spawn(async move {
            join(&ctx, i, &events).await;
            drop(permit);
        });
    }
    while joins.join_next().await.is_some() {}
    drop(events_tx);
    // Once every game has ended, the matcher stops.
    if let Err(e) = coordinator.await {
        lock(&ctx.state).fail(format!("the game servers failed: {e}"));
    }
    stop_tx.send_replace(true);
    let ticks = ticker.await.unwrap_or_default();

    let mut s = lock(&ctx.state);
    let waiting = scenario.arrivals.len() - s.placements.len();
    let lag = crate::stats::Dist::of(&s.join_lag);
    let lagging = match (ticks.lagging(), lag) {
        (Some(why), _) => Some(why),
        (None, Some(d)) if d.p95 > 1.0 => Some(format!(
            "joins were sent up to {:.2} s (p95) after their time",
            d.p95
        )),
        _ => None,
    };
    let mut notes = Vec::new();
    if let Some(d) = lag {
        notes.push(format!(
            "joins sent late against the trace: p50 {:.3} s, p95 {:.3} s, max {:.2} s",
            d.p50, d.p95, d.max
        ));
    }
    notes.push(ticks.describe());
    if ticks.backfills_lapsed > 0 {
        notes.push(format!(
            "housekeeping found {} backfills lapsed",
            ticks.backfills_lapsed
        ));
    }
    LaneResult {
        label: lane.label,
        file,
        rule_set,
        variant,
        games: std::mem::take(&mut s.games),
        seats: std::mem::take(&mut s.seats),
        fills: std::mem::take(&mut s.fills),
        fresh_waits: std::mem::take(&mut s.fresh_waits),
        backfill_waits: std::mem::take(&mut s.backfill_waits),
        by_join: s.by_join,
        by_matcher: s.by_matcher,
        requests: s.requests,
        renewals: s.renewals,
        lapsed: s.lapsed,
        waiting,
        anomalies: s.anomalies.clone(),
        failures: s.failures + ticks.failures,
        first_error: s.first_error.clone().or_else(|| ticks.first_error.clone()),
        ticks,
        notes,
        lagging,
        mismatches: s.mismatches,
    }
}

fn player_of(scenario: &Scenario, i: usize) -> Result<(PlayerId, Option<Rating>), String> {
    let a = &scenario.arrivals[i];
    let p = PlayerId::parse(&a.player).map_err(|e| format!("player {:?}: {e}", a.player))?;
    Ok((p, Rating::new(a.rating).ok()))
}

/// Arrival `i`: its connection, then its join with the trace's rating as
/// the verified claim.
async fn join(ctx: &Ctx, i: usize, events: &mpsc::UnboundedSender<Event>) {
    let clock = ctx.clock;
    let (player, rating) = match player_of(&ctx.scenario, i) {
        Ok(p) => p,
        Err(e) => {
            lock(&ctx.state).fail(e);
            return;
        }
    };
    if let Err(e) = play::connect(&ctx.store, &player).await {
        lock(&ctx.state).fail(e);
        return;
    }
    let now = clock.sim_now();
    {
        let mut s = lock(&ctx.state);
        s.joined_ms.insert(i, clock.fake_ms_at(now));
        s.join_lag.push(now - ctx.scenario.arrivals[i].time);
    }
    let input = JoinInput {
        claimed: rating,
        ..Default::default()
    };
    match ctx
        .store
        .join_reply(&ctx.world, &player, &input, false)
        .await
    {
        Ok(reply) => match reply.outcome {
            JoinOutcome::Queued(_) => {}
            JoinOutcome::Matched { formed, .. } => {
                for m in formed {
                    let _ = events.send(Event::Formed(Box::new(m)));
                }
            }
            JoinOutcome::Backfilled { joined, .. } => {
                let _ = events.send(Event::Filled(joined.match_id.clone(), i, clock.sim_now()));
            }
            other => lock(&ctx.state)
                .anomalies
                .note(format!("join of {player}: {other:?}")),
        },
        Err(e) => lock(&ctx.state).fail(format!("join of {player}: {e}")),
    }
}

/// Starts a game server per match formed (once; from join replies and
/// ticks) and routes join-fills to their match's server, until the
/// arrivals are over and every game has ended.
async fn coordinate(
    ctx: Arc<Ctx>,
    mut events: mpsc::UnboundedReceiver<Event>,
    mut ticks: mpsc::UnboundedReceiver<MatchRecord>,
) {
    let mut servers: HashMap<MatchId, mpsc::UnboundedSender<(usize, f64)>> = HashMap::new();
    let mut early: HashMap<MatchId, Vec<(usize, f64)>> = HashMap::new();
    let mut games = tokio::task::JoinSet::new();
    let mut n = 0u64;
    let mut arriving = true;
    loop {
        if !arriving && games.is_empty() {
            break;
        }
        let e = tokio::select! {
            e = events.recv(), if arriving => match e {
                Some(e) => e,
                None => {
                    arriving = false;
                    continue;
                }
            },
            Some(m) = ticks.recv() => Event::Formed(Box::new(m)),
            Some(done) = games.join_next(), if !games.is_empty() => {
                if let Err(e) = done {
                    lock(&ctx.state).fail(format!("a game failed: {e}"));
                }
                continue;
            }
        };
        match e {
            Event::Formed(record) => {
                if servers.contains_key(&record.match_id) {
                    continue;
                }
                n += 1;
                let (tx, rx) = mpsc::unbounded_channel();
                for fill in early.remove(&record.match_id).unwrap_or_default() {
                    let _ = tx.send(fill);
                }
                servers.insert(record.match_id.clone(), tx);
                games.spawn(game(ctx.clone(), *record, n, rx));
            }
            Event::Filled(id, player, at) => match servers.get(&id) {
                Some(tx) => {
                    let _ = tx.send((player, at));
                }
                None => early.entry(id).or_default().push((player, at)),
            },
        }
    }
}

/// A seat of a running match: who sits there (arrival index) by team.
struct Roster {
    teams: Vec<Vec<usize>>,
}

impl Roster {
    fn ratings(&self, scenario: &Scenario) -> Vec<Vec<f64>> {
        self.teams
            .iter()
            .map(|t| t.iter().map(|&i| scenario.arrivals[i].rating).collect())
            .collect()
    }

    fn ids(&self, scenario: &Scenario) -> Vec<Vec<PlayerId>> {
        self.teams
            .iter()
            .map(|t| {
                t.iter()
                    .filter_map(|&i| PlayerId::parse(&scenario.arrivals[i].player).ok())
                    .collect()
            })
            .collect()
    }

    fn players(&self) -> usize {
        self.teams.iter().map(Vec::len).sum()
    }
}

/// The open backfill of a running match, as its server knows it.
struct Open {
    /// When the latest request opened it (its wait counts from then).
    since: f64,
    next_renew: f64,
}

/// What the game server knows of its match's fills.
#[derive(Default)]
struct Seen {
    /// Additions of the record taken into the roster so far.
    known: usize,
    /// The last fill among them (a request says it has heard of those).
    last_fill: u32,
    /// Each successful backfill request. A fill is decided against the
    /// latest request before it (a join may fill a seat of the previous
    /// backfill while the server is sending a new request after a leave).
    requested: Vec<Requested>,
}

/// A backfill request as the match's store took it.
struct Requested {
    /// Fills the match had when it was stored.
    fills: u32,
    /// Fills the server had heard of when it sent it: players later fills
    /// added kept their seats though not in `teams`.
    seen: u32,
    /// The teams it named.
    teams: Vec<Vec<usize>>,
    /// When it was sent (simulated s): its wait counts from then.
    since: f64,
}

/// One match's game server: assigns it, plays it, lets its leavers go and
/// (with backfill) requests, renews and watches its backfill; reports the
/// result at the end.
async fn game(
    ctx: Arc<Ctx>,
    record: MatchRecord,
    n: u64,
    mut fills: mpsc::UnboundedReceiver<(usize, f64)>,
) {
    let clock = ctx.clock;
    let sc = ctx.scenario.clone();
    let id = record.match_id.clone();
    if let Err(e) = play::assign(&ctx.store, &id, n).await {
        lock(&ctx.state).fail(e);
    }
    let formed_at = clock.sim_of_fake_ms(record.matched_at as f64);
    let index_of = |p: &PlayerId| ctx.index.get(p.as_str()).copied();
    let teams: Vec<Vec<usize>> = match &record.teams {
        Some(t) => t
            .iter()
            .map(|team| team.iter().filter_map(index_of).collect())
            .collect(),
        None => vec![record.participants.iter().filter_map(index_of).collect()],
    };
    let mut roster = Roster { teams };
    let seats = record.participants.len();
    let team_size = ctx.world.team_size as usize;
    let fresh_difference = play::team_difference(&roster.ratings(&sc));
    {
        let mut s = lock(&ctx.state);
        if roster.players() != seats {
            s.fail(format!("match {id} has players not in the trace"));
        }
        if let Some(d) = record.team_difference {
            if (d - fresh_difference).abs() > 0.01 {
                s.mismatches += 1;
            }
        }
        for p in &record.participants {
            if let Some(i) = index_of(p) {
                s.place(i, p.as_str(), format!("match {id}"));
                if let Some(sent) = s.joined_ms.get(&i).copied() {
                    let wait = (record.matched_at as f64 - sent) / 1000.0;
                    s.fresh_waits.push(wait);
                }
            }
        }
    }
    let mut rng = stream(ctx.config.seed, 1 << 40 | n, 0);
    let duration = uniform(&mut rng, ctx.config.game_seconds);
    let end = formed_at + duration;
    // Who leaves, and when: decided per player, so both variants lose the
    // same players at the same point of their games.
    let mut leaves: Vec<(f64, usize)> = roster
        .teams
        .iter()
        .flatten()
        .filter_map(|&i| {
            let mut r = stream(ctx.config.seed, 5 << 40 | i as u64, 0);
            let leaves = r.random::<f64>() < ctx.config.leave_probability;
            let at = formed_at + uniform(&mut r, LEAVE_WITHIN) * duration;
            leaves.then_some((at, i))
        })
        .collect();
    leaves.sort_by(|a, b| a.0.total_cmp(&b.0));
    leaves.reverse();
    let leavers = leaves.len();
    let mut open_seats: Vec<(usize, usize)> = Vec::new(); // (team, seat index in state)
    let mut backfill: Option<Open> = None;
    let mut seen = Seen::default();
    let mut join_fills: HashMap<usize, f64> = HashMap::new();
    let mut after_leaves = Vec::new();
    let mut empty_seconds = 0.0;
    let mut last_change = formed_at;
    let mut ticked = ctx.ticked.clone();
    let renew = ctx.config.renew;
    loop {
        let next_leave = leaves.last().map(|l| l.0).unwrap_or(f64::INFINITY);
        let next_renew = backfill.as_ref().map_or(f64::INFINITY, |b| b.next_renew);
        let next = next_leave.min(next_renew).min(end);
        let mut poll = false;
        tokio::select! {
            _ = play::sleep_until(&clock, next) => {}
            changed = ticked.changed(), if backfill.is_some() => {
                poll = changed.is_ok();
            }
            got = fills.recv(), if backfill.is_some() => {
                if let Some((i, at)) = got {
                    join_fills.insert(i, at);
                    poll = true;
                }
            }
        }
        let now = clock.sim_now();
        // (More players than seats is an overfill, noted as an anomaly.)
        let empty_now = seats.saturating_sub(roster.players());
        empty_seconds += empty_now as f64 * (now.min(end) - last_change).max(0.0);
        last_change = now.min(end);
        // A leave due before the end is played even when this task woke
        // late (a lane behind its clock): the seat emptied in the game.
        if now >= end && next_leave >= end {
            break;
        }
        if poll {
            while let Ok((i, t)) = fills.try_recv() {
                join_fills.insert(i, t);
            }
            let at = *ticked.borrow();
            poll_fills(
                &ctx,
                &id,
                &mut roster,
                &mut open_seats,
                &mut backfill,
                &mut seen,
                &join_fills,
                at,
                team_size,
            )
            .await;
            continue;
        }
        if next_leave <= now + 1e-9 {
            let Some((_, i)) = leaves.pop() else { continue };
            // Who the match has now: a fill may have landed since the last
            // look (the request lists the players it has).
            if backfill.is_some() {
                while let Ok((j, t)) = fills.try_recv() {
                    join_fills.insert(j, t);
                }
                let at = *ticked.borrow();
                poll_fills(
                    &ctx,
                    &id,
                    &mut roster,
                    &mut open_seats,
                    &mut backfill,
                    &mut seen,
                    &join_fills,
                    at,
                    team_size,
                )
                .await;
            }
            let Some(team) = roster.teams.iter().position(|t| t.contains(&i)) else {
                continue;
            };
            roster.teams[team].retain(|&x| x != i);
            after_leaves.push(play::team_difference(&roster.ratings(&sc)));
            {
                let mut s = lock(&ctx.state);
                s.seats.push(Seat {
                    left_at: now,
                    filled_at: None,
                    game_end: end,
                });
                open_seats.push((team, s.seats.len() - 1));
            }
            if ctx.variant == Variant::Backfill {
                request(&ctx, &id, &roster, &mut backfill, &mut seen, renew).await;
            }
            continue;
        }
        if backfill
            .as_ref()
            .is_some_and(|b| b.next_renew <= now + 1e-9)
        {
            match ctx.store.renew_backfill(&id).await {
                Ok(BackfillOutcome::Renewed(_)) => {
                    lock(&ctx.state).renewals += 1;
                    if let Some(b) = backfill.as_mut() {
                        b.next_renew = now + renew;
                    }
                }
                Ok(BackfillOutcome::NotFound) => {
                    // Filled meanwhile, or lapsed: the record tells.
                    let at = now;
                    poll_fills(
                        &ctx,
                        &id,
                        &mut roster,
                        &mut open_seats,
                        &mut backfill,
                        &mut seen,
                        &join_fills,
                        at,
                        team_size,
                    )
                    .await;
                    if backfill.is_some() {
                        lock(&ctx.state).lapsed += 1;
                        request(&ctx, &id, &roster, &mut backfill, &mut seen, renew).await;
                    }
                }
                Ok(other) => {
                    lock(&ctx.state)
                        .anomalies
                        .note(format!("renewal of {id}: {other:?}"));
                    backfill = None;
                }
                Err(e) => lock(&ctx.state).fail(format!("renewal of {id}: {e}")),
            }
        }
    }
    // The game is over: whatever the backfill still had open stays empty.
    if backfill.is_some() {
        // A fill may have landed since the last look.
        poll_fills(
            &ctx,
            &id,
            &mut roster,
            &mut open_seats,
            &mut backfill,
            &mut seen,
            &join_fills,
            end,
            team_size,
        )
        .await;
    }
    let perf: std::collections::BTreeMap<PlayerId, f64> = {
        let model = Performance {
            noise: ctx.config.noise,
            seed: ctx.config.seed,
        };
        roster
            .teams
            .iter()
            .flatten()
            .filter_map(|&i| {
                PlayerId::parse(&sc.arrivals[i].player)
                    .ok()
                    .map(|p| (p, model.of(sc.arrivals[i].rating, i, 0)))
            })
            .collect()
    };
    // The result covers the match as the core has it (the leavers too,
    // who add nothing to their team's performance).
    let merged = match ctx.store.match_record(&id).await {
        Ok(Some(m)) => m.lifecycle.merged(m.record),
        _ => record.clone(),
    };
    let report = play::report_for(&merged, &perf);
    match use_cases::report_result(&ctx.store, &id, &report).await {
        Ok(ResultReport::Finished(_)) => {}
        Ok(other) => lock(&ctx.state).fail(format!("result of {id}: {other:?}")),
        Err(e) => lock(&ctx.state).fail(format!("result of {id}: {e}")),
    }
    let mut s = lock(&ctx.state);
    s.games.push(Game {
        formed_at,
        ended_at: end,
        team_difference: fresh_difference,
        leavers,
        after_leaves,
        empty_seconds,
        seats,
        final_counts: roster.teams.iter().map(Vec::len).collect(),
    });
}

/// Opens (or replaces) the match's backfill for the seats its roster
/// leaves open.
async fn request(
    ctx: &Ctx,
    id: &MatchId,
    roster: &Roster,
    open: &mut Option<Open>,
    seen: &mut Seen,
    renew: f64,
) {
    let now = ctx.clock.sim_now();
    match ctx
        .store
        .request_backfill(id, &roster.ids(&ctx.scenario), Some(seen.last_fill))
        .await
    {
        Ok(BackfillOutcome::Open { backfill, .. }) => {
            lock(&ctx.state).requests += 1;
            seen.requested.push(Requested {
                fills: backfill.fills,
                seen: seen.last_fill,
                teams: roster.teams.clone(),
                since: now,
            });
            *open = Some(Open {
                since: now,
                next_renew: now + renew,
            });
        }
        Ok(other) => {
            lock(&ctx.state)
                .anomalies
                .note(format!("backfill request of {id}: {other:?}"));
            *open = None;
        }
        Err(e) => {
            lock(&ctx.state).fail(format!("backfill request of {id}: {e}"));
            *open = None;
        }
    }
}

/// Reads the match's record and takes the players backfills added since
/// the last look into the roster: each fills the oldest empty seat of its
/// team, at the time its join reply came (a join fill) or `at` (the tick
/// that filled it). Closes the backfill once no seat is open.
#[allow(clippy::too_many_arguments)]
async fn poll_fills(
    ctx: &Ctx,
    id: &MatchId,
    roster: &mut Roster,
    open_seats: &mut Vec<(usize, usize)>,
    backfill: &mut Option<Open>,
    seen: &mut Seen,
    join_fills: &HashMap<usize, f64>,
    at: f64,
    team_size: usize,
) {
    // A fill the record shows was decided by now at the latest (a tick's
    // fill can be read before the tick's end is heard of).
    let read_at = ctx.clock.sim_now();
    let m = match ctx.store.match_record(id).await {
        Ok(Some(m)) => m,
        Ok(None) => return,
        Err(e) => {
            lock(&ctx.state).fail(format!("record of {id}: {e}"));
            return;
        }
    };
    let additions = &m.lifecycle.additions;
    if additions.len() <= seen.known {
        return;
    }
    let sc = &ctx.scenario;
    let latest_since = backfill.as_ref().map_or(at, |b| b.since);
    // One fill (one backfill serve or one join) may seat several tickets,
    // all against the reference before it.
    let mut k = seen.known;
    while k < additions.len() {
        let fill_no = additions[k].fill;
        let batch: Vec<_> = additions[k..]
            .iter()
            .take_while(|a| a.fill == fill_no)
            .collect();
        k += batch.len();
        // The teams the fill was decided against: the latest request before
        // it, with the fills made since that request, before this one.
        let request = seen.requested.iter().rev().find(|r| r.fills < fill_no);
        let mut decided = match request {
            Some(r) => {
                let mut teams = Roster {
                    teams: r.teams.clone(),
                };
                for a in additions
                    .iter()
                    .filter(|a| a.fill > r.seen && a.fill < fill_no)
                {
                    for p in &a.players {
                        let Some(&i) = ctx.index.get(p.as_str()) else {
                            continue;
                        };
                        if teams.teams.iter().any(|t| t.contains(&i)) {
                            continue;
                        }
                        if let Some(team) = teams.teams.get_mut(a.team.saturating_sub(1)) {
                            team.push(i);
                        }
                    }
                }
                teams
            }
            None => Roster {
                teams: roster.teams.clone(),
            },
        };
        let since = request.map_or(latest_since, |r| r.since);
        let all: Vec<f64> = decided.ratings(sc).into_iter().flatten().collect();
        let reference = crate::stats::mean(&all);
        let mut s = lock(&ctx.state);
        let mut seated = Vec::new();
        for a in &batch {
            let team = a.team.saturating_sub(1);
            for p in &a.players {
                let Some(&i) = ctx.index.get(p.as_str()) else {
                    s.fail(format!("match {id}: backfilled {p} is not in the trace"));
                    continue;
                };
                // A join's reply says when; otherwise the tick that filled
                // it (never before the backfill opened).
                let when = join_fills.get(&i).copied().unwrap_or(at.max(since));
                match join_fills.get(&i) {
                    Some(_) => s.by_join += 1,
                    None => s.by_matcher += 1,
                }
                s.place(i, p.as_str(), format!("fill {fill_no} of {id}"));
                if let Some(sent) = s.joined_ms.get(&i).copied() {
                    let wait = when - ctx.clock.sim_of_fake_ms(sent);
                    s.backfill_waits.push(wait);
                }
                let slot = open_seats.iter().position(|(t, _)| *t == team);
                match (slot, roster.teams.get_mut(team)) {
                    (Some(slot), Some(members)) if members.len() < team_size => {
                        let (_, seat) = open_seats.remove(slot);
                        if let Some(seat) = s.seats.get_mut(seat) {
                            seat.filled_at = Some(when);
                        }
                        members.push(i);
                    }
                    _ => {
                        s.mismatches += 1;
                        s.anomalies.note(format!(
                            "match {id}: {p} filled team {} without an open seat",
                            a.team
                        ));
                        if let Some(members) = roster.teams.get_mut(team) {
                            members.push(i);
                        }
                    }
                }
                if let Some(members) = decided.teams.get_mut(team) {
                    members.push(i);
                }
                seated.push((i, when));
            }
        }
        // The game's teams now (what the report measures), and the teams
        // the fill was decided against (what the balance window holds).
        let difference = play::team_difference(&roster.ratings(sc));
        let decided_difference = play::team_difference(&decided.ratings(sc));
        let completes = open_seats.is_empty();
        for (i, when) in seated {
            let wait = when - since;
            // The windows the fill was held to: as of the latest it can
            // have been decided (a join's reply; else the record's read),
            // so that a fill a tick made later than `when` is not taken
            // for one outside a window narrower than its own.
            let latest = if join_fills.contains_key(&i) {
                when
            } else {
                read_at.max(when)
            };
            // No reference (the match had nobody left): no window either.
            let (window, relaxed) = match window_at(&ctx.world, latest - since) {
                Some((w, r)) if reference.is_some() => (Some(w), r),
                _ => (None, false),
            };
            let balance_window = balance_at(&ctx.world, latest - since);
            if balance_window.is_some_and(|b| decided_difference > b + 1e-6) {
                let teams = decided.ratings(sc);
                s.anomalies.note(format!(
                    "match {id}: team averages {decided_difference:.2} apart after fill {} (wait {wait:.2} s, balance window {:.2}); teams {teams:?}",
                    batch[0].fill,
                    balance_window.unwrap_or(0.0)
                ));
            }
            s.fills.push(Fill {
                rating: sc.arrivals[i].rating,
                reference,
                wait,
                window,
                relaxed,
                team_difference: difference,
                balance_window,
                completes,
            });
        }
    }
    seen.known = additions.len();
    seen.last_fill = additions.iter().map(|a| a.fill).max().unwrap_or(0);
    if open_seats.is_empty() {
        *backfill = None;
    }
}
