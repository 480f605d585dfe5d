//! Binance's HMAC signature: the hex HMAC-SHA256, keyed with the API secret, of the query string
//! followed by the request body (every parameter but `signature` itself).

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub fn signature(secret: &str, payload: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(payload.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Binance's published example ("SIGNED Endpoint Examples for POST /api/v3/order", HMAC
    /// keys): this secret and payload sign to this value.
    #[test]
    fn matches_the_example_binance_publishes() {
        let secret = "NhqPtmdSJYdKjVHjA7PZj4Mge3R5YNiP1e3UZjInClVN65XAbvqqM6A7H5fATj0j";
        let payload = "symbol=LTCBTC&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559";
        assert_eq!(
            signature(secret, payload),
            "c8db56825ae71d6d79447849e617115f4a920fa2acdcab2b053c4b2838bd6b71"
        );
        // The second example: a symbol with non-ASCII characters, percent-encoded before signing.
        let payload = "symbol=%EF%BC%91%EF%BC%92%EF%BC%93%EF%BC%94%EF%BC%95%EF%BC%96&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559";
        assert_eq!(
            signature(secret, payload),
            "e1353ec6b14d888f1164ae9af8228a3dbd508bc82eb867db8ab6046442f33ef3"
        );
        assert_eq!(
            exchange_kit::query::encode("１２３４５６"),
            "%EF%BC%91%EF%BC%92%EF%BC%93%EF%BC%94%EF%BC%95%EF%BC%96"
        );
    }
}
