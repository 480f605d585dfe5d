//! HS256 access tokens carrying the user, their role and the session they belong to.

use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// User id.
    pub sub: String,
    /// Session id: revoking the session ends the token at once.
    pub sid: String,
    pub role: String,
    pub iat: i64,
    pub exp: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    Expired,
    Invalid,
}

pub struct Jwt {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    ttl_secs: i64,
}

impl Jwt {
    pub fn new(secret: &[u8], ttl: Duration) -> Self {
        // Only HS256: `alg: none` and every other algorithm are refused by the validation.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_exp = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            ttl_secs: ttl.as_secs_f64().ceil().max(1.0) as i64,
        }
    }

    /// Lifetime of an access token in seconds (`expires_in`).
    pub fn ttl_secs(&self) -> i64 {
        self.ttl_secs
    }

    pub fn issue(&self, user_id: &str, session_id: &str, role: &str) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user_id.to_string(),
            sid: session_id.to_string(),
            role: role.to_string(),
            iat: now,
            exp: now + self.ttl_secs,
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        match jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation) {
            Ok(data) => Ok(data.claims),
            Err(err) if matches!(err.kind(), ErrorKind::ExpiredSignature) => {
                Err(TokenError::Expired)
            }
            Err(_) => Err(TokenError::Invalid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn round_trip() {
        let jwt = Jwt::new(SECRET, Duration::from_secs(3600));
        let token = jwt.issue("u1", "s1", "user").unwrap();
        let claims = jwt.verify(&token).unwrap();
        assert_eq!(
            (
                claims.sub.as_str(),
                claims.sid.as_str(),
                claims.role.as_str()
            ),
            ("u1", "s1", "user")
        );
        assert_eq!(claims.exp - claims.iat, 3600);
    }

    #[test]
    fn expired_tampered_foreign_and_unsigned_tokens_are_refused() {
        let jwt = Jwt::new(SECRET, Duration::from_secs(3600));
        let now = chrono::Utc::now().timestamp();
        let expired = Claims {
            sub: "u".into(),
            sid: "s".into(),
            role: "user".into(),
            iat: now - 10,
            exp: now - 1,
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &expired,
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        assert_eq!(jwt.verify(&token), Err(TokenError::Expired));

        let other = Jwt::new(b"another-secret-another-secret-xx", Duration::from_secs(60));
        assert_eq!(
            jwt.verify(&other.issue("u", "s", "admin").unwrap()),
            Err(TokenError::Invalid)
        );

        let good = jwt.issue("u", "s", "user").unwrap();
        let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
        let forged_claims = URL_SAFE_NO_PAD.encode(format!(
            r#"{{"sub":"u","sid":"s","role":"admin","iat":{now},"exp":{}}}"#,
            now + 999
        ));
        parts[1] = forged_claims.clone();
        assert_eq!(jwt.verify(&parts.join(".")), Err(TokenError::Invalid));

        let none_header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        assert_eq!(
            jwt.verify(&format!("{none_header}.{forged_claims}.")),
            Err(TokenError::Invalid)
        );
        let hs512 = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &expired,
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        assert_eq!(jwt.verify(&hs512), Err(TokenError::Invalid));
        assert_eq!(jwt.verify("garbage"), Err(TokenError::Invalid));
    }
}
