//! Outgoing HTTP for broker plugins, safe to hand users' keys to: only the hosts the plugin's
//! manifest declares (or the operator's configured `base_url`), never an address that resolves
//! to loopback, a private or link-local network, or a cloud metadata service unless the operator
//! allows it (`TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK`), TLS verified against the web's roots.
//!
//! The check is made on the addresses the connection will actually use: the resolver that checks
//! them is the one the connection dials, so a name cannot resolve to a public address for the
//! check and a private one for the request.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::bindings::broker::tradehost::plugin::http;

/// Outgoing HTTP response bodies are capped so a hostile endpoint cannot fill the guest.
const BODY_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// What outgoing requests may reach, beyond the public internet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Egress {
    /// Loopback, private, link-local and metadata addresses too (a local exchange simulator, a
    /// proxy on the operator's network).
    pub allow_private_network: bool,
}

/// Why an address may not be reached, if it may not.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            let segments = v6.segments();
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if segments[0] & 0xfe00 == 0xfc00 {
                Some("unique local (private)")
            } else if segments[0] & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if segments[0] == 0x2001 && segments[1] == 0x0db8 {
                Some("documentation")
            } else if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                // NAT64: the IPv4 address it carries decides.
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                forbidden_v4(Ipv4Addr::new(a, b, c, d))
            } else {
                None
            }
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        // 169.254.0.0/16 holds the cloud metadata services (169.254.169.254).
        Some("link-local or metadata")
    } else if a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("carrier-grade NAT (shared)")
    } else if a == 192 && b == 0 && c == 0 {
        Some("protocol assignments")
    } else if ip.is_documentation() {
        Some("documentation")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("benchmarking")
    } else if ip.is_multicast() || a >= 240 {
        Some("multicast or reserved")
    } else {
        None
    }
}

/// A refused destination.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Resolves as usual, then refuses the forbidden addresses the connection would dial.
struct CheckedResolver {
    inner: DefaultResolver,
    egress: Egress,
}

impl std::fmt::Debug for CheckedResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedResolver")
            .field("egress", &self.egress)
            .finish()
    }
}

impl Resolver for CheckedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addresses = self.inner.resolve(uri, config, timeout)?;
        if !self.egress.allow_private_network
            && let Some((address, why)) = addresses
                .iter()
                .find_map(|a| forbidden(a.ip()).map(|why| (a.ip(), why)))
        {
            return Err(ureq::Error::Other(Box::new(Refused(format!(
                "{} resolves to {address}, a {why} address; the operator has not allowed the private network",
                uri.host().unwrap_or_default()
            )))));
        }
        Ok(addresses)
    }
}

/// An HTTP agent that dials only what `egress` allows (checked on the resolved addresses it
/// connects to), follows no redirect and reports every status as a response.
pub fn checked_agent(egress: Egress, max_idle_connections: usize) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_idle_connections(max_idle_connections)
        .max_idle_connections_per_host(8)
        .build();
    ureq::Agent::with_parts(
        config,
        DefaultConnector::default(),
        CheckedResolver {
            inner: DefaultResolver::default(),
            egress,
        },
    )
}

/// Whether an agent error is a destination [`checked_agent`] refused, and why.
pub fn refusal(err: &ureq::Error) -> Option<String> {
    match err {
        ureq::Error::Other(inner) if inner.is::<Refused>() => Some(inner.to_string()),
        _ => None,
    }
}

/// The outgoing HTTP client of a runtime: one connection pool for every plugin call, so a venue's
/// TLS connection is reused from one order to the next.
#[derive(Debug, Clone)]
pub struct Client {
    agent: ureq::Agent,
    egress: Egress,
}

impl Client {
    pub fn new(egress: Egress) -> Client {
        Client {
            agent: checked_agent(egress, 64),
            egress,
        }
    }

    pub fn egress(&self) -> Egress {
        self.egress
    }

    /// Sends one request.
    pub fn send(&self, req: http::Request) -> Result<http::Response, http::HttpError> {
        let timeout = Duration::from_millis(u64::from(req.timeout_ms.clamp(100, 30_000)));
        let method = ureq::http::Method::from_bytes(req.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| http::HttpError::Failed(format!("invalid method {}", req.method)))?;
        let mut builder = ureq::http::Request::builder().method(method).uri(&req.url);
        for header in &req.headers {
            builder = builder.header(&header.name, &header.value);
        }
        let request = builder
            .body(req.body)
            .map_err(|err| http::HttpError::Failed(err.to_string()))?;
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(Some(timeout))
            // A connection that cannot be made in time is reported as unreachable: nothing was
            // sent.
            .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
            .build();
        let mut response = self.agent.run(request).map_err(|err| match err {
            ureq::Error::Other(inner) if inner.is::<Refused>() => {
                http::HttpError::Forbidden(inner.to_string())
            }
            ureq::Error::Timeout(ureq::Timeout::Resolve | ureq::Timeout::Connect)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::Tls(_)
            | ureq::Error::Rustls(_) => http::HttpError::Unreachable(err.to_string()),
            // Refused or no route: the connection was never made.
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::AddrNotAvailable
                        | std::io::ErrorKind::HostUnreachable
                        | std::io::ErrorKind::NetworkUnreachable
                ) =>
            {
                http::HttpError::Unreachable(io.to_string())
            }
            ureq::Error::Timeout(_) => http::HttpError::Timeout,
            other => http::HttpError::Failed(other.to_string()),
        })?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| http::Header {
                name: name.to_string(),
                value: value.to_str().unwrap_or_default().to_string(),
            })
            .collect();
        let body = response
            .body_mut()
            .with_config()
            .limit(BODY_MAX_BYTES)
            .read_to_vec()
            .map_err(|err| http::HttpError::Failed(err.to_string()))?;
        Ok(http::Response {
            status,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_refused() {
        for address in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "100.64.0.1",
            "0.0.0.0",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
        ] {
            assert!(forbidden(ip(address)).is_some(), "{address}");
        }
        for address in [
            "1.1.1.1",
            "52.84.10.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(forbidden(ip(address)), None, "{address}");
        }
    }

    fn get(url: &str) -> http::Request {
        http::Request {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout_ms: 1_000,
        }
    }

    #[test]
    fn names_are_checked_by_the_addresses_they_resolve_to() {
        // `localhost` resolves (from the hosts file) to loopback: refused before connecting.
        let refused = Client::new(Egress::default()).send(get("http://localhost:9/"));
        assert!(
            matches!(&refused, Err(http::HttpError::Forbidden(why)) if why.contains("loopback")),
            "{refused:?}"
        );
        // Allowed, the same request is made (and finds nothing listening on port 9).
        let allowed = Client::new(Egress {
            allow_private_network: true,
        })
        .send(get("http://localhost:9/"));
        assert!(
            matches!(allowed, Err(http::HttpError::Unreachable(_))),
            "{allowed:?}"
        );
    }
}
