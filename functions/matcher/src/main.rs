//! Lambda entry point of the matcher (EventBridge schedule, once a minute).

use lambda_common::bootstrap::{pusher_from_env, store_from_env};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Built once per execution environment and reused by every invocation.
    let store = store_from_env()?;
    let pusher = pusher_from_env().await?;
    let (store, pusher) = (&store, &pusher);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        matcher::handle_schedule(store, pusher, event).await
    }))
    .await
}
