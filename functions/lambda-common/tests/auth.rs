//! JWT verification for `$connect` against a real local HTTP server that
//! publishes the test issuer's JWKS.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use integration_tests::connections_server::{
    hs256_token, now_secs, unsigned_token, ConnectionsServer, TestIssuer,
};
use serde_json::json;

use lambda_common::auth::{AuthError, AuthSettings, JwksCachePolicy, JwtVerifier};
use shared::PlayerId;

const ISSUER: &str = "https://issuer.example.test/pool-1";
const AUDIENCE: &str = "game-client";

struct Idp {
    server: ConnectionsServer,
    issuer: TestIssuer,
}

/// A real local HTTP server publishing the test issuer's JWKS.
async fn idp() -> Idp {
    let server = ConnectionsServer::start().await;
    let issuer = TestIssuer::new(ISSUER, AUDIENCE);
    server.serve_jwks(issuer.jwks());
    Idp { server, issuer }
}

fn verifier(idp: &Idp, policy: JwksCachePolicy) -> JwtVerifier {
    let settings = AuthSettings {
        jwks_url: idp.server.jwks_url(),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
    };
    JwtVerifier::with_cache_policy(settings, policy).unwrap()
}

#[tokio::test]
async fn a_valid_token_yields_its_subject_and_the_keys_are_cached() {
    let idp = idp().await;
    let verifier = verifier(&idp, JwksCachePolicy::default());
    for _ in 0..3 {
        let player = verifier.verify(&idp.issuer.token_for("player-7")).await;
        assert_eq!(player, Ok(PlayerId::parse("player-7").unwrap()));
    }
    assert_eq!(
        idp.server.jwks_requests(),
        1,
        "one fetch serves many tokens"
    );
}

#[tokio::test]
async fn audience_follows_the_api_gateway_rule() {
    let idp = idp().await;
    let verifier = verifier(&idp, JwksCachePolicy::default());
    let mut claims = idp.issuer.claims_for("p");
    claims["aud"] = json!(["other", AUDIENCE]);
    assert!(verifier.verify(&idp.issuer.sign(&claims)).await.is_ok());

    // No aud (a Cognito access token): client_id must match instead.
    let mut claims = idp.issuer.claims_for("p");
    claims.as_object_mut().unwrap().remove("aud");
    claims["client_id"] = json!(AUDIENCE);
    assert!(verifier.verify(&idp.issuer.sign(&claims)).await.is_ok());
    claims["client_id"] = json!("someone-else");
    assert_eq!(
        verifier.verify(&idp.issuer.sign(&claims)).await,
        Err(AuthError::WrongAudience)
    );
    claims.as_object_mut().unwrap().remove("client_id");
    assert_eq!(
        verifier.verify(&idp.issuer.sign(&claims)).await,
        Err(AuthError::WrongAudience)
    );
}

#[tokio::test]
async fn bad_tokens_are_rejected_with_the_reason() {
    let idp = idp().await;
    let verifier = verifier(&idp, JwksCachePolicy::default());
    let issuer = &idp.issuer;
    let valid = issuer.claims_for("p");
    let with = |key: &str, value: serde_json::Value| {
        let mut claims = valid.clone();
        claims[key] = value;
        claims
    };
    let without = |key: &str| {
        let mut claims = valid.clone();
        claims.as_object_mut().unwrap().remove(key);
        claims
    };
    // A forger signs with their own key under the real kid.
    let forger = issuer.with_key(1, issuer.kid());
    let public_key_bytes = issuer.jwk()["n"].as_str().unwrap().as_bytes().to_vec();
    let cases: Vec<(&str, String, AuthError)> = vec![
        ("empty", String::new(), AuthError::MissingToken),
        (
            "forged signature",
            forger.sign(&valid),
            AuthError::BadSignature,
        ),
        (
            "wrong issuer",
            issuer.sign(&with("iss", json!("https://evil.example.test"))),
            AuthError::WrongIssuer,
        ),
        (
            "wrong audience",
            issuer.sign(&with("aud", json!("another-app"))),
            AuthError::WrongAudience,
        ),
        (
            "expired",
            issuer.sign(&with("exp", json!(now_secs() - 120))),
            AuthError::Expired,
        ),
        (
            "not yet valid",
            issuer.sign(&with("nbf", json!(now_secs() + 600))),
            AuthError::NotYetValid,
        ),
        (
            "no exp",
            issuer.sign(&without("exp")),
            AuthError::MissingClaim("exp".into()),
        ),
        (
            "no sub",
            issuer.sign(&without("sub")),
            AuthError::MissingClaim("sub".into()),
        ),
        (
            "unknown kid",
            issuer.sign_with_kid(&valid, Some("nope")),
            AuthError::UnknownKey(Some("nope".into())),
        ),
        (
            "HS256 keyed with the public key",
            hs256_token(&public_key_bytes, &valid, issuer.kid()),
            AuthError::UnsupportedAlgorithm("HS256".into()),
        ),
    ];
    for (what, token, expected) in cases {
        assert_eq!(verifier.verify(&token).await, Err(expected), "{what}");
    }
    for (what, token) in [
        ("alg none", unsigned_token(&valid, issuer.kid())),
        ("garbage", "not-a-jwt".to_owned()),
        ("two parts", "a.b".to_owned()),
    ] {
        let result = verifier.verify(&token).await;
        assert!(
            matches!(result, Err(AuthError::Malformed(_))),
            "{what}: {result:?}"
        );
    }
    let bad_sub = issuer.sign(&with("sub", json!("a\nb")));
    assert!(matches!(
        verifier.verify(&bad_sub).await,
        Err(AuthError::BadSubject(_))
    ));
}

#[tokio::test]
async fn a_rotated_key_is_fetched_but_unknown_kids_refetch_at_most_once_per_interval() {
    let idp = idp().await;
    let policy = JwksCachePolicy {
        ttl: Duration::from_secs(600),
        min_refetch_interval: Duration::from_secs(1),
    };
    let verifier = verifier(&idp, policy);
    // Made up front so key generation cannot eat into the interval below.
    let rotated = idp.issuer.with_key(2, "test-key-2");
    let token = rotated.token_for("p");
    let rotated_jwks = json!({ "keys": [idp.issuer.jwk(), rotated.jwk()] });
    assert!(verifier.verify(&idp.issuer.token_for("p")).await.is_ok());
    assert_eq!(idp.server.jwks_requests(), 1);

    // The issuer rotates in a new key.
    idp.server.serve_jwks(rotated_jwks);
    // Within the interval the unknown kid does not trigger a fetch.
    assert_eq!(
        verifier.verify(&token).await,
        Err(AuthError::UnknownKey(Some("test-key-2".into())))
    );
    assert_eq!(idp.server.jwks_requests(), 1);
    let started = Instant::now();
    let mut attempts = 0;
    while verifier.verify(&token).await.is_err() {
        attempts += 1;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "rotation never picked up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(attempts > 0);
    assert_eq!(
        idp.server.jwks_requests(),
        2,
        "exactly one refetch for the rotation"
    );
    // Garbage kids now cannot make it fetch again within the interval.
    for i in 0..5 {
        let kid = format!("forged-{i}");
        let forged = idp
            .issuer
            .sign_with_kid(&idp.issuer.claims_for("p"), Some(&kid));
        assert!(verifier.verify(&forged).await.is_err());
    }
    assert_eq!(idp.server.jwks_requests(), 2);
}

#[tokio::test]
async fn a_stale_cache_is_refreshed_and_kept_while_the_issuer_is_down() {
    let idp = idp().await;
    let policy = JwksCachePolicy {
        ttl: Duration::from_millis(100),
        min_refetch_interval: Duration::from_millis(100),
    };
    let verifier = verifier(&idp, policy);
    let token = idp.issuer.token_for("p");
    assert!(verifier.verify(&token).await.is_ok());
    let started = Instant::now();
    while idp.server.jwks_requests() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never refreshed"
        );
        assert!(verifier.verify(&token).await.is_ok());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The issuer goes away: the cached keys keep working.
    let url = idp.server.jwks_url();
    drop(idp.server);
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(300) {
        assert!(verifier.verify(&token).await.is_ok(), "{url} is down");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn without_any_keys_the_failure_is_ours_not_the_callers() {
    let server = ConnectionsServer::start().await; // publishes no JWKS: 404
    let issuer = TestIssuer::new(ISSUER, AUDIENCE);
    let settings = AuthSettings {
        jwks_url: server.jwks_url(),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
    };
    let verifier = JwtVerifier::new(settings).unwrap();
    let err = verifier.verify(&issuer.token_for("p")).await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    // Once published, the next connect works without waiting.
    server.serve_jwks(issuer.jwks());
    assert!(verifier.verify(&issuer.token_for("p")).await.is_ok());
    assert!(!AuthError::Expired.is_unavailable());
}

#[test]
fn settings_require_all_three_variables() {
    let vars: HashMap<&str, &str> = [
        ("AUTH_JWKS_URL", "https://idp.example/.well-known/jwks.json"),
        ("AUTH_ISSUER", ISSUER),
        ("AUTH_AUDIENCE", AUDIENCE),
    ]
    .into_iter()
    .collect();
    let ok = AuthSettings::from_lookup(|k| vars.get(k).map(|v| v.to_string())).unwrap();
    assert_eq!(ok.audience, AUDIENCE);
    for missing in ["AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE"] {
        let err = AuthSettings::from_lookup(|k| {
            (k != missing)
                .then(|| vars.get(k).map(|v| v.to_string()))
                .flatten()
        })
        .unwrap_err();
        assert_eq!(err.var, missing);
    }
    let err = AuthSettings::from_lookup(|k| {
        if k == "AUTH_JWKS_URL" {
            Some("ftp://x".into())
        } else {
            vars.get(k).map(|v| v.to_string())
        }
    })
    .unwrap_err();
    assert_eq!(err.var, "AUTH_JWKS_URL");
    assert_eq!(
        JwksCachePolicy::default().min_refetch_interval,
        Duration::from_secs(30)
    );
    assert_eq!(JwksCachePolicy::default().ttl, Duration::from_secs(600));
}
