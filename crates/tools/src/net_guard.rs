//! Refusal of loopback, private, link-local and metadata addresses for
//! outbound requests (R-SEC-2), checked on the *resolved* address, so a
//! hostname that resolves to 127.0.0.1 is refused as well, and again on
//! every redirect. Guarded clients ignore proxy environment variables (a
//! proxy would resolve names out of the guard's sight), and a refusal names
//! the host, never the internal address it resolved to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

pub use crate::outbound_allow::OutboundAllow;

/// Whether outbound requests may reach non-public addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AddressPolicy {
    /// Only public unicast addresses (the default).
    #[default]
    PublicOnly,
    /// Anything, for tests and local tools (`RTC_ALLOW_PRIVATE_NETWORK=1`).
    AllowPrivate,
    /// Public addresses and the private ones an operator listed
    /// (`RTC_OUTBOUND_ALLOW`, parsed once at start for the process).
    Allowed(&'static OutboundAllow),
}

impl AddressPolicy {
    /// Whether a resolved address may be reached (port-less entries only:
    /// a port entry is checked on the URL, see [`check_url`]).
    pub fn permits(self, ip: IpAddr) -> bool {
        match self {
            Self::AllowPrivate => true,
            Self::PublicOnly => is_public(ip),
            Self::Allowed(a) => is_public(ip) || a.allows_ip(ip, None),
        }
    }

    /// A policy of public addresses and those `allow` lists; the allowlist
    /// lives as long as the process (it is the server's configuration).
    pub fn allowing(allow: OutboundAllow) -> Self {
        if allow.is_empty() {
            Self::PublicOnly
        } else {
            Self::Allowed(Box::leak(Box::new(allow)))
        }
    }
}

/// What a refusal says an operator can do.
const HOW_TO_ALLOW: &str =
    "an operator can allow it with RTC_OUTBOUND_ALLOW (hosts, host:port, addresses or networks)";

/// Whether an address is public unicast: IPv4 outside the special-purpose
/// blocks, IPv6 inside global unicast `2000::/3` outside its special blocks.
/// Forms that embed an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64
/// `64:ff9b::/96`, 6to4 `2002::/16`) are judged by that address; every
/// other IPv6 address outside `2000::/3` is refused, which covers
/// IPv4-compatible `::a.b.c.d`, unique-local `fc00::/7`, link-local
/// `fe80::/10`, site-local `fec0::/10`, multicast and the local-use NAT64
/// prefix `64:ff9b:1::/48`.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = v6.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from_bits((u32::from(hi) << 16) | u32::from(lo));
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 (RFC 6052): reaches the IPv4 address in the low 32 bits.
        return is_public_v4(embedded(s[6], s[7]));
    }
    if s[0] & 0xe000 != 0x2000 {
        return false;
    }
    match s[0] {
        // IETF protocol assignments (Teredo, ORCHID, benchmarking, …).
        0x2001 if s[1] < 0x0200 => false,
        // Documentation.
        0x2001 if s[1] == 0x0db8 => false,
        0x3fff if s[1] < 0x1000 => false,
        // 6to4 (RFC 3056): tunnels to the IPv4 address in bits 16..48.
        0x2002 => is_public_v4(embedded(s[1], s[2])),
        _ => true,
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    !(v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local() // includes 169.254.169.254 (cloud metadata)
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockedUrl {
    #[error("only http and https URLs are allowed")]
    Scheme,
    #[error("the URL has no host")]
    NoHost,
    #[error("the address {0} is private, loopback or reserved and is refused; {HOW_TO_ALLOW}")]
    Address(IpAddr),
    #[error("the host {0} names this machine and is refused; {HOW_TO_ALLOW}")]
    LocalName(String),
    #[error("the host {host} is allowed on other ports than {port} only (RTC_OUTBOUND_ALLOW)")]
    Port { host: String, port: u16 },
}

/// A host name whose every resolved address was refused. Its message names
/// the host only: the internal addresses it resolved to are not shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the address of host {host} is private, loopback or reserved and is refused; {HOW_TO_ALLOW}"
)]
pub struct BlockedHost {
    pub host: String,
}

/// The [`BlockedHost`] somewhere in an error's source chain (a request the
/// guarded resolver refused).
pub fn blocked_host<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a BlockedHost> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(blocked) = err.downcast_ref::<BlockedHost>() {
            return Some(blocked);
        }
        current = err.source();
    }
    None
}

/// Check a URL's scheme and, when its host is an IP literal, the address
/// (hostnames are checked by [`GuardedResolver`] after resolution).
pub fn check_url(url: &url::Url, policy: AddressPolicy) -> Result<(), BlockedUrl> {
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(BlockedUrl::Scheme);
    }
    let port = url.port_or_known_default();
    let ip = match url.host() {
        None => return Err(BlockedUrl::NoHost),
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(name)) => {
            return match (policy, port) {
                (AddressPolicy::Allowed(a), Some(port)) if a.refuses_port(name, port) => {
                    Err(BlockedUrl::Port {
                        host: name.to_owned(),
                        port,
                    })
                }
                _ => Ok(()),
            };
        }
    };
    let allowed = match policy {
        AddressPolicy::Allowed(a) => is_public(ip) || a.allows_ip(ip, port),
        other => other.permits(ip),
    };
    if allowed {
        Ok(())
    } else {
        Err(BlockedUrl::Address(ip))
    }
}

/// Check a URL before it is saved: [`check_url`], and under
/// [`AddressPolicy::PublicOnly`] the names that always mean this machine
/// (`localhost` and `*.localhost`, RFC 6761). Other names are not resolved
/// here: the guarded resolver judges them at every connection.
pub fn check_url_at_save(url: &url::Url, policy: AddressPolicy) -> Result<(), BlockedUrl> {
    check_url(url, policy)?;
    let listed = |name: &str| matches!(policy, AddressPolicy::Allowed(a) if a.lists_host(name));
    if policy != AddressPolicy::AllowPrivate
        && let Some(url::Host::Domain(name)) = url.host()
        && !listed(name)
    {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if name == "localhost" || name.ends_with(".localhost") {
            return Err(BlockedUrl::LocalName(name));
        }
    }
    Ok(())
}

/// How long a save waits for a name's addresses before it gives up
/// warning about them.
const SAVE_LOOKUP: Duration = Duration::from_secs(2);

/// Why calls to `url` would be refused, judged when a resource is saved:
/// [`check_url_at_save`], then a host name's addresses (looked up for at
/// most two seconds) as the guarded resolver would judge them. `None` when
/// the calls may go out, or when the name cannot be resolved now (it may
/// resolve where and when the calls are made).
pub async fn refusal_at_save(url: &url::Url, policy: AddressPolicy) -> Option<String> {
    if let Err(e) = check_url_at_save(url, policy) {
        return Some(e.to_string());
    }
    let Some(url::Host::Domain(host)) = url.host() else {
        return None;
    };
    if policy == AddressPolicy::AllowPrivate
        || matches!(policy, AddressPolicy::Allowed(a) if a.lists_host(host))
    {
        return None;
    }
    let lookup = tokio::net::lookup_host((host, url.port_or_known_default().unwrap_or(0)));
    let resolved: Vec<SocketAddr> = tokio::time::timeout(SAVE_LOOKUP, lookup)
        .await
        .ok()?
        .ok()?
        .collect();
    let refused = !resolved.is_empty() && resolved.iter().all(|a| !policy.permits(a.ip()));
    refused.then(|| {
        BlockedHost {
            host: host.to_owned(),
        }
        .to_string()
    })
}

/// A DNS resolver that drops forbidden addresses and fails when none is left.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    policy: AddressPolicy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            // A host the operator listed keeps its private addresses.
            let listed = matches!(policy, AddressPolicy::Allowed(a) if a.lists_host(&host));
            let allowed: Vec<SocketAddr> = resolved
                .iter()
                .copied()
                .filter(|a| listed || policy.permits(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(
                    Box::new(BlockedHost { host }) as Box<dyn std::error::Error + Send + Sync>
                );
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// An HTTP client whose every connection and redirect honours `policy`.
/// Redirects are followed (at most 5), each target checked, to any origin:
/// only for requests that carry nothing injected (no configured header),
/// since reqwest keeps custom headers across hosts and a 307/308 re-sends
/// the body. Requests with injected headers use
/// [`guarded_client_same_origin`].
pub fn guarded_client(
    policy: AddressPolicy,
    timeout: Duration,
) -> reqwest::Result<reqwest::Client> {
    build_guarded(policy, Some(timeout), Redirects::Follow)
}

/// Like [`guarded_client`], but a redirect to another origin (scheme, host
/// and port) is not followed: the 3xx response comes back to the caller
/// (see [`cross_origin_redirect`]), so headers carrying secrets never reach
/// a host they were not configured for. Redirects within the origin are
/// followed, each target checked.
pub fn guarded_client_same_origin(
    policy: AddressPolicy,
    timeout: Duration,
) -> reqwest::Result<reqwest::Client> {
    build_guarded(policy, Some(timeout), Redirects::SameOrigin)
}

/// Like [`guarded_client_same_origin`], but without an overall request
/// timeout (connecting is still bounded): for long-lived exchanges such as
/// MCP streamable HTTP, where a response stream may stay open as long as a
/// tool runs and the caller bounds each exchange itself. An overall
/// timeout there cut calls at its mark and made them look unsent.
pub fn guarded_client_same_origin_streaming(
    policy: AddressPolicy,
) -> reqwest::Result<reqwest::Client> {
    build_guarded(policy, None, Redirects::SameOrigin)
}

/// Like [`guarded_client_same_origin`], with a chosen connect timeout and
/// no overall timeout (each request sets its own, and a long-lived stream
/// sets none): for clients that must tell "down" from "slow" quickly, like
/// the OpenCode task backend's.
pub fn guarded_client_same_origin_connecting_within(
    policy: AddressPolicy,
    connect_timeout: Duration,
) -> reqwest::Result<reqwest::Client> {
    build_guarded_with(policy, None, connect_timeout, Redirects::SameOrigin)
}

/// Like [`guarded_client`], but a redirect to another host is not followed:
/// the 3xx response comes back to the caller (R-WFF-4). Redirects within
/// the host are followed, each target checked.
pub fn guarded_client_same_host(
    policy: AddressPolicy,
    timeout: Duration,
) -> reqwest::Result<reqwest::Client> {
    build_guarded(policy, Some(timeout), Redirects::SameHostOnly)
}

/// The target of a redirect a same-origin client did not follow: the
/// absolute `Location` of a 3xx response when it names another origin.
pub fn cross_origin_redirect(resp: &reqwest::Response) -> Option<url::Url> {
    if !resp.status().is_redirection() {
        return None;
    }
    let target = resp
        .headers()
        .get(reqwest::header::LOCATION)?
        .to_str()
        .ok()
        .and_then(|l| resp.url().join(l).ok())?;
    (target.origin() != resp.url().origin()).then_some(target)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Redirects {
    Follow,
    SameOrigin,
    SameHostOnly,
}

fn build_guarded(
    policy: AddressPolicy,
    timeout: Option<Duration>,
    redirects: Redirects,
) -> reqwest::Result<reqwest::Client> {
    let connect_timeout = Duration::from_secs(10);
    let connect_timeout = timeout.map_or(connect_timeout, |t| t.min(connect_timeout));
    build_guarded_with(policy, timeout, connect_timeout, redirects)
}

fn build_guarded_with(
    policy: AddressPolicy,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    redirects: Redirects,
) -> reqwest::Result<reqwest::Client> {
    crate::init_tls();
    let redirect = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 5 {
            return attempt.error("too many redirects");
        }
        let stays = match (redirects, attempt.previous().first()) {
            (Redirects::Follow, _) => true,
            (Redirects::SameOrigin, Some(first)) => attempt.url().origin() == first.origin(),
            (Redirects::SameHostOnly, Some(first)) => attempt.url().host_str() == first.host_str(),
            (_, None) => false,
        };
        if !stays {
            return attempt.stop();
        }
        if let Err(e) = check_url(attempt.url(), policy) {
            return attempt.error(e.to_string());
        }
        attempt.follow()
    });
    let mut builder = reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .redirect(redirect)
        .connect_timeout(connect_timeout);
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    builder
        // A proxy from HTTP(S)_PROXY / ALL_PROXY would resolve names itself,
        // out of the guard's sight.
        .no_proxy()
        .user_agent(concat!("rtc-agent/", env!("CARGO_PKG_VERSION")))
        .build()
}

#[cfg(test)]
#[path = "net_guard_tests.rs"]
mod tests;
