//! JWT verification for WebSocket `$connect`.
//!
//! API Gateway WebSocket APIs offer only Lambda authorizers on `$connect`, so
//! `ws-connect` checks the `?token=` itself with the same rules as the HTTP
//! API's JWT authorizer: RS256 signed by a key of the issuer's JWKS, `iss`
//! equal to `AUTH_ISSUER`, `aud` containing `AUTH_AUDIENCE` (or, for tokens
//! without `aud` such as Cognito access tokens, `client_id` equal to it),
//! `exp` present and in the future. The verified `sub` is the player id.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex;

use shared::{ConfigError, PlayerId, ValidationError};

/// Largest JWKS document accepted.
const MAX_JWKS_BYTES: usize = 256 * 1024;
const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 30;

/// Where the signing keys come from and what the tokens must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// `AUTH_JWKS_URL`, e.g. `{issuer}/.well-known/jwks.json`.
    pub jwks_url: String,
    /// `AUTH_ISSUER`: the exact `iss` claim.
    pub issuer: String,
    /// `AUTH_AUDIENCE`: required in `aud` (or as `client_id`).
    pub audience: String,
}

impl AuthSettings {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let required = |var: &'static str| {
            lookup(var)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| ConfigError {
                    var,
                    reason: "must be set".into(),
                })
        };
        let jwks_url = required("AUTH_JWKS_URL")?;
        if !(jwks_url.starts_with("https://") || jwks_url.starts_with("http://")) {
            return Err(ConfigError {
                var: "AUTH_JWKS_URL",
                reason: format!("expected an https:// URL, got {jwks_url:?}"),
            });
        }
        Ok(Self {
            jwks_url,
            issuer: required("AUTH_ISSUER")?,
            audience: required("AUTH_AUDIENCE")?,
        })
    }
}

/// How long fetched keys are trusted and how often an unknown `kid` may
/// trigger a refetch (so forged `kid`s cannot hammer the issuer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JwksCachePolicy {
    pub ttl: Duration,
    pub min_refetch_interval: Duration,
}

impl Default for JwksCachePolicy {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(600),
            min_refetch_interval: Duration::from_secs(30),
        }
    }
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("no token was presented")]
    MissingToken,
    #[error("the token is malformed: {0}")]
    Malformed(String),
    #[error("the token is signed with {0}; only RS256 is accepted")]
    UnsupportedAlgorithm(String),
    #[error("no signing key with kid {0:?} is published by the issuer")]
    UnknownKey(Option<String>),
    #[error("the signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued by someone else")]
    WrongIssuer,
    #[error("the token is meant for another audience")]
    WrongAudience,
    #[error("the token has no {0} claim")]
    MissingClaim(String),
    #[error("the token's subject is not a valid player id: {0}")]
    BadSubject(ValidationError),
    /// The issuer's keys could not be fetched (and none are cached): the
    /// token may be fine, so this is our failure, not the caller's.
    #[error("the issuer's signing keys are unavailable: {0}")]
    KeysUnavailable(String),
}

impl AuthError {
    /// True when the failure is on our side (answer 503, not 401).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, AuthError::KeysUnavailable(_))
    }
}

#[derive(Default)]
struct KeyCache {
    /// Usable RS256 keys by `kid` (keys without a `kid` under "").
    keys: HashMap<String, DecodingKey>,
    fetched_at: Option<Instant>,
    last_attempt: Option<Instant>,
}

/// Verifies tokens against the issuer's JWKS, which it caches across
/// invocations. Build it once per process.
pub struct JwtVerifier {
    settings: AuthSettings,
    policy: JwksCachePolicy,
    http: reqwest::Client,
    validation: Validation,
    cache: Mutex<KeyCache>,
}

#[derive(Deserialize)]
struct Claims {
    // Optional here so a missing `sub` is reported as such, not as bad JSON.
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    client_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, wanted: &str) -> bool {
        match self {
            Audience::One(a) => a == wanted,
            Audience::Many(list) => list.iter().any(|a| a == wanted),
        }
    }
}

impl JwtVerifier {
    pub fn new(settings: AuthSettings) -> Result<Self, ConfigError> {
        Self::with_cache_policy(settings, JwksCachePolicy::default())
    }

    pub fn with_cache_policy(
        settings: AuthSettings,
        policy: JwksCachePolicy,
    ) -> Result<Self, ConfigError> {
        let http = reqwest::Client::builder()
            .timeout(JWKS_FETCH_TIMEOUT)
            .build()
            .map_err(|e| ConfigError {
                var: "AUTH_JWKS_URL",
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[settings.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        // Checked below with API Gateway's rule (aud, else client_id).
        validation.validate_aud = false;
        Ok(Self {
            settings,
            policy,
            http,
            validation,
            cache: Mutex::new(KeyCache::default()),
        })
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Verifies `token` and returns its subject as the player id.
    pub async fn verify(&self, token: &str) -> Result<PlayerId, AuthError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(AuthError::MissingToken);
        }
        // The header is read unverified only to pick the algorithm and key;
        // embedded `jwk`/`jku` headers are never trusted.
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| AuthError::Malformed(e.to_string()))?;
        if header.alg != Algorithm::RS256 {
            return Err(AuthError::UnsupportedAlgorithm(format!("{:?}", header.alg)));
        }
        let key = self.key_for(header.kid.as_deref()).await?;
        let data =
            jsonwebtoken::decode::<Claims>(token, &key, &self.validation).map_err(map_jwt_error)?;
        let claims = data.claims;
        let audience_ok = match &claims.aud {
            Some(aud) => aud.contains(&self.settings.audience),
            None => claims.client_id.as_deref() == Some(self.settings.audience.as_str()),
        };
        if !audience_ok {
            return Err(AuthError::WrongAudience);
        }
        let sub = claims
            .sub
            .ok_or_else(|| AuthError::MissingClaim("sub".into()))?;
        PlayerId::parse(&sub).map_err(AuthError::BadSubject)
    }

    /// The key for `kid`, fetching the JWKS when the cache is empty, stale, or
    /// does not know `kid` (the latter at most once per refetch interval).
    async fn key_for(&self, kid: Option<&str>) -> Result<DecodingKey, AuthError> {
        let mut cache = self.cache.lock().await;
        let now = Instant::now();
        let fresh = cache
            .fetched_at
            .is_some_and(|t| now.duration_since(t) < self.policy.ttl);
        let may_refetch = cache
            .last_attempt
            .is_none_or(|t| now.duration_since(t) >= self.policy.min_refetch_interval);
        let known = lookup(&cache.keys, kid).is_some();
        // Without any keys every request tries; a stale cache or an unknown
        // kid (key rotation) refetches only as often as the policy allows.
        let refetch = cache.fetched_at.is_none() || ((!fresh || !known) && may_refetch);
        if refetch {
            cache.last_attempt = Some(now);
            match self.fetch_keys().await {
                Ok(keys) => {
                    cache.keys = keys;
                    cache.fetched_at = Some(Instant::now());
                }
                Err(reason) if cache.keys.is_empty() => {
                    tracing::warn!(%reason, url = %self.settings.jwks_url, "cannot fetch the JWKS");
                    return Err(AuthError::KeysUnavailable(reason));
                }
                Err(reason) => {
                    // Keep verifying with the keys we have while the issuer
                    // is unreachable.
                    tracing::warn!(%reason, url = %self.settings.jwks_url, "cannot refresh the JWKS; using cached keys");
                }
            }
        }
        lookup(&cache.keys, kid)
            .cloned()
            .ok_or_else(|| AuthError::UnknownKey(kid.map(str::to_owned)))
    }

    async fn fetch_keys(&self) -> Result<HashMap<String, DecodingKey>, String> {
        let response = self
            .http
            .get(&self.settings.jwks_url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("answered {status}"));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_JWKS_BYTES as u64)
        {
            return Err("document too large".into());
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("reading the body failed: {e}"))?;
        if body.len() > MAX_JWKS_BYTES {
            return Err("document too large".into());
        }
        let keys = parse_jwks(&body)?;
        tracing::info!(keys = keys.len(), "fetched the JWKS");
        Ok(keys)
    }
}

/// The RS256 signing keys of a JWKS document. Keys of other types or uses
/// are skipped rather than failing the whole document.
fn parse_jwks(body: &[u8]) -> Result<HashMap<String, DecodingKey>, String> {
    #[derive(Deserialize)]
    struct JwkSet {
        keys: Vec<serde_json::Value>,
    }
    let set: JwkSet =
        serde_json::from_slice(body).map_err(|e| format!("not a JWKS document: {e}"))?;
    let mut keys = HashMap::new();
    for value in set.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        let usable = matches!(jwk.algorithm, AlgorithmParameters::RSA(_))
            && matches!(
                jwk.common.public_key_use,
                None | Some(PublicKeyUse::Signature)
            )
            && matches!(jwk.common.key_algorithm, None | Some(KeyAlgorithm::RS256));
        if !usable {
            continue;
        }
        if let Ok(key) = DecodingKey::from_jwk(&jwk) {
            keys.insert(jwk.common.key_id.clone().unwrap_or_default(), key);
        }
    }
    if keys.is_empty() {
        return Err("the JWKS has no RS256 signing key".into());
    }
    Ok(keys)
}

/// A token without `kid` is accepted only when the issuer publishes a single
/// key, so the choice is never ambiguous.
fn lookup<'a>(
    keys: &'a HashMap<String, DecodingKey>,
    kid: Option<&str>,
) -> Option<&'a DecodingKey> {
    match kid {
        Some(kid) => keys.get(kid),
        None if keys.len() == 1 => keys.values().next(),
        None => None,
    }
}

fn map_jwt_error(e: jsonwebtoken::errors::Error) -> AuthError {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
        ErrorKind::InvalidAudience => AuthError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) => AuthError::MissingClaim(claim.clone()),
        ErrorKind::InvalidAlgorithm => AuthError::UnsupportedAlgorithm("mismatched".into()),
        _ => AuthError::Malformed(e.to_string()),
    }
}
