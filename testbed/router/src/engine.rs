//! The data path without I/O: packets in, each through its source cluster's `from_cluster`
//! [`Pipe`] then its destination cluster's `to_cluster` pipe, packets out when due; and the
//! control commands that change the pipes.
//!
//! Every pipe's delivery times never decrease (the pipe keeps packets in order), so each pipe
//! has a FIFO of packets waiting for their time, and the timer "heap" is the earliest head
//! among the FIFOs (two per cluster). Packet buffers come from a pool that grows to the
//! largest number of packets in flight, then is reused: no allocation per packet.

use std::collections::VecDeque;
use std::time::Duration;

use hmw_wan::{limits, DirectionConfig, DirectionCounters, Outage, Pipe};
use serde::Serialize;
use serde_json::{json, Value};

use crate::config::Config;
use crate::control::{Direction, Request, SetRequest};
use crate::packet::{self, Reject, Subnet};

/// Index of the `to_cluster` pipe of a cluster.
const TO: usize = 0;
/// Index of the `from_cluster` pipe of a cluster.
const FROM: usize = 1;
/// Names of the two directions, by index.
const DIRECTION_NAMES: [&str; 2] = ["to_cluster", "from_cluster"];

/// Most bytes of packet buffers in flight (waiting in the pipes) before arrivals are dropped
/// (`dropped.in_flight_limit`): unlimited links with long delays would otherwise take all the
/// memory (1 Gbit/s for 1 s is 125 MB).
pub const MAX_IN_FLIGHT_BYTES: usize = 256 << 20;

/// Packets the router drops before they reach a pipe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RouterDrops {
    /// Not IPv4 (IPv6 is not routed into the TUN device; what the kernel sends there anyway,
    /// such as IPv6 neighbour discovery, is dropped).
    pub not_ipv4: u64,
    /// IPv4 with a bad header or a length that does not match what was read.
    pub malformed: u64,
    /// Source or destination outside every cluster's subnet.
    pub no_cluster: u64,
    /// Source and destination in the same cluster (the LAN carries those, not the WAN).
    pub same_cluster: u64,
    /// Too many packets in flight ([`MAX_IN_FLIGHT_BYTES`]).
    pub in_flight_limit: u64,
}

/// One direction of a cluster's access link.
#[derive(Debug)]
struct Link {
    pipe: Pipe,
    /// The conditions now (outages are kept in `schedule`, not here).
    config: DirectionConfig,
    /// Outages of the configuration, in seconds from the start signal.
    schedule: Vec<Outage>,
}

/// A packet waiting for its time in a pipe.
#[derive(Debug)]
struct Pending {
    at: Duration,
    buf: Vec<u8>,
    len: usize,
    src: usize,
    dst: usize,
}

/// The emulator's state.
#[derive(Debug)]
pub struct Engine {
    names: Vec<String>,
    subnets: Vec<Subnet>,
    links: Vec<[Link; 2]>,
    /// Index `cluster * 2 + direction`.
    fifos: Vec<VecDeque<Pending>>,
    pool: Vec<Vec<u8>>,
    slot: usize,
    in_flight: usize,
    max_in_flight: usize,
    started: Option<Duration>,
    drops: RouterDrops,
    write_errors: u64,
}

/// The seed of one pipe, from the configuration's seed.
fn pipe_seed(seed: u64, cluster: usize, direction: usize) -> u64 {
    seed.wrapping_add(
        ((cluster as u64) * 2 + direction as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    )
}

impl Engine {
    /// The pipes of `config`; packet buffers hold `slot` bytes (the largest packet read).
    pub fn new(config: &Config, slot: usize) -> Self {
        let links = config
            .clusters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let link = |d: &DirectionConfig, direction: usize| {
                    let now = DirectionConfig {
                        outages: Vec::new(),
                        ..d.clone()
                    };
                    Link {
                        pipe: Pipe::new(&now, &[], pipe_seed(config.seed, i, direction)),
                        config: now,
                        schedule: d.outages.clone(),
                    }
                };
                [link(&c.to_cluster, TO), link(&c.from_cluster, FROM)]
            })
            .collect();
        let slot = slot.max(64);
        Self {
            names: config.clusters.iter().map(|c| c.name.clone()).collect(),
            subnets: config.clusters.iter().map(|c| c.subnet).collect(),
            links,
            fifos: (0..config.clusters.len() * 2)
                .map(|_| VecDeque::new())
                .collect(),
            pool: Vec::new(),
            slot,
            in_flight: 0,
            max_in_flight: (MAX_IN_FLIGHT_BYTES / slot).max(1024),
            started: None,
            drops: RouterDrops::default(),
            write_errors: 0,
        }
    }

    /// A buffer of the slot size to read a packet into (from the pool when it has one).
    #[inline]
    pub fn buffer(&mut self) -> Vec<u8> {
        self.pool.pop().unwrap_or_else(|| vec![0u8; self.slot])
    }

    /// Gives back a buffer taken with [`Engine::buffer`] and not passed to
    /// [`Engine::ingress`].
    #[inline]
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.push(buf);
    }

    /// A packet of `len` bytes read at `now` into `buf`: classified and offered to its
    /// source's `from_cluster` pipe, or dropped and counted.
    pub fn ingress(&mut self, now: Duration, buf: Vec<u8>, len: usize) {
        let len = len.min(buf.len());
        let classified = match packet::ipv4_addresses(&buf[..len]) {
            Ok((src, dst)) => {
                match (
                    packet::cluster_of(&self.subnets, src),
                    packet::cluster_of(&self.subnets, dst),
                ) {
                    (Some(s), Some(d)) if s == d => {
                        self.drops.same_cluster += 1;
                        None
                    }
                    (Some(s), Some(d)) => Some((s, d)),
                    _ => {
                        self.drops.no_cluster += 1;
                        None
                    }
                }
            }
            Err(Reject::NotIpv4) => {
                self.drops.not_ipv4 += 1;
                None
            }
            Err(Reject::Malformed) => {
                self.drops.malformed += 1;
                None
            }
        };
        let Some((src, dst)) = classified else {
            self.recycle(buf);
            return;
        };
        if self.in_flight >= self.max_in_flight {
            self.drops.in_flight_limit += 1;
            self.recycle(buf);
            return;
        }
        match self.links[src][FROM].pipe.offer(now, len) {
            Ok(at) => {
                self.in_flight += 1;
                self.fifos[src * 2 + FROM].push_back(Pending {
                    at,
                    buf,
                    len,
                    src,
                    dst,
                });
            }
            Err(_) => self.recycle(buf),
        }
    }

    /// When the next packet is due, if any is waiting.
    #[inline]
    pub fn next_due(&self) -> Option<Duration> {
        self.fifos
            .iter()
            .filter_map(|f| f.front().map(|p| p.at))
            .min()
    }

    /// The FIFO whose head is due first, if by `now`.
    #[inline]
    fn due_fifo(&self, now: Duration) -> Option<usize> {
        let mut best: Option<(usize, Duration)> = None;
        for (i, f) in self.fifos.iter().enumerate() {
            if let Some(p) = f.front() {
                if p.at <= now && best.is_none_or(|(_, at)| p.at < at) {
                    best = Some((i, p.at));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// Moves every packet due by `now` on: out of its source's `from_cluster` pipe into its
    /// destination's `to_cluster` pipe, and out of that to `emit`, which writes it (false:
    /// not written, counted in `write_errors`).
    pub fn run_due(&mut self, now: Duration, emit: &mut dyn FnMut(&[u8]) -> bool) {
        while let Some(i) = self.due_fifo(now) {
            let Some(p) = self.fifos[i].pop_front() else {
                break;
            };
            if i % 2 == FROM {
                if !self.links[p.src][FROM].pipe.deliver(p.at, p.len) {
                    self.release(p.buf);
                    continue;
                }
                match self.links[p.dst][TO].pipe.offer(p.at, p.len) {
                    Ok(at) => self.fifos[p.dst * 2 + TO].push_back(Pending { at, ..p }),
                    Err(_) => self.release(p.buf),
                }
            } else {
                if self.links[p.dst][TO].pipe.deliver(p.at, p.len) && !emit(&p.buf[..p.len]) {
                    self.write_errors += 1;
                }
                self.release(p.buf);
            }
        }
    }

    /// A packet in flight is done with.
    #[inline]
    fn release(&mut self, buf: Vec<u8>) {
        self.in_flight -= 1;
        self.pool.push(buf);
    }

    /// Packets waiting in the pipes.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether the start signal came.
    pub fn started(&self) -> bool {
        self.started.is_some()
    }

    /// Handles a control request at `now` (every one but `stop`, which the caller handles):
    /// the reply, `{"ok":true,...}` or `{"ok":false,"error":...}`.
    pub fn command(&mut self, now: Duration, request: &Request) -> Value {
        let result = match request {
            Request::Start {} => self.start(now).map(|()| json!({ "ok": true })),
            Request::Set(set) => self.set(set).map(|()| json!({ "ok": true })),
            Request::Outage { cluster, seconds } => self
                .outage(now, cluster, *seconds)
                .map(|()| json!({ "ok": true })),
            Request::Counters {} => Ok(self.counters(now)),
            Request::Stop {} => Err("`stop` is handled by the router, not the engine".into()),
        };
        result.unwrap_or_else(|error| json!({ "ok": false, "error": error }))
    }

    /// The start signal: the configured outages count from `now`.
    pub fn start(&mut self, now: Duration) -> Result<(), String> {
        if let Some(at) = self.started {
            return Err(format!(
                "already started {:.3} s ago",
                now.saturating_sub(at).as_secs_f64()
            ));
        }
        self.started = Some(now);
        let origin = now.as_secs_f64();
        for link in self.links.iter_mut().flatten() {
            for o in &link.schedule {
                link.pipe.add_outage(Outage {
                    start_s: o.start_s + origin,
                    end_s: o.end_s + origin,
                });
            }
        }
        Ok(())
    }

    fn cluster(&self, name: &str) -> Result<usize, String> {
        self.names.iter().position(|n| n == name).ok_or_else(|| {
            format!(
                "unknown cluster `{name}` (the clusters are: {})",
                self.names.join(", ")
            )
        })
    }

    /// Changes a link's conditions now.
    pub fn set(&mut self, set: &SetRequest) -> Result<(), String> {
        let c = self.cluster(&set.cluster)?;
        if set.rate_mbit.is_none()
            && set.delay_ms.is_none()
            && set.loss.is_none()
            && set.jitter_ms.is_none()
        {
            return Err("`set` needs at least one of rate_mbit, delay_ms, jitter_ms, loss".into());
        }
        let directions: &[usize] = match set.direction {
            Direction::ToCluster => &[TO],
            Direction::FromCluster => &[FROM],
            Direction::Both => &[TO, FROM],
        };
        let mut updated = Vec::with_capacity(2);
        for &d in directions {
            let mut config = self.links[c][d].config.clone();
            if let Some(v) = set.rate_mbit {
                config.rate_mbit = v;
            }
            if let Some(v) = set.delay_ms {
                config.delay_ms = v;
            }
            if let Some(v) = set.jitter_ms {
                config.jitter_ms = v;
            }
            if let Some(v) = set.loss {
                config.loss = v;
            }
            config
                .validate(DIRECTION_NAMES[d])
                .map_err(|e| format!("cluster `{}`: {e}", set.cluster))?;
            updated.push((d, config));
        }
        for (d, config) in updated {
            let link = &mut self.links[c][d];
            link.pipe.reconfigure(&config);
            link.config = config;
        }
        Ok(())
    }

    /// Both directions of a cluster's link down from `now` for `seconds`.
    pub fn outage(&mut self, now: Duration, cluster: &str, seconds: f64) -> Result<(), String> {
        let c = self.cluster(cluster)?;
        limits::duration_s(seconds).map_err(|e| format!("`seconds` is {seconds:?} but {e}"))?;
        let start_s = now.as_secs_f64();
        for link in &mut self.links[c] {
            link.pipe.add_outage(Outage {
                start_s,
                end_s: start_s + seconds,
            });
        }
        Ok(())
    }

    /// The counters reply: every cluster's two directions, the router's own drops.
    pub fn counters(&self, now: Duration) -> Value {
        let clusters: serde_json::Map<String, Value> = self
            .names
            .iter()
            .zip(&self.links)
            .map(|(name, [to, from])| {
                let c = |p: &Pipe| -> DirectionCounters { p.counters() };
                (
                    name.clone(),
                    json!({ "to_cluster": c(&to.pipe), "from_cluster": c(&from.pipe) }),
                )
            })
            .collect();
        json!({
            "ok": true,
            "elapsed_s": self.started.map_or(0.0, |at| now.saturating_sub(at).as_secs_f64()),
            "uptime_s": now.as_secs_f64(),
            "started": self.started.is_some(),
            "clusters": clusters,
            "dropped": self.drops,
            "in_flight": self.in_flight,
            "write_errors": self.write_errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::parse(
            r#"
tun = "wan0"
seed = 3
[[cluster]]
name = "main"
subnet = "10.213.1.0/24"
dev = "rt-c1"
[[cluster]]
name = "spain"
subnet = "10.213.2.0/24"
dev = "rt-c2"
to_cluster = { delay_ms = 20.0 }
from_cluster = { delay_ms = 20.0, outages = [{ start_s = 1.0, end_s = 2.0 }] }
[[cluster]]
name = "france"
subnet = "10.213.3.0/24"
dev = "rt-c3"
to_cluster = { delay_ms = 30.0, rate_mbit = 8.0 }
from_cluster = { delay_ms = 30.0 }
"#,
        )
        .unwrap()
    }

    fn packet(src: u8, dst: u8, total: usize) -> Vec<u8> {
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[12..16].copy_from_slice(&[10, 213, src, 2]);
        p[16..20].copy_from_slice(&[10, 213, dst, 2]);
        p
    }

    fn send(e: &mut Engine, now: Duration, p: &[u8]) {
        let mut buf = e.buffer();
        buf[..p.len()].copy_from_slice(p);
        e.ingress(now, buf, p.len());
    }

    /// Runs the engine until nothing is left, collecting (time, packet).
    fn drain(e: &mut Engine) -> Vec<(Duration, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(at) = e.next_due() {
            e.run_due(at, &mut |p| {
                out.push((at, p.to_vec()));
                true
            });
        }
        out
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn delays_add_up_along_both_access_links() {
        let mut e = Engine::new(&config(), 1500);
        send(&mut e, MS(0), &packet(1, 2, 100));
        send(&mut e, MS(1), &packet(2, 3, 100));
        send(&mut e, MS(2), &packet(3, 1, 100));
        let out = drain(&mut e);
        let times: Vec<Duration> = out.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, vec![MS(20), MS(32), MS(51)]);
        assert_eq!(out[0].1, packet(1, 2, 100), "unchanged");
        assert_eq!(e.in_flight(), 0);
        let c = e.counters(MS(100));
        assert_eq!(c["clusters"]["spain"]["to_cluster"]["packets_out"], 1);
        assert_eq!(c["clusters"]["spain"]["from_cluster"]["bytes_out"], 100);
        assert_eq!(c["clusters"]["main"]["to_cluster"]["packets_in"], 1);
        assert_eq!(c["started"], false);
    }

    #[test]
    fn odd_packets_are_dropped_and_counted() {
        let mut e = Engine::new(&config(), 1500);
        send(&mut e, MS(0), &packet(1, 1, 40));
        send(&mut e, MS(0), &packet(1, 9, 40));
        send(&mut e, MS(0), &packet(9, 1, 40));
        let mut v6 = packet(1, 2, 40);
        v6[0] = 0x60;
        send(&mut e, MS(0), &v6);
        send(&mut e, MS(0), &packet(1, 2, 40)[..30]);
        send(&mut e, MS(0), &[]);
        assert!(drain(&mut e).is_empty());
        let d = e.counters(MS(0))["dropped"].clone();
        assert_eq!(
            d,
            json!({"not_ipv4": 1, "malformed": 2, "no_cluster": 2, "same_cluster": 1, "in_flight_limit": 0})
        );
    }

    #[test]
    fn scheduled_outages_count_from_the_start_signal() {
        let mut e = Engine::new(&config(), 1500);
        // Before the start, no outage: 1.5 s after launch passes.
        send(&mut e, MS(1500), &packet(2, 1, 40));
        assert_eq!(drain(&mut e).len(), 1);
        assert!(e.start(MS(10_000)).is_ok());
        assert!(e.start(MS(10_001)).unwrap_err().contains("already started"));
        send(&mut e, MS(10_500), &packet(2, 1, 40));
        send(&mut e, MS(11_500), &packet(2, 1, 40));
        send(&mut e, MS(12_000), &packet(2, 1, 40));
        assert_eq!(drain(&mut e).len(), 2);
        let c = e.counters(MS(12_500));
        assert_eq!(c["clusters"]["spain"]["from_cluster"]["dropped_outage"], 1);
        assert_eq!(c["elapsed_s"], 2.5);
        assert_eq!(c["started"], true);
    }

    #[test]
    fn an_outage_command_takes_both_directions_down_now() {
        let mut e = Engine::new(&config(), 1500);
        send(&mut e, MS(0), &packet(1, 2, 40));
        assert!(e.outage(MS(10), "spain", 1.0).is_ok());
        send(&mut e, MS(500), &packet(2, 1, 40));
        send(&mut e, MS(1100), &packet(1, 2, 40));
        let out = drain(&mut e);
        assert_eq!(
            out.len(),
            1,
            "in flight into the outage, then one during it, are lost"
        );
        assert_eq!(out[0].0, MS(1120));
        assert!(e
            .outage(MS(0), "mars", 1.0)
            .unwrap_err()
            .contains("unknown cluster `mars`"));
        assert!(e
            .outage(MS(0), "spain", -1.0)
            .unwrap_err()
            .contains("`seconds`"));
        assert!(e.outage(MS(0), "spain", f64::NAN).is_err());
    }

    #[test]
    fn set_changes_the_rate_and_validates() {
        let mut e = Engine::new(&config(), 1500);
        let set = |direction, rate_mbit: Option<f64>, loss: Option<f64>| SetRequest {
            cluster: "france".into(),
            direction,
            rate_mbit,
            delay_ms: None,
            jitter_ms: None,
            loss,
        };
        // 8 Mbit/s: 1000-byte packets 1 ms apart after the 16 KiB burst.
        let spacing = |e: &mut Engine, t0: u64| {
            for i in 0..40 {
                send(e, MS(t0) + Duration::from_micros(i), &packet(1, 3, 1000));
            }
            let out = drain(e);
            (out[39].0 - out[38].0).as_secs_f64() * 1e3
        };
        assert!((spacing(&mut e, 0) - 1.0).abs() < 1e-6);
        e.set(&set(Direction::ToCluster, Some(16.0), None)).unwrap();
        assert!((spacing(&mut e, 1000) - 0.5).abs() < 1e-6);
        let err = e.set(&set(Direction::Both, Some(-3.0), None)).unwrap_err();
        assert!(
            err.contains("`france`") && err.contains("rate_mbit"),
            "{err}"
        );
        let err = e
            .set(&set(Direction::FromCluster, None, Some(2.0)))
            .unwrap_err();
        assert!(err.contains("from_cluster.loss"), "{err}");
        let err = e.set(&set(Direction::Both, None, None)).unwrap_err();
        assert!(err.contains("at least one"), "{err}");
        e.set(&set(Direction::Both, None, Some(1.0))).unwrap();
        send(&mut e, MS(5000), &packet(3, 1, 100));
        assert!(drain(&mut e).is_empty());
    }

    #[test]
    fn the_in_flight_limit_drops_instead_of_growing_without_bound() {
        let mut e = Engine::new(&config(), 1500);
        e.max_in_flight = 100;
        let limit = e.max_in_flight;
        for _ in 0..limit + 10 {
            send(&mut e, MS(0), &packet(2, 1, 40));
        }
        assert_eq!(e.in_flight(), limit);
        assert_eq!(e.counters(MS(0))["dropped"]["in_flight_limit"], 10);
        assert_eq!(drain(&mut e).len(), limit);
        assert!(e.pool.len() <= limit + 1, "buffers are reused");
    }
}
