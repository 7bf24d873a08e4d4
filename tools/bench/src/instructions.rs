//! Row 10: what one join costs the server in CPU instructions, counted by
//! valgrind's callgrind, not timed. On a shared 2-core VM a join's in-Redis
//! time swings 2-3x between runs (docs/benchmark.md), which hides a change of
//! a few percent; the instruction count of the same sequence of joins is the
//! same from run to run, so an A/B of two commits can be read to a fraction
//! of a percent.
//!
//! redis-server runs under callgrind (`--hz 1`: its timer work, the one part
//! that grows with wall time, stays negligible). A probe fills the queue with
//! `WARM` joins (the players hash is then a hashtable, as in production, not
//! the small-hash listpack), zeroes the counters, runs `JOINS` sequential
//! joins of fresh players and dumps the counters: the total over every thread
//! of the process (parsing, the FCALL with its Lua, the replies) divided by
//! `JOINS`. Three probes, on fresh namespaces of one server:
//! - FIFO: a 1 × 3 world with instant matching off, as row 2's queued join;
//! - FIFO instant: the same world with instant matching on, as row 2's
//!   first mode: every third join forms a match (left in the outbox, as
//!   `MatchStore::join` does; the push and its settle are not counted);
//! - rated: a 1 × 10 rated world with instant matching on and a zero window,
//!   as row 6c's join: every join reads the ratings, looks for neighbours,
//!   finds none and stays queued.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use integration_tests::{server_binary, settings_for};
use shared::{JoinOutcome, MatchStore, PlayerId, Rating, World};

use crate::common::{Config, Ctx, Res};
use crate::report::{count, Report, Table};
use crate::stats::summarize;

const WARM: u64 = 600;

/// A redis-server under callgrind, killed on drop.
struct Counted {
    child: Child,
    dir: PathBuf,
    /// `BENCH_CALLGRIND_DIR` set: the dumps stay, for callgrind_annotate.
    keep: bool,
    port: u16,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Counted {
    fn start(rep: usize) -> Res<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ctx("pick a free port")?
            .port();
        let kept = std::env::var_os("BENCH_CALLGRIND_DIR").map(PathBuf::from);
        let keep = kept.is_some();
        let dir = kept
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("mm-bench-callgrind-{}", std::process::id()))
            })
            .join(format!("rep{rep}"));
        std::fs::create_dir_all(&dir).ctx("create the callgrind directory")?;
        let child = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join("cg.out").display()
            ))
            .arg(server_binary())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--hz", "1"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ctx("start redis-server under valgrind (scripts/install-deps.sh valgrind)")?;
        let server = Self {
            child,
            dir,
            keep,
            port,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self) -> Res<()> {
        // Valgrind translates the binary first: seconds, not milliseconds.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = redis::Client::open(self.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok();
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("redis-server under callgrind did not answer PING in 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn control(&self, args: &[&str]) -> Res<()> {
        let out = Command::new("callgrind_control")
            .args(args)
            .arg(self.child.id().to_string())
            .output()
            .ctx("run callgrind_control")?;
        if !out.status.success() {
            return Err(format!(
                "callgrind_control {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// Instructions executed between `zero` and this dump, every thread.
    fn dump(&self, label: &str) -> Res<u64> {
        let before = dumps(&self.dir)?;
        self.control(&["-d", label])?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let new: Vec<PathBuf> = dumps(&self.dir)?
                .into_iter()
                .filter(|p| !before.contains(p))
                .collect();
            let labelled: Vec<&PathBuf> = new.iter().filter(|p| has_label(p, label)).collect();
            // Every file of this dump (one, or one per thread with
            // --separate-threads), once fully written.
            if !labelled.is_empty() && labelled.iter().all(|p| complete(p)) {
                return labelled.iter().map(|p| instructions(p)).sum();
            }
            if Instant::now() > deadline {
                return Err(format!("no callgrind dump {label} in 30 s"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn dumps(dir: &Path) -> Res<Vec<PathBuf>> {
    Ok(std::fs::read_dir(dir)
        .ctx("list the callgrind directory")?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("cg.out."))
        })
        .collect())
}

fn has_label(path: &Path, label: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| {
        s.lines()
            .any(|l| l == format!("desc: Trigger: dump {label}"))
    })
}

/// A dump is complete once its last line, `totals:`, is written.
fn complete(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s.lines().any(|l| l.starts_with("totals:")))
}

fn instructions(path: &Path) -> Res<u64> {
    let text = std::fs::read_to_string(path).ctx("read a callgrind dump")?;
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{} has no summary line", path.display()))
}

struct Probe {
    name: &'static str,
    store: MatchStore,
    world: World,
    rated: bool,
    /// Every third join completes a match (instant matching on, N = 3).
    matching: bool,
}

impl Probe {
    async fn join(&self, i: u64) -> Res<()> {
        let player = PlayerId::parse(&format!("p{i}")).ctx("player id")?;
        let rating = if self.rated {
            Some(Rating::new(1_500.0 + 300.0 * crate::rated::normal(i)).ctx("rating")?)
        } else {
            None
        };
        match self
            .store
            .join(&self.world, &player, None, rating)
            .await
            .ctx("join")?
        {
            JoinOutcome::Queued(_) => Ok(()),
            JoinOutcome::Matched { .. } if self.matching => Ok(()),
            other => Err(format!("{}: a probe join was {other:?}", self.name)),
        }
    }
}

fn probes(url: &str) -> Res<Vec<Probe>> {
    let fifo = MatchStore::new(settings_for(
        url,
        false,
        "ir-fifo",
        "world1:3",
        &[("MM_INSTANT_MATCH", "false"), ("MM_QUEUE_CAPACITY", "0")],
    ))
    .ctx("build the FIFO store")?;
    let fifo_world = fifo
        .settings()
        .worlds
        .get("world1")
        .cloned()
        .ok_or("world1 is not configured")?;
    let instant = MatchStore::new(settings_for(
        url,
        false,
        "ir-instant",
        "world1:3",
        &[("MM_INSTANT_MATCH", "true"), ("MM_QUEUE_CAPACITY", "0")],
    ))
    .ctx("build the instant FIFO store")?;
    let instant_world = instant
        .settings()
        .worlds
        .get("world1")
        .cloned()
        .ok_or("world1 is not configured")?;
    let rules = crate::rated::rules(0.0, 0.0, crate::rated::TTL_SECS, 600);
    let (rated, rated_world) = crate::rated::store(url, "ir-rated", &rules, true)?;
    Ok(vec![
        Probe {
            name: "FIFO, queued (row 2)",
            store: fifo,
            world: fifo_world,
            rated: false,
            matching: false,
        },
        Probe {
            name: "FIFO, instant, every third forms a match (row 2)",
            store: instant,
            world: instant_world,
            rated: false,
            matching: true,
        },
        Probe {
            name: "rated, instant, queued (row 6c)",
            store: rated,
            world: rated_world,
            rated: true,
            matching: false,
        },
    ])
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let joins: u64 = if cfg.quick { 200 } else { 2_000 };
    let mut per_join: Vec<(&'static str, Vec<f64>)> = Vec::new();
    // A fresh server per repetition: what still varies between them (the
    // allocator's time-based purging, timer work) is the spread shown.
    for rep in 0..cfg.reps {
        let server = Counted::start(rep)?;
        for (n, probe) in probes(&server.url())?.into_iter().enumerate() {
            let base = 1_000_000 * (n as u64 + 1);
            for i in 0..WARM {
                probe.join(base + i).await?;
            }
            server.control(&["-z"])?;
            for i in 0..joins {
                probe.join(base + WARM + i).await?;
            }
            let total = server.dump(&format!("probe{n}"))?;
            if per_join.len() <= n {
                per_join.push((probe.name, Vec::new()));
            }
            per_join[n].1.push(total as f64 / joins as f64);
        }
    }
    let mut table = Table::new(
        "10. Instructions per join (callgrind)",
        &format!(
            "{} under valgrind's callgrind, a fresh server per repetition; every thread \
             of the process over {joins} sequential joins after {WARM} warm ones; median \
             (min–max) of {} repetitions.",
            server_binary(),
            cfg.reps
        ),
        &["join", "instructions per join"],
    );
    for (name, samples) in per_join {
        let s = summarize(&samples);
        table.row(vec![
            name.to_owned(),
            format!("{} ({}–{})", count(s.median), count(s.min), count(s.max)),
        ]);
    }
    report.tables.push(table);
    Ok(())
}
