//! Lambda entry point of `POST /v1/matching/join`.

use join::{handle, App};
use lambda_common::bootstrap::{
    pusher_from_env, reported, store_from_env, waker_from_env, BootError,
};
use lambda_common::push::ConnectionsPusher;
use lambda_http::{service_fn, Error};

async fn app() -> Result<App<ConnectionsPusher>, BootError> {
    let store = store_from_env()?;
    waker_from_env(&store).await?;
    Ok(App {
        store,
        pusher: pusher_from_env().await?,
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = reported(app().await).await?;
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
