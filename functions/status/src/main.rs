//! Lambda entry point of `GET /v1/matching/queue-status/{worldType}` and
//! `GET /v1/matching/my-status`.

use lambda_http::{service_fn, Error};
use status::{handle, App};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let app = App {
        store: lambda_common::bootstrap::store_from_env()?,
    };
    lambda_http::run(service_fn(|req| handle(&app, req))).await
}
