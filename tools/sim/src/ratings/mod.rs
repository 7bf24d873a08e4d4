//! The ratings scenario (`--ratings`): a fixed population of players, each
//! with a hidden true skill, plays match after match. Every player joins,
//! is matched by the real core, plays (the match is assigned to a
//! simulated game server), the game's result is decided by the outcome
//! model ([`crate::play::Performance`]) and reported through the result
//! route's use case (`use_cases::report_result`), which moves the ratings
//! with the world's `rating.updates`; the player rests and joins again, and
//! that join matches with the rating the result stored. Each rule set's
//! world is played three ways on the same population ([`Variant`]): with
//! its rating updates, with `"system": "none"` (everyone keeps the initial
//! rating), and with every player's true skill as its rating (ratings
//! known exactly). Reports the mean absolute error between the rating used
//! for matching and the true skill over games played, and match quality
//! (true-skill spread, team difference) over time ([`report`], [`plot`]).

pub mod plot;
pub mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rand_distr::{Distribution, Normal};
use serde_json::Value;
use shared::store::JoinInput;
use shared::use_cases::{self, ResultReport};
use shared::{
    JoinOutcome, LeaveOutcome, MatchMode, MatchRecord, MatchStore, PlayerId, Rating, StoredRating,
    World,
};
use tokio::sync::{mpsc, watch, Notify, Semaphore};

use crate::clock::SimClock;
use crate::play::{self, lock, stream, uniform, Anomalies, Performance, Ticks};
use crate::rules::{Environment, RuleSet};

/// How a rule set's world is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The rule set as written: results update ratings with its
    /// `rating.updates`; everyone starts at the initial rating.
    Updates,
    /// `rating.updates` `{"system": "none"}`: everyone keeps the initial
    /// rating (the ratings store is never written).
    NoUpdates,
    /// No updates, and every player joins with its true skill as its rating.
    Known,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Updates, Variant::NoUpdates, Variant::Known];

    pub fn describe(self) -> &'static str {
        match self {
            Variant::Updates => "updates as configured",
            Variant::NoUpdates => "no updates",
            Variant::Known => "ratings known exactly",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Variant::Updates => "u",
            Variant::NoUpdates => "n",
            Variant::Known => "k",
        }
    }
}

/// Everything one ratings simulation needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Rule sets whose driven world is rated and names rating updates.
    pub rule_sets: Vec<RuleSet>,
    pub players: usize,
    /// The run stops when this many games per player have been played on
    /// average (each lane on its own count); games under way are finished.
    pub games: f64,
    /// True skills ~ N(mean, sd).
    pub mean: f64,
    pub sd: f64,
    pub seed: u64,
    /// Everyone's rating before their first result (the claim their join
    /// carries; once a result has stored a rating, the store's entry is
    /// what the core uses).
    pub initial: f64,
    /// The outcome model's per-player performance noise (sd).
    pub noise: f64,
    /// A game lasts uniformly this long (simulated s).
    pub game_seconds: (f64, f64),
    /// A player rests uniformly this long between a game and its next join.
    pub rest: (f64, f64),
    /// First joins are spread uniformly over this many simulated seconds.
    pub ramp: f64,
    pub speed: f64,
    /// Joins in flight at once per lane.
    pub in_flight: usize,
    pub redis_server: String,
    pub work_dir: PathBuf,
}

/// MAE checkpoints every this many games per player on average.
pub const CHECKPOINT: f64 = 0.5;

/// The players: ids and hidden true skills.
#[derive(Debug, Clone)]
pub struct Population {
    pub ids: Vec<PlayerId>,
    pub skills: Vec<f64>,
    pub index: HashMap<String, usize>,
}

impl Population {
    /// `n` players `q00001`, … with skills N(mean, sd), seeded, kept
    /// within `[lo, hi]` (the world's rating range).
    pub fn generate(
        n: usize,
        mean: f64,
        sd: f64,
        seed: u64,
        (lo, hi): (f64, f64),
    ) -> Result<Self, String> {
        let normal = Normal::new(mean, sd).map_err(|e| format!("skills N({mean}, {sd}): {e}"))?;
        let mut rng = stream(seed, 0x5C11, 0);
        let mut ids = Vec::with_capacity(n);
        let mut skills = Vec::with_capacity(n);
        let mut index = HashMap::new();
        for i in 0..n {
            let id = format!("q{:05}", i + 1);
            let player = PlayerId::parse(&id).map_err(|e| e.to_string())?;
            index.insert(id, i);
            ids.push(player);
            skills.push(normal.sample(&mut rng).clamp(lo, hi));
        }
        Ok(Self { ids, skills, index })
    }

    /// Mean absolute difference between `ratings` and the skills.
    pub fn mae(&self, ratings: &[f64]) -> f64 {
        let n = self.skills.len().max(1) as f64;
        ratings
            .iter()
            .zip(&self.skills)
            .map(|(r, s)| (r - s).abs())
            .sum::<f64>()
            / n
    }
}

/// One match as it formed.
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    /// Simulated seconds (from the record's `matchedAt`).
    pub formed_at: f64,
    /// Games per player on average when it formed.
    pub games_at: f64,
    /// Highest minus lowest true skill.
    pub true_spread: f64,
    /// The record's spread (of the ratings used).
    pub rating_spread: f64,
    /// Worlds with teams: highest minus lowest team average true skill.
    pub true_team_difference: Option<f64>,
    /// The same in the ratings used.
    pub rating_team_difference: Option<f64>,
    /// Mean |rating used − true skill| of its players.
    pub error: f64,
}

/// What one lane did.
#[derive(Debug, Clone)]
pub struct LaneResult {
    pub label: String,
    /// The rule set's file and label.
    pub file: String,
    pub rule_set: String,
    pub variant: Variant,
    /// (games per player on average, MAE of the ratings matching uses).
    pub curve: Vec<(f64, f64)>,
    pub matches: Vec<Played>,
    /// Every matched join's wait (simulated s).
    pub waits: Vec<f64>,
    /// Games each player played.
    pub games: Vec<u32>,
    pub results: u64,
    /// Matches whose record's ratings are not what the simulator expected
    /// (the player's latest result's value, or the claim).
    pub used_mismatches: u64,
    /// Results whose `before` differs from the expected rating.
    pub before_mismatches: u64,
    /// The ratings store at the end against the tracked ratings: entries
    /// read, and those that disagree (or are missing).
    pub store_entries: usize,
    pub store_mismatches: usize,
    pub anomalies: Anomalies,
    pub failures: u64,
    pub first_error: Option<String>,
    pub ticks: Ticks,
    /// Simulated seconds when the target was reached, and at the end.
    pub stopped_at: Option<f64>,
    pub ended_at: f64,
    pub notes: Vec<String>,
    /// Why the run did not keep up with the clock, if it did not.
    pub lagging: Option<String>,
}

/// What a ratings simulation produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub lanes: Vec<LaneResult>,
    pub population: Population,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
    /// (label, file, world description, updates description) per rule set.
    pub rule_sets: Vec<(String, String, String, String)>,
}

/// The rule set `rs` played as `variant`: for the variants without updates
/// the driven world's `rating.updates` is `{"system": "none"}`.
pub fn variant_rule_set(rs: &RuleSet, variant: Variant) -> Result<RuleSet, String> {
    let mut out = rs.clone();
    out.label = format!("{} {}", rs.label, variant.describe());
    if variant == Variant::Updates {
        return Ok(out);
    }
    let mut doc: Value = serde_json::from_str(&rs.text).map_err(|e| e.to_string())?;
    let world = doc
        .get_mut("worlds")
        .and_then(Value::as_array_mut)
        .and_then(|ws| {
            ws.iter_mut()
                .find(|w| w.get("name").and_then(Value::as_str) == Some(rs.world.as_str()))
        })
        .and_then(|w| w.get_mut("rating"))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            format!(
                "rule set {}: world {} has no rating section",
                rs.file, rs.world
            )
        })?;
    world.insert("updates".into(), serde_json::json!({"system": "none"}));
    out.text = doc.to_string();
    out.notes.push(format!(
        "{}: rating.updates replaced by {{\"system\": \"none\"}} ({})",
        rs.world,
        variant.describe()
    ));
    Ok(out)
}

/// The driven world of `rs` as the core reads it, and how its results
/// move ratings; refuses a world that is not rated or does not update.
pub fn rated_world(rs: &RuleSet) -> Result<(World, String, (f64, f64)), String> {
    let env = Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: 900,
        instant_match: true,
    };
    let (settings, world) = rs.settings(&env, "simcheck")?;
    let range = (settings.ratings.min, settings.ratings.max);
    let MatchMode::Rating(rules) = &world.mode else {
        return Err(format!(
            "rule set {}: the ratings scenario needs a rated world; {} is FIFO",
            rs.file, world.name
        ));
    };
    let Some(u) = rules.updates else {
        return Err(format!(
            "rule set {}: world {} updates no ratings (rating.updates system none); \
             the ratings scenario compares its updates with none",
            rs.file, world.name
        ));
    };
    let system = match u.system {
        shared::RatingSystem::WengLin { beta } => format!(
            "Weng-Lin, beta {}, initial uncertainty {}",
            crate::oracle::trim_float(beta),
            crate::oracle::trim_float(u.initial_uncertainty)
        ),
        shared::RatingSystem::Elo { k } => format!("Elo, k {}", crate::oracle::trim_float(k)),
        shared::RatingSystem::Glicko2 { tau } => format!(
            "Glicko-2, tau {}, initial deviation {}",
            crate::oracle::trim_float(tau),
            crate::oracle::trim_float(u.initial_uncertainty)
        ),
        shared::RatingSystem::TrueSkill {
            beta,
            draw_probability,
        } => format!(
            "TrueSkill, beta {}, initial uncertainty {}, draw probability {}",
            crate::oracle::trim_float(beta),
            crate::oracle::trim_float(u.initial_uncertainty),
            crate::oracle::trim_float(draw_probability)
        ),
    };
    let system = if u.conservative_k > 0.0 {
        format!(
            "{system}; matching uses mean − {}·uncertainty",
            crate::oracle::trim_float(u.conservative_k)
        )
    } else {
        format!("{system}; matching uses the mean")
    };
    Ok((world, system, range))
}

/// Runs every rule set three ways ([`Variant`]) on one population.
pub async fn simulate(config: &Config) -> Result<Outcome, String> {
    if config.rule_sets.is_empty() {
        return Err("--ratings: no rule set".into());
    }
    let mut range = (f64::NEG_INFINITY, f64::INFINITY);
    let mut described = Vec::new();
    for rs in &config.rule_sets {
        let (world, system, (lo, hi)) = rated_world(rs)?;
        range = (range.0.max(lo), range.1.min(hi));
        described.push((
            rs.label.clone(),
            rs.file.clone(),
            crate::rules::describe(&world),
            system,
        ));
    }
    let population = Arc::new(Population::generate(
        config.players,
        config.mean,
        config.sd,
        config.seed,
        range,
    )?);
    let mut specs = Vec::new();
    let mut meta = Vec::new();
    for (i, rs) in config.rule_sets.iter().enumerate() {
        for v in Variant::ALL {
            let vrs = variant_rule_set(rs, v)?;
            specs.push((vrs.label.clone(), vrs.clone(), format!("r{i}{}", v.tag())));
            meta.push((rs.file.clone(), rs.label.clone(), v, vrs.notes.clone()));
        }
    }
    let (lanes, servers) =
        play::start(&specs, config.speed, &config.redis_server, &config.work_dir).await?;
    let params = Arc::new(config.clone());
    let handles: Vec<_> = lanes
        .into_iter()
        .zip(meta)
        .map(|(lane, (file, rule_set, variant, notes))| {
            tokio::spawn(drive(
                lane,
                variant,
                (file, rule_set, notes),
                population.clone(),
                params.clone(),
            ))
        })
        .collect();
    let (results, measured_speed, clock_error) = servers.collect(handles, |r| &mut r.notes).await?;
    Ok(Outcome {
        lanes: results,
        population: (*population).clone(),
        measured_speed,
        clock_error,
        rule_sets: described,
    })
}

/// What a lane's tasks share.
struct Ctx {
    store: MatchStore,
    world: World,
    clock: SimClock,
    variant: Variant,
    population: Arc<Population>,
    config: Arc<Config>,
    model: Performance,
    state: Mutex<State>,
    wake: Vec<Notify>,
    stop: watch::Sender<bool>,
    permits: Semaphore,
}

struct State {
    rating: Vec<f64>,
    games: Vec<u32>,
    /// Fake Unix ms each player's latest join was sent.
    joined_ms: Vec<f64>,
    total_games: u64,
    checkpoints: Vec<f64>,
    curve: Vec<(f64, f64)>,
    matches: Vec<Played>,
    waits: Vec<f64>,
    results: u64,
    used_mismatches: u64,
    before_mismatches: u64,
    anomalies: Anomalies,
    failures: u64,
    first_error: Option<String>,
    stopped_at: Option<f64>,
    join_lag: Vec<f64>,
}

impl State {
    fn fail(&mut self, what: String) {
        self.failures += 1;
        self.first_error.get_or_insert(what);
    }

    fn mean_games(&self) -> f64 {
        self.total_games as f64 / self.rating.len().max(1) as f64
    }
}

/// The checkpoints 0, CHECKPOINT, 2·CHECKPOINT, … below `games`, and `games`.
pub fn checkpoints(games: f64) -> Vec<f64> {
    let mut out: Vec<f64> = (0..)
        .map(|k| f64::from(k) * CHECKPOINT)
        .take_while(|g| *g < games - 1e-9)
        .collect();
    out.push(games);
    out
}

async fn drive(
    lane: play::Lane,
    variant: Variant,
    (file, rule_set, notes): (String, String, Vec<String>),
    population: Arc<Population>,
    config: Arc<Config>,
) -> LaneResult {
    let n = population.skills.len();
    let initial = match variant {
        Variant::Known => population.skills.clone(),
        _ => vec![config.initial; n],
    };
    let mut checkpoints = checkpoints(config.games);
    checkpoints.reverse();
    let (stop, _) = watch::channel(false);
    let ctx = Arc::new(Ctx {
        store: lane.store.clone(),
        world: lane.world.clone(),
        clock: lane.clock,
        variant,
        population: population.clone(),
        config: config.clone(),
        model: Performance {
            noise: config.noise,
            seed: config.seed,
        },
        state: Mutex::new(State {
            curve: Vec::new(),
            rating: initial,
            games: vec![0; n],
            joined_ms: vec![0.0; n],
            total_games: 0,
            checkpoints,
            matches: Vec::new(),
            waits: Vec::new(),
            results: 0,
            used_mismatches: 0,
            before_mismatches: 0,
            anomalies: Anomalies::default(),
            failures: 0,
            first_error: None,
            stopped_at: None,
            join_lag: Vec::new(),
        }),
        wake: (0..n).map(|_| Notify::new()).collect(),
        stop,
        permits: Semaphore::new(config.in_flight.max(1)),
    });
    {
        let mut s = lock(&ctx.state);
        let mae = population.mae(&s.rating);
        s.checkpoints.pop();
        s.curve.push((0.0, mae));
    }
    // Every player has its connection before anything starts.
    for p in &population.ids {
        if let Err(e) = play::connect(&ctx.store, p).await {
            lock(&ctx.state).fail(format!("connection of {p}: {e}"));
        }
    }

    let (formed_tx, formed_rx) = mpsc::unbounded_channel::<MatchRecord>();
    let (tick_stop_tx, tick_stop_rx) = watch::channel(false);
    let (done_tx, _done_rx) = watch::channel(0.0);
    let ticker = play::spawn_ticker(
        lane.matcher.clone(),
        lane.clock,
        formed_tx.clone(),
        done_tx,
        tick_stop_rx,
    );
    let interval = ctx.store.settings().heartbeat_interval.as_secs_f64();
    let heartbeats = play::spawn_heartbeats(
        ctx.store.clone(),
        lane.clock,
        population.ids.clone(),
        interval,
        tick_stop_tx.subscribe(),
    );
    let coordinator = tokio::spawn(coordinate(ctx.clone(), formed_rx));
    let players: Vec<_> = (0..n)
        .map(|i| tokio::spawn(player(ctx.clone(), i, formed_tx.clone())))
        .collect();
    drop(formed_tx);
    for p in players {
        if let Err(e) = p.await {
            lock(&ctx.state).fail(format!("a player task failed: {e}"));
        }
    }
    tick_stop_tx.send_replace(true);
    let ticks = ticker.await.unwrap_or_default();
    match heartbeats.await {
        Ok(failed) if failed.count > 0 => {
            let mut s = lock(&ctx.state);
            s.failures += failed.count;
            s.first_error = s.first_error.take().or(failed.examples.first().cloned());
        }
        Ok(_) => {}
        Err(e) => lock(&ctx.state).fail(format!("the heartbeats failed: {e}")),
    }
    if let Err(e) = coordinator.await {
        lock(&ctx.state).fail(format!("the game servers failed: {e}"));
    }
    let ended_at = ctx.clock.sim_now();

    // The ratings store against what the results said.
    let (store_entries, store_mismatches) = match read_store(&ctx).await {
        Ok(counts) => counts,
        Err(e) => {
            lock(&ctx.state).fail(format!("reading the ratings store: {e}"));
            (0, 0)
        }
    };
    let mut s = lock(&ctx.state);
    let mae = population.mae(&s.rating);
    let at = s.mean_games();
    if s.curve.last().is_none_or(|(g, _)| *g < at - 1e-9) {
        s.curve.push((at, mae));
    }
    let mut notes = notes;
    let lag = crate::stats::Dist::of(&s.join_lag);
    let lagging = match (ticks.lagging(), lag) {
        (Some(why), _) => Some(why),
        (None, Some(d)) if d.p95 > 1.0 => Some(format!(
            "joins were sent up to {:.2} s (p95) after their time",
            d.p95
        )),
        _ => None,
    };
    if let Some(d) = lag {
        notes.push(format!(
            "joins sent late against their time: p50 {:.3} s, p95 {:.3} s, max {:.2} s",
            d.p50, d.p95, d.max
        ));
    }
    notes.push(ticks.describe());
    LaneResult {
        label: lane.label,
        file,
        rule_set,
        variant,
        curve: std::mem::take(&mut s.curve),
        matches: std::mem::take(&mut s.matches),
        waits: std::mem::take(&mut s.waits),
        games: s.games.clone(),
        results: s.results,
        used_mismatches: s.used_mismatches,
        before_mismatches: s.before_mismatches,
        store_entries,
        store_mismatches,
        anomalies: s.anomalies.clone(),
        failures: s.failures + ticks.failures,
        first_error: s.first_error.clone().or_else(|| ticks.first_error.clone()),
        ticks,
        stopped_at: s.stopped_at,
        ended_at,
        notes,
        lagging,
    }
}

/// Reads every ratings-store entry of the lane's world and compares its
/// value with the tracked rating. Returns (entries, mismatches): with
/// updates, every player who played must have one equal to the rating its
/// latest result gave; without, there must be none.
async fn read_store(ctx: &Ctx) -> Result<(usize, usize), String> {
    let all: BTreeMap<String, String> = ctx
        .store
        .command(redis::cmd("HGETALL").arg(ctx.store.keys().player_ratings()))
        .await
        .map_err(|e| e.to_string())?;
    let s = lock(&ctx.state);
    let prefix = format!("{}|", ctx.world.name);
    let mut mismatches = 0;
    let mut seen = HashSet::new();
    for (field, entry) in &all {
        let Some(player) = field.strip_prefix(&prefix) else {
            mismatches += 1;
            continue;
        };
        let Some(&i) = ctx.population.index.get(player) else {
            mismatches += 1;
            continue;
        };
        seen.insert(i);
        let ok = StoredRating::parse(entry).is_some_and(|r| {
            (r.value - s.rating[i]).abs() < 0.01 && r.games == u64::from(s.games[i])
        });
        if !ok || ctx.variant != Variant::Updates {
            mismatches += 1;
        }
    }
    if ctx.variant == Variant::Updates {
        mismatches += (0..s.games.len())
            .filter(|i| s.games[*i] > 0 && !seen.contains(i))
            .count();
    }
    Ok((all.len(), mismatches))
}

/// One player: joins, waits for its game to end, rests, joins again, until
/// the lane has reached its games; then leaves the queue if it waits.
async fn player(ctx: Arc<Ctx>, i: usize, formed: mpsc::UnboundedSender<MatchRecord>) {
    let clock = ctx.clock;
    let id = ctx.population.ids[i].clone();
    let first = uniform(
        &mut stream(ctx.config.seed, 3 << 40 | i as u64, 0),
        (0.0, ctx.config.ramp),
    );
    let mut due = first;
    let mut round = 0u64;
    let game_limit = ctx.config.game_seconds.1 + 120.0;
    loop {
        play::sleep_until(&clock, due).await;
        if *ctx.stop.borrow() {
            return;
        }
        let claimed = match ctx.variant {
            Variant::Known => ctx.population.skills[i],
            _ => ctx.config.initial,
        };
        let outcome = {
            let _permit = ctx.permits.acquire().await;
            let now = clock.sim_now();
            {
                let mut s = lock(&ctx.state);
                s.joined_ms[i] = clock.fake_ms_at(now);
                s.join_lag.push(now - due);
            }
            let input = JoinInput {
                claimed: Rating::new(claimed).ok(),
                ..Default::default()
            };
            ctx.store.join_reply(&ctx.world, &id, &input, false).await
        };
        match outcome {
            Ok(reply) => match reply.outcome {
                JoinOutcome::Queued(_) => {}
                JoinOutcome::Matched {
                    formed: records, ..
                } => {
                    for m in records {
                        let _ = formed.send(m);
                    }
                }
                other => {
                    lock(&ctx.state)
                        .anomalies
                        .note(format!("join of {id}: {other:?}"));
                    due = clock.sim_now() + 1.0;
                    continue;
                }
            },
            Err(e) => {
                lock(&ctx.state).fail(format!("join of {id}: {e}"));
                due = clock.sim_now() + 1.0;
                continue;
            }
        }
        // Until the game ends, or the lane stops while this player waits.
        let ended = tokio::select! {
            _ = ctx.wake[i].notified() => true,
            _ = play::stopped(ctx.stop.subscribe()) => false,
        };
        if !ended {
            match ctx.store.leave(&ctx.world, &id).await {
                Ok(LeaveOutcome::Left { .. }) => return,
                Ok(LeaveOutcome::NotQueued { .. }) => {
                    // Matched meanwhile: the game is played out.
                    let limit = clock.sim_now() + game_limit;
                    tokio::select! {
                        _ = ctx.wake[i].notified() => {}
                        _ = play::sleep_until(&clock, limit) => {
                            let status = ctx.store.player_status(&id).await;
                            lock(&ctx.state).anomalies.note(format!(
                                "{id} was neither queued nor in a game when the lane stopped: {status:?}"
                            ));
                        }
                    }
                    return;
                }
                Err(e) => {
                    lock(&ctx.state).fail(format!("leave of {id}: {e}"));
                    return;
                }
            }
        }
        round += 1;
        let rest = uniform(
            &mut stream(ctx.config.seed, 2 << 40 | i as u64, round),
            ctx.config.rest,
        );
        due = clock.sim_now() + rest;
    }
}

/// The game servers: every match formed (from join replies and ticks),
/// once, is played out by its own task.
async fn coordinate(ctx: Arc<Ctx>, mut formed: mpsc::UnboundedReceiver<MatchRecord>) {
    let mut seen = HashSet::new();
    let mut games = tokio::task::JoinSet::new();
    let mut n = 0u64;
    while let Some(record) = formed.recv().await {
        if seen.insert(record.match_id.clone()) {
            n += 1;
            games.spawn(game(ctx.clone(), record, n));
        }
    }
    while let Some(done) = games.join_next().await {
        if let Err(e) = done {
            lock(&ctx.state).fail(format!("a game failed: {e}"));
        }
    }
}

/// One match: assigned, bookkept as it formed, played for its duration,
/// its result reported; the ratings the result made are what its players'
/// next joins must match with.
async fn game(ctx: Arc<Ctx>, record: MatchRecord, n: u64) {
    let clock = ctx.clock;
    if let Err(e) = play::assign(&ctx.store, &record.match_id, n).await {
        lock(&ctx.state).fail(e);
    }
    let pop = &ctx.population;
    let players: Vec<usize> = record
        .participants
        .iter()
        .filter_map(|p| pop.index.get(p.as_str()).copied())
        .collect();
    if players.len() != record.participants.len() {
        lock(&ctx.state).fail(format!("match {} has unknown players", record.match_id));
        return;
    }
    let formed_at = clock.sim_of_fake_ms(record.matched_at as f64);
    {
        let mut s = lock(&ctx.state);
        let mut used = Vec::new();
        for (p, &i) in record.participants.iter().zip(&players) {
            let value = record
                .ratings
                .as_ref()
                .and_then(|r| r.get(p.as_str()))
                .map(|r| r.value());
            if value.is_none_or(|v| (v - s.rating[i]).abs() > 0.01) {
                s.used_mismatches += 1;
                let expected = s.rating[i];
                s.anomalies.note(format!(
                    "match {}: {p} matched with {value:?}, its rating is {expected}",
                    record.match_id
                ));
            }
            used.push(value.unwrap_or(s.rating[i]));
            let wait = (record.matched_at as f64 - s.joined_ms[i]) / 1000.0;
            s.waits.push(wait);
        }
        let skills: Vec<f64> = players.iter().map(|&i| pop.skills[i]).collect();
        let teams: Option<Vec<Vec<usize>>> = record.teams.as_ref().map(|teams| {
            teams
                .iter()
                .map(|t| {
                    t.iter()
                        .filter_map(|p| record.participants.iter().position(|q| q == p))
                        .collect()
                })
                .collect()
        });
        let by_team = |values: &[f64]| {
            teams.as_ref().map(|ts| {
                play::team_difference(
                    &ts.iter()
                        .map(|t| t.iter().map(|&j| values[j]).collect())
                        .collect::<Vec<Vec<f64>>>(),
                )
            })
        };
        let error = used
            .iter()
            .zip(&skills)
            .map(|(u, k)| (u - k).abs())
            .sum::<f64>()
            / skills.len().max(1) as f64;
        let played = Played {
            formed_at,
            games_at: s.mean_games(),
            true_spread: play::spread(&skills),
            rating_spread: play::spread(&used),
            true_team_difference: by_team(&skills),
            rating_team_difference: by_team(&used),
            error,
        };
        s.matches.push(played);
    }

    let duration = uniform(
        &mut stream(ctx.config.seed, 1 << 40 | n, 0),
        ctx.config.game_seconds,
    );
    play::sleep_until(&clock, formed_at + duration).await;
    let perf: BTreeMap<PlayerId, f64> = {
        let s = lock(&ctx.state);
        record
            .participants
            .iter()
            .zip(&players)
            .map(|(p, &i)| (p.clone(), ctx.model.of(pop.skills[i], i, s.games[i])))
            .collect()
    };
    let report = play::report_for(&record, &perf);
    let mut outcome = None;
    for attempt in 0..3 {
        match use_cases::report_result(&ctx.store, &record.match_id, &report).await {
            Ok(r) => {
                outcome = Some(r);
                break;
            }
            Err(e) if attempt == 2 => {
                lock(&ctx.state).fail(format!("result of {}: {e}", record.match_id))
            }
            Err(_) => {}
        }
    }
    let mut s = lock(&ctx.state);
    match outcome {
        Some(ResultReport::Finished(m)) => {
            s.results += 1;
            let changes = m.lifecycle.rating_changes.unwrap_or_default();
            if ctx.variant == Variant::Updates && changes.len() != players.len() {
                s.anomalies.note(format!(
                    "result of {}: {} rating changes for {} players",
                    record.match_id,
                    changes.len(),
                    players.len()
                ));
            }
            if ctx.variant != Variant::Updates && !changes.is_empty() {
                s.anomalies.note(format!(
                    "result of {} changed ratings in a world without updates",
                    record.match_id
                ));
            }
            for (p, &i) in record.participants.iter().zip(&players) {
                if let Some(c) = changes.get(p) {
                    if (c.before - s.rating[i]).abs() > 0.01 {
                        s.before_mismatches += 1;
                    }
                    s.rating[i] = c.after;
                }
                s.games[i] += 1;
            }
        }
        Some(other) => {
            s.fail(format!("result of {}: {other:?}", record.match_id));
            for &i in &players {
                s.games[i] += 1;
            }
        }
        None => {}
    }
    s.total_games += players.len() as u64;
    let at = s.mean_games();
    while s.checkpoints.last().is_some_and(|c| at >= *c - 1e-9) {
        let c = s.checkpoints.pop().unwrap_or(at);
        let mae = pop.mae(&s.rating);
        s.curve.push((c, mae));
    }
    if at >= ctx.config.games - 1e-9 && s.stopped_at.is_none() {
        s.stopped_at = Some(clock.sim_now());
        ctx.stop.send_replace(true);
    }
    drop(s);
    for &i in &players {
        ctx.wake[i].notify_one();
    }
}
