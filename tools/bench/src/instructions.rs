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
use std::process::Command;
use std::time::{Duration, Instant};

use integration_tests::{server_binary, RedisServer};
use shared::{JoinOutcome, MatchStore, PlayerId, Rating, World};

use crate::common::{fifo_store, Config, Ctx, Res};
use crate::report::{count, Report, Table};
use crate::stats::summarize;

const WARM: u64 = 600;

/// A redis-server under callgrind (the test fixture's server, run by
/// valgrind), with callgrind_control to zero and dump its counters (rows 10
/// and 14).
pub struct Counted {
    server: RedisServer,
}

impl Counted {
    pub fn start() -> Self {
        // Valgrind's own messages stay quiet (-q); its dumps go to the
        // server's directory (`cg.out.<n>`).
        let server = RedisServer::start_under(
            &[
                "valgrind",
                "-q",
                "--tool=callgrind",
                "--callgrind-out-file=cg.out",
            ],
            &["--hz", "1"],
        );
        Self { server }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn control(&self, args: &[&str]) -> Res<()> {
        let out = Command::new("callgrind_control")
            .args(args)
            .arg(self.server.pid().to_string())
            .output()
            .ctx("run callgrind_control (scripts/install-deps.sh valgrind)")?;
        if !out.status.success() {
            return Err(format!(
                "callgrind_control {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// Instructions executed between `zero` and this dump, every thread.
    pub fn dump(&self, label: &str) -> Res<u64> {
        let dir = self.server.dir();
        let before = dumps(dir)?;
        self.control(&["-d", label])?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let new: Vec<PathBuf> = dumps(dir)?
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

    /// With `BENCH_CALLGRIND_DIR`, copies the dumps there (`rep<n>/`), for
    /// callgrind_annotate: the server's directory goes with the server.
    fn keep_dumps(&self, rep: usize) -> Res<()> {
        let Some(to) = std::env::var_os("BENCH_CALLGRIND_DIR") else {
            return Ok(());
        };
        let to = PathBuf::from(to).join(format!("rep{rep}"));
        std::fs::create_dir_all(&to).ctx("create BENCH_CALLGRIND_DIR")?;
        for dump in dumps(self.server.dir())? {
            if let Some(name) = dump.file_name() {
                std::fs::copy(&dump, to.join(name)).ctx("copy a callgrind dump")?;
            }
        }
        Ok(())
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
    let (fifo, fifo_world) = fifo_store(url, "ir-fifo", false)?;
    let (instant, instant_world) = fifo_store(url, "ir-instant", true)?;
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
        let server = Counted::start();
        for (n, probe) in probes(&server.server.url())?.into_iter().enumerate() {
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
        server.keep_dumps(rep)?;
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
