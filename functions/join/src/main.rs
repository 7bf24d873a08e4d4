//! Lambda entry point of `POST /v1/matching/join`.

use join::{handle, App};
use lambda_common::bootstrap::{pusher_from_env, store_from_env};
use lambda_http::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = App {
        store: store_from_env()?,
        pusher: pusher_from_env().await?,
    };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
