//! Row 14: one ticket in several worlds (docs/rules.md, `queueGroup`).
//! Three 5 v 5 FIFO worlds of one queueGroup, each with ~1 k waiting
//! (quick: the same), and a fourth 5 v 5 FIFO world in no group with as
//! many, in one rule set and one namespace:
//!
//! * 14a: a queued join into all three worlds (one ticket filed in each,
//!   `JoinInput::also`) ÷ a queued join into one of them, time inside
//!   Redis per join (issue 38: <= 2x);
//! * 14b (info): the same joins ÷ a queued join into the world in no group
//!   (what a group's keys cost a join of one world, and a join into three
//!   against the plain join);
//! * 14c (info): the three joins' instructions in redis-server (callgrind,
//!   as row 10 counts them; skipped without valgrind), free of the timing
//!   noise of a shared machine.
//!
//! Probes join with instant matching off, so they queue (as rows 12a and
//! 13a), and leave again after each timed batch (a leave takes a shared
//! ticket from every world); the three kinds of batch alternate, so machine
//! noise hits them alike. The grouped worlds are filled through real joins
//! (64 at a time) the way players would hold them: a third of the players
//! wait in one world, a third in two and a third in all three (rotated over
//! the worlds), so each world holds `size` tickets, two thirds of them
//! shared.

use std::time::Instant;

use integration_tests::RedisServer;
use redis::aio::MultiplexedConnection;
use shared::store::{AlsoJoined, JoinInput};
use shared::{JoinOutcome, LeaveOutcome, MatchStore, PlayerId, World};

use crate::common::{
    calls_between, commandstats, raw_connection, script_breakdown, Config, Ctx, Res, SCRIPT_CALLS,
};
use crate::instructions::Counted;
use crate::report::{count, dur, Report, Table, Verdict};
use crate::scaled::{fill, population_store, probe_join_cost, queue};
use crate::stats::{summarize, Summary};

/// The grouped worlds, in catalog order, and the world in no group.
const GROUPED: [&str; 3] = ["arena1", "arena2", "arena3"];
const PLAIN: &str = "solo";
const GROUP: &str = "any";
/// Probes per timed batch (`scaled::probe_join_cost`).
const PROBES: usize = 200;

/// The row's rule set: [`GROUPED`] in queueGroup [`GROUP`], and [`PLAIN`].
fn rules() -> String {
    let world = |name: &str, group: bool| {
        let mut w = serde_json::json!({
            "name": name, "teamSize": 5, "teams": 2, "ticketTtlSeconds": 86_400
        });
        if group {
            w["queueGroup"] = serde_json::json!(GROUP);
        }
        w
    };
    let mut worlds: Vec<_> = GROUPED.iter().map(|n| world(n, true)).collect();
    worlds.push(world(PLAIN, false));
    serde_json::json!({ "worlds": worlds }).to_string()
}

/// The grouped worlds (indices into [`GROUPED`]) grouped player `i` waits
/// in: 1, 2 or 3 of them as `i % 3`, starting at `(i / 3) % 3`.
fn worlds_of(i: usize) -> Vec<usize> {
    let first = (i / 3) % 3;
    (0..=i % 3).map(|j| (first + j) % 3).collect()
}

/// Grouped players filling each grouped world with about `size` tickets
/// (each world holds two thirds of them).
fn grouped_players(size: usize) -> usize {
    (size * 3).div_ceil(2)
}

fn player(prefix: char, i: usize) -> Res<PlayerId> {
    PlayerId::parse(&format!("{prefix}{i:07}")).ctx("player id")
}

struct Setup {
    store: MatchStore,
    /// [`GROUPED`]'s worlds, then [`PLAIN`].
    worlds: Vec<World>,
}

impl Setup {
    fn grouped(&self) -> &[World] {
        &self.worlds[..3]
    }

    fn plain(&self) -> &World {
        &self.worlds[3]
    }

    async fn queue_size(&self, conn: &mut MultiplexedConnection, w: &World) -> Res<u64> {
        redis::cmd("ZCARD")
            .arg(&self.store.keys().world(&w.name).queue)
            .query_async(conn)
            .await
            .ctx("ZCARD")
    }

    async fn sequence_in(
        &self,
        conn: &mut MultiplexedConnection,
        w: &World,
        p: &PlayerId,
    ) -> Res<Option<f64>> {
        redis::cmd("ZSCORE")
            .arg(&self.store.keys().world(&w.name).queue)
            .arg(p.as_str())
            .query_async(conn)
            .await
            .ctx("ZSCORE")
    }
}

async fn populate(url: &str, ns: &str, size: usize) -> Res<Setup> {
    let (store, first) = population_store(url, ns, &rules(), GROUPED[0])?;
    let mut worlds = vec![first];
    for name in GROUPED[1..].iter().chain([&PLAIN]) {
        worlds.push(crate::common::configured_world(&store, name)?);
    }
    let (s, ws) = (store.clone(), worlds.clone());
    fill(grouped_players(size), move |i| {
        let (store, worlds) = (s.clone(), ws.clone());
        async move {
            let joined = worlds_of(i);
            let also: Vec<AlsoJoined> = joined[1..]
                .iter()
                .map(|&w| AlsoJoined {
                    world: &worlds[w],
                    attributes: None,
                })
                .collect();
            let input = JoinInput {
                also: &also,
                ..JoinInput::default()
            };
            queue(&store, &worlds[joined[0]], &player('g', i)?, &input).await
        }
    })
    .await?;
    let (s, plain) = (store.clone(), worlds[3].clone());
    fill(size, move |i| {
        let (store, plain) = (s.clone(), plain.clone());
        async move { queue(&store, &plain, &player('s', i)?, &JoinInput::default()).await }
    })
    .await?;
    Ok(Setup { store, worlds })
}

/// Every world holds the tickets the fill filed in it.
async fn check_fill(conn: &mut MultiplexedConnection, s: &Setup, size: usize) -> Res<()> {
    let mut expected = [0u64; 3];
    for i in 0..grouped_players(size) {
        for w in worlds_of(i) {
            expected[w] += 1;
        }
    }
    for (w, want) in s.grouped().iter().zip(expected) {
        let got = s.queue_size(conn, w).await?;
        if got != want {
            return Err(format!("{}: {got} waiting, {want} filed", w.name));
        }
    }
    let got = s.queue_size(conn, s.plain()).await?;
    if got != size as u64 {
        return Err(format!("{PLAIN}: {got} waiting, {size} filed"));
    }
    Ok(())
}

/// One join into all three grouped worlds files one ticket in each at one
/// sequence and says so; its leave takes it from all three (untimed).
async fn check_shared_ticket(
    conn: &mut MultiplexedConnection,
    s: &Setup,
    three: &JoinInput<'_>,
) -> Res<()> {
    let p = PlayerId::parse("check-three").ctx("player id")?;
    let g = s.grouped();
    match s
        .store
        .join_reply(&g[0], &p, three, false)
        .await
        .ctx("join into three worlds")?
        .outcome
    {
        JoinOutcome::Queued(q) => {
            let names: Vec<&str> = q.also_queued_in.iter().map(|w| w.as_str()).collect();
            if names != GROUPED[1..] {
                return Err(format!("a join into three worlds answered {q:?}"));
            }
        }
        other => return Err(format!("a join into three worlds: {other:?}")),
    }
    let mut seqs = Vec::new();
    for w in g {
        seqs.push(s.sequence_in(conn, w, &p).await?);
    }
    if seqs[0].is_none() || seqs.iter().any(|q| *q != seqs[0]) {
        return Err(format!("the shared ticket's sequences: {seqs:?}"));
    }
    match s.store.leave(&g[1], &p).await.ctx("leave")? {
        LeaveOutcome::Left { .. } => {}
        other => return Err(format!("leave of the shared ticket: {other:?}")),
    }
    for w in g {
        if s.sequence_in(conn, w, &p).await?.is_some() {
            return Err(format!(
                "the shared ticket stayed in {} after a leave",
                w.name
            ));
        }
    }
    Ok(())
}

/// Where a join's time goes inside Redis (`PROBES` joins of `input` into
/// `world`, untimed apart from `INFO commandstats`; left again after).
async fn breakdown(
    conn: &mut MultiplexedConnection,
    store: &MatchStore,
    world: &World,
    input: &JoinInput<'_>,
    tag: &str,
) -> Res<String> {
    let names: Vec<PlayerId> = (0..PROBES)
        .map(|k| PlayerId::parse(&format!("bd-{tag}-{k}")).ctx("player id"))
        .collect::<Res<_>>()?;
    let before = commandstats(conn).await?;
    for p in &names {
        if !matches!(
            store
                .join_reply(world, p, input, false)
                .await
                .ctx("join")?
                .outcome,
            JoinOutcome::Queued(_)
        ) {
            return Err("a breakdown probe did not queue".into());
        }
    }
    let after = commandstats(conn).await?;
    let (calls, _) = calls_between(&before, &after, SCRIPT_CALLS);
    if calls != PROBES as u64 {
        return Err(format!("{calls} script calls for {PROBES} joins"));
    }
    for p in &names {
        store.leave(world, p).await.ctx("leave")?;
    }
    Ok(script_breakdown(&before, &after, PROBES as f64).0)
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let reps = if cfg.quick { cfg.reps.min(3) } else { cfg.reps };
    let server = RedisServer::start();
    let result = measure(&server.url(), report, 1_000, reps).await;
    drop(server);
    result?;
    let valgrind = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if valgrind {
        instructions(report, 1_000).await
    } else {
        report.note("14c skipped: valgrind is not installed (scripts/install-deps.sh valgrind)");
        Ok(())
    }
}

/// 14c (info): the same three joins' instructions in redis-server
/// (callgrind, as row 10 counts them): the same population under a
/// counted server, then [`PROBES`] joins of each kind between a zero and a
/// dump (their leaves uncounted).
async fn instructions(report: &mut Report, size: usize) -> Res<()> {
    let counted = Counted::start();
    let url = counted.url();
    eprintln!("  [14] 14c: the same population under callgrind");
    let s = populate(&url, "mwc", size).await?;
    check_fill(&mut raw_connection(&url).await?, &s, size).await?;
    let g = s.grouped();
    let also = [
        AlsoJoined {
            world: &g[1],
            attributes: None,
        },
        AlsoJoined {
            world: &g[2],
            attributes: None,
        },
    ];
    let three = JoinInput {
        also: &also,
        ..JoinInput::default()
    };
    let one = JoinInput::default();
    let kinds: [(&str, &World, &JoinInput); 3] = [
        ("one", &g[0], &one),
        ("three", &g[0], &three),
        ("plain", s.plain(), &one),
    ];
    let mut per_join = Vec::new();
    for (tag, world, input) in kinds {
        let names: Vec<PlayerId> = (0..PROBES)
            .map(|k| PlayerId::parse(&format!("ir-{tag}-{k}")).ctx("player id"))
            .collect::<Res<_>>()?;
        counted.control(&["-z"])?;
        for p in &names {
            if !matches!(
                s.store
                    .join_reply(world, p, input, false)
                    .await
                    .ctx("join")?
                    .outcome,
                JoinOutcome::Queued(_)
            ) {
                return Err("a counted probe did not queue".into());
            }
        }
        per_join.push(counted.dump(&format!("g14-{tag}"))? as f64 / PROBES as f64);
        for p in &names {
            s.store.leave(world, p).await.ctx("leave")?;
        }
    }
    let (one_i, three_i, plain_i) = (per_join[0], per_join[1], per_join[2]);
    if let Some(table) = report.tables.last_mut() {
        for (what, n) in [
            (
                "14c. instructions per join into 1 world of the group (callgrind)",
                one_i,
            ),
            ("14c. instructions per join into all 3 worlds", three_i),
            (
                "14c. instructions per join into the world in no group",
                plain_i,
            ),
        ] {
            table.row(vec![
                what.into(),
                count(n),
                String::new(),
                format!("{:.2}x", n / one_i.max(1.0)),
            ]);
        }
    }
    report.note(format!(
        "14c (callgrind, every instruction of redis-server over {PROBES} joins of each kind): 3 worlds ÷ 1 = {:.2}x; \
         1 grouped world ÷ a world in no group = {:.2}x",
        three_i / one_i.max(1.0),
        one_i / plain_i.max(1.0)
    ));
    Ok(())
}

/// Row 14 with `size` waiting in each world, `reps` batches of each kind.
async fn measure(url: &str, report: &mut Report, size: usize, reps: usize) -> Res<()> {
    let mut conn = raw_connection(url).await?;
    eprintln!(
        "  [14] filling 3 grouped worlds with {} waiting each, and a world in no group (real joins)",
        count(size as f64)
    );
    let t = Instant::now();
    let s = populate(url, "mw", size).await?;
    check_fill(&mut conn, &s, size).await?;
    eprintln!("  [14] filled in {:.1} s", t.elapsed().as_secs_f64());
    let g = s.grouped();
    let also = [
        AlsoJoined {
            world: &g[1],
            attributes: None,
        },
        AlsoJoined {
            world: &g[2],
            attributes: None,
        },
    ];
    let three = JoinInput {
        also: &also,
        ..JoinInput::default()
    };
    let one = JoinInput::default();
    check_shared_ticket(&mut conn, &s, &three).await?;

    // The three kinds alternate within every repetition.
    let (mut at_one, mut at_three, mut at_plain) = (Vec::new(), Vec::new(), Vec::new());
    let one_list = std::slice::from_ref(&one);
    let three_list = std::slice::from_ref(&three);
    for _ in 0..reps {
        at_one.extend(probe_join_cost(&mut conn, &s.store, &g[0], one_list, 1).await?);
        at_three.extend(probe_join_cost(&mut conn, &s.store, &g[0], three_list, 1).await?);
        at_plain.extend(probe_join_cost(&mut conn, &s.store, s.plain(), one_list, 1).await?);
    }
    check_fill(&mut conn, &s, size).await?;
    let (one_s, three_s, plain_s) = (
        summarize(&at_one),
        summarize(&at_three),
        summarize(&at_plain),
    );
    let ratio = |a: &Summary, b: &Summary| a.median / b.median.max(f64::MIN_POSITIVE);
    let (r3, r1p, r3p) = (
        ratio(&three_s, &one_s),
        ratio(&one_s, &plain_s),
        ratio(&three_s, &plain_s),
    );
    report.check(
        &format!(
            "14a. queued join into 3 worlds of a queueGroup ÷ into 1 of them, {} waiting each (inside Redis; \
             14b: ÷ a join into a world in no group {r3p:.2}x, the 1-world join {r1p:.2}x)",
            count(size as f64)
        ),
        format!(
            "{r3:.2}x ({} vs {} per join)",
            dur(three_s.median),
            dur(one_s.median)
        ),
        "<= 2x",
        Verdict::of(r3 <= 2.0),
    );

    let bd_one = breakdown(&mut conn, &s.store, &g[0], &one, "one").await?;
    let bd_three = breakdown(&mut conn, &s.store, &g[0], &three, "three").await?;
    let bd_plain = breakdown(&mut conn, &s.store, s.plain(), &one, "plain").await?;
    let mut table = Table::new(
        "14. One ticket in several worlds (3 FIFO 5 v 5 worlds of one queueGroup, and one in no group)",
        &format!(
            "Grouped worlds filled by real joins (instant matching off): a third of the players wait in one world, \
             a third in two, a third in all three, {} tickets in each world; the world in no group holds {}. \
             {PROBES} probe joins per batch (instant matching off: they queue, and leave after the batch), FCALL \
             time per join (`INFO commandstats`), the three kinds alternating over {reps} batches each.",
            count(size as f64),
            count(size as f64)
        ),
        &["what", "median", "min–max", "÷ 1 world of the group"],
    );
    let range = |s: &Summary| format!("{}–{}", dur(s.min), dur(s.max));
    table.row(vec![
        "14a. join into 1 world of the group, inside Redis".into(),
        dur(one_s.median),
        range(&one_s),
        "1.00x".into(),
    ]);
    table.row(vec![
        "14a. join into all 3 worlds (one ticket), inside Redis".into(),
        dur(three_s.median),
        range(&three_s),
        format!("{r3:.2}x"),
    ]);
    table.row(vec![
        "14b. join into the world in no group, inside Redis".into(),
        dur(plain_s.median),
        range(&plain_s),
        format!("{:.2}x", ratio(&plain_s, &one_s)),
    ]);
    report.tables.push(table);
    report.note(format!("Join into 1 grouped world: {bd_one}"));
    report.note(format!("Join into 3 grouped worlds: {bd_three}"));
    report.note(format!("Join into the world in no group: {bd_plain}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_set_groups_three_worlds() {
        let settings = integration_tests::settings_for(
            "redis://127.0.0.1:1",
            false,
            "t",
            "",
            &[("MM_WORLDS", ""), ("MM_RULES", &rules())],
        );
        let first = settings.worlds.get(GROUPED[0]).expect("the world");
        let group: Vec<&str> = settings
            .worlds
            .group(first)
            .iter()
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(group, GROUPED);
        let plain = settings.worlds.get(PLAIN).expect("the plain world");
        assert_eq!(plain.queue_group, None);
    }

    #[test]
    fn the_population_fills_every_world_alike() {
        let size = 1_000;
        let mut per_world = [0usize; 3];
        let mut by_count = [0usize; 3];
        for i in 0..grouped_players(size) {
            let ws = worlds_of(i);
            by_count[ws.len() - 1] += 1;
            for w in ws {
                per_world[w] += 1;
            }
        }
        for n in per_world {
            assert!(n.abs_diff(size) <= 2, "{per_world:?}");
        }
        assert_eq!(by_count, [500; 3]);
    }

    /// The row end to end at a small size (`BENCH_ROWS=14` runs it at
    /// 1 k): the shared ticket is checked, the check and the table are
    /// reported.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn row_14_runs_at_a_small_size() {
        let server = RedisServer::start();
        let mut report = Report::default();
        measure(&server.url(), &mut report, 150, 1).await.unwrap();
        assert_eq!(report.checks.len(), 1, "{:?}", report.plain());
        assert!(report.checks.iter().all(|c| c.verdict != Verdict::NotRun));
        assert_eq!(report.tables.len(), 1);
    }
}
