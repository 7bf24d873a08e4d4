use std::collections::HashMap;

use serde_json::json;
use shared::MatchRecord;

use super::analysis::{
    by_count, by_group, criteria, left_waiting, queue_over_time, scarcest, scarcest_check,
    seat_shares, two_roles_check, verdict, Spec,
};
use super::arrivals::Arrival;
use super::drive::{assemble, Entered, Joined};
use super::*;
use crate::rules::Environment;

fn env() -> Environment {
    Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: 900,
        instant_match: true,
    }
}

/// The issue's quotas for teams of five.
fn quotas_5() -> Quotas {
    Quotas {
        per_team: true,
        bounds: vec![
            ("tank".into(), 1, 1),
            ("healer".into(), 1, 1),
            ("damage".into(), 3, 3),
        ],
    }
}

#[test]
fn arrivals_offer_the_issues_mix_of_roles() {
    let mix = Mix::issue();
    let trace = Trace::generate(20.0, 1000.0, &mix, 7).unwrap();
    let n = trace.arrivals.len();
    assert!(
        (19_000..21_000).contains(&n),
        "{n} arrivals at 20/s for 1000 s"
    );
    assert!(trace.arrivals.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(trace.last() < 1000.0);
    assert_eq!(trace.ids[0].as_str(), "r000001");
    assert_eq!(trace.index["r000002"], 1);
    assert_eq!(trace.ids.len(), n);
    let share = |k: usize| k as f64 / n as f64;
    let primary = trace.primary_counts();
    for (r, want) in Role::ALL.into_iter().zip([0.15, 0.20, 0.65]) {
        let got = share(primary[r.index()]);
        assert!((got - want).abs() < 0.015, "{r:?}: {got}");
    }
    let groups = trace.group_counts();
    assert!((share(groups[3]) - 0.20).abs() < 0.015, "{groups:?}");
    assert_eq!(groups.iter().sum::<usize>(), n);
    // A second role is one of the other two, each about half the time.
    let mut seconds: HashMap<(Role, Role), usize> = HashMap::new();
    for a in &trace.arrivals {
        if let Some(s) = a.offer.second {
            assert_ne!(s, a.offer.primary, "{a:?}");
            *seconds.entry((a.offer.primary, s)).or_default() += 1;
        }
    }
    for p in Role::ALL {
        let others: Vec<usize> = Role::ALL
            .into_iter()
            .filter(|s| *s != p)
            .map(|s| seconds.get(&(p, s)).copied().unwrap_or(0))
            .collect();
        let all = (others[0] + others[1]) as f64;
        assert!(
            (others[0] as f64 / all - 0.5).abs() < 0.08,
            "{p:?}: {others:?}"
        );
    }
    // Who may play what follows: tank 23.5 %, healer 28 %, damage 68.5 %.
    let capable = trace.capable_counts();
    for r in Role::ALL {
        let got = share(capable[r.index()]);
        assert!((got - mix.capable(r)).abs() < 0.015, "{r:?}: {got}");
    }
    assert!((mix.capable(Role::Tank) - 0.235).abs() < 1e-12);
    assert!((mix.capable(Role::Healer) - 0.28).abs() < 1e-12);
    assert!((mix.capable(Role::Damage) - 0.685).abs() < 1e-12);
    assert!((mix.only(Role::Damage) - 0.52).abs() < 1e-12);
    // Seeded: the same seed, the same trace; another, another. Another
    // mix keeps the arrival times.
    let same = Trace::generate(20.0, 1000.0, &mix, 7).unwrap();
    assert_eq!(same.arrivals, trace.arrivals);
    let other = Trace::generate(20.0, 1000.0, &mix, 8).unwrap();
    assert_ne!(other.arrivals, trace.arrivals);
    let none = Mix {
        two_roles: 0.0,
        ..Mix::issue()
    };
    let single = Trace::generate(20.0, 1000.0, &none, 7).unwrap();
    assert!(single.arrivals.iter().all(|a| a.offer.count() == 1));
    let times = |t: &Trace| t.arrivals.iter().map(|a| a.time).collect::<Vec<_>>();
    assert_eq!(times(&single), times(&trace));
}

#[test]
fn impossible_mixes_are_refused() {
    let bad = Mix {
        shares: [0.5, 0.5, 0.5],
        two_roles: 0.2,
    };
    let err = Trace::generate(1.0, 10.0, &bad, 1).unwrap_err();
    assert!(err.contains("sum to 1"), "{err}");
    let bad = Mix {
        two_roles: 1.5,
        ..Mix::issue()
    };
    assert!(bad.validate().unwrap_err().contains("0..=1"));
    assert!(Trace::generate(0.0, 10.0, &Mix::issue(), 1).is_err());
}

#[test]
fn offers_are_grouped_and_sent_as_lists() {
    let one = Offer::single(Role::Healer);
    assert_eq!(one.json(), json!(["healer"]));
    assert_eq!(one.group(), Group::Only(Role::Healer));
    assert_eq!(one.pair(), None);
    let two = Offer::two(Role::Damage, Role::Tank);
    assert_eq!(two.json(), json!(["damage", "tank"]));
    assert_eq!(two.group(), Group::Two);
    assert_eq!(two.pair(), Some((Role::Tank, Role::Damage)));
    assert!(two.offers(Role::Tank) && two.offers(Role::Damage) && !two.offers(Role::Healer));
    assert_eq!(
        Group::ALL.map(|g| g.label()),
        ["tank only", "healer only", "damage only", "two roles"]
    );
    assert_eq!(Role::parse("tank"), Some(Role::Tank));
    assert_eq!(Role::parse("support"), None);
}

#[test]
fn the_scarcest_role_is_the_fewest_players_per_seat() {
    let shares = seat_shares(&quotas_5(), 10, 2);
    assert_eq!(shares, [Some(0.2), Some(0.2), Some(0.6)]);
    let (role, supply) = scarcest(&Mix::issue(), &shares).unwrap();
    assert_eq!(role, Role::Tank);
    assert!((supply - 0.75).abs() < 1e-12);
    // More tanks than healers: healers are the scarcest.
    let mix = Mix {
        shares: [0.25, 0.10, 0.65],
        two_roles: 0.2,
    };
    assert_eq!(scarcest(&mix, &shares).unwrap().0, Role::Healer);
    // Per match: the bounds over all the seats.
    let per_match = Quotas {
        per_team: false,
        ..quotas_5()
    };
    assert_eq!(seat_shares(&per_match, 10, 2)[0], Some(0.1));
    assert_eq!(scarcest(&Mix::issue(), &[None, None, Some(0.0)]), None);
}

fn rule_set() -> RuleSet {
    let file = crate::rules::default_dir()
        .join("roles")
        .join("fifo-5v5.json");
    RuleSet::from_file(&file, None).unwrap()
}

#[test]
fn the_shipped_rule_set_is_the_issues_5v5_role_queue() {
    let rs = rule_set();
    let (_, world) = rs.settings(&env(), "r0").unwrap();
    assert_eq!((world.teams, world.team_size), (2, 5));
    assert_eq!(crate::rules::relax_seconds(&world), 0.0, "FIFO");
    assert_eq!(world.attributes, ["roles"]);
    let quota: Vec<_> = world
        .match_rules
        .iter()
        .filter_map(|r| match &r.kind {
            shared::config::RuleKind::Quota {
                attribute,
                per_team,
                quotas,
            } => Some((attribute.clone(), *per_team, quotas.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(quota.len(), 1);
    assert_eq!(quota[0].0, "roles");
    assert!(quota[0].1, "per team");
    let bounds: Vec<(String, u32, u32)> = quota[0]
        .2
        .iter()
        .map(|q| (q.value.clone(), q.min, q.max))
        .collect();
    assert_eq!(bounds, quotas_5().bounds);
}

#[test]
fn the_agnostic_lane_drops_the_quota_rule_and_keeps_the_roles() {
    let rs = rule_set();
    let (queue, attribute) = variant_rule_set(&rs, Variant::RoleQueue).unwrap();
    assert_eq!(attribute, "roles");
    assert_eq!(queue.label, "fifo-5v5 role queue");
    let (_, world) = queue.settings(&env(), "r1").unwrap();
    assert_eq!(world.match_rules.len(), 1);
    let (agnostic, attribute) = variant_rule_set(&rs, Variant::Agnostic).unwrap();
    assert_eq!(attribute, "roles");
    assert_eq!(agnostic.label, "fifo-5v5 role-agnostic");
    let (settings, world) = agnostic.settings(&env(), "r2").unwrap();
    assert!(world.match_rules.is_empty());
    assert_eq!(world.attributes, ["roles"], "still taken and recorded");
    // What a player sends is accepted by both.
    let body = json!({"roles": ["tank", "damage"]});
    assert!(settings
        .attributes
        .client_attributes(&world, Some(&body))
        .is_ok());
    assert!(agnostic.notes.iter().any(|n| n.contains("roleQueue")));
    // Servers are left out; other rules stay.
    let text = r#"{"attributes": {"roles": {"type": "stringList", "values": ["tank", "healer", "damage"], "maxItems": 3},
        "mode": {"type": "string"}},
        "servers": {"scope": "s"},
        "worlds": [{"name": "a", "teamSize": 3, "rules": [
            {"name": "sameMode", "type": "equality", "attribute": "mode"},
            {"name": "q", "type": "quota", "attribute": "roles", "quotas": [{"value": "tank", "min": 1, "max": 1}]}]}]}"#;
    let rs = RuleSet::from_text("m", "m.json", text, None).unwrap();
    let (agnostic, _) = variant_rule_set(&rs, Variant::Agnostic).unwrap();
    assert!(!agnostic.text.contains("servers"));
    let (_, world) = agnostic.settings(&env(), "r3").unwrap();
    let names: Vec<&str> = world.match_rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["sameMode"]);
    assert!(world.attributes.contains(&"roles".to_owned()));
}

#[test]
fn worlds_the_study_cannot_play_are_refused() {
    let refused = |text: &str, part: &str| {
        let rs = RuleSet::from_text("x", "x.json", text, None).unwrap();
        let err = variant_rule_set(&rs, Variant::Agnostic).unwrap_err();
        assert!(err.contains(part), "{part}: {err}");
    };
    refused(
        r#"{"worlds": [{"name": "a", "teamSize": 2}]}"#,
        "no quota rule",
    );
    refused(
        r#"{"worlds": [{"name": "a", "teamSize": 2, "readyCheck": {"acceptSeconds": 5, "declineCooldownSeconds": 0}}]}"#,
        "readyCheck",
    );
    refused(
        r#"{"attributes": {"roles": {"type": "stringList", "values": ["tank", "healer"], "maxItems": 2}},
            "worlds": [{"name": "a", "teamSize": 2, "rules": [
              {"name": "q", "type": "quota", "attribute": "roles", "quotas": [{"value": "tank", "min": 1, "max": 1}]},
              {"name": "n", "type": "not", "rules": ["q"]}]}]}"#,
        "compound",
    );
}

mod checks;
