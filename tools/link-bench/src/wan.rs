//! The `wan` scenario: the link through the emulator, for several connection counts (or with
//! its defaults).

use anyhow::Result;
use hmw_cm::keygen::KeygenOutput;
use hmw_cm::{LinkConfig, Role};
use serde_json::{json, Value};

use crate::configs::{tls_placeholder, wan_config, wan_link_configs, WanArgs};
use crate::meter::{goodput, per_interval_mbit};
use crate::transfer::link_transfer;

pub(crate) async fn wan_sweep(
    certs: &KeygenOutput,
    args: &WanArgs,
    connections: &[usize],
    seconds: f64,
    warmup: f64,
) -> Result<Value> {
    let link_rate = args.rate_mbit * 1e6 / 8.0;
    // Bytes in flight on the path: the rate times the round trip.
    let bdp = link_rate * 2.0 * args.delay_ms / 1e3;
    let mut rows = Vec::new();
    let default_connections = [args
        .start_connections
        .unwrap_or(LinkConfig::new(Role::Client, "x", 1, tls_placeholder()).connections)];
    let connections = if args.defaults {
        &default_connections[..]
    } else {
        connections
    };
    for &n in connections {
        let (server, client) = wan_link_configs(certs, args, n)?;
        if args.defaults {
            eprintln!(
                "wan: default settings ({n} connections at the start, up to {}, {:?}, windows from {} B), {} Mbit/s, {} ms one way, loss {} ...",
                client.connections_max(), client.congestion, client.window, args.rate_mbit, args.delay_ms, args.loss
            );
        } else {
            eprintln!(
                "wan: {n} connection(s) x {} streams, {} Mbit/s, {} ms one way, loss {}, {} ...",
                args.streams,
                args.rate_mbit,
                args.delay_ms,
                args.loss,
                args.congestion.as_deref().unwrap_or("cubic")
            );
        }
        let t = link_transfer(
            server,
            client,
            Some(wan_config(args)),
            seconds,
            args.message,
            0.0,
            false,
        )
        .await?;
        let steady = goodput(&t.samples, warmup, seconds);
        let total = goodput(&t.samples, 0.0, seconds);
        let w = t.server.windows;
        let window_grew = (w.receive_window_initial_total as f64) < bdp
            && w.receive_window_peak_total as f64 >= bdp;
        eprintln!(
            "  goodput {:.2} Mbit/s steady ({:.2} of the link), {:.2} Mbit/s over the whole run; \
             receive windows {} -> peak {} B (path holds {:.0} B), {} reconnection(s), connections {:?}",
            steady * 8.0 / 1e6,
            steady / link_rate,
            total * 8.0 / 1e6,
            w.receive_window_initial_total,
            w.receive_window_peak_total,
            bdp,
            t.client.reconnections,
            t.client
                .connection_counts
                .iter()
                .map(|c| (c.count, c.reason))
                .collect::<Vec<_>>(),
        );
        rows.push(json!({
            "defaults": args.defaults,
            "window_grew": window_grew,
            "bdp_bytes": bdp,
            "reconnections": t.client.reconnections,
            "client_stats": t.client,
            "server_stats": t.server,
            "sizing": t.sizing,
            "connections": n,
            "streams": args.streams,
            "steady_goodput_mbit_s": steady * 8.0 / 1e6,
            "total_goodput_mbit_s": total * 8.0 / 1e6,
            "fraction_of_link": steady / link_rate,
            "messages_sent": t.sent,
            "messages_received": t.received,
            "in_order_and_intact": t.out_of_order == 0 && t.corrupt == 0,
            "connections_lost": t.client.connections_lost,
            "blocks_retransmitted": t.client.blocks_retransmitted,
            "per_interval": per_interval_mbit(&t.samples),
            "wanem": t.wanem,
        }));
    }
    let fraction = |r: &Value| r["fraction_of_link"].as_f64().unwrap_or(0.0);
    let best = rows.iter().map(fraction).fold(0.0, f64::max);
    let best_connections = rows
        .iter()
        .max_by(|a, b| fraction(a).total_cmp(&fraction(b)))
        .map(|r| r["connections"].clone());
    let one = rows
        .iter()
        .find(|r| r["connections"] == 1)
        .map(fraction)
        .unwrap_or(f64::NAN);
    let best_row = rows
        .iter()
        .max_by(|a, b| fraction(a).total_cmp(&fraction(b)))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(json!({
        "scenario": "wan",
        "defaults": args.defaults,
        "best_goodput_mbit_s": best_row["steady_goodput_mbit_s"],
        "reconnections": rows.iter().map(|r| r["reconnections"].as_u64().unwrap_or(0)).sum::<u64>(),
        "window_grew": best_row["window_grew"],
        "rate_mbit": args.rate_mbit,
        "delay_ms": args.delay_ms,
        "loss": args.loss,
        "congestion": args.congestion.as_deref().unwrap_or(if args.defaults { "default" } else { "cubic" }),
        "seconds": seconds,
        "warmup_s": warmup,
        "runs": rows,
        "wan_best_fraction": best,
        "best_connections": best_connections,
        "wan_gain_vs_1conn": best / one,
    }))
}
