//! The control socket: a Unix stream socket; each request is one line of JSON, each reply
//! one line of JSON (`{"ok":true,...}` or `{"ok":false,"error":"..."}`).
//!
//! Requests (`cmd`):
//! - `{"cmd":"start"}`: the start signal; the configured outages count from now. Twice is an
//!   error.
//! - `{"cmd":"set","cluster":"spain","direction":"to_cluster"|"from_cluster"|"both",
//!   "rate_mbit":X,"delay_ms":Y,"jitter_ms":J,"loss":L}` (at least one of the last four):
//!   changes a link's conditions now, validated like the configuration.
//! - `{"cmd":"outage","cluster":"spain","seconds":S}`: both directions down from now for S s.
//! - `{"cmd":"counters"}`: `{"ok":true,"elapsed_s":..,"uptime_s":..,"started":bool,
//!   "clusters":{"spain":{"to_cluster":{packets_in,bytes_in,packets_out,bytes_out,
//!   dropped_loss,dropped_queue,dropped_outage},"from_cluster":{..}},..},"dropped":{..},
//!   "in_flight":N,"write_errors":N}`. `elapsed_s` counts from the start signal (0 before
//!   it), `uptime_s` from when the router became ready.
//! - `{"cmd":"stop"}`: tears everything down, replies `{"ok":true}`, exits 0.
//!
//! Each connection has its own thread that reads requests and hands them to the packet
//! thread, which owns the pipes, through a channel and an eventfd that wakes its poll; the
//! packet thread writes the reply, then the connection reads its next request, so replies come
//! in the order of the requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

/// Longest request line, bytes.
pub const MAX_REQUEST: u64 = 64 * 1024;

/// A request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// The start signal.
    Start {},
    /// Change a link's conditions.
    Set(SetRequest),
    /// Both directions of a link down for a while, from now.
    Outage {
        /// Cluster name.
        cluster: String,
        /// How long, seconds.
        seconds: f64,
    },
    /// Counters of every pipe.
    Counters {},
    /// Tear down and exit.
    Stop {},
}

/// Which direction of a cluster's access link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Towards the cluster.
    ToCluster,
    /// From the cluster towards the others.
    FromCluster,
    /// Both.
    Both,
}

/// The arguments of `set`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetRequest {
    /// Cluster name.
    pub cluster: String,
    /// Which direction(s).
    pub direction: Direction,
    /// New rate, Mbit/s (0 = unlimited).
    #[serde(default)]
    pub rate_mbit: Option<f64>,
    /// New one-way delay, ms.
    #[serde(default)]
    pub delay_ms: Option<f64>,
    /// New jitter, ms.
    #[serde(default)]
    pub jitter_ms: Option<f64>,
    /// New loss probability.
    #[serde(default)]
    pub loss: Option<f64>,
}

/// Parses one request line; the error is the reply to send.
pub fn parse_request(line: &str) -> Result<Request, Value> {
    serde_json::from_str(line)
        .map_err(|e| json!({ "ok": false, "error": format!("bad request: {e}") }))
}

/// A request handed to the packet thread, which writes the reply to `stream` and then
/// signals `done`.
#[derive(Debug)]
pub struct Message {
    /// The request.
    pub request: Request,
    /// Where to write the reply (a clone of the connection).
    pub stream: UnixStream,
    /// Signalled once the reply is written.
    pub done: mpsc::SyncSender<()>,
}

impl Message {
    /// Writes `reply` as one line and lets the connection read its next request.
    pub fn reply(self, reply: &Value) {
        let _ = write_line(&self.stream, reply);
        let _ = self.done.send(());
    }
}

/// Writes one JSON line (with a timeout, so that a client that does not read cannot block
/// the packet thread for long).
pub fn write_line(mut stream: &UnixStream, value: &Value) -> std::io::Result<()> {
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    let mut line = value.to_string();
    line.push('\n');
    stream.write_all(line.as_bytes())
}

/// Wakes the packet thread's poll (an eventfd).
#[derive(Debug, Clone)]
pub struct Waker(pub Arc<OwnedFd>);

impl Waker {
    /// Adds one to the eventfd.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own.
        unsafe {
            libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }
}

/// Accepts connections forever (a thread), one thread per connection.
pub fn serve(listener: UnixListener, to_engine: mpsc::Sender<Message>, waker: Waker) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let to_engine = to_engine.clone();
        let waker = waker.clone();
        let _ = std::thread::Builder::new()
            .name("control".into())
            .spawn(move || connection(stream, &to_engine, &waker));
    }
}

fn connection(stream: UnixStream, to_engine: &mpsc::Sender<Message>, waker: &Waker) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.by_ref().take(MAX_REQUEST).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with('\n') && line.len() as u64 >= MAX_REQUEST {
            let _ = write_line(
                &stream,
                &json!({ "ok": false, "error": format!("request longer than {MAX_REQUEST} bytes") }),
            );
            return;
        }
        if line.trim().is_empty() {
            continue;
        }
        let request = match parse_request(line.trim()) {
            Ok(request) => request,
            Err(reply) => {
                if write_line(&stream, &reply).is_err() {
                    return;
                }
                continue;
            }
        };
        let Ok(reply_to) = stream.try_clone() else {
            return;
        };
        let (done, wait) = mpsc::sync_channel(1);
        let message = Message {
            request,
            stream: reply_to,
            done,
        };
        if to_engine.send(message).is_err() {
            return;
        }
        waker.wake();
        if wait.recv().is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        assert_eq!(parse_request(r#"{"cmd":"start"}"#), Ok(Request::Start {}));
        assert_eq!(parse_request(r#"{"cmd":"stop"}"#), Ok(Request::Stop {}));
        assert_eq!(
            parse_request(r#"{"cmd":"counters"}"#),
            Ok(Request::Counters {})
        );
        assert_eq!(
            parse_request(r#"{"cmd":"outage","cluster":"spain","seconds":2.5}"#),
            Ok(Request::Outage {
                cluster: "spain".into(),
                seconds: 2.5
            })
        );
        assert_eq!(
            parse_request(
                r#"{"cmd":"set","cluster":"spain","direction":"both","rate_mbit":8,"loss":0.1}"#
            ),
            Ok(Request::Set(SetRequest {
                cluster: "spain".into(),
                direction: Direction::Both,
                rate_mbit: Some(8.0),
                delay_ms: None,
                jitter_ms: None,
                loss: Some(0.1),
            }))
        );
    }

    #[test]
    fn bad_requests_say_why() {
        let error = |line: &str| {
            parse_request(line).unwrap_err()["error"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert!(error(r#"{"cmd":"reboot"}"#).contains("reboot"));
        assert!(error(r#"{"cmd":"outage","cluster":"spain"}"#).contains("seconds"));
        assert!(
            error(r#"{"cmd":"set","cluster":"spain","direction":"up","rate_mbit":1}"#)
                .contains("up")
        );
        assert!(
            error(r#"{"cmd":"set","cluster":"spain","direction":"both","rate":1}"#)
                .contains("rate")
        );
        assert!(error(r#"{"cmd":"start","now":true}"#).contains("now"));
        assert!(error(r#"{"cluster":"spain"}"#).contains("cmd"));
        assert!(error("not json").contains("bad request"));
        assert!(
            error(r#"{"cmd":"set","cluster":"spain","direction":"both","rate_mbit":"x"}"#)
                .contains("bad request")
        );
    }
}
