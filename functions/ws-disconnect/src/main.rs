//! Lambda entry point of the WebSocket `$disconnect` route.

use lambda_common::bootstrap::{reported, store_from_env, waker_from_env, BootError};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::MatchStore;

async fn store() -> Result<MatchStore, BootError> {
    let store = store_from_env()?;
    waker_from_env(&store).await?;
    Ok(store)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment and reused by every invocation.
    let store = reported(store().await).await?;
    let store = &store;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        ws_disconnect::handle_disconnect(store, event).await
    }))
    .await
}
