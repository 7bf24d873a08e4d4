//! Lambda entry point of `POST /v1/matching/leave`.

use lambda_common::bootstrap::{reported, store_from_env, waker_from_env, BootError};
use lambda_http::{service_fn, Error};
use leave::{handle, App};
use shared::MatchStore;

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
