//! The studies with reports of their own: regions, attributes, ratings,
//! backfill, block lists and role queues.

use super::*;

/// The regions scenario's report: the done criteria, the tables and the
/// charts per rule set.
pub(super) fn finish_regions(
    opts: &cli::Options,
    args: &[String],
    config: &Config,
    outcome: &crate::Outcome,
    out: &Path,
    stamp: &str,
    started: Instant,
) -> Result<i32, String> {
    let checks = regional::criteria(&config.scenario, &outcome.runs);
    let charts = regional::plot::charts(out, &config.scenario, &outcome.runs)?;
    let ctx = report::Context {
        title: format!("Regions simulation {stamp} UTC"),
        scenario: config.scenario.describe(),
        acceptance_note: None,
        team_size: config.team_size,
        oracle_shape: outcome.oracle_shape,
        drain: config.drain,
        speed: config.speed,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: started.elapsed().as_secs_f64(),
        instant_match: config.instant_match,
        rule_sets: outcome.rule_sets.clone(),
        command: command_line(args),
        core: core_version(),
    };
    let charts: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    publish(
        out,
        |full| regional::report::render(&ctx, &config.scenario, &outcome.runs, &checks, full),
        &charts,
    )?;
    Ok(exit_status(opts, config, outcome, &checks))
}

/// The attributes scenario's report: the done criteria, the tables and
/// the charts per rule set.
pub(super) fn finish_attributes(
    opts: &cli::Options,
    args: &[String],
    config: &Config,
    outcome: &crate::Outcome,
    out: &Path,
    stamp: &str,
    started: Instant,
) -> Result<i32, String> {
    let checks = crate::attributes::criteria(&config.scenario, &outcome.runs);
    let charts = crate::attributes::plot::charts(out, &config.scenario, &outcome.runs)?;
    let ctx = report::Context {
        title: format!("Attributes simulation {stamp} UTC"),
        scenario: config.scenario.describe(),
        acceptance_note: None,
        team_size: config.team_size,
        oracle_shape: outcome.oracle_shape,
        drain: config.drain,
        speed: config.speed,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: started.elapsed().as_secs_f64(),
        instant_match: config.instant_match,
        rule_sets: outcome.rule_sets.clone(),
        command: command_line(args),
        core: core_version(),
    };
    let charts: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    publish(
        out,
        |full| {
            crate::attributes::report::render(&ctx, &config.scenario, &outcome.runs, &checks, full)
        },
        &charts,
    )?;
    Ok(exit_status(opts, config, outcome, &checks))
}

/// The ratings scenario (`--ratings`): simulate, write the report and the
/// charts, print.
pub(super) async fn run_ratings(
    opts: &cli::Options,
    args: &[String],
    started: Instant,
) -> Result<i32, String> {
    let rule_sets = rule_sets_or(opts, "ratings")?;
    let (out, stamp) = out_dir(opts);
    let config = crate::ratings::Config {
        rule_sets,
        players: opts.players,
        games: opts.games,
        mean: opts.mean,
        sd: opts.sd,
        seed: opts.seed,
        initial: opts.initial_rating,
        noise: opts.noise,
        game_seconds: opts.game_seconds.unwrap_or((20.0, 40.0)),
        rest: opts.rest,
        ramp: 10.0,
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
    };
    eprintln!(
        "simulating {} players to {} games each on average through {} rule set(s), each three ways, at x{}...",
        config.players,
        crate::oracle::trim_float(config.games),
        config.rule_sets.len(),
        opts.speed
    );
    let outcome = crate::ratings::simulate(&config).await?;
    let checks = crate::ratings::report::criteria(&outcome.lanes, config.games);
    let charts = crate::ratings::plot::charts(&out, &outcome, config.games)?;
    let ctx = crate::ratings::report::Context {
        title: format!("Ratings simulation {stamp} UTC"),
        games: config.games,
        mean: config.mean,
        sd: config.sd,
        seed: config.seed,
        initial: config.initial,
        noise: config.noise,
        game_seconds: config.game_seconds,
        rest: config.rest,
        ramp: config.ramp,
        speed: config.speed,
        wall_seconds: started.elapsed().as_secs_f64(),
        command: command_line(args),
        core: core_version(),
    };
    let charts: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    publish(
        &out,
        |full| crate::ratings::report::render(&ctx, &outcome, &checks, full),
        &charts,
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

/// The backfill scenario (`--backfill`): simulate, write the report and
/// the charts, print.
pub(super) async fn run_backfill(
    opts: &cli::Options,
    args: &[String],
    started: Instant,
) -> Result<i32, String> {
    let rule_sets = rule_sets_or(opts, "backfill")?;
    let (out, stamp) = out_dir(opts);
    let scenario = scenario_of(opts)?;
    let game_seconds = opts.game_seconds.unwrap_or((120.0, 240.0));
    let issue = opts.trace.is_none() && opts.rate == 20.0 && opts.leave_probability == 0.1;
    let config = crate::backfill::Config {
        scenario,
        rule_sets,
        leave_probability: opts.leave_probability,
        game_seconds,
        renew: opts.renew,
        noise: opts.noise,
        seed: opts.seed,
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
    };
    eprintln!(
        "simulating {} through {} rule set(s), each with and without backfill, at x{} (about {:.0} s)...",
        config.scenario.describe(),
        config.rule_sets.len(),
        opts.speed,
        (config.scenario.last_arrival() + game_seconds.1) / opts.speed + 1.5
    );
    let outcome = crate::backfill::simulate(&config).await?;
    let checks = crate::backfill::report::criteria(&outcome.lanes, outcome.last_arrival);
    let charts = crate::backfill::plot::charts(&out, &outcome)?;
    let ctx = crate::backfill::report::Context {
        title: format!("Backfill simulation {stamp} UTC"),
        scenario: config.scenario.describe(),
        leave_probability: config.leave_probability,
        game_seconds,
        renew: config.renew,
        speed: config.speed,
        wall_seconds: started.elapsed().as_secs_f64(),
        command: command_line(args),
        core: core_version(),
        note: (!issue).then(|| {
            "The done criteria are the issue's for 20 arrivals/s with 10 % of players leaving each match; this run differs, they are computed all the same".to_owned()
        }),
    };
    let charts: Vec<String> = charts.iter().map(|p| p.display().to_string()).collect();
    publish(
        &out,
        |full| crate::backfill::report::render(&ctx, &outcome, &checks, full),
        &charts,
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

/// The block-list scenario (`--blocks`): simulate, write the report and
/// the charts, print.
pub(super) async fn run_blocks(
    opts: &cli::Options,
    args: &[String],
    started: Instant,
) -> Result<i32, String> {
    let rule_sets = rule_sets_or(opts, "blocks")?;
    let (out, stamp) = out_dir(opts);
    let config = crate::blocks::Config {
        rule_sets,
        players: opts.players,
        lists: opts.avoid,
        rate: opts.rate,
        seconds: opts.minutes * 60.0,
        away: opts.away,
        mean: opts.mean,
        sd: opts.sd,
        seed: opts.seed,
        drain: opts.drain,
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
    };
    eprintln!(
        "simulating {} players avoiding {}–{} others each, arrivals at {}/s for {} min, through {} rule set(s), each with and without block lists, at x{} (about {:.0} s)...",
        config.players,
        config.lists.0,
        config.lists.1,
        crate::oracle::trim_float(config.rate),
        crate::oracle::trim_float(opts.minutes),
        config.rule_sets.len(),
        opts.speed,
        (config.seconds + config.drain) / opts.speed + 3.0
    );
    let outcome = crate::blocks::simulate(&config).await?;
    let checks = crate::blocks::analysis::criteria(&outcome.lanes, &outcome.population);
    let charts = crate::blocks::plot::charts(&out, &outcome)?;
    let ctx = crate::blocks::report::Context {
        title: format!("Block lists simulation {stamp} UTC"),
        mean: config.mean,
        sd: config.sd,
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
        |full| crate::blocks::report::render(&ctx, &outcome, &checks, full),
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

/// The role-queue scenario (`--roles`): simulate, write the report and
/// the charts, print.
pub(super) async fn run_roles(
    opts: &cli::Options,
    args: &[String],
    started: Instant,
) -> Result<i32, String> {
    let rule_sets = rule_sets_or(opts, "roles")?;
    let (out, stamp) = out_dir(opts);
    let mix = crate::roles::Mix {
        two_roles: opts.two_roles,
        ..crate::roles::Mix::issue()
    };
    let config = crate::roles::Config {
        rule_sets,
        rate: opts.rate,
        seconds: opts.minutes * 60.0,
        mix,
        seed: opts.seed,
        drain: opts.drain,
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
    };
    eprintln!(
        "simulating arrivals at {}/s for {} min offering roles ({} % two), through {} rule set(s), each as a role queue and role-agnostic, at x{} (about {:.0} s)...",
        crate::oracle::trim_float(config.rate),
        crate::oracle::trim_float(opts.minutes),
        crate::oracle::trim_float(100.0 * config.mix.two_roles),
        config.rule_sets.len(),
        opts.speed,
        (config.seconds + config.drain) / opts.speed + 3.0
    );
    let outcome = crate::roles::simulate(&config).await?;
    let checks = crate::roles::analysis::criteria(&outcome.lanes, &outcome.trace);
    let charts = crate::roles::plot::charts(&out, &outcome)?;
    let ctx = crate::roles::report::Context {
        title: format!("Role queue simulation {stamp} UTC"),
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
        |full| crate::roles::report::render(&ctx, &outcome, &checks, full),
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
