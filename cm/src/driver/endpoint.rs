//! quinn endpoints and transport parameters for the link.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use quinn::{IdleTimeout, TransportConfig, VarInt};
use socket2::{Domain, Protocol, Socket, Type};
use tracing::debug;

use super::error::LinkError;
use crate::config::{Congestion, LinkConfig};
use crate::congestion::{BoundedBbrConfig, Seed};
use crate::tls::TlsMaterial;

/// The round trip a connection assumes before it has measured one. QUIC's default, 333 ms,
/// resends a lost first handshake packet after about 1 s: a client CM started before its
/// server CM listens (the clusters of a run start in no set order) then joined its link a
/// second late, and a sub-master that waits for its links started its cluster a second after
/// the master. With 100 ms it is resent after about 0.3 s; on a longer path the first
/// handshake packet may go twice (1,200 bytes).
const INITIAL_RTT: Duration = Duration::from_millis(100);

/// Transport parameters: the connection's flow-control windows start at `window` (the link
/// raises them while they limit the connection, up to `max_window`; quinn's defaults would cap
/// a connection at about 1.25 MB per round trip), each stream's window is `max_window` (the
/// connection's bounds them all), QUIC idle timeout = the inactivity timeout, keep-alives,
/// the initial round trip (`INITIAL_RTT`) and the congestion controller (with the link's path
/// hint, BBR's connections start warm: `crate::congestion`). One transport configuration
/// serves every connection of an endpoint, so its controller factory is the link's: a
/// connection after a reconnection starts from what the link's connections measured.
pub fn transport_config(config: &LinkConfig) -> TransportConfig {
    let mut transport = TransportConfig::default();
    let window = VarInt::from_u32(config.window as u32);
    transport
        .initial_rtt(INITIAL_RTT)
        .max_idle_timeout(Some(
            IdleTimeout::try_from(config.inactivity_timeout()).expect("validated timeout"),
        ))
        .keep_alive_interval(Some(config.keepalive_interval()))
        .stream_receive_window(VarInt::from_u32(config.max_window as u32))
        .receive_window(window)
        .send_window(config.window as u64)
        .max_concurrent_uni_streams(VarInt::from_u32(64))
        .max_concurrent_bidi_streams(VarInt::from_u32(4));
    match config.congestion {
        Congestion::Cubic => {
            transport
                .congestion_controller_factory(Arc::new(quinn::congestion::CubicConfig::default()));
        }
        Congestion::Bbr => {
            // With a path hint, each connection starts at its share of the expected rate.
            let bbr = match &config.path {
                Some(path) => BoundedBbrConfig::seeded(Seed {
                    rate: path.send_bytes_per_s / config.connections.max(1) as f64,
                    rtt: path.rtt(),
                    measured: Arc::default(),
                }),
                None => BoundedBbrConfig::default(),
            };
            transport.congestion_controller_factory(Arc::new(bbr));
        }
        Congestion::NewReno => {
            transport.congestion_controller_factory(Arc::new(
                quinn::congestion::NewRenoConfig::default(),
            ));
        }
    }
    transport
}

/// Which address families a client endpoint's socket can send to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// An IPv4 socket.
    V4,
    /// An IPv6-only socket (bound for a server given as an IPv6 address).
    V6,
    /// A dual-stack IPv6 socket: IPv6, and IPv4 as mapped addresses.
    Both,
}

impl Reach {
    /// Whether the socket can send to `addr`.
    pub(crate) fn reaches(self, addr: &SocketAddr) -> bool {
        match self {
            Reach::V4 => addr.is_ipv4(),
            Reach::V6 => addr.is_ipv6(),
            Reach::Both => true,
        }
    }
}

/// Socket buffers asked for (the kernel caps them at `net.core.rmem_max` / `wmem_max`): at
/// 1 Gbit/s the default 208 KiB holds under 2 ms of traffic, and a receiver that is not
/// scheduled for longer would drop packets the path delivered.
const SOCKET_BUFFER: usize = 8 << 20;

/// A UDP socket bound to `addr`; an IPv6 one is made dual-stack when `dual_stack` (an error
/// if the system cannot: the caller then binds otherwise, instead of assuming it).
fn bind_udp(addr: SocketAddr, dual_stack: bool) -> std::io::Result<std::net::UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: smaller buffers only cost throughput.
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    if addr.is_ipv6() {
        socket.set_only_v6(!dual_stack)?;
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

fn endpoint_on(
    socket: std::net::UdpSocket,
    server: Option<quinn::ServerConfig>,
) -> std::io::Result<quinn::Endpoint> {
    let runtime =
        quinn::default_runtime().ok_or_else(|| std::io::Error::other("no async runtime found"))?;
    quinn::Endpoint::new(quinn::EndpointConfig::default(), server, socket, runtime)
}

/// A listening endpoint on `addr` that requires client certificates. The unspecified IPv6
/// address listens on both families where the system allows it.
pub(crate) fn server_endpoint(
    config: &LinkConfig,
    tls: &TlsMaterial,
    addr: SocketAddr,
) -> Result<quinn::Endpoint, LinkError> {
    let tls = tls.clone().expect_client(config.peer.clone());
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(tls.quic_server_config()?));
    server.transport_config(Arc::new(transport_config(config)));
    let dual = addr.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let socket = bind_udp(addr, dual)
        .or_else(|e| {
            if !dual {
                return Err(e);
            }
            debug!("cannot listen on both families on {addr} ({e}): IPv6 only");
            bind_udp(addr, false)
        })
        .map_err(|cause| LinkError::Bind { addr, cause })?;
    endpoint_on(socket, Some(server)).map_err(|cause| LinkError::Bind { addr, cause })
}

/// A client endpoint on an ephemeral port, and what it reaches. For a server given as an IP
/// address: a socket of its family (on the loopback interface when the server is on it).
/// For a host name, whose addresses may be of either family and change between lookups: an
/// explicitly dual-stack IPv6 socket, or an IPv4 one where the system has no IPv6 or cannot
/// make it dual-stack (the IPv6 addresses of the name are then skipped).
pub(crate) fn client_endpoint(
    config: &LinkConfig,
    tls: &TlsMaterial,
) -> Result<(quinn::Endpoint, quinn::ClientConfig, Reach), LinkError> {
    let bind = |local: SocketAddr, dual: bool| {
        bind_udp(local, dual)
            .and_then(|socket| endpoint_on(socket, None))
            .map_err(|cause| LinkError::Bind { addr: local, cause })
    };
    let (endpoint, reach) = match config.host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) if ip.is_loopback() => {
            (bind((Ipv4Addr::LOCALHOST, 0).into(), false)?, Reach::V4)
        }
        Ok(IpAddr::V4(_)) => (bind((Ipv4Addr::UNSPECIFIED, 0).into(), false)?, Reach::V4),
        Ok(IpAddr::V6(ip)) if ip.is_loopback() => {
            (bind((Ipv6Addr::LOCALHOST, 0).into(), false)?, Reach::V6)
        }
        Ok(IpAddr::V6(_)) => (bind((Ipv6Addr::UNSPECIFIED, 0).into(), false)?, Reach::V6),
        Err(_) => match bind((Ipv6Addr::UNSPECIFIED, 0).into(), true) {
            Ok(endpoint) => (endpoint, Reach::Both),
            Err(e) => {
                debug!("no dual-stack socket ({e}): the client reaches IPv4 addresses only");
                (bind((Ipv4Addr::UNSPECIFIED, 0).into(), false)?, Reach::V4)
            }
        },
    };
    let mut client = quinn::ClientConfig::new(Arc::new(tls.quic_client_config()?));
    client.transport_config(Arc::new(transport_config(config)));
    Ok((endpoint, client, reach))
}
