//! Row 13: role queues (docs/rules.md, *Role queues*) with block lists, in
//! a 5 v 5 FIFO world whose quota rule asks each team for one tank, one
//! healer and three damage players; one player in ten avoids ten others,
//! as in row 12 (`blockLists.maxEntries` 100).
//!
//! * 13a: a join's cost inside Redis with 1 M waiting ÷ with 1 k waiting
//!   (quick: 100 k): probes offering roles as the population does join
//!   with instant matching off, so they queue (as row 12's do), and leave
//!   again after the timed batch;
//! * 13b: one matcher call with 1 M waiting, inside Redis: 50 anchors,
//!   oldest first, each reading every role's oldest tickets (`attr-values`)
//!   and kept clear of the pairs of the match it fills;
//! * 13c (info): the same call in the same world and population without
//!   the quota rule (the roles are still declared and carried, nothing
//!   enforces them), what 13b is compared with.
//!
//! The populations are filled through real joins (64 at a time) and real
//! avoid-list writes: a player's first role is a tank for 15 %, a healer
//! for 20 % and damage for 65 %; one in five also offers one of the other
//! two roles (either, alike).

use std::time::Instant;

use integration_tests::RedisServer;
use shared::store::JoinInput;
use shared::{MatchStore, PlayerId, World};

use crate::attributes::uniform;
use crate::blocks::{avoided_indices, AVOIDER_EVERY};
use crate::common::{raw_connection, Config, Ctx, Res};
use crate::report::{count, dur, Report, Table, Verdict};
use crate::scaled::{
    fill, interleaved_join_cost, join_ratio_check, matcher_calls, population_store, queue,
};

const WORLD: &str = "roles";
const ROLES: [&str; 3] = ["tank", "healer", "damage"];
/// Cumulative shares of the first role offered, in percent.
const ROLE_SHARES: [u64; 3] = [15, 35, 100];
/// The share of players offering a second role.
const TWO_ROLES: f64 = 0.2;
/// Probes per timed batch of 13a (`scaled::probe_join_cost`).
const PROBES: usize = 200;

/// The row's rule set: the quota rule, or (`quota` false) the same world
/// carrying the roles without it.
fn rules(quota: bool) -> String {
    let mut world = serde_json::json!({
        "name": WORLD, "teamSize": 5, "teams": 2, "ticketTtlSeconds": 86_400
    });
    if quota {
        world["rules"] = serde_json::json!([{
            "name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
                {"value": "tank", "min": 1, "max": 1},
                {"value": "healer", "min": 1, "max": 1},
                {"value": "damage", "min": 3, "max": 3}
            ]
        }]);
    } else {
        world["attributes"] = serde_json::json!(["roles"]);
    }
    serde_json::json!({
        "attributes": {"roles": {"type": "stringList", "values": ROLES, "maxItems": 3, "missing": "refuse"}},
        "blockLists": {"maxEntries": 100},
        "worlds": [world]
    })
    .to_string()
}

/// The roles player `i` offers (see the module doc).
fn roles_of(i: usize) -> Vec<&'static str> {
    let seed = i as u64;
    let share = (uniform(seed) * 100.0) as u64;
    let first = ROLE_SHARES.iter().position(|c| share < *c).unwrap_or(2);
    let mut roles = vec![ROLES[first]];
    if uniform(seed ^ 1 << 40) < TWO_ROLES {
        let other = (first + 1 + (uniform(seed ^ 2 << 40) * 2.0) as usize % 2) % 3;
        roles.push(ROLES[other]);
    }
    roles
}

fn player(i: usize) -> Res<PlayerId> {
    PlayerId::parse(&format!("q{i:07}")).ctx("player id")
}

/// The population index of a player of [`player`].
fn index(p: &PlayerId) -> usize {
    p.as_str()[1..].parse().unwrap_or(usize::MAX)
}

/// Player `i`'s roles as a join passes them.
fn encoded(store: &MatchStore, world: &World, i: usize) -> Res<String> {
    let catalog = &store.settings().attributes;
    Ok(catalog
        .client_attributes(world, Some(&serde_json::json!({"roles": roles_of(i)})))
        .map_err(|e| format!("attributes: {e}"))?
        .encode(catalog))
}

struct Population {
    store: MatchStore,
    world: World,
    n: usize,
}

async fn populate(url: &str, ns: &str, n: usize, quota: bool) -> Res<Population> {
    let (store, world) = population_store(url, ns, &rules(quota), WORLD)?;
    let (s, w) = (store.clone(), world.clone());
    fill(n, move |i| {
        let (store, world) = (s.clone(), w.clone());
        async move {
            let p = player(i)?;
            if i.is_multiple_of(AVOIDER_EVERY) {
                let avoided = avoided_indices(i, n)
                    .into_iter()
                    .map(player)
                    .collect::<Res<Vec<_>>>()?;
                store.set_avoid_list(&p, &avoided).await.ctx("avoid list")?;
            }
            let attrs = encoded(&store, &world, i)?;
            let input = JoinInput {
                attributes: Some(&attrs),
                ..JoinInput::default()
            };
            queue(&store, &world, &p, &input).await
        }
    })
    .await?;
    Ok(Population { store, world, n })
}

/// A match of population `p`: ten players, the rules (the quotas, and the
/// recorded roles against the offers) re-checked by the oracle, and no
/// avoider with a player they avoid.
fn check_match(p: &Population, m: &shared::MatchRecord) -> Res<()> {
    if m.participants.len() != 10 {
        return Err(format!("odd match: {m:?}"));
    }
    shared::rules::recheck(&p.world, &p.store.settings().attributes, m)
        .map_err(|e| format!("a match breaks the rules: {e}"))?;
    for a in &m.participants {
        let i = index(a);
        if !i.is_multiple_of(AVOIDER_EVERY) {
            continue;
        }
        let listed = avoided_indices(i, p.n);
        if let Some(b) = m.participants.iter().find(|b| listed.contains(&index(b))) {
            return Err(format!("{a} avoids {b}, yet they met in {}", m.match_id));
        }
    }
    Ok(())
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let big = if cfg.quick { 100_000 } else { 1_000_000 };
    let reps = if cfg.quick { cfg.reps.min(3) } else { cfg.reps };
    let server = RedisServer::start();
    let result = measure(&server.url(), report, 1_000, big, reps).await;
    drop(server);
    result
}

/// Row 13 at `small` and `big` waiting, `reps` batches and calls.
async fn measure(url: &str, report: &mut Report, small: usize, big: usize, reps: usize) -> Res<()> {
    let mut conn = raw_connection(url).await?;
    let mut pops = Vec::new();
    for (n, quota) in [(small, true), (big, true), (big, false)] {
        eprintln!(
            "  [13] filling {} players, one in ten avoiding ten{} (real joins and writes)",
            count(n as f64),
            if quota { "" } else { ", no quota rule" }
        );
        let t = Instant::now();
        pops.push(populate(url, &format!("q{n}{quota}"), n, quota).await?);
        eprintln!("  [13] filled in {:.1} s", t.elapsed().as_secs_f64());
    }
    // The probes offer roles as the population's first players do.
    let attrs = pops[..2]
        .iter()
        .map(|p| {
            (0..PROBES)
                .map(|k| encoded(&p.store, &p.world, k))
                .collect::<Res<Vec<String>>>()
        })
        .collect::<Res<Vec<_>>>()?;
    let inputs: Vec<Vec<JoinInput>> = attrs
        .iter()
        .map(|list| {
            list.iter()
                .map(|a| JoinInput {
                    attributes: Some(a),
                    ..JoinInput::default()
                })
                .collect()
        })
        .collect();
    let (at_small, at_large, ratio) = interleaved_join_cost(
        &mut conn,
        (&pops[0].store, &pops[0].world, &inputs[0]),
        (&pops[1].store, &pops[1].world, &inputs[1]),
        reps,
    )
    .await?;
    join_ratio_check(
        report,
        &format!(
            "13a. join into a role queue with block lists at {} waiting ÷ at {} (inside Redis)",
            count(big as f64),
            count(small as f64)
        ),
        &at_small,
        &at_large,
        ratio,
    );

    // 13b and 13c: one matcher call with `big` waiting.
    let (p, q) = (&pops[1], &pops[2]);
    let calls = matcher_calls(&mut conn, &p.store, &p.world, reps, |m| {
        if m.roles.is_none() {
            return Err(format!("a role-queue match without roles: {m:?}"));
        }
        check_match(p, m)
    })
    .await
    .map_err(|e| format!("13b: {e}"))?;
    let plain = matcher_calls(&mut conn, &q.store, &q.world, reps, |m| check_match(q, m))
        .await
        .map_err(|e| format!("13c: {e}"))?;
    report.check(
        &format!(
            "13b. role-queue matcher with block lists: one call (50 anchors) with {} waiting, inside Redis \
             (13c, without the quota rule: {})",
            count(p.n as f64),
            dur(plain.inside.median)
        ),
        calls.result(),
        "<= 50 ms",
        Verdict::of(calls.inside.median <= 50_000.0),
    );
    let mut table = Table::new(
        "13. Role queues with block lists (5 v 5 FIFO: 1 tank, 1 healer, 3 damage per team; one player in ten avoiding ten)",
        &format!(
            "Populations filled by real joins and avoid-list writes (instant matching off); first roles tank / healer \
             / damage 15 / 20 / 65 %, one player in five offering a second. 13a: {PROBES} probe joins per batch \
             (roles as the population's, instant matching off: they queue), FCALL time per join (`INFO \
             commandstats`), sizes interleaved over {reps} batches each. 13b: `form_matches`, {reps} calls in a row \
             (each forms ~{} matches of the {} waiting, 50 anchors); every match is re-checked by the rules oracle \
             (quotas, roles against offers) and against the avoid lists. 13c: the same without the quota rule \
             (~{} matches a call).",
            count(calls.formed.median),
            count(p.n as f64),
            count(plain.formed.median)
        ),
        &["what", "median", "min–max"],
    );
    let range = |s: &crate::stats::Summary| format!("{}–{}", dur(s.min), dur(s.max));
    table.row(vec![
        format!("13a. join at {}, inside Redis", count(small as f64)),
        dur(at_small.median),
        range(&at_small),
    ]);
    table.row(vec![
        format!("13a. join at {}, inside Redis", count(big as f64)),
        dur(at_large.median),
        range(&at_large),
    ]);
    table.row(vec![
        "13b. one matcher call, inside Redis".into(),
        dur(calls.inside.median),
        range(&calls.inside),
    ]);
    table.row(vec![
        "13c. the same call without the quota rule, inside Redis".into(),
        dur(plain.inside.median),
        range(&plain.inside),
    ]);
    report.tables.push(table);
    report.note(format!(
        "Role-queue matcher call (first repetition): {}",
        calls.breakdown
    ));
    report.note(format!(
        "The same call without the quota rule (first repetition): {}",
        plain.breakdown
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_population_follows_the_model() {
        let n = 100_000;
        let (mut first, mut two) = ([0usize; 3], 0usize);
        for i in 0..n {
            let roles = roles_of(i);
            first[ROLES.iter().position(|r| *r == roles[0]).unwrap()] += 1;
            if roles.len() == 2 {
                assert_ne!(roles[0], roles[1]);
                two += 1;
            }
            assert!(roles.len() <= 2);
        }
        let share = |c: usize| c as f64 / n as f64;
        assert!((share(first[0]) - 0.15).abs() < 0.01, "{first:?}");
        assert!((share(first[1]) - 0.20).abs() < 0.01, "{first:?}");
        assert!((share(first[2]) - 0.65).abs() < 0.01, "{first:?}");
        assert!((share(two) - TWO_ROLES).abs() < 0.01, "{two}");
        assert_eq!(index(&player(42).unwrap()), 42);
    }

    #[test]
    fn both_rule_sets_parse_and_carry_the_roles() {
        for quota in [true, false] {
            let settings = integration_tests::settings_for(
                "redis://127.0.0.1:1",
                false,
                "t",
                "",
                &[("MM_WORLDS", ""), ("MM_RULES", &rules(quota))],
            );
            let world = settings.worlds.get(WORLD).expect("the world");
            assert_eq!(world.attributes, ["roles"]);
            assert_eq!(world.match_rules.len(), usize::from(quota));
            let encoded = settings
                .attributes
                .client_attributes(world, Some(&serde_json::json!({"roles": roles_of(7)})))
                .unwrap()
                .encode(&settings.attributes);
            assert!(encoded.starts_with("roles="), "{encoded}");
        }
    }

    /// The row end to end at small sizes (what `BENCH_QUICK=1
    /// BENCH_ROWS=13` runs at 1 k and 100 k): every match formed passes
    /// the oracle and the avoid lists, and both checks are reported.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn row_13_runs_at_small_sizes() {
        let server = RedisServer::start();
        let mut report = Report::default();
        measure(&server.url(), &mut report, 300, 3_000, 1)
            .await
            .unwrap();
        assert_eq!(report.checks.len(), 2, "{:?}", report.plain());
        assert!(report.checks.iter().all(|c| c.verdict != Verdict::NotRun));
        assert_eq!(report.tables.len(), 1);
    }
}
