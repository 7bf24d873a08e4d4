//! Role queues (quota rules): each player plays exactly one role they
//! offered, every team (or the match) holds each role within its bounds,
//! and the record says who plays what. The worlds follow FlexMatch's "one
//! healer per team" collection quota and PlayFab's role totals; every
//! record is re-checked by the offline oracle (`shared::rules::recheck`,
//! which checks the recorded roles against the quotas and the offers).

use serde_json::json;
use shared::store::JoinInput;
use shared::PartyJoinOutcome;

use super::attributes::{encoded, join_with, names, recheck, store_for, tick, waiting};
use super::*;

/// The role each player of `record` took.
fn roles_of(record: &MatchRecord) -> BTreeMap<String, String> {
    *record.roles.clone().expect("the record names the roles")
}

/// The roles of each team of `record`, sorted.
fn team_roles(record: &MatchRecord) -> Vec<Vec<String>> {
    let roles = roles_of(record);
    let teams = record.teams.as_ref().expect("teams");
    teams
        .iter()
        .map(|team| {
            let mut list: Vec<String> = team.iter().map(|p| roles[p.as_str()].clone()).collect();
            list.sort();
            list
        })
        .collect()
}

/// A rule set with a world `trio` of teams of three: one tank, one healer
/// and one damage player each; `fields` adds to the world.
fn trio(fields: serde_json::Value) -> serde_json::Value {
    let mut world = json!({"name": "trio", "teamSize": 3, "rules": [
        {"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
            {"value": "tank", "min": 1, "max": 1},
            {"value": "healer", "min": 1, "max": 1},
            {"value": "damage", "min": 1, "max": 1}]}]});
    for (k, v) in fields.as_object().into_iter().flatten() {
        world[k] = v.clone();
    }
    json!({
        "attributes": {"roles": {"type": "stringList", "values": ["tank", "healer", "damage"], "maxItems": 3, "missing": "refuse"}},
        "worlds": [world]
    })
}

fn queued(outcome: &JoinOutcome) -> bool {
    matches!(outcome, JoinOutcome::Queued(_))
}

/// FlexMatch's collection quota, two teams of three with exactly one tank,
/// one healer and one damage each: the damage players who came first wait
/// until tanks and healers arrive, extra damage players are left out, and
/// a player offering two roles takes the one the match lacks.
pub async fn a_role_queue_fills_every_team_with_its_quotas(env: &Env) {
    let rules = trio(json!({"teams": 2}));
    let store = store_for(env, "roles-trio", &rules, true);
    for p in ["d1", "d2", "d3", "d4"] {
        let joined = join_with(&store, "trio", p, json!({"roles": ["damage"]})).await;
        assert!(queued(&joined), "{p}: {joined:?}");
    }
    for (p, role) in [("t1", "tank"), ("h1", "healer"), ("t2", "tank")] {
        let joined = join_with(&store, "trio", p, json!({"roles": [role]})).await;
        assert!(queued(&joined), "{p} ({role}): {joined:?}");
    }
    assert!(tick(&store, "trio").await.is_empty(), "one healer short");
    let JoinOutcome::Matched { record, .. } = join_with(
        &store,
        "trio",
        "flex",
        json!({"roles": ["damage", "healer"]}),
    )
    .await
    else {
        panic!("flex completes the match as the second healer");
    };
    recheck(&store, &record);
    assert_eq!(names(&record), ["d1", "d2", "flex", "h1", "t1", "t2"]);
    assert_eq!(roles_of(&record)["flex"], "healer");
    for team in team_roles(&record) {
        assert_eq!(team, ["damage", "healer", "tank"]);
    }
    for p in ["d3", "d4"] {
        assert!(waiting(&store, p).await, "{p} waits: damage is full");
    }
    // A player who may play anything ("fill") completes nothing alone.
    let fill = join_with(
        &store,
        "trio",
        "t3",
        json!({"roles": ["tank", "healer", "damage"]}),
    )
    .await;
    assert!(queued(&fill), "{fill:?}");
}

/// PlayFab's role totals over the whole match (teams of one, quotas per
/// match): 4 players, exactly one tank, one or two healers, at most two
/// damage. Roles no quota lists are unbounded, and a player without a
/// value (missing: any) takes whatever the match lacks.
pub async fn role_totals_per_match_admit_ranges_and_players_without_a_role(env: &Env) {
    let rules = json!({
        "attributes": {"role": {"type": "string", "values": ["tank", "healer", "damage", "scout"]}},
        "worlds": [{"name": "squad", "teamSize": 4, "rules": [
            {"name": "totals", "type": "quota", "attribute": "role", "per": "match", "quotas": [
                {"value": "tank", "min": 1, "max": 1},
                {"value": "healer", "min": 1, "max": 2},
                {"value": "damage", "max": 2}]}]}]
    });
    let store = store_for(env, "roles-totals", &rules, true);
    for (p, role) in [
        ("a", "damage"),
        ("b", "damage"),
        ("c", "damage"),
        ("d", "tank"),
        ("e", "tank"),
    ] {
        let joined = join_with(&store, "squad", p, json!({"role": role})).await;
        assert!(queued(&joined), "{p}: {joined:?}");
    }
    // The scout (a role no quota lists) fits, but no healer is there yet.
    let scout = join_with(&store, "squad", "s", json!({"role": "scout"})).await;
    assert!(queued(&scout), "{scout:?}");
    let JoinOutcome::Matched { record, .. } = join_with(&store, "squad", "anyone", json!({})).await
    else {
        panic!("a player without a role completes the match as its healer");
    };
    let record = &record;
    recheck(&store, record);
    // a, b (damage, the oldest two), d (the first tank), and the player
    // without a role as the healer; c (a third damage), e (a second tank)
    // and the scout (whose seat the healer needs) wait.
    assert_eq!(names(record), ["a", "anyone", "b", "d"]);
    let roles = roles_of(record);
    assert_eq!(roles["anyone"], "healer");
    assert_eq!(roles["d"], "tank");
    for p in ["c", "e", "s"] {
        assert!(waiting(&store, p).await, "{p} waits");
    }
}

/// A party of two with roles plays on one team, each member in a role they
/// offered; the solos fill the rest of both teams around it. An attempt
/// is greedy (oldest first), so the match forms on the attempt whose
/// tickets leave room for it.
pub async fn a_party_with_roles_stays_on_one_team(env: &Env) {
    let rules = json!({
        "attributes": {"roles": {"type": "stringList", "values": ["tank", "damage"], "maxItems": 2, "missing": "refuse"}},
        "worlds": [{"name": "duo", "teamSize": 2, "teams": 2, "maxPartySize": 2, "rules": [
            {"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
                {"value": "tank", "min": 1, "max": 1},
                {"value": "damage", "min": 1, "max": 1}]}]}]
    });
    let store = store_for(env, "roles-party", &rules, true);
    let w = world(&store, "duo");
    // Both members could tank; one must play damage.
    let lead = encoded(&store, "duo", &json!({"roles": ["tank", "damage"]}));
    let created = store
        .create_party_with(
            w,
            &player("lead"),
            &players(&["mate"]),
            &JoinInput {
                attributes: Some(&lead),
                ..JoinInput::default()
            },
        )
        .await
        .expect("create");
    let shared::PartyCreateOutcome::Created(party) = created else {
        panic!("{created:?}");
    };
    for (p, role) in [("t", "tank"), ("t2", "tank")] {
        let joined = join_with(&store, "duo", p, json!({"roles": [role]})).await;
        assert!(queued(&joined), "{p}: {joined:?}");
    }
    let mate = encoded(&store, "duo", &json!({"roles": ["tank"]}));
    let joined = store
        .join_party_claiming(
            w,
            &party.party_id,
            &player("mate"),
            &JoinInput {
                attributes: Some(&mate),
                ..JoinInput::default()
            },
            false,
        )
        .await
        .expect("join party");
    assert!(
        matches!(joined, PartyJoinOutcome::Queued { .. }),
        "two tanks and a party need a damage player: {joined:?}"
    );
    // d's own attempt takes the tickets oldest first while the quotas can
    // still be met: t and t2 (two tanks, one per team), after which the
    // party (one more tank) no longer fits and one seat stays empty.
    let joined = join_with(&store, "duo", "d", json!({"roles": ["damage"]})).await;
    assert!(queued(&joined), "{joined:?}");
    // The party's own attempt, a tick later, takes t and d.
    let record = eventually(
        "a tick to form the match",
        Duration::from_secs(3),
        || async { tick(&store, "duo").await.into_iter().next() },
    )
    .await;
    recheck(&store, &record);
    let roles = roles_of(&record);
    assert_eq!(roles["mate"], "tank");
    assert_eq!(
        roles["lead"], "damage",
        "the leader takes the role the mate cannot"
    );
    let teams = record.teams.as_ref().expect("teams");
    let team_of = |p: &str| teams.iter().position(|t| t.iter().any(|q| q.as_str() == p));
    assert_eq!(team_of("lead"), team_of("mate"), "the party plays together");
    assert_ne!(team_of("t"), team_of("mate"), "one tank per team");
    assert!(waiting(&store, "t2").await, "the second solo tank waits");
    for team in team_roles(&record) {
        assert_eq!(team, ["damage", "tank"]);
    }
}

/// In a rated role queue the teams are balanced by swapping players of the
/// same role only: every team keeps its quotas.
pub async fn a_rated_role_queue_balances_teams_within_each_role(env: &Env) {
    let rules = json!({
        "attributes": {"roles": {"type": "stringList", "values": ["tank", "damage"], "maxItems": 2, "missing": "refuse"}},
        "worlds": [{"name": "ranked", "teamSize": 2, "teams": 2, "mode": "rating",
            "rating": {"baseWindow": 1000, "widenPerSecond": 0, "maxWindow": 1000, "relaxAfterSeconds": 600},
            "rules": [{"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
                {"value": "tank", "min": 1, "max": 1},
                {"value": "damage", "min": 1, "max": 1}]}]}]
    });
    let store = store_for(env, "roles-rated", &rules, false);
    for (p, role, r) in [
        ("t-high", "tank", 1800.0),
        ("t-low", "tank", 1200.0),
        ("d-high", "damage", 1700.0),
        ("d-low", "damage", 1300.0),
    ] {
        store
            .set_rating(&player(p), Some(&world_name("ranked")), rating(r))
            .await
            .expect("rating");
        join_with(&store, "ranked", p, json!({"roles": [role]})).await;
    }
    // Anchors are due a tick after they join.
    let formed = eventually(
        "a tick to form the match",
        Duration::from_secs(3),
        || async { Some(tick(&store, "ranked").await).filter(|f| !f.is_empty()) },
    )
    .await;
    assert_eq!(formed.len(), 1, "{formed:?}");
    let record = &formed[0];
    recheck(&store, record);
    let teams = record.teams.as_ref().expect("teams");
    let team_of = |p: &str| teams.iter().position(|t| t.iter().any(|q| q.as_str() == p));
    // Balanced: the strongest tank with the weakest damage player.
    assert_eq!(team_of("t-high"), team_of("d-low"));
    assert_eq!(team_of("t-low"), team_of("d-high"));
    for team in team_roles(record) {
        assert_eq!(team, ["damage", "tank"]);
    }
}

/// The queue is read role by role: a healer joining finds the one tank
/// behind 40 damage players, more than the candidate window (16) holds,
/// and the match takes the oldest damage player.
pub async fn a_scarce_role_is_found_behind_a_backlog_of_another(env: &Env) {
    let rules = trio(json!({"candidateWindow": 16}));
    let store = store_for(env, "roles-backlog", &rules, true);
    for i in 0..40 {
        let p = format!("d{i:02}");
        let joined = join_with(&store, "trio", &p, json!({"roles": ["damage"]})).await;
        assert!(queued(&joined), "{p}: {joined:?}");
    }
    let tank = join_with(&store, "trio", "t", json!({"roles": ["tank"]})).await;
    assert!(queued(&tank), "no healer yet: {tank:?}");
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "trio", "h", json!({"roles": ["healer"]})).await
    else {
        panic!("the healer finds the tank behind the damage players");
    };
    recheck(&store, &record);
    assert_eq!(names(&record), ["d00", "h", "t"]);
    assert!(waiting(&store, "d01").await);
}
