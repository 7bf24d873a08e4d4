//! Lambda entry point of the WebSocket `$connect` route.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::auth::{AuthSettings, JwtVerifier};
use shared::{MatchStore, Settings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    // Built once per execution environment; the verifier's JWKS cache and the
    // Redis connection outlive single invocations.
    let store = MatchStore::new(Settings::from_env()?)?;
    let verifier = JwtVerifier::new(AuthSettings::from_env()?)?;
    let (store, verifier) = (&store, &verifier);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        ws_connect::handle_connect(store, verifier, event).await
    }))
    .await
}
