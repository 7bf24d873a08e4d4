//! Unit tests of the environment settings.

use std::collections::HashMap;

use super::*;

fn settings(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_lookup(|k| map.get(k).cloned())
}

#[test]
fn defaults_match_the_seed() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.namespace, "mm");
    let names: Vec<_> = s
        .worlds
        .iter()
        .map(|w| w.name.as_str().to_owned())
        .collect();
    assert_eq!(names, ["world1", "world2", "world3"]);
    assert!(s.worlds.iter().all(|w| w.team_size == 3));
    assert!(s.instant_match);
    assert_eq!(s.match_ttl, Duration::from_secs(600));
    assert_eq!(s.presence_timeout, Duration::from_secs(150));
    assert_eq!(s.heartbeat_interval, Duration::from_secs(60));
    assert!(!s.redis.cluster);
}

#[test]
fn worlds_parse_with_team_size_and_ttl() {
    let s = settings(&[("MM_WORLDS", "duel:2:30, squad:4")]).unwrap();
    let duel = s.worlds.get("duel").unwrap();
    assert_eq!(
        (duel.team_size, duel.ticket_ttl),
        (2, Duration::from_secs(30))
    );
    assert_eq!(
        s.worlds.get("squad").unwrap().ticket_ttl,
        Duration::from_secs(600)
    );
    assert!(s.worlds.get("nope").is_none());
}

#[test]
fn bad_configuration_is_refused_with_the_variable_named() {
    for (var, value) in [
        ("MM_WORLDS", "World1:3"),
        ("MM_WORLDS", "w:1"),
        ("MM_WORLDS", "w:3:0"),
        ("MM_WORLDS", "w:3,w:3"),
        ("MM_WORLDS", "w:3:5:9"),
        ("MM_WORLDS", " , "),
        ("MM_NAMESPACE", "a{b}"),
        ("MM_INSTANT_MATCH", "maybe"),
        ("REDIS_URL", "http://x"),
        ("REDIS_URL", "redis://a,redis://b"),
        ("MM_MAX_CONNECTIONS_PER_PLAYER", "0"),
        ("MM_WORLDS", "w:101"),
        ("MM_PRESENCE_TIMEOUT_SECS", "60"),
        ("MM_RULES", "{}"),
        ("MM_RULES_FILE", "/nonexistent/rules.json"),
    ] {
        let mut vars = vec![(var, value)];
        if var == "REDIS_URL" && value.contains(',') {
            vars.push(("REDIS_CLUSTER", "false"));
        }
        let err = settings(&vars).expect_err(value);
        assert_eq!(err.var, var, "{value}");
    }
}

#[test]
fn several_urls_mean_cluster_mode() {
    let s = settings(&[("REDIS_URL", "redis://a:1,redis://b:2")]).unwrap();
    assert!(s.redis.cluster);
    assert_eq!(s.redis.urls.len(), 2);
}

#[test]
fn replica_acks_default_to_auto_and_parse_off_and_numbers() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.redis.replica_acks, ReplicaAcks::Auto);
    assert_eq!(s.redis.replica_ack_timeout, Duration::from_millis(250));
    for (value, expected) in [
        ("auto", ReplicaAcks::Auto),
        ("off", ReplicaAcks::Off),
        ("0", ReplicaAcks::Off),
        ("1", ReplicaAcks::Require(1)),
        ("2", ReplicaAcks::Require(2)),
    ] {
        let s = settings(&[("MM_REPLICA_ACKS", value)]).unwrap();
        assert_eq!(s.redis.replica_acks, expected, "{value}");
    }
    for bad in ["6", "-1", "many"] {
        let err = settings(&[("MM_REPLICA_ACKS", bad)]).expect_err(bad);
        assert_eq!(err.var, "MM_REPLICA_ACKS");
    }
    let err = settings(&[("MM_REPLICA_ACK_TIMEOUT_MS", "0")]).expect_err("0 ms");
    assert_eq!(err.var, "MM_REPLICA_ACK_TIMEOUT_MS");
}

#[test]
fn attributes_come_from_the_rule_set_and_the_shorthand_has_none() {
    let s = settings(&[("MM_WORLDS", "duel:2")]).unwrap();
    assert!(s.attributes.is_empty());
    assert_eq!(s.attribute_writer_scope, None);
    let s = settings(&[(
        "MM_RULES",
        r#"{"attributes": {"mode": {"type": "string"}, "league": {"type": "number", "source": "trusted"}},
            "attributeStore": {"writerScope": "mm/attributes.write"},
            "worlds": [{"name": "duel", "teamSize": 2,
                        "rules": [{"name": "sameMode", "type": "equality", "attribute": "mode"}]}]}"#,
    )])
    .unwrap();
    assert_eq!(s.attributes.len(), 2);
    assert!(s.attributes.has_trusted());
    assert_eq!(
        s.attribute_writer_scope.as_deref(),
        Some("mm/attributes.write")
    );
    let duel = s.worlds.get("duel").unwrap();
    assert_eq!(duel.attributes, ["mode"]);
    assert_eq!(duel.match_rules[0].name, "sameMode");
}
