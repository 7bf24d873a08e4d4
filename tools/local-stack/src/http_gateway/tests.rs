//! Unit tests of the HTTP API emulation.

use super::*;

#[test]
fn routes_resolve_like_api_gateway() {
    assert_eq!(
        resolve(&Method::POST, "/v1/matching/join").map(|r| r.0),
        Some(Route::Join)
    );
    assert_eq!(resolve(&Method::GET, "/v1/matching/join"), None);
    let (route, params) = resolve(&Method::GET, "/v1/matching/queue-status/world%7B1%7D").unwrap();
    assert_eq!(route, Route::QueueStatus);
    assert_eq!(params["worldType"], "world{1}");
    assert_eq!(resolve(&Method::GET, "/v1/matching/queue-status/"), None);
    assert_eq!(resolve(&Method::GET, "/v1/matching/queue-status/a/b"), None);
    assert_eq!(
        percent_decode("%é%4"),
        "%é%4",
        "malformed escapes pass through"
    );
    assert_eq!(percent_decode("a%20b%2"), "a b%2");
}

#[test]
fn events_carry_claims_as_strings_and_parse_as_payload_v2() {
    let mut claims = serde_json::Map::new();
    claims.insert("sub".into(), json!("alice"));
    claims.insert("exp".into(), json!(1_900_000_000u64));
    let uri: Uri = "/v1/matching/join?x=1".parse().unwrap();
    let event = http_api_event(
        Route::Join,
        &Method::POST,
        &uri,
        &HeaderMap::new(),
        br#"{"worldType":"world1"}"#,
        HashMap::new(),
        &claims,
        &"127.0.0.1:5".parse().unwrap(),
        "localhost",
    );
    assert_eq!(
        event["requestContext"]["authorizer"]["jwt"]["claims"]["exp"],
        "1900000000"
    );
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    assert_eq!(request.method(), Method::POST);
    use lambda_http::RequestExt;
    match request.request_context_ref() {
        Some(lambda_http::request::RequestContext::ApiGatewayV2(ctx)) => {
            let jwt = ctx
                .authorizer
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .unwrap();
            assert_eq!(jwt.claims["sub"], "alice");
        }
        other => panic!("{other:?}"),
    }
    let binary = http_api_event(
        Route::Join,
        &Method::POST,
        &uri,
        &HeaderMap::new(),
        &[0xff, 0xfe],
        HashMap::new(),
        &claims,
        &"127.0.0.1:5".parse().unwrap(),
        "localhost",
    );
    assert_eq!(binary["isBase64Encoded"], true);
}
