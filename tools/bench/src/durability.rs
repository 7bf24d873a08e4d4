//! Row 9: what durability across a failover costs (`MM_REPLICA_ACKS`,
//! docs/hardening-faults.md#failover). A primary with one real replica
//! (`--replicaof`, synced) on this machine; the same measurements with the
//! default mode (`auto`: one acknowledgement, `WAIT 1`, after every write a
//! client is told) and with it `off`, alternating run by run:
//!
//! - row 3's call (10 000 matches from 30 000 waiting, one `form_matches`),
//!   client round trip;
//! - row 4's join -> MATCH_FOUND through the local stack at 1 000 joins/s,
//!   instant match on.

use std::time::{Duration, Instant};

use integration_tests::{settings_for, RedisServer};
use shared::MatchStore;

use crate::common::{configured_world, micros_since, raw_connection, Config, Ctx, Res};
use crate::e2e::{start_stack, Pool, POOL};
use crate::matcher::{fresh_queue, PLAYERS, TEAM};
use crate::report::{count, dur, Report, Table, Verdict};
use crate::stats::{percentile, summarize};

const MODES: [&str; 2] = ["off", "auto"];
const RATE: u64 = 1_000;

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let primary = RedisServer::start();
    let _replica = RedisServer::start_replica_of(&primary);
    let url = primary.url();
    let reps = if cfg.quick { cfg.reps.min(3) } else { cfg.reps };

    // Row 3's call, both modes on the same pair, alternately.
    let stores: Vec<MatchStore> = MODES
        .iter()
        .map(|mode| {
            MatchStore::new(settings_for(
                &url,
                false,
                "bench",
                "world1:3",
                &[
                    ("MM_INSTANT_MATCH", "false"),
                    ("MM_QUEUE_CAPACITY", "0"),
                    ("MM_REPLICA_ACKS", mode),
                ],
            ))
            .ctx("build the store")
        })
        .collect::<Res<_>>()?;
    let world = configured_world(&stores[0], "world1")?;
    let mut conn = raw_connection(&url).await?;
    let keys = stores[0].keys().clone();
    for store in &stores {
        store.form_matches(&world, 0).await.ctx("warm-up")?;
    }
    let mut calls: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for rep in 0..reps {
        for (m, store) in stores.iter().enumerate() {
            eprintln!("  [9] matcher call, acks {} ({}/{reps})", MODES[m], rep + 1);
            fresh_queue(&mut conn, &keys).await?;
            let t = Instant::now();
            let batch = store.form_matches(&world, 0).await.ctx("form_matches")?;
            calls[m].push(micros_since(t));
            if batch.matches.len() != PLAYERS / TEAM {
                return Err(format!(
                    "form_matches (acks {}) formed {} matches",
                    MODES[m],
                    batch.matches.len()
                ));
            }
        }
    }
    let acks = stores[1].durability();

    // Row 4 at 1 000 joins/s through the local stack, each mode in turn.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(256)
        .build()
        .ctx("HTTP client")?;
    let mut p99s: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut p50s: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut errors = [0u64; 2];
    for (m, mode) in MODES.iter().enumerate() {
        let ns = format!("bench-e2e-{mode}");
        let vars: Vec<(&str, String)> = vec![
            ("MM_HTTP_ADDR", "127.0.0.1:0".into()),
            ("MM_WS_ADDR", "127.0.0.1:0".into()),
            ("MM_WORLDS", "world1:3".into()),
            ("MM_INSTANT_MATCH", "true".into()),
            ("REDIS_URL", url.clone()),
            ("MM_NAMESPACE", ns),
            ("MM_REPLICA_ACKS", (*mode).into()),
            ("RUST_LOG", "warn".into()),
        ];
        let stack = start_stack(&vars).await?;
        eprintln!("  [9] acks {mode}: connecting {POOL} WebSockets");
        let pool = Pool::connect(&stack, POOL, mode).await?;
        let join_url = format!("{}/v1/matching/join", stack.http_url);
        for rep in 0..reps {
            eprintln!(
                "  [9] acks {mode}, {RATE} joins/s for {} s ({}/{reps})",
                cfg.e2e_secs,
                rep + 1
            );
            let ph = pool
                .phase(
                    &http,
                    &join_url,
                    RATE,
                    cfg.e2e_secs,
                    Duration::from_millis(500),
                )
                .await;
            let mut sorted = ph.latencies_us.clone();
            sorted.sort_by(f64::total_cmp);
            p99s[m].push(percentile(&sorted, 0.99));
            p50s[m].push(percentile(&sorted, 0.50));
            errors[m] += ph.errors;
        }
        if let Some(e) = pool.first_error() {
            report.note(format!("Durability, acks {mode}: first join error: {e}"));
        }
        pool.close();
        stack.stop().await;
    }

    let mut table = Table::new(
        "9. Durability: replica acknowledgements on (auto) vs off",
        &format!(
            "A primary redis-server with one synced replica (--replicaof) on this machine; MM_REPLICA_ACKS \
             auto (WAIT 1 after every write a client is told: {acks:?}) next to off. Row 3's call \
             (10 000 matches from 30 000 waiting, client round trip), {reps} runs each, alternating; row 4 \
             (join -> MATCH_FOUND, instant match on, {RATE} joins/s for {} s, {POOL} WebSockets), {reps} \
             runs per mode; median (min–max) of the runs.",
            cfg.e2e_secs
        ),
        &["measure", "acks off", "acks auto", "auto ÷ off"],
    );
    let call = [summarize(&calls[0]), summarize(&calls[1])];
    let p99 = [summarize(&p99s[0]), summarize(&p99s[1])];
    let p50 = [summarize(&p50s[0]), summarize(&p50s[1])];
    let range =
        |s: &crate::stats::Summary| format!("{} ({}–{})", dur(s.median), dur(s.min), dur(s.max));
    table.row(vec![
        "3. matcher call (client round trip)".into(),
        range(&call[0]),
        range(&call[1]),
        format!("{:.2}x", call[1].median / call[0].median),
    ]);
    table.row(vec![
        format!("4. join -> MATCH_FOUND p99, {RATE}/s"),
        range(&p99[0]),
        range(&p99[1]),
        format!("{:.2}x", p99[1].median / p99[0].median),
    ]);
    table.row(vec![
        format!("4. join -> MATCH_FOUND p50, {RATE}/s"),
        range(&p50[0]),
        range(&p50[1]),
        format!("{:.2}x", p50[1].median / p50[0].median),
    ]);
    report.tables.push(table);
    report.check(
        &format!("9. acks auto, {RATE} joins/s: join -> MATCH_FOUND p99"),
        format!(
            "{} (off: {}; {} errors)",
            dur(p99[1].median),
            dur(p99[0].median),
            count((errors[0] + errors[1]) as f64)
        ),
        "p99 <= 20 ms",
        Verdict::of(p99[1].median <= 20_000.0 && errors == [0, 0]),
    );
    report.check(
        "9. acks auto: row 3's matcher call (info)",
        format!(
            "{} (off: {}, {:.2}x)",
            dur(call[1].median),
            dur(call[0].median),
            call[1].median / call[0].median
        ),
        "info",
        Verdict::Pass,
    );
    Ok(())
}
