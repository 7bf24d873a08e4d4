//! The sleeping matcher (`MM_MATCHER_SLEEP`): it sleeps only when nothing
//! is to be done and only with the lease; the first operation that makes
//! work takes the sleep mark and wakes it, exactly once; reads wake nobody.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shared::delivery::drain_outbox;
use shared::matcher::SLEEP_PATIENCE;
use shared::{PartyCreateOutcome, WakeError, Waker};

use super::lifecycle::RecordingPusher;
use super::*;

/// Counts its wake-ups.
#[derive(Clone, Default)]
struct CountingWaker(Arc<AtomicUsize>);

impl CountingWaker {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Waker for CountingWaker {
    fn wake(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), WakeError>> + Send + '_>>
    {
        Box::pin(async move {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }
}

async fn exists(store: &MatchStore, key: &str) -> bool {
    let n: u64 = store.command(redis::cmd("EXISTS").arg(key)).await.unwrap();
    n == 1
}

/// Takes the lease for `token` and tries to sleep.
async fn try_sleep(store: &MatchStore, token: &str) -> bool {
    assert!(store
        .acquire_lease(token, Duration::from_secs(5))
        .await
        .unwrap());
    store.matcher_sleep(token, SLEEP_PATIENCE).await.unwrap()
}

pub async fn the_matcher_sleeps_only_when_idle_and_work_wakes_it(env: &Env) {
    let store = env.store_with(
        "sleep",
        "",
        &[
            (
                "MM_RULES",
                r#"{"worlds": [{"name": "duo", "teamSize": 2, "maxPartySize": 2}]}"#,
            ),
            ("MM_INSTANT_MATCH", "false"),
        ],
    );
    let waker = CountingWaker::default();
    assert!(store.set_waker(Arc::new(waker.clone())));
    let keys = store.keys();
    let (asleep, lease) = (keys.matcher_asleep(), keys.matcher_lease());

    // Only the lease holder sleeps; asleep, it holds no lease.
    assert!(!store.matcher_sleep("nobody", SLEEP_PATIENCE).await.unwrap());
    assert!(try_sleep(&store, "m1").await);
    assert!(exists(&store, &asleep).await && !exists(&store, &lease).await);

    // Reads, and sockets opening, wake nobody.
    for p in ["a", "b", "c", "d", "e", "f"] {
        connect(&store, p).await;
    }
    store.player_status(&player("a")).await.unwrap();
    store.queue_status(world(&store, "duo")).await.unwrap();
    assert_eq!(waker.count(), 0);

    // The first join queues a ticket and wakes it; the second finds it
    // awake already (the mark is gone): one wake-up.
    assert!(matches!(
        join(&store, "duo", "a").await,
        JoinOutcome::Queued(_)
    ));
    assert_eq!(waker.count(), 1);
    assert!(!exists(&store, &asleep).await);
    assert!(matches!(
        join(&store, "duo", "b").await,
        JoinOutcome::Queued(_)
    ));
    assert_eq!(waker.count(), 1);

    // Awake while a ticket waits, then while the match's entry waits in
    // the outbox; asleep once it is delivered.
    assert!(!try_sleep(&store, "m1").await);
    let batch = store.form_matches(world(&store, "duo"), 0).await.unwrap();
    assert_eq!(batch.matches.len(), 1);
    assert!(!try_sleep(&store, "m1").await, "an outbox entry waits");
    drain_outbox(&store, &RecordingPusher::default(), &shared::NoEvents)
        .await
        .unwrap();
    assert!(try_sleep(&store, "m1").await);

    // A party that assembles wakes it and keeps it awake; its cancellation
    // (a note to its members) is work too, delivered, then it sleeps.
    let party = match create(&store, "duo", "c", &["d"]).await {
        PartyCreateOutcome::Created(view) => view.party_id,
        other => panic!("{other:?}"),
    };
    assert_eq!(waker.count(), 2);
    assert!(!try_sleep(&store, "m1").await, "a party assembles");
    store.cancel_party(&party, &player("c")).await.unwrap();
    drain_outbox(&store, &RecordingPusher::default(), &shared::NoEvents)
        .await
        .unwrap();
    assert!(try_sleep(&store, "m1").await);

    // An outbox entry tried SLEEP_PATIENCE times (its players unreachable)
    // no longer keeps it awake: the schedule retries it.
    join(&store, "duo", "e").await;
    join(&store, "duo", "f").await;
    assert_eq!(waker.count(), 3);
    store.form_matches(world(&store, "duo"), 0).await.unwrap();
    assert!(!try_sleep(&store, "m1").await);
    let entries: Vec<String> = store
        .command(redis::cmd("ZRANGE").arg(keys.outbox()).arg(0).arg(-1))
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    let _: () = store
        .command(
            redis::cmd("HSET")
                .arg(keys.outbox_meta())
                .arg(&entries[0])
                .arg(format!("{SLEEP_PATIENCE}:0:0:")),
        )
        .await
        .unwrap();
    assert!(try_sleep(&store, "m1").await);
}
