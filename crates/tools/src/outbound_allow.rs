//! `RTC_OUTBOUND_ALLOW` (R-SEC-2): the private addresses an operator lets
//! tools, MCP servers and the web tools reach, and no others. Entries are
//! separated by commas or spaces:
//!
//! - a host name (`db.internal`): its private addresses, any port;
//! - `host:port` (`api.internal:8443`): that host on those ports only;
//! - an address (`10.1.2.3`, `::1`) or `address:port`
//!   (`127.0.0.1:8080`, `[::1]:8080`);
//! - a network in CIDR form (`10.20.0.0/16`, `fd00::/8`), any port.
//!
//! Hosts are matched by name, without regard to case, at every
//! connection (the guarded resolver keeps their private addresses);
//! networks and addresses are matched on the resolved address. Ports are
//! checked on the URL before every request and redirect.

use std::net::IpAddr;

/// The parsed allowlist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboundAllow {
    hosts: Vec<(String, Option<u16>)>,
    nets: Vec<(IpAddr, u8, Option<u16>)>,
}

impl OutboundAllow {
    /// Parse the setting; an entry that is none of the forms above is an
    /// error naming it.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut allow = Self::default();
        for entry in spec
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|e| !e.is_empty())
        {
            allow
                .add(entry)
                .map_err(|why| format!("`{entry}`: {why}"))?;
        }
        Ok(allow)
    }

    fn add(&mut self, entry: &str) -> Result<(), &'static str> {
        if let Some((addr, prefix)) = entry.split_once('/') {
            let addr: IpAddr = addr.parse().map_err(|_| "not an address before `/`")?;
            let most = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= most)
                .ok_or("the prefix length is not valid")?;
            self.nets.push((addr, prefix, None));
            return Ok(());
        }
        if let Ok(addr) = entry.parse::<IpAddr>() {
            self.nets.push((addr, full(addr), None));
            return Ok(());
        }
        if let Ok(sock) = entry.parse::<std::net::SocketAddr>() {
            self.nets
                .push((sock.ip(), full(sock.ip()), Some(sock.port())));
            return Ok(());
        }
        let (name, port) = match entry.rsplit_once(':') {
            Some((name, port)) => (
                name,
                Some(
                    port.parse::<u16>()
                        .map_err(|_| "the port is not a number")?,
                ),
            ),
            None => (entry, None),
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let valid = !name.is_empty()
            && name.split('.').all(|l| {
                !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return Err("not a host name, an address or a network");
        }
        self.hosts.push((name, port));
        Ok(())
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty() && self.nets.is_empty()
    }

    /// Whether `ip` (reached on `port`, when known) is listed: a network
    /// or address entry holds it, and names no other port.
    pub fn allows_ip(&self, ip: IpAddr, port: Option<u16>) -> bool {
        self.nets.iter().any(|(net, prefix, p)| {
            contains(*net, *prefix, ip) && (p.is_none() || (port.is_some() && *p == port))
        })
    }

    /// Whether the host `name` is listed (on some port).
    pub fn lists_host(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        self.hosts.iter().any(|(h, _)| *h == name)
    }

    /// Whether `name` is listed for some ports only, and `port` is none
    /// of them.
    pub fn refuses_port(&self, name: &str, port: u16) -> bool {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let rules: Vec<Option<u16>> = self
            .hosts
            .iter()
            .filter(|(h, _)| *h == name)
            .map(|(_, p)| *p)
            .collect();
        !rules.is_empty() && !rules.iter().any(|p| p.is_none_or(|p| p == port))
    }
}

fn full(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// Whether `ip` is in `net/prefix` (of the same family).
fn contains(net: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    let (net, ip, bits) = match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => (u128::from(n.to_bits()), u128::from(i.to_bits()), 32u32),
        (IpAddr::V6(n), IpAddr::V6(i)) => (n.to_bits(), i.to_bits(), 128u32),
        _ => return false,
    };
    let prefix = u32::from(prefix);
    if prefix == 0 {
        return true;
    }
    let shift = bits - prefix;
    (net >> shift) == (ip >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_each_form() {
        let a = OutboundAllow::parse(
            "db.internal, api.internal:8443 10.20.0.0/16,127.0.0.1:8080 [::1]:9000 fd00::/8",
        )
        .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(a.allows_ip(ip("10.20.3.4"), None));
        assert!(a.allows_ip(ip("10.20.3.4"), Some(5432)));
        assert!(!a.allows_ip(ip("10.21.0.1"), None));
        assert!(a.allows_ip(ip("127.0.0.1"), Some(8080)));
        assert!(!a.allows_ip(ip("127.0.0.1"), Some(8081)));
        assert!(
            !a.allows_ip(ip("127.0.0.1"), None),
            "a port entry needs the port"
        );
        assert!(a.allows_ip(ip("::1"), Some(9000)));
        assert!(a.allows_ip(ip("fd12::1"), None));
        assert!(!a.allows_ip(ip("fe80::1"), None));
        assert!(a.lists_host("DB.internal."));
        assert!(a.lists_host("api.internal"));
        assert!(!a.lists_host("other.internal"));
        assert!(!a.refuses_port("db.internal", 1));
        assert!(!a.refuses_port("api.internal", 8443));
        assert!(a.refuses_port("api.internal", 443));
        assert!(!a.refuses_port("unlisted", 443));
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in ["10.0.0.0/33", "host:port", "a..b", "/8", "bad_name"] {
            let e = OutboundAllow::parse(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        assert!(OutboundAllow::parse("").unwrap().is_empty());
    }
}
