//! JSON Web Tokens as service-account tokens are shaped (`header.payload.signature`, each
//! base64url without padding), signed with HMAC-SHA256 (`HS256`) under a key made at start.
//!
//! The API server signs with RS256 or ES256 so that others can verify with its published key;
//! fakekube is the only verifier of its tokens, so a shared-secret MAC is enough and costs a
//! microsecond per request.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use ring::rand::SystemRandom;
use serde_json::{Value, json};
use std::fmt;

/// Why a token could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Not three base64url parts with a JSON header and payload.
    #[error("the token is not a JSON web token")]
    Malformed,
    /// The header names another algorithm or key.
    #[error("the token was not signed by this server")]
    ForeignKey,
    /// The signature does not match.
    #[error("the token's signature is invalid")]
    BadSignature,
}

/// Signs and verifies tokens with one key. Its `Debug` shows only the key id.
pub struct Signer {
    key: hmac::Key,
    key_id: String,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer with a fresh random key.
    pub fn generate() -> Result<Signer, ring::error::Unspecified> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new())?;
        Ok(Signer {
            key,
            key_id: uuid::Uuid::new_v4().simple().to_string(),
        })
    }

    /// The token carrying `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = json!({ "alg": "HS256", "kid": self.key_id });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let tag = hmac::sign(&self.key, signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(tag.as_ref());
        // The part that makes the token a credential, for CI's credential scan.
        crate::secret_log::record(&signature);
        format!("{signing_input}.{signature}")
    }

    /// The claims of a token this signer signed.
    pub(crate) fn verify(&self, token: &str) -> Result<Value, JwtError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };
        let decode_json = |part: &str| -> Result<Value, JwtError> {
            let bytes = URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| JwtError::Malformed)?;
            serde_json::from_slice::<Value>(&bytes).map_err(|_| JwtError::Malformed)
        };
        let header = decode_json(header)?;
        if header.get("alg").and_then(Value::as_str) != Some("HS256")
            || header.get("kid").and_then(Value::as_str) != Some(self.key_id.as_str())
        {
            return Err(JwtError::ForeignKey);
        }
        let tag = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| JwtError::Malformed)?;
        let signed = &token[..token.len() - signature.len() - 1];
        hmac::verify(&self.key, signed.as_bytes(), &tag).map_err(|_| JwtError::BadSignature)?;
        let claims = decode_json(payload)?;
        if !claims.is_object() {
            return Err(JwtError::Malformed);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_token_verifies_and_a_changed_one_does_not() {
        let s = Signer::generate().expect("a key");
        let t = s.sign(&json!({ "sub": "x" }));
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(s.verify(&t), Ok(json!({ "sub": "x" })));
        let forged_payload = URL_SAFE_NO_PAD.encode(json!({ "sub": "admin" }).to_string());
        let mut parts: Vec<&str> = t.split('.').collect();
        parts[1] = &forged_payload;
        assert_eq!(s.verify(&parts.join(".")), Err(JwtError::BadSignature));
        let other = Signer::generate().expect("a key");
        assert_eq!(other.verify(&t), Err(JwtError::ForeignKey));
        assert_eq!(s.verify("a.b"), Err(JwtError::Malformed));
        assert_eq!(s.verify("not-a-token"), Err(JwtError::Malformed));
    }

    #[test]
    fn debug_output_shows_no_key() {
        let s = Signer::generate().expect("a key");
        let shown = format!("{s:?}");
        assert!(
            shown.contains("key_id") && !shown.contains("key:"),
            "{shown}"
        );
    }
}
