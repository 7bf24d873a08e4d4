use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn defaults_are_the_acceptance_scenario() {
    let o = parse(&[]).unwrap();
    assert_eq!(
        (o.rate, o.minutes, o.mean, o.sd, o.seed),
        (50.0, 10.0, 1500.0, 300.0, 7)
    );
    assert_eq!(o.team_size, None);
    assert!(o.rules.is_empty() && o.trace.is_none());
}

#[test]
fn flags_are_read() {
    let o = parse(&args(
        "--rate 20 --minutes=0.5 --rules a.json --rules dir --world ranked --team-size 5 \
         --oracle-periods 10,1,5,1 --speed 25 --drain 0 --instant-match off --fail-on-miss",
    ))
    .unwrap();
    assert_eq!(o.rate, 20.0);
    assert_eq!(o.minutes, 0.5);
    assert_eq!(o.rules, [PathBuf::from("a.json"), PathBuf::from("dir")]);
    assert_eq!(o.world.as_deref(), Some("ranked"));
    assert_eq!(o.team_size, Some(5));
    assert_eq!(o.oracle_periods, [1.0, 5.0, 10.0]);
    assert_eq!(
        (o.speed, o.drain, o.instant_match, o.fail_on_miss),
        (25.0, 0.0, false, true)
    );
}

#[test]
fn bad_flags_say_what_is_wrong() {
    for (line, says) in [
        ("--rate", "--rate: expects a value"),
        ("--rate x", "expected a number"),
        ("--rate -1", "must be > 0"),
        ("--team-size 1", "2..=100"),
        ("--speed 0.5", ">= 1"),
        ("--bogus", "unknown flag"),
        ("--trace t.csv --rate 5", "--trace replays a file; --rate"),
        ("--party-sizes 1:0.6,2:0.3", "--party-sizes: party sizes"),
        ("--party-sd -1", "must be >= 0"),
        (
            "--trace t.csv --party-sizes 0.5,0.5",
            "--trace replays a file; --party-sizes",
        ),
        ("--accept-probability 0.9,1.1", "0..=1"),
        ("--refusal maybe", "decline or silent"),
        ("--answer-delay 5,1", "LO <= HI"),
        ("--instant-match maybe", "true or false"),
        ("--ratings --regions", "separate scenarios"),
        ("--attributes --backfill", "separate scenarios"),
        ("--modes ctf", "name:popularity"),
        ("--modes ctf:1,ctf:2", "listed twice"),
        ("--modes-listed 1:0.5,5:0.5", "1 to 4 modes"),
        ("--modes-listed 1:0.5,2:0.4", "sum to"),
        ("--levels uniform:9,1", "LO <= HI"),
        ("--levels poisson:3,4", "neither uniform nor normal"),
        (
            "--trace t.csv --levels uniform:1,5",
            "--trace replays a file; --levels",
        ),
        ("--ratings --modes ctf:1", "shape the arrival trace"),
        ("--backfill --levels uniform:1,2", "shape the arrival trace"),
        ("--geography g.json", "add --regions"),
        (
            "--regions --trace t.csv --geography g.json",
            "brings its own",
        ),
        ("--players 1", ">= 2"),
        ("--game-seconds 5,2", "LO <= HI"),
        ("--game-seconds 0", "> 0 s"),
        ("--leave-probability 2", "0..=1"),
        ("--ratings --trace t.csv", "--trace does not apply"),
        ("--blocks --trace t.csv", "--trace does not apply"),
        ("--blocks --attributes", "separate scenarios"),
        ("--avoid 0,5", "add --blocks"),
        ("--blocks --avoid 9,2", "LO <= HI"),
        ("--blocks --avoid x", "expected a number"),
        ("--blocks --players 10 --avoid 0,10", "at most the 9 others"),
        ("--blocks --away 5,1", "LO <= HI"),
        ("--blocks --levels uniform:1,2", "shape the arrival trace"),
        ("--roles --blocks", "separate scenarios"),
        ("--roles --trace t.csv", "--trace does not apply"),
        ("--roles --players 100", "--players does not apply"),
        ("--roles --modes ctf:1", "shape the arrival trace"),
        ("--two-roles 0.5", "add --roles"),
        ("--roles --two-roles 1.5", "0..=1"),
        ("--roles --two-roles x", "expected a number"),
    ] {
        let err = parse(&args(line)).unwrap_err();
        assert!(err.contains(says), "{line}: {err}");
    }
}

#[test]
fn party_and_ready_check_flags_are_read() {
    let o = parse(&args(
        "--party-sizes 1:0.6,2:0.25,3:0.15 --party-sd 300 --accept-probability 0.9,1,0.7,0.9 \
         --refusal silent --answer-delay 0.5,3",
    ))
    .unwrap();
    assert_eq!(o.parties, PartySizes::parse("0.6,0.25,0.15").unwrap());
    assert_eq!(o.party_sd, 300.0);
    assert_eq!(o.accept_probabilities, [1.0, 0.9, 0.7]);
    assert_eq!(o.refusal, Refusal::Silent);
    assert_eq!(o.answer_delay, (0.5, 3.0));
    let o = parse(&args("--parties 0.5,0.5 --answer-delay 2")).unwrap();
    assert_eq!(o.parties.weights(), [(1, 0.5), (2, 0.5)]);
    assert_eq!(o.answer_delay, (2.0, 2.0));
    let d = parse(&[]).unwrap();
    assert!(!d.regions && d.write_trace.is_none());
    assert!(d.parties.is_solo() && d.accept_probabilities.is_empty());
    assert_eq!((d.refusal, d.answer_delay), (Refusal::Decline, (1.0, 5.0)));
}

#[test]
fn ratings_and_backfill_flags_are_read() {
    let o = parse(&args(
        "--ratings --players 200 --games 12 --initial-rating 1400 --noise 100 \
         --game-seconds 10,20 --rest 0.5,2",
    ))
    .unwrap();
    assert!(o.ratings && !o.backfill);
    assert_eq!(
        (o.players, o.games, o.initial_rating, o.noise),
        (200, 12.0, 1400.0, 100.0)
    );
    assert_eq!((o.game_seconds, o.rest), (Some((10.0, 20.0)), (0.5, 2.0)));
    assert_eq!(o.rate, 50.0);
    let o = parse(&args("--backfill --leave-probability 0.2 --renew 3")).unwrap();
    assert!(o.backfill);
    assert_eq!((o.rate, o.minutes), (20.0, 5.0));
    assert_eq!((o.leave_probability, o.renew), (0.2, 3.0));
    assert_eq!(o.game_seconds, None);
    let o = parse(&args("--backfill --rate 10 --minutes 2")).unwrap();
    assert_eq!((o.rate, o.minutes), (10.0, 2.0));
}

#[test]
fn the_attributes_scenario_draws_modes_and_levels_unless_a_trace_is_given() {
    let o = parse(&args("--attributes")).unwrap();
    assert!(o.attributes);
    assert_eq!((o.rate, o.minutes), (ATTRIBUTES_RATE, ATTRIBUTES_MINUTES));
    let spec = &o.attr_spec;
    assert_eq!(spec.modes, Some(ModeSpec::issue_default()));
    assert_eq!(spec.levels, Some(LevelDist::Uniform(1, 100)));
    let o = parse(&args(
        "--attributes --rate 9 --modes a:3,b:1 --modes-listed 1:0.5,2:0.5 --levels normal:50,10",
    ))
    .unwrap();
    assert_eq!(o.rate, 9.0);
    let modes = o.attr_spec.modes.unwrap();
    assert_eq!(modes.popularity, [("a".into(), 0.75), ("b".into(), 0.25)]);
    assert_eq!(modes.listed, [(1, 0.5), (2, 0.5)]);
    assert_eq!(o.attr_spec.levels, Some(LevelDist::Normal(50.0, 10.0)));
    // A trace brings its own.
    let o = parse(&args("--attributes --trace t.csv")).unwrap();
    assert!(o.attr_spec.is_empty());
    // Fewer modes than the default listing: it folds.
    let o = parse(&args("--modes a:1,b:1")).unwrap();
    assert_eq!(o.attr_spec.modes.unwrap().listed, [(1, 0.4), (2, 0.6)]);
    // Without the scenario, only what is asked for.
    let o = parse(&args("--modes-listed 1:1")).unwrap();
    assert!(!o.attributes && o.attr_spec.levels.is_none());
    assert_eq!(o.attr_spec.modes.unwrap().listed, [(1, 1.0)]);
    assert!(parse(&[]).unwrap().attr_spec.is_empty());
}

#[test]
fn the_block_list_scenario_has_the_issues_population_unless_told() {
    let o = parse(&args("--blocks")).unwrap();
    assert!(o.blocks);
    assert_eq!((o.players, o.avoid, o.away), (5000, (0, 20), (60.0, 240.0)));
    assert_eq!((o.rate, o.minutes), (20.0, 10.0));
    let o = parse(&args(
        "--blocks --players 300 --avoid 2,8 --away 10,20 --rate 5 --minutes 3",
    ))
    .unwrap();
    assert_eq!((o.players, o.avoid, o.away), (300, (2, 8), (10.0, 20.0)));
    assert_eq!((o.rate, o.minutes), (5.0, 3.0));
    let o = parse(&args("--blocks --avoid 7")).unwrap();
    assert_eq!(o.avoid, (7, 7));
}

#[test]
fn the_role_queue_scenario_has_the_issues_mix_unless_told() {
    let o = parse(&args("--roles")).unwrap();
    assert!(o.roles && !o.blocks);
    assert_eq!((o.rate, o.minutes, o.two_roles), (20.0, 10.0, 0.2));
    let o = parse(&args("--roles --rate 2 --minutes 3 --two-roles 0")).unwrap();
    assert_eq!((o.rate, o.minutes, o.two_roles), (2.0, 3.0, 0.0));
    assert!(!parse(&[]).unwrap().roles);
}

#[test]
fn the_regions_scenario_runs_at_20_per_second_unless_told() {
    let o = parse(&args("--regions --write-trace t.csv")).unwrap();
    assert!(o.regions);
    assert_eq!(o.rate, 20.0);
    assert_eq!(o.write_trace, Some(PathBuf::from("t.csv")));
    assert_eq!(o.geography, None);
    let o = parse(&args("--regions --geography g.json")).unwrap();
    assert_eq!(o.geography, Some(PathBuf::from("g.json")));
    let o = parse(&args("--rate 5 --regions")).unwrap();
    assert_eq!(o.rate, 5.0);
    let o = parse(&args("--regions --trace t.csv")).unwrap();
    assert!(o.regions && o.trace.is_some());
}

#[test]
fn the_several_queues_scenario_has_its_defaults_and_mix() {
    let o = parse(&args("--several-queues")).unwrap();
    assert!(o.several_queues);
    assert_eq!((o.rate, o.minutes), (2.0, 10.0));
    assert_eq!(o.queue_mix, crate::queues::MIX.to_vec());
    let o = parse(&args("--several-queues --rate 20 --queue-mix 2,1,1")).unwrap();
    assert_eq!(o.rate, 20.0);
    assert_eq!(o.queue_mix, [0.5, 0.25, 0.25]);
    assert!(o.world_weights.is_empty());
    let o = parse(&args("--several-queues --world-weights 5,3,2")).unwrap();
    assert_eq!(o.world_weights, [5.0, 3.0, 2.0]);
    for bad in [
        "--queue-mix 1,1,1",
        "--several-queues --roles",
        "--several-queues --players 10",
        "--several-queues --queue-mix 0,0",
        "--world-weights 1,2,3",
        "--several-queues --world-weights 1,0,2",
    ] {
        assert!(parse(&args(bad)).is_err(), "{bad}");
    }
}
