//! Player attributes in the simulator (issue 37): the generator's modes and
//! levels, `attr:<name>` CSV columns (and their round trip through
//! `--write-trace`'s format), and what a player sends: the trace's raw
//! values typed by the rule set's declarations and validated and encoded by
//! the core's own catalog. Fast: no redis-server (the attributes scenario
//! end to end is the last test, tests/attributes.rs's only one that needs
//! one, as the other e2e tests).

use std::collections::{HashMap, HashSet};

use sim::engine::{ticket_attributes, typed_value};
use sim::rules::{Environment, RuleSet};
use sim::scenario::{AttrSpec, Generator, LevelDist, ModeSpec, PartySizes, Scenario, LEVEL, MODES};

fn trace(rate: f64, seconds: f64, parties: &str, seed: u64) -> Scenario {
    Scenario::generate(Generator {
        rate,
        seconds,
        mean: 1500.0,
        sd: 300.0,
        seed,
        parties: PartySizes::parse(parties).unwrap(),
        party_sd: 100.0,
    })
    .unwrap()
}

#[test]
fn players_list_modes_by_popularity_and_the_counts_asked_for() {
    let s = trace(50.0, 400.0, "1:1", 7).with_attributes(&AttrSpec::issue_default(), 7);
    let attrs = s.attrs.as_ref().unwrap();
    assert_eq!(attrs.names, [MODES, LEVEL]);
    let n = s.arrivals.len();
    assert!(n > 19_000, "{n}");
    let mut firsts: HashMap<String, usize> = HashMap::new();
    let mut counts = [0usize; 5];
    let mut listing: HashMap<String, usize> = HashMap::new();
    for p in 0..n {
        let list = attrs.list(p, MODES).unwrap();
        let unique: HashSet<&&str> = list.iter().collect();
        assert_eq!(unique.len(), list.len(), "no mode twice: {list:?}");
        assert!(list
            .iter()
            .all(|m| ["ctf", "koth", "dm", "tdm"].contains(m)));
        counts[list.len()] += 1;
        *firsts.entry(list[0].to_owned()).or_default() += 1;
        for m in &list {
            *listing.entry((*m).to_owned()).or_default() += 1;
        }
    }
    let share = |k: usize| k as f64 / n as f64;
    // 1 % is over 4 sd of a share among ~20 000.
    for (count, want) in [(1, 0.4), (2, 0.3), (3, 0.3)] {
        assert!((share(counts[count]) - want).abs() < 0.015, "{counts:?}");
    }
    assert_eq!(counts[0] + counts[4], 0);
    for (mode, want) in [("ctf", 0.5), ("koth", 0.25), ("dm", 0.15), ("tdm", 0.1)] {
        let got = share(firsts[mode]);
        assert!((got - want).abs() < 0.015, "{mode}: {got}");
    }
    // Further choices are drawn among the rest: the rarer modes are
    // listed more often than they are first choices.
    assert!(share(listing["tdm"]) > 0.15, "{listing:?}");
    assert!(listing["ctf"] > listing["koth"] && listing["koth"] > listing["dm"]);
    // Levels: whole numbers, uniform in 1..=100.
    let levels: Vec<f64> = (0..n).map(|p| attrs.number(p, LEVEL).unwrap()).collect();
    assert!(levels
        .iter()
        .all(|l| l.fract() == 0.0 && (1.0..=100.0).contains(l)));
    let mean = levels.iter().sum::<f64>() / n as f64;
    assert!((mean - 50.5).abs() < 1.0, "{mean}");
    let low = levels.iter().filter(|l| **l <= 10.0).count();
    assert!((share(low) - 0.1).abs() < 0.015, "{low}");
}

#[test]
fn attributes_come_from_their_own_stream_and_a_party_chooses_together() {
    let plain = trace(20.0, 60.0, "1:0.6,2:0.4", 3);
    let with = plain.clone().with_attributes(&AttrSpec::issue_default(), 3);
    // The arrivals are the same trace's.
    assert_eq!(plain.arrivals, with.arrivals);
    let again = plain.clone().with_attributes(&AttrSpec::issue_default(), 3);
    assert_eq!(with.attrs, again.attrs);
    let other = plain.clone().with_attributes(&AttrSpec::issue_default(), 4);
    assert_ne!(with.attrs, other.attrs);
    let attrs = with.attrs.as_ref().unwrap();
    let mut parties = 0;
    let mut levels_differ = false;
    for g in with.groups.iter().filter(|g| g.is_party()) {
        parties += 1;
        let lists: HashSet<Option<&str>> = g.members.iter().map(|&m| attrs.raw(m, MODES)).collect();
        assert_eq!(lists.len(), 1, "a party lists one set of modes");
        let levels: HashSet<Option<&str>> =
            g.members.iter().map(|&m| attrs.raw(m, LEVEL)).collect();
        levels_differ |= levels.len() > 1;
    }
    assert!(parties > 100 && levels_differ);
    // Levels alone, from a normal distribution.
    let levels = plain.with_attributes(
        &AttrSpec {
            modes: None,
            levels: Some(LevelDist::Normal(40.0, 0.0)),
        },
        1,
    );
    let attrs = levels.attrs.unwrap();
    assert_eq!(attrs.names, [LEVEL]);
    assert!(attrs.values.iter().all(|v| v[0].as_deref() == Some("40")));
}

#[test]
fn a_trace_carries_attributes_in_attr_columns() {
    let csv = "time,player,rating,party,attr:modes,attr:level\n\
               0.5,alice,1500,,ctf|koth,42\n\
               0.2,bob,1400,duo,dm,7\n\
               0.2,carol,1600,duo,dm,\n\
               1.0,dan,1500,,,99\n";
    let s = Scenario::from_csv(csv).unwrap();
    let attrs = s.attrs.as_ref().unwrap();
    assert_eq!(attrs.names, ["modes", "level"]);
    assert!(attrs.spec.is_none());
    // Sorted by time: bob, carol, alice, dan.
    let players: Vec<&str> = s.arrivals.iter().map(|a| a.player.as_str()).collect();
    assert_eq!(players, ["bob", "carol", "alice", "dan"]);
    assert_eq!(attrs.list(2, "modes"), Some(vec!["ctf", "koth"]));
    assert_eq!(attrs.number(2, "level"), Some(42.0));
    assert_eq!(attrs.raw(1, "level"), None);
    assert_eq!(attrs.raw(3, "modes"), None);
    assert!(s
        .describe()
        .contains("attributes from the trace: `modes`, `level`"));
    // --write-trace's format reads back the same.
    let back = Scenario::from_csv(&s.to_csv()).unwrap();
    assert_eq!(back.arrivals, s.arrivals);
    assert_eq!(back.attrs.as_ref().unwrap().values, attrs.values);
    let generated =
        trace(5.0, 30.0, "1:0.7,3:0.3", 9).with_attributes(&AttrSpec::issue_default(), 9);
    let back = Scenario::from_csv(&generated.to_csv()).unwrap();
    assert_eq!(back.attrs.unwrap().values, generated.attrs.unwrap().values);

    for (csv, says) in [
        (
            "time,player,rating,attr:Modes\n0,a,1",
            "an attribute is [a-z]",
        ),
        ("time,player,rating,attr:\n0,a,1", "an attribute is [a-z]"),
        (
            "time,player,rating,attr:modes,attr:modes\n0,a,1,x,y",
            "named once",
        ),
        ("time,player,rating,attr:modes\n0,a,1", "expected 4 fields"),
        ("time,player,rating,mode\n0,a,1,x", "expected the header"),
    ] {
        let err = Scenario::from_csv(csv).unwrap_err().0;
        assert!(err.contains(says), "{csv}: {err}");
    }
}

#[test]
fn generator_flags_parse_and_describe_themselves() {
    let m = ModeSpec::parse("a:2,b:1,c:1", "1:0.5,3:0.5").unwrap();
    assert_eq!(
        m.popularity,
        [("a".into(), 0.5), ("b".into(), 0.25), ("c".into(), 0.25)]
    );
    assert!(m.to_string().contains("a 50 %") && m.to_string().contains("50 % list 3"));
    assert_eq!(
        LevelDist::parse("uniform:1,100"),
        Ok(LevelDist::Uniform(1, 100))
    );
    assert!(LevelDist::parse("uniform:1.5,100").is_err());
    assert!(LevelDist::parse("normal:50,-1").is_err());
    assert!(ModeSpec::parse("a:0", "1:1").is_err());
    assert!(ModeSpec::parse("a b:1", "1:1")
        .unwrap_err()
        .contains("not a token"));
}

fn settings_of(text: &str) -> (shared::Settings, shared::World) {
    let rs = RuleSet::from_text("r", "r.json", text, None).unwrap();
    rs.settings(
        &Environment {
            redis_url: "redis://127.0.0.1:1".into(),
            ticket_ttl_secs: 900,
            instant_match: true,
        },
        "sim0",
    )
    .unwrap()
}

#[test]
fn a_player_sends_the_trace_values_the_world_declares_typed_and_encoded_by_the_core() {
    let (settings, world) = settings_of(
        r#"{"attributes": {
              "modes": {"type": "stringList", "values": ["ctf", "koth", "dm", "tdm"], "maxItems": 4, "missing": "refuse"},
              "level": {"type": "number", "min": 1, "max": 100},
              "gear": {"type": "numberMap"},
              "build": {"type": "string", "default": "1.0"}},
            "worlds": [{"name": "w", "teamSize": 4, "attributes": ["build", "gear"],
              "rules": [{"name": "common", "type": "intersection", "attribute": "modes"},
                        {"name": "close", "type": "distance", "attribute": "level", "max": 5}]}]}"#,
    );
    let catalog = &settings.attributes;
    let csv = "time,player,rating,attr:modes,attr:level,attr:gear,attr:other\n\
               0,a,1,koth|ctf,42,sword:3|shield:1.5,x\n\
               1,b,1,,7,,\n\
               2,c,1,ctf|chess,7,,\n\
               3,d,1,dm,high,,\n";
    let s = Scenario::from_csv(csv).unwrap();
    let encode = |p: usize, first_only: Option<&str>| {
        ticket_attributes(catalog, &s, p, &world, first_only)
            .unwrap()
            .map(|a| a.encode(catalog))
    };
    // The catalog's order (the simulator reads a rule set into a
    // serde_json::Value, which sorts the declarations by name), lists
    // sorted, the default filled in; `other` is not the world's.
    let order: Vec<&str> = catalog.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(order, ["build", "gear", "level", "modes"]);
    assert_eq!(
        encode(0, None).unwrap(),
        "build=1.0;gear=shield:1.5,sword:3;level=42;modes=ctf,koth"
    );
    assert_eq!(
        encode(0, Some("modes")).unwrap(),
        "build=1.0;gear=shield:1.5,sword:3;level=42;modes=koth"
    );
    // Refused as the HTTP layer refuses: a required list missing, a value
    // not allowed, a number that is not one.
    assert!(encode(1, None).unwrap_err().contains("modes"));
    assert!(encode(2, None).unwrap_err().contains("modes"));
    assert!(encode(3, None).unwrap_err().contains("level"));
    // A world without attributes takes none.
    let (plain_settings, plain) = settings_of(r#"{"worlds": [{"name": "p", "teamSize": 4}]}"#);
    assert!(ticket_attributes(&plain_settings.attributes, &s, 0, &plain, None).is_none());
    // Typing alone.
    let decl = catalog.get("gear").unwrap();
    assert_eq!(
        typed_value(decl, "a:1|b:x", false),
        serde_json::json!("a:1|b:x")
    );
    let decl = catalog.get("modes").unwrap();
    assert_eq!(typed_value(decl, "dm|tdm", true), serde_json::json!(["dm"]));
}

#[test]
fn the_shipped_attribute_rule_sets_are_valid() {
    // The attributes scenario's two, and the candidate window's study.
    let dirs = ["attributes", "window"].map(|d| sim::rules::default_dir().join(d));
    let files = sim::rules::expand(&dirs).unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    for f in files {
        let rs = RuleSet::from_file(&f, None).unwrap();
        let (settings, world) = rs
            .settings(
                &Environment {
                    redis_url: "redis://127.0.0.1:1".into(),
                    ticket_ttl_secs: 900,
                    instant_match: true,
                },
                "sim0",
            )
            .unwrap();
        assert!(!world.match_rules.is_empty(), "{}", f.display());
        // The generated trace's attributes are accepted.
        let s = trace(5.0, 20.0, "1:1", 1).with_attributes(&AttrSpec::issue_default(), 1);
        for p in 0..s.arrivals.len() {
            let sent = ticket_attributes(&settings.attributes, &s, p, &world, None).unwrap();
            assert!(sent.is_ok(), "{}: {sent:?}", f.display());
        }
    }
}

/// The attributes scenario end to end through real, time-compressed
/// redis-servers (about 3 s): a 20-second trace with modes, levels and
/// duos through the shipped cross-mode and level worlds (with parties up
/// to 2 allowed), each played every way. Every player is accounted for,
/// nobody is refused or matched twice, every record is re-checked by the
/// rules oracle without an objection, first choice only never matches
/// players with different first choices, and the criteria, the report
/// and the charts are produced; never how long anything took. Needs
/// redis-server, libfaketime and tcmalloc, as the other e2e tests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attributes_scenario_accounts_for_everyone_and_breaks_no_rule() {
    use sim::attributes;
    use sim::outcome::{AttrVariant, Fate, Kind};

    let scenario =
        trace(8.0, 20.0, "1:0.8,2:0.2", 5).with_attributes(&AttrSpec::issue_default(), 5);
    let n = scenario.arrivals.len();
    assert!(n > 120 && scenario.has_parties(), "{n}");
    let shipped = |name: &str| {
        let path = sim::rules::default_dir().join("attributes").join(name);
        let mut doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        doc["worlds"][0]["maxPartySize"] = 2.into();
        RuleSet::from_text(
            name.trim_end_matches(".json"),
            &path.display().to_string(),
            &doc.to_string(),
            None,
        )
        .unwrap()
    };
    let dir = std::env::temp_dir().join(format!("mm-sim-test-attributes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = sim::Config {
        scenario: scenario.clone(),
        rule_sets: vec![shipped("crossmode.json"), shipped("level.json")],
        team_size: 4,
        ticket_ttl_secs: 600,
        instant_match: true,
        drain: 30.0,
        oracle_periods: vec![],
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
        accept_probabilities: vec![],
        answering: sim::engine::Answering::default(),
        regions: false,
        attributes: true,
    };
    let outcome = sim::simulate(&config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let labels: Vec<&str> = outcome.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "crossmode as written",
            "crossmode first choice only",
            "crossmode without rules",
            "crossmode window 4096",
            "level as written",
            "level without rules",
            "level window 4096",
        ]
    );
    let attrs = scenario.attrs.as_ref().unwrap();
    for run in &outcome.runs {
        eprintln!("{}: {:?}", run.label, run.notes);
        let Kind::Attributes { variant, .. } = &run.kind else {
            panic!("{}: {:?}", run.label, run.kind);
        };
        assert_eq!(run.failures, 0, "{}: {:?}", run.label, run.notes);
        let count = |want: fn(&Fate) -> bool| run.fates.iter().filter(|f| want(f)).count();
        let matched = count(|f| matches!(f, Fate::Matched { .. }));
        let waiting = count(|f| matches!(f, Fate::Waiting));
        assert_eq!(count(|f| matches!(f, Fate::Refused)), 0, "{}", run.label);
        assert_eq!(matched + waiting, n, "{}: nothing expires", run.label);
        assert!(matched > n / 2, "{}: {matched} of {n}", run.label);
        for note in &run.notes {
            assert!(
                !note.starts_with("INCONSISTENT")
                    && !note.starts_with("MISMATCH")
                    && !note.starts_with("VIOLATION")
                    && !note.contains("failed"),
                "{}: {note}",
                run.label
            );
        }
        let mut seen = HashSet::new();
        for m in &run.matches {
            assert_eq!(m.players.len(), 4, "{}", run.label);
            assert!(m.players.iter().all(|p| seen.insert(*p)), "{}", run.label);
            match variant {
                AttrVariant::WithoutRules => assert!(m.rules.is_none(), "{}", run.label),
                _ => {
                    let rules = m.rules.as_ref().unwrap();
                    assert_eq!(rules.violation, None, "{}", run.label);
                    assert_eq!(rules.misrecorded, 0, "{}", run.label);
                    assert!(rules.anchor.is_some() && rules.anchor_wait.is_some());
                }
            }
            if *variant == AttrVariant::FirstChoiceOnly {
                let firsts: HashSet<&str> = m
                    .players
                    .iter()
                    .map(|&p| attrs.list(p, MODES).unwrap()[0])
                    .collect();
                assert_eq!(firsts.len(), 1, "{}: one queue per mode", run.label);
            }
        }
        assert_eq!(seen.len(), matched, "{}", run.label);
        let o = attributes::overall(run);
        assert_eq!(o.violations + o.misrecorded, 0, "{}", run.label);
    }
    // Crossmode records name the mode in common; the level world's
    // matches are within the number in force.
    let played = attributes::modes_played(&scenario, &outcome.runs[0], "commonMode", MODES);
    assert_eq!(played.recorded, outcome.runs[0].matches.len());
    assert_eq!(played.none_in_common, 0);
    let without = attributes::modes_played(&scenario, &outcome.runs[2], "commonMode", MODES);
    assert_eq!(without.recorded, 0);
    let checks = attributes::criteria(&scenario, &outcome.runs);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["A1", "A2", "A2"]);
    assert!(checks[1].pass && checks[2].pass, "{checks:?}");
    let charts = attributes::plot::charts(&dir, &scenario, &outcome.runs).unwrap();
    assert_eq!(charts.len(), 2);
    for c in &charts {
        assert!(std::fs::read_to_string(c).unwrap().contains("<svg"));
    }
    let ctx = sim::report::Context {
        title: "t".into(),
        scenario: scenario.describe(),
        acceptance_note: None,
        team_size: 4,
        oracle_shape: outcome.oracle_shape,
        drain: 30.0,
        speed: 20.0,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 1.0,
        instant_match: true,
        rule_sets: outcome.rule_sets.clone(),
        command: "scripts/sim.sh --attributes".into(),
        core: None,
    };
    let md = attributes::report::render(&ctx, &scenario, &outcome.runs, &checks, true);
    for part in [
        "## Done criteria",
        "### Wait by the number of modes listed",
        "### Modes played",
        "### `level` spread against wait",
        "crossmode-waits-by-modes-listed.svg",
        "level-spread-vs-wait.svg",
    ] {
        assert!(md.contains(part), "{part}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
