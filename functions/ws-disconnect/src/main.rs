//! Lambda entry point of the WebSocket `$disconnect` route.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::{MatchStore, Settings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    // Built once per execution environment and reused by every invocation.
    let store = MatchStore::new(Settings::from_env()?)?;
    let store = &store;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        ws_disconnect::handle_disconnect(store, event).await
    }))
    .await
}
