//! `bench`: the project's one reproducible benchmark (run it with
//! `scripts/bench.sh`). Everything runs on this machine in one go, against
//! private redis-server processes on free loopback ports, so every comparison
//! is a ratio measured in the same run. Prints a table and writes it as
//! Markdown (`bench-results/latest.md` by default). See docs/benchmark.md.

mod attributes;
mod backfill;
mod blocks;
mod common;
mod durability;
mod e2e;
mod floor;
mod footprint;
mod groups;
mod instructions;
mod matcher;
mod rated;
mod regions;
mod report;
mod roles;
mod scaled;
mod scaling;
mod stats;
mod throughput;
mod warnings;

use std::process::Command;
use std::time::Instant;

use common::{Config, Ctx, Res};
use report::{Report, Verdict};

fn main() {
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench: cannot start the tokio runtime: {e}");
            std::process::exit(1);
        }
    };
    match runtime.block_on(run(cfg)) {
        Ok(complete) => std::process::exit(if complete { 0 } else { 1 }),
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs the selected rows; returns whether every row ran (missed targets
/// are results, reported in the table, not failures of the command).
async fn run(cfg: Config) -> Res<bool> {
    let started = Instant::now();
    let mut report = Report {
        title: format!(
            "Benchmark results{}",
            if cfg.quick {
                " (BENCH_QUICK=1 smoke run: smaller sizes, shorter runs)"
            } else {
                ""
            }
        ),
        machine: machine(),
        ..Default::default()
    };
    type Row = (u8, &'static str);
    let rows: [Row; 14] = [
        (1, "scaling"),
        (2, "throughput"),
        (3, "matcher"),
        (4, "end to end"),
        (5, "footprint"),
        (6, "rated"),
        (7, "regions"),
        (8, "backfill"),
        (9, "durability"),
        (10, "instructions"),
        (11, "attributes"),
        (12, "block lists"),
        (13, "role queues"),
        (14, "several worlds"),
    ];
    for (n, name) in rows {
        if !cfg.runs(n) {
            continue;
        }
        eprintln!("[{n}] {name}...");
        let t = Instant::now();
        let result = match n {
            1 => scaling::run(&cfg, &mut report).await,
            2 => throughput::run(&cfg, &mut report).await,
            3 => matcher::run(&cfg, &mut report).await,
            4 => e2e::run(&cfg, &mut report).await,
            5 => footprint::run(&cfg, &mut report).await,
            6 => rated::run(&cfg, &mut report).await,
            7 => regions::run(&cfg, &mut report).await,
            8 => backfill::run(&cfg, &mut report).await,
            9 => durability::run(&cfg, &mut report).await,
            11 => attributes::run(&cfg, &mut report).await,
            12 => blocks::run(&cfg, &mut report).await,
            13 => roles::run(&cfg, &mut report).await,
            14 => groups::run(&cfg, &mut report).await,
            _ => instructions::run(&cfg, &mut report).await,
        };
        match result {
            Ok(()) => eprintln!("[{n}] {name} done in {:.1} s", t.elapsed().as_secs_f64()),
            Err(e) => {
                eprintln!("[{n}] {name} FAILED: {e}");
                report.check(
                    &format!("{n}. {name}"),
                    "failed".into(),
                    "runs",
                    Verdict::NotRun,
                );
                report.note(format!("Row {n} ({name}) did not complete: {e}"));
            }
        }
    }
    report.machine.push((
        "load after".into(),
        std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "n/a".into()),
    ));
    report.machine.push((
        "bench time".into(),
        format!("{:.0} s", started.elapsed().as_secs_f64()),
    ));

    let plain = report.plain();
    println!("{plain}");
    if let Some(dir) = cfg.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).ctx(&format!("create {}", dir.display()))?;
    }
    std::fs::write(&cfg.out, report.markdown()).ctx(&format!("write {}", cfg.out.display()))?;
    eprintln!("wrote {}", cfg.out.display());
    let misses = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Miss)
        .count();
    let not_run = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::NotRun)
        .count();
    eprintln!(
        "{} checks: {} PASS, {misses} MISS, {not_run} NOT RUN",
        report.checks.len(),
        report.checks.len() - misses - not_run
    );
    Ok(not_run == 0)
}

/// What the numbers were measured on.
fn machine() -> Vec<(String, String)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = read("/proc/meminfo");
    let mem = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or("unknown".into(), |kib| {
            format!("{:.1} GiB", kib / 1024.0 / 1024.0)
        });
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let output = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let redis = output("redis-server", &["--version"]).unwrap_or_else(|| "not found".into());
    let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "unknown".into());
    let kernel = output("uname", &["-sr"]).unwrap_or_else(|| "unknown".into());
    let rustc = output("rustc", &["--version"]).unwrap_or_else(|| "unknown".into());
    let load = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        ("date".into(), date),
        ("cpu".into(), format!("{cpu}, nproc {nproc}")),
        ("memory".into(), mem),
        ("kernel".into(), kernel),
        ("redis-server".into(), redis),
        ("rustc".into(), rustc),
        ("load before".into(), load),
    ]
}
