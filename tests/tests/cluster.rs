//! The core against a real 3-master Redis Cluster, with two namespaces whose
//! hash tags land on different masters.

use integration_tests::scenarios::{self, Env};
use integration_tests::RedisCluster;
use shared::KeyLayout;

fn env(cluster: &RedisCluster) -> Env {
    Env {
        urls: cluster.urls(),
        cluster: true,
    }
}

/// Two namespaces whose keys are owned by different masters.
fn namespaces_on_different_masters(cluster: &RedisCluster) -> (String, usize, String, usize) {
    let first = "ns-a0".to_string();
    let first_owner = cluster.owner_of(&KeyLayout::new(&first).players());
    for i in 0..100 {
        let candidate = format!("ns-b{i}");
        let owner = cluster.owner_of(&KeyLayout::new(&candidate).players());
        if owner != first_owner {
            return (first, first_owner, candidate, owner);
        }
    }
    panic!("no namespace found on another master");
}

/// Every scenario, in one cluster (creating a cluster takes a moment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_run_unchanged_on_a_cluster() {
    let cluster = RedisCluster::start();
    let env = env(&cluster);
    macro_rules! run_all {
        ($($name:ident),* $(,)?) => {$(
            scenarios::$name(&env).await;
        )*};
    }
    integration_tests::for_each_scenario!(run_all);
}

/// The invariant suite in two namespaces at once, each on its own master,
/// and each namespace's keys only on its master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariants_hold_in_two_namespaces_on_different_masters() {
    let cluster = RedisCluster::start();
    let env = env(&cluster);
    let (ns_a, owner_a, ns_b, owner_b) = namespaces_on_different_masters(&cluster);
    assert_ne!(owner_a, owner_b);
    let ops = scenarios::invariant_operations();
    let (a, b) = tokio::join!(
        scenarios::concurrency_invariants(&env, &ns_a, 64, 8, ops / 2),
        scenarios::concurrency_invariants(&env, &ns_b, 64, 8, ops - ops / 2),
    );
    assert_eq!(a.operations + b.operations, ops);
    assert!(a.matches > 0 && b.matches > 0, "{a:?} {b:?}");
    for r in [&a, &b] {
        assert!(
            r.parties_queued > 0
                && r.accepted_matches > 0
                && r.removed_from_proposals > 0
                && r.backfills_requested > 0
                && r.backfilled_players > 0,
            "parties and ready checks were exercised: {r:?}"
        );
    }
    for (ns, owner) in [(&ns_a, owner_a), (&ns_b, owner_b)] {
        let tag = format!("{{{ns}}}");
        for node in 0..cluster.nodes.len() {
            let here = cluster
                .keys_on(node)
                .into_iter()
                .filter(|k| k.contains(&tag))
                .count();
            if node == owner {
                assert!(here > 0, "{ns} has no keys on its master");
            } else {
                assert_eq!(here, 0, "{ns} has keys on node {node}, not only on {owner}");
            }
        }
        let store = env.store(ns, "world1:3,world2:2,world3:5");
        scenarios::keys_stay_in_the_namespace(&store, &cluster.keys_on(owner)).await;
    }
    eprintln!("invariants held on the cluster: {a:?} {b:?}");
}
