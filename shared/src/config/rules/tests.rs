//! Unit tests of the rule-set document.

use super::*;

const TTL: Duration = Duration::from_secs(600);

#[test]
fn a_rule_set_configures_each_world() {
    let (catalog, ratings, _) = parse(
        "MM_RULES",
        r#"{"worlds": [
            {"name": "duel", "teamSize": 2, "ticketTtlSeconds": 30, "requirePresence": true},
            {"name": "squad", "teamSize": 4, "mode": "fifo"}
        ]}"#,
        TTL,
    )
    .unwrap();
    assert_eq!(ratings, RatingSettings::default());
    let duel = catalog.get("duel").unwrap();
    assert_eq!(
        (duel.team_size, duel.ticket_ttl, duel.require_presence),
        (2, Duration::from_secs(30), true)
    );
    let squad = catalog.get("squad").unwrap();
    assert_eq!((squad.ticket_ttl, squad.require_presence), (TTL, false));
    let names: Vec<&str> = catalog.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["duel", "squad"], "document order is kept");
}

#[test]
fn rated_worlds_and_rating_sources_are_read() {
    let (catalog, ratings, _) = parse(
        "MM_RULES",
        r#"{"ratings": {"claim": "mmr", "default": 1500, "min": 0, "max": 5000,
                        "writerScope": "matchmaking/ratings.write"},
            "worlds": [{"name": "ranked", "teamSize": 10, "mode": "rating",
                        "rating": {"baseWindow": 50, "widenPerSecond": 10,
                                   "maxWindow": 400, "relaxAfterSeconds": 60}}]}"#,
        TTL,
    )
    .unwrap();
    assert_eq!(ratings.claim.as_deref(), Some("mmr"));
    assert_eq!(
        (ratings.default, ratings.min, ratings.max),
        (Some(1500.0), 0.0, 5000.0)
    );
    match &catalog.get("ranked").unwrap().mode {
        MatchMode::Rating(r) => {
            assert_eq!(
                (r.base_window, r.widen_per_second, r.max_window),
                (50.0, 10.0, 400.0)
            );
            assert_eq!(r.relax_after, Duration::from_secs(60));
            assert_eq!(r.window_after(Duration::from_secs(0)), Some(50.0));
            assert_eq!(r.window_after(Duration::from_secs(10)), Some(150.0));
            assert_eq!(r.window_after(Duration::from_secs(59)), Some(400.0));
            assert_eq!(r.window_after(Duration::from_secs(60)), None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn team_worlds_take_parties_and_a_balance_window() {
    let (catalog, _, _) = parse(
        "MM_RULES",
        r#"{"worlds": [
            {"name": "arena", "teamSize": 5, "teams": 2, "maxPartySize": 3},
            {"name": "ranked", "teamSize": 5, "teams": 2, "mode": "rating", "partyRating": "max",
             "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 60}},
            {"name": "balanced", "teamSize": 1, "teams": 2, "mode": "rating",
             "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 60},
             "balance": {"baseWindow": 10, "widenPerSecond": 2, "maxWindow": 40}}
        ]}"#,
        TTL,
    )
    .unwrap();
    let arena = catalog.get("arena").unwrap();
    assert_eq!((arena.teams, arena.team_size, arena.seats()), (2, 5, 10));
    assert_eq!(arena.max_party_size, 3);
    let ranked = catalog.get("ranked").unwrap();
    assert_eq!(ranked.party_rating, PartyRating::Max);
    assert_eq!(ranked.max_party_size, 5, "defaults to the team size");
    let balance = ranked.rating().unwrap().balance.clone().unwrap();
    assert_eq!(
        (
            balance.base_window,
            balance.widen_per_second,
            balance.max_window
        ),
        (50.0, 10.0, 400.0),
        "defaults to the rating window"
    );
    assert_eq!(arena.ready_check, None);
    let duel = catalog.get("balanced").unwrap();
    assert_eq!(duel.seats(), 2);
    let balance = duel.rating().unwrap().balance.clone().unwrap();
    assert_eq!(balance.max_window, 40.0);
}

#[test]
fn a_backfill_balance_is_read_apart_from_the_fresh_matches_balance() {
    let (catalog, _, _) = parse(
        "MM_RULES",
        r#"{"worlds": [
            {"name": "kept", "teamSize": 5, "teams": 2, "mode": "rating",
             "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 60},
             "balance": {"baseWindow": 20, "widenPerSecond": 2, "maxWindow": 100},
             "backfill": {"balance": {"baseWindow": 2, "widenPerSecond": 0.5, "maxWindow": 10}}},
            {"name": "lifted", "teamSize": 5, "teams": 2, "mode": "rating",
             "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 60},
             "backfill": {"balance": {"baseWindow": 1, "widenPerSecond": 0, "maxWindow": 1, "relaxAfterSeconds": 90}}},
            {"name": "plain", "teamSize": 5, "teams": 2, "mode": "rating",
             "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 60},
             "balance": {"baseWindow": 20, "widenPerSecond": 2, "maxWindow": 100}}
        ]}"#,
        TTL,
    )
    .unwrap();
    let secs = Duration::from_secs;
    let kept = catalog.get("kept").unwrap().rating().unwrap().clone();
    assert_eq!(
        kept.balance.as_ref().unwrap().after(secs(4)),
        28.0,
        "fresh matches keep theirs"
    );
    assert_eq!(kept.backfill_balance_after(secs(0)), Some(2.0));
    assert_eq!(kept.backfill_balance_after(secs(4)), Some(4.0));
    assert_eq!(
        kept.backfill_balance_after(secs(3600)),
        Some(10.0),
        "never lifted"
    );
    let lifted = catalog.get("lifted").unwrap().rating().unwrap().clone();
    assert_eq!(lifted.backfill_balance_after(secs(89)), Some(1.0));
    assert_eq!(
        lifted.backfill_balance_after(secs(90)),
        None,
        "lifted at its own time"
    );
    let plain = catalog.get("plain").unwrap().rating().unwrap().clone();
    assert_eq!(plain.backfill_balance, None);
    assert_eq!(
        plain.backfill_balance_after(secs(4)),
        Some(28.0),
        "the world's balance"
    );
    assert_eq!(
        plain.backfill_balance_after(secs(60)),
        None,
        "lifted with the rating window"
    );
}

#[test]
fn trueskill_updates_are_read_and_their_fields_checked() {
    let doc = |updates: &str| {
        format!(
            r#"{{"worlds": [{{"name": "ffa", "teamSize": 8, "mode": "rating",
                "rating": {{"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400,
                           "relaxAfterSeconds": 60, "updates": {updates}}}}}]}}"#
        )
    };
    let read = |updates: &str| parse("MM_RULES", &doc(updates), TTL);
    let updates_of = |updates: &str| {
        let (catalog, _, _) = read(updates).unwrap();
        catalog
            .get("ffa")
            .unwrap()
            .rating()
            .unwrap()
            .updates
            .unwrap()
    };
    let u = updates_of(
        r#"{"system": "trueskill", "uncertainty": 300, "beta": 150, "drawProbability": 0.01}"#,
    );
    assert_eq!(
        u.system,
        RatingSystem::TrueSkill {
            beta: 150.0,
            draw_probability: 0.01
        }
    );
    assert_eq!(u.initial_uncertainty, 300.0);
    let u = updates_of(r#"{"system": "trueskill"}"#);
    assert_eq!(
        u.system,
        RatingSystem::TrueSkill {
            beta: DEFAULT_UNCERTAINTY / 2.0,
            draw_probability: 0.1
        },
        "the defaults"
    );
    for (updates, says) in [
        (
            r#"{"system": "weng-lin", "drawProbability": 0.1}"#,
            "rating.updates.drawProbability: only for trueskill",
        ),
        (
            r#"{"system": "none", "drawProbability": 0.1}"#,
            "only for a system other than none",
        ),
        (
            r#"{"system": "trueskill", "drawProbability": 0}"#,
            "rating.updates.drawProbability: must be between 0 and 1",
        ),
        (
            r#"{"system": "trueskill", "drawProbability": 1}"#,
            "rating.updates.drawProbability: must be between 0 and 1",
        ),
        (
            r#"{"system": "trueskill", "k": 32}"#,
            "rating.updates.k: only for elo",
        ),
        (
            r#"{"system": "trueskill", "beta": -1}"#,
            "rating.updates.beta: must be a number > 0",
        ),
        (
            r#"{"system": "elo", "beta": 100}"#,
            "rating.updates.beta: only for weng-lin and trueskill",
        ),
    ] {
        let err = read(updates).expect_err(updates);
        assert!(err.reason.contains(says), "{updates}: {err}");
    }
}

#[test]
fn a_ready_check_is_read() {
    let (catalog, _, _) = parse(
        "MM_RULES",
        r#"{"worlds": [{"name": "duel", "teamSize": 2,
            "readyCheck": {"acceptSeconds": 15, "declineCooldownSeconds": 60}}]}"#,
        TTL,
    )
    .unwrap();
    assert_eq!(
        catalog.get("duel").unwrap().ready_check,
        Some(ReadyCheck {
            accept_within: Duration::from_secs(15),
            decline_cooldown: Duration::from_secs(60),
        })
    );
}

#[test]
fn bad_rule_sets_name_the_world_and_the_field() {
    for (doc, says) in [
        ("[]", "not a rule set"),
        (r#"{"worlds": [], "extra": 1}"#, "unknown field `extra`"),
        (r#"{"worlds": []}"#, "no worlds configured"),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2, "tema": 1}]}"#,
            "world \"a\": unknown field `tema`",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 1}]}"#,
            "world \"a\": teamSize",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 101}]}"#,
            "world \"a\": teamSize",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2, "ticketTtlSeconds": 0}]}"#,
            "world \"a\": ticketTtlSeconds",
        ),
        (
            r#"{"worlds": [{"name": "A", "teamSize": 2}]}"#,
            "world \"A\": name",
        ),
        (
            r#"{"worlds": [{"teamSize": 2}]}"#,
            "world #1: missing field `name`",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2, "mode": "elo"}]}"#,
            "world \"a\": unknown variant `elo`",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2}, {"name": "a", "teamSize": 3}]}"#,
            "listed twice",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 60, "teams": 2}]}"#,
            "world \"a\": teamSize: teams x teamSize must be 2..=100",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 5, "teams": 0}]}"#,
            "world \"a\": teams",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 5, "teams": 2, "maxPartySize": 6}]}"#,
            "world \"a\": maxPartySize",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 5, "candidateWindow": 512}]}"#,
            "world \"a\": candidateWindow: only for worlds with rules",
        ),
        (
            r#"{"attributes": {"m": {"type": "string"}}, "worlds": [{"name": "a", "teamSize": 10, "candidateWindow": 19, "rules": [{"name": "r", "type": "equality", "attribute": "m"}]}]}"#,
            "world \"a\": candidateWindow: must be 2 x the seats (20)..=4096, got 19",
        ),
        (
            r#"{"attributes": {"m": {"type": "string"}}, "worlds": [{"name": "a", "teamSize": 2, "candidateWindow": 4097, "rules": [{"name": "r", "type": "equality", "attribute": "m"}]}]}"#,
            "world \"a\": candidateWindow: must be 2 x the seats (4)..=4096, got 4097",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 5, "teams": 2, "balance": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 5}}]}"#,
            "world \"a\": balance: only for rated",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 5, "teams": 2, "backfill": {"balance": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 5}}}]}"#,
            "world \"a\": backfill.balance: only for rated",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 5, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 5}, "backfill": {"balance": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 5}}}]}"#,
            "world \"r\": backfill.balance: only for rated worlds with teams > 1",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 5, "teams": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 5}, "backfill": {"balance": {"baseWindow": 10, "widenPerSecond": 1, "maxWindow": 5}}}]}"#,
            "world \"r\": backfill.balance.maxWindow",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 5, "teams": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 5}, "backfill": {"balance": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 5, "relaxAfterSeconds": 0}}}]}"#,
            "world \"r\": backfill.balance.relaxAfterSeconds: must be > 0",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 5, "teams": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 5}, "backfill": {"priority": 1}}]}"#,
            "world \"r\": unknown field `priority`",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 5, "partyRating": "max"}]}"#,
            "world \"a\": partyRating",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2, "readyCheck": {"acceptSeconds": 0}}]}"#,
            "world \"a\": readyCheck.acceptSeconds",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2, "readyCheck": {"acceptSeconds": 601}}]}"#,
            "world \"a\": readyCheck.acceptSeconds",
        ),
        (
            r#"{"worlds": [{"name": "a", "teamSize": 2, "readyCheck": {"acceptSeconds": 10, "cooldown": 5}}]}"#,
            "world \"a\": unknown field `cooldown`",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 5, "teams": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 5}, "balance": {"baseWindow": 10, "widenPerSecond": 1, "maxWindow": 5}}]}"#,
            "world \"r\": balance.maxWindow",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 2, "mode": "rating"}]}"#,
            "world \"r\": rating: required",
        ),
        (
            r#"{"worlds": [{"name": "f", "teamSize": 2, "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 1, "relaxAfterSeconds": 1}}]}"#,
            "world \"f\": rating: only for",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 2, "mode": "rating", "rating": {"baseWindow": 100, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 1}}]}"#,
            "world \"r\": rating.maxWindow",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": -1, "maxWindow": 50, "relaxAfterSeconds": 1}}]}"#,
            "world \"r\": rating.widenPerSecond",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 0}}]}"#,
            "world \"r\": rating.relaxAfterSeconds",
        ),
        (
            r#"{"worlds": [{"name": "r", "teamSize": 2, "mode": "rating", "rating": {"baseWindow": 1, "widenPerSecond": 1, "maxWindow": 50, "relaxAfterSeconds": 5, "window": 3}}]}"#,
            "world \"r\": unknown field `window`",
        ),
        (
            r#"{"ratings": {"default": 9000, "max": 5000}, "worlds": [{"name": "a", "teamSize": 2}]}"#,
            "ratings: ratings.default",
        ),
        (
            r#"{"ratings": {"claim": "sub"}, "worlds": [{"name": "a", "teamSize": 2}]}"#,
            "ratings: ratings.claim",
        ),
        (
            r#"{"ratings": {"clam": "mmr"}, "worlds": [{"name": "a", "teamSize": 2}]}"#,
            "ratings: unknown field `clam`",
        ),
    ] {
        let err = parse("MM_RULES", doc, TTL).expect_err(doc);
        assert_eq!(err.var, "MM_RULES");
        assert!(err.reason.contains(says), "{doc}: {err}");
    }
}

#[test]
fn block_lists_are_off_unless_declared_and_bounded() {
    let worlds = r#""worlds": [{"name": "duel", "teamSize": 2}]"#;
    let lists = |section: &str| {
        parse("MM_RULES", &format!("{{{section}{worlds}}}"), TTL).map(|(_, _, a)| a.block_lists)
    };
    assert_eq!(lists("").unwrap(), None);
    assert_eq!(
        lists(r#""blockLists": {}, "#).unwrap(),
        Some(super::super::BlockLists {
            max_entries: super::super::BlockLists::DEFAULT_MAX_ENTRIES
        })
    );
    assert_eq!(
        lists(r#""blockLists": {"maxEntries": 1000}, "#)
            .unwrap()
            .map(|b| b.max_entries),
        Some(1000)
    );
    let refused = lists(r#""blockLists": {"maxEntries": 0}, "#).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "configuration MM_RULES: blockLists.maxEntries: must be 1..=1000, got 0"
    );
    assert!(lists(r#""blockLists": {"maxEntries": 1001}, "#).is_err());
    let typo = lists(r#""blockLists": {"maxEntires": 5}, "#).unwrap_err();
    assert!(typo.to_string().contains("maxEntires"), "{typo}");
}

#[test]
fn worlds_of_a_queue_group_share_tickets_and_a_group_holds_two_to_four() {
    let (catalog, _, _) = parse(
        "MM_RULES",
        r#"{"worlds": [
            {"name": "casual", "teamSize": 3, "queueGroup": "pvp"},
            {"name": "solo", "teamSize": 2},
            {"name": "ranked", "teamSize": 2, "queueGroup": "pvp"}
        ]}"#,
        TTL,
    )
    .unwrap();
    let names = |w: &str| -> Vec<String> {
        let world = catalog.get(w).unwrap();
        catalog
            .group(world)
            .iter()
            .map(|w| w.name.to_string())
            .collect()
    };
    assert_eq!(names("ranked"), ["casual", "ranked"]);
    assert_eq!(names("solo"), ["solo"]);
    for (worlds, says) in [
        (
            r#"{"name": "a", "teamSize": 2, "queueGroup": "pvp"}, {"name": "b", "teamSize": 2}"#,
            "a group holds 2..=4 worlds, got 1",
        ),
        (
            r#"{"name": "a", "teamSize": 2, "queueGroup": "g"}, {"name": "b", "teamSize": 2, "queueGroup": "g"},
               {"name": "c", "teamSize": 2, "queueGroup": "g"}, {"name": "d", "teamSize": 2, "queueGroup": "g"},
               {"name": "e", "teamSize": 2, "queueGroup": "g"}"#,
            "got 5",
        ),
        (
            r#"{"name": "a", "teamSize": 2, "queueGroup": "Big Group"}"#,
            "queueGroup: a name",
        ),
    ] {
        let doc = format!(r#"{{"worlds": [{worlds}]}}"#);
        let err = parse("MM_RULES", &doc, TTL).expect_err(&doc);
        assert!(err.reason.contains(says), "{doc}: {}", err.reason);
    }
}
