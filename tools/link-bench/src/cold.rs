//! The `cold` scenario: the first seconds of a link that has just connected, as a run's link
//! is when its master starts (`wait_for_links`): the link comes up through the emulator and
//! idles, then at the start signal the sender pushes messages as fast as the link takes them
//! (a CM with its window of tasks). Measured from the start signal: when the first message
//! arrives, the goodput over each interval, and when it first reaches 90 % of the path's rate;
//! with the link's sizing every interval (congestion and flow-control windows, connections),
//! the trace of where the time goes. The link has its default settings, as a CM's; `--warm`
//! gives it the path's rate and round trip (`LinkConfig::path`, as `hmw launch` does from a
//! plan).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use hmw_cm::keygen::KeygenOutput;
use hmw_cm::{Link, PathHint};
use serde_json::{json, Value};

use crate::configs::{wan_config, wan_link_configs, WanArgs};
use crate::emulator::start_wanem;

/// How often the trace is sampled.
const INTERVAL: Duration = Duration::from_millis(50);

/// Idle time between the link coming up and the start signal.
const IDLE_BEFORE_START: Duration = Duration::from_millis(500);

/// One point of the trace, `t_s` seconds after the start signal.
struct Point {
    t_s: f64,
    /// Bytes of the messages received by then.
    received: u64,
    /// The sender's congestion windows, summed; its send (flow-control) windows, summed.
    cwnd: u64,
    send_window: u64,
    /// The receiver's receive windows, summed: the credit it grants.
    receive_window: u64,
    connections: usize,
}

/// The first time, in seconds from the start signal, by which the goodput over the last
/// `span` seconds has reached `fraction` of `rate`, if any (a window's end, not its start:
/// messages that complete together after a lost block is repaired would credit a window with
/// time in which nothing arrived).
pub(crate) fn time_to_fraction(
    samples: &[(f64, u64)],
    span: f64,
    rate: f64,
    fraction: f64,
) -> Option<f64> {
    samples.iter().enumerate().find_map(|(i, &(t0, b0))| {
        let (t1, b1) = *samples[i..].iter().find(|&&(t, _)| t >= t0 + span)?;
        ((b1 - b0) as f64 / (t1 - t0) >= fraction * rate).then_some(t1)
    })
}

pub(crate) async fn cold_start(
    certs: &KeygenOutput,
    args: &WanArgs,
    seconds: f64,
    warm: bool,
) -> Result<Value> {
    if !args.defaults {
        bail!("cold: the link's first seconds are measured with its default settings (--defaults)");
    }
    let rate = args.rate_mbit * 1e6 / 8.0;
    let rtt_ms = 2.0 * args.delay_ms;
    let (mut server_cfg, mut client_cfg) = wan_link_configs(certs, args, 0)?;
    if warm {
        let path = PathHint {
            send_bytes_per_s: rate,
            recv_bytes_per_s: rate,
            rtt_ms,
        };
        server_cfg.path = Some(path);
        client_cfg.path = Some(path);
    }
    let server = Arc::new(Link::start(server_cfg).await?);
    let mut wan = wan_config(args);
    wan.server = server.local_addr();
    let wanem = start_wanem(wan).await?;
    client_cfg.port = wanem.local_addr().port();
    let client = Arc::new(Link::start(client_cfg).await?);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !client.is_connected() {
        if Instant::now() > deadline {
            bail!("cold: the link did not connect in 20 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(IDLE_BEFORE_START).await;
    let start = Instant::now();
    let received = Arc::new(AtomicU64::new(0));
    let first_arrival = Arc::new(Mutex::new(None::<f64>));
    let receiver = {
        let (server, received, first) = (server.clone(), received.clone(), first_arrival.clone());
        tokio::spawn(async move {
            while let Ok(message) = server.recv().await {
                first
                    .lock()
                    .expect("first")
                    .get_or_insert(start.elapsed().as_secs_f64());
                received.fetch_add(message.len() as u64, Ordering::Relaxed);
            }
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (client, stop) = (client.clone(), stop.clone());
        let message = vec![0x5Au8; args.message];
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let send = client.send(&message);
                match tokio::time::timeout(Duration::from_millis(200), send).await {
                    Ok(Ok(())) | Err(_) => {}
                    Ok(Err(e)) => return Err(anyhow::Error::from(e)),
                }
            }
            anyhow::Ok(())
        })
    };
    let mut trace = Vec::new();
    while start.elapsed().as_secs_f64() < seconds {
        let (c, s) = (client.stats(), server.stats());
        trace.push(Point {
            t_s: start.elapsed().as_secs_f64(),
            received: received.load(Ordering::Relaxed),
            cwnd: c.windows.congestion_window_total,
            send_window: c.windows.send_window_total,
            receive_window: s.windows.receive_window_total,
            connections: c.connections_open,
        });
        tokio::time::sleep(INTERVAL).await;
    }
    stop.store(true, Ordering::Relaxed);
    sender.await??;
    receiver.abort();
    client.close().await;
    server.close().await;
    let emulator = serde_json::to_value(wanem.counters())?;
    drop(wanem);

    let samples: Vec<(f64, u64)> = trace.iter().map(|p| (p.t_s, p.received)).collect();
    // The path's rate as the link reaches it: its goodput over the second half of the run.
    let tail_from = seconds / 2.0;
    let tail: Vec<&(f64, u64)> = samples.iter().filter(|(t, _)| *t >= tail_from).collect();
    let steady = match (tail.first(), tail.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => (b.1 - a.1) as f64 / (b.0 - a.0),
        _ => 0.0,
    };
    // Over two round trips and four messages' time at the rate, at least 0.2 s: a shorter
    // window sees the bursts of each round, and the whole messages as they complete.
    let span = (2.0 * rtt_ms / 1e3)
        .max(4.0 * args.message as f64 / rate)
        .max(0.2);
    let to_90 = time_to_fraction(&samples, span, steady, 0.9);
    let first = *first_arrival.lock().expect("first");
    eprintln!(
        "cold ({}): {} Mbit/s, {} ms round trip, {} B messages: first message at {}, 90 % of \
         the steady {:.1} Mbit/s ({:.2} of the link's rate) at {}",
        if warm { "warm start" } else { "no path hint" },
        args.rate_mbit,
        rtt_ms,
        args.message,
        first.map_or("never".into(), |t| format!("{t:.3} s")),
        steady * 8.0 / 1e6,
        steady / rate,
        to_90.map_or("never".into(), |t| format!("{t:.3} s")),
    );
    let trace: Vec<Value> = trace
        .windows(2)
        .map(|w| {
            let goodput = (w[1].received - w[0].received) as f64 / (w[1].t_s - w[0].t_s);
            json!({
                "t_s": (w[1].t_s * 1000.0).round() / 1000.0,
                "received_bytes": w[1].received,
                "goodput_mbit_s": (goodput * 8.0 / 1e4).round() / 100.0,
                "congestion_window_bytes": w[1].cwnd,
                "send_window_bytes": w[1].send_window,
                "receive_window_bytes": w[1].receive_window,
                "connections": w[1].connections,
            })
        })
        .collect();
    Ok(json!({
        "warm": warm,
        "rate_mbit": args.rate_mbit,
        "rtt_ms": rtt_ms,
        "message_bytes": args.message,
        "first_message_s": first,
        "steady_mbit_s": steady * 8.0 / 1e6,
        "steady_fraction_of_rate": steady / rate,
        "to_90pct_s": to_90,
        "window_s": span,
        "emulator": emulator,
        "trace": trace,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link that delivers nothing for 1 s, then 1 MB/s: 90 % of 1 MB/s over 0.2 s windows
    /// is reached by the end of the first window that holds 0.18 s of the rate.
    #[test]
    fn the_time_to_a_fraction_is_the_end_of_the_first_window_at_it() {
        let samples: Vec<(f64, u64)> = (0..60)
            .map(|i| {
                let t = i as f64 * 0.05;
                (t, ((t - 1.0).max(0.0) * 1e6) as u64)
            })
            .collect();
        let at = time_to_fraction(&samples, 0.2, 1e6, 0.9).unwrap();
        assert!((at - 1.2).abs() < 0.026, "{at}");
        assert_eq!(time_to_fraction(&samples, 0.2, 2e6, 0.9), None);
    }
}
