//! The address guard: restricted addresses (see [`crate::address`]) are refused unless an allow
//! rule names the host or the address, checked on the addresses DNS returned and again in the
//! resolver the connection uses, so what connects is what was checked.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use lathe_policy::Rule;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::address::restricted;

/// A fetch that would reach a restricted address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host as the URL names it.
    pub host: String,
    /// The address it resolved to (the host itself for an address).
    pub ip: IpAddr,
    /// The range (`loopback`).
    pub range: &'static str,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let literal = self.host.trim_matches(|c| c == '[' || c == ']') == self.ip.to_string();
        if literal {
            write!(f, "{} is a {} address", self.ip, self.range)?;
        } else {
            write!(
                f,
                "{} resolves to {}, a {} address",
                self.host, self.ip, self.range
            )?;
        }
        write!(
            f,
            "; web_fetch reaches loopback, private, link-local and metadata addresses only when \
             an allow rule names the host. If the user wants this host fetched, they can add \
             `fetch({})` to `allow` in the [permissions] table of the configuration",
            self.host.trim_matches(|c| c == '[' || c == ']')
        )
    }
}

impl std::error::Error for Refusal {}

/// Which hosts may reach restricted addresses.
#[derive(Debug, Default)]
pub struct Guard {
    /// Allow rules that name hosts (`fetch(localhost)`; never `fetch(*)`).
    rules: Vec<Rule>,
    /// Hosts the configuration itself names: the proxies and the search backend.
    exempt: Vec<String>,
}

impl Guard {
    /// A guard for these allow rules (only `fetch(..)` rules that name hosts count) and these
    /// configured hosts.
    pub fn new(rules: Vec<Rule>, exempt: Vec<String>) -> Self {
        Guard {
            rules: rules.into_iter().filter(Rule::names_hosts).collect(),
            exempt: exempt.into_iter().map(|h| bare(&h)).collect(),
        }
    }

    fn named(&self, host: &str, ip: IpAddr) -> bool {
        let host = bare(host);
        self.exempt.contains(&host)
            || self
                .rules
                .iter()
                .any(|r| r.matches_fetch(&host) || r.matches_fetch(&ip.to_string()))
    }

    /// `Err` when `ip`, which `host` resolved to, is restricted and no rule names either.
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        match restricted(ip) {
            Some(range) if !self.named(host, ip) => Err(Refusal {
                host: host.to_owned(),
                ip,
                range,
            }),
            _ => Ok(()),
        }
    }

    /// The addresses of `addrs` that `host` may reach; the first refusal when none is left.
    pub fn filter(
        &self,
        host: &str,
        addrs: impl IntoIterator<Item = SocketAddr>,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        let mut kept = Vec::new();
        let mut first = None;
        for addr in addrs {
            match self.check(host, addr.ip()) {
                Ok(()) => kept.push(addr),
                Err(refusal) => {
                    first.get_or_insert(refusal);
                }
            }
        }
        match (kept.is_empty(), first) {
            (true, Some(refusal)) => Err(refusal),
            _ => Ok(kept),
        }
    }

    /// Resolves `host` and checks its addresses: what a request to it would find. `Ok(false)`
    /// when the name does not resolve here (a proxy may still reach it).
    pub async fn check_host(&self, host: &str) -> Result<bool, Refusal> {
        let name = host.trim_matches(|c| c == '[' || c == ']');
        if let Ok(ip) = name.parse::<IpAddr>() {
            return self.check(host, ip).map(|()| true);
        }
        match tokio::net::lookup_host((name, 0)).await {
            Ok(addrs) => self.filter(host, addrs).map(|kept| !kept.is_empty()),
            Err(_) => Ok(false),
        }
    }
}

/// A host as compared: lower case, without brackets or a trailing dot.
fn bare(host: &str) -> String {
    let host = host.trim().trim_matches(|c| c == '[' || c == ']');
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// The resolver every connection goes through: the system's (`getaddrinfo`), with restricted
/// addresses removed unless the guard lets the host reach them. A name left with no address
/// fails with the [`Refusal`].
pub struct GuardedResolver(pub Arc<Guard>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = Arc::clone(&self.0);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let kept = guard.filter(&host, addrs)?;
            let addrs: Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// The refusal somewhere in an error's chain of sources (a connection the resolver refused).
pub fn refusal_in(err: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    let mut current = Some(err);
    while let Some(err) = current {
        if let Some(refusal) = err.downcast_ref::<Refusal>() {
            return Some(refusal.clone());
        }
        current = err.source();
    }
    None
}

/// The hosts of the proxies the environment names (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, in
/// either case): reqwest connects to them instead of the host, and they are the user's own.
pub fn proxy_hosts() -> Vec<String> {
    let mut hosts = Vec::new();
    for key in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        for key in [key.to_owned(), key.to_ascii_lowercase()] {
            let Some(value) = std::env::var(&key).ok().filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            let value = value.trim();
            let parsed = url::Url::parse(value)
                .ok()
                .filter(|u| u.host_str().is_some())
                .or_else(|| url::Url::parse(&format!("http://{value}")).ok());
            if let Some(host) = parsed.as_ref().and_then(|u| u.host_str()) {
                hosts.push(host.to_owned());
            }
        }
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_policy::AnalysisContext;

    fn guard(rules: &[&str]) -> Guard {
        let ctx = AnalysisContext::new("/w", "/h");
        let rules = rules
            .iter()
            .map(|r| Rule::parse(r, &ctx).unwrap())
            .collect();
        Guard::new(rules, Vec::new())
    }

    #[test]
    fn rules_name_hosts_or_addresses() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let public: IpAddr = "8.8.8.8".parse().unwrap();
        assert!(guard(&[]).check("localhost", loopback).is_err());
        assert!(guard(&[]).check("dns.google", public).is_ok());
        assert!(
            guard(&["fetch(localhost)"])
                .check("localhost", loopback)
                .is_ok()
        );
        assert!(
            guard(&["fetch(127.0.0.1)"])
                .check("localhost", loopback)
                .is_ok()
        );
        assert!(
            guard(&["fetch(*.internal)"])
                .check("a.internal", loopback)
                .is_ok()
        );
        // Rules that name no host do not open private addresses.
        assert!(guard(&["fetch(*)"]).check("localhost", loopback).is_err());
        assert!(
            guard(&["tool(web_fetch)"])
                .check("localhost", loopback)
                .is_err()
        );
        assert!(
            guard(&["fetch(other)"])
                .check("localhost", loopback)
                .is_err()
        );
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let refusal = guard(&[]).check("[::ffff:127.0.0.1]", mapped).unwrap_err();
        assert_eq!(refusal.range, "loopback");
        assert!(
            refusal.to_string().contains("is a loopback address"),
            "{refusal}"
        );
    }

    #[test]
    fn a_name_with_one_public_address_keeps_only_that_one() {
        let addrs: Vec<SocketAddr> = vec![
            "127.0.0.1:80".parse().unwrap(),
            "8.8.8.8:80".parse().unwrap(),
        ];
        let kept = guard(&[]).filter("mixed.example", addrs).unwrap();
        assert_eq!(kept, vec!["8.8.8.8:80".parse::<SocketAddr>().unwrap()]);
    }
}
