//! Matches played out: what the ratings (`--ratings`) and backfill
//! (`--backfill`) scenarios share. Each lane is one rule set variant on its
//! own time-compressed redis-server; a simulated game server assigns every
//! match the core forms (`MatchStore::assign_match`, what the assignment
//! route runs), plays it for a while on the simulated clock and reports its
//! result through the route's use case (`use_cases::report_result`); the
//! real matcher ticks every simulated second. The outcome model
//! ([`Performance`]) decides who wins from each player's hidden true skill.
//! The block-list study (`--blocks`) starts its lanes and ticks them here
//! too, and plays no game.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use shared::matcher::tick;
use shared::store::AssignOutcome;
use shared::{
    Assignment, ConnectionId, MatchId, MatchRecord, MatchReport, MatchStore, PlayerId, World,
};
use tokio::sync::{mpsc, watch};

use crate::clock::{self, SimClock};
use crate::engine::NullPusher;
use crate::rules::{Environment, RuleSet};
use crate::server::FakeRedis;
use crate::Server;

/// One lane ready to play: its stores (the game servers' and joins'
/// connection, and the matcher's own), the driven world and the clock.
pub struct Lane {
    pub label: String,
    pub store: MatchStore,
    pub matcher: MatchStore,
    pub world: World,
    pub clock: SimClock,
}

/// The lanes' servers, kept alive while they play.
pub struct Servers {
    redis: Vec<FakeRedis>,
    controls: Vec<redis::aio::MultiplexedConnection>,
    clocks: Vec<SimClock>,
    /// Each server's measured clock speed.
    pub speeds: Vec<f64>,
    speed: f64,
}

impl Servers {
    /// The measured speed furthest from `speed`.
    pub fn worst_speed(&self, speed: f64) -> f64 {
        self.speeds
            .iter()
            .copied()
            .max_by(|a, b| (a / speed - 1.0).abs().total_cmp(&(b / speed - 1.0).abs()))
            .unwrap_or(speed)
    }

    /// Anchors every lane's clock on one common simulated time 0, 300 ms
    /// of real time from now (again: before a first arrival, after what a
    /// study did to its stores first). Returns the clocks, lane by lane.
    pub async fn anchor(&mut self) -> Result<Vec<SimClock>, String> {
        let origin = Instant::now() + Duration::from_millis(300);
        let mut clocks = Vec::new();
        for control in self.controls.iter_mut() {
            let reading = clock::read(control, 7).await?;
            clocks.push(SimClock::new(origin, reading, self.speed));
        }
        self.clocks.clone_from(&clocks);
        Ok(clocks)
    }

    /// Awaits the lanes' tasks (`handles`, lane order), then ends the
    /// servers: the results, each with its server's CPU use added to its
    /// `notes`; the measured speed furthest from the one asked for; and the
    /// clock model's worst error (see [`Servers::finish`]).
    pub async fn collect<T>(
        self,
        handles: Vec<tokio::task::JoinHandle<T>>,
        notes: impl Fn(&mut T) -> &mut Vec<String>,
    ) -> Result<(Vec<T>, f64, Option<f64>), String> {
        let mut results = Vec::new();
        for h in handles {
            results.push(h.await.map_err(|e| format!("a lane failed: {e}"))?);
        }
        let measured_speed = self.worst_speed(self.speed);
        let (usage, clock_error) = self.finish().await;
        for (r, u) in results.iter_mut().zip(usage) {
            notes(r).extend(u);
        }
        Ok((results, measured_speed, clock_error))
    }

    /// Per lane: its server's CPU use; and the clock model's worst error
    /// against `TIME` now (simulated seconds).
    pub async fn finish(mut self) -> (Vec<Option<String>>, Option<f64>) {
        let mut usage = Vec::new();
        let mut worst: Option<f64> = None;
        for (control, clock) in self.controls.iter_mut().zip(self.clocks.iter()) {
            usage.push(crate::server_usage(control).await);
            if let Ok(reading) = clock::read(control, 5).await {
                let e = clock.error_of(&reading);
                if worst.is_none_or(|w| e.abs() > w.abs()) {
                    worst = Some(e);
                }
            }
        }
        drop(std::mem::take(&mut self.redis));
        (usage, worst)
    }
}

/// Starts one server per `(label, rule set, namespace)`, validates each
/// rule set through the core and anchors every lane's clock on one common
/// simulated time 0.
pub async fn start(
    specs: &[(String, RuleSet, String)],
    speed: f64,
    redis_server: &str,
    work_dir: &std::path::Path,
) -> Result<(Vec<Lane>, Servers), String> {
    std::fs::create_dir_all(work_dir)
        .map_err(|e| format!("cannot create {}: {e}", work_dir.display()))?;
    let servers = futures_util::future::join_all(
        specs
            .iter()
            .map(|(_, _, ns)| Server::start_at(redis_server, speed, work_dir, ns)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<Server>, String>>()?;
    let mut lanes = Vec::new();
    let mut redis = Vec::new();
    let mut controls = Vec::new();
    let mut speeds = Vec::new();
    let mut pending = Vec::new();
    for ((label, rs, ns), server) in specs.iter().zip(servers) {
        let env = Environment {
            redis_url: server.redis.url(),
            ticket_ttl_secs: 900,
            instant_match: true,
        };
        let (settings, world) = rs.settings(&env, ns)?;
        let store = MatchStore::new(settings.clone()).map_err(|e| e.to_string())?;
        let matcher = MatchStore::new(settings).map_err(|e| e.to_string())?;
        crate::engine::warm_up(&store).await?;
        crate::engine::warm_up(&matcher).await?;
        pending.push((label.clone(), store, matcher, world));
        speeds.push(server.measured_speed);
        controls.push(server.control);
        redis.push(server.redis);
    }
    let mut servers = Servers {
        redis,
        controls,
        clocks: Vec::new(),
        speeds,
        speed,
    };
    let clocks = servers.anchor().await?;
    for ((label, store, matcher, world), clock) in pending.into_iter().zip(clocks) {
        lanes.push(Lane {
            label,
            store,
            matcher,
            world,
            clock,
        });
    }
    Ok((lanes, servers))
}

/// Sleeps until simulated time `t` of `clock`.
pub async fn sleep_until(clock: &SimClock, t: f64) {
    let due = clock.real_at(t);
    if due > Instant::now() {
        tokio::time::sleep_until(due.into()).await;
    }
}

/// Resolves once `stop` is set (or its sender is gone).
pub async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// What the matcher's ticks did, for the report's diagnostics.
#[derive(Debug, Clone, Default)]
pub struct Ticks {
    pub ran: u64,
    pub skipped: u64,
    /// How late each tick started, and how long it took (simulated s).
    pub late: Vec<f64>,
    pub took: Vec<f64>,
    pub failures: u64,
    pub first_error: Option<String>,
    /// Backfills housekeeping found lapsed (their keep-alive ran out).
    pub backfills_lapsed: u64,
}

impl Ticks {
    /// One line for the diagnostics.
    pub fn describe(&self) -> String {
        let took = crate::stats::Dist::of(&self.took);
        format!(
            "{} ticks, {} skipped, {} failed; a tick took {} (simulated s)",
            self.ran,
            self.skipped,
            self.failures,
            took.map_or_else(
                || "–".into(),
                |d| format!("p50 {:.2}, p95 {:.2}, max {:.2}", d.p50, d.p95, d.max)
            )
        )
    }

    /// Why the ticks did not keep up with the clock, if they did not.
    pub fn lagging(&self) -> Option<String> {
        let late = crate::stats::Dist::of(&self.late)?;
        let total = self.ran + self.skipped;
        let skipped = self.skipped as f64 / total.max(1) as f64;
        (late.p95 > 1.0 || skipped > 0.02).then(|| {
            format!(
                "ticks started up to {:.2} s late (p95), {:.1} % skipped",
                late.p95,
                skipped * 100.0
            )
        })
    }
}

/// The real matcher, every simulated second until `stop`: the matches
/// each tick formed go to `formed`; `done` carries the simulated time each
/// tick ended.
pub fn spawn_ticker(
    matcher: MatchStore,
    clock: SimClock,
    formed: mpsc::UnboundedSender<MatchRecord>,
    done: watch::Sender<f64>,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Ticks> {
    tokio::spawn(async move {
        let mut ticks = Ticks::default();
        let mut second = 1u64;
        loop {
            tokio::select! {
                _ = sleep_until(&clock, second as f64) => {}
                _ = stopped(stop.clone()) => break,
            }
            let started = clock.sim_now();
            match tick(&matcher, &NullPusher).await {
                Ok(report) => {
                    ticks.backfills_lapsed += report.housekeeping.backfills_lapsed;
                    for w in report.worlds {
                        for m in w.formed {
                            let _ = formed.send(m);
                        }
                    }
                }
                Err(e) => {
                    ticks.failures += 1;
                    ticks.first_error.get_or_insert(e.to_string());
                }
            }
            ticks.ran += 1;
            ticks.late.push(started - second as f64);
            ticks.took.push(clock.sim_now() - started);
            let _ = done.send(clock.sim_now());
            let next = (clock.sim_now().floor().max(0.0) as u64).max(second + 1);
            ticks.skipped += next - second - 1;
            second = next;
        }
        ticks
    })
}

/// Registers the WebSocket connection a player has before it joins (the
/// `$connect` handler's call), so that its notifications leave the outbox.
pub async fn connect(store: &MatchStore, player: &PlayerId) -> Result<(), String> {
    let conn =
        ConnectionId::parse(&format!("sim-{}", player.as_str())).map_err(|e| e.to_string())?;
    store
        .register_connection(&conn, player)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The clients' WebSocket heartbeats (`MatchStore::heartbeat`, what the
/// socket's PING runs) every `interval` simulated seconds, spread evenly
/// over it, until `stop`: a connection that lapses (the presence timeout,
/// 150 s by default) takes its player's waiting ticket with it
/// (`MM_REMOVE_TICKET_ON_DISCONNECT`), so a player who plays for longer
/// must keep its socket alive as a real client does. A connection the core
/// no longer knows is registered again. Returns the failures.
pub fn spawn_heartbeats(
    store: MatchStore,
    clock: SimClock,
    players: Vec<PlayerId>,
    interval: f64,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Anomalies> {
    tokio::spawn(async move {
        let mut failed = Anomalies::default();
        let n = players.len().max(1);
        let mut round = 0u64;
        loop {
            for (j, p) in players.iter().enumerate() {
                let at = (round as f64 + j as f64 / n as f64) * interval;
                tokio::select! {
                    _ = sleep_until(&clock, at) => {}
                    _ = stopped(stop.clone()) => return failed,
                }
                let Ok(conn) = ConnectionId::parse(&format!("sim-{}", p.as_str())) else {
                    continue;
                };
                match store.heartbeat(&conn).await {
                    Ok(shared::store::Heartbeat::Unknown) => {
                        if let Err(e) = connect(&store, p).await {
                            failed.note(format!("re-registering {p}: {e}"));
                        }
                    }
                    Ok(_) => {}
                    Err(e) => failed.note(format!("heartbeat of {p}: {e}")),
                }
            }
            round += 1;
        }
    })
}

/// The studio's allocator: assigns match `id` to simulated server `n`.
pub async fn assign(store: &MatchStore, id: &MatchId, n: u64) -> Result<(), String> {
    let a: Assignment = serde_json::from_value(serde_json::json!({
        "connection": format!("sim-server-{n}.example:7777")
    }))
    .map_err(|e| e.to_string())?;
    match store.assign_match(id, &a).await {
        Ok(AssignOutcome::Assigned(_)) => Ok(()),
        Ok(other) => Err(format!("assignment of {id}: {other:?}")),
        Err(e) => Err(format!("assignment of {id}: {e}")),
    }
}

/// The outcome model. In every game each player performs at their hidden
/// true skill plus independent Gaussian noise N(0, `noise`²); a side's
/// performance is the sum of its players' (a team), or the player's own (no
/// teams: every player is a side); sides are placed by performance, highest
/// first (Thurstone–Mosteller, which Weng-Lin's Bradley–Terry model
/// approximates). The noise of player `i` in its `g`-th game is drawn from
/// a stream seeded by (`seed`, `i`, `g`), so every variant of a run sees
/// the same luck for the same player's same game.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Performance {
    pub noise: f64,
    pub seed: u64,
}

/// A 64-bit mix (splitmix64's finaliser) for deriving seeds.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seeded random stream for (`seed`, `a`, `b`).
pub fn stream(seed: u64, a: u64, b: u64) -> StdRng {
    StdRng::seed_from_u64(mix(mix(mix(seed) ^ a) ^ b))
}

impl Performance {
    /// Player `i`'s performance in its game number `game` (0 = first).
    pub fn of(&self, skill: f64, i: usize, game: u32) -> f64 {
        let z: f64 = StandardNormal.sample(&mut stream(self.seed, i as u64, u64::from(game)));
        skill + self.noise * z
    }
}

/// Places by performance: 1 for the highest, equal performances share a
/// place (competition ranking: 1, 2, 2, 4).
pub fn places(performances: &[f64]) -> Vec<u32> {
    performances
        .iter()
        .map(|p| 1 + performances.iter().filter(|q| *q > p).count() as u32)
        .collect()
}

/// The result a game server reports for `record` when its players (by id,
/// every participant) performed `perf`: team ranks by team sums in a match
/// with teams, else every player's rank.
pub fn report_for(record: &MatchRecord, perf: &BTreeMap<PlayerId, f64>) -> MatchReport {
    match &record.teams {
        Some(teams) if !teams.is_empty() => {
            let sums: Vec<f64> = teams
                .iter()
                .map(|t| t.iter().filter_map(|p| perf.get(p)).sum())
                .collect();
            MatchReport {
                team_ranks: Some(places(&sums)),
                player_ranks: None,
                cancelled: false,
            }
        }
        _ => {
            let players: Vec<&PlayerId> = record.participants.iter().collect();
            let values: Vec<f64> = players
                .iter()
                .map(|p| perf.get(*p).copied().unwrap_or(f64::MIN))
                .collect();
            let ranks = places(&values);
            MatchReport {
                team_ranks: None,
                player_ranks: Some(
                    players
                        .into_iter()
                        .cloned()
                        .zip(ranks)
                        .collect::<BTreeMap<_, _>>(),
                ),
                cancelled: false,
            }
        }
    }
}

/// A uniform draw in `lo..=hi` from `rng`.
pub fn uniform(rng: &mut StdRng, (lo, hi): (f64, f64)) -> f64 {
    use rand::Rng;
    if hi > lo {
        rng.random_range(lo..=hi)
    } else {
        lo
    }
}

/// Highest minus lowest of `values` (0 for fewer than two).
pub fn spread(values: &[f64]) -> f64 {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if hi > lo {
        hi - lo
    } else {
        0.0
    }
}

/// Highest minus lowest team average (teams without players left out).
pub fn team_difference(teams: &[Vec<f64>]) -> f64 {
    let averages: Vec<f64> = teams
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| t.iter().sum::<f64>() / t.len() as f64)
        .collect();
    spread(&averages)
}

/// Shared, counted anomalies: the first few described.
#[derive(Debug, Default, Clone)]
pub struct Anomalies {
    pub count: u64,
    pub examples: Vec<String>,
}

impl Anomalies {
    pub fn note(&mut self, what: impl Into<String>) {
        self.count += 1;
        if self.examples.len() < 5 {
            self.examples.push(what.into());
        }
    }
}

/// A mutex that never stays poisoned (a panicking task already failed the
/// run).
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
