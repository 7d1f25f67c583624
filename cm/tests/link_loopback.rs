//! The link over real QUIC sockets on loopback: delivery in order both ways, buffering,
//! the blocking facade, a restarted peer, certificates (CA and pinned) and refusal of an
//! uncertified peer.

mod common;

use std::time::Duration;

use common::{certificates, client_config, message, server_config};
use hmw_cm::{BlockingLink, Link, LinkError, LinkRuntime, TrySendError};

const DEADLINE: Duration = Duration::from_secs(20);

async fn pair(dir: &std::path::Path) -> (Link, Link) {
    let certs = certificates(dir);
    let server = Link::start(server_config(&certs)).await.expect("server");
    let client = Link::start(client_config(&certs, server.local_addr().port()))
        .await
        .expect("client");
    (server, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_cross_in_order_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = pair(dir.path()).await;
    let count = 300;
    let run = async {
        let to_server = async {
            for i in 0..count {
                // Both ways of sending: copied, and handed over without copying.
                if i % 2 == 0 {
                    client.send(&message(i)).await.unwrap();
                } else {
                    client.send_bytes(message(i).into()).await.unwrap();
                }
            }
        };
        let to_client = async {
            for i in 0..count {
                server.send(&message(i + 1_000)).await.unwrap();
            }
        };
        let at_server = async {
            for i in 0..count {
                assert_eq!(server.recv().await.unwrap(), message(i), "message {i}");
            }
        };
        let at_client = async {
            for i in 0..count {
                assert_eq!(client.recv().await.unwrap(), message(i + 1_000));
            }
        };
        tokio::join!(to_server, to_client, at_server, at_client);
        client.flush().await.unwrap();
        server.flush().await.unwrap();
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    let stats = client.stats();
    assert_eq!(stats.messages_sent, count as u64);
    assert_eq!(stats.messages_received, count as u64);
    assert_eq!(stats.connections_open, 2);
    assert_eq!(stats.send_buffer.used, 0);
    // Honest traffic never looks like a protocol violation (a replay, say) on either side.
    assert_eq!(stats.protocol_errors, 0, "{stats:?}");
    assert_eq!(server.stats().protocol_errors, 0, "{:?}", server.stats());
    // A deliberate close reaches the peer, which ends its receive side cleanly.
    client.close().await;
    let end = tokio::time::timeout(DEADLINE, server.recv())
        .await
        .expect("in time");
    assert!(matches!(end, Err(LinkError::PeerClosed)), "{end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_buffer_fills_without_peer_and_drains_when_it_comes() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    // A port nobody listens on yet: reserve one by starting and stopping a server.
    let probe = Link::start(server_config(&certs)).await.unwrap();
    let port = probe.local_addr().port();
    probe.close().await;
    drop(probe);
    let client = Link::start(client_config(&certs, port)).await.unwrap();
    let chunk = vec![7u8; 100_000];
    let mut sent = 0;
    loop {
        match client.try_send(&chunk) {
            Ok(()) => sent += 1,
            Err(TrySendError::Full { needed, free }) => {
                assert_eq!(needed, 100_004);
                assert!(free < needed);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let fill = client.send_buffer();
    assert_eq!(fill.used, sent * 100_004);
    assert!(fill.fill() > 0.98, "{fill:?}");
    assert!(client.disconnected_for().is_some(), "never connected yet");
    let no_room = tokio::time::timeout(Duration::from_millis(200), client.wait_for_space(200_000));
    assert!(
        no_room.await.is_err(),
        "no room for another message while nobody drains"
    );
    let too_big = vec![0u8; client.max_message() + 1];
    assert!(matches!(
        client.try_send(&too_big),
        Err(TrySendError::Link(LinkError::MessageTooLarge { .. }))
    ));
    // The peer arrives late; everything buffered is delivered.
    let mut config = server_config(&certs);
    config.port = port;
    let server = Link::start(config).await.unwrap();
    let run = async {
        for _ in 0..sent {
            assert_eq!(server.recv().await.unwrap(), chunk);
        }
        client.flush().await.unwrap();
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    assert_eq!(client.send_buffer().used, 0);
    client.wait_for_space(200_000).await.unwrap();
    assert_eq!(client.disconnected_for(), None);
}

#[test]
fn blocking_facade_serves_plain_threads() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let server = BlockingLink::start(server_config(&certs)).unwrap();
    let client = BlockingLink::start(client_config(&certs, server.local_addr().port())).unwrap();
    client.wait_connected(DEADLINE).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..100 {
                client.send(&message(i)).unwrap();
            }
            client.flush(DEADLINE).unwrap();
        });
        s.spawn(|| {
            for i in 0..100 {
                let m = server
                    .recv_timeout(DEADLINE)
                    .unwrap()
                    .expect("message in time");
                assert_eq!(m, message(i));
            }
        });
    });
    assert_eq!(
        server.recv_timeout(Duration::from_millis(100)).unwrap(),
        None
    );
    assert_eq!(server.stats().messages_received, 100);
}

/// Two links on one runtime (as the CMs of a process serving many links): they connect and
/// carry messages, and the runtime outlives the first link closed, for the other.
#[test]
fn links_sharing_a_runtime_work_and_outlive_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let runtime = LinkRuntime::new(2).unwrap();
    let server = BlockingLink::start_on(server_config(&certs), &runtime).unwrap();
    let client =
        BlockingLink::start_on(client_config(&certs, server.local_addr().port()), &runtime)
            .unwrap();
    drop(runtime);
    client.wait_connected(DEADLINE).unwrap();
    client.send(&message(1)).unwrap();
    let received = server.recv_timeout(DEADLINE).unwrap().map(|m| m.to_vec());
    assert_eq!(received, Some(message(1)));
    drop(client);
    server.send(&message(2)).unwrap();
    assert_eq!(server.stats().messages_received, 1);
}

/// A server given by name: the client resolves it at each attempt from an explicitly
/// dual-stack socket (IPv4 only where the system has no IPv6), which reaches the IPv4
/// loopback address the name resolves to. Where the system has IPv6, the server listens on
/// `::`, on both families.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_named_by_a_host_name_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let ipv6 = std::net::UdpSocket::bind("[::]:0").is_ok();
    let mut config = server_config(&certs);
    if ipv6 {
        config.host = "::".into();
    }
    let server = Link::start(config).await.unwrap();
    let mut config = client_config(&certs, server.local_addr().port());
    config.host = "localhost".into();
    let client = Link::start(config).await.unwrap();
    assert_eq!(
        client.local_addr().is_ipv6(),
        ipv6,
        "{}",
        client.local_addr()
    );
    let run = async {
        client.send(b"by name").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"by name");
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
}

/// A server serves at most `max_connections` connections: a client opening more gets the
/// rest refused (counted), and the link works over those admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_servers_maximum_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let mut config = server_config(&certs);
    config.max_connections = Some(2);
    let server = Link::start(config).await.unwrap();
    let mut config = client_config(&certs, server.local_addr().port());
    config.connections = 4;
    let client = Link::start(config).await.unwrap();
    let run = async {
        client.send(b"over the admitted ones").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"over the admitted ones");
        while server.stats().connections_refused < 4 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    let stats = server.stats();
    assert_eq!(stats.connections_open, 2, "{stats:?}");
    assert_eq!(client.stats().connections_open, 2);
    assert_eq!(stats.peer_restarts, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_peer_is_a_new_session() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let server = Link::start(server_config(&certs)).await.unwrap();
    let port = server.local_addr().port();
    let first = Link::start(client_config(&certs, port)).await.unwrap();
    let run = async {
        first.send(b"from the first incarnation").await.unwrap();
        assert_eq!(
            &server.recv().await.unwrap()[..],
            b"from the first incarnation"
        );
        first.flush().await.unwrap();
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    assert_eq!(server.peer_session(), Some(first.session()));
    drop(first);
    // A new process on the same certificate: a new session, not a reconnect.
    let second = Link::start(client_config(&certs, port)).await.unwrap();
    let run = async {
        second.wait_connected().await.unwrap();
        second.send(b"from the second").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"from the second");
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    assert_eq!(server.peer_session(), Some(second.session()));
    assert_eq!(server.stats().peer_restarts, 1);
    assert_eq!(server.stats().messages_received, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_certificates_work_without_a_ca() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let pin = |mut config: hmw_cm::LinkConfig, peer: &str| {
        config.tls.ca = None;
        config.tls.pinned_peer = Some(dir.path().join(format!("{peer}.pem")));
        config
    };
    let server = Link::start(pin(server_config(&certs), "client"))
        .await
        .unwrap();
    let client = Link::start(pin(
        client_config(&certs, server.local_addr().port()),
        "server",
    ))
    .await
    .unwrap();
    let run = async {
        client.send(b"pinned").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"pinned");
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncertified_peer_is_refused_and_delivers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(&dir.path().join("ours"));
    let foreign = certificates(&dir.path().join("foreign"));
    let server = Link::start(server_config(&certs)).await.unwrap();
    let port = server.local_addr().port();
    // Signed by another CA, but trusting ours: the server must refuse it.
    let mut intruder_config = client_config(&foreign, port);
    intruder_config.tls.ca = Some(certs.ca_cert.clone());
    let intruder = Link::start(intruder_config).await.unwrap();
    intruder.try_send(b"should never arrive").unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.stats().connections_refused == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no refusal logged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.try_recv().unwrap(), None);
    let stats = server.stats();
    assert_eq!(stats.connections_established, 0);
    assert_eq!(stats.messages_received, 0);
    assert!(!intruder.is_connected() || intruder.stats().send_buffer.used > 0);
    intruder.close().await;
    // A certified client still gets through afterwards.
    let client = Link::start(client_config(&certs, port)).await.unwrap();
    let run = async {
        client.send(b"welcome").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"welcome");
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
}

/// A peer with a valid certificate that sends garbage or replays a block on one connection:
/// the connection is closed with a logged protocol error, nothing is delivered, and the link
/// keeps serving honest connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_close_the_connection_not_the_link() {
    use bytes::Bytes;
    use hmw_cm::proto::{Block, Frame, Hello};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let server = Link::start(server_config(&certs)).await.unwrap();
    let addr = server.local_addr();
    let tls = hmw_cm::tls::TlsMaterial::load(&client_config(&certs, addr.port()).tls).unwrap();
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let quic_client = quinn::ClientConfig::new(Arc::new(tls.quic_client_config().unwrap()));
    let hello = Frame::Hello(Hello {
        version: hmw_cm::proto::frame::PROTOCOL_VERSION,
        session: 99,
        connection_index: 0,
        max_message: u64::MAX,
        block_size: 65536,
    });
    let garbage: [&[u8]; 3] = [
        &[9, 0, 0, 0, 0],             // unknown frame type
        &[2, 0xff, 0xff, 0xff, 0xff], // data frame announcing 4 GiB
        &[
            3, 0, 0, 0, 18, 0, 0, 0, 0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ], // ack of unsent blocks
    ];
    // A block replayed on the same connection, on another stream of it: the first copy
    // holds part of a message, the second is a replay.
    let block = Frame::Data(Block {
        id: 0,
        offset: 0,
        payload: Bytes::from_static(&[0, 0, 0, 9, b'x']),
    })
    .to_bytes();
    for bad in garbage.into_iter().map(Some).chain([None]) {
        let conn = endpoint
            .connect_with(quic_client.clone(), addr, "server")
            .unwrap()
            .await
            .unwrap();
        let (mut tx, mut rx) = conn.open_bi().await.unwrap();
        tx.write_all(&hello.to_bytes()).await.unwrap();
        let mut reply = [0u8; 31];
        rx.read_exact(&mut reply).await.unwrap();
        match bad {
            Some(bad) => tx.write_all(bad).await.unwrap(),
            None => {
                for _ in 0..2 {
                    let mut data = conn.open_uni().await.unwrap();
                    data.write_all(&block).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        let closed = tokio::time::timeout(DEADLINE, conn.closed())
            .await
            .expect("closed in time");
        match closed {
            quinn::ConnectionError::ApplicationClosed(close) => {
                assert_eq!(close.error_code, 1u32.into(), "{close:?}");
                if bad.is_none() {
                    let reason = String::from_utf8_lossy(&close.reason);
                    assert!(reason.contains("replay of block 0"), "{reason}");
                }
            }
            other => panic!("unexpected end {other}"),
        }
    }
    assert_eq!(server.stats().protocol_errors, 4);
    assert_eq!(server.try_recv().unwrap(), None);
    let client = Link::start(client_config(&certs, addr.port()))
        .await
        .unwrap();
    let run = async {
        client.send(b"still serving").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"still serving");
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
}

/// An idle link stays up on keep-alives alone: with a 1 s inactivity timeout and nothing to
/// send for 3.5 s, no connection is lost on either side, and a message still crosses at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_link_stays_up_on_keepalives() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let mut config = server_config(&certs);
    config.inactivity_timeout_ms = 1_000;
    let server = Link::start(config).await.unwrap();
    let mut config = client_config(&certs, server.local_addr().port());
    config.inactivity_timeout_ms = 1_000;
    let client = Link::start(config).await.unwrap();
    let run = async {
        client.send(b"before").await.unwrap();
        assert_eq!(&server.recv().await.unwrap()[..], b"before");
        client.flush().await.unwrap();
        // Both connections of the client joined on both sides.
        while server.stats().connections_open < 2 || client.stats().connections_open < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    let established = (
        client.stats().connections_established,
        server.stats().connections_established,
    );
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    for (side, stats) in [("client", client.stats()), ("server", server.stats())] {
        assert_eq!(stats.connections_lost, 0, "{side}: {stats:?}");
        assert_eq!(stats.disconnections, 0, "{side}: {stats:?}");
        assert_eq!(stats.connections_open, 2, "{side}: {stats:?}");
        assert!(stats.outages.is_empty(), "{side}: {stats:?}");
    }
    assert_eq!(
        (
            client.stats().connections_established,
            server.stats().connections_established
        ),
        established,
        "no reconnection happened"
    );
    let run = async {
        server.send(b"after the silence").await.unwrap();
        assert_eq!(&client.recv().await.unwrap()[..], b"after the silence");
    };
    tokio::time::timeout(Duration::from_secs(2), run)
        .await
        .expect("delivered without reconnecting");
    assert_eq!(client.stats().connections_lost, 0);
}

/// Connections dying under load, closed by either side mid-transfer (as quinn does on an
/// internal error such as "too many gaps in stream buffer"): each costs a reconnection and a
/// resend, never a message nor the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_failing_mid_transfer_cost_a_reconnection_and_a_resend() {
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = pair(dir.path()).await;
    let count = 400;
    let run = async {
        let send = async {
            for i in 0..count {
                client.send(&message(i)).await.unwrap();
            }
            client.flush().await.unwrap();
        };
        let receive = async {
            for i in 0..count {
                assert_eq!(server.recv().await.unwrap(), message(i), "message {i}");
                if i == 100 {
                    client.reset_connections();
                }
                if i == 250 {
                    server.reset_connections();
                }
            }
        };
        tokio::join!(send, receive);
    };
    tokio::time::timeout(DEADLINE, run).await.expect("in time");
    let (c, s) = (client.stats(), server.stats());
    assert_eq!(s.messages_received, count as u64);
    assert_eq!(c.send_buffer.used, 0);
    assert!(c.reconnections >= 2, "{c:?}");
    assert!(c.connections_established >= 4, "{c:?}");
    assert_eq!(c.protocol_errors + s.protocol_errors, 0, "{c:?} {s:?}");
    assert_eq!(s.peer_restarts, 0);
}
