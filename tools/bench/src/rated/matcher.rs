//! 6b: one matcher call on a rated world with 1 M waiting (quick: 100 k):
//! `form_matches(world, 0)` tries the 200 oldest due anchors (the core's
//! `anchors_per_call`), each taking the 9 nearest players within 50 of its
//! rating. Every ticket is due; the population is N(1500, 300), so anchors
//! find groups. Time inside Redis from `INFO commandstats` (EVALSHA usec
//! delta), as row 3 measures; the state is restored after every repetition.

use std::time::Instant;

use redis::aio::MultiplexedConnection;

use super::fill::Filled;
use super::TEAM;
use crate::common::{
    calls_between, commandstats, micros_since, script_breakdown, Config, Ctx, Res, CLIENT_COMMANDS,
    SCRIPT_CALLS,
};
use crate::report::{count, dur, dur_range, Report, Table, Verdict};
use crate::stats::summarize;

/// The target: one call's time inside Redis.
const TARGET_US: f64 = 50_000.0;

pub(super) async fn run(
    cfg: &Config,
    report: &mut Report,
    conn: &mut MultiplexedConnection,
    s: &Filled,
) -> Res<()> {
    let rules = s.world.rating().ok_or("the world is not rated")?;
    let anchors = rules.anchors_per_call as usize;
    let window = rules.base_window;
    let reps = if cfg.quick { cfg.reps.min(3) } else { cfg.reps };
    let (mut client, mut inside, mut formed, mut trips, mut commands) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut breakdown = String::new();
    // Load the function library first, so the first call is one FCALL (row 3
    // warms up with a call instead, which here would change the filled state).
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(&shared::scripts::FUNCTIONS.code)
        .query_async::<String>(conn)
        .await
        .ctx("FUNCTION LOAD")?;
    for rep in 0..reps {
        eprintln!("  [6b] repetition {}/{reps}", rep + 1);
        let before = commandstats(conn).await?;
        let t = Instant::now();
        let batch = s
            .store
            .form_matches(&s.world, 0)
            .await
            .ctx("rated form_matches")?;
        let us = micros_since(t);
        let after = commandstats(conn).await?;
        let m = batch.matches.len();
        let bad = batch.matches.iter().find(|r| {
            r.participants.len() != TEAM as usize
                || r.spread.is_none_or(|spread| spread > 2.0 * window)
        });
        if m == 0 || bad.is_some() || batch.expired != 0 || !batch.more_due {
            return Err(format!(
                "rated form_matches with {} waiting: {m} matches (expired {}, more due {}); \
                 expected groups of {TEAM} within 2 x {window} and more anchors due; odd record: {bad:?}",
                s.n, batch.expired, batch.more_due
            ));
        }
        if batch.queue_size != (s.n - m * TEAM as usize) as u64 {
            return Err(format!(
                "rated form_matches left {} of {} after {m} matches",
                batch.queue_size, s.n
            ));
        }
        let (sent, _) = calls_between(&before, &after, CLIENT_COMMANDS);
        let (_, script_us) = calls_between(&before, &after, SCRIPT_CALLS);
        let all: u64 = after
            .iter()
            .map(|(k, (calls, _))| calls.saturating_sub(before.get(k).map_or(0, |v| v.0)))
            .sum();
        let (info, _) = calls_between(&before, &after, &["info"]);
        if rep == 0 {
            breakdown = script_breakdown(&before, &after, 1.0).0;
        }
        client.push(us);
        inside.push(script_us as f64);
        formed.push(m as f64);
        trips.push(sent as f64);
        commands.push(all.saturating_sub(sent + info) as f64);

        // Untimed: the matched players back, the anchors due again.
        let mut matched = Vec::with_capacity(m * TEAM as usize);
        for p in batch.matches.iter().flat_map(|r| r.participants.iter()) {
            let i = p
                .as_str()
                .strip_prefix('r')
                .and_then(|d| d.parse::<usize>().ok())
                .ok_or_else(|| format!("matched an unknown player {p}"))?;
            matched.push(i);
        }
        s.restore(conn, &matched, anchors).await?;
        s.verify(conn).await?;
    }

    let (client, inside, formed, trips, commands) = (
        summarize(&client),
        summarize(&inside),
        summarize(&formed),
        summarize(&trips),
        summarize(&commands),
    );
    let verdict = Verdict::of(inside.median <= TARGET_US);
    let size = count(s.n as f64);
    report.check(
        &format!("6b. rated matcher: one call ({anchors} anchors, N = {TEAM}) with {size} waiting, inside Redis"),
        format!(
            "{} ({}–{}); {} matches formed; client {}",
            dur(inside.median),
            dur(inside.min),
            dur(inside.max),
            count(formed.median),
            dur(client.median)
        ),
        "<= 50 ms",
        verdict,
    );
    let mut table = Table::new(
        &format!("6b. Rated matcher: one call with {size} waiting"),
        &format!(
            "`form_matches(world, 0)` on a rated world (N = {TEAM}, window {window} around the anchor, every \
             ticket due, ratings N(1500, 300)): up to {anchors} anchors, oldest first, each with its nearest \
             players. Median (min–max) over {reps} repetitions; the matched players and the anchors' due times \
             are restored between them (untimed). \"inside Redis\": FCALL time (`INFO commandstats` usec \
             delta); round trips = commands the client sent.{}",
            if cfg.quick {
                " BENCH_QUICK: 100 k instead of 1 M."
            } else {
                ""
            }
        ),
        &[
            "what",
            "inside Redis",
            "time (client)",
            "matches formed",
            "round trips",
            "commands inside Redis",
            "target",
            "result",
        ],
    );
    table.row(vec![
        format!("rated `form_matches` ({anchors} anchors)"),
        dur_range(&inside),
        dur_range(&client),
        format!(
            "{} ({}–{})",
            count(formed.median),
            count(formed.min),
            count(formed.max)
        ),
        format!("{} ({}–{})", trips.median, trips.min, trips.max),
        count(commands.median),
        "<= 50 ms inside Redis".into(),
        verdict.label().into(),
    ]);
    report.tables.push(table);
    report.note(format!(
        "Rated matcher: inside the one `form_matches` call with {size} waiting (first repetition, \
         `INFO commandstats` delta): {breakdown}."
    ));
    Ok(())
}
