//! Lambda entry point of the matcher (EventBridge schedule, once a minute).

use lambda_common::bootstrap::{
    events_from_env, pusher_from_env, reported, store_from_env, BootError,
};
use lambda_common::events::MatchEventSink;
use lambda_common::push::ConnectionsPusher;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::MatchStore;

async fn clients() -> Result<(MatchStore, ConnectionsPusher, MatchEventSink), BootError> {
    let store = store_from_env()?;
    let pusher = pusher_from_env().await?;
    // MM_MATCH_EVENTS=true without MM_EVENT_BUS refuses to start.
    let events = events_from_env(store.settings()).await?;
    Ok((store, pusher, events))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment and reused by every invocation.
    let (store, pusher, events) = reported(clients().await).await?;
    let (store, pusher, events) = (&store, &pusher, &events);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        matcher::handle_schedule(store, pusher, events, event).await
    }))
    .await
}
