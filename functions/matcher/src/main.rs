//! Lambda entry point of the matcher (EventBridge schedule, once a minute).

use lambda_common::bootstrap::{pusher_from_env, reported, store_from_env, BootError};
use lambda_common::push::ConnectionsPusher;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::MatchStore;

async fn clients() -> Result<(MatchStore, ConnectionsPusher), BootError> {
    Ok((store_from_env()?, pusher_from_env().await?))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment and reused by every invocation.
    let (store, pusher) = reported(clients().await).await?;
    let (store, pusher) = (&store, &pusher);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        matcher::handle_schedule(store, pusher, &shared::NoEvents, event).await
    }))
    .await
}
