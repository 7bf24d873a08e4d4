//! Lambda entry point of the matcher (EventBridge schedule, once a minute).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::push::ApiGatewayPusher;
use shared::{MatchStore, Settings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    // Built once per execution environment and reused by every invocation.
    let store = MatchStore::new(Settings::from_env()?)?;
    let pusher = ApiGatewayPusher::from_env().await?;
    let (store, pusher) = (&store, &pusher);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        matcher::handle_schedule(store, pusher, event).await
    }))
    .await
}
