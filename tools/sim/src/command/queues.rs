//! The several-queues scenario (`--several-queues`): simulate, write the
//! report and the charts, print.

use super::*;

pub(super) async fn run_queues(
    opts: &cli::Options,
    args: &[String],
    started: Instant,
) -> Result<i32, String> {
    let rule_sets = rule_sets_or(opts, "queues")?;
    let (out, stamp) = out_dir(opts);
    let config = crate::queues::Config {
        rule_sets,
        rate: opts.rate,
        seconds: opts.minutes * 60.0,
        mix: opts.queue_mix.clone(),
        popularity: opts.world_weights.clone(),
        seed: opts.seed,
        drain: opts.drain,
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
    };
    eprintln!(
        "simulating arrivals at {}/s for {} min queuing in 1..={} worlds, through {} rule set(s), each three ways, at x{} (about {:.0} s)...",
        crate::oracle::trim_float(config.rate),
        crate::oracle::trim_float(opts.minutes),
        config.mix.len(),
        config.rule_sets.len(),
        opts.speed,
        (config.seconds + config.drain) / opts.speed + 3.0
    );
    let outcome = crate::queues::simulate(&config).await?;
    let checks = crate::queues::analysis::criteria(&outcome.lanes, &outcome.trace);
    let charts = crate::queues::plot::charts(&out, &outcome)?;
    let ctx = crate::queues::report::Context {
        title: format!("Several queues simulation {stamp} UTC"),
        seed: config.seed,
        drain: config.drain,
        speed: config.speed,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: started.elapsed().as_secs_f64(),
        command: command_line(args),
        core: core_version(),
        charts: charts
            .iter()
            .filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .collect(),
    };
    let shown: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    publish(
        &out,
        |full| crate::queues::report::render(&ctx, &outcome, &checks, full),
        &shown,
    )?;
    Ok(scenario_status(
        opts,
        outcome
            .lanes
            .iter()
            .map(|l| (l.label.as_str(), l.lagging.as_ref(), l.failures)),
        &checks,
    ))
}
