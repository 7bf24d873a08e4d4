//! Lambda entry point of `GET /v1/matching/queue-status/{worldType}` and
//! `GET /v1/matching/my-status`.

use lambda_common::bootstrap::{reported, store_from_env};
use lambda_http::{service_fn, Error};
use status::{handle, App};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = App {
        store: reported(store_from_env()).await?,
    };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
