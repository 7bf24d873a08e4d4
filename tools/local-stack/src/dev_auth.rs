//! Development identity provider and API Gateway JWT authorizer emulation.
//!
//! At start the local stack generates an RS256 key pair, serves its public
//! key as a JWKS (so `ws-connect` verifies `$connect` tokens against it
//! exactly as against a real issuer) and mints tokens for any `sub` at
//! `POST /dev/token`. The minting endpoint exists only here, never in a
//! Lambda binary.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::traits::PublicKeyParts;
use serde_json::{json, Map, Value};

/// Key id of the development key.
const KEY_ID: &str = "local-dev-key";

#[derive(Debug, thiserror::Error)]
pub enum DevAuthError {
    #[error("generating the development key failed: {0}")]
    KeyGeneration(String),
    #[error("token rejected: {0}")]
    Rejected(String),
}

/// The development issuer: signs tokens and verifies them like API Gateway's
/// JWT authorizer (RS256 signature, issuer, audience, expiry).
pub struct DevIssuer {
    pub issuer: String,
    pub audience: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    jwks: Value,
}

impl DevIssuer {
    pub fn generate(issuer: &str, audience: &str) -> Result<Self, DevAuthError> {
        let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048)
            .map_err(|e| DevAuthError::KeyGeneration(e.to_string()))?;
        let der = key
            .to_pkcs1_der()
            .map_err(|e| DevAuthError::KeyGeneration(e.to_string()))?;
        let encoding = EncodingKey::from_rsa_der(der.as_bytes());
        let n = URL_SAFE_NO_PAD.encode(key.n().to_be_bytes_trimmed_vartime());
        let e = URL_SAFE_NO_PAD.encode(key.e().to_be_bytes_trimmed_vartime());
        let decoding = DecodingKey::from_rsa_components(&n, &e)
            .map_err(|e| DevAuthError::KeyGeneration(e.to_string()))?;
        let jwks = json!({ "keys": [{ "kty": "RSA", "use": "sig", "alg": "RS256", "kid": KEY_ID, "n": n, "e": e }] });
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            encoding,
            decoding,
            jwks,
        })
    }

    /// The public key set served at `/.well-known/jwks.json`.
    pub fn jwks(&self) -> &Value {
        &self.jwks
    }

    /// Signs a token for `sub`, valid for `ttl`.
    pub fn mint(&self, sub: &str, ttl: Duration) -> Result<String, DevAuthError> {
        self.mint_with(sub, ttl, &Map::new())
    }

    /// Mints a token with `extra` claims too (e.g. a rating claim `mmr`, or
    /// `scope` for the ratings writer); the registered claims cannot be
    /// overridden.
    pub fn mint_with(
        &self,
        sub: &str,
        ttl: Duration,
        extra: &Map<String, Value>,
    ) -> Result<String, DevAuthError> {
        let now = unix_now();
        let mut claims = Map::new();
        claims.insert("scope".into(), json!("matchmaking"));
        for (k, v) in extra {
            if !matches!(k.as_str(), "sub" | "iss" | "aud" | "iat" | "exp" | "nbf") {
                claims.insert(k.clone(), v.clone());
            }
        }
        claims.insert("sub".into(), json!(sub));
        claims.insert("iss".into(), json!(self.issuer));
        claims.insert("aud".into(), json!(self.audience));
        claims.insert("iat".into(), json!(now));
        claims.insert("exp".into(), json!(now + ttl.as_secs()));
        self.sign(&Value::Object(claims))
    }

    /// Signs arbitrary claims with the development key (tests use it for
    /// expired or wrong-audience tokens).
    pub fn sign(&self, claims: &Value) -> Result<String, DevAuthError> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(KEY_ID.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|e| DevAuthError::Rejected(e.to_string()))
    }

    /// Verifies a bearer token as the HTTP API's JWT authorizer would and
    /// returns its claims (passed on in the event, as API Gateway does).
    pub fn verify(&self, token: &str) -> Result<Map<String, Value>, DevAuthError> {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 0;
        jsonwebtoken::decode::<Map<String, Value>>(token, &self.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| DevAuthError::Rejected(e.to_string()))
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_verify_and_tampered_ones_do_not() {
        let issuer = DevIssuer::generate("http://issuer", "matchmaking").unwrap();
        let token = issuer.mint("alice", Duration::from_secs(60)).unwrap();
        let claims = issuer.verify(&token).unwrap();
        assert_eq!(claims["sub"], "alice");
        assert_eq!(claims["iss"], "http://issuer");

        let other = DevIssuer::generate("http://issuer", "matchmaking").unwrap();
        assert!(other.verify(&token).is_err(), "another key's signature");
        let strict = DevIssuer {
            issuer: issuer.issuer.clone(),
            audience: "another-api".into(),
            encoding: issuer.encoding.clone(),
            decoding: issuer.decoding.clone(),
            jwks: issuer.jwks.clone(),
        };
        assert!(strict.verify(&token).is_err(), "wrong audience");
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(KEY_ID.into());
        let past = json!({"sub": "a", "iss": "http://issuer", "aud": "matchmaking", "exp": unix_now() - 10});
        let expired = jsonwebtoken::encode(&header, &past, &issuer.encoding).unwrap();
        assert!(issuer.verify(&expired).is_err(), "expired");
        let unsigned = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            token.split('.').nth(1).unwrap()
        );
        assert!(issuer.verify(&unsigned).is_err(), "alg none");
        assert_eq!(issuer.jwks()["keys"][0]["kid"], KEY_ID);
    }
}
