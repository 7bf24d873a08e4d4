use lambda_http::{service_fn, Error};
use shared::{MatchStore, Settings};
use status::{handle, App};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let settings = Settings::from_env()
        .inspect_err(|e| tracing::error!(error = %e, "invalid configuration"))?;
    let store = MatchStore::new(settings)
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the Redis client"))?;
    let app = App { store };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
