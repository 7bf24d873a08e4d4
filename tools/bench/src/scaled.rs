//! Rows 7, 11 and 12: a world at 1 k and at 1 M waiting, filled through
//! real joins. A probe join's cost inside Redis at both sizes, and matcher
//! calls with every ticket due.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use integration_tests::settings_for;
use redis::aio::MultiplexedConnection;
use shared::store::JoinInput;
use shared::{JoinOutcome, MatchStore, PlayerId, World};

use crate::common::{
    calls_between, commandstats, micros_since, script_breakdown, Ctx, Res, SCRIPT_CALLS,
};

/// Joins (and other writes) in flight while a population is filled.
const FILL_CONCURRENCY: usize = 64;

/// A store of namespace `ns` on `url` configured by `rules` (instant
/// matching off, no queue capacity) and its world `name`: where a
/// population is filled.
pub fn population_store(url: &str, ns: &str, rules: &str, name: &str) -> Res<(MatchStore, World)> {
    let store = MatchStore::new(settings_for(
        url,
        false,
        ns,
        "",
        &[
            ("MM_WORLDS", ""),
            ("MM_RULES", rules),
            ("MM_INSTANT_MATCH", "false"),
            ("MM_QUEUE_CAPACITY", "0"),
        ],
    ))
    .ctx("build the store")?;
    let world = store
        .settings()
        .worlds
        .get(name)
        .cloned()
        .ok_or("the world is not configured")?;
    Ok((store, world))
}

/// Runs `fill(i)` for every `i` in `0..n`, [`FILL_CONCURRENCY`] at a time;
/// the first error ends it.
pub async fn fill<F, Fut>(n: usize, fill: F) -> Res<()>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Res<()>> + Send,
{
    let (fill, next) = (Arc::new(fill), Arc::new(AtomicUsize::new(0)));
    let mut tasks = Vec::new();
    for _ in 0..FILL_CONCURRENCY {
        let (fill, next) = (fill.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<(), String>(());
                }
                fill(i).await?;
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// Queues `player` in `world` with `input`: a fill's join, which nothing
/// but QUEUED answers.
pub async fn queue(
    store: &MatchStore,
    world: &World,
    player: &PlayerId,
    input: &JoinInput<'_>,
) -> Res<()> {
    match store
        .join_reply(world, player, input, false)
        .await
        .ctx("fill join")?
        .outcome
    {
        JoinOutcome::Queued(_) => Ok(()),
        other => Err(format!("filling: {other:?}")),
    }
}

/// µs inside Redis per probe join into `world` (one value per batch of
/// `probes` new players, `reps` batches), probe `k` joining with
/// `inputs[k % inputs.len()]`; each batch left again after it was timed
/// (rows 7a, 11a, 12a and 13a).
pub async fn probe_join_cost(
    conn: &mut redis::aio::MultiplexedConnection,
    store: &shared::MatchStore,
    world: &shared::World,
    inputs: &[shared::store::JoinInput<'_>],
    reps: usize,
) -> Res<Vec<f64>> {
    if inputs.is_empty() {
        return Err("no probe inputs".into());
    }
    const PROBES: usize = 200;
    let mut per_join = Vec::new();
    for rep in 0..reps {
        let names: Vec<shared::PlayerId> = (0..PROBES)
            .map(|k| shared::PlayerId::parse(&format!("probe{rep}-{k}")).ctx("player id"))
            .collect::<Res<_>>()?;
        let before = commandstats(conn).await?;
        for (k, id) in names.iter().enumerate() {
            match store
                .join_reply(world, id, &inputs[k % inputs.len()], false)
                .await
                .ctx("probe join")?
                .outcome
            {
                shared::JoinOutcome::Queued(_) => {}
                other => return Err(format!("probe join: {other:?}")),
            }
        }
        let after = commandstats(conn).await?;
        let (calls, us) = calls_between(&before, &after, SCRIPT_CALLS);
        if calls != PROBES as u64 {
            return Err(format!("{calls} script calls for {PROBES} probe joins"));
        }
        per_join.push(us as f64 / PROBES as f64);
        for id in &names {
            match store.leave(world, id).await.ctx("probe leave")? {
                shared::LeaveOutcome::Left { .. } => {}
                other => return Err(format!("probe leave: {other:?}")),
            }
        }
    }
    Ok(per_join)
}

/// A join's cost inside Redis at two sizes (rows 7a, 11a, 12a and 13a):
/// `reps` batches each, the sizes interleaved so machine noise hits both
/// alike; the probes' inputs as in [`probe_join_cost`]. Returns both
/// summaries and the ratio of their medians.
pub async fn interleaved_join_cost(
    conn: &mut MultiplexedConnection,
    small: (&MatchStore, &World, &[shared::store::JoinInput<'_>]),
    large: (&MatchStore, &World, &[shared::store::JoinInput<'_>]),
    reps: usize,
) -> Res<(crate::stats::Summary, crate::stats::Summary, f64)> {
    let (mut at_small, mut at_large) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        at_small.extend(probe_join_cost(conn, small.0, small.1, small.2, 1).await?);
        at_large.extend(probe_join_cost(conn, large.0, large.1, large.2, 1).await?);
    }
    let (s, l) = (
        crate::stats::summarize(&at_small),
        crate::stats::summarize(&at_large),
    );
    let ratio = l.median / s.median.max(f64::MIN_POSITIVE);
    Ok((s, l, ratio))
}

/// Waits until the oldest of `world`'s anchors is due (a join that did not
/// try its ticket makes it due `retryMs` x 0.8 later; a world matched
/// around anchors tries none before): a small population filled faster
/// than that would otherwise give the matcher nothing to do. Polls the
/// server's clock, at most 10 s; a world without anchors returns at once.
async fn until_anchors_due(
    conn: &mut MultiplexedConnection,
    store: &MatchStore,
    world: &World,
) -> Res<()> {
    let due = store.keys().world(&world.name).due;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let first: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(&due)
            .arg(0)
            .arg(0)
            .arg("WITHSCORES")
            .query_async(conn)
            .await
            .ctx("the first anchor")?;
        let Some((_, at)) = first.first() else {
            return Ok(());
        };
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await.ctx("TIME")?;
        if *at <= (secs * 1000 + micros / 1000) as f64 {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("no anchor of {} due within 10 s", world.name));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `reps` matcher calls in a row (rows 7b and 11b): the time inside Redis,
/// the matches formed and the client's time per call, and the first
/// call's command breakdown.
pub struct MatcherCalls {
    pub inside: crate::stats::Summary,
    pub formed: crate::stats::Summary,
    pub client: crate::stats::Summary,
    pub breakdown: String,
}

/// Runs `reps` matcher calls in `world`, each forming at least one match
/// and every match passing `check`.
pub async fn matcher_calls(
    conn: &mut MultiplexedConnection,
    store: &MatchStore,
    world: &World,
    reps: usize,
    check: impl Fn(&shared::MatchRecord) -> Res<()>,
) -> Res<MatcherCalls> {
    let (mut inside, mut formed, mut client) = (Vec::new(), Vec::new(), Vec::new());
    let mut breakdown = String::new();
    until_anchors_due(conn, store, world).await?;
    for rep in 0..reps {
        let before = commandstats(conn).await?;
        let t = std::time::Instant::now();
        let batch = store.form_matches(world, 0).await.ctx("form_matches")?;
        client.push(micros_since(t));
        let after = commandstats(conn).await?;
        let (_, us) = calls_between(&before, &after, SCRIPT_CALLS);
        if batch.matches.is_empty() {
            return Err(format!(
                "no match formed in a world of a million waiting (queue {}, expired {}, removed {}, more due {})",
                batch.queue_size, batch.expired, batch.removed, batch.more_due
            ));
        }
        for m in &batch.matches {
            check(m)?;
        }
        if rep == 0 {
            breakdown = script_breakdown(&before, &after, 1.0).0;
        }
        inside.push(us as f64);
        formed.push(batch.matches.len() as f64);
    }
    Ok(MatcherCalls {
        inside: crate::stats::summarize(&inside),
        formed: crate::stats::summarize(&formed),
        client: crate::stats::summarize(&client),
        breakdown,
    })
}

impl MatcherCalls {
    /// The check's result cell: median (min–max), matches, client time.
    pub fn result(&self) -> String {
        use crate::report::{count, dur};
        format!(
            "{} ({}–{}); {} matches formed; client {}",
            dur(self.inside.median),
            dur(self.inside.min),
            dur(self.inside.max),
            count(self.formed.median),
            dur(self.client.median)
        )
    }

    /// The row's table lines: `<row>a` at 1 k and at `big`, `<row>b`.
    pub fn rows(
        &self,
        table: &mut crate::report::Table,
        row: &str,
        big: usize,
        small: &crate::stats::Summary,
        large: &crate::stats::Summary,
    ) {
        use crate::report::{count, dur};
        let range = |s: &crate::stats::Summary| format!("{}–{}", dur(s.min), dur(s.max));
        table.row(vec![
            format!("{row}a. join at 1 k, inside Redis"),
            dur(small.median),
            range(small),
        ]);
        table.row(vec![
            format!("{row}a. join at {}, inside Redis", count(big as f64)),
            dur(large.median),
            range(large),
        ]);
        table.row(vec![
            format!("{row}b. one matcher call, inside Redis"),
            dur(self.inside.median),
            range(&self.inside),
        ]);
    }
}

/// Checks row `label`'s join ratio (rows 7a and 11a) against 1.5x.
pub fn join_ratio_check(
    report: &mut crate::report::Report,
    label: &str,
    small: &crate::stats::Summary,
    large: &crate::stats::Summary,
    ratio: f64,
) {
    use crate::report::{dur, Verdict};
    report.check(
        label,
        format!(
            "{ratio:.2}x ({} vs {} per join)",
            dur(large.median),
            dur(small.median)
        ),
        "<= 1.5x",
        Verdict::of(ratio <= 1.5),
    );
}
