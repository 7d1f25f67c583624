//! Link behaviour that shows in its log as well as in its statistics: a certified but
//! unexpected peer refused with its address and names, and a server name that does not
//! resolve retried with backoff. The log of this test binary is captured in memory.

mod common;

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use common::{certificates_for, client_config_as, server_config_as};
use hmw_cm::{Link, LinkError};

const DEADLINE: Duration = Duration::from_secs(20);

static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Captured;

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything logged so far by any test of this binary.
fn log() -> String {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        tracing_subscriber::fmt()
            .with_env_filter("hmw_cm=debug")
            .with_ansi(false)
            .with_writer(|| Captured)
            .init();
    });
    String::from_utf8_lossy(&LOG.lock().unwrap()).into_owned()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client whose certificate the CA signed but that is not the server's expected peer is
/// refused in the handshake (logged with its address and the names it presented), delivers
/// nothing and is no peer restart; the expected client then gets through. A client that
/// expects another server name refuses the server on its side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certified_but_unexpected_peer_is_refused() {
    log();
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates_for(dir.path(), &["server", "client", "cm-other"]);
    let mut config = server_config_as(&certs, "server");
    config.peer = Some("client".into());
    let server = Link::start(config).await.unwrap();
    let port = server.local_addr().port();

    let intruder = Link::start(client_config_as(&certs, "cm-other", port))
        .await
        .unwrap();
    intruder.try_send(b"from the wrong CM").unwrap();
    wait_until("the server refuses the other CM", || {
        server.stats().connections_refused >= 2
    })
    .await;
    intruder.close().await;
    let stats = server.stats();
    assert_eq!(stats.connections_established, 0, "{stats:?}");
    assert_eq!(stats.peer_restarts, 0, "{stats:?}");
    assert_eq!(server.try_recv().unwrap(), None);
    let refusal = log()
        .lines()
        .find(|l| l.contains("refused connection from 127.0.0.1:") && l.contains("cm-other"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no refusal with the address and names in:\n{}", log()));
    assert!(
        refusal.contains("do not include the expected peer \"client\""),
        "{refusal}"
    );

    // A client expecting another server refuses the (certified) server on its side.
    let mut config = client_config_as(&certs, "client", port);
    config.server_name = Some("cm-other".into());
    let confused = Link::start(config).await.unwrap();
    confused.try_send(b"to the wrong server").unwrap();
    wait_until("the client refuses the server", || {
        confused.stats().connections_refused >= 1
    })
    .await;
    assert!(!confused.is_connected());
    confused.close().await;
    assert!(log().contains("refused server 127.0.0.1:"), "{}", log());
    assert_eq!(server.stats().connections_established, 0);

    let client = Link::start(client_config_as(&certs, "client", port))
        .await
        .unwrap();
    let run = async {
        client.send(b"the expected peer").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"the expected peer");
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    assert_eq!(server.stats().peer_restarts, 0);
    assert_eq!(server.stats().messages_received, 1);
}

/// A client whose server name does not resolve starts anyway, keeps its messages, and keeps
/// trying with backoff, logging each failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unresolvable_server_name_is_retried_with_backoff() {
    log();
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates_for(dir.path(), &["server", "client"]);
    let mut config = client_config_as(&certs, "client", 7000);
    config.host = "hmw-cm-test-nowhere.invalid".into();
    config.server_name = Some("server".into());
    config.reconnect_initial_ms = 100;
    config.reconnect_max_ms = 400;
    let client = Link::start(config).await.expect("starts without resolving");
    client.try_send(b"kept until the name resolves").unwrap();
    // Each failure is a warning (from the first connection slot; the others repeat it at
    // debug level).
    let failures = || {
        log()
            .lines()
            .filter(|l| {
                l.contains("WARN")
                    && l.contains("cannot resolve the server `hmw-cm-test-nowhere.invalid`")
            })
            .count()
    };
    wait_until("several resolution attempts", || failures() >= 4).await;
    // 100, 200, 400, 400 ms apart: at least 0.7 s for four failures.
    assert!(client.stats().elapsed_s >= 0.7, "{:?}", client.stats());
    assert!(client.disconnected_for().is_some());
    assert_eq!(client.send_buffer().used, 4 + 28);
    client.close().await;
    assert!(matches!(client.try_recv(), Err(LinkError::Closed)));
}
