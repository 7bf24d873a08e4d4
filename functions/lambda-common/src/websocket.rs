//! Answers to API Gateway WebSocket route events (`$connect`,
//! `$disconnect`): for `$connect`, anything but 2xx refuses the connection.

use lambda_http::aws_lambda_events::apigw::ApiGatewayProxyResponse;
use lambda_http::aws_lambda_events::encodings::Body;

/// A response with `status` and a plain-text `body`.
pub fn websocket_response(status: i64, body: &str) -> ApiGatewayProxyResponse {
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = status;
    response.body = Some(Body::Text(body.to_owned()));
    response
}
