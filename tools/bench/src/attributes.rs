//! Row 11: a world with player attributes and four match rules
//! (docs/rules.md, *Attributes and match rules*): the same game mode
//! (equality, 4 modes), a build at least 3 (comparison), a level spread of
//! 10 widening 2/s up to 40 (distance) and a map in common (intersection of
//! up to 4 of 6 maps); a 2 x 5 FIFO world.
//!
//! * 11a: a join's cost inside Redis with 1 M waiting ÷ with 1 k waiting
//!   (quick: 100 k): probes join with instant matching off and leave again
//!   after the timed batch;
//! * 11b: one matcher call (50 anchors, oldest first, each reading at most
//!   256 candidates oldest first and checking the rules on them) with 1 M
//!   waiting, inside Redis.
//!
//! The populations are filled through real joins (64 at a time, instant
//! matching off), with attributes from a fixed model: modes 40 / 30 / 20 /
//! 10 %, builds 0-9 uniform, levels 1-100 uniform, 1-4 maps of 6.

use std::time::Instant;

use integration_tests::RedisServer;
use shared::store::JoinInput;
use shared::{MatchStore, PlayerId, World};

use crate::common::{raw_connection, Config, Ctx, Res};
use crate::report::{count, Report, Table, Verdict};
use crate::scaled::{
    fill, interleaved_join_cost, join_ratio_check, matcher_calls, population_store, queue,
};

const WORLD: &str = "modes";
const MODES: [&str; 4] = ["ffa", "ctf", "duel", "koth"];
/// Cumulative mode shares, in percent.
const MODE_SHARES: [u64; 4] = [40, 70, 90, 100];
const MAPS: [&str; 6] = ["dust", "nuke", "mirage", "inferno", "vertigo", "ancient"];
/// Probes per timed batch of 11a.
const PROBES: usize = 200;

fn rules() -> String {
    serde_json::json!({
        "attributes": {
            "mode": {"type": "string", "values": MODES, "missing": "refuse"},
            "build": {"type": "number", "min": 0, "max": 9, "default": 9},
            "level": {"type": "number", "min": 1, "max": 100, "missing": "refuse"},
            "maps": {"type": "stringList", "values": MAPS, "maxItems": 4}
        },
        "worlds": [{
            "name": WORLD,
            "teamSize": 5,
            "teams": 2,
            "ticketTtlSeconds": 86_400,
            "rules": [
                {"name": "sameMode", "type": "equality", "attribute": "mode"},
                {"name": "recentBuild", "type": "comparison", "attribute": "build", "op": ">=", "value": 3},
                {"name": "levelSpread", "type": "distance", "attribute": "level", "max": 10,
                 "relax": {"perSecond": 2, "limit": 40}},
                {"name": "commonMap", "type": "intersection", "attribute": "maps"}
            ]
        }]
    })
    .to_string()
}

/// A number in [0, 1) from `seed` (splitmix64; rows 11 and 13).
pub fn uniform(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Population player `i`'s attributes (see the module doc).
fn attributes_of(i: usize) -> serde_json::Value {
    let seed = i as u64;
    let share = (uniform(seed) * 100.0) as u64;
    let mode = MODES[MODE_SHARES.iter().position(|c| share < *c).unwrap_or(3)];
    let build = (uniform(seed ^ 1 << 40) * 10.0).floor();
    let level = 1.0 + (uniform(seed ^ 2 << 40) * 100.0).floor().min(99.0);
    let first = (uniform(seed ^ 3 << 40) * 6.0) as usize;
    let listed = 1 + (uniform(seed ^ 4 << 40) * 4.0) as usize;
    let maps: Vec<&str> = (0..listed.min(4)).map(|k| MAPS[(first + k) % 6]).collect();
    serde_json::json!({"mode": mode, "build": build, "level": level, "maps": maps})
}

/// A probe's attributes: a build below the rule's reference, so a probe is
/// filed like any ticket and never matched.
fn probe_attributes() -> serde_json::Value {
    serde_json::json!({"mode": "ffa", "build": 0, "level": 50, "maps": ["dust", "nuke"]})
}

fn encoded(store: &MatchStore, world: &World, value: &serde_json::Value) -> Res<String> {
    let catalog = &store.settings().attributes;
    Ok(catalog
        .client_attributes(world, Some(value))
        .map_err(|e| format!("attributes: {e}"))?
        .encode(catalog))
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
            let attrs = encoded(&store, &world, &attributes_of(i))?;
            let input = JoinInput {
                attributes: Some(&attrs),
                ..JoinInput::default()
            };
            queue(&store, &world, &player(&format!("m{i:07}"))?, &input).await
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
            "  [11] filling {} players with attributes (real joins)",
            count(n as f64)
        );
        let t = Instant::now();
        pops.push(populate(&url, &format!("g{n}"), n).await?);
        eprintln!("  [11] filled in {:.1} s", t.elapsed().as_secs_f64());
    }
    let attrs = pops
        .iter()
        .map(|p| encoded(&p.store, &p.world, &probe_attributes()))
        .collect::<Res<Vec<String>>>()?;
    let inputs: Vec<JoinInput> = attrs
        .iter()
        .map(|a| JoinInput {
            attributes: Some(a),
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
            "11a. join into a world with 4 rules at {} waiting ÷ at 1 k (inside Redis)",
            count(big as f64)
        ),
        &small,
        &large,
        ratio,
    );

    // 11b: one matcher call with `big` waiting; every ticket is due.
    let p = &pops[1];
    let calls = matcher_calls(&mut conn, &p.store, &p.world, reps, |m| {
        if m.participants.len() != 10 {
            return Err(format!("odd match: {m:?}"));
        }
        shared::rules::recheck(&p.world, &p.store.settings().attributes, m)
            .map_err(|e| format!("a match breaks the rules: {e}"))
    })
    .await?;
    report.check(
        &format!(
            "11b. matcher with 4 rules: one call (50 anchors) with {} waiting, inside Redis",
            count(p.n as f64)
        ),
        calls.result(),
        "<= 50 ms",
        Verdict::of(calls.inside.median <= 50_000.0),
    );
    let mut table = Table::new(
        "11. A world with attributes and 4 match rules (2 x 5 FIFO)",
        &format!(
            "Populations filled by real joins (instant matching off) with attributes from a fixed model (modes \
             40/30/20/10 %, builds 0-9, levels 1-100, 1-4 of 6 maps). 11a: {PROBES} probe joins per batch (build 0: \
             never matched), FCALL time per join (`INFO commandstats`), sizes interleaved over {reps} batches \
             each. 11b: `form_matches` with every ticket due, {reps} calls in a row (each takes ~{} of the {} \
             waiting); every match formed is re-checked by the rules oracle.",
            count(calls.formed.median * 10.0),
            count(p.n as f64)
        ),
        &["what", "median", "min–max"],
    );
    calls.rows(&mut table, "11", big, &small, &large);
    report.tables.push(table);
    report.note(format!(
        "Rules matcher call (first repetition): {}",
        calls.breakdown
    ));
    drop(pops);
    drop(server);
    Ok(())
}
