//! Player attributes and match rules: each world below is a published
//! example of a reference matchmaker (PlayFab, FlexMatch), and behaves as
//! its source documents it. Every record is re-checked by the offline
//! oracle (`shared::rules::recheck`): every rule in force at the anchor's
//! wait holds, and the record tells the rules as they stood.

use std::time::Instant;

use serde_json::json;
use shared::store::JoinInput;
use shared::PartyJoinOutcome;

use super::*;

pub(super) fn store_for(
    env: &Env,
    ns: &str,
    rules: &serde_json::Value,
    instant: bool,
) -> MatchStore {
    env.store_with(
        ns,
        "",
        &[
            ("MM_RULES", &rules.to_string()),
            ("MM_INSTANT_MATCH", if instant { "true" } else { "false" }),
        ],
    )
}

/// `attrs` as the scripts take them, validated as the HTTP layer does.
pub(super) fn encoded(store: &MatchStore, w: &str, attrs: &serde_json::Value) -> String {
    let catalog = &store.settings().attributes;
    catalog
        .client_attributes(world(store, w), Some(attrs))
        .unwrap_or_else(|e| panic!("{attrs} is valid: {e}"))
        .encode(catalog)
}

pub(super) async fn join_with(
    store: &MatchStore,
    w: &str,
    p: &str,
    attrs: serde_json::Value,
) -> JoinOutcome {
    let text = encoded(store, w, &attrs);
    let input = JoinInput {
        attributes: Some(&text),
        ..JoinInput::default()
    };
    store
        .join_reply(world(store, w), &player(p), &input, false)
        .await
        .expect("join")
        .outcome
}

pub(super) async fn waiting(store: &MatchStore, p: &str) -> bool {
    matches!(
        store.player_status(&player(p)).await.expect("status"),
        PlayerStatus::Queued(_)
    )
}

/// The oracle's verdict on `record`: it must hold.
pub(super) fn recheck(store: &MatchStore, record: &MatchRecord) {
    let w = world(store, record.world_type.as_str());
    if let Err(e) = shared::rules::recheck(w, &store.settings().attributes, record) {
        panic!("record breaks the rules: {e}\n{record:?}");
    }
}

pub(super) fn names(record: &MatchRecord) -> Vec<&str> {
    let mut out: Vec<&str> = record.participants.iter().map(PlayerId::as_str).collect();
    out.sort_unstable();
    out
}

fn outcome<'a>(record: &'a MatchRecord, rule: &str) -> &'a shared::RuleOutcome {
    record
        .rules
        .as_ref()
        .and_then(|r| r.iter().find(|o| o.name == rule))
        .unwrap_or_else(|| panic!("{rule} is in the record: {record:?}"))
}

/// Forms matches in `w` once, as the matcher's tick asks (limit 0: the
/// store passes anchored worlds their anchors per call).
pub(super) async fn tick(store: &MatchStore, w: &str) -> Vec<MatchRecord> {
    let batch = store.form_matches(world(store, w), 0).await.expect("form");
    batch.matches
}

/// PlayFab's quick match with an optional build rule: a string equality
/// with "match any" when a ticket has no build. Same builds pair, a ticket
/// without a build pairs with anyone, two different builds never meet.
pub async fn an_optional_build_rule_matches_any_when_not_specified(env: &Env) {
    let rules = json!({
        "attributes": {"build": {"type": "string", "missing": "any"}},
        "worlds": [{"name": "quick", "teamSize": 2,
                    "rules": [{"name": "sameBuild", "type": "equality", "attribute": "build"}]}]
    });
    let store = store_for(env, "attr-build", &rules, true);
    let a = join_with(&store, "quick", "a", json!({"build": "1.4"})).await;
    assert!(matches!(a, JoinOutcome::Queued(_)), "{a:?}");
    let b = join_with(&store, "quick", "b", json!({"build": "1.5"})).await;
    assert!(
        matches!(b, JoinOutcome::Queued(_)),
        "1.5 never meets 1.4: {b:?}"
    );
    let JoinOutcome::Matched { record, .. } = join_with(&store, "quick", "c", json!({})).await
    else {
        panic!("a ticket without a build pairs with the oldest");
    };
    assert_eq!(names(&record), ["a", "c"]);
    recheck(&store, &record);
    assert_eq!(record.anchor.as_ref().map(PlayerId::as_str), Some("c"));
    let attrs = record.attributes.as_deref().expect("attributes recorded");
    assert_eq!(attrs["a"]["build"], "1.4");
    assert!(!attrs.contains_key("c"), "c has no attributes: {attrs:?}");
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "quick", "d", json!({"build": "1.5"})).await
    else {
        panic!("d meets b");
    };
    assert_eq!(names(&record), ["b", "d"]);
    recheck(&store, &record);
    for (p, build) in [("e", "1.4"), ("f", "1.5"), ("g", "1.6")] {
        join_with(&store, "quick", p, json!({"build": build})).await;
    }
    assert!(tick(&store, "quick").await.is_empty());
    for p in ["e", "f", "g"] {
        assert!(waiting(&store, p).await, "{p} waits");
    }
}

/// PlayFab's cross game modes through a set intersection: every match
/// shares a mode and the record says which; once the rule turns optional
/// (after the anchor's own wait), players with nothing in common meet.
pub async fn cross_mode_matches_share_a_mode_until_the_rule_is_optional(env: &Env) {
    let rules = json!({
        "attributes": {"modes": {"type": "stringList", "values": ["ffa", "duel", "ctf", "koth"], "maxItems": 4,
                                 "missing": "refuse"}},
        "worlds": [{"name": "modes", "teamSize": 4,
                    "rules": [{"name": "commonMode", "type": "intersection", "attribute": "modes",
                               "optionalAfterSeconds": 2}]}]
    });
    let store = store_for(env, "attr-modes", &rules, false);
    let joined = Instant::now();
    for (p, modes) in [
        ("a", json!(["ffa", "ctf"])),
        ("b", json!(["ctf"])),
        ("c", json!(["duel", "ctf", "ffa"])),
        ("d", json!(["koth", "ctf"])),
        ("e", json!(["ffa"])),
        ("f", json!(["duel"])),
        ("g", json!(["koth"])),
    ] {
        join_with(&store, "modes", p, json!({"modes": modes})).await;
    }
    // Anchors are due a tick after they join.
    let formed = eventually("a match sharing ctf", Duration::from_secs(3), || async {
        Some(tick(&store, "modes").await).filter(|f| !f.is_empty())
    })
    .await;
    assert_eq!(formed.len(), 1, "{formed:?}");
    let record = &formed[0];
    assert_eq!(names(record), ["a", "b", "c", "d"]);
    let common = outcome(record, "commonMode");
    assert!(common.in_force);
    assert_eq!(common.shared.as_deref(), Some(&["ctf".to_string()][..]));
    recheck(&store, record);
    // e, f, g and h share nothing: they wait until the rule is optional
    // for the oldest of them (2 s after e joined, at most a tick later).
    join_with(&store, "modes", "h", json!({"modes": ["ctf"]})).await;
    assert!(tick(&store, "modes").await.is_empty());
    let record = eventually(
        "the rule to turn optional",
        Duration::from_secs(6),
        || async { tick(&store, "modes").await.pop() },
    )
    .await;
    assert!(joined.elapsed() >= Duration::from_millis(1900));
    assert_eq!(names(&record), ["e", "f", "g", "h"]);
    assert!(!outcome(&record, "commonMode").in_force, "{record:?}");
    assert!(record.anchor_wait_ms.unwrap_or(0) >= 2000, "{record:?}");
    recheck(&store, &record);
}

/// The matcher's own tick (`shared::matcher::tick`, what the matcher
/// Lambda runs: "no limit" for a FIFO world) forms matches in a FIFO world
/// with attributes: such a world is matched around anchors, and its calls
/// carry the anchors-per-call limit (the script refuses a limit of 0 for
/// anchored worlds, so every tick failed and only joins formed matches).
pub async fn the_matcher_tick_forms_matches_in_a_fifo_world_with_attributes(env: &Env) {
    let rules = json!({
        "attributes": {"modes": {"type": "stringList", "values": ["ctf", "dm"], "maxItems": 2,
                                 "missing": "refuse"}},
        "worlds": [{"name": "modes", "teamSize": 2,
                    "rules": [{"name": "commonMode", "type": "intersection", "attribute": "modes"}]}]
    });
    let store = store_for(env, "attr-tick", &rules, false);
    for (p, modes) in [
        ("a", json!(["ctf"])),
        ("b", json!(["dm"])),
        ("c", json!(["dm", "ctf"])),
    ] {
        join_with(&store, "modes", p, json!({"modes": modes})).await;
    }
    let pusher = RecordingPusher::default();
    // Anchors are due a tick after they join.
    let record = eventually(
        "a tick to form the match",
        Duration::from_secs(3),
        || async {
            let report = shared::matcher::tick(&store, &pusher)
                .await
                .expect("the tick succeeds");
            report.worlds.into_iter().flat_map(|w| w.formed).next()
        },
    )
    .await;
    assert_eq!(names(&record), ["a", "c"]);
    assert_eq!(
        outcome(&record, "commonMode").shared.as_deref(),
        Some(&["ctf".to_string()][..])
    );
    recheck(&store, &record);
    assert!(
        waiting(&store, "b").await,
        "b shares nothing with anyone left"
    );
}

/// PlayFab's difference rule with linear expansion: a skill spread of 0.2
/// widening by 0.1 a second up to 0.5, on the anchor's own wait; two
/// players 0.4 apart meet after two seconds, and one 0.45 from the nearest
/// other is still waiting then.
pub async fn a_distance_rule_widens_linearly_with_the_anchors_wait(env: &Env) {
    let rules = json!({
        "attributes": {"skill": {"type": "number", "min": 0, "max": 1, "default": 0.5}},
        "worlds": [{"name": "skill", "teamSize": 2,
                    "rules": [{"name": "skillSpread", "type": "distance", "attribute": "skill", "max": 0.2,
                               "relax": {"perSecond": 0.1, "limit": 0.5}}]}]
    });
    let store = store_for(env, "attr-skill", &rules, false);
    let joined = Instant::now();
    join_with(&store, "skill", "a", json!({"skill": 0.1})).await;
    join_with(&store, "skill", "b", json!({"skill": 0.5})).await;
    join_with(&store, "skill", "c", json!({"skill": 0.95})).await;
    assert!(tick(&store, "skill").await.is_empty());
    let formed = eventually("a window of 0.4", Duration::from_secs(6), || async {
        Some(tick(&store, "skill").await).filter(|f| !f.is_empty())
    })
    .await;
    assert!(
        joined.elapsed() >= Duration::from_millis(1900),
        "{formed:?}"
    );
    assert_eq!(formed.len(), 1, "{formed:?}");
    let record = &formed[0];
    assert_eq!(names(record), ["a", "b"]);
    recheck(&store, record);
    let spread = outcome(record, "skillSpread");
    assert!(spread.in_force);
    let v = spread
        .value
        .as_ref()
        .and_then(serde_json::Value::as_f64)
        .unwrap();
    assert!((0.4..=0.5).contains(&v), "{v}");
    assert!(waiting(&store, "c").await);
}

/// FlexMatch's "same game mode" and "all different characters": a 1 v 1
/// in one mode, never with the same character twice.
pub async fn same_mode_and_all_different_characters(env: &Env) {
    let rules = json!({
        "attributes": {
            "mode": {"type": "string", "values": ["ranked", "casual"], "missing": "refuse"},
            "character": {"type": "string", "maxLength": 16, "missing": "refuse"}
        },
        "worlds": [{"name": "duel", "teamSize": 1, "teams": 2,
                    "rules": [{"name": "sameMode", "type": "equality", "attribute": "mode"},
                              {"name": "uniqueCharacters", "type": "comparison", "attribute": "character",
                               "op": "allDifferent"}]}]
    });
    let store = store_for(env, "attr-duel", &rules, true);
    let q = |o: JoinOutcome| assert!(matches!(o, JoinOutcome::Queued(_)), "{o:?}");
    q(join_with(
        &store,
        "duel",
        "a",
        json!({"mode": "ranked", "character": "mercy"}),
    )
    .await);
    q(join_with(
        &store,
        "duel",
        "b",
        json!({"mode": "ranked", "character": "mercy"}),
    )
    .await);
    q(join_with(
        &store,
        "duel",
        "c",
        json!({"mode": "casual", "character": "ana"}),
    )
    .await);
    let JoinOutcome::Matched { record, .. } = join_with(
        &store,
        "duel",
        "d",
        json!({"mode": "ranked", "character": "ana"}),
    )
    .await
    else {
        panic!("d meets the oldest ranked player");
    };
    assert_eq!(names(&record), ["a", "d"]);
    assert_eq!(record.teams.as_ref().map(Vec::len), Some(2));
    recheck(&store, &record);
    assert!(waiting(&store, "b").await && waiting(&store, "c").await);
}

/// FlexMatch's compound rule (its example 10): the same map and mode, or a
/// league within 2 and a skill within 10 (20 after 10 s); every match
/// satisfies a branch and the record says which.
pub async fn a_compound_rule_records_the_branch_that_held(env: &Env) {
    let rules = json!({
        "attributes": {
            "map": {"type": "string", "missing": "refuse"},
            "mode": {"type": "string", "missing": "refuse"},
            "league": {"type": "number", "min": 0, "max": 10, "missing": "refuse"},
            "skill": {"type": "number", "min": 0, "max": 1000, "missing": "refuse"}
        },
        "worlds": [{"name": "arena", "teamSize": 2, "rules": [
            {"name": "sameMap", "type": "equality", "attribute": "map"},
            {"name": "sameMode", "type": "equality", "attribute": "mode"},
            {"name": "leagueClose", "type": "distance", "attribute": "league", "max": 2},
            {"name": "skillClose", "type": "distance", "attribute": "skill", "max": 10,
             "relax": {"steps": [{"afterSeconds": 10, "value": 20}, {"afterSeconds": 20, "value": 40}]}},
            {"name": "mapAndMode", "type": "compound", "op": "and", "rules": ["sameMap", "sameMode"]},
            {"name": "leagueAndSkill", "type": "compound", "op": "and", "rules": ["leagueClose", "skillClose"]},
            {"name": "either", "type": "compound", "op": "or", "rules": ["mapAndMode", "leagueAndSkill"]}
        ]}]
    });
    let store = store_for(env, "attr-compound", &rules, true);
    let p = |map: &str, mode: &str, league: u32, skill: u32| json!({"map": map, "mode": mode, "league": league, "skill": skill});
    join_with(&store, "arena", "a", p("dust", "ctf", 1, 100)).await;
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "arena", "b", p("dust", "ctf", 9, 500)).await
    else {
        panic!("same map and mode");
    };
    assert_eq!(
        outcome(&record, "either").held.as_deref(),
        Some(&["mapAndMode".to_string()][..])
    );
    recheck(&store, &record);
    // The allocator's event tells the same.
    let event: serde_json::Value =
        serde_json::from_str(&shared::MatchEvent::of(&record).to_json()).expect("event JSON");
    assert_eq!(event["rules"], serde_json::to_value(&record.rules).unwrap());
    assert_eq!(event["teams"][0][0]["attributes"]["map"], "dust", "{event}");
    assert!(event["anchorWaitMs"].is_u64(), "{event}");
    join_with(&store, "arena", "c", p("dust", "ffa", 3, 200)).await;
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "arena", "d", p("nuke", "duel", 4, 205)).await
    else {
        panic!("league and skill close");
    };
    assert_eq!(
        outcome(&record, "either").held.as_deref(),
        Some(&["leagueAndSkill".to_string()][..])
    );
    recheck(&store, &record);
    join_with(&store, "arena", "e", p("dust", "ffa", 1, 0)).await;
    let f = join_with(&store, "arena", "f", p("nuke", "ffa", 9, 0)).await;
    assert!(
        matches!(f, JoinOutcome::Queued(_)),
        "no branch holds: {f:?}"
    );
}

/// Parties: members must agree on an equality attribute (a conflicting
/// member is refused and nothing is written); numbers are averaged per
/// rule, so a party of 10 and 20 plays with a solo of 15.
pub async fn a_party_agrees_on_equal_attributes_and_averages_numbers(env: &Env) {
    let rules = json!({
        "attributes": {
            "mode": {"type": "string", "values": ["ranked", "casual"], "missing": "refuse"},
            "level": {"type": "number", "min": 1, "max": 100, "missing": "refuse"}
        },
        "worlds": [{"name": "squad", "teamSize": 3, "rules": [
            {"name": "sameMode", "type": "equality", "attribute": "mode"},
            {"name": "levelClose", "type": "distance", "attribute": "level", "max": 2}
        ]}]
    });
    let store = store_for(env, "attr-party", &rules, true);
    let w = world(&store, "squad");
    let leader = encoded(&store, "squad", &json!({"mode": "ranked", "level": 10}));
    let created = store
        .create_party_with(
            w,
            &player("lead"),
            &players(&["mate"]),
            &JoinInput {
                attributes: Some(&leader),
                ..JoinInput::default()
            },
        )
        .await
        .expect("create");
    let shared::PartyCreateOutcome::Created(party) = created else {
        panic!("{created:?}");
    };
    let casual = encoded(&store, "squad", &json!({"mode": "casual", "level": 20}));
    let before = snapshot(&store).await;
    let refused = store
        .join_party_claiming(
            w,
            &party.party_id,
            &player("mate"),
            &JoinInput {
                attributes: Some(&casual),
                ..JoinInput::default()
            },
            false,
        )
        .await
        .expect("join party");
    assert!(
        matches!(&refused, PartyJoinOutcome::AttributesConflict { attribute, .. } if attribute == "mode"),
        "{refused:?}"
    );
    assert_eq!(snapshot(&store).await, before, "a refusal writes nothing");
    join_with(
        &store,
        "squad",
        "solo",
        json!({"mode": "ranked", "level": 15}),
    )
    .await;
    let ranked = encoded(&store, "squad", &json!({"mode": "ranked", "level": 20}));
    let joined = store
        .join_party_claiming(
            w,
            &party.party_id,
            &player("mate"),
            &JoinInput {
                attributes: Some(&ranked),
                ..JoinInput::default()
            },
            false,
        )
        .await
        .expect("join party");
    let PartyJoinOutcome::Matched { record, .. } = joined else {
        panic!("the party (average 15) plays with the solo 15: {joined:?}");
    };
    assert_eq!(names(&record), ["lead", "mate", "solo"]);
    recheck(&store, &record);
}

/// Trusted attributes come from the attribute store (written by a server),
/// then the default; a required one without either refuses the join.
pub async fn trusted_attributes_come_from_the_store(env: &Env) {
    let rules = json!({
        "attributes": {
            "platform": {"type": "string", "source": "trusted", "values": ["pc", "console"], "default": "pc"},
            "tier": {"type": "number", "source": "trusted", "min": 0, "max": 9, "missing": "refuse"}
        },
        "worlds": [{"name": "cross", "teamSize": 2, "attributes": ["tier"],
                    "rules": [{"name": "samePlatform", "type": "equality", "attribute": "platform"}]}]
    });
    let store = store_for(env, "attr-trusted", &rules, true);
    let before = snapshot(&store).await;
    let refused = join_with(&store, "cross", "a", json!({})).await;
    assert!(
        matches!(&refused, JoinOutcome::Rejected(shared::Rejection::AttributesRequired { attribute, .. }) if attribute == "tier"),
        "{refused:?}"
    );
    assert_eq!(snapshot(&store).await, before, "a refusal writes nothing");
    let catalog = &store.settings().attributes;
    for (p, value) in [
        ("a", json!({"tier": 1, "platform": "console"})),
        ("b", json!({"tier": 2})),
        ("c", json!({"tier": 3, "platform": "console"})),
    ] {
        let text = catalog
            .trusted_attributes(&value)
            .expect("valid trusted attributes")
            .encode(catalog);
        let previous = store
            .set_trusted_attributes(&player(p), &text)
            .await
            .expect("write");
        assert_eq!(previous, "");
    }
    assert!(matches!(
        join_with(&store, "cross", "a", json!({})).await,
        JoinOutcome::Queued(_)
    ));
    assert!(
        matches!(
            join_with(&store, "cross", "b", json!({})).await,
            JoinOutcome::Queued(_)
        ),
        "b plays on pc (the default), a on console"
    );
    let JoinOutcome::Matched { record, .. } = join_with(&store, "cross", "c", json!({})).await
    else {
        panic!("c and a are on console");
    };
    assert_eq!(names(&record), ["a", "c"]);
    let attrs = record.attributes.as_deref().unwrap();
    assert_eq!(attrs["a"]["platform"], "console");
    assert_eq!(attrs["c"]["tier"], 3.0);
    recheck(&store, &record);
}

/// A backfill keeps the match's rules: of the waiting players only one
/// whose mode equals the match's and whose level is within reach of the
/// match's anchor takes the open seat, and the addition records the
/// newcomer's attributes.
pub async fn a_backfill_keeps_the_rules_of_its_match(env: &Env) {
    let rules = json!({
        "servers": {"scope": "matchmaking/server"},
        "attributes": {
            "mode": {"type": "string", "values": ["ranked", "casual"], "missing": "refuse"},
            "level": {"type": "number", "min": 1, "max": 100, "missing": "refuse"}
        },
        "worlds": [{"name": "squad", "teamSize": 2, "teams": 2, "rules": [
            {"name": "sameMode", "type": "equality", "attribute": "mode"},
            {"name": "nearAnchor", "type": "distance", "attribute": "level", "max": 5, "from": "anchor"}
        ]}]
    });
    let store = store_for(env, "attr-backfill", &rules, true);
    let mut record = None;
    for (p, level) in [("a", 10), ("b", 12), ("c", 14), ("d", 11)] {
        if let JoinOutcome::Matched { record: r, .. } = join_with(
            &store,
            "squad",
            p,
            json!({"mode": "ranked", "level": level}),
        )
        .await
        {
            record = Some(r);
        }
    }
    let record = record.expect("the fourth join forms the match");
    recheck(&store, &record);
    let a: shared::Assignment =
        serde_json::from_value(json!({"connection": "10.0.0.1:7777"})).unwrap();
    store.assign_match(&record.match_id, &a).await.unwrap();
    let t = record.teams.clone().unwrap();
    let stay: Vec<Vec<PlayerId>> = vec![vec![t[0][0].clone()], t[1].clone()];
    store
        .request_backfill(&record.match_id, &stay, None)
        .await
        .expect("backfill");
    // Too far from the anchor's level, another mode, then one that fits.
    let anchor_level = record.attributes.as_deref().unwrap()
        [record.anchor.as_ref().unwrap().as_str()]["level"]
        .as_f64()
        .unwrap();
    join_with(
        &store,
        "squad",
        "far",
        json!({"mode": "ranked", "level": anchor_level + 20.0}),
    )
    .await;
    join_with(
        &store,
        "squad",
        "casual",
        json!({"mode": "casual", "level": anchor_level}),
    )
    .await;
    let fits = join_with(
        &store,
        "squad",
        "fits",
        json!({"mode": "ranked", "level": anchor_level + 1.0}),
    )
    .await;
    let JoinOutcome::Backfilled { joined, .. } = fits else {
        panic!("the joiner that keeps the rules takes the seat: {fits:?}");
    };
    assert_eq!(joined.match_id, record.match_id);
    let addition = joined.lifecycle.additions.last().expect("an addition");
    assert_eq!(addition.players, [player("fits")]);
    let attrs = addition
        .attributes
        .as_ref()
        .expect("the addition's attributes");
    assert_eq!(attrs[0]["mode"], "ranked");
    assert!(waiting(&store, "far").await && waiting(&store, "casual").await);
}

/// Concurrency: players join a world with four rules (equality, comparison,
/// distance relaxing with wait, intersection) while three matchers race and
/// some players leave. No player is matched twice, no ticket is lost (each
/// is matched, still waiting or has left), every record satisfies every
/// rule in force at its formation (the oracle re-checks each), and the
/// attributes and every index (a ticket without a mode reads the maps'
/// index, one without maps too the levels') hold exactly the waiting
/// tickets.
pub async fn racing_matchers_never_break_a_rule(env: &Env) {
    let rules = json!({
        "attributes": {
            "mode": {"type": "string", "values": ["ranked", "casual"], "missing": "any"},
            "build": {"type": "number", "min": 0, "max": 10, "default": 5},
            "level": {"type": "number", "min": 0, "max": 100, "missing": "refuse"},
            "maps": {"type": "stringList", "values": ["dust", "nuke", "mirage", "inferno"], "maxItems": 4,
                     "missing": "any"}
        },
        "worlds": [{"name": "race", "teamSize": 2, "teams": 2, "rules": [
            {"name": "sameMode", "type": "equality", "attribute": "mode"},
            {"name": "newBuild", "type": "comparison", "attribute": "build", "op": ">=", "value": 3},
            {"name": "levelSpread", "type": "distance", "attribute": "level", "max": 10,
             "relax": {"perSecond": 20, "limit": 60}},
            {"name": "commonMap", "type": "intersection", "attribute": "maps", "optionalAfterSeconds": 1}
        ]}]
    });
    let store = std::sync::Arc::new(store_for(env, "attr-race", &rules, true));
    let all_maps = ["dust", "nuke", "mirage", "inferno"];
    let attrs_of = |i: usize| {
        let maps: Vec<&str> = all_maps
            .iter()
            .enumerate()
            .filter(|(m, _)| (i >> m) & 1 == 1 || (i + m).is_multiple_of(5))
            .map(|(_, name)| *name)
            .collect();
        let mut v = json!({
            "build": (i % 7) as f64,
            "level": ((i * 37) % 100) as f64,
        });
        // Without a mode (one in eleven) an anchor reads the map index, and
        // without maps too the level index: every index is raced.
        if !i.is_multiple_of(11) {
            v["mode"] = json!(if i.is_multiple_of(3) {
                "casual"
            } else {
                "ranked"
            });
        }
        if !maps.is_empty() {
            v["maps"] = json!(maps);
        }
        v
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let formed = std::sync::Arc::new(tokio::sync::Mutex::new(Vec::<MatchRecord>::new()));
    let mut matchers = Vec::new();
    for _ in 0..3 {
        let (store, stop, formed) = (store.clone(), stop.clone(), formed.clone());
        matchers.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let batch = store
                    .form_matches(world(&store, "race"), 0)
                    .await
                    .expect("form");
                formed.lock().await.extend(batch.matches);
                // A matcher's pace (a real one ticks every second): the
                // joins get their turn on a loaded machine too.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }));
    }
    let players = 240;
    let mut clients = Vec::new();
    for c in 0..8 {
        let (store, formed) = (store.clone(), formed.clone());
        let texts: Vec<(usize, String)> = (0..players)
            .filter(|i| i % 8 == c)
            .map(|i| (i, encoded(&store, "race", &attrs_of(i))))
            .collect();
        clients.push(tokio::spawn(async move {
            let mut left = Vec::new();
            for (i, text) in texts {
                let p = format!("p{i}");
                let input = JoinInput {
                    attributes: Some(&text),
                    ..JoinInput::default()
                };
                let outcome = store
                    .join_reply(world(&store, "race"), &player(&p), &input, false)
                    .await
                    .expect("join")
                    .outcome;
                match outcome {
                    JoinOutcome::Matched { formed: f, .. } => formed.lock().await.extend(f),
                    JoinOutcome::Queued(_) if i % 11 == 0 => {
                        if matches!(
                            store
                                .leave(world(&store, "race"), &player(&p))
                                .await
                                .expect("leave"),
                            shared::LeaveOutcome::Left { .. }
                        ) {
                            left.push(p);
                        }
                    }
                    JoinOutcome::Queued(_) => {}
                    other => panic!("{p}: {other:?}"),
                }
            }
            left
        }));
    }
    let mut left = std::collections::BTreeSet::new();
    for c in clients {
        left.extend(c.await.expect("client"));
    }
    // Let the relaxations play out: the map rule lapses after 1 s, the
    // level spread reaches its limit after 2.5 s, and an anchor is tried
    // again within a second; so until every waiting ticket has waited 3.6 s
    // (by the server's clock, as the scripts measure it).
    let queue_key = store.keys().world(&world_name("race")).queue;
    let players_key = store.keys().players();
    eventually(
        "every waiting ticket to be fully relaxed",
        Duration::from_secs(15),
        || async {
            let queued: Vec<String> = store
                .command(redis::cmd("ZRANGE").arg(&queue_key).arg(0).arg(-1))
                .await
                .ok()?;
            if queued.is_empty() {
                return Some(());
            }
            let states: Vec<Option<String>> = store
                .command(redis::cmd("HMGET").arg(&players_key).arg(&queued))
                .await
                .ok()?;
            let (secs, micros): (u64, u64) = store.command(&redis::cmd("TIME")).await.ok()?;
            let now = secs * 1000 + micros / 1000;
            states
                .iter()
                .flatten()
                .all(|s| match shared::PlayerState::parse(s) {
                    Some(shared::PlayerState::Waiting { joined_ms, .. }) => now >= joined_ms + 3600,
                    _ => true,
                })
                .then_some(())
        },
    )
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for m in matchers {
        m.await.expect("matcher");
    }
    let formed = formed.lock().await;
    assert!(
        formed.len() >= 20,
        "only {} matches formed: {formed:?}",
        formed.len()
    );
    let mut seen = std::collections::BTreeMap::new();
    for record in formed.iter() {
        recheck(&store, record);
        assert_eq!(record.participants.len(), 4, "{record:?}");
        for p in &record.participants {
            if let Some(other) = seen.insert(p.to_string(), record.match_id.clone()) {
                panic!("{p} was matched twice: {other} and {}", record.match_id);
            }
            assert!(!left.contains(p.as_str()), "{p} left and was matched");
        }
    }
    let k = store.keys().world(&world_name("race"));
    let queued: BTreeSet<String> = store
        .command::<Vec<String>>(redis::cmd("ZRANGE").arg(&k.queue).arg(0).arg(-1))
        .await
        .expect("queue")
        .into_iter()
        .collect();
    let indexed: BTreeSet<String> = store
        .command::<Vec<String>>(redis::cmd("HKEYS").arg(&k.attrs))
        .await
        .expect("attrs")
        .into_iter()
        .collect();
    assert_eq!(
        indexed, queued,
        "the attribute index holds exactly the waiting tickets"
    );
    // Each waiting ticket has a number entry and at least one list entry
    // (`<value>|<ticket>`; `|<ticket>`: no list), and no other has any.
    let numbered: BTreeSet<String> = members_of(&store, &k.attr_numbers)
        .await
        .iter()
        .map(|m| m.split_once(':').expect("<seq>:<ticket>").1.to_string())
        .collect();
    assert_eq!(numbered, queued, "attr-numbers holds the waiting tickets");
    let listed: BTreeSet<String> = members_of(&store, &k.attr_values)
        .await
        .iter()
        .map(|m| m.split_once('|').expect("<value>|<ticket>").1.to_string())
        .collect();
    assert_eq!(listed, queued, "attr-values holds the waiting tickets");
    for i in 0..players {
        let p = format!("p{i}");
        let matched = seen.contains_key(&p);
        let waits = queued.contains(&p);
        let gone = left.contains(&p);
        assert_eq!(
            u8::from(matched) + u8::from(waits) + u8::from(gone),
            1,
            "{p}: matched {matched}, waiting {waits}, left {gone}"
        );
    }
}

/// The world's first equality rule partitions its queue (the attr-queue's
/// bands, docs/rules.md): an anchor reads the tickets of its own value and
/// those without one, so a rare mode is found behind more tickets of
/// another than an attempt reads (256), which the whole queue's oldest
/// tickets hid before. A ticket without a mode is found from any band; the
/// bands hold exactly the waiting tickets, through matches, leaves and a
/// declined ready check's requeue.
pub async fn an_equality_rule_finds_a_rare_value_behind_the_candidate_window(env: &Env) {
    let rules = json!({
        "attributes": {
            "mode": {"type": "string", "values": ["ffa", "duel"], "missing": "any"},
            "level": {"type": "number", "min": 0, "max": 1000, "missing": "refuse"}
        },
        "worlds": [{"name": "rare", "teamSize": 2,
                    "rules": [{"name": "sameMode", "type": "equality", "attribute": "mode"},
                              {"name": "sameLevel", "type": "distance", "attribute": "level", "max": 0}]}]
    });
    let store = store_for(env, "attr-bands", &rules, true);
    let bands = store.keys().world(&world_name("rare")).attr_queue;
    // 300 of ffa that never pair (no two share a level), then two of duel.
    for i in 0..300 {
        let p = format!("f{i}");
        let joined = join_with(&store, "rare", &p, json!({"mode": "ffa", "level": i})).await;
        assert!(matches!(joined, JoinOutcome::Queued(_)), "{p}: {joined:?}");
    }
    let x = join_with(&store, "rare", "x", json!({"mode": "duel", "level": 500})).await;
    assert!(matches!(x, JoinOutcome::Queued(_)), "{x:?}");
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "rare", "y", json!({"mode": "duel", "level": 500})).await
    else {
        panic!("y finds x, 300 tickets behind the oldest");
    };
    assert_eq!(names(&record), ["x", "y"]);
    recheck(&store, &record);
    assert_eq!(zcard_of(&store, bands.clone()).await, 300);
    // No mode: filed in band 0, read by every anchor with a mode.
    let w = join_with(&store, "rare", "w", json!({"level": 700})).await;
    assert!(matches!(w, JoinOutcome::Queued(_)), "{w:?}");
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "rare", "v", json!({"mode": "duel", "level": 700})).await
    else {
        panic!("v finds w, who has no mode");
    };
    assert_eq!(names(&record), ["v", "w"]);
    recheck(&store, &record);
    // Leaves take their entries along.
    for i in 0..10 {
        store
            .leave(world(&store, "rare"), &player(&format!("f{i}")))
            .await
            .expect("leave");
    }
    assert_eq!(zcard_of(&store, bands.clone()).await, 290);
    let status = store
        .queue_status(world(&store, "rare"))
        .await
        .expect("status");
    assert_eq!(status.waiting, 290);

    // A declined ready check files the other ticket back in its band.
    let ready = json!({
        "attributes": {"mode": {"type": "string", "values": ["ffa", "duel"], "missing": "refuse"}},
        "worlds": [{"name": "ready", "teamSize": 2,
                    "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 0},
                    "rules": [{"name": "sameMode", "type": "equality", "attribute": "mode"}]}]
    });
    let store = store_for(env, "attr-bands-ready", &ready, true);
    let bands = store.keys().world(&world_name("ready")).attr_queue;
    join_with(&store, "ready", "a", json!({"mode": "duel"})).await;
    let JoinOutcome::Proposed(view) =
        join_with(&store, "ready", "b", json!({"mode": "duel"})).await
    else {
        panic!("a and b are proposed a match");
    };
    assert_eq!(zcard_of(&store, bands.clone()).await, 0);
    store
        .answer_proposal(&view.match_id, &player("b"), false)
        .await
        .expect("answer");
    assert_eq!(
        zcard_of(&store, bands.clone()).await,
        1,
        "a is back in its band"
    );
    let JoinOutcome::Proposed(view) =
        join_with(&store, "ready", "c", json!({"mode": "duel"})).await
    else {
        panic!("c finds a in the duel band");
    };
    let mut proposed: Vec<&str> = view.participants.iter().map(PlayerId::as_str).collect();
    proposed.sort_unstable();
    assert_eq!(proposed, ["a", "c"]);
}

/// The members of a world's index key, as stored.
async fn members_of(store: &MatchStore, key: &str) -> Vec<String> {
    store
        .command(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1))
        .await
        .expect("zrange")
}

/// A FIFO world's first intersection rule and first distance rule index
/// its queue too (attr-values: a band per listed value; attr-numbers: the
/// tickets by number; docs/rules.md): an anchor with a list reads the
/// tickets sharing one of its values (and those without a list), one with
/// a number the tickets nearest it within the distance in force (and those
/// without one), so a fitting ticket is found behind more unfitting ones
/// than an attempt reads. The entries hold exactly the waiting tickets,
/// through matches, leaves and a declined ready check's requeue.
pub async fn intersection_and_distance_rules_find_a_fit_behind_the_candidate_window(env: &Env) {
    let rules = json!({
        "attributes": {
            "maps": {"type": "stringList", "values": ["dust", "nuke", "inferno", "mirage"], "maxItems": 4,
                     "missing": "any"},
            "level": {"type": "number", "min": 0, "max": 10000, "missing": "any"},
            "rank": {"type": "number", "min": 0, "max": 10000, "missing": "refuse"},
            "mode": {"type": "string", "missing": "refuse"}
        },
        "worlds": [
            {"name": "moded", "teamSize": 2,
             "rules": [{"name": "sameMode", "type": "equality", "attribute": "mode"},
                       {"name": "commonMap", "type": "intersection", "attribute": "maps"},
                       {"name": "nearLevel", "type": "distance", "attribute": "level", "max": 5}]},
            {"name": "maps", "teamSize": 2,
             "rules": [{"name": "commonMap", "type": "intersection", "attribute": "maps"},
                       {"name": "sameRank", "type": "comparison", "attribute": "rank", "op": "allEqual"}]},
            {"name": "levels", "teamSize": 2,
             "rules": [{"name": "nearLevel", "type": "distance", "attribute": "level", "max": 5},
                       {"name": "sameRank", "type": "comparison", "attribute": "rank", "op": "allEqual"}]}
        ]
    });
    let store = store_for(env, "attr-indexes", &rules, true);
    let values = store.keys().world(&world_name("maps")).attr_values;
    let numbers = store.keys().world(&world_name("levels")).attr_numbers;
    // 300 tickets per world that never pair (no two share a rank: a rule no
    // index serves), ahead of the two that fit each other.
    for i in 0..300 {
        let p = format!("m{i}");
        let joined = join_with(&store, "maps", &p, json!({"maps": ["dust"], "rank": i})).await;
        assert!(matches!(joined, JoinOutcome::Queued(_)), "{p}: {joined:?}");
        let p = format!("l{i}");
        let joined = join_with(&store, "levels", &p, json!({"level": i * 10, "rank": i})).await;
        assert!(matches!(joined, JoinOutcome::Queued(_)), "{p}: {joined:?}");
    }
    assert_eq!(members_of(&store, &values).await.len(), 300);
    assert_eq!(members_of(&store, &numbers).await.len(), 300);
    // Where every ticket has a mode and the equality rule never lapses, it
    // drives every read: the other two indexes are not kept.
    join_with(
        &store,
        "moded",
        "m",
        json!({"mode": "ffa", "maps": ["dust"], "level": 1}),
    )
    .await;
    let moded = store.keys().world(&world_name("moded"));
    assert_eq!(members_of(&store, &moded.attr_queue).await.len(), 1);
    assert!(members_of(&store, &moded.attr_values).await.is_empty());
    assert!(members_of(&store, &moded.attr_numbers).await.is_empty());

    let x = join_with(
        &store,
        "maps",
        "x",
        json!({"maps": ["nuke", "inferno"], "rank": 5000}),
    )
    .await;
    assert!(matches!(x, JoinOutcome::Queued(_)), "{x:?}");
    assert!(members_of(&store, &values)
        .await
        .contains(&"inferno|x".to_string()));
    let JoinOutcome::Matched { record, .. } = join_with(
        &store,
        "maps",
        "y",
        json!({"maps": ["inferno", "mirage"], "rank": 5000}),
    )
    .await
    else {
        panic!("y finds x through the inferno band, 300 tickets behind the oldest");
    };
    assert_eq!(names(&record), ["x", "y"]);
    assert_eq!(
        outcome(&record, "commonMap").shared.as_deref(),
        Some(&["inferno".to_string()][..])
    );
    recheck(&store, &record);
    // No list: in band 0, read by every anchor with one.
    join_with(&store, "maps", "w", json!({"rank": 7000})).await;
    let JoinOutcome::Matched { record, .. } = join_with(
        &store,
        "maps",
        "v",
        json!({"maps": ["mirage"], "rank": 7000}),
    )
    .await
    else {
        panic!("v finds w, who lists no map");
    };
    assert_eq!(names(&record), ["v", "w"]);
    recheck(&store, &record);

    let x = join_with(&store, "levels", "x2", json!({"level": 5000, "rank": 5000})).await;
    assert!(matches!(x, JoinOutcome::Queued(_)), "{x:?}");
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "levels", "y2", json!({"level": 5004, "rank": 5000})).await
    else {
        panic!("y2 finds x2 within 5 levels, 300 tickets behind the oldest");
    };
    assert_eq!(names(&record), ["x2", "y2"]);
    recheck(&store, &record);
    // No level: filed at +inf, read by every anchor with one.
    join_with(&store, "levels", "w2", json!({"rank": 7000})).await;
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "levels", "v2", json!({"level": 9000, "rank": 7000})).await
    else {
        panic!("v2 finds w2, who has no level");
    };
    assert_eq!(names(&record), ["v2", "w2"]);
    recheck(&store, &record);

    // Matches and leaves take their entries along.
    for i in 0..10 {
        for (w, p) in [("maps", format!("m{i}")), ("levels", format!("l{i}"))] {
            store
                .leave(world(&store, w), &player(&p))
                .await
                .expect("leave");
        }
    }
    let listed = members_of(&store, &values).await;
    assert_eq!(listed.len(), 290, "{listed:?}");
    assert!(listed.iter().all(|m| m.starts_with("dust|m")), "{listed:?}");
    let listed = members_of(&store, &numbers).await;
    assert_eq!(listed.len(), 290);
    assert!(listed.iter().all(|m| m.contains(":l")), "{listed:?}");

    // A declined ready check files the other ticket's entries back.
    let ready = json!({
        "attributes": {
            "maps": {"type": "stringList", "values": ["dust", "nuke"], "maxItems": 2, "missing": "any"},
            "level": {"type": "number", "min": 0, "max": 100, "missing": "any"}
        },
        "worlds": [{"name": "ready", "teamSize": 2,
                    "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 0},
                    "rules": [{"name": "commonMap", "type": "intersection", "attribute": "maps"},
                              {"name": "nearLevel", "type": "distance", "attribute": "level", "max": 5}]}]
    });
    let store = store_for(env, "attr-indexes-ready", &ready, true);
    let k = store.keys().world(&world_name("ready"));
    join_with(
        &store,
        "ready",
        "a",
        json!({"maps": ["dust", "nuke"], "level": 40}),
    )
    .await;
    let before = (
        members_of(&store, &k.attr_values).await,
        members_of(&store, &k.attr_numbers).await,
    );
    let mut listed = before.0.clone();
    listed.sort_unstable();
    assert_eq!(listed, ["dust|a", "nuke|a"]);
    assert_eq!(before.1.len(), 1);
    let JoinOutcome::Proposed(view) =
        join_with(&store, "ready", "b", json!({"maps": ["nuke"], "level": 42})).await
    else {
        panic!("a and b are proposed a match");
    };
    assert!(members_of(&store, &k.attr_values).await.is_empty());
    assert!(members_of(&store, &k.attr_numbers).await.is_empty());
    store
        .answer_proposal(&view.match_id, &player("b"), false)
        .await
        .expect("answer");
    let after = (
        members_of(&store, &k.attr_values).await,
        members_of(&store, &k.attr_numbers).await,
    );
    assert_eq!(after, before, "a is back in its bands and at its number");
    let JoinOutcome::Proposed(view) =
        join_with(&store, "ready", "c", json!({"maps": ["dust"], "level": 44})).await
    else {
        panic!("c finds a");
    };
    let mut proposed: Vec<&str> = view.participants.iter().map(PlayerId::as_str).collect();
    proposed.sort_unstable();
    assert_eq!(proposed, ["a", "c"]);
}

/// A rule no index serves (here an `allEqual` comparison) is checked on the
/// candidate window: the only other player of a rank, behind 300 of other
/// ranks, is not found by an attempt that reads 256 (the documented cost);
/// a world whose `candidateWindow` is wider than the tickets ahead finds
/// them.
pub async fn a_wider_candidate_window_finds_what_an_unindexed_rule_missed(env: &Env) {
    let rules = json!({
        "attributes": {"rank": {"type": "number", "min": 0, "max": 10000, "missing": "refuse"}},
        "worlds": [
            {"name": "narrow", "teamSize": 2,
             "rules": [{"name": "sameRank", "type": "comparison", "attribute": "rank", "op": "allEqual"}]},
            {"name": "wide", "teamSize": 2, "candidateWindow": 512,
             "rules": [{"name": "sameRank", "type": "comparison", "attribute": "rank", "op": "allEqual"}]}
        ]
    });
    let store = store_for(env, "attr-window", &rules, true);
    for w in ["narrow", "wide"] {
        for i in 0..300 {
            let p = format!("{w}{i}");
            let joined = join_with(&store, w, &p, json!({"rank": i})).await;
            assert!(matches!(joined, JoinOutcome::Queued(_)), "{p}: {joined:?}");
        }
        let x = format!("{w}-x");
        let joined = join_with(&store, w, &x, json!({"rank": 5000})).await;
        assert!(matches!(joined, JoinOutcome::Queued(_)), "{joined:?}");
    }
    let y = join_with(&store, "narrow", "narrow-y", json!({"rank": 5000})).await;
    assert!(
        matches!(y, JoinOutcome::Queued(_)),
        "256 candidates do not reach narrow-x: {y:?}"
    );
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "wide", "wide-y", json!({"rank": 5000})).await
    else {
        panic!("512 candidates reach wide-x");
    };
    assert_eq!(names(&record), ["wide-x", "wide-y"]);
    recheck(&store, &record);
}
