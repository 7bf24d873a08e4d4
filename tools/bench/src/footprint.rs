//! Row 5: footprint. Size of each release Lambda binary, process start to
//! ready for the first event (against a stand-in for the Lambda Runtime API),
//! and the local stack's memory (the `mm-local` binary and its redis-server as
//! separate processes) with many players queued.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use integration_tests::{settings_for, RedisServer};
use shared::{JoinOutcome, MatchStore, PlayerId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common::{info_field, raw_connection, redis_pid, Config, Ctx, Res};
use crate::report::{count, dur, mib, Report, Table, Verdict};
use crate::stats::summarize;

const FUNCTIONS: [&str; 6] = [
    "join",
    "leave",
    "status",
    "matcher",
    "ws-connect",
    "ws-disconnect",
];

/// Kills the child when dropped (also on early returns).
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let mut table = Table::new(
        "5. Footprint",
        &format!(
            "Binaries: `cargo build --release` for this machine (x86_64; Lambda runs arm64 builds from cargo-lambda, \
             whose sizes differ). Start to ready: spawn -> the first `GET /2018-06-01/runtime/invocation/next` \
             on a local stand-in for the Lambda Runtime API, median (min–max) of {} starts. Memory: VmRSS and \
             VmHWM (peak) from /proc/<pid>/status.",
            start_reps(cfg)
        ),
        &["what", "value", "spread", "note", "result"],
    );
    for f in FUNCTIONS {
        let path = cfg.bin_dir.join(f);
        let size = std::fs::metadata(&path).map(|m| m.len());
        let size_cell = match &size {
            Ok(b) => mib(*b as f64),
            Err(e) => format!("missing ({e})"),
        };
        let started = if size.is_ok() {
            start_to_ready(&path, f, &server.url(), start_reps(cfg)).await
        } else {
            Err(format!("{} not built", path.display()))
        };
        match started {
            Ok(times) => {
                let s = summarize(&times);
                table.row(vec![
                    format!("`{f}`: binary size / start to ready"),
                    format!("{size_cell} / {}", dur(s.median)),
                    format!("{}–{}", dur(s.min), dur(s.max)),
                    "".into(),
                    "info".into(),
                ]);
            }
            Err(e) => {
                table.row(vec![
                    format!("`{f}`: binary size / start to ready"),
                    format!("{size_cell} / n/a"),
                    "".into(),
                    e.clone(),
                    "NOT RUN".into(),
                ]);
                report.check(
                    &format!("5. {f} starts and asks for an event"),
                    "no".into(),
                    "ready",
                    Verdict::NotRun,
                );
            }
        }
    }
    drop(server);
    memory(cfg, &mut table).await?;
    report.tables.push(table);
    Ok(())
}

fn start_reps(cfg: &Config) -> usize {
    if cfg.quick {
        3
    } else {
        cfg.reps.max(5)
    }
}

/// Starts `bin` `reps` times against a Runtime API stand-in; returns the
/// microseconds from spawn to its first request for an event.
async fn start_to_ready(bin: &Path, name: &str, redis_url: &str, reps: usize) -> Res<Vec<f64>> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .ctx("bind the Runtime API stand-in")?;
    let addr = listener.local_addr().ctx("stand-in address")?;
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let server = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let ready = ready_tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf);
                let line = head.lines().next().unwrap_or_default().to_owned();
                if line.starts_with("GET /2018-06-01/runtime/invocation/next") {
                    let _ = ready.send(Instant::now());
                    // Hold the long poll open, as the real API does, until killed.
                    let _ = sock.read(&mut chunk).await;
                } else {
                    let body = if line.contains("jwks") {
                        r#"{"keys":[]}"#
                    } else {
                        "{}"
                    };
                    let status = if line.contains("jwks") {
                        "200 OK"
                    } else {
                        "404 Not Found"
                    };
                    let _ = sock
                        .write_all(
                            format!(
                                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                }
            });
        }
    });
    let api = addr.to_string();
    let mut times = Vec::with_capacity(reps);
    let mut result = Ok(());
    for _ in 0..reps {
        let mut cmd = Command::new(bin);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", &api)
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "bench")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "bench")
            .env("AWS_SECRET_ACCESS_KEY", "bench")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("REDIS_URL", redis_url)
            .env("MM_WS_ENDPOINT", "http://127.0.0.1:1")
            .env(
                "AUTH_JWKS_URL",
                format!("http://{api}/.well-known/jwks.json"),
            )
            .env("AUTH_ISSUER", "https://issuer.bench.local")
            .env("AUTH_AUDIENCE", "bench")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let t0 = Instant::now();
        let mut child = Guard(cmd.spawn().ctx(&format!("spawn {}", bin.display()))?);
        let deadline = t0 + Duration::from_secs(10);
        let ready = loop {
            if let Ok(Some(status)) = child.0.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.0.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                break Err(format!(
                    "exited ({status}) before asking for an event: {}",
                    err.lines().last().unwrap_or("no output")
                ));
            }
            match tokio::time::timeout(Duration::from_millis(5), ready_rx.recv()).await {
                Ok(Some(at)) => break Ok(at),
                Ok(None) => break Err("the stand-in stopped".into()),
                Err(_) if Instant::now() > deadline => {
                    break Err("did not ask for an event within 10 s".into())
                }
                Err(_) => {}
            }
        };
        drop(child);
        match ready {
            Ok(at) => times.push(at.saturating_duration_since(t0).as_secs_f64() * 1e6),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    server.abort();
    result.map(|()| times)
}

/// /proc/<pid>/status VmRSS and VmHWM in bytes.
fn rss(pid: u32) -> Res<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ctx(&format!("read /proc/{pid}/status"))?;
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib * 1024.0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// Joins `players` distinct players (`prefix<i>`) into `world` with 64
/// concurrent tasks; returns the seconds it took.
async fn join_many(store: &MatchStore, world: &str, prefix: &str, players: usize) -> Res<f64> {
    let world = store
        .settings()
        .worlds
        .get(world)
        .cloned()
        .ok_or_else(|| format!("{world} is not configured"))?;
    let t = Instant::now();
    let tasks: Vec<_> = (0..64)
        .map(|task| {
            let store = store.clone();
            let world = world.clone();
            let prefix = prefix.to_owned();
            tokio::spawn(async move {
                let mut i = task;
                while i < players {
                    let p = PlayerId::parse(&format!("{prefix}{i}")).ctx("player id")?;
                    match store.join(&world, &p, None, None).await.ctx("join")? {
                        JoinOutcome::Queued(_) => {}
                        other => return Err(format!("join: {other:?}")),
                    }
                    i += 64;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.ctx("join task")??;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// The local stack (`mm-local`, a separate process) and its redis-server:
/// idle, with many players queued, and while its matcher matches as many.
async fn memory(cfg: &Config, table: &mut Table) -> Res<()> {
    let players: usize = if cfg.quick { 20_000 } else { 100_000 };
    let bin = cfg.bin_dir.join("mm-local");
    if !bin.exists() {
        table.row(vec![
            "local stack memory".into(),
            "n/a".into(),
            "".into(),
            format!(
                "{} not built (`cargo build --release -p local-stack`)",
                bin.display()
            ),
            "NOT RUN".into(),
        ]);
        return Ok(());
    }
    let server = RedisServer::start();
    let mut conn = raw_connection(&server.url()).await?;
    let redis = redis_pid(&mut conn).await?;
    // The stack runs world1; the bench's store also knows `hold`, a world the
    // stack's matcher does not tick, so players joined there stay queued
    // (with N = 3 and a tick every second, world1 never holds many).
    let store = MatchStore::new(settings_for(
        &server.url(),
        false,
        "mm",
        "world1:3,hold:3",
        &[("MM_INSTANT_MATCH", "false")],
    ))
    .ctx("build the store")?;
    let mut child = Guard(
        Command::new(&bin)
            .env("REDIS_URL", server.url())
            .env("MM_NAMESPACE", "mm")
            .env("MM_WORLDS", "world1:3")
            .env("MM_INSTANT_MATCH", "false")
            .env("MM_HTTP_ADDR", "127.0.0.1:0")
            .env("MM_WS_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ctx(&format!("spawn {}", bin.display()))?,
    );
    let stack_pid = child.0.id();
    let stdout = child.0.stdout.take().ok_or("no stdout of mm-local")?;
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && line.contains("local stack is running") {
                let _ = tx.send(());
                sent = true;
            }
        }
    });
    tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(30)))
        .await
        .ctx("wait for mm-local")?
        .map_err(|_| "mm-local did not print its banner within 30 s".to_owned())?;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let used = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            info_field(&mut conn, "memory", "used_memory")
                .await?
                .parse::<f64>()
                .ctx("used_memory")
        }
    };
    let (stack_idle, _) = rss(stack_pid)?;
    let (redis_idle, _) = rss(redis)?;
    let used_idle = used(&mut conn).await?;

    // 1. Queued and staying queued.
    let hold_secs = join_many(&store, "hold", "q", players).await?;
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let hold_key = store
        .keys()
        .world(&shared::WorldName::parse("hold").ctx("world")?)
        .queue;
    let queued: u64 = redis::cmd("ZCARD")
        .arg(&hold_key)
        .query_async(&mut conn)
        .await
        .ctx("ZCARD")?;
    let (stack_q, stack_q_hwm) = rss(stack_pid)?;
    let (redis_q, redis_q_hwm) = rss(redis)?;
    let used_queued = used(&mut conn).await?;

    // 2. As many joins into world1, which the stack's matcher ticks over.
    let tick_secs = join_many(&store, "world1", "m", players).await?;
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let world1_left: u64 = redis::cmd("ZCARD")
        .arg(
            store
                .keys()
                .world(&shared::WorldName::parse("world1").ctx("world")?)
                .queue,
        )
        .query_async(&mut conn)
        .await
        .ctx("ZCARD")?;
    let matches: u64 = redis::cmd("HLEN")
        .arg(store.keys().matches())
        .query_async(&mut conn)
        .await
        .ctx("HLEN")?;
    let (stack_m, stack_m_hwm) = rss(stack_pid)?;
    let (redis_m, redis_m_hwm) = rss(redis)?;
    drop(child);

    let n = count(players as f64);
    table.row(vec![
        "local stack (`mm-local`) RSS, idle".into(),
        mib(stack_idle),
        "".into(),
        "matcher ticking every second, no clients".into(),
        "info".into(),
    ]);
    table.row(vec![
        format!("`mm-local` RSS with {n} queued / peak"),
        format!("{} / {}", mib(stack_q), mib(stack_q_hwm)),
        "".into(),
        "the stack holds no per-player state: tickets live in Redis".into(),
        "info".into(),
    ]);
    table.row(vec![
        format!("`mm-local` RSS after its matcher matched {n} more / peak"),
        format!("{} / {}", mib(stack_m), mib(stack_m_hwm)),
        "".into(),
        format!(
            "{n} joins into world1 in {tick_secs:.1} s; its ticks formed {} matches, {} left queued",
            count(matches as f64),
            count(world1_left as f64)
        ),
        "info".into(),
    ]);
    table.row(vec![
        "its redis-server RSS: idle / queued / after matching (peak)".into(),
        format!("{} / {} / {}", mib(redis_idle), mib(redis_q), mib(redis_m)),
        format!("peak {} / {}", mib(redis_q_hwm), mib(redis_m_hwm)),
        format!(
            "{n} joins by 64 concurrent tasks in {hold_secs:.1} s into `hold`, a world the stack's matcher \
             does not tick; {} still queued at the reading",
            count(queued as f64)
        ),
        "info".into(),
    ]);
    table.row(vec![
        "redis used_memory per queued player".into(),
        format!("{:.0} B", (used_queued - used_idle) / players as f64),
        "".into(),
        "queue + deadlines ZSET entries and the tickets hash entry".into(),
        "info".into(),
    ]);
    drop(server);
    Ok(())
}
