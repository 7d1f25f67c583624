//! Packet classification: the IPv4 header's addresses and the cluster of each.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An IPv4 subnet, `A.B.C.D/N` with no host bits set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    network: u32,
    prefix: u8,
}

impl Subnet {
    /// The subnet `network/prefix`; `None` if the prefix is over 32 or host bits are set.
    pub fn new(network: Ipv4Addr, prefix: u8) -> Option<Self> {
        let s = Self {
            network: u32::from(network),
            prefix,
        };
        (prefix <= 32 && s.network & !s.mask() == 0).then_some(s)
    }

    /// The network mask.
    pub fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(self.prefix))
        }
    }

    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network)
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `addr` (as a big-endian number) is inside.
    #[inline]
    pub fn contains(&self, addr: u32) -> bool {
        addr & self.mask() == self.network
    }

    /// Whether the two subnets share an address.
    pub fn overlaps(&self, other: &Subnet) -> bool {
        self.contains(other.network) || other.contains(self.network)
    }

    /// The `n`-th address of the subnet (0 is the network address), if inside.
    pub fn nth(&self, n: u32) -> Option<Ipv4Addr> {
        let size = 1u64 << (32 - u32::from(self.prefix));
        (u64::from(n) < size).then(|| Ipv4Addr::from(self.network + n))
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.prefix)
    }
}

impl FromStr for Subnet {
    type Err = String;

    /// `A.B.C.D/N`; the error says what is wrong with `text` (and the subnet meant when host
    /// bits are set).
    fn from_str(text: &str) -> Result<Self, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not a subnet such as 10.213.1.0/24"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("`{text}`: `{addr}` is not an IPv4 address"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| format!("`{text}`: the prefix length must be 0 to 32"))?;
        Subnet::new(addr, prefix).ok_or_else(|| {
            let mask = Subnet { network: 0, prefix }.mask();
            format!(
                "`{text}` has host bits set: did you mean {}/{prefix}?",
                Ipv4Addr::from(u32::from(addr) & mask)
            )
        })
    }
}

/// Why a packet is not classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Not IPv4 (IPv6 or garbage in the version field).
    NotIpv4,
    /// Too short, a header length under 20 bytes, or a total length that is not the length read.
    Malformed,
}

/// The source and destination addresses of an IPv4 packet (big-endian numbers), after
/// checking the version, the header length and the total length against `packet.len()`.
#[inline]
pub fn ipv4_addresses(packet: &[u8]) -> Result<(u32, u32), Reject> {
    let Some(&first) = packet.first() else {
        return Err(Reject::Malformed);
    };
    if first >> 4 != 4 {
        return Err(Reject::NotIpv4);
    }
    let header = usize::from(first & 0x0f) * 4;
    if header < 20 || packet.len() < header {
        return Err(Reject::Malformed);
    }
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    if total != packet.len() {
        return Err(Reject::Malformed);
    }
    let word = |at: usize| {
        u32::from_be_bytes([packet[at], packet[at + 1], packet[at + 2], packet[at + 3]])
    };
    Ok((word(12), word(16)))
}

/// The index of the subnet that holds `addr`, if any (the subnets do not overlap).
#[inline]
pub fn cluster_of(subnets: &[Subnet], addr: u32) -> Option<usize> {
    subnets.iter().position(|s| s.contains(addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(src: [u8; 4], dst: [u8; 4], payload: usize) -> Vec<u8> {
        let total = 20 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 1;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn subnets_parse_and_match() {
        let s: Subnet = "10.213.2.0/24".parse().unwrap();
        assert!(s.contains(u32::from(Ipv4Addr::new(10, 213, 2, 77))));
        assert!(!s.contains(u32::from(Ipv4Addr::new(10, 213, 3, 1))));
        assert_eq!(s.nth(2), Some(Ipv4Addr::new(10, 213, 2, 2)));
        assert_eq!(s.nth(256), None);
        let all: Subnet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(u32::MAX) && all.overlaps(&s));
        let host: Subnet = "10.213.2.9/32".parse().unwrap();
        assert!(host.contains(u32::from(Ipv4Addr::new(10, 213, 2, 9))));
        assert!(!host.contains(u32::from(Ipv4Addr::new(10, 213, 2, 8))));
        assert!(s.overlaps(&host) && host.overlaps(&s));
        assert!(!s.overlaps(&"10.213.3.0/24".parse().unwrap()));
        let e = "10.213.2.1/24".parse::<Subnet>().unwrap_err();
        assert!(e.contains("10.213.2.0/24"), "{e}");
        for bad in [
            "10.213.2.0",
            "10.213.2.0/",
            "10.213.2/24",
            "10.213.2.0/33",
            "x/8",
            "::1/128",
        ] {
            assert!(bad.parse::<Subnet>().is_err(), "{bad}");
        }
    }

    #[test]
    fn ipv4_headers_are_parsed_and_checked() {
        let p = packet([10, 213, 1, 2], [10, 213, 2, 2], 8);
        assert_eq!(ipv4_addresses(&p), Ok((0x0AD5_0102, 0x0AD5_0202)));
        let mut options = p.clone();
        options[0] = 0x46;
        options.extend_from_slice(&[0; 4]);
        options[2..4].copy_from_slice(&32u16.to_be_bytes());
        assert_eq!(ipv4_addresses(&options), Ok((0x0AD5_0102, 0x0AD5_0202)));
        let mut v6 = p.clone();
        v6[0] = 0x60;
        assert_eq!(ipv4_addresses(&v6), Err(Reject::NotIpv4));
        assert_eq!(ipv4_addresses(&[]), Err(Reject::Malformed));
        assert_eq!(ipv4_addresses(&p[..19]), Err(Reject::Malformed));
        assert_eq!(
            ipv4_addresses(&p[..27]),
            Err(Reject::Malformed),
            "truncated"
        );
        let mut short_ihl = p.clone();
        short_ihl[0] = 0x44;
        assert_eq!(ipv4_addresses(&short_ihl), Err(Reject::Malformed));
        let mut long_ihl = p.clone();
        long_ihl[0] = 0x4f;
        assert_eq!(ipv4_addresses(&long_ihl), Err(Reject::Malformed));
        // Every byte string of a few lengths: never a panic.
        for len in 0..24 {
            for b in 0..=255u8 {
                let _ = ipv4_addresses(&vec![b; len]);
            }
        }
    }

    #[test]
    fn packets_are_classified_by_subnet() {
        let subnets: Vec<Subnet> = ["10.213.1.0/24", "10.213.2.0/24", "10.213.3.0/25"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let at = |a: [u8; 4]| cluster_of(&subnets, u32::from(Ipv4Addr::from(a)));
        assert_eq!(at([10, 213, 1, 5]), Some(0));
        assert_eq!(at([10, 213, 2, 255]), Some(1));
        assert_eq!(at([10, 213, 3, 127]), Some(2));
        assert_eq!(at([10, 213, 3, 128]), None);
        assert_eq!(at([8, 8, 8, 8]), None);
    }
}
