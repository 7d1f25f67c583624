//! The programs as a user runs them, each in its own process: `hmw-cm keygen`, `hmw-cm check`,
//! `hmw-wanem` from flags, and two `hmw-cm pipe` ends talking through it. Every process is
//! killed by PID when the test ends, whatever happens.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child by PID when dropped.
struct Killed(Option<Child>);

impl Killed {
    fn spawn(command: &mut Command) -> Self {
        Self(Some(command.spawn().expect("spawn")))
    }

    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("running")
    }

    /// Waits up to `deadline` for the process to exit and collects its output.
    fn output(mut self, deadline: Duration) -> std::process::Output {
        let start = Instant::now();
        while self.child().try_wait().unwrap().is_none() {
            assert!(start.elapsed() < deadline, "process did not finish in time");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn write_config(path: &Path, role: &str, port: u16, name: &str) {
    let server_name = if role == "client" {
        "server_name = \"cm-a\"\n"
    } else {
        ""
    };
    std::fs::write(
        path,
        format!(
            "role = \"{role}\"\nhost = \"127.0.0.1\"\nport = {port}\n{server_name}\
             connections = 2\ninactivity_timeout_ms = 1000\nsend_memory = \"8MiB\"\nrecv_memory = \"8MiB\"\n\
             [tls]\ncert = \"certs/{name}.pem\"\nkey = \"certs/{name}.key.pem\"\nca = \"certs/ca.pem\"\n"
        ),
    )
    .unwrap();
}

#[test]
fn keygen_check_wanem_and_two_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let cm = env!("CARGO_BIN_EXE_hmw-cm");
    let status = Command::new(cm)
        .args(["keygen", "--out", "certs", "cm-a", "cm-b"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let (server_port, relay_port) = (free_udp_port(), free_udp_port());
    write_config(&dir.path().join("a.toml"), "server", server_port, "cm-a");
    write_config(&dir.path().join("b.toml"), "client", relay_port, "cm-b");
    for config in ["a.toml", "b.toml"] {
        let out = Command::new(cm)
            .args(["check", config])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::write(dir.path().join("bad.toml"), "role = \"server\"\nhost = \"127.0.0.1\"\nport = 1\nconnections = 0\n[tls]\ncert = \"x\"\nkey = \"y\"\nca = \"z\"\n").unwrap();
    let out = Command::new(cm)
        .args(["check", "bad.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`connections`"));

    let _wanem = Killed::spawn(
        Command::new(env!("CARGO_BIN_EXE_hmw-wanem"))
            .args([
                "--listen",
                &format!("127.0.0.1:{relay_port}"),
                "--server",
                &format!("127.0.0.1:{server_port}"),
                "--delay-ms",
                "5",
                "--loss",
                "0.01",
                "--seed",
                "3",
                "--duration-s",
                "20",
            ])
            .stderr(Stdio::null()),
    );
    let mut server = Killed::spawn(
        Command::new(cm)
            .args(["pipe", "a.toml", "--wait-peer"])
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut client = Killed::spawn(
        Command::new(cm)
            .args(["pipe", "b.toml"])
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    server
        .child()
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello from a\n")
        .unwrap();
    {
        let mut input = client.child().stdin.take().unwrap();
        for i in 0..3 {
            writeln!(input, "line {i}").unwrap();
        }
        // Keep the client's input open long enough to receive the server's line.
        std::thread::sleep(Duration::from_secs(2));
    }
    let client_out = client.output(Duration::from_secs(15));
    let server_out = server.output(Duration::from_secs(15));
    assert_eq!(
        String::from_utf8_lossy(&server_out.stdout),
        "line 0\nline 1\nline 2\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&client_out.stdout),
        "hello from a\n"
    );
    assert!(client_out.status.success() && server_out.status.success());
}

/// Odd values are refused with one clear message naming the flag or key (and file), never a
/// panic, and never printed twice.
#[test]
fn odd_values_are_refused_once_with_their_flag_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let wanem = env!("CARGO_BIN_EXE_hmw-wanem");
    for (flag, value) in [
        ("--report-interval-s", "inf"),
        ("--rate-mbit", "1e-30"),
        ("--delay-ms", "-1"),
        ("--duration-s", "nan"),
        ("--burst-bytes", "10"),
    ] {
        let out = Command::new(wanem)
            .args(["--listen", "127.0.0.1:0", "--server", "127.0.0.1:9"])
            .args([flag, value, "--duration-s", "1"])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flag} {value}: {stderr}");
    }
    std::fs::write(
        dir.path().join("wan.toml"),
        "listen = \"127.0.0.1:0\"\nserver = \"127.0.0.1:9\"\n[server_to_client]\nrate_mbit = 1e-30\n",
    )
    .unwrap();
    let out = Command::new(wanem)
        .args(["--config", "wan.toml", "--duration-s", "1"])
        .current_dir(dir.path())
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("wan.toml") && stderr.contains("`server_to_client.rate_mbit` is 1e-30"),
        "{stderr}"
    );
    // Values are checked once, flags and file together, and a value a flag set is reported
    // with the flag: a delay flag below the file's jitter names the delay flag and the file.
    std::fs::write(
        dir.path().join("wan.toml"),
        "listen = \"127.0.0.1:0\"\nserver = \"127.0.0.1:9\"\n[client_to_server]\ndelay_ms = 10\njitter_ms = 5\n",
    )
    .unwrap();
    for (args, flag) in [
        (
            &["--config", "wan.toml", "--delay-ms", "2"][..],
            "--delay-ms",
        ),
        (
            &["--config", "wan.toml", "--jitter-ms", "20"][..],
            "--jitter-ms",
        ),
    ] {
        let out = Command::new(wanem)
            .args(args)
            .args(["--duration-s", "1"])
            .current_dir(dir.path())
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert_eq!(stderr.matches(flag).count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("`client_to_server.jitter_ms` is") && stderr.contains("wan.toml"),
            "{args:?}: {stderr}"
        );
    }

    let cm = env!("CARGO_BIN_EXE_hmw-cm");
    let config = |extra: &str| {
        format!(
            "role = \"client\"\nhost = \"127.0.0.1\"\nport = 7000\n{extra}\n[tls]\ncert = \"a.pem\"\nkey = \"a.key.pem\"\nca = \"ca.pem\"\n"
        )
    };
    for (extra, expected) in [
        ("block_size = -1", "`block_size` = -1 is negative"),
        (
            "send_memory = 1.5",
            "`send_memory` = 1.5 is not a whole number of bytes",
        ),
        ("connections = 99", "link.toml, line 4: `connections` is 99"),
        ("conections = 2", "unknown field `conections`"),
    ] {
        std::fs::write(dir.path().join("link.toml"), config(extra)).unwrap();
        let out = Command::new(cm)
            .args(["check", "link.toml"])
            .current_dir(dir.path())
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra}: {stderr}");
        assert_eq!(stderr.matches(expected).count(), 1, "{extra}: {stderr}");
        assert!(!stderr.contains("Caused by"), "{extra}: {stderr}");
    }
}

/// `hmw-cm check` warns about a host that does not resolve here but accepts the file: the
/// name may resolve only on the cluster, and a client keeps trying.
#[test]
fn check_warns_about_an_unresolvable_host() {
    let dir = tempfile::tempdir().unwrap();
    let cm = env!("CARGO_BIN_EXE_hmw-cm");
    let status = Command::new(cm)
        .args(["keygen", "--out", "certs", "cm-a", "cm-b"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(
        dir.path().join("b.toml"),
        "role = \"client\"\nhost = \"hmw-cm-test-nowhere.invalid\"\nport = 7000\npeer = \"cm-a\"\n\
         [tls]\ncert = \"certs/cm-b.pem\"\nkey = \"certs/cm-b.key.pem\"\nca = \"certs/ca.pem\"\n",
    )
    .unwrap();
    let out = Command::new(cm)
        .args(["check", "b.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning") && stderr.contains("does not resolve"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("server must be `cm-a`"));
}
