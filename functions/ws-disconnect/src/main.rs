//! Lambda entry point of the WebSocket `$disconnect` route.

use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment and reused by every invocation.
    let store = lambda_common::bootstrap::store_from_env()?;
    let store = &store;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        ws_disconnect::handle_disconnect(store, event).await
    }))
    .await
}
