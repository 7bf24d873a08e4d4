//! Lambda entry point of `POST /v1/matching/leave`.

use lambda_common::bootstrap::{reported, store_from_env};
use lambda_http::{service_fn, Error};
use leave::{handle, App};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = App {
        store: reported(store_from_env()).await?,
    };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
