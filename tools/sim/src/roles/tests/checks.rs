//! The offline checks, the accounting of every arrival and the targets
//! over finished lanes (the role-queue study's tests, continued).

use super::*;

/// A trace of `offers`, one arrival a second.
fn trace_of(offers: &[Offer]) -> Trace {
    let arrivals = offers
        .iter()
        .enumerate()
        .map(|(i, o)| Arrival {
            time: i as f64,
            offer: *o,
        })
        .collect();
    Trace::of(arrivals, 1.0, offers.len() as f64, Mix::issue()).unwrap()
}

/// Ten arrivals making two full teams of the issue's role queue: t, h,
/// d, d, d twice (r000001 … r000010), the sixth a flexible tank/damage
/// player.
fn ten() -> (Trace, Vec<&'static str>) {
    let (t, h, d) = (
        Offer::single(Role::Tank),
        Offer::single(Role::Healer),
        Offer::single(Role::Damage),
    );
    let offers = [
        t,
        h,
        d,
        d,
        d,
        Offer::two(Role::Damage, Role::Tank),
        h,
        d,
        d,
        d,
    ];
    let roles = vec![
        "tank", "healer", "damage", "damage", "damage", "tank", "healer", "damage", "damage",
        "damage",
    ];
    (trace_of(&offers), roles)
}

/// A record of `trace`'s first ten players as the role queue records it,
/// with `roles` (by arrival) and `teams` of five.
fn record_of(trace: &Trace, id: &str, roles: &[&str], at: u64) -> MatchRecord {
    let ids: Vec<&str> = trace.ids.iter().take(10).map(|p| p.as_str()).collect();
    let attributes: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut sorted: Vec<String> = trace.arrivals[i]
                .offer
                .roles()
                .iter()
                .map(|r| r.name().to_owned())
                .collect();
            sorted.sort();
            ((*p).to_owned(), json!({ "roles": sorted }))
        })
        .collect();
    let played: serde_json::Map<String, serde_json::Value> = ids
        .iter()
        .zip(roles)
        .map(|(p, r)| ((*p).to_owned(), json!(r)))
        .collect();
    serde_json::from_value(json!({
        "matchId": id, "worldType": "roles5v5", "participants": ids, "matchedAt": at,
        "teams": [ids[..5].to_vec(), ids[5..].to_vec()],
        "attributes": attributes,
        "rules": [{"name": "roleQueue", "inForce": true}],
        "roles": played,
        "anchor": ids[0], "anchorWaitMs": 1000
    }))
    .unwrap()
}

fn spec(quotas: Option<Quotas>) -> Spec {
    Spec {
        attribute: "roles".into(),
        seats: 10,
        teams: 2,
        quotas,
    }
}

#[test]
fn the_offline_checks_find_planted_violations() {
    let rs = rule_set();
    let (settings, world) = rs.settings(&env(), "r4").unwrap();
    let oracle = Some((&world, &settings.attributes));
    let (trace, roles) = ten();
    let good = record_of(&trace, "m1", &roles, 10_000);
    let v = verdict(
        std::slice::from_ref(&good),
        &trace,
        &spec(Some(quotas_5())),
        oracle,
    );
    assert!(v.clean(), "{v:?}");
    assert_eq!((v.checked, v.with_roles), (1, 1));
    assert!(v.describe().starts_with("1 records"), "{}", v.describe());
    // A damage-only player as the tank (and the tank as damage): both the
    // recount and the rules oracle object.
    let mut swapped = roles.clone();
    swapped.swap(0, 2);
    let bad = record_of(&trace, "m2", &swapped, 11_000);
    let v = verdict(
        &[good.clone(), bad],
        &trace,
        &spec(Some(quotas_5())),
        oracle,
    );
    assert_eq!((v.role_breaches, v.objections), (1, 1), "{v:?}");
    assert!(v.examples.iter().any(|e| e.contains("m2")), "{v:?}");
    assert!(v.describe().starts_with("VIOLATION"));
    // Two tanks on one team (the flexible player moved): the counts break.
    let mut teams = good.clone();
    let t = teams.teams.as_mut().unwrap();
    let moved = t[1].remove(0);
    let back = t[0].remove(2);
    t[0].push(moved);
    t[1].push(back);
    let v = verdict(&[teams], &trace, &spec(Some(quotas_5())), None);
    assert_eq!(v.role_breaches, 1, "{v:?}");
    assert!(v.examples[0].contains("2 tank"), "{:?}", v.examples);
    // A recorded offer that is not what was sent.
    let mut wrong = good.clone();
    let attrs = wrong.attributes.as_mut().unwrap();
    attrs.get_mut("r000003").unwrap()["roles"] = json!(["healer"]);
    let v = verdict(&[wrong], &trace, &spec(Some(quotas_5())), None);
    assert_eq!(v.misrecorded, 1, "{v:?}");
    // A player twice, a team short: malformed.
    let mut twice = good.clone();
    twice.participants[9] = twice.participants[0].clone();
    let v = verdict(&[twice], &trace, &spec(None), None);
    assert_eq!(v.malformed, 1, "{v:?}");
    // Without a quota rule, roles are not asked for.
    let mut plain = good;
    plain.roles = None;
    let v = verdict(&[plain], &trace, &spec(None), None);
    assert!(v.clean() && v.with_roles == 0, "{v:?}");
}

fn joined(arrival: usize, sent_ms: f64, entered: Entered) -> Joined {
    Joined {
        arrival,
        sent_ms,
        lag: 0.0,
        entered,
    }
}

#[test]
fn every_arrival_is_tied_to_its_match_or_accounted_for() {
    let (t, h, d) = (
        Offer::single(Role::Tank),
        Offer::single(Role::Healer),
        Offer::single(Role::Damage),
    );
    let trace = trace_of(&[t, h, d, d, Offer::two(Role::Healer, Role::Damage), d]);
    let record = |id: &str, who: &[(&str, &str)], at: u64| -> MatchRecord {
        let roles: serde_json::Map<String, serde_json::Value> = who
            .iter()
            .map(|(p, r)| ((*p).to_owned(), json!(r)))
            .collect();
        let ids: Vec<&str> = who.iter().map(|w| w.0).collect();
        serde_json::from_value(json!({
            "matchId": id, "worldType": "w", "participants": ids, "matchedAt": at, "roles": roles
        }))
        .unwrap()
    };
    let first = record(
        "m1",
        &[
            ("r000001", "tank"),
            ("r000005", "healer"),
            ("r000003", "damage"),
        ],
        5_000,
    );
    // m2 names r000001 again and a stranger.
    let second = record("m2", &[("r000001", "tank"), ("x", "damage")], 6_000);
    let joins = vec![
        joined(0, 0.0, Entered::Queued),
        joined(1, 1_000.0, Entered::Queued),
        joined(2, 2_000.0, Entered::Queued),
        joined(3, 3_000.0, Entered::Failed("boom".into())),
        joined(4, 4_000.0, Entered::Matched(vec![first.clone()])),
        joined(5, 5_000.0, Entered::Queued),
    ];
    let ledger = assemble(&trace, joins, vec![second, first], &["r000006".into()]);
    assert_eq!(ledger.records.len(), 2, "each match once");
    assert_eq!(
        ledger.fates[0],
        Fate::Matched {
            wait: 5.0,
            index: 0
        }
    );
    assert_eq!(
        ledger.fates[4],
        Fate::Matched {
            wait: 1.0,
            index: 0
        }
    );
    assert_eq!(
        ledger.fates[2],
        Fate::Matched {
            wait: 3.0,
            index: 0
        }
    );
    assert_eq!(ledger.played[4], Some(Role::Healer));
    assert_eq!(ledger.played[0], Some(Role::Tank));
    assert_eq!(ledger.fates[1], Fate::Expired);
    assert_eq!(ledger.fates[3], Fate::Refused);
    assert_eq!(ledger.fates[5], Fate::Waiting);
    assert_eq!(ledger.refused.get("error"), Some(&1));
    assert_eq!(
        (ledger.failures, ledger.first_error.as_deref()),
        (1, Some("boom"))
    );
    assert_eq!(ledger.unaccounted, 2, "r000001 twice, and x");
}

/// A lane of `variant` whose arrivals met `fates`.
fn lane(variant: Variant, fates: Vec<Fate>) -> LaneResult {
    let n = fates.len();
    LaneResult {
        label: format!("r {}", variant.describe()),
        rule_set: "r".into(),
        file: "r.json".into(),
        variant,
        description: "FIFO".into(),
        seats: 10,
        teams: 2,
        ttl: 900.0,
        attribute: "roles".into(),
        quotas: (variant == Variant::RoleQueue).then(quotas_5),
        fates,
        played: vec![None; n],
        records: Vec::new(),
        verdict: Verdict::default(),
        refused: Default::default(),
        unaccounted: 0,
        failures: 0,
        first_error: None,
        lagging: None,
        end: 100.0,
        notes: Vec::new(),
    }
}

fn matched(wait: f64) -> Fate {
    Fate::Matched { wait, index: 0 }
}

/// 20 tanks, 20 damage players and 20 players offering two roles, one a
/// second.
fn sixty() -> Trace {
    let mut offers = vec![Offer::single(Role::Tank); 20];
    offers.extend(vec![Offer::single(Role::Damage); 20]);
    offers.extend(vec![Offer::two(Role::Damage, Role::Healer); 20]);
    trace_of(&offers)
}

#[test]
fn the_targets_compare_the_lanes_as_the_issue_asks() {
    let trace = sixty();
    // Role queue: tanks wait 1..=20 s, damage 10 s, two roles 2 s.
    let mut q: Vec<Fate> = (1..=20).map(|w| matched(w as f64)).collect();
    q.extend((0..20).map(|_| matched(10.0)));
    q.extend((0..20).map(|_| matched(2.0)));
    // Role-agnostic: everyone 10 s but one of 60 waiting (p95 still 10).
    let mut a: Vec<Fate> = (0..59).map(|_| matched(10.0)).collect();
    a.push(Fate::Waiting);
    let (lq, la) = (lane(Variant::RoleQueue, q), lane(Variant::Agnostic, a));
    let r1 = scarcest_check(&lq, &la, &trace);
    assert!(r1.pass, "{}", r1.detail);
    assert!(r1.what.contains("tank"), "{}", r1.what);
    assert!(
        r1.detail.contains("19.0 s against 10.0 s: 1.90x"),
        "{}",
        r1.detail
    );
    // One role: 1..=20 and twenty 10s, p50 10 s; two roles 2 s: 0.20x.
    let r2 = two_roles_check(&lq, &trace);
    assert!(r2.pass, "{}", r2.detail);
    assert!(r2.detail.contains("0.20x"), "{}", r2.detail);
    let groups = by_group(&lq, &trace);
    assert_eq!(groups[0].1.arrivals, 20);
    assert_eq!(groups[1].1.arrivals, 0, "nobody offers only healer");
    assert_eq!(groups[3].1.p50_all, Some(2.0));
    // Tanks left waiting: the p95 falls among them, the target is missed.
    let mut q: Vec<Fate> = (1..=18).map(|w| matched(w as f64)).collect();
    q.extend([Fate::Waiting, Fate::Expired]);
    q.extend((0..20).map(|_| matched(1.0)));
    q.extend((0..20).map(|_| matched(1.0)));
    let lq = lane(Variant::RoleQueue, q);
    let r1 = scarcest_check(&lq, &la, &trace);
    assert!(!r1.pass, "{}", r1.detail);
    assert!(
        r1.detail.contains("unmatched against 10.0 s: no ratio"),
        "{}",
        r1.detail
    );
    // Two roles waiting as long as one: missed.
    let r2 = two_roles_check(&lq, &trace);
    assert!(!r2.pass, "{}", r2.detail);
    let counts = by_count(&lq, &trace);
    assert_eq!((counts[0].1.arrivals, counts[1].1.arrivals), (40, 20));
    assert_eq!(counts[0].1.unmatched(), 2);
    // The oracle's check follows the verdicts and the unaccounted.
    let checks = criteria(&[lq.clone(), la.clone()], &trace);
    assert_eq!(
        checks.iter().map(|c| c.id).collect::<Vec<_>>(),
        ["R1", "R2", "R3"]
    );
    assert!(!checks[2].pass, "nothing re-checked: {}", checks[2].detail);
    let mut lq = lq;
    lq.verdict = Verdict {
        checked: 4,
        with_roles: 4,
        ..Verdict::default()
    };
    let checks = criteria(&[lq.clone(), la.clone()], &trace);
    assert!(checks[2].pass, "{}", checks[2].detail);
    lq.verdict.with_roles = 3;
    assert!(
        !criteria(&[lq.clone(), la.clone()], &trace)[2].pass,
        "a record without roles"
    );
    lq.verdict.with_roles = 4;
    lq.verdict.objections = 1;
    assert!(!criteria(&[lq.clone(), la.clone()], &trace)[2].pass);
    lq.verdict.objections = 0;
    lq.unaccounted = 1;
    assert!(!criteria(&[lq, la], &trace)[2].pass);
}

#[test]
fn the_queue_is_counted_over_time_per_group() {
    // Arrivals at 0, 1, 2 …: a tank matched after 5 s, a damage player
    // still waiting, a two-role player expired after the 3 s lifetime.
    let trace = trace_of(&[
        Offer::single(Role::Tank),
        Offer::single(Role::Damage),
        Offer::two(Role::Tank, Role::Healer),
    ]);
    let mut l = lane(
        Variant::RoleQueue,
        vec![matched(5.0), Fate::Waiting, Fate::Expired],
    );
    l.ttl = 3.0;
    l.end = 10.0;
    let q = queue_over_time(&l, &trace, 1.0);
    assert_eq!(q.len(), 11);
    let at = |t: usize| q[t].1;
    assert_eq!(at(0), [0.0; 4]);
    assert_eq!(at(1), [1.0, 0.0, 0.0, 0.0]);
    assert_eq!(at(2), [1.0, 0.0, 1.0, 0.0]);
    assert_eq!(at(3), [1.0, 0.0, 1.0, 1.0]);
    assert_eq!(at(5), [1.0, 0.0, 1.0, 1.0]);
    assert_eq!(
        at(6),
        [0.0, 0.0, 1.0, 0.0],
        "the tank left at 5, the pair at 2 + 3"
    );
    assert_eq!(at(10), [0.0, 0.0, 1.0, 0.0]);
    // Averaged over the step: the tank waited half of 4..6.
    let q = queue_over_time(&l, &trace, 2.0);
    assert_eq!(q.len(), 6);
    assert_eq!(q[3].1, [0.5, 0.0, 1.0, 0.5]);
    let left = left_waiting(&l, &trace);
    assert_eq!(left[2], (1, 9.0));
    assert_eq!(left[0].0 + left[1].0 + left[3].0, 0);
}
