//! The core against a real standalone `redis-server`.

use std::time::Duration;

use integration_tests::scenarios::{self, Env};
use integration_tests::RedisServer;
use shared::domain::PlayerStatus;

fn env(server: &RedisServer) -> Env {
    Env {
        urls: server.url(),
        cluster: false,
    }
}

macro_rules! scenario_tests {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let server = RedisServer::start();
            scenarios::$name(&env(&server)).await;
        }
    )*};
}

integration_tests::for_each_scenario!(scenario_tests);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_carries_the_namespace_tag() {
    let server = RedisServer::start();
    let env = env(&server);
    scenarios::join_positions_and_instant_match(&env).await;
    let store = env.store("join-instant", "world1:3");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.connection())
        .unwrap();
    scenarios::keys_stay_in_the_namespace(&store, &keys).await;
    assert!(
        keys.iter().all(|k| k.starts_with("mm:{join-instant}:")),
        "{keys:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_and_matchers_keep_the_invariants() {
    let server = RedisServer::start();
    let ops = scenarios::invariant_operations();
    let report = scenarios::concurrency_invariants(&env(&server), "soak", 64, 8, ops).await;
    assert_eq!(report.operations, ops);
    assert!(report.joins > ops / 10 && report.matches > 0, "{report:?}");
    assert!(
        report.parties_queued > 0
            && report.accepted_matches > 0
            && report.removed_from_proposals > 0,
        "parties and ready checks were exercised: {report:?}"
    );
    assert!(
        report.backfills_requested > 0 && report.backfilled_players > 0,
        "backfills were exercised: {report:?}"
    );
    eprintln!("invariants held: {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_is_reported_as_unavailable() {
    let mut server = RedisServer::start();
    let store = env(&server).store_with("down", "world1:3", &[("REDIS_TIMEOUT_MS", "500")]);
    server.kill();
    let world = store.settings().worlds.get("world1").unwrap().clone();
    let started = std::time::Instant::now();
    let err = store
        .join(&world, &scenarios::player("a"), None, None)
        .await
        .expect_err("Redis is down");
    assert!(err.is_unavailable(), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "bounded by the command timeout"
    );
}

/// An idle connection that the server (or a NAT) dropped, as a frozen Lambda
/// finds it when it thaws: the next call succeeds without surfacing an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_dropped_while_idle_is_replaced_transparently() {
    let server = RedisServer::start();
    let store = env(&server).store_with("idle", "world1:3", &[("REDIS_IDLE_CHECK_MS", "50")]);
    let world = store.settings().worlds.get("world1").unwrap().clone();
    store
        .join(&world, &scenarios::player("a"), None, None)
        .await
        .unwrap();
    for round in 0..3 {
        let killed: u64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .arg("SKIPME")
            .arg("yes")
            .query(&mut server.connection())
            .unwrap();
        assert!(
            killed >= 1,
            "round {round}: the store's connection was killed"
        );
        // Let the connection sit idle past the check threshold.
        tokio::time::sleep(Duration::from_millis(80)).await;
        let outcome = store
            .join(&world, &scenarios::player(&format!("p{round}")), None, None)
            .await;
        assert!(outcome.is_ok(), "round {round}: {outcome:?}");
    }
}

/// SCRIPT FLUSH drops every cached script; calls reload them and succeed
/// (on EVALSHA: functions off, or a server without them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_mid_run_is_survived() {
    let server = RedisServer::start();
    let store = env(&server).store_with(
        "flush",
        "world1:3",
        &[("MM_INSTANT_MATCH", "false"), ("REDIS_FUNCTIONS", "false")],
    );
    let world = store.settings().worlds.get("world1").unwrap().clone();
    for i in 0..30 {
        if i % 5 == 0 {
            flush(&server, "SCRIPT");
        }
        store
            .join(&world, &scenarios::player(&format!("p{i}")), None, None)
            .await
            .unwrap();
        store
            .player_status(&scenarios::player(&format!("p{i}")))
            .await
            .unwrap();
    }
    flush(&server, "SCRIPT");
    assert_eq!(
        store.form_matches(&world, 0).await.unwrap().matches.len(),
        10
    );
}

/// FUNCTION FLUSH drops the function library; the next call loads it again.
/// Runs on functions (FCALL), never falling back to EVALSHA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_flush_mid_run_is_survived() {
    let server = RedisServer::start();
    let store = env(&server).store_with("fflush", "world1:3", &[("MM_INSTANT_MATCH", "false")]);
    let world = store.settings().worlds.get("world1").unwrap().clone();
    for i in 0..30 {
        if i % 5 == 0 {
            flush(&server, "FUNCTION");
        }
        store
            .join(&world, &scenarios::player(&format!("p{i}")), None, None)
            .await
            .unwrap();
    }
    assert_eq!(
        store.form_matches(&world, 0).await.unwrap().matches.len(),
        10
    );
    assert!(store.uses_functions());
    let calls = command_calls(&server);
    assert!(
        calls.of("fcall") >= 31 && calls.of("function|load") >= 6,
        "{calls:?}"
    );
    assert_eq!(
        calls.of("evalsha") + calls.of("eval"),
        0,
        "no EVALSHA fallback"
    );
}

/// A crowd of first calls in one process loads the library once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_calls_load_the_library_once() {
    let server = RedisServer::start();
    let store = env(&server).store_with("crowd", "world1:3", &[("MM_INSTANT_MATCH", "false")]);
    let world = store.settings().worlds.get("world1").unwrap().clone();
    let mut joins = tokio::task::JoinSet::new();
    for i in 0..32 {
        let (store, world) = (store.clone(), world.clone());
        joins.spawn(async move {
            store
                .join(&world, &scenarios::player(&format!("p{i}")), None, None)
                .await
        });
    }
    while let Some(joined) = joins.join_next().await {
        joined.unwrap().unwrap();
    }
    let calls = command_calls(&server);
    assert_eq!(calls.of("function|load"), 1, "{calls:?}");
    let queued: u64 = redis::cmd("ZCARD")
        .arg(store.keys().world(&world.name).queue)
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(queued, 32);
}

/// With `REDIS_FUNCTIONS=false` every operation runs as EVALSHA and no
/// function library is loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_off_runs_every_operation_as_evalsha() {
    let server = RedisServer::start();
    let env = env(&server);
    let store = env.store_with("evalsha", "world1:3", &[("REDIS_FUNCTIONS", "false")]);
    let world = store.settings().worlds.get("world1").unwrap().clone();
    join_players(&store, &world, 6).await;
    assert!(matches!(
        store.player_status(&scenarios::player("p0")).await.unwrap(),
        PlayerStatus::Matched(_)
    ));
    assert!(!store.uses_functions());
    let calls = command_calls(&server);
    assert!(calls.of("evalsha") >= 7, "{calls:?}");
    assert_eq!(calls.of("fcall") + calls.of("function|load"), 0);
}

/// A server that denies FUNCTION (here an ACL user without it, as some
/// managed offerings do) gets EVALSHA: the first refused load switches the
/// store over and every operation still succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_refusing_functions_falls_back_to_evalsha() {
    let server = RedisServer::start();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("nofunctions")
        .arg("on")
        .arg(">secret")
        .arg("~*")
        .arg("+@all")
        .arg("-function")
        .query(&mut server.connection())
        .unwrap();
    let url = format!("redis://nofunctions:secret@127.0.0.1:{}", server.port);
    let store = shared::MatchStore::new(integration_tests::settings_for(
        &url,
        false,
        "acl",
        "world1:3",
        &[],
    ))
    .unwrap();
    let world = store.settings().worlds.get("world1").unwrap().clone();
    join_players(&store, &world, 3).await;
    assert!(matches!(
        store.player_status(&scenarios::player("p2")).await.unwrap(),
        PlayerStatus::Matched(_)
    ));
    assert!(!store.uses_functions());
    let calls = command_calls(&server);
    assert!(calls.of("evalsha") >= 4, "{calls:?}");
}

/// The function library keeps each parsed world configuration: a new
/// deployment's configuration of the same world (here a team of 2 instead
/// of 3, served side by side with the old one) takes effect on its first
/// call, and the old one keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_world_configuration_takes_effect_at_once() {
    let server = RedisServer::start();
    let env = env(&server);
    let old = env.store_with("redeploy", "world1:3", &[]);
    let new = env.store_with("redeploy", "world1:2", &[]);
    let old_world = old.settings().worlds.get("world1").unwrap().clone();
    let new_world = new.settings().worlds.get("world1").unwrap().clone();
    let join = |store: &shared::MatchStore, world: &shared::World, name: &str| {
        let (store, world, player) = (store.clone(), world.clone(), scenarios::player(name));
        async move { store.join(&world, &player, None, None).await.unwrap() }
    };
    let seats = |outcome: shared::JoinOutcome| match outcome {
        shared::JoinOutcome::Matched { record, .. } => record.participants.len(),
        shared::JoinOutcome::Queued(_) => 0,
        other => panic!("unexpected {other:?}"),
    };
    // One waits under the old rules; the new rules need 2, so the next
    // join through the new store matches at once, with 2.
    assert_eq!(seats(join(&old, &old_world, "a").await), 0);
    assert_eq!(seats(join(&new, &new_world, "b").await), 2);
    // And the old store still plays by its own: 3 players per match.
    assert_eq!(seats(join(&old, &old_world, "c").await), 0);
    assert_eq!(seats(join(&old, &old_world, "d").await), 0);
    assert_eq!(seats(join(&old, &old_world, "e").await), 3);
}

/// Joins players `p0`, `p1`, ... one after the other.
async fn join_players(store: &shared::MatchStore, world: &shared::World, n: usize) {
    for i in 0..n {
        store
            .join(world, &scenarios::player(&format!("p{i}")), None, None)
            .await
            .unwrap();
    }
}

/// `SCRIPT FLUSH` or `FUNCTION FLUSH`: the server forgets our code.
fn flush(server: &RedisServer, what: &str) {
    let _: () = redis::cmd(what)
        .arg("FLUSH")
        .query(&mut server.connection())
        .unwrap();
}

/// Calls per command since the server started (`INFO commandstats`);
/// subcommands are named `parent|sub`.
fn command_calls(server: &RedisServer) -> CommandCalls {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .unwrap();
    let stats: std::collections::BTreeMap<String, u64> = info
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .collect();
    CommandCalls(stats)
}

#[derive(Debug)]
struct CommandCalls(std::collections::BTreeMap<String, u64>);

impl CommandCalls {
    fn of(&self, command: &str) -> u64 {
        self.0.get(command).copied().unwrap_or(0)
    }
}

/// `rediss://` works and verifies the server: with the CA configured every
/// operation succeeds; without it the certificate is refused (503-class).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_verify_the_server_certificate() {
    let tls = integration_tests::tls::TlsRedis::start();
    let ca = tls.ca_file.display().to_string();
    let trusted = integration_tests::settings_for(
        &tls.url(),
        false,
        "tls",
        "duel:2",
        &[("REDIS_CA_CERT", &ca)],
    );
    let store = shared::MatchStore::new(trusted).unwrap();
    let duel = store.settings().worlds.get("duel").unwrap().clone();
    store
        .join(&duel, &scenarios::player("a"), None, None)
        .await
        .unwrap();
    match store
        .join(&duel, &scenarios::player("b"), None, None)
        .await
        .unwrap()
    {
        shared::JoinOutcome::Matched { record, .. } => assert_eq!(record.participants, ["a", "b"]),
        other => panic!("{other:?}"),
    }

    let untrusted = integration_tests::settings_for(
        &tls.url(),
        false,
        "tls",
        "duel:2",
        &[("REDIS_TIMEOUT_MS", "1000")],
    );
    let store = shared::MatchStore::new(untrusted).unwrap();
    let err = store
        .player_status(&scenarios::player("a"))
        .await
        .expect_err("an unknown CA must be refused");
    assert!(err.is_unavailable(), "{err:?}");
}
