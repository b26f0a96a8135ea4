//! Refusal of loopback, private, link-local and metadata addresses for
//! outbound requests (R-SEC-2), checked on the *resolved* address, so a
//! hostname that resolves to 127.0.0.1 is refused as well, and again on
//! every redirect.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether outbound requests may reach non-public addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AddressPolicy {
    /// Only public unicast addresses (the default).
    #[default]
    PublicOnly,
    /// Anything, for tests and local tools (`RTC_ALLOW_PRIVATE_NETWORK=1`).
    AllowPrivate,
}

impl AddressPolicy {
    pub fn permits(self, ip: IpAddr) -> bool {
        self == Self::AllowPrivate || is_public(ip)
    }
}

/// Whether an address is public unicast.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let seg0 = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg0 & 0xfe00) == 0xfc00 // unique local, incl. fd00:ec2::254
                || (seg0 & 0xffc0) == 0xfe80 // link-local
                || (seg0 == 0x64 && v6.segments()[1] == 0xff9b) // NAT64 may map to private v4
                || v6 == Ipv6Addr::from_bits(1)
                || (seg0 == 0x2001 && v6.segments()[1] == 0x0db8)) // documentation
        }
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    !(v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local() // includes 169.254.169.254 (cloud metadata)
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && v4.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240)
}

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockedUrl {
    #[error("only http and https URLs are allowed")]
    Scheme,
    #[error("the URL has no host")]
    NoHost,
    #[error("requests to {0} are not allowed (loopback, private, link-local or metadata address)")]
    Address(IpAddr),
}

/// Check a URL's scheme and, when its host is an IP literal, the address
/// (hostnames are checked by [`GuardedResolver`] after resolution).
pub fn check_url(url: &url::Url, policy: AddressPolicy) -> Result<(), BlockedUrl> {
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(BlockedUrl::Scheme);
    }
    let ip = match url.host() {
        None => return Err(BlockedUrl::NoHost),
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(_)) => return Ok(()),
    };
    if policy.permits(ip) {
        Ok(())
    } else {
        Err(BlockedUrl::Address(ip))
    }
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
            let allowed: Vec<SocketAddr> = resolved
                .iter()
                .copied()
                .filter(|a| policy.permits(a.ip()))
                .collect();
            if allowed.is_empty() {
                let shown = resolved
                    .first()
                    .map(|a| a.ip().to_string())
                    .unwrap_or_else(|| "no address".to_owned());
                return Err(format!("requests to {host} ({shown}) are not allowed (loopback, private, link-local or metadata address)").into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// An HTTP client whose every connection and redirect honours `policy`.
/// Redirects are followed (at most 5), each target checked.
pub fn guarded_client(
    policy: AddressPolicy,
    timeout: Duration,
) -> reqwest::Result<reqwest::Client> {
    build_guarded(policy, timeout, Redirects::Follow)
}

/// Like [`guarded_client`], but a redirect to another host is not followed:
/// the 3xx response comes back to the caller (R-WFF-4). Redirects within
/// the host are followed, each target checked.
pub fn guarded_client_same_host(
    policy: AddressPolicy,
    timeout: Duration,
) -> reqwest::Result<reqwest::Client> {
    build_guarded(policy, timeout, Redirects::SameHostOnly)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Redirects {
    Follow,
    SameHostOnly,
}

fn build_guarded(
    policy: AddressPolicy,
    timeout: Duration,
    redirects: Redirects,
) -> reqwest::Result<reqwest::Client> {
    crate::init_tls();
    let redirect = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 5 {
            return attempt.error("too many redirects");
        }
        let first_host = attempt
            .previous()
            .first()
            .and_then(|u| u.host_str().map(str::to_owned));
        if redirects == Redirects::SameHostOnly && attempt.url().host_str() != first_host.as_deref()
        {
            return attempt.stop();
        }
        if let Err(e) = check_url(attempt.url(), policy) {
            return attempt.error(e.to_string());
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .redirect(redirect)
        .connect_timeout(Duration::from_secs(10).min(timeout))
        .timeout(timeout)
        .user_agent(concat!("rtc-agent/", env!("CARGO_PKG_VERSION")))
        .build()
}

#[cfg(test)]
#[path = "net_guard_tests.rs"]
mod tests;
