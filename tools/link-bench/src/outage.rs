//! The `outage` scenario: an outage in the middle of a WAN transfer; what is lost, and how
//! soon the goodput returns.

use anyhow::Result;
use hmw_cm::keygen::KeygenOutput;
use hmw_cm::wanem::Outage;
use serde_json::{json, Value};

use crate::configs::{wan_config, wan_link_configs, WanArgs};
use crate::meter::{goodput, per_interval_mbit};
use crate::transfer::link_transfer;

pub(crate) async fn outage_run(
    certs: &KeygenOutput,
    args: &WanArgs,
    connections: usize,
    outage: Outage,
    seconds: f64,
    inactivity_ms: u64,
) -> Result<Value> {
    eprintln!(
        "outage: {connections} connection(s), link down from {} s to {} s, {seconds} s of sending ...",
        outage.start_s, outage.end_s
    );
    let (mut server, mut client) = wan_link_configs(certs, args, connections)?;
    for c in [&mut server, &mut client] {
        c.inactivity_timeout_ms = inactivity_ms;
        c.reconnect_max_ms = 1000;
    }
    let mut wan = wan_config(args);
    wan.outages = vec![outage];
    let t = link_transfer(server, client, Some(wan), seconds, args.message, 0.0, false).await?;
    let before = goodput(&t.samples, 3.0, outage.start_s);
    // Recovery: from the end of the outage to the first 1 s window at 80 % of the goodput
    // before it.
    let mut recovery = None;
    let mut first_byte = None;
    for s in t.samples.iter().filter(|s| s.t_s >= outage.end_s) {
        if first_byte.is_none() && goodput(&t.samples, s.t_s, s.t_s + 0.5) > 0.0 {
            first_byte = Some(s.t_s - outage.end_s);
        }
        if s.t_s + 1.0 <= seconds && goodput(&t.samples, s.t_s, s.t_s + 1.0) >= 0.8 * before {
            recovery = Some(s.t_s - outage.end_s);
            break;
        }
    }
    let lost = t.sent.saturating_sub(t.received);
    eprintln!(
        "  sent {} received {} lost {lost} out of order {} corrupt {}; goodput before {:.2} Mbit/s; \
         first delivery {:?} s and full goodput {:?} s after the link returned; {} disconnection(s), \
         {:.1} s disconnected",
        t.sent,
        t.received,
        t.out_of_order,
        t.corrupt,
        before * 8.0 / 1e6,
        first_byte,
        recovery,
        t.client.disconnections,
        t.client.time_disconnected_s
    );
    Ok(json!({
        "scenario": "outage",
        "connections": connections,
        "outage": {"start_s": outage.start_s, "end_s": outage.end_s},
        "seconds": seconds,
        "messages_sent": t.sent,
        "messages_received": t.received,
        "outage_lost": lost + t.out_of_order + t.corrupt,
        "out_of_order": t.out_of_order,
        "corrupt": t.corrupt,
        "flushed": t.flushed,
        "goodput_before_mbit_s": before * 8.0 / 1e6,
        "first_delivery_after_return_s": first_byte,
        "outage_recovery_s": recovery,
        "client_stats": t.client,
        "server_stats": t.server,
        "per_interval": per_interval_mbit(&t.samples),
        "wanem": t.wanem,
    }))
}
