use std::path::Path;

use super::*;

#[test]
fn poisson_traces_have_the_rate_and_the_distribution() {
    let s = Scenario::poisson(50.0, 600.0, 1500.0, 300.0, 7).unwrap();
    let n = s.arrivals.len() as f64;
    // 30 000 expected; a Poisson count's sd is ~173, so 3 % is > 5 sd.
    assert!((n - 30_000.0).abs() < 900.0, "{n} arrivals");
    let (mean, sd) = {
        let m = s.arrivals.iter().map(|a| a.rating).sum::<f64>() / n;
        let v = s
            .arrivals
            .iter()
            .map(|a| (a.rating - m).powi(2))
            .sum::<f64>()
            / n;
        (m, v.sqrt())
    };
    assert!((mean - 1500.0).abs() < 10.0, "mean {mean}");
    assert!((sd - 300.0).abs() < 10.0, "sd {sd}");
    // Sorted, inside the window, unique players, solo tickets.
    assert!(s.arrivals.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(s.arrivals.iter().all(|a| a.time > 0.0 && a.time < 600.0));
    let unique: std::collections::HashSet<_> = s.arrivals.iter().map(|a| &a.player).collect();
    assert_eq!(unique.len(), s.arrivals.len());
    assert!(s.arrivals.iter().all(|a| a.party_size == 1));
    // Inter-arrival gaps are exponential: mean 1/rate, and about e^-1 of
    // them are longer than the mean.
    let gaps: Vec<f64> = s
        .arrivals
        .windows(2)
        .map(|w| w[1].time - w[0].time)
        .collect();
    let mean_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean_gap - 0.02).abs() < 0.001, "mean gap {mean_gap}");
    let longer = gaps.iter().filter(|g| **g > 0.02).count() as f64 / gaps.len() as f64;
    assert!((longer - (-1f64).exp()).abs() < 0.02, "{longer}");
    // About 0.27 % beyond 3 sd.
    let tails = s
        .arrivals
        .iter()
        .filter(|a| ((a.rating - 1500.0) / 300.0).abs() >= 3.0)
        .count();
    assert!((30..=140).contains(&tails), "{tails} beyond 3 sd");
}

#[test]
fn the_same_seed_gives_the_same_trace() {
    let a = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 1).unwrap();
    let b = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 1).unwrap();
    let c = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 2).unwrap();
    assert_eq!(a.arrivals, b.arrivals);
    assert_ne!(a.arrivals, c.arrivals);
    assert!(a.differs_from_acceptance().is_some());
    let acceptance = Scenario::poisson(50.0, 600.0, 1500.0, 300.0, 9).unwrap();
    assert_eq!(acceptance.differs_from_acceptance(), None);
}

#[test]
fn bad_generator_parameters_are_refused() {
    assert!(Scenario::poisson(0.0, 60.0, 1500.0, 300.0, 1).is_err());
    assert!(Scenario::poisson(5.0, -1.0, 1500.0, 300.0, 1).is_err());
    assert!(Scenario::poisson(5.0, 60.0, 1500.0, -3.0, 1).is_err());
}

#[test]
fn csv_traces_are_read_and_sorted() {
    let s =
        Scenario::from_csv("time,player,rating\n2.5,bob,1400\n\n0.5, alice ,1600.5\n1,carol,-20\n")
            .unwrap();
    let got: Vec<(f64, &str, f64)> = s
        .arrivals
        .iter()
        .map(|a| (a.time, a.player.as_str(), a.rating))
        .collect();
    assert_eq!(
        got,
        [
            (0.5, "alice", 1600.5),
            (1.0, "carol", -20.0),
            (2.5, "bob", 1400.0)
        ]
    );
    assert_eq!(s.last_arrival(), 2.5);
    let (mean, _) = s.rating_moments();
    assert!((mean - (1600.5 - 20.0 + 1400.0) / 3.0).abs() < 1e-9);
}

#[test]
fn csv_errors_name_the_line_and_the_problem() {
    for (text, says) in [
        ("", "empty trace"),
        (
            "t,player,rating\n1,a,1",
            "line 1: expected the header time,player,rating",
        ),
        ("time,player,rating\n", "no arrivals"),
        ("time,player,rating\n1,a", "line 2: expected 3 fields"),
        ("time,player,rating\n1,a,1,2", "line 2: expected 3 fields"),
        (
            "time,player,rating\nsoon,a,1",
            "line 2: time \"soon\" is not a number",
        ),
        ("time,player,rating\n-1,a,1", "line 2: time must be"),
        (
            "time,player,rating\n1,a,high",
            "line 2: rating \"high\" is not a number",
        ),
        (
            "time,player,rating\n1,a,NaN",
            "line 2: rating must be finite",
        ),
        ("time,player,rating\n1,,5", "line 2: player \"\""),
        (
            "time,player,rating\n1,a,5\n\n2,a,6",
            "line 4: player \"a\" already arrives on line 2",
        ),
    ] {
        let err = Scenario::from_csv(text).expect_err(text);
        assert!(err.0.contains(says), "{text:?}: {err}");
    }
    let missing = Scenario::from_csv_file(Path::new("/nonexistent/trace.csv")).unwrap_err();
    assert!(
        missing.0.contains("cannot read /nonexistent/trace.csv"),
        "{missing}"
    );
}

#[test]
fn party_size_distributions_parse() {
    let p = PartySizes::parse("1:0.6, 2:0.25,3:0.15").unwrap();
    assert_eq!(p.weights(), [(1, 0.6), (2, 0.25), (3, 0.15)]);
    assert_eq!(p.largest(), 3);
    assert!(!p.is_solo());
    assert!((p.mean() - 1.55).abs() < 1e-12);
    assert_eq!(p.to_string(), "1:0.6,2:0.25,3:0.15");
    // Positional: sizes 1, 2, 3; any order of keyed items; zero weights dropped.
    assert_eq!(PartySizes::parse("0.6,0.25,0.15").unwrap(), p);
    assert_eq!(PartySizes::parse("3:0.15,1:0.6,2:0.25,4:0").unwrap(), p);
    assert_eq!(PartySizes::parse("5:1").unwrap().weights(), [(5, 1.0)]);
    assert!(PartySizes::solo().is_solo());
    for (spec, says) in [
        ("1:0.6,2:0.3", "sum to"),
        ("1:0.6,0.4", "size:probability"),
        ("0:1", "outside 1..=100"),
        ("101:1", "outside 1..=100"),
        ("1:1.5,2:-0.5", "outside 0..=1"),
        ("1:0.5,1:0.5", "listed twice"),
        ("a:1", "not a whole number"),
        ("1:x", "not a number"),
        ("1:0.5,,2:0.5", "empty item"),
    ] {
        let err = PartySizes::parse(spec).expect_err(spec);
        assert!(err.contains(says), "{spec}: {err}");
    }
}

#[test]
fn party_sizes_are_sampled_as_specified() {
    let p = PartySizes::parse("1:0.6,2:0.25,3:0.15").unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    let n = 100_000;
    let mut counts = [0usize; 4];
    for _ in 0..n {
        counts[p.sample(&mut rng) as usize] += 1;
    }
    assert_eq!(counts[0], 0);
    // Binomial sd at n = 100 000 is at most 0.0016: 0.01 is > 6 sd.
    for (size, want) in [(1, 0.6), (2, 0.25), (3, 0.15)] {
        let got = counts[size] as f64 / n as f64;
        assert!((got - want).abs() < 0.01, "size {size}: {got}");
    }
}

#[test]
fn generated_parties_arrive_together_with_the_distribution() {
    let g = Generator {
        rate: 50.0,
        seconds: 600.0,
        mean: 1500.0,
        sd: 300.0,
        seed: 7,
        parties: PartySizes::parse("1:0.6,2:0.25,3:0.15").unwrap(),
        party_sd: 100.0,
    };
    let s = Scenario::generate(g.clone()).unwrap();
    let groups = s.groups.len() as f64;
    // Arrivals (groups) at the rate, players at rate x mean size.
    assert!((groups - 30_000.0).abs() < 900.0, "{groups} groups");
    let players = s.arrivals.len() as f64;
    assert!((players / groups - 1.55).abs() < 0.02, "{players} players");
    for (size, want) in [(1, 0.6), (2, 0.25), (3, 0.15)] {
        let got = s.groups.iter().filter(|g| g.members.len() == size).count() as f64 / groups;
        assert!((got - want).abs() < 0.015, "size {size}: {got}");
    }
    // Members are adjacent, share the time and the group, know its size.
    let mut next = 0;
    for (gi, grp) in s.groups.iter().enumerate() {
        assert_eq!(grp.members[0], next);
        next += grp.members.len();
        assert_eq!(grp.is_party(), grp.label.is_some());
        for &m in &grp.members {
            let a = &s.arrivals[m];
            assert_eq!((a.time, a.group), (grp.time, gi));
            assert_eq!(a.party_size as usize, grp.members.len());
        }
    }
    assert_eq!(next, s.arrivals.len());
    assert!(s.groups.windows(2).all(|w| w[0].time <= w[1].time));
    // Every rating is still N(1500, 300); within a party the sd is ~100.
    let n = s.arrivals.len() as f64;
    let mean = s.arrivals.iter().map(|a| a.rating).sum::<f64>() / n;
    let sd = (s
        .arrivals
        .iter()
        .map(|a| (a.rating - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    assert!(
        (mean - 1500.0).abs() < 10.0 && (sd - 300.0).abs() < 10.0,
        "{mean} {sd}"
    );
    let pairs: Vec<f64> = s
        .groups
        .iter()
        .filter(|g| g.members.len() == 2)
        .map(|g| s.arrivals[g.members[0]].rating - s.arrivals[g.members[1]].rating)
        .collect();
    // The difference of two members is N(0, sqrt(2) x 100).
    let d = (pairs.iter().map(|x| x * x).sum::<f64>() / pairs.len() as f64).sqrt();
    assert!((d - 141.4).abs() < 8.0, "{d}");
    assert_eq!(s.largest_party(), 3);
    assert_eq!(s.party_sizes(), [1, 2, 3]);
    assert!(
        s.describe().contains("party sizes 1:0.6,2:0.25,3:0.15"),
        "{}",
        s.describe()
    );
    // Deterministic; and a solo distribution gives the solo generator's trace.
    assert_eq!(Scenario::generate(g).unwrap().arrivals, s.arrivals);
    let solo = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 1).unwrap();
    let solo_too = Scenario::generate(Generator {
        rate: 5.0,
        seconds: 60.0,
        mean: 1500.0,
        sd: 300.0,
        seed: 1,
        parties: PartySizes::solo(),
        party_sd: 40.0,
    })
    .unwrap();
    assert_eq!(solo.arrivals, solo_too.arrivals);
    assert!(!solo.has_parties());
}

#[test]
fn csv_traces_carry_parties() {
    let s = Scenario::from_csv(
        "time,player,rating,party\n3,solo2,1500,\n1,b,1400,x\n0.5,solo1,1,\n1,a,1600,x\n1,c,1450,x\n2,d,10,lonely\n",
    )
    .unwrap();
    let order: Vec<&str> = s.arrivals.iter().map(|a| a.player.as_str()).collect();
    // The party leader is its first row in the file: b.
    assert_eq!(order, ["solo1", "b", "a", "c", "d", "solo2"]);
    assert_eq!(s.groups.len(), 4);
    assert_eq!(s.groups[1].members, [1, 2, 3]);
    assert_eq!(s.groups[1].label.as_deref(), Some("x"));
    // A label on one row alone is a solo player.
    assert!(!s.groups[2].is_party());
    assert_eq!(s.arrivals[2].party_size, 3);
    for (text, says) in [
        (
            "time,player,rating,party\n1,a,1,x\n2,b,1,x",
            "line 3: party \"x\" arrives at 1 on line 2, here at 2",
        ),
        (
            "time,player,rating,party\n1,a,1",
            "line 2: expected 4 fields",
        ),
        (
            "time,player,rating,team\n1,a,1,x",
            "line 1: expected the header",
        ),
    ] {
        let err = Scenario::from_csv(text).expect_err(text);
        assert!(err.0.contains(says), "{text:?}: {err}");
    }
}

fn regional_trace(seed: u64) -> Scenario {
    Scenario::generate(Generator {
        rate: 20.0,
        seconds: 300.0,
        mean: 1500.0,
        sd: 300.0,
        seed,
        parties: PartySizes::parse("1:0.7,2:0.2,3:0.1").unwrap(),
        party_sd: 100.0,
    })
    .unwrap()
    .with_latencies(&LatencyModel::standard(), seed)
    .unwrap()
}

#[test]
fn the_latency_model_puts_players_at_home_with_the_shares() {
    let plain = Scenario::generate(Generator {
        rate: 20.0,
        seconds: 300.0,
        mean: 1500.0,
        sd: 300.0,
        seed: 3,
        parties: PartySizes::parse("1:0.7,2:0.2,3:0.1").unwrap(),
        party_sd: 100.0,
    })
    .unwrap();
    let s = regional_trace(3);
    // The arrivals themselves do not change.
    assert_eq!(s.arrivals, plain.arrivals);
    let geo = s.geo.as_ref().unwrap();
    assert_eq!(geo.regions, ["na-east", "na-west", "eu", "asia", "oceania"]);
    assert!(
        s.describe().contains("homes in 5 regions (na-east "),
        "{}",
        s.describe()
    );
    // Homes are drawn per arrival: shares by arrival within 2 points.
    let mut by_group = [0usize; 5];
    for g in &s.groups {
        by_group[geo.home[g.members[0]]] += 1;
        // A party plays from one place.
        assert!(g
            .members
            .iter()
            .all(|&m| geo.home[m] == geo.home[g.members[0]]));
    }
    let n = s.groups.len() as f64;
    for (i, want) in [0.40, 0.25, 0.20, 0.10, 0.05].iter().enumerate() {
        let got = by_group[i] as f64 / n;
        assert!((got - want).abs() < 0.02, "region {i}: {got} vs {want}");
    }
    let (na_east, na_west, eu, asia, oceania) = (0, 1, 2, 3, 4);
    for (p, lat) in geo.latency.iter().enumerate() {
        let lat: Vec<u32> = lat.iter().map(|l| l.unwrap()).collect();
        let h = geo.home[p];
        // Home is fastest: access 15-45 plus jitter up to 10.
        assert!((15..=55).contains(&lat[h]), "{p}: {lat:?}");
        assert_eq!((0..5).min_by_key(|&r| (lat[r], r)), Some(h), "{p}: {lat:?}");
        // Neighbours tens of ms slower, far regions over 150 ms.
        match h {
            0 => {
                assert!((80..=120).contains(&lat[na_west]), "{lat:?}");
                assert!((95..=135).contains(&lat[eu]), "{lat:?}");
                assert!(lat[asia] > 150 && lat[oceania] > 150, "{lat:?}");
            }
            2 => assert!(lat[asia] > 150 && lat[oceania] > 150 && lat[na_west] > 150),
            4 => {
                assert!((125..=165).contains(&lat[asia]), "{lat:?}");
                assert!(lat[na_east] > 150 && lat[eu] > 150, "{lat:?}");
            }
            _ => {}
        }
        assert_eq!(geo.best_region(&[p], &[0, 1, 2, 3, 4]).unwrap().0, h);
    }
    // The same seed, the same latencies; another seed, others.
    assert_eq!(regional_trace(3).geo, s.geo);
    assert_ne!(regional_trace(4).geo.unwrap().latency, geo.latency);
}

#[test]
fn a_match_plays_best_where_its_worst_member_is_lowest() {
    let s = Scenario::from_csv(
        "time,player,rating,party,home,latency:a,latency:b,latency:c\n\
         1,x,1500,,a,10,50,\n1,y,1500,,,60,20,30\n2,z,1500,,c,40,40,5\n",
    )
    .unwrap();
    let geo = s.geo.as_ref().unwrap();
    assert_eq!(geo.home, [0, 1, 2]);
    // x and y: a has worst 60, b worst 50; c is not measured by x.
    assert_eq!(geo.best_region(&[0, 1], &[0, 1, 2]), Some((1, 50)));
    assert_eq!(geo.worst_in(&[0, 1], 2), None);
    // A tie on the worst goes to the lower mean: a (40, 10) vs b (40, 50).
    assert_eq!(geo.best_region(&[0, 2], &[1, 0]), Some((0, 40)));
    assert_eq!(geo.best_region(&[0, 2], &[2]), None);
    assert_eq!(geo.cluster_sizes(), [1, 1, 1]);
}

#[test]
fn traces_with_latencies_round_trip_through_csv() {
    let s = regional_trace(5);
    let back = Scenario::from_csv(&s.to_csv()).unwrap();
    assert_eq!(back.arrivals.len(), s.arrivals.len());
    for (a, b) in s.arrivals.iter().zip(&back.arrivals) {
        assert_eq!((a.time, &a.player, a.rating), (b.time, &b.player, b.rating));
        assert_eq!(a.party_size, b.party_size);
    }
    let (g, h) = (s.geo.unwrap(), back.geo.unwrap());
    assert_eq!(
        (g.regions, g.home, g.latency),
        (h.regions, h.home, h.latency)
    );
    assert!(h.model.is_none());
    // Fractions round up as the core rounds; empty cells are unmeasured.
    let s =
        Scenario::from_csv("time,player,rating,latency:eu,latency:asia\n1,a,1,20.2,\n").unwrap();
    assert_eq!(s.geo.unwrap().latency[0], [Some(21), None]);
}

#[test]
fn csv_latency_errors_name_the_line() {
    for (text, says) in [
        (
            "time,player,rating,home\n1,a,1,eu",
            "a home column needs latency:<region> columns",
        ),
        (
            "time,player,rating,latency:eu,latency:eu\n1,a,1,2,3",
            "named once",
        ),
        ("time,player,rating,latency:EU\n1,a,1,2", "[a-z0-9-]"),
        (
            "time,player,rating,ping\n1,a,1,2",
            "line 1: expected the header",
        ),
        (
            "time,player,rating,latency:eu\n1,a,1,fast",
            "line 2: latency to eu",
        ),
        ("time,player,rating,latency:eu\n1,a,1,0", "must be > 0"),
        ("time,player,rating,latency:eu\n1,a,1,10001", "<= 10000 ms"),
        (
            "time,player,rating,latency:eu,latency:asia\n1,a,1,,",
            "line 2: no latency measured",
        ),
        (
            "time,player,rating,home,latency:eu\n1,a,1,asia,5",
            "line 2: home \"asia\" is not one of",
        ),
        (
            "time,player,rating,party,latency:eu\n1,a,1,x",
            "line 2: expected 5 fields",
        ),
    ] {
        let err = Scenario::from_csv(text).expect_err(text);
        assert!(err.0.contains(says), "{text:?}: {err}");
    }
    for (text, says) in [
        ("{}", "missing field"),
        (
            r#"{"regions":["a"],"shares":[1],"backboneMs":[[0]],"accessMs":[15,45],"jitterMs":10,"x":1}"#,
            "unknown field",
        ),
        (
            r#"{"regions":["a","a"],"shares":[0.5,0.5],"backboneMs":[[0,1],[1,0]],"accessMs":[15,45],"jitterMs":10}"#,
            "distinct",
        ),
        (
            r#"{"regions":["a"],"shares":[0.9],"backboneMs":[[0]],"accessMs":[15,45],"jitterMs":10}"#,
            "sum to 1",
        ),
        (
            r#"{"regions":["a"],"shares":[1],"backboneMs":[[0]],"accessMs":[45,15],"jitterMs":10}"#,
            "access",
        ),
    ] {
        let err = LatencyModel::from_json(text).expect_err(text);
        assert!(err.contains(says), "{text}: {err}");
    }
    let mut bad = LatencyModel::standard();
    bad.shares[0] = 0.5;
    assert!(bad.validate().unwrap_err().contains("sum to 1"));
    let mut bad = LatencyModel::standard();
    bad.backbone[0][1] = 1.0;
    assert!(bad.validate().unwrap_err().contains("symmetric"));
}

#[test]
fn every_geography_file_is_a_valid_model_and_the_default_is_world_json() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("geography");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let model = LatencyModel::from_json(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert_eq!(model.regions, LatencyModel::standard().regions, "{path:?}");
        if path.ends_with("world.json") {
            assert_eq!(model, LatencyModel::standard());
        }
        seen += 1;
    }
    assert!(seen >= 2, "{dir:?} holds the default and the sweep");
    // The table docs/simulator.md shows: Tokyo is 110 ms from Oregon and Sydney.
    let world = LatencyModel::standard();
    assert_eq!((world.backbone[1][3], world.backbone[3][4]), (110.0, 110.0));
    assert_eq!(world.shares, vec![0.40, 0.25, 0.20, 0.10, 0.05]);
}

#[test]
fn the_neighbours_maps_are_the_issues_model_and_the_world_map_is_not() {
    // Issue 21's model: home fastest, neighbours tens of ms slower, far
    // regions over 150 ms for every player.
    let literal = |m: &LatencyModel| {
        m.backbone.iter().enumerate().all(|(h, row)| {
            row.iter()
                .enumerate()
                .all(|(r, b)| r == h || (*b >= 10.0 && *b < 100.0) || m.access.0 + b > 150.0)
        })
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("geography");
    for d in [30, 50, 70, 90] {
        let text = std::fs::read_to_string(dir.join(format!("neighbours-{d}.json"))).unwrap();
        let m = LatencyModel::from_json(&text).unwrap();
        assert!(literal(&m), "neighbours-{d}.json");
        // Only the two in-between links differ from the world map.
        let world = LatencyModel::standard();
        let mut changed = Vec::new();
        for h in 0..5 {
            for r in h + 1..5 {
                if m.backbone[h][r] != world.backbone[h][r] {
                    changed.push((
                        m.regions[h].as_str(),
                        m.regions[r].as_str(),
                        m.backbone[h][r],
                    ));
                }
            }
        }
        let d = f64::from(d);
        assert_eq!(changed, [("na-west", "asia", d), ("asia", "oceania", d)]);
    }
    assert!(
        !literal(&LatencyModel::standard()),
        "Tokyo is 110 ms from Oregon"
    );
}
