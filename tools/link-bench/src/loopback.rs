//! The `loopback` scenario: the link against raw quinn on 127.0.0.1, round after round.

use anyhow::{bail, Result};
use hmw_cm::keygen::KeygenOutput;
use serde_json::{json, Value};

use crate::configs::link_configs;
use crate::meter::{goodput, per_interval_mbit};
use crate::raw_quinn::raw_quinn;
use crate::transfer::link_transfer;

pub(crate) async fn loopback(
    certs: &KeygenOutput,
    seconds: f64,
    message: usize,
    block_size: usize,
    rounds: usize,
    zero_copy: bool,
) -> Result<Value> {
    let mut round_reports = Vec::new();
    let mut ratios = Vec::new();
    let mut cpu_ratios = Vec::new();
    for round in 1..=rounds.max(1) {
        eprintln!("loopback round {round}: raw quinn, 1 connection x 1 stream, {seconds} s ...");
        let (quinn_rate, quinn_cpu) = raw_quinn(certs, seconds, message).await?;
        let quinn_per_cpu = quinn_rate * seconds / quinn_cpu.max(0.01);
        let mut rows = Vec::new();
        for (connections, streams) in [(1, 1), (2, 2)] {
            eprintln!(
                "loopback round {round}: link, {connections} connection(s) x {streams} stream(s), {seconds} s ..."
            );
            let (mut server, mut client) = link_configs(certs, connections, streams, 64 << 20);
            server.block_size = block_size;
            client.block_size = block_size;
            let t =
                link_transfer(server, client, None, seconds + 1.0, message, 1.0, zero_copy).await?;
            let rate = goodput(&t.samples, 1.0, seconds + 1.0);
            if t.out_of_order + t.corrupt > 0 || t.received != t.sent {
                bail!("loopback transfer lost, reordered or corrupted messages");
            }
            let per_cpu = rate * seconds / t.cpu_seconds.max(0.01);
            eprintln!(
                "  raw quinn {:.1} MB/s ({:.0} MB per CPU-second), link {connections}x{streams} {:.1} MB/s ({:.0} MB per CPU-second) = {:.2} of raw quinn ({:.2} per CPU-second)",
                quinn_rate / 1e6,
                quinn_per_cpu / 1e6,
                rate / 1e6,
                per_cpu / 1e6,
                rate / quinn_rate,
                per_cpu / quinn_per_cpu
            );
            rows.push(json!({
                "connections": connections,
                "streams": streams,
                "goodput_mbyte_s": rate / 1e6,
                "ratio_vs_raw_quinn": rate / quinn_rate,
                "mbyte_per_cpu_second": per_cpu / 1e6,
                "cpu_efficiency_vs_raw_quinn": per_cpu / quinn_per_cpu,
                "blocks_sent": t.client.blocks_sent,
                "per_interval_mbit_s": per_interval_mbit(&t.samples),
            }));
        }
        ratios.push(rows[0]["ratio_vs_raw_quinn"].as_f64().unwrap_or(0.0));
        cpu_ratios.push(
            rows[0]["cpu_efficiency_vs_raw_quinn"]
                .as_f64()
                .unwrap_or(0.0),
        );
        round_reports.push(json!({
            "raw_quinn_mbyte_s": quinn_rate / 1e6,
            "raw_quinn_mbyte_per_cpu_second": quinn_per_cpu / 1e6,
            "link": rows,
        }));
    }
    ratios.sort_by(f64::total_cmp);
    cpu_ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let cpu_median = cpu_ratios[cpu_ratios.len() / 2];
    eprintln!(
        "loopback: median link 1x1 / raw quinn = {median:.2} (goodput), {cpu_median:.2} (bytes per CPU-second) over {} round(s)",
        ratios.len()
    );
    Ok(json!({
        "scenario": "loopback",
        "seconds": seconds,
        "message_bytes": message,
        "block_size": block_size,
        "link_send": if zero_copy { "send_bytes (zero copy)" } else { "send (copies)" },
        "rounds": round_reports,
        "loopback_vs_quinn": median,
        "loopback_cpu_efficiency_vs_quinn": cpu_median,
    }))
}
