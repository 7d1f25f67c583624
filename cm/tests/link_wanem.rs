//! The link through the user-space WAN emulator: delay, loss, a rate limit and a 3 s outage
//! in the middle of a two-way transfer. Every message arrives exactly once and in order, the
//! outage and the lost packets show in the statistics, and nothing restarts.

mod common;

use std::time::Duration;

use common::{certificates, client_config, server_config};
use hmw_cm::wanem::{DirectionConfig, Outage, Wanem, WanemConfig};
use hmw_cm::Link;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_costs_silence_and_nothing_else() {
    if std::env::var_os("HMW_CM_TEST_VERBOSE").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("hmw_cm=debug")
            .try_init();
    }
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let server = Link::start(server_config(&certs)).await.unwrap();
    let mut wan = WanemConfig::symmetric(
        "127.0.0.1:0".parse().unwrap(),
        server.local_addr(),
        DirectionConfig {
            rate_mbit: 50.0,
            delay_ms: 10.0,
            jitter_ms: 2.0,
            loss: 0.01,
            ..DirectionConfig::default()
        },
    );
    wan.outages = vec![Outage {
        start_s: 1.5,
        end_s: 4.5,
    }];
    let wanem = Wanem::start(wan).await.unwrap();
    let client = Link::start(client_config(&certs, wanem.local_addr().port()))
        .await
        .unwrap();
    let server_session = server.session();
    let client_session = client.session();

    // Each side sends for about 6 s at about 400 kB/s, across the outage.
    let count = 600;
    let pace = Duration::from_millis(10);
    let run = async {
        let to_server = async {
            for i in 0..count {
                client.send(&small_message(i)).await.unwrap();
                tokio::time::sleep(pace).await;
            }
            client.flush().await.unwrap();
        };
        let to_client = async {
            for i in 0..count {
                server.send(&small_message(i + 7)).await.unwrap();
                tokio::time::sleep(pace).await;
            }
            server.flush().await.unwrap();
        };
        let at_server = async {
            for i in 0..count {
                assert_eq!(
                    server.recv().await.unwrap(),
                    small_message(i),
                    "message {i}"
                );
            }
        };
        let at_client = async {
            for i in 0..count {
                assert_eq!(
                    client.recv().await.unwrap(),
                    small_message(i + 7),
                    "message {i}"
                );
            }
        };
        tokio::join!(to_server, to_client, at_server, at_client);
    };
    // Packets lost only ever add up, although the connections they were lost on die in the
    // outage.
    let mut lost_seen = (0, 0);
    let monitor = async {
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let lost = (client.stats().packets_lost, server.stats().packets_lost);
            assert!(
                lost.0 >= lost_seen.0 && lost.1 >= lost_seen.1,
                "{lost:?} after {lost_seen:?}"
            );
            lost_seen = lost;
            if std::env::var_os("HMW_CM_TEST_VERBOSE").is_some() {
                eprintln!(
                    "t={:?}\nclient {:?}\nserver {:?}\n{}",
                    wanem.elapsed(),
                    client.stats(),
                    server.stats(),
                    wanem.counters()
                );
            }
        }
    };
    let run = async {
        tokio::select! {
            () = run => {},
            () = monitor => {},
        }
    };
    tokio::time::timeout(Duration::from_secs(25), run)
        .await
        .expect("transfer completes");
    assert!(
        wanem.elapsed() > Duration::from_millis(4500),
        "the outage happened during the run"
    );
    let (c, s) = (client.stats(), server.stats());
    let counters = wanem.counters();
    assert!(counters.client_to_server.dropped_outage > 0, "{counters}");
    assert!(counters.client_to_server.dropped_loss > 0, "{counters}");
    for stats in [&c, &s] {
        assert!(stats.disconnections >= 1, "{stats:?}");
        assert!(stats.time_disconnected_s > 1.5, "{stats:?}");
        assert_eq!(stats.peer_restarts, 0);
        // Resends after the outage are duplicates, never taken for replays.
        assert_eq!(stats.protocol_errors, 0, "{stats:?}");
        assert_eq!(stats.messages_received, count as u64);
        assert_eq!(stats.send_buffer.used, 0);
        assert!(stats.last_reconnect_latency_s.is_some());
    }
    for stats in [&c, &s] {
        // Quinn saw the random loss, on connections that died in the outage too.
        assert!(stats.packets_lost > 0, "{stats:?}");
        assert!(stats.packets_lost >= lost_seen.0.min(lost_seen.1));
        // The outage, in wall-clock time: noticed after the network failed, over once a
        // connection joined again.
        let outage = stats.outages.first().expect("an outage recorded");
        let end = outage.end_unix_s.expect("the outage ended");
        assert!(end > outage.start_unix_s, "{outage:?}");
        assert!(end - outage.start_unix_s < 4.0, "{outage:?}");
        assert!(stats.outages.iter().all(|o| o.end_unix_s.is_some()));
        assert_eq!(stats.outages.len() as u64, stats.disconnections);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(now - outage.start_unix_s < 30.0 && now > end, "{outage:?}");
    }
    assert_eq!(client.session(), client_session);
    assert_eq!(server.session(), server_session);
    assert!(
        c.connections_established > 2,
        "connections were re-established"
    );
}

/// Message number `i`: up to 8 kB, content derived from `i`.
fn small_message(i: usize) -> Vec<u8> {
    let len = (i * 131) % 8000;
    let mut m = (i as u64).to_be_bytes().to_vec();
    m.extend((0..len).map(|j| (i + j) as u8));
    m
}

/// A lossy path and more to send than one connection carries: the client adds connections
/// while they raise the goodput (the statistics show when and why), within its maximum, and
/// every message still arrives once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_added_on_a_lossy_path_while_they_pay() {
    let dir = tempfile::tempdir().unwrap();
    let certs = certificates(dir.path());
    let mut server_cfg = server_config(&certs);
    server_cfg.congestion = hmw_cm::Congestion::Cubic;
    let server = Link::start(server_cfg).await.unwrap();
    let wanem = Wanem::start(WanemConfig::symmetric(
        "127.0.0.1:0".parse().unwrap(),
        server.local_addr(),
        DirectionConfig {
            rate_mbit: 40.0,
            delay_ms: 20.0,
            loss: 0.02,
            ..DirectionConfig::default()
        },
    ))
    .await
    .unwrap();
    let mut client_cfg = client_config(&certs, wanem.local_addr().port());
    // Cubic under 2 % loss: each connection is held to a fraction of the 40 Mbit/s.
    client_cfg.congestion = hmw_cm::Congestion::Cubic;
    client_cfg.connections = 1;
    client_cfg.connections_max = Some(4);
    let client = Link::start(client_cfg).await.unwrap();
    let message = vec![7u8; 64 << 10];
    let sent = std::sync::atomic::AtomicUsize::new(0);
    let send = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(7);
        while tokio::time::Instant::now() < deadline {
            client.send(&message).await.unwrap();
            sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        client.flush().await.unwrap();
    };
    let received = std::sync::atomic::AtomicUsize::new(0);
    let receive = async {
        loop {
            let got = server.recv().await.unwrap();
            assert_eq!(got.len(), message.len());
            received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    };
    tokio::time::timeout(Duration::from_secs(40), async {
        tokio::select! {
            () = send => {},
            () = receive => {},
        }
        // Flushed: everything sent is in the server's buffer.
        while received.load(std::sync::atomic::Ordering::Relaxed)
            < sent.load(std::sync::atomic::Ordering::Relaxed)
        {
            server.recv().await.unwrap();
            received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    })
    .await
    .expect("in time");
    let stats = client.stats();
    assert_eq!(received.into_inner(), sent.into_inner());
    let counts: Vec<(usize, &str)> = stats
        .connection_counts
        .iter()
        .map(|c| (c.count, c.reason))
        .collect();
    assert_eq!(counts[0], (1, "start"), "{counts:?}");
    assert!(
        counts.iter().any(|&(n, reason)| n > 1 && reason == "probe"),
        "{counts:?}"
    );
    assert!(
        counts.iter().all(|&(n, _)| (1..=4).contains(&n)),
        "{counts:?}"
    );
    assert!(stats.connections_established >= 2, "{stats:?}");
    assert_eq!(stats.protocol_errors, 0, "{stats:?}");
}
