//! Unit tests of the WebSocket API emulation.

use super::*;

#[test]
fn request_time_uses_api_gateway_format() {
    assert_eq!(httpdate(0), "01/Jan/1970:00:00:00 +0000");
    assert_eq!(httpdate(1_712_666_096_000), "09/Apr/2024:12:34:56 +0000");
}

#[test]
fn connect_events_carry_the_token_and_context() {
    let mut headers = HeaderMap::new();
    headers.insert("user-agent", "test".parse().unwrap());
    let query = HashMap::from([("token".to_string(), "abc".to_string())]);
    let event = websocket_event(
        "$connect",
        "Y29ubjE=",
        5,
        "localhost:3001",
        "127.0.0.1",
        &headers,
        Some(&query),
        None,
    )
    .unwrap();
    assert_eq!(event.query_string_parameters.first("token"), Some("abc"));
    assert_eq!(
        event.request_context.connection_id.as_deref(),
        Some("Y29ubjE=")
    );
    assert_eq!(event.request_context.route_key.as_deref(), Some("$connect"));
    assert_eq!(event.request_context.event_type.as_deref(), Some("CONNECT"));
}
