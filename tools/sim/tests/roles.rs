//! The role-queue scenario end to end through real, time-compressed
//! redis-servers: players offering the issue's mix of roles (15 % tanks,
//! 20 % healers, 65 % damage, a fifth of them a second role) arrive for 20
//! simulated seconds through a FIFO 2x3 world with one tank, one healer
//! and one damage player per team, as a role queue and role-agnostic.
//! Checks that every arrival is accounted for, that every role-queue
//! record gives each player a role they offered within the quotas (the
//! rules oracle and the recount agree) while the role-agnostic records
//! carry no roles, and that the targets, the report and the charts are
//! produced; never how long anything took. Needs redis-server, libfaketime
//! and (for Debian's jemalloc-linked redis-server) tcmalloc, as the other
//! e2e tests.

use sim::outcome::Fate;
use sim::roles::analysis::criteria;
use sim::roles::{plot, report, simulate, Config, Mix, Variant};
use sim::rules::RuleSet;

const TRIO: &str = r#"{
  "attributes": {"roles": {"type": "stringList", "values": ["tank", "healer", "damage"], "maxItems": 3, "missing": "refuse"}},
  "worlds": [{"name": "trio", "teamSize": 3, "teams": 2, "ticketTtlSeconds": 600, "rules": [
    {"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
      {"value": "tank", "min": 1, "max": 1},
      {"value": "healer", "min": 1, "max": 1},
      {"value": "damage", "min": 1, "max": 1}]}]}]
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_role_queue_scenario_keeps_every_team_within_its_quotas() {
    let dir = std::env::temp_dir().join(format!("mm-sim-test-roles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rs = RuleSet::from_text("trio", "trio.json", TRIO, None).unwrap();
    let config = Config {
        rule_sets: vec![rs],
        rate: 8.0,
        seconds: 20.0,
        mix: Mix::issue(),
        seed: 11,
        drain: 15.0,
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
    };
    let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
    let trace = &outcome.trace;
    let n = trace.arrivals.len();
    assert!(n > 100, "{n}");
    let labels: Vec<&str> = outcome.lanes.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["trio role queue", "trio role-agnostic"]);
    for lane in &outcome.lanes {
        eprintln!("{}: {:?} {:?}", lane.label, lane.notes, lane.refused);
        assert_eq!(lane.failures, 0, "{}: {:?}", lane.label, lane.first_error);
        assert_eq!(lane.fates.len(), n);
        assert_eq!(lane.unaccounted, 0, "{}", lane.label);
        assert!(lane.refused.is_empty(), "every arrival is a new player");
        assert!(!lane.fates.contains(&Fate::Expired), "{}", lane.label);
        let matched = lane
            .fates
            .iter()
            .filter(|f| matches!(f, Fate::Matched { .. }))
            .count();
        assert_eq!(matched, lane.records.len() * 6, "{}", lane.label);
        assert!(matched > n / 3, "{}: {matched} of {n}", lane.label);
        let v = &lane.verdict;
        assert!(v.clean(), "{}: {}", lane.label, v.describe());
        assert_eq!(v.checked, lane.records.len());
        match lane.variant {
            Variant::RoleQueue => {
                assert_eq!(v.with_roles, v.checked, "every record names the roles");
                for (a, f) in lane.fates.iter().enumerate() {
                    if matches!(f, Fate::Matched { .. }) {
                        let role = lane.played[a].expect("a matched player has a role");
                        assert!(trace.arrivals[a].offer.offers(role), "{a}: {role:?}");
                    }
                }
                let tanks = lane
                    .played
                    .iter()
                    .filter(|r| **r == Some(sim::roles::Role::Tank))
                    .count();
                assert_eq!(tanks * 6, matched * 2, "one tank per team of three");
            }
            Variant::Agnostic => {
                assert_eq!(v.with_roles, 0);
                assert!(lane.played.iter().all(Option::is_none));
            }
        }
    }
    let checks = criteria(&outcome.lanes, trace);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["R1", "R2", "R3"]);
    assert!(checks[2].pass, "{}", checks[2].detail);
    assert!(checks[0].what.contains("tank"), "{}", checks[0].what);
    let charts = plot::charts(&dir, &outcome).unwrap();
    assert_eq!(charts.len(), 4);
    assert!(charts.iter().all(|c| c.exists()));
    let ctx = report::Context {
        title: "test".into(),
        seed: 11,
        drain: 15.0,
        speed: 20.0,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 1.0,
        command: "test".into(),
        core: None,
        charts: vec!["trio-waits-cdf.svg".into()],
    };
    let text = report::render(&ctx, &outcome, &checks, true);
    for part in [
        "(R1)",
        "(R2)",
        "(R3)",
        "### Wait by role offered",
        "| tank only |",
        "| two roles |",
        "### Who waits over time",
        "![trio-waits-cdf.svg](trio-waits-cdf.svg)",
        "trio role-agnostic",
    ] {
        assert!(text.contains(part), "{part}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
