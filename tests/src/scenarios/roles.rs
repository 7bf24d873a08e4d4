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

/// A server for `record`'s match: it is assigned, so it may ask for a
/// backfill.
pub(super) async fn assign(store: &MatchStore, record: &MatchRecord) {
    let a: shared::Assignment =
        serde_json::from_value(json!({"connection": "10.0.0.1:7777"})).expect("assignment");
    store
        .assign_match(&record.match_id, &a)
        .await
        .expect("assign");
}

/// `record`'s teams without `left`: what a backfill request lists.
pub(super) fn staying(record: &MatchRecord, left: &str) -> Vec<Vec<PlayerId>> {
    let teams = record.teams.as_ref().expect("teams");
    teams
        .iter()
        .map(|t| t.iter().filter(|p| p.as_str() != left).cloned().collect())
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

/// With a ready check, a player who declines frees their seat and their
/// role: the others go back to the queue, and the next match takes the
/// next player of that role.
pub async fn a_declined_role_is_filled_again_from_the_queue(env: &Env) {
    let rules = trio(json!({"readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 60}}));
    let store = store_for(env, "roles-ready", &rules, true);
    for (p, role) in [("t1", "tank"), ("h1", "healer")] {
        let joined = join_with(&store, "trio", p, json!({"roles": [role]})).await;
        assert!(queued(&joined), "{p}: {joined:?}");
    }
    let JoinOutcome::Proposed(proposal) =
        join_with(&store, "trio", "d1", json!({"roles": ["damage"]})).await
    else {
        panic!("d1 completes a proposal");
    };
    let t2 = join_with(&store, "trio", "t2", json!({"roles": ["tank", "damage"]})).await;
    assert!(queued(&t2), "{t2:?}");
    let declined = store
        .answer_proposal(&proposal.match_id, &player("t1"), false)
        .await
        .expect("answer");
    assert!(
        matches!(
            declined,
            shared::AnswerOutcome::Cancelled { requeued: 2, .. }
        ),
        "{declined:?}"
    );
    // t2 (offering tank or damage) takes the tank's seat.
    let again = eventually("a new proposal", Duration::from_secs(3), || async {
        tick(&store, "trio").await;
        match store.player_status(&player("t2")).await.expect("status") {
            PlayerStatus::Proposed(view) => Some(view),
            _ => None,
        }
    })
    .await;
    let mut who: Vec<&str> = again.participants.iter().map(PlayerId::as_str).collect();
    who.sort_unstable();
    assert_eq!(who, ["d1", "h1", "t2"]);
    for p in ["d1", "h1", "t2"] {
        store
            .answer_proposal(&again.match_id, &player(p), true)
            .await
            .expect("answer");
    }
    let PlayerStatus::Matched(m) = store.player_status(&player("t2")).await.expect("status") else {
        panic!("t2 plays once everyone accepted");
    };
    recheck(&store, &m.record);
    let roles = roles_of(&m.record);
    assert_eq!(
        (roles["t2"].as_str(), roles["d1"].as_str()),
        ("tank", "damage")
    );
}

/// A backfill asks for the roles its match lacks: the seat of the tank
/// who left is a tank's. A damage player is not seated (the team has its
/// damage player), a player offering tank or damage is, as the tank; the
/// match's record then says so, and its teams meet the quotas again.
pub async fn a_backfill_seats_the_role_of_the_player_who_left(env: &Env) {
    let rules = json!({
        "attributes": {"roles": {"type": "stringList", "values": ["tank", "damage"], "maxItems": 2, "missing": "refuse"}},
        "worlds": [{"name": "duo", "teamSize": 2, "teams": 2, "rules": [
            {"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
                {"value": "tank", "min": 1, "max": 1}, {"value": "damage", "min": 1, "max": 1}]}]}]
    });
    let store = store_for(env, "roles-backfill", &rules, true);
    for (p, role) in [("t1", "tank"), ("t2", "tank"), ("d1", "damage")] {
        join_with(&store, "duo", p, json!({"roles": [role]})).await;
    }
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "duo", "d2", json!({"roles": ["damage"]})).await
    else {
        panic!("two tanks and two damage players make a match");
    };
    assign(&store, &record).await;
    // t1 leaves: its team keeps its damage player only.
    let teams = staying(&record, "t1");
    let t1_team = record
        .teams
        .as_ref()
        .and_then(|t| {
            t.iter()
                .position(|team| team.iter().any(|p| p.as_str() == "t1"))
        })
        .expect("t1 has a team");
    let asked = store
        .request_backfill(&record.match_id, &teams, None)
        .await
        .expect("request");
    assert!(
        matches!(asked, shared::store::BackfillOutcome::Open { .. }),
        "{asked:?}"
    );
    let d3 = join_with(&store, "duo", "d3", json!({"roles": ["damage"]})).await;
    assert!(
        queued(&d3),
        "a second damage player in that team breaks its quota: {d3:?}"
    );
    let flex = join_with(&store, "duo", "flex", json!({"roles": ["damage", "tank"]})).await;
    assert!(
        matches!(flex, JoinOutcome::Backfilled { .. }),
        "flex takes the tank's seat: {flex:?}"
    );
    let merged = store
        .match_record(&record.match_id)
        .await
        .expect("record")
        .expect("a live record");
    let roles = roles_of(&merged);
    assert_eq!(roles["flex"], "tank");
    let merged_teams = merged.teams.as_ref().expect("teams");
    assert!(merged_teams[t1_team].iter().any(|p| p.as_str() == "flex"));
    // The players the match has now, per team: one tank and one damage.
    for team in merged_teams {
        let mut now: Vec<&str> = team
            .iter()
            .filter(|p| p.as_str() != "t1")
            .map(|p| roles[p.as_str()].as_str())
            .collect();
        now.sort_unstable();
        assert_eq!(now, ["damage", "tank"]);
    }
    assert!(waiting(&store, "d3").await);
}

/// With a ready check a newcomer's seat, and its role, are held by a
/// proposal; a decline opens both again, so the next player who can play
/// that role is asked.
pub async fn a_declined_backfill_seat_opens_its_role_again(env: &Env) {
    let rules = json!({
        "attributes": {"roles": {"type": "stringList", "values": ["tank", "damage"], "maxItems": 2, "missing": "refuse"}},
        "worlds": [{"name": "duo", "teamSize": 2, "teams": 2,
            "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 0},
            "rules": [{"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
                {"value": "tank", "min": 1, "max": 1}, {"value": "damage", "min": 1, "max": 1}]}]}]
    });
    let store = store_for(env, "roles-backfill-ready", &rules, true);
    for (p, role) in [("t1", "tank"), ("t2", "tank"), ("d1", "damage")] {
        join_with(&store, "duo", p, json!({"roles": [role]})).await;
    }
    let JoinOutcome::Proposed(proposal) =
        join_with(&store, "duo", "d2", json!({"roles": ["damage"]})).await
    else {
        panic!("the four make a proposal");
    };
    for p in ["t1", "t2", "d1", "d2"] {
        store
            .answer_proposal(&proposal.match_id, &player(p), true)
            .await
            .expect("answer");
    }
    let PlayerStatus::Matched(m) = store.player_status(&player("t1")).await.expect("status") else {
        panic!("everyone accepted");
    };
    let record = m.record.clone();
    assign(&store, &record).await;
    let teams = staying(&record, "t1");
    store
        .request_backfill(&record.match_id, &teams, None)
        .await
        .expect("request");
    let asked = |p: &'static str| {
        let store = &store;
        async move {
            match store.player_status(&player(p)).await.expect("status") {
                PlayerStatus::Proposed(view) => Some(view),
                _ => None,
            }
        }
    };
    join_with(&store, "duo", "tk", json!({"roles": ["tank"]})).await;
    let held = asked("tk").await.expect("tk is asked for the tank's seat");
    store
        .answer_proposal(&held.match_id, &player("tk"), false)
        .await
        .expect("decline");
    join_with(&store, "duo", "flex", json!({"roles": ["damage", "tank"]})).await;
    let view = asked("flex")
        .await
        .expect("the seat and its role are open again: flex is asked");
    store
        .answer_proposal(&view.match_id, &player("flex"), true)
        .await
        .expect("accept");
    let merged = store
        .match_record(&record.match_id)
        .await
        .expect("record")
        .expect("a live record");
    assert_eq!(roles_of(&merged)["flex"], "tank");
}

/// Concurrency: players offering one or two roles join a 2 v 2 role queue
/// while three matchers race and some leave. Nobody is matched twice, no
/// ticket is lost, every record's roles meet the quotas per team with each
/// player in a role they offered (the oracle re-checks each), and the role
/// index holds exactly the waiting tickets.
pub async fn racing_matchers_keep_every_team_within_its_quotas(env: &Env) {
    let rules = json!({
        "attributes": {"roles": {"type": "stringList", "values": ["tank", "damage"], "maxItems": 2, "missing": "refuse"}},
        "worlds": [{"name": "race", "teamSize": 2, "teams": 2, "rules": [
            {"name": "roleQueue", "type": "quota", "attribute": "roles", "quotas": [
                {"value": "tank", "min": 1, "max": 1}, {"value": "damage", "min": 1, "max": 1}]}]}]
    });
    let store = std::sync::Arc::new(store_for(env, "roles-race", &rules, true));
    let roles_of_player = |i: usize| match i % 5 {
        0 => json!(["tank", "damage"]),
        1 | 3 => json!(["damage"]),
        _ => json!(["tank"]),
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
                // A matcher's pace (a real one ticks every second).
                tokio::task::yield_now().await;
            }
        }));
    }
    let players = 200;
    let mut clients = Vec::new();
    for c in 0..8 {
        let (store, formed) = (store.clone(), formed.clone());
        let texts: Vec<(usize, String)> = (0..players)
            .filter(|i| i % 8 == c)
            .map(|i| {
                let attrs = json!({"roles": roles_of_player(i)});
                (i, encoded(&store, "race", &attrs))
            })
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
                        let gone = store
                            .leave(world(&store, "race"), &player(&p))
                            .await
                            .expect("leave");
                        if matches!(gone, shared::LeaveOutcome::Left { .. }) {
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
    let mut left = BTreeSet::new();
    for c in clients {
        left.extend(c.await.expect("client"));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for m in matchers {
        m.await.expect("matcher");
    }
    // What the race left formable, the next ticks form (anchors are due a
    // tick after they join or were tried): until the waiting players'
    // roles cannot make a 2 v 2 (two tanks and two damage, flexible
    // players counting for either).
    let k = store.keys().world(&world_name("race"));
    eventually(
        "the queue to hold no more matches",
        Duration::from_secs(10),
        || async {
            let batch = store.form_matches(world(&store, "race"), 0).await.ok()?;
            formed.lock().await.extend(batch.matches);
            let queued: Vec<String> = store
                .command(redis::cmd("ZRANGE").arg(&k.queue).arg(0).arg(-1))
                .await
                .ok()?;
            let (mut tanks, mut damage, mut both) = (0, 0, 0);
            for p in &queued {
                let i: usize = p.trim_start_matches('p').parse().ok()?;
                match roles_of_player(i).as_array().map(Vec::len) {
                    Some(2) => both += 1,
                    _ if i % 5 == 1 || i % 5 == 3 => damage += 1,
                    _ => tanks += 1,
                }
            }
            let formable = tanks + both >= 2 && damage + both >= 2 && tanks + damage + both >= 4;
            (!formable).then_some(())
        },
    )
    .await;
    let formed = formed.lock().await;
    assert!(formed.len() >= 20, "only {} matches formed", formed.len());
    let mut seen = BTreeMap::new();
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
    let queued: BTreeSet<String> = store
        .command::<Vec<String>>(redis::cmd("ZRANGE").arg(&k.queue).arg(0).arg(-1))
        .await
        .expect("queue")
        .into_iter()
        .collect();
    let indexed: BTreeSet<String> = store
        .command::<Vec<String>>(redis::cmd("ZRANGE").arg(&k.attr_values).arg(0).arg(-1))
        .await
        .expect("attr-values")
        .iter()
        .map(|m| m.split_once('|').expect("<role>|<ticket>").1.to_string())
        .collect();
    assert_eq!(indexed, queued, "the role index holds the waiting tickets");
    for i in 0..players {
        let p = format!("p{i}");
        let (matched, waits, gone) = (
            seen.contains_key(&p),
            queued.contains(&p),
            left.contains(&p),
        );
        assert_eq!(
            u8::from(matched) + u8::from(waits) + u8::from(gone),
            1,
            "{p}: matched {matched}, waiting {waits}, left {gone}"
        );
    }
}

/// PlayFab's role totals (MatchTotalRule): number attributes summed over
/// the match, exactly one tank and one healer in a match of four; players
/// without a value count 0. A match forms only once both are there, and a
/// third player without a role waits.
pub async fn role_totals_of_number_attributes_bound_the_match(env: &Env) {
    let rules = json!({
        "attributes": {
            "tank": {"type": "number", "min": 0, "max": 1},
            "healer": {"type": "number", "min": 0, "max": 1}
        },
        "worlds": [{"name": "four", "teamSize": 4, "rules": [
            {"name": "oneTank", "type": "total", "attribute": "tank", "per": "match", "min": 1, "max": 1},
            {"name": "oneHealer", "type": "total", "attribute": "healer", "per": "match", "min": 1, "max": 1}
        ]}]
    });
    let store = store_for(env, "totals-match", &rules, true);
    for p in ["d1", "d2", "d3"] {
        assert!(queued(&join_with(&store, "four", p, json!({})).await));
    }
    let t1 = join_with(&store, "four", "t1", json!({"tank": 1})).await;
    assert!(queued(&t1), "no healer yet: {t1:?}");
    let t2 = join_with(&store, "four", "t2", json!({"tank": 1})).await;
    assert!(queued(&t2), "a second tank does not make a healer: {t2:?}");
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "four", "h1", json!({"healer": 1})).await
    else {
        panic!("the healer completes a match");
    };
    recheck(&store, &record);
    assert_eq!(names(&record), ["d1", "d2", "h1", "t1"]);
    for p in ["d3", "t2"] {
        assert!(waiting(&store, p).await, "{p} waits");
    }
}

/// A total per team decides the teams: every team of two has exactly one
/// leader; a backfill keeps it, seating only a leader in the seat a leader
/// left.
pub async fn a_total_per_team_splits_the_teams_and_backfills_keep_it(env: &Env) {
    let rules = json!({
        "attributes": {"leader": {"type": "number", "min": 0, "max": 1, "default": 0}},
        "worlds": [{"name": "duo", "teamSize": 2, "teams": 2, "rules": [
            {"name": "oneLeader", "type": "total", "attribute": "leader", "min": 1, "max": 1}]}]
    });
    let store = store_for(env, "totals-team", &rules, true);
    for (p, leader) in [("l1", 1), ("l2", 1), ("p1", 0)] {
        join_with(&store, "duo", p, json!({"leader": leader})).await;
    }
    let JoinOutcome::Matched { record, .. } =
        join_with(&store, "duo", "p2", json!({"leader": 0})).await
    else {
        panic!("two leaders and two others make a match");
    };
    recheck(&store, &record);
    let teams = record.teams.clone().expect("teams");
    for team in &teams {
        let leaders = team.iter().filter(|p| p.as_str().starts_with('l')).count();
        assert_eq!(leaders, 1, "{teams:?}");
    }
    assign(&store, &record).await;
    let staying = staying(&record, "l1");
    store
        .request_backfill(&record.match_id, &staying, None)
        .await
        .expect("request");
    let other = join_with(&store, "duo", "p3", json!({"leader": 0})).await;
    assert!(queued(&other), "the team would have no leader: {other:?}");
    let leader = join_with(&store, "duo", "l3", json!({"leader": 1})).await;
    assert!(
        matches!(leader, JoinOutcome::Backfilled { .. }),
        "a leader takes the leader's seat: {leader:?}"
    );
}
