//! The `ceiling` scenario: what an unshaped emulator relays per second at most.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use hmw_cm::wanem::{DirectionConfig, WanemConfig};
use serde_json::{json, Value};

use crate::emulator::start_wanem;
use crate::meter::process_cpu_seconds;

/// The emulator's ceiling: 1452-byte datagrams offered at `offered_mbit` (in trains of up to
/// 44, one system call each, paced every millisecond) through an unshaped emulator on its own
/// runtime to a sink; what reaches the sink per second is the ceiling.
pub(crate) async fn ceiling(offered_mbit: f64, seconds: f64) -> Result<Value> {
    const SIZE: usize = 1452;
    const TRAIN: usize = 44;
    let sink = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let sink_addr = sink.local_addr()?;
    let config = WanemConfig::symmetric(
        "127.0.0.1:0".parse()?,
        sink_addr,
        DirectionConfig::default(),
    );
    let wanem = start_wanem(config).await?;
    let target = wanem.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let sink_thread = {
        let (stop, received) = (stop.clone(), received.clone());
        std::thread::spawn(move || -> Result<()> {
            let state = quinn_udp::UdpSocketState::new((&sink).into())?;
            let _ = state.set_recv_buffer_size((&sink).into(), 32 << 20);
            let mut buf = vec![0u8; 64 * 1024 * quinn_udp::BATCH_SIZE];
            let mut meta = [quinn_udp::RecvMeta::default(); quinn_udp::BATCH_SIZE];
            while !stop.load(Ordering::Relaxed) {
                let mut chunks = buf.chunks_mut(64 * 1024);
                let mut slices: [std::io::IoSliceMut<'_>; quinn_udp::BATCH_SIZE] =
                    std::array::from_fn(|_| std::io::IoSliceMut::new(chunks.next().expect("slot")));
                match state.recv((&sink).into(), &mut slices, &mut meta) {
                    Ok(n) => {
                        let bytes: usize = meta[..n].iter().map(|m| m.len).sum();
                        received.fetch_add(bytes as u64, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        })
    };
    let blaster = {
        let stop = stop.clone();
        std::thread::spawn(move || -> Result<u64> {
            let socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
            let state = quinn_udp::UdpSocketState::new((&socket).into())?;
            let _ = state.set_send_buffer_size((&socket).into(), 32 << 20);
            let train = state.max_gso_segments().clamp(1, TRAIN);
            let payload = vec![0x5Au8; SIZE * train];
            let rate = offered_mbit * 1e6 / 8.0;
            let started = Instant::now();
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let due = (started.elapsed().as_secs_f64() * rate) as u64;
                if sent + (SIZE * train) as u64 > due {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                let transmit = quinn_udp::Transmit {
                    destination: target,
                    ecn: None,
                    contents: &payload,
                    segment_size: (train > 1).then_some(SIZE),
                    src_ip: None,
                };
                match state.try_send((&socket).into(), &transmit) {
                    Ok(()) => sent += payload.len() as u64,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(sent)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (t0, r0) = (Instant::now(), received.load(Ordering::Relaxed));
    let cpu0 = process_cpu_seconds();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let (elapsed, r1) = (t0.elapsed().as_secs_f64(), received.load(Ordering::Relaxed));
    let cpu = process_cpu_seconds() - cpu0;
    stop.store(true, Ordering::Relaxed);
    let offered = blaster
        .join()
        .map_err(|_| anyhow::anyhow!("blaster panicked"))??;
    sink_thread
        .join()
        .map_err(|_| anyhow::anyhow!("sink panicked"))??;
    let mbit = (r1 - r0) as f64 * 8.0 / 1e6 / elapsed;
    let counters = wanem.counters();
    eprintln!(
        "emulator ceiling: {mbit:.0} Mbit/s out of {offered_mbit} Mbit/s offered (1452-byte datagrams), {cpu:.2} CPU-s of this process in {elapsed:.1} s\n{counters}"
    );
    Ok(json!({
        "scenario": "ceiling",
        "offered_mbit": offered_mbit,
        "offered_bytes": offered,
        "seconds": elapsed,
        "datagram_bytes": SIZE,
        "emulator_ceiling_mbit": mbit,
        "process_cpu_seconds": cpu,
        "wanem": counters,
    }))
}
