//! Small measuring tools run on the hosts by the check script (`hmw-testbed tool ...`): a
//! CPU-bound loop, and a TCP sender and receiver for bulk transfers.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::Context;

/// One round of the CPU kernel: a chain of dependent floating-point operations.
fn kernel(x: f64, rounds: u32) -> f64 {
    let mut v = x;
    for _ in 0..rounds {
        v = v * 1.000_000_1 + 0.000_000_3;
        v = std::hint::black_box(v);
    }
    v
}

/// This process's CPU time, seconds.
fn cpu_time() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Spins for `seconds` of wall time; returns kernel rounds per second of wall time and per
/// second of CPU time (the speed of an unthrottled core, whatever the load).
pub fn cpu_loop(seconds: f64) -> (f64, f64) {
    let cpu0 = cpu_time();
    let start = Instant::now();
    let limit = Duration::from_secs_f64(seconds);
    let mut rounds: u64 = 0;
    let mut v = 1.0;
    while start.elapsed() < limit {
        v = kernel(v, 10_000);
        rounds += 10_000;
    }
    std::hint::black_box(v);
    let wall = start.elapsed().as_secs_f64();
    let cpu = (cpu_time() - cpu0).max(1e-6);
    (rounds as f64 / wall, rounds as f64 / cpu)
}

/// Receives one connection's bytes; returns (bytes, seconds from the first byte to the last,
/// rate in bytes/s over the part after the first `skip` fraction of the time).
pub fn sink(listen: &str, timeout_s: f64) -> anyhow::Result<(u64, f64, f64)> {
    let l = TcpListener::bind(listen).with_context(|| format!("listening on {listen}"))?;
    l.set_nonblocking(true)?;
    let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
    let mut s = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "no connection within {timeout_s} s"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.into()),
        }
    };
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut marks: Vec<(Instant, u64)> = Vec::new();
    let mut total = 0u64;
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        marks.push((Instant::now(), total));
        anyhow::ensure!(
            Instant::now() < deadline,
            "the transfer ran past {timeout_s} s"
        );
    }
    anyhow::ensure!(marks.len() >= 2, "nothing received");
    let (t0, _) = marks[0];
    let (t1, _) = *marks.last().unwrap();
    let span = (t1 - t0).as_secs_f64();
    // Leave out the first third (slow start, the queue filling).
    let from = t0 + Duration::from_secs_f64(span / 3.0);
    let (ts, bs) = *marks.iter().find(|(t, _)| *t >= from).unwrap();
    let rate = (total - bs) as f64 / (t1 - ts).as_secs_f64().max(1e-6);
    Ok((total, span, rate))
}

/// Sends zeros to `to` for `seconds`.
pub fn send(to: &str, seconds: f64) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match TcpStream::connect(to) {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e).with_context(|| format!("connecting to {to}")),
        }
    };
    let buf = vec![0u8; 64 * 1024];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        s.write_all(&buf)?;
        sent += buf.len() as u64;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    let mut rest = [0u8; 16];
    let _ = s.read(&mut rest);
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_and_transfer_on_loopback() {
        assert!(cpu_loop(0.05).0 > 0.0);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        drop(l);
        let a2 = addr.clone();
        let rx = std::thread::spawn(move || sink(&a2, 10.0).unwrap());
        let sent = send(&addr, 0.2).unwrap();
        let (got, _, rate) = rx.join().unwrap();
        assert_eq!(sent, got);
        assert!(rate > 0.0);
    }
}
