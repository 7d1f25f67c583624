//! The reference of the loopback scenario: raw quinn, one connection and one stream, with the
//! link's TLS and windows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use bytes::Bytes;
use hmw_cm::keygen::KeygenOutput;
use hmw_cm::tls::TlsMaterial;

use crate::configs::link_configs;
use crate::meter::{goodput, process_cpu_seconds, sample_meter, Meter};

/// Raw quinn: one connection, one stream, writing `chunk`-sized buffers for the duration.
/// Goodput (bytes/s) of raw quinn and the CPU seconds this process used while measuring.
pub(crate) async fn raw_quinn(
    certs: &KeygenOutput,
    seconds: f64,
    chunk: usize,
) -> Result<(f64, f64)> {
    let (server_cfg, client_cfg) = link_configs(certs, 1, 1, 64 << 20);
    let server_tls = TlsMaterial::load(&server_cfg.tls)?;
    let client_tls = TlsMaterial::load(&client_cfg.tls)?;
    let mut server_config =
        quinn::ServerConfig::with_crypto(Arc::new(server_tls.quic_server_config()?));
    server_config.transport_config(Arc::new(hmw_cm::driver::transport_config(&server_cfg)));
    let server = quinn::Endpoint::server(server_config, "127.0.0.1:0".parse()?)?;
    let addr = server.local_addr()?;
    let mut client_config = quinn::ClientConfig::new(Arc::new(client_tls.quic_client_config()?));
    client_config.transport_config(Arc::new(hmw_cm::driver::transport_config(&client_cfg)));
    let client = quinn::Endpoint::client("127.0.0.1:0".parse()?)?;

    let meter = Arc::new(Meter::default());
    let receiver = {
        let meter = meter.clone();
        let server = server.clone();
        tokio::spawn(async move {
            let conn = server.accept().await.expect("incoming").await?;
            let mut rx = conn.accept_uni().await?;
            while let Some(chunk) = rx.read_chunk(usize::MAX, true).await? {
                meter
                    .bytes
                    .fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
            }
            anyhow::Ok(())
        })
    };
    let conn = client.connect_with(client_config, addr, "server")?.await?;
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        let data = Bytes::from(vec![0xA5u8; chunk]);
        tokio::spawn(async move {
            let mut tx = conn.open_uni().await?;
            while !stop.load(Ordering::Relaxed) {
                tx.write_chunk(data.clone()).await?;
            }
            conn.close(0u32.into(), b"done");
            anyhow::Ok(())
        })
    };
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_before = process_cpu_seconds();
    let samples = sample_meter(
        &meter,
        || start.elapsed(),
        Duration::from_millis(250),
        Duration::from_secs_f64(seconds + 1.0),
    )
    .await;
    let cpu = process_cpu_seconds() - cpu_before;
    stop.store(true, Ordering::Relaxed);
    let _ = sender.await;
    receiver.abort();
    client.close(0u32.into(), b"done");
    server.close(0u32.into(), b"done");
    Ok((goodput(&samples, 1.0, seconds + 1.0), cpu))
}
