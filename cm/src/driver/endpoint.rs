//! quinn endpoints and transport parameters for the link.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use quinn::{IdleTimeout, TransportConfig, VarInt};

use super::LinkError;
use crate::config::{Congestion, LinkConfig};
use crate::tls::TlsMaterial;

/// Transport parameters: flow-control windows raised to `window` (quinn's defaults cap a
/// connection at about 1.25 MB per round trip), QUIC idle timeout = the inactivity timeout,
/// keep-alives, and the congestion controller.
pub fn transport_config(config: &LinkConfig) -> TransportConfig {
    let mut transport = TransportConfig::default();
    let window = VarInt::from_u32(config.window as u32);
    transport
        .max_idle_timeout(Some(
            IdleTimeout::try_from(config.inactivity_timeout()).expect("validated timeout"),
        ))
        .keep_alive_interval(Some(config.keepalive_interval()))
        .stream_receive_window(window)
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
            transport
                .congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
        }
        Congestion::NewReno => {
            transport.congestion_controller_factory(Arc::new(
                quinn::congestion::NewRenoConfig::default(),
            ));
        }
    }
    transport
}

/// A listening endpoint that requires client certificates.
pub(crate) fn server_endpoint(
    config: &LinkConfig,
    tls: &TlsMaterial,
) -> Result<quinn::Endpoint, LinkError> {
    let addr = config.socket_addr()?;
    let tls = tls.clone().expect_client(config.peer.clone());
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(tls.quic_server_config()?));
    server.transport_config(Arc::new(transport_config(config)));
    quinn::Endpoint::server(server, addr).map_err(|cause| LinkError::Bind { addr, cause })
}

/// A client endpoint on an ephemeral port of the server address's family (on the loopback
/// interface when the server is on it). When the server's name does not resolve yet
/// (`server` is `None`), a dual-stack IPv6 socket that reaches either family (an IPv4 one
/// where IPv6 is unavailable).
pub(crate) fn client_endpoint(
    config: &LinkConfig,
    tls: &TlsMaterial,
    server: Option<SocketAddr>,
) -> Result<(quinn::Endpoint, quinn::ClientConfig), LinkError> {
    let bind = |local: SocketAddr| {
        quinn::Endpoint::client(local).map_err(|cause| LinkError::Bind { addr: local, cause })
    };
    let endpoint = match server {
        Some(server) => bind(match (server.is_ipv4(), server.ip().is_loopback()) {
            (true, true) => (Ipv4Addr::LOCALHOST, 0).into(),
            (true, false) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            (false, true) => (Ipv6Addr::LOCALHOST, 0).into(),
            (false, false) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        })?,
        None => bind((Ipv6Addr::UNSPECIFIED, 0).into())
            .or_else(|_| bind((Ipv4Addr::UNSPECIFIED, 0).into()))?,
    };
    let mut client = quinn::ClientConfig::new(Arc::new(tls.quic_client_config()?));
    client.transport_config(Arc::new(transport_config(config)));
    Ok((endpoint, client))
}
