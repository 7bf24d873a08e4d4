//! Lambda entry point of the WebSocket `$connect` and `$default` routes.
// The runtime's service future around the handler is deeply nested.
#![recursion_limit = "256"]

use lambda_common::auth::{AuthSettings, JwtVerifier};
use lambda_common::bootstrap::{
    pusher_from_env, reported, store_from_env, waker_from_env, BootError,
};
use lambda_common::push::ConnectionsPusher;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use ws_connect::{handle, App};

async fn app() -> Result<App<ConnectionsPusher>, BootError> {
    let store = store_from_env()?;
    waker_from_env(&store).await?;
    Ok(App {
        store,
        verifier: JwtVerifier::new(AuthSettings::from_env()?)
            .inspect_err(|e| tracing::error!(error = %e, "invalid token verification settings"))?,
        pusher: pusher_from_env().await?,
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment; the verifier's JWKS cache and the
    // Redis connection outlive single invocations.
    let app = reported(app().await).await?;
    let app = &app;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        handle(app, event).await
    }))
    .await
}
