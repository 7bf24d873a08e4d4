//! Row 12: block lists (docs/rules.md, *Block lists*) in a 2 x 5 FIFO
//! world where one player in ten avoids ten others (`maxEntries` 20).
//!
//! * 12a: a join's cost inside Redis with 1 M waiting ÷ with 1 k waiting
//!   (quick: 100 k): probes join with instant matching off and leave again
//!   after the timed batch;
//! * 12b: one matcher call with 1 M waiting, inside Redis: the oldest 1 000
//!   tickets (2 000 in a world where nobody avoids anyone) placed one at a
//!   time, each kept clear of the pairs of the match it goes into;
//! * 12c (info): the same call in the same world and population without
//!   block lists, what 12b is compared with.
//!
//! The populations are filled through real joins (64 at a time) and real
//! avoid-list writes (`set_avoid_list`); player `i` avoids when `i` is a
//! multiple of 10, ten players spread over the whole population, so most
//! pairs name a waiting player.

use std::collections::BTreeSet;
use std::time::Instant;

use integration_tests::RedisServer;
use shared::store::JoinInput;
use shared::{MatchStore, PlayerId, World};

use crate::common::{raw_connection, Config, Ctx, Res};
use crate::report::{count, Report, Table, Verdict};
use crate::scaled::{
    fill, interleaved_join_cost, join_ratio_check, matcher_calls, population_store, queue,
};

const WORLD: &str = "arena";
/// Players per avoid list, and one avoider in this many players.
pub const AVOIDED: usize = 10;
pub const AVOIDER_EVERY: usize = 10;
/// Probes per timed batch of 12a.
const PROBES: usize = 200;

fn rules(lists: bool) -> String {
    let mut rules = serde_json::json!({
        "worlds": [{"name": WORLD, "teamSize": 5, "teams": 2, "ticketTtlSeconds": 86_400}]
    });
    if lists {
        rules["blockLists"] = serde_json::json!({"maxEntries": 20});
    }
    rules.to_string()
}

fn player(i: usize) -> Res<PlayerId> {
    PlayerId::parse(&format!("b{i:07}")).ctx("player id")
}

/// The indices of the players avoider `i` of a population of `n` avoids:
/// [`AVOIDED`] of them spread over the whole population (splitmix64);
/// rows 12 and 13.
pub fn avoided_indices(i: usize, n: usize) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut z = i as u64;
    while out.len() < AVOIDED.min(n - 1) {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = z;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let j = ((x ^ (x >> 31)) % n as u64) as usize;
        if j != i {
            out.insert(j);
        }
    }
    out
}

/// Whom avoider `i` of a population of `n` avoids.
fn avoided_by(i: usize, n: usize) -> Res<Vec<PlayerId>> {
    avoided_indices(i, n).into_iter().map(player).collect()
}

struct Population {
    store: MatchStore,
    world: World,
    n: usize,
}

async fn populate(url: &str, ns: &str, n: usize, lists: bool) -> Res<Population> {
    let (store, world) = population_store(url, ns, &rules(lists), WORLD)?;
    let (s, w) = (store.clone(), world.clone());
    fill(n, move |i| {
        let (store, world) = (s.clone(), w.clone());
        async move {
            let p = player(i)?;
            if lists && i % AVOIDER_EVERY == 0 {
                store
                    .set_avoid_list(&p, &avoided_by(i, n)?)
                    .await
                    .ctx("avoid list")?;
            }
            queue(&store, &world, &p, &JoinInput::default()).await
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
    for (n, lists) in [(1_000, true), (big, true), (big, false)] {
        eprintln!(
            "  [12] filling {} players{} (real joins and writes)",
            count(n as f64),
            if lists {
                ", one in ten avoiding ten"
            } else {
                ", no block lists"
            }
        );
        let t = Instant::now();
        pops.push(populate(&url, &format!("k{n}{lists}"), n, lists).await?);
        eprintln!("  [12] filled in {:.1} s", t.elapsed().as_secs_f64());
    }
    let input = JoinInput::default();
    let (small, large, ratio) = interleaved_join_cost(
        &mut conn,
        (&pops[0].store, &pops[0].world, std::slice::from_ref(&input)),
        (&pops[1].store, &pops[1].world, std::slice::from_ref(&input)),
        reps,
    )
    .await?;
    join_ratio_check(
        report,
        &format!(
            "12a. join into a world with block lists at {} waiting ÷ at 1 k (inside Redis)",
            count(big as f64)
        ),
        &small,
        &large,
        ratio,
    );

    // 12b: one matcher call with `big` waiting; every match is re-checked
    // against the lists.
    let p = &pops[1];
    let calls = matcher_calls(&mut conn, &p.store, &p.world, reps, |m| {
        if m.participants.len() != 10 {
            return Err(format!("odd match: {m:?}"));
        }
        let index = |q: &PlayerId| q.as_str()[1..].parse::<usize>().unwrap_or(usize::MAX);
        for a in &m.participants {
            let i = index(a);
            if i % AVOIDER_EVERY != 0 {
                continue;
            }
            let listed = avoided_by(i, p.n)?;
            if let Some(b) = m.participants.iter().find(|b| listed.contains(b)) {
                return Err(format!("{a} avoids {b}, yet they met in {}", m.match_id));
            }
        }
        Ok(())
    })
    .await?;
    let q = &pops[2];
    let plain = matcher_calls(&mut conn, &q.store, &q.world, reps, |m| {
        (m.participants.len() == 10)
            .then_some(())
            .ok_or_else(|| format!("odd match: {m:?}"))
    })
    .await?;
    report.check(
        &format!(
            "12b. matcher with block lists: one call with {} waiting, inside Redis (without lists: {})",
            count(p.n as f64),
            crate::report::dur(plain.inside.median)
        ),
        calls.result(),
        "<= 50 ms",
        Verdict::of(calls.inside.median <= 50_000.0),
    );
    let mut table = Table::new(
        "12. Block lists (2 x 5 FIFO, one player in ten avoiding ten)",
        &format!(
            "Populations filled by real joins and avoid-list writes (instant matching off). 12a: {PROBES} probe \
             joins per batch, FCALL time per join (`INFO commandstats`), sizes interleaved over {reps} batches \
             each. 12b: `form_matches`, {reps} calls in a row (each forms ~{} matches of the {} waiting, placing \
             the oldest 1 000 tickets one at a time; 12c: 2 000); every match is re-checked against the avoid lists.",
            count(calls.formed.median),
            count(p.n as f64)
        ),
        &["what", "median", "min–max"],
    );
    calls.rows(&mut table, "12", big, &small, &large);
    table.row(vec![
        "12c. the same call without block lists, inside Redis".into(),
        crate::report::dur(plain.inside.median),
        format!(
            "{}–{}",
            crate::report::dur(plain.inside.min),
            crate::report::dur(plain.inside.max)
        ),
    ]);
    report.tables.push(table);
    report.note(format!(
        "Block-list matcher call (first repetition): {}",
        calls.breakdown
    ));
    drop(pops);
    drop(server);
    Ok(())
}
