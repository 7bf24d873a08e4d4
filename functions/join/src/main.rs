use join::{handle, App};
use lambda_http::{service_fn, Error};
use shared::push::ApiGatewayPusher;
use shared::{MatchStore, Settings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let settings = Settings::from_env()
        .inspect_err(|e| tracing::error!(error = %e, "invalid configuration"))?;
    let store = MatchStore::new(settings)
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the Redis client"))?;
    let pusher = ApiGatewayPusher::from_env()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the WebSocket pusher"))?;
    let app = App { store, pusher };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
