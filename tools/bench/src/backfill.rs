//! Row 8: backfills (lua/_backfill.lua), in a 2 x 2 FIFO world and a
//! 2 x 2 rated world, each with open backfills of running matches.
//!
//! * 8a: a join's cost inside Redis with 1 000+ open backfills ÷ the same
//!   join with none: FIFO, where the joiner takes an open seat (a fill:
//!   out of the queue, the match's additions, one outbox entry) compared
//!   with a queued join; rated, where the joiner lies outside every
//!   backfill's window and queues (what open backfills cost a join that
//!   does not fit), compared with the same queued join without backfills;
//! * 8b: one matcher call serving 1 000 open backfills (one seat each) from
//!   1 000 waiting tickets, inside Redis.
//!
//! Backfills are made as servers make them: real matches formed by real
//! joins, each assigned and asked for a backfill of one seat.

use integration_tests::{settings_for, RedisServer};
use shared::store::{AssignOutcome, BackfillOutcome, JoinInput};
use shared::{
    Assignment, JoinOutcome, LeaveOutcome, MatchRecord, MatchStore, PlayerId, Rating, World,
};

use crate::common::{
    calls_between, commandstats, micros_since, raw_connection, script_breakdown, Config, Ctx, Res,
    SCRIPT_CALLS,
};
use crate::report::{count, dur, Report, Table, Verdict};
use crate::stats::summarize;

/// Probe joins per timed batch.
const PROBES: usize = 200;

fn rules() -> String {
    serde_json::json!({
        "ratings": {"min": 0, "max": 100000},
        "worlds": [
            {"name": "squad", "teamSize": 2, "teams": 2, "ticketTtlSeconds": 86_400},
            {"name": "ranked", "teamSize": 2, "teams": 2, "mode": "rating", "ticketTtlSeconds": 86_400,
             "rating": {"baseWindow": 100, "widenPerSecond": 0, "maxWindow": 100, "relaxAfterSeconds": 86_400}}
        ]
    })
    .to_string()
}

fn player(name: &str) -> Res<PlayerId> {
    PlayerId::parse(name).ctx("player id")
}

fn store(url: &str, ns: &str, instant: bool) -> Res<MatchStore> {
    MatchStore::new(settings_for(
        url,
        false,
        ns,
        "",
        &[
            ("MM_WORLDS", ""),
            ("MM_RULES", &rules()),
            ("MM_INSTANT_MATCH", if instant { "true" } else { "false" }),
            ("MM_QUEUE_CAPACITY", "0"),
            ("MM_BACKFILL_KEEPALIVE_SECS", "86400"),
            ("MM_GAME_TTL_SECS", "86400"),
            ("MM_MATCH_TTL_SECS", "86400"),
        ],
    ))
    .ctx("build the store")
}

fn world<'a>(store: &'a MatchStore, name: &str) -> Res<&'a World> {
    store
        .settings()
        .worlds
        .get(name)
        .ok_or_else(|| format!("world {name} is not configured"))
}

async fn join_rated(store: &MatchStore, w: &World, p: &PlayerId, r: f64) -> Res<JoinOutcome> {
    let input = JoinInput {
        claimed: Some(Rating::new(r).ctx("rating")?),
        ..JoinInput::default()
    };
    Ok(store
        .join_reply(w, p, &input, false)
        .await
        .ctx("join")?
        .outcome)
}

/// `n` running matches of `w`, each assigned and with a backfill of one
/// seat (the second player of its first team left). Rated players are
/// spread in bands 1 000 apart per match, so a match's backfill is within
/// reach of ratings near its own band only. Every match is formed before
/// any backfill opens (an open backfill takes the joins that fit it).
async fn open_backfills(store: &MatchStore, w: &World, n: usize) -> Res<()> {
    let assignment: Assignment =
        serde_json::from_value(serde_json::json!({"connection": "127.0.0.1:1"}))
            .ctx("assignment")?;
    let mut running = Vec::with_capacity(n);
    for m in 0..n {
        let mut record: Option<MatchRecord> = None;
        let mut outcomes = Vec::new();
        for j in 0..4 {
            let p = player(&format!("{}-m{m}-{j}", w.name))?;
            let outcome = if w.rating().is_some() {
                join_rated(store, w, &p, 1000.0 + (m % 90) as f64 * 1000.0).await?
            } else {
                store
                    .join_reply(w, &p, &JoinInput::default(), false)
                    .await
                    .ctx("join")?
                    .outcome
            };
            match outcome {
                JoinOutcome::Matched { record: r, .. } => record = Some(r),
                other => outcomes.push(other),
            }
        }
        let record = record.ok_or_else(|| {
            format!(
                "{}: match {m}'s four joins formed no match: {outcomes:?}",
                w.name
            )
        })?;
        match store
            .assign_match(&record.match_id, &assignment)
            .await
            .ctx("assign")?
        {
            AssignOutcome::Assigned(_) => {}
            other => return Err(format!("assign: {other:?}")),
        }
        running.push(record);
    }
    for record in running {
        let teams = record.teams.clone().ok_or("a match without teams")?;
        let now = vec![vec![teams[0][0].clone()], teams[1].clone()];
        match store
            .request_backfill(&record.match_id, &now, None)
            .await
            .ctx("backfill")?
        {
            BackfillOutcome::Open { .. } => {}
            other => return Err(format!("backfill: {other:?}")),
        }
    }
    Ok(())
}

/// µs inside Redis per probe join (one batch); the probes leave again.
/// `queued_at_once` probes wait together at most, so a batch in a world
/// without backfills never fills a match (4 players form one in 2 x 2).
async fn probe_joins(
    conn: &mut redis::aio::MultiplexedConnection,
    store: &MatchStore,
    w: &World,
    tag: &str,
    rating: Option<f64>,
    queued_at_once: usize,
) -> Res<(f64, usize)> {
    let names: Vec<PlayerId> = (0..PROBES)
        .map(|k| player(&format!("probe-{tag}-{k}")))
        .collect::<Res<_>>()?;
    let mut seated = 0;
    let (mut calls, mut us) = (0, 0);
    for group in names.chunks(queued_at_once.max(1)) {
        let before = commandstats(conn).await?;
        for id in group {
            let outcome = match rating {
                Some(r) => join_rated(store, w, id, r).await?,
                None => {
                    store
                        .join_reply(w, id, &JoinInput::default(), false)
                        .await
                        .ctx("probe")?
                        .outcome
                }
            };
            match outcome {
                JoinOutcome::Queued(_) => {}
                JoinOutcome::Backfilled { .. } => seated += 1,
                other => return Err(format!("probe join: {other:?}")),
            }
        }
        let after = commandstats(conn).await?;
        let (c, u) = calls_between(&before, &after, SCRIPT_CALLS);
        calls += c;
        us += u;
        for id in group {
            match store.leave(w, id).await.ctx("probe leave")? {
                LeaveOutcome::Left { .. } | LeaveOutcome::NotQueued { .. } => {}
            }
        }
    }
    if calls != PROBES as u64 {
        return Err(format!("{calls} script calls for {PROBES} probe joins"));
    }
    Ok((us as f64 / PROBES as f64, seated))
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let url = server.url();
    let reps = if cfg.quick {
        cfg.reps.min(2)
    } else {
        cfg.reps.min(4)
    };
    // Every FIFO probe batch takes PROBES seats: keep 1 000+ open throughout.
    let fifo_backfills = 1_000 + PROBES * reps;
    let mut conn = raw_connection(&url).await?;
    let none = store(&url, "bf-none", true)?;
    let with = store(&url, "bf-open", true)?;
    eprintln!(
        "  [8] opening {} FIFO and 1 000 rated backfills",
        count(fifo_backfills as f64)
    );
    open_backfills(&with, world(&with, "squad")?, fifo_backfills).await?;
    open_backfills(&with, world(&with, "ranked")?, 1_000).await?;

    // 8a, alternating so machine noise hits both alike. Rated probes at
    // 95 500: 500 from the nearest band, outside every window. Probes
    // that could match one another wait three at most at a time.
    let (mut fifo_none, mut fifo_with, mut rated_none, mut rated_with) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let (us, _) = probe_joins(
            &mut conn,
            &none,
            world(&none, "squad")?,
            &format!("fn{rep}"),
            None,
            3,
        )
        .await?;
        fifo_none.push(us);
        let (us, seated) = probe_joins(
            &mut conn,
            &with,
            world(&with, "squad")?,
            &format!("fw{rep}"),
            None,
            PROBES,
        )
        .await?;
        if seated != PROBES {
            return Err(format!(
                "{seated} of {PROBES} FIFO probes took an open seat"
            ));
        }
        fifo_with.push(us);
        let (us, _) = probe_joins(
            &mut conn,
            &none,
            world(&none, "ranked")?,
            &format!("rn{rep}"),
            Some(95_500.0),
            3,
        )
        .await?;
        rated_none.push(us);
        let (us, seated) = probe_joins(
            &mut conn,
            &with,
            world(&with, "ranked")?,
            &format!("rw{rep}"),
            Some(95_500.0),
            3,
        )
        .await?;
        if seated != 0 {
            return Err(format!(
                "{seated} rated probes were seated outside the window"
            ));
        }
        rated_with.push(us);
    }
    let (fifo_none, fifo_with) = (summarize(&fifo_none), summarize(&fifo_with));
    let (rated_none, rated_with) = (summarize(&rated_none), summarize(&rated_with));
    let fifo_ratio = fifo_with.median / fifo_none.median.max(f64::MIN_POSITIVE);
    let rated_ratio = rated_with.median / rated_none.median.max(f64::MIN_POSITIVE);
    report.check(
        "8a. FIFO join taking an open seat (1 000+ backfills) ÷ queued join (none), inside Redis",
        format!(
            "{fifo_ratio:.2}x ({} vs {})",
            dur(fifo_with.median),
            dur(fifo_none.median)
        ),
        "<= 1.5x",
        Verdict::of(fifo_ratio <= 1.5),
    );
    report.check(
        "8a. rated join outside every window, 1 000 backfills ÷ none, inside Redis",
        format!(
            "{rated_ratio:.2}x ({} vs {})",
            dur(rated_with.median),
            dur(rated_none.median)
        ),
        "<= 1.5x",
        Verdict::of(rated_ratio <= 1.5),
    );

    // 8b: 1 000 open backfills (a fresh namespace) and 1 000 waiting
    // tickets, instant matching off; one matcher call.
    let serve = store(&url, "bf-serve", true)?;
    open_backfills(&serve, world(&serve, "squad")?, 1_000).await?;
    let queued = store(&url, "bf-serve", false)?;
    let squad = world(&queued, "squad")?;
    for i in 0..1_000 {
        match queued
            .join_reply(
                squad,
                &player(&format!("w{i}"))?,
                &JoinInput::default(),
                false,
            )
            .await
            .ctx("waiting join")?
            .outcome
        {
            JoinOutcome::Queued(_) => {}
            other => return Err(format!("waiting join: {other:?}")),
        }
    }
    let before = commandstats(&mut conn).await?;
    let t = std::time::Instant::now();
    let batch = queued.form_matches(squad, 0).await.ctx("form_matches")?;
    let client = micros_since(t);
    let after = commandstats(&mut conn).await?;
    let (_, inside) = calls_between(&before, &after, SCRIPT_CALLS);
    if batch.backfilled != 1_000 {
        return Err(format!("{} of 1 000 backfills filled", batch.backfilled));
    }
    let breakdown = script_breakdown(&before, &after, 1.0).0;
    report.check(
        "8b. one matcher call serving 1 000 backfills, inside Redis",
        format!(
            "{} ({} fills; client {})",
            dur(inside as f64),
            batch.backfilled,
            dur(client)
        ),
        "<= 50 ms",
        Verdict::of(inside as f64 <= 50_000.0),
    );
    let mut table = Table::new(
        "8. Backfills (2 x 2 worlds, FIFO and rated)",
        &format!(
            "Backfills opened by real joins (matches formed), assignments and backfill requests of one \
             seat each. 8a: {PROBES} probe joins per batch, FCALL time per join (`INFO commandstats`), \
             {reps} batches per case, alternating; FIFO probes take open seats ({} backfills at the start, \
             {} after the last batch), rated probes lie 500 points outside every window and queue. 8b: one \
             `form_matches` with 1 000 open backfills and 1 000 waiting tickets.",
            count(fifo_backfills as f64),
            count((fifo_backfills - PROBES * reps) as f64)
        ),
        &["what", "median", "min–max"],
    );
    for (what, s) in [
        ("8a. FIFO queued join, no backfills", &fifo_none),
        ("8a. FIFO join taking an open seat", &fifo_with),
        ("8a. rated queued join, no backfills", &rated_none),
        ("8a. rated queued join, 1 000 backfills", &rated_with),
    ] {
        table.row(vec![
            what.into(),
            dur(s.median),
            format!("{}–{}", dur(s.min), dur(s.max)),
        ]);
    }
    table.row(vec![
        "8b. one matcher call, 1 000 fills".into(),
        dur(inside as f64),
        String::new(),
    ]);
    report.tables.push(table);
    report.note(format!("Backfill matcher call: {breakdown}"));
    drop(server);
    Ok(())
}
