//! Helpers shared by the integration tests: certificates and link configurations on loopback.

#![allow(dead_code)]

use std::path::Path;

use hmw_cm::keygen::{self, KeygenOutput};
use hmw_cm::{LinkConfig, Role, TlsConfig};

/// A CA and certificates for `server` and `client` in `dir`.
pub(crate) fn certificates(dir: &Path) -> KeygenOutput {
    certificates_for(dir, &["server", "client"])
}

/// A CA and certificates for each of `names` in `dir`.
pub(crate) fn certificates_for(dir: &Path, names: &[&str]) -> KeygenOutput {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    keygen::generate(
        dir,
        &names,
        &["localhost".to_string(), "127.0.0.1".to_string()],
    )
    .expect("keygen")
}

fn tls_for(certs: &KeygenOutput, name: &str) -> TlsConfig {
    let cm = certs.cms.iter().find(|c| c.name == name).expect("cm");
    TlsConfig {
        cert: cm.cert.clone(),
        key: cm.key.clone(),
        ca: Some(certs.ca_cert.clone()),
        pinned_peer: None,
    }
}

/// Small, fast-failing configuration for loopback tests.
fn tune(mut config: LinkConfig) -> LinkConfig {
    config.send_memory = 8 << 20;
    config.recv_memory = 8 << 20;
    config.block_size = 64 << 10;
    config.connections = 2;
    config.streams = 2;
    config.inactivity_timeout_ms = 1_000;
    config.reconnect_initial_ms = 50;
    config.reconnect_max_ms = 200;
    config
}

/// A server on an ephemeral loopback port.
pub(crate) fn server_config(certs: &KeygenOutput) -> LinkConfig {
    server_config_as(certs, "server")
}

/// A server on an ephemeral loopback port with the certificate of `name`.
pub(crate) fn server_config_as(certs: &KeygenOutput, name: &str) -> LinkConfig {
    tune(LinkConfig::new(
        Role::Server,
        "127.0.0.1",
        0,
        tls_for(certs, name),
    ))
}

/// A client of the server at `port`.
pub(crate) fn client_config(certs: &KeygenOutput, port: u16) -> LinkConfig {
    client_config_as(certs, "client", port)
}

/// A client of the server at `port` with the certificate of `name`, expecting the server's
/// certificate to be `server`'s.
pub(crate) fn client_config_as(certs: &KeygenOutput, name: &str, port: u16) -> LinkConfig {
    let mut config = tune(LinkConfig::new(
        Role::Client,
        "127.0.0.1",
        port,
        tls_for(certs, name),
    ));
    config.server_name = Some("server".into());
    config
}

/// Message number `i` of a test stream: varying sizes, content derived from `i`.
pub(crate) fn message(i: usize) -> Vec<u8> {
    let len = (i * 7919) % 200_000;
    let mut m = (i as u64).to_be_bytes().to_vec();
    m.extend((0..len).map(|j| (i + j) as u8));
    m
}
