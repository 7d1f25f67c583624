//! A transfer over the link, through the emulator or not: numbered messages sent for a while,
//! checked and counted at the other end, with the link's statistics and sizing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use bytes::Bytes;
use hmw_cm::wanem::WanemConfig;
use hmw_cm::{Link, LinkConfig, LinkStats};
use serde_json::{json, Value};

use crate::emulator::start_wanem;
use crate::meter::{process_cpu_seconds, sample_meter, Meter, Sample};

/// What a link transfer measured.
pub(crate) struct Transfer {
    pub(crate) samples: Vec<Sample>,
    /// CPU seconds of this process from `cpu_from_s` to the end of sending.
    pub(crate) cpu_seconds: f64,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) out_of_order: u64,
    pub(crate) corrupt: u64,
    pub(crate) flushed: bool,
    pub(crate) client: LinkStats,
    pub(crate) server: LinkStats,
    pub(crate) wanem: Option<Value>,
    /// The link's sizing every half second.
    pub(crate) sizing: Vec<Value>,
}

/// The client sends numbered messages for `seconds`; the server checks and counts them.
pub(crate) async fn link_transfer(
    server_cfg: LinkConfig,
    mut client_cfg: LinkConfig,
    wan: Option<WanemConfig>,
    seconds: f64,
    message_size: usize,
    cpu_from_s: f64,
    zero_copy: bool,
) -> Result<Transfer> {
    // Zero copy: the sender hands over `Bytes` from a ring of prepared messages (as raw quinn
    // writes one shared buffer); message `seq` is ring entry `seq % RING`.
    const RING: u64 = 96;
    let ring: Option<Arc<Vec<Bytes>>> = zero_copy.then(|| {
        Arc::new(
            (0..RING)
                .map(|k| {
                    let mut m = vec![0xA5u8; message_size];
                    m[..8].copy_from_slice(&k.to_be_bytes());
                    m[message_size - 1] = k as u8;
                    Bytes::from(m)
                })
                .collect(),
        )
    });
    let label = move |seq: u64| if zero_copy { seq % RING } else { seq };
    let server = Arc::new(Link::start(server_cfg).await?);
    let wanem = match wan {
        Some(mut wan) => {
            wan.server = server.local_addr();
            Some(start_wanem(wan).await?)
        }
        None => None,
    };
    client_cfg.port = wanem
        .as_ref()
        .map_or(server.local_addr(), |w| w.local_addr())
        .port();
    let client = Arc::new(Link::start(client_cfg).await?);
    let started = Instant::now();
    let clock = {
        let wan_started = wanem.as_ref().map(|w| Instant::now() - w.elapsed());
        move || wan_started.unwrap_or(started).elapsed()
    };
    let meter = Arc::new(Meter::default());
    let checks = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let receiver = {
        let (server, meter, checks) = (server.clone(), meter.clone(), checks.clone());
        tokio::spawn(async move {
            let mut expected = 0u64;
            while let Ok(message) = server.recv().await {
                let seq = u64::from_be_bytes(message[..8].try_into().expect("8 bytes"));
                if seq != label(expected) {
                    checks[0].fetch_add(1, Ordering::Relaxed);
                }
                if message.len() != message_size || message[message_size - 1] != seq as u8 {
                    checks[1].fetch_add(1, Ordering::Relaxed);
                }
                expected += 1;
                checks[2].fetch_add(1, Ordering::Relaxed);
                meter
                    .bytes
                    .fetch_add(message.len() as u64, Ordering::Relaxed);
            }
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (client, stop) = (client.clone(), stop.clone());
        tokio::spawn(async move {
            let mut seq = 0u64;
            let mut message = vec![0u8; message_size];
            while !stop.load(Ordering::Relaxed) {
                let send = async {
                    match &ring {
                        Some(ring) => client.send_bytes(ring[label(seq) as usize].clone()).await,
                        None => {
                            message[..8].copy_from_slice(&seq.to_be_bytes());
                            message[message_size - 1] = seq as u8;
                            client.send(&message).await
                        }
                    }
                };
                // Give up a blocked send now and then to look at the stop flag.
                match tokio::time::timeout(Duration::from_millis(200), send).await {
                    Ok(Ok(())) => seq += 1,
                    Ok(Err(e)) => return Err(anyhow::Error::from(e)),
                    Err(_) => {}
                }
            }
            anyhow::Ok(seq)
        })
    };
    let debug_fill = {
        let client = client.clone();
        tokio::spawn(async move {
            if std::env::var_os("LINK_BENCH_DEBUG").is_none() {
                return;
            }
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let s = client.stats();
                eprintln!("fill {:.2} blocks {} ", s.send_buffer.fill(), s.blocks_sent);
            }
        })
    };
    // The link's sizing over time: connections and windows, every half second.
    let sizing_rows = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sizing = {
        let (client, server, rows) = (client.clone(), server.clone(), sizing_rows.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let (c, s) = (client.stats(), server.stats());
                let mut rows = rows.lock().expect("rows");
                rows.push(json!({
                    "t_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                    "connections_open": c.connections_open,
                    "connections_target": c.connections_target,
                    "client_send_window_total": c.windows.send_window_total,
                    "server_receive_window_total": s.windows.receive_window_total,
                    "server_recv_memory": s.recv_buffer.capacity,
                    "client_send_memory": c.send_buffer.capacity,
                    "rtt_ms": (c.windows.rtt_ms * 10.0).round() / 10.0,
                    "reconnections": c.reconnections,
                }));
                if rows.len() >= 2400 {
                    return;
                }
            }
        })
    };
    let cpu_probe = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs_f64(cpu_from_s)).await;
        process_cpu_seconds()
    });
    let samples = sample_meter(
        &meter,
        &clock,
        Duration::from_millis(500),
        clock() + Duration::from_secs_f64(seconds),
    )
    .await;
    let cpu_seconds = process_cpu_seconds() - cpu_probe.await?;
    debug_fill.abort();
    sizing.abort();
    let sizing = std::mem::take(&mut *sizing_rows.lock().expect("rows"));
    stop.store(true, Ordering::Relaxed);
    let sent = sender.await??;
    let flushed = tokio::time::timeout(Duration::from_secs(60), client.flush())
        .await
        .is_ok();
    // Let the receiver drain what was acknowledged.
    let drain_deadline = Instant::now() + Duration::from_secs(10);
    while checks[2].load(Ordering::Relaxed) < sent && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let transfer = Transfer {
        samples,
        cpu_seconds,
        sent,
        received: checks[2].load(Ordering::Relaxed),
        out_of_order: checks[0].load(Ordering::Relaxed),
        corrupt: checks[1].load(Ordering::Relaxed),
        flushed,
        client: client.stats(),
        server: server.stats(),
        wanem: wanem
            .as_ref()
            .map(|w| serde_json::to_value(w.counters()).expect("serialisable")),
        sizing,
    };
    receiver.abort();
    client.close().await;
    server.close().await;
    Ok(transfer)
}
