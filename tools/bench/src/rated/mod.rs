//! Row 6: rated matchmaking (`"mode": "rating"`, docs/rules.md).
//!
//! * 6a: a rated join's cost with 1 M waiting ÷ with 1 k waiting (quick:
//!   100 k), the probe rated far outside the population so it never matches;
//! * 6b: one matcher call on a rated world (200 anchors, N = 10) with 1 M
//!   waiting (quick: 100 k), inside Redis;
//! * 6c: rated joins per second at C = 64 ÷ a floor script writing the same
//!   entries (`floor.rs`), in a world where joins do not match.
//!
//! 6a and 6b share one redis-server and the same filled queues (`fill.rs`:
//! raw writes of exactly what `lua/join.lua` writes, checked against a real
//! join); 6c runs on a fresh one.

mod fill;
mod join_cost;
mod matcher;
mod throughput;

use integration_tests::{settings_for, RedisServer};
use shared::config::rules::ANCHOR_RETRY;
use shared::{MatchStore, World};

use crate::common::{configured_world, Config, Ctx, Res};
use crate::report::Report;
use fill::Filled;

/// The rated world's name in every namespace of this row.
const WORLD: &str = "ranked";
/// Players per match.
const TEAM: u32 = 10;
/// Tickets outlive the benchmark (nothing expires while measuring).
pub(crate) const TTL_SECS: u64 = 86_400;
/// The population's tickets joined this long before the fill, so every one
/// of them is due as an anchor (due = joined + the anchor retry).
const JOINED_AGO_MS: u64 = 2_000;
/// The population's rating distribution: N(MEAN, SD) clamped to [0, 2 MEAN].
const MEAN: f64 = 1_500.0;
const SD: f64 = 300.0;

/// Ms after which an anchor that found no match is tried again: the value
/// the core passes to the scripts (join.lua writes due = now + this).
fn retry_ms() -> u64 {
    u64::try_from(ANCHOR_RETRY.as_millis()).unwrap_or(u64::MAX)
}

/// Population player `i`: zero-padded, so the names sort like their tickets
/// (anchors due at the same time are taken in name order by the script).
fn name(i: usize) -> String {
    format!("r{i:07}")
}

/// A uniform number in (0, 1) from `seed` (splitmix64).
fn uniform(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal number from `seed` (Box-Muller).
pub(crate) fn normal(seed: u64) -> f64 {
    let (u1, u2) = (uniform(seed), uniform(seed ^ 0x5555_5555_5555_5555));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The rating of population player `i`: N(1500, 300) clamped to [0, 3000],
/// to one decimal (so the raw fill and a real join store the same score).
fn rating_of(i: usize) -> f64 {
    let r = (MEAN + SD * normal(i as u64)).clamp(0.0, 2.0 * MEAN);
    (r * 10.0).round() / 10.0
}

/// A rated world's rule set (`MM_RULES`): one world, ratings accepted up to
/// 1 000 000 (the 6a probe is rated 100 000).
pub(crate) fn rules(base: f64, max: f64, relax_secs: u64, ttl_secs: u64) -> String {
    serde_json::json!({
        "ratings": { "min": 0, "max": 1_000_000 },
        "worlds": [{
            "name": WORLD,
            "teamSize": TEAM,
            "mode": "rating",
            "ticketTtlSeconds": ttl_secs,
            "rating": {
                "baseWindow": base,
                "widenPerSecond": 0,
                "maxWindow": max,
                "relaxAfterSeconds": relax_secs
            }
        }]
    })
    .to_string()
}

/// A store of namespace `ns` whose only world is the rated one of `rules`.
pub(crate) fn store(url: &str, ns: &str, rules: &str, instant: bool) -> Res<(MatchStore, World)> {
    let store = MatchStore::new(settings_for(
        url,
        false,
        ns,
        "",
        &[
            ("MM_WORLDS", ""),
            ("MM_RULES", rules),
            ("MM_INSTANT_MATCH", if instant { "true" } else { "false" }),
            ("MM_QUEUE_CAPACITY", "0"),
        ],
    ))
    .ctx("build the rated store")?;
    let world = configured_world(&store, WORLD)?;
    if world.rating().is_none() {
        return Err("the rated world is not in rating mode".into());
    }
    Ok((store, world))
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let url = server.url();
    let big = if cfg.quick { 100_000 } else { 1_000_000 };
    // Window 50 around the anchor, never widening or relaxing while the
    // benchmark runs: 6a's probe (rated 100 000) finds nobody, 6b's anchors
    // find groups of 10 in the N(1500, 300) population.
    let rules = rules(50.0, 50.0, TTL_SECS, TTL_SECS);
    let mut sizes = Vec::new();
    for n in [1_000, big] {
        let (store, world) = store(&url, &format!("r{n}"), &rules, true)?;
        sizes.push(Filled::new(store, world, n));
    }
    let mut conn = crate::common::raw_connection(&url).await?;
    fill::check_fill_matches_join(&mut conn, &url, &rules).await?;
    for s in &mut sizes {
        eprintln!(
            "  [6] filling {} rated players",
            crate::report::count(s.n as f64)
        );
        s.fill(&mut conn).await?;
        s.verify(&mut conn).await?;
    }
    join_cost::run(cfg, report, &mut conn, &sizes).await?;
    let large = sizes.pop().ok_or("no sizes")?;
    matcher::run(cfg, report, &mut conn, &large).await?;
    drop(sizes);
    drop(large);
    drop(server);
    throughput::run(cfg, report).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_look_normal() {
        let n = 100_000;
        let r: Vec<f64> = (0..n).map(rating_of).collect();
        let mean = r.iter().sum::<f64>() / n as f64;
        let sd = (r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean - MEAN).abs() < 5.0, "{mean}");
        assert!((sd - SD).abs() < 5.0, "{sd}");
        assert!(r.iter().all(|x| (0.0..=3_000.0).contains(x)));
        assert!(r
            .iter()
            .all(|x| ((x * 10.0).round() / 10.0 - x).abs() < 1e-9));
        assert_eq!(name(42), "r0000042");
    }
}
