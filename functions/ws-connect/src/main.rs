//! Lambda entry point of the WebSocket `$connect` route.

use lambda_common::auth::{AuthSettings, JwtVerifier};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment; the verifier's JWKS cache and the
    // Redis connection outlive single invocations.
    let store = lambda_common::bootstrap::store_from_env()?;
    let verifier = JwtVerifier::new(AuthSettings::from_env()?)
        .inspect_err(|e| tracing::error!(error = %e, "invalid token verification settings"))?;
    let (store, verifier) = (&store, &verifier);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        ws_connect::handle_connect(store, verifier, event).await
    }))
    .await
}
