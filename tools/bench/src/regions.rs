//! Row 7: worlds with regions (docs/rules.md, *Regions*), 5 regions, a
//! 2 x 5 FIFO world.
//!
//! * 7a: a join's cost inside Redis with 1 M waiting ÷ with 1 k waiting
//!   (quick: 100 k): probes that measured every region within the cap join
//!   with instant matching off (the ticket is filed in all 5 regions, O(log N)
//!   each) and leave again after the timed batch;
//! * 7b: one matcher call (50 anchors, oldest first, each tried in every
//!   region within its cap) with 1 M waiting, inside Redis.
//!
//! The populations are filled through real joins (64 at a time, instant
//! matching off), with latencies from a fixed model: home regions 40 / 25 /
//! 20 / 10 / 5 %, 15-45 ms to the home region, 40-70 ms more to each
//! neighbouring region (a ring), over 150 ms to the others.

use std::time::Instant;

use integration_tests::RedisServer;
use shared::store::JoinInput;
use shared::{Latencies, MatchStore, PlayerId, World};

use crate::common::{raw_connection, Config, Ctx, Res};
use crate::report::{count, Report, Table, Verdict};
use crate::scaled::{
    fill, interleaved_join_cost, join_ratio_check, matcher_calls, population_store, queue,
};

const WORLD: &str = "geo";
const REGIONS: [&str; 5] = ["na-east", "na-west", "eu", "asia", "oceania"];
/// Cumulative home-region shares, in percent.
const HOMES: [u64; 5] = [40, 65, 85, 95, 100];
/// Probes per timed batch of 7a.
const PROBES: usize = 200;

fn rules() -> String {
    serde_json::json!({
        "worlds": [{
            "name": WORLD,
            "teamSize": 5,
            "teams": 2,
            "ticketTtlSeconds": 86_400,
            "regions": {
                "names": REGIONS,
                "maxLatencyMs": 60,
                "widenPerSecond": 0,
                "maxLatencyCapMs": 150
            }
        }]
    })
    .to_string()
}

/// A number in [0, 1) from `seed` (splitmix64).
fn uniform(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Population player `i`'s latencies (see the module doc).
fn latencies_of(i: usize, world: &World) -> Res<Latencies> {
    let regions = world.regions.as_ref().ok_or("the world has no regions")?;
    let seed = i as u64;
    let share = (uniform(seed) * 100.0) as u64;
    let home = HOMES.iter().position(|c| share < *c).unwrap_or(4);
    let mut map = serde_json::Map::new();
    for (r, name) in REGIONS.iter().enumerate() {
        let hops = (r as i64 - home as i64).unsigned_abs() as usize;
        let hops = hops.min(REGIONS.len() - hops);
        let jitter = uniform(seed ^ (r as u64 + 1) << 32);
        let ms = match hops {
            0 => 15.0 + 30.0 * jitter,
            1 => 55.0 + 30.0 * jitter,
            _ => 160.0 + 80.0 * jitter,
        };
        map.insert((*name).to_owned(), serde_json::json!(ms.round()));
    }
    Latencies::from_value(&serde_json::Value::Object(map), &regions.names).ctx("latencies")
}

/// A probe's latencies: every region within the cap, none within the base
/// cap (so a probe is filed in all 5 regions and never matched).
fn probe_latencies(world: &World) -> Res<Latencies> {
    let regions = world.regions.as_ref().ok_or("the world has no regions")?;
    let map: serde_json::Map<String, serde_json::Value> = REGIONS
        .iter()
        .map(|r| ((*r).to_owned(), serde_json::json!(140)))
        .collect();
    Latencies::from_value(&serde_json::Value::Object(map), &regions.names).ctx("probe latencies")
}

fn player(name: &str) -> Res<PlayerId> {
    PlayerId::parse(name).ctx("player id")
}

struct Population {
    store: MatchStore,
    world: World,
    n: usize,
}

async fn populate(url: &str, ns: &str, n: usize) -> Res<Population> {
    let (store, world) = population_store(url, ns, &rules(), WORLD)?;
    let (s, w) = (store.clone(), world.clone());
    fill(n, move |i| {
        let (store, world) = (s.clone(), w.clone());
        async move {
            let lat = latencies_of(i, &world)?;
            let input = JoinInput {
                latencies: Some(&lat),
                ..JoinInput::default()
            };
            queue(&store, &world, &player(&format!("g{i:07}"))?, &input).await
        }
    })
    .await?;
    Ok(Population { store, world, n })
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let url = server.url();
    let big = if cfg.quick { 100_000 } else { 1_000_000 };
    let reps = if cfg.quick { cfg.reps.min(3) } else { cfg.reps };
    let mut conn = raw_connection(&url).await?;
    let mut pops = Vec::new();
    for n in [1_000, big] {
        eprintln!(
            "  [7] filling {} players over 5 regions (real joins)",
            count(n as f64)
        );
        let t = Instant::now();
        pops.push(populate(&url, &format!("g{n}"), n).await?);
        eprintln!("  [7] filled in {:.1} s", t.elapsed().as_secs_f64());
    }
    let lats = pops
        .iter()
        .map(|p| probe_latencies(&p.world))
        .collect::<Res<Vec<_>>>()?;
    let inputs: Vec<JoinInput> = lats
        .iter()
        .map(|l| JoinInput {
            latencies: Some(l),
            ..JoinInput::default()
        })
        .collect();
    let (small, large, ratio) = interleaved_join_cost(
        &mut conn,
        (
            &pops[0].store,
            &pops[0].world,
            std::slice::from_ref(&inputs[0]),
        ),
        (
            &pops[1].store,
            &pops[1].world,
            std::slice::from_ref(&inputs[1]),
        ),
        reps,
    )
    .await?;
    join_ratio_check(
        report,
        &format!(
            "7a. join with 5 regions at {} waiting ÷ at 1 k (inside Redis)",
            count(big as f64)
        ),
        &small,
        &large,
        ratio,
    );

    // 7b: one matcher call with `big` waiting; every ticket is due.
    let p = &pops[1];
    let calls = matcher_calls(&mut conn, &p.store, &p.world, reps, |m| {
        let worst = m.worst_latency.ok_or("a match without its worst latency")?;
        if worst > 150 || m.participants.len() != 10 {
            return Err(format!("odd match: {m:?}"));
        }
        Ok(())
    })
    .await?;
    report.check(
        &format!("7b. matcher with regions: one call (50 anchors, 5 regions) with {} waiting, inside Redis", count(p.n as f64)),
        calls.result(),
        "<= 50 ms",
        Verdict::of(calls.inside.median <= 50_000.0),
    );
    let mut table = Table::new(
        "7. Worlds with regions (5 regions, 2 x 5 FIFO)",
        &format!(
            "Populations filled by real joins (instant matching off) with latencies from a fixed model (home \
             regions 40/25/20/10/5 %, 15-45 ms home, +40-70 ms to ring neighbours, over 150 ms beyond). 7a: \
             {PROBES} probe joins per batch (every region at 140 ms: filed in all 5, never matched), FCALL time \
             per join (`INFO commandstats`), sizes interleaved over {reps} batches each. 7b: `form_matches` with \
             every ticket due, {reps} calls in a row (each takes ~{} of the {} waiting).",
            count(calls.formed.median * 10.0),
            count(p.n as f64)
        ),
        &["what", "median", "min–max"],
    );
    calls.rows(&mut table, "7", big, &small, &large);
    report.tables.push(table);
    report.note(format!(
        "Regions matcher call (first repetition): {}",
        calls.breakdown
    ));
    drop(pops);
    drop(server);
    Ok(())
}
