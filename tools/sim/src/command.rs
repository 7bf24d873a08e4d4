//! The command line's run: parse the flags, build the trace and the rule
//! sets, simulate, analyse, write the report and the charts, print.

use std::path::Path;
use std::time::Instant;

use crate::engine::Answering;
use crate::rules::RuleSet;
use crate::scenario::{Generator, LatencyModel, Scenario};
use crate::{cli, plot, regional, report, rules, simulate, Config};

mod queues;
mod studies;

use studies::{
    finish_attributes, finish_regions, run_backfill, run_blocks, run_ratings, run_roles,
};

/// UTC time as `YYYYMMDD-HHMMSS`.
pub fn utc_stamp(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The commit of the core this binary was built from, as far as the source
/// tree tells at run time: `abc1234`, with a mark when `shared/` or `lua/`
/// have uncommitted changes. `None` outside a git checkout.
fn core_version() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--", "shared", "lua"])?;
    Some(if dirty.is_empty() {
        head
    } else {
        format!("{head} + uncommitted changes to shared/ or lua/")
    })
}

/// The command line as it would be typed again, without `--out` (where a
/// report is written does not change it, and a scratch path would only
/// mislead the reader).
fn command_line(args: &[String]) -> String {
    let mut parts = vec!["scripts/sim.sh".to_owned()];
    let mut kept = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--out" {
            it.next();
        } else if !a.starts_with("--out=") {
            kept.push(a);
        }
    }
    parts.extend(kept.into_iter().map(|a| {
        if a.is_empty() || a.contains(char::is_whitespace) {
            format!("'{a}'")
        } else {
            a.clone()
        }
    }));
    parts.join(" ")
}

/// The whole command: parse, simulate, analyse, write the report and the
/// charts, print. Returns the process exit status.
pub async fn run_cli(args: &[String]) -> Result<i32, String> {
    let opts = cli::parse(args)?;
    if opts.help {
        print!("{}", cli::USAGE);
        return Ok(0);
    }
    let started = Instant::now();
    if opts.ratings {
        return run_ratings(&opts, args, started).await;
    }
    if opts.backfill {
        return run_backfill(&opts, args, started).await;
    }
    if opts.blocks {
        return run_blocks(&opts, args, started).await;
    }
    if opts.roles {
        return run_roles(&opts, args, started).await;
    }
    if opts.several_queues {
        return queues::run_queues(&opts, args, started).await;
    }
    let scenario = scenario_of(&opts)?;
    let scenario = if opts.regions && opts.trace.is_none() {
        let model = match &opts.geography {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| e.to_string())
                .and_then(|text| LatencyModel::from_json(&text))
                .map_err(|e| format!("--geography {}: {e}", path.display()))?,
            None => LatencyModel::standard(),
        };
        scenario
            .with_latencies(&model, opts.seed)
            .map_err(|e| e.to_string())?
    } else {
        scenario
    };
    if opts.regions && scenario.geo.is_none() {
        return Err(format!(
            "--regions: the trace {} has no latency:<region> columns",
            opts.trace
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string())
        ));
    }
    if let Some(path) = &opts.write_trace {
        std::fs::write(path, scenario.to_csv())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let rule_paths = if opts.rules.is_empty() {
        let dir = if opts.regions {
            rules::default_dir().join("regions")
        } else if opts.attributes {
            rules::default_dir().join("attributes")
        } else {
            rules::default_dir()
        };
        if dir.is_dir() {
            vec![dir]
        } else {
            Vec::new()
        }
    } else {
        opts.rules.clone()
    };
    let rule_sets = rules::expand(&rule_paths)?
        .iter()
        .map(|p| RuleSet::from_file(p, opts.world.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let team_size = match opts.team_size {
        Some(n) => n,
        None => first_match_size(&rule_sets).unwrap_or(10),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = utc_stamp(now);
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| Path::new("sim-results").join(&stamp));
    eprintln!(
        "simulating {} through {} rule set(s){} at x{} (about {:.0} s)...",
        scenario.describe(),
        rule_sets.len(),
        if opts.regions {
            ", each three ways (regions, best region only, latency ignored)"
        } else if opts.attributes {
            ", each as written, first choice only (with an intersection rule) and without rules"
        } else {
            " + FIFO"
        },
        opts.speed,
        (scenario.last_arrival() + opts.drain) / opts.speed + 1.5
    );
    let config = Config {
        scenario,
        rule_sets,
        team_size,
        ticket_ttl_secs: opts.ticket_ttl,
        instant_match: opts.instant_match,
        drain: opts.drain,
        // The oracle knows nothing of latencies or attributes.
        oracle_periods: if opts.regions || opts.attributes {
            Vec::new()
        } else {
            opts.oracle_periods.clone()
        },
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
        accept_probabilities: opts.accept_probabilities.clone(),
        answering: Answering {
            accept_probability: 1.0,
            refusal: opts.refusal,
            delay: opts.answer_delay,
            seed: opts.seed,
        },
        regions: opts.regions,
        attributes: opts.attributes,
    };
    let outcome = simulate(&config).await?;
    if config.regions {
        return finish_regions(&opts, args, &config, &outcome, &out, &stamp, started);
    }
    if config.attributes {
        return finish_attributes(&opts, args, &config, &outcome, &out, &stamp, started);
    }
    let frontier = report::frontier(&outcome.runs);
    let checks = report::acceptance(&config.scenario, &outcome.runs, &frontier);
    plot::frontier_chart(&out.join("frontier.svg"), &outcome.runs)?;
    plot::decile_chart(
        &out.join("waits-by-decile.svg"),
        &config.scenario,
        &outcome.runs,
    )?;
    if config.scenario.has_parties() {
        plot::party_chart(
            &out.join("waits-by-party-size.svg"),
            &config.scenario,
            &outcome.runs,
        )?;
    }
    if outcome.runs.iter().any(|r| r.ready.is_some()) {
        plot::ready_chart(&out.join("waits-by-acceptance.svg"), &outcome.runs)?;
    }
    let mut ctx = report::Context {
        title: format!("Matchmaking simulation {stamp} UTC"),
        scenario: config.scenario.describe(),
        acceptance_note: config.scenario.differs_from_acceptance(),
        team_size,
        oracle_shape: outcome.oracle_shape,
        drain: config.drain,
        speed: config.speed,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 0.0,
        instant_match: config.instant_match,
        rule_sets: outcome.rule_sets.clone(),
        command: command_line(args),
        core: core_version(),
    };
    ctx.wall_seconds = started.elapsed().as_secs_f64();
    let charts: Vec<String> = [
        "frontier.svg",
        "waits-by-decile.svg",
        "waits-by-party-size.svg",
        "waits-by-acceptance.svg",
    ]
    .iter()
    .map(|f| out.join(f))
    .filter(|p| p.exists())
    .map(|p| p.display().to_string())
    .collect();
    publish(
        &out,
        |full| report::render(&ctx, &config.scenario, &outcome.runs, &checks, full),
        &charts,
    )?;
    Ok(exit_status(&opts, &config, &outcome, &checks))
}

/// The trace of `--trace`, or one generated from the flags (with the
/// attributes of `--modes` and `--levels`, or the attributes scenario's).
fn scenario_of(opts: &cli::Options) -> Result<Scenario, String> {
    let scenario = match &opts.trace {
        Some(path) => Scenario::from_csv_file(path),
        None => Scenario::generate(Generator {
            rate: opts.rate,
            seconds: opts.minutes * 60.0,
            mean: opts.mean,
            sd: opts.sd,
            seed: opts.seed,
            parties: opts.parties.clone(),
            party_sd: opts.party_sd.min(opts.sd),
        }),
    }
    .map_err(|e| e.to_string())?;
    Ok(if opts.trace.is_none() && !opts.attr_spec.is_empty() {
        scenario.with_attributes(&opts.attr_spec, opts.seed)
    } else {
        scenario
    })
}

/// Writes `render(true)` as `<out>/report.md`, prints `render(false)`, then
/// where the report and the charts are.
fn publish(out: &Path, render: impl Fn(bool) -> String, charts: &[String]) -> Result<(), String> {
    let path = out.join("report.md");
    std::fs::write(&path, render(true))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    print!("{}", render(false));
    println!(
        "\nreport: {}\ncharts: {}",
        path.display(),
        charts.join(", ")
    );
    Ok(())
}

/// Warns about runs that did not keep up; the exit status: 2 when joins or
/// ticks failed, 3 with `--fail-on-miss` when a check missed, else 0.
fn exit_status(
    opts: &cli::Options,
    config: &Config,
    outcome: &crate::Outcome,
    checks: &[report::Check],
) -> i32 {
    for run in outcome.runs.iter() {
        if let Some(why) = &run.lagging {
            eprintln!(
                "mm-sim: WARNING: {} did not keep up with x{}: {why}; rerun with a lower --speed",
                run.label, config.speed
            );
        }
    }
    let failed: Vec<String> = outcome
        .runs
        .iter()
        .filter(|r| r.failures > 0)
        .map(|r| format!("{} ({} failures)", r.label, r.failures))
        .collect();
    if !failed.is_empty() {
        eprintln!(
            "mm-sim: joins or ticks failed in {}: see the report's Run diagnostics",
            failed.join(", ")
        );
        return 2;
    }
    let missed = checks.iter().filter(|c| !c.pass).count();
    if opts.fail_on_miss && missed > 0 {
        3
    } else {
        0
    }
}

/// The rule sets of `--rules`, or those of `rules/<dir>/`.
fn rule_sets_or(opts: &cli::Options, dir: &str) -> Result<Vec<RuleSet>, String> {
    let paths = if opts.rules.is_empty() {
        vec![rules::default_dir().join(dir)]
    } else {
        opts.rules.clone()
    };
    rules::expand(&paths)?
        .iter()
        .map(|p| RuleSet::from_file(p, opts.world.as_deref()))
        .collect()
}

fn out_dir(opts: &cli::Options) -> (std::path::PathBuf, String) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = utc_stamp(now);
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| Path::new("sim-results").join(&stamp));
    (out, stamp)
}

/// Warns about the lanes that did not keep up with `opts.speed`; the exit
/// status of a played-out scenario: 2 when calls failed, 3 with
/// `--fail-on-miss` when a criterion missed, else 0. `lanes`: each lane's
/// label, why it lagged (if it did) and its failed calls.
fn scenario_status<'a>(
    opts: &cli::Options,
    lanes: impl Iterator<Item = (&'a str, Option<&'a String>, u64)>,
    checks: &[report::Check],
) -> i32 {
    let mut failed: Vec<String> = Vec::new();
    for (label, lagging, failures) in lanes {
        if let Some(why) = lagging {
            eprintln!(
                "mm-sim: WARNING: {label} did not keep up with x{}: {why}; rerun with a lower --speed",
                opts.speed
            );
        }
        if failures > 0 {
            failed.push(format!("{label} ({failures} failures)"));
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "mm-sim: calls failed in {}: see the report's Run diagnostics",
            failed.join(", ")
        );
        return 2;
    }
    if opts.fail_on_miss && checks.iter().any(|c| !c.pass) {
        3
    } else {
        0
    }
}

/// Players per match of the first rule set's driven world.
fn first_match_size(rule_sets: &[RuleSet]) -> Option<u32> {
    let doc: serde_json::Value = serde_json::from_str(&rule_sets.first()?.text).ok()?;
    let world = &rule_sets.first()?.world;
    let w = doc
        .get("worlds")?
        .as_array()?
        .iter()
        .find(|w| w.get("name").and_then(|n| n.as_str()) == Some(world.as_str()))?;
    let teams = w.get("teams").map_or(Some(1), serde_json::Value::as_u64)?;
    w.get("teamSize")?
        .as_u64()
        .and_then(|n| u32::try_from(n * teams).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_796_070_801), "20261130-203321");
    }

    #[test]
    fn command_lines_quote_what_needs_it() {
        assert_eq!(
            command_line(&["--rules".into(), "my rules.json".into()]),
            "scripts/sim.sh --rules 'my rules.json'"
        );
        let args: Vec<String> = "--regions --out /tmp/x --speed 10 --out=/tmp/y"
            .split(' ')
            .map(String::from)
            .collect();
        assert_eq!(command_line(&args), "scripts/sim.sh --regions --speed 10");
    }

    #[test]
    fn the_match_size_comes_from_the_first_rule_set() {
        let rs = RuleSet::from_text(
            "r",
            "r.json",
            r#"{"worlds": [{"name": "a", "teamSize": 4}, {"name": "b", "teamSize": 6},
                {"name": "c", "teamSize": 5, "teams": 2}]}"#,
            Some("b"),
        )
        .unwrap();
        assert_eq!(first_match_size(std::slice::from_ref(&rs)), Some(6));
        let c = RuleSet {
            world: "c".into(),
            ..rs
        };
        assert_eq!(first_match_size(&[c]), Some(10));
        assert_eq!(first_match_size(&[]), None);
    }
}
