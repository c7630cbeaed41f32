//! Which addresses a fetch must not reach unless a rule names them: loopback, private,
//! link-local, shared (CGNAT), cloud metadata, unspecified, multicast and reserved ranges, with
//! IPv4 addresses embedded in IPv6 ones (mapped, compatible, NAT64, 6to4) judged as IPv4.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The range `ip` is in, when it is one a fetch must not reach unasked (`"loopback"`), else
/// `None` (a public address).
pub fn restricted(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => restricted_v6(v6),
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => "cloud metadata",
        (0, _, _) => "unspecified (\"this network\")",
        (127, _, _) => "loopback",
        (10, _, _) | (192, 168, _) => "private",
        (172, 16..=31, _) => "private",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared (CGNAT)",
        (192, 0, 0) => "reserved (IETF protocol assignments)",
        (198, 18..=19, _) => "reserved (benchmarking)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved",
        _ => return None,
    })
}

fn restricted_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return restricted_v4(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        _ if ip == Ipv6Addr::LOCALHOST => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        _ if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) => "cloud metadata",
        x if x & 0xfe00 == 0xfc00 => "private (unique local)",
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xffc0 == 0xfec0 => "private (site-local)",
        x if x & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    })
}

/// The IPv4 address inside an IPv6 one that carries one: `::ffff:a.b.c.d` (mapped),
/// `::a.b.c.d` (compatible, deprecated), `64:ff9b::a.b.c.d` (NAT64) and `2002:AABB:CCDD::`
/// (6to4).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(low(hi, lo)),
        // `::` and `::1` are themselves, not 0.0.0.0 and 0.0.0.1.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("127.255.0.9", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("172.32.0.1", None),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("cloud metadata")),
            ("169.254.1.1", Some("link-local")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("100.128.0.1", None),
            ("0.0.0.0", Some("unspecified (\"this network\")")),
            ("224.0.0.1", Some("multicast")),
            ("255.255.255.255", Some("reserved")),
            ("93.184.215.14", None),
            ("8.8.8.8", None),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fd00:ec2::254", Some("cloud metadata")),
            ("fd12::1", Some("private (unique local)")),
            ("fc00::1", Some("private (unique local)")),
            ("fe80::1", Some("link-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:169.254.169.254", Some("cloud metadata")),
            ("::ffff:8.8.8.8", None),
            ("::127.0.0.1", Some("loopback")),
            ("64:ff9b::10.0.0.1", Some("private")),
            ("2002:7f00:1::", Some("loopback")),
            ("2606:4700::6810:84e5", None),
        ];
        for (text, expected) in cases {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(restricted(ip), expected, "{text}");
        }
    }
}
