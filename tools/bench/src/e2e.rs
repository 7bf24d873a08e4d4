//! Row 4: join -> MATCH_FOUND latency through the local stack (in-process,
//! embedded Redis, free ports) with real WebSocket clients, at offered join
//! rates, with the instant match on and off (the 1-second tick path).
//!
//! A pool of players each holds one WebSocket and a dev token. A scheduler
//! sends joins at the offered rate from idle players; a player is idle again
//! once its join was answered and its MATCH_FOUND arrived. The latency of a
//! match, for each participant, is its MATCH_FOUND arrival time minus the
//! send time of the last join of that match (the join that completed it).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use local_stack::{LocalStack, StackConfig};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{Config, Ctx, Res};

/// The documented client heartbeat interval (`MM_HEARTBEAT_SECS` default).
const HEARTBEAT: Duration = Duration::from_secs(60);
use crate::report::{count, dur, Report, Table, Verdict};
use crate::stats::{percentile, summarize, Summary};

pub(crate) const POOL: usize = 1_500;
const RATES: [u64; 2] = [200, 1_000];

/// What one phase (one rate, one repetition) measured.
#[derive(Default, Clone)]
pub(crate) struct Phase {
    pub(crate) latencies_us: Vec<f64>,
    pub(crate) sent: u64,
    /// Schedule slots with no idle player (the offered rate could not be met).
    starved: u64,
    pub(crate) errors: u64,
    pub(crate) elapsed: Duration,
    /// Join HTTP round trips, µs.
    http_us: Vec<f64>,
    /// Longest gap between two scheduler wake-ups (1 ms apart when on time).
    stall: Duration,
}

#[derive(Default)]
struct State {
    idle: VecDeque<usize>,
    sent_at: Vec<Option<Instant>>,
    sent_phase: Vec<usize>,
    answered: Vec<bool>,
    matched: Vec<bool>,
    /// match id -> (send time of its last join, that join's phase)
    matches: HashMap<String, (Instant, usize)>,
    phases: Vec<Phase>,
    index: HashMap<String, usize>,
    first_error: Option<String>,
}

impl State {
    fn free_if_done(&mut self, i: usize) {
        if self.answered[i] && self.matched[i] {
            self.answered[i] = false;
            self.matched[i] = false;
            self.idle.push_back(i);
        }
    }

    fn on_match_found(&mut self, player: usize, message: &Value, at: Instant) {
        let Some(id) = message["matchId"].as_str() else {
            return;
        };
        if !self.matches.contains_key(id) {
            // First arrival: every participant still waits on this match's join.
            let mut last: Option<(Instant, usize)> = None;
            for p in message["participants"].as_array().into_iter().flatten() {
                let Some(&j) = p.as_str().and_then(|p| self.index.get(p)) else {
                    continue;
                };
                if let Some(t) = self.sent_at[j] {
                    if last.is_none_or(|(l, _)| t > l) {
                        last = Some((t, self.sent_phase[j]));
                    }
                }
            }
            let Some(last) = last else { return };
            self.matches.insert(id.to_owned(), last);
        }
        let (last, phase) = self.matches[id];
        if let Some(ph) = self.phases.get_mut(phase) {
            ph.latencies_us
                .push(at.saturating_duration_since(last).as_secs_f64() * 1e6);
        }
        self.matched[player] = true;
        self.free_if_done(player);
    }
}

pub(crate) struct Pool {
    tokens: Vec<String>,
    state: Arc<Mutex<State>>,
    readers: Vec<JoinHandle<()>>,
}

/// Aborts a task when dropped: aborting a socket's reader also ends its
/// heartbeat (a dropped `JoinHandle` leaves the task running: the first
/// stack's clients kept sending heartbeats after it was stopped).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panicking reader must not stop the benchmark: the data is still usable.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    pub(crate) async fn connect(stack: &LocalStack, size: usize, tag: &str) -> Res<Self> {
        let mut tokens = Vec::with_capacity(size);
        let mut index = HashMap::new();
        for i in 0..size {
            let id = format!("{tag}-p{i}");
            tokens.push(
                stack
                    .issuer
                    .mint(&id, Duration::from_secs(3_600))
                    .ctx("mint a dev token")?,
            );
            index.insert(id, i);
        }
        let state = Arc::new(Mutex::new(State {
            idle: (0..size).collect(),
            sent_at: vec![None; size],
            sent_phase: vec![0; size],
            answered: vec![false; size],
            matched: vec![false; size],
            index,
            ..Default::default()
        }));
        let url = stack.websocket_url.clone();
        let sockets: Vec<Res<_>> = futures_util::stream::iter(tokens.iter().cloned().enumerate())
            .map(|(i, token)| {
                let url = format!("{url}?token={token}");
                async move {
                    let (socket, _) = tokio_tungstenite::connect_async(url)
                        .await
                        .ctx("WebSocket connect")?;
                    Ok((i, socket))
                }
            })
            .buffer_unordered(32)
            .collect()
            .await;
        let mut readers = Vec::with_capacity(size);
        for s in sockets {
            let (i, socket) = s?;
            let state = state.clone();
            readers.push(tokio::spawn(async move {
                let (mut write, mut read) = socket.split();
                // Heartbeats, as every client must send them: without them
                // the registrations lapse after the presence timeout (150 s)
                // and later runs' matches reach nobody.
                let heartbeat = AbortOnDrop(tokio::spawn(async move {
                    let mut every = tokio::time::interval(HEARTBEAT);
                    every.tick().await;
                    loop {
                        every.tick().await;
                        let ping = Message::Text(r#"{"action":"ping"}"#.into());
                        if write.send(ping).await.is_err() {
                            break;
                        }
                    }
                }));
                while let Some(Ok(msg)) = read.next().await {
                    let Message::Text(text) = msg else { continue };
                    let at = Instant::now();
                    let Ok(value) = serde_json::from_str::<Value>(&text) else {
                        continue;
                    };
                    if value["type"] == "MATCH_FOUND" {
                        lock(&state).on_match_found(i, &value, at);
                    }
                }
                drop(heartbeat);
            }));
        }
        Ok(Self {
            tokens,
            state,
            readers,
        })
    }

    /// Offers joins at `rate` per second for `secs`, then waits `drain` for
    /// the last pushes.
    pub(crate) async fn phase(
        &self,
        http: &reqwest::Client,
        join_url: &str,
        rate: u64,
        secs: u64,
        drain: Duration,
    ) -> Phase {
        let phase_no = {
            let mut st = lock(&self.state);
            st.phases.push(Phase::default());
            st.phases.len() - 1
        };
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut slots = 0u64;
        let mut last_wake = Instant::now();
        let mut stall = Duration::ZERO;
        while Instant::now() < end {
            tick.tick().await;
            stall = stall.max(last_wake.elapsed());
            last_wake = Instant::now();
            let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
            while slots < due {
                slots += 1;
                let next = {
                    let mut st = lock(&self.state);
                    match st.idle.pop_front() {
                        Some(i) => {
                            st.sent_at[i] = Some(Instant::now());
                            st.sent_phase[i] = phase_no;
                            st.phases[phase_no].sent += 1;
                            Some(i)
                        }
                        None => {
                            st.phases[phase_no].starved += 1;
                            None
                        }
                    }
                };
                let Some(i) = next else { continue };
                let req = http
                    .post(join_url)
                    .header("authorization", format!("Bearer {}", self.tokens[i]))
                    .header("content-type", "application/json")
                    .body(r#"{"worldType":"world1"}"#);
                let state = self.state.clone();
                tokio::spawn(async move {
                    let t = Instant::now();
                    let outcome = match req.send().await {
                        Ok(res) if res.status().is_success() => {
                            let _ = res.bytes().await;
                            Ok(())
                        }
                        Ok(res) => {
                            let status = res.status();
                            Err(format!(
                                "join answered {status}: {}",
                                res.text().await.unwrap_or_default()
                            ))
                        }
                        Err(e) => Err(format!("join request: {e}")),
                    };
                    let http_us = t.elapsed().as_secs_f64() * 1e6;
                    let mut st = lock(&state);
                    st.phases[phase_no].http_us.push(http_us);
                    st.answered[i] = true;
                    if let Err(e) = outcome {
                        st.phases[phase_no].errors += 1;
                        st.first_error.get_or_insert(e);
                        // Not queued: it will get no MATCH_FOUND.
                        st.matched[i] = true;
                    }
                    st.free_if_done(i);
                });
            }
        }
        let elapsed = start.elapsed();
        tokio::time::sleep(drain).await;
        let mut st = lock(&self.state);
        st.phases[phase_no].elapsed = elapsed;
        st.phases[phase_no].stall = stall;
        st.phases[phase_no].clone()
    }

    pub(crate) fn first_error(&self) -> Option<String> {
        lock(&self.state).first_error.clone()
    }

    pub(crate) fn close(self) {
        for r in self.readers {
            r.abort();
        }
    }
}

struct Result1 {
    p50: Vec<f64>,
    p99: Vec<f64>,
    max: Vec<f64>,
    rate: Vec<f64>,
    latencies: usize,
    starved: u64,
    errors: u64,
    http_p99: Vec<f64>,
    stall_ms: Vec<f64>,
    over_20ms: usize,
    warnings: std::collections::BTreeMap<String, u64>,
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    crate::warnings::install();
    let reps = if cfg.quick { 1 } else { cfg.reps };
    let secs = cfg.e2e_secs;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(256)
        .build()
        .ctx("HTTP client")?;
    let mut results: Vec<(bool, u64, Result1)> = Vec::new();
    for instant in [true, false] {
        let vars: Vec<(&str, String)> = vec![
            ("MM_HTTP_ADDR", "127.0.0.1:0".into()),
            ("MM_WS_ADDR", "127.0.0.1:0".into()),
            ("MM_WORLDS", "world1:3".into()),
            ("MM_INSTANT_MATCH", instant.to_string()),
            ("RUST_LOG", "warn".into()),
        ];
        let stack = start_stack(&vars).await?;
        let tag = if instant { "inst" } else { "tick" };
        eprintln!(
            "  [4] instant match {instant}: minting {POOL} tokens, connecting {POOL} WebSockets"
        );
        let pool = Pool::connect(&stack, POOL, tag).await?;
        let join_url = format!("{}/v1/matching/join", stack.http_url);
        let drain = match (instant, cfg.quick) {
            (true, _) => Duration::from_millis(500),
            (false, true) => Duration::from_millis(1_500),
            (false, false) => Duration::from_millis(2_500),
        };
        for rate in RATES {
            let mut r = Result1 {
                p50: vec![],
                p99: vec![],
                max: vec![],
                rate: vec![],
                latencies: 0,
                starved: 0,
                errors: 0,
                http_p99: vec![],
                stall_ms: vec![],
                over_20ms: 0,
                warnings: Default::default(),
            };
            crate::warnings::take();
            for rep in 0..reps {
                eprintln!(
                    "  [4] instant match {instant}, {rate} joins/s offered for {secs} s ({}/{reps})",
                    rep + 1
                );
                let ph = pool.phase(&http, &join_url, rate, secs, drain).await;
                let mut sorted = ph.latencies_us.clone();
                sorted.sort_by(f64::total_cmp);
                r.p50.push(percentile(&sorted, 0.50));
                r.p99.push(percentile(&sorted, 0.99));
                r.max.push(sorted.last().copied().unwrap_or(f64::NAN));
                r.rate.push(ph.sent as f64 / ph.elapsed.as_secs_f64());
                r.latencies += sorted.len();
                r.over_20ms += sorted.iter().filter(|l| **l > 20_000.0).count();
                let mut http = ph.http_us.clone();
                http.sort_by(f64::total_cmp);
                r.http_p99.push(percentile(&http, 0.99));
                r.stall_ms.push(ph.stall.as_secs_f64() * 1e3);
                r.starved += ph.starved;
                r.errors += ph.errors;
            }
            r.warnings = crate::warnings::take();
            results.push((instant, rate, r));
        }
        if let Some(e) = pool.first_error() {
            report.note(format!(
                "End to end (instant match {instant}): first join error: {e}"
            ));
        }
        pool.close();
        stack.stop().await;
    }

    let mut table = Table::new(
        "4. End to end: join -> MATCH_FOUND through the local stack",
        &format!(
            "In-process local stack (HTTP + WebSocket API Gateway emulation, the Lambda handlers, the 1 s matcher \
             loop, embedded redis-server) with {POOL} real WebSocket clients (tokio-tungstenite) and dev tokens; \
             joins are real HTTP requests at the offered rate for {secs} s per run, {reps} run(s) per row; \
             median (min–max) over the runs of each run's percentile. Latency = MATCH_FOUND arrival at each \
             participant minus the send time of the match's last join. \"> 20 ms\": latencies above 20 ms over \
             all runs. \"join HTTP p99\": the join request's own round trip. \"client stall\": the longest the \
             bench's 1 ms scheduler went without running (the process was not scheduled: CPU starvation). \
             Everything, clients included, shares the machine's 2 cores."
        ),
        &[
            "path",
            "offered",
            "achieved joins/s",
            "latencies",
            "p50",
            "p99",
            "max",
            "> 20 ms",
            "join HTTP p99",
            "client stall (max)",
            "target",
            "result",
        ],
    );
    for (instant, rate, r) in &results {
        let (p50, p99, max, achieved) = (
            summarize(&r.p50),
            summarize(&r.p99),
            summarize(&r.max),
            summarize(&r.rate),
        );
        let (target, limit_us) = if *instant {
            ("p99 <= 20 ms", 20_000.0)
        } else {
            ("p99 <= 1.1 s (one tick)", 1_100_000.0)
        };
        let rate_ok = achieved.median >= 0.95 * *rate as f64;
        let ok = p99.median <= limit_us && r.errors == 0 && r.latencies > 0;
        let verdict = Verdict::of(ok);
        let path = if *instant {
            "instant match on"
        } else {
            "instant match off (1 s tick)"
        };
        report.check(
            &format!("4. {path}, {rate} joins/s: join -> MATCH_FOUND p99"),
            format!(
                "{} (p50 {}, max {}; achieved {}/s{})",
                dur(p99.median),
                dur(p50.median),
                dur(max.median),
                count(achieved.median),
                if rate_ok {
                    ""
                } else {
                    ", below the offered rate"
                }
            ),
            target,
            verdict,
        );
        let range = |s: &Summary| format!("{} ({}–{})", dur(s.median), dur(s.min), dur(s.max));
        table.row(vec![
            path.into(),
            format!("{rate}/s"),
            format!(
                "{} ({}–{}){}{}",
                count(achieved.median),
                count(achieved.min),
                count(achieved.max),
                if r.starved > 0 {
                    format!(", {} slots without an idle player", count(r.starved as f64))
                } else {
                    String::new()
                },
                if r.errors > 0 {
                    format!(", {} errors", r.errors)
                } else {
                    String::new()
                }
            ),
            count(r.latencies as f64),
            range(&p50),
            range(&p99),
            range(&max),
            format!(
                "{} ({:.2}%)",
                count(r.over_20ms as f64),
                100.0 * r.over_20ms as f64 / r.latencies.max(1) as f64
            ),
            range(&summarize(&r.http_p99)),
            format!("{:.0} ms", summarize(&r.stall_ms).max),
            target.into(),
            verdict.label().into(),
        ]);
    }
    report.tables.push(table);
    for (instant, rate, r) in &results {
        for (what, n) in &r.warnings {
            report.note(format!(
                "End to end, instant match {instant}, {rate}/s: the stack logged {n} x `{what}`"
            ));
        }
    }
    Ok(())
}

/// A local stack configured by exactly `vars` (nothing from the environment).
pub async fn start_stack(vars: &[(&str, String)]) -> Res<LocalStack> {
    let config = StackConfig::from_lookup(|k| {
        vars.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
    })
    .ctx("local stack configuration")?;
    LocalStack::start(config).await.ctx("start the local stack")
}
