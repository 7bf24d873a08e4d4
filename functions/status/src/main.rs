//! Lambda entry point of `GET /v1/matching/queue-status/{worldType}` and
//! `GET /v1/matching/my-status`.

use lambda_common::bootstrap::{reported, store_from_env, waker_from_env, BootError};
use lambda_http::{service_fn, Error};
use shared::MatchStore;
use status::{handle, App};

async fn store() -> Result<MatchStore, BootError> {
    let store = store_from_env()?;
    waker_from_env(&store).await?;
    Ok(store)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = App {
        store: reported(store().await).await?,
    };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
