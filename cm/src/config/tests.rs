//! Tests of the link's configuration: parsing, defaults, checks and the path hint.

use super::*;

const MINIMAL: &str = r#"
role = "client"
host = "127.0.0.1"
port = 7000
[tls]
cert = "a.pem"
key = "a.key.pem"
ca = "ca.pem"
"#;

#[test]
fn minimal_file_gets_defaults_and_sizes_accept_units() {
    let c = LinkConfig::from_toml_str(MINIMAL).unwrap();
    assert_eq!(c.connections, 2);
    assert_eq!((c.connections_min(), c.connections_max()), (1, 16));
    assert_eq!(c.max_connections(), 64);
    assert_eq!(c.max_message(), 16 << 20);
    assert_eq!((c.window, c.max_window), (2 << 20, 32 << 20));
    assert_eq!(c.max_memory(), 256 << 20);
    assert_eq!(c.congestion, Congestion::Bbr);
    let text = MINIMAL.replace(
        "port = 7000",
        "port = 7000\nsend_memory = \"200MiB\"\nrecv_memory = \"200MiB\"\nconnections = 20",
    );
    let c = LinkConfig::from_toml_str(&text).unwrap();
    assert_eq!(c.max_memory(), (400 << 20) + 20 * (2 << 20));
    assert_eq!((c.connections_max(), c.max_connections()), (20, 80));
    let text = MINIMAL.replace(
        "port = 7000",
        "port = 7000\nsend_memory = \"8MiB\"\nblock_size = 65536",
    );
    let c = LinkConfig::from_toml_str(&text).unwrap();
    assert_eq!((c.send_memory, c.block_size), (8 << 20, 65536));
}

#[test]
fn invalid_values_name_their_key() {
    let cases = [
        ("port = 7000", "port = 7000\nconnections = 0", "connections"),
        (
            "port = 7000",
            "port = 7000\nblock_size = \"32MiB\"",
            "block_size",
        ),
        (
            "port = 7000",
            "port = 7000\nrecv_memory = 1000",
            "recv_memory",
        ),
        (
            "port = 7000",
            "port = 7000\nmax_message = \"1GiB\"",
            "max_message",
        ),
        ("port = 7000", "port = 0", "port"),
        (
            "port = 7000",
            "port = 7000\ninactivity_timeout_ms = 50",
            "inactivity_timeout_ms",
        ),
        ("ca = \"ca.pem\"", "", "tls"),
        (
            "port = 7000",
            "port = 7000\nmax_connections = 0",
            "max_connections",
        ),
        (
            "port = 7000",
            "port = 7000\nconnections_min = 5",
            "connections_min",
        ),
        (
            "port = 7000",
            "port = 7000\nconnections_max = 1",
            "connections_max",
        ),
        (
            "port = 7000",
            "port = 7000\nconnections_max = 65",
            "connections_max",
        ),
        (
            "port = 7000",
            "port = 7000\nmax_window = \"1MiB\"",
            "max_window",
        ),
        (
            "port = 7000",
            "port = 7000\nmax_memory = \"64MiB\"",
            "max_memory",
        ),
    ];
    for (from, to, key) in cases {
        let err = LinkConfig::from_toml_str(&MINIMAL.replace(from, to)).unwrap_err();
        assert!(
            err.to_string().contains(&format!("`{key}`")),
            "{key}: {err}"
        );
    }
}

#[test]
fn unknown_keys_and_bad_units_are_parse_errors_with_a_line() {
    let err =
        LinkConfig::from_toml_str(&MINIMAL.replace("port = 7000", "port = 7000\nconections = 2"))
            .unwrap_err();
    assert!(err.to_string().contains("conections"), "{err}");
    let err = LinkConfig::from_toml_str(
        &MINIMAL.replace("port = 7000", "port = 7000\nsend_memory = \"3 parsecs\""),
    )
    .unwrap_err();
    assert!(err.to_string().contains("line"), "{err}");
}

#[test]
fn sizes_other_than_whole_bytes_or_units_name_the_key_and_the_forms() {
    for key in [
        "block_size",
        "send_memory",
        "recv_memory",
        "max_message",
        "window",
        "max_window",
        "max_memory",
    ] {
        for value in ["-1", "1.5", "true", "\"-3KiB\""] {
            let text = MINIMAL.replace("port = 7000", &format!("port = 7000\n{key} = {value}"));
            let err = LinkConfig::from_toml_str(&text).unwrap_err().to_string();
            assert!(err.contains(&format!("`{key}`")), "{key} = {value}: {err}");
            assert!(!err.contains("untagged"), "{key} = {value}: {err}");
            assert!(err.contains("line 5"), "{key} = {value}: {err}");
            if value != "\"-3KiB\"" {
                assert!(
                    err.contains("whole number of bytes"),
                    "{key} = {value}: {err}"
                );
                assert!(err.contains("\"64KiB\""), "{key} = {value}: {err}");
            }
        }
    }
}

#[test]
fn errors_read_from_a_file_name_it_and_the_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("link.toml");
    std::fs::write(
        &path,
        MINIMAL.replace("port = 7000", "port = 7000\nstreams = 2\nconnections = 99"),
    )
    .unwrap();
    let err = LinkConfig::from_file(&path).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("{}, line 6: `connections`", path.display())),
        "{text}"
    );
    // Each message is whole: no separate source for a printer of the chain to repeat.
    use std::error::Error as _;
    assert!(err.source().is_none());
    std::fs::write(&path, MINIMAL.replace("port = 7000", "port = \"x\"")).unwrap();
    let err = LinkConfig::from_file(&path).unwrap_err();
    assert!(err.source().is_none());
    assert_eq!(err.to_string().matches("line 4").count(), 1, "{err}");
    let err = LinkConfig::from_file(&dir.path().join("missing.toml")).unwrap_err();
    assert!(err.source().is_none());
    assert!(err.to_string().contains("missing.toml"), "{err}");
}

#[test]
fn the_expected_peer_is_a_dns_name_and_names_the_server_on_a_client() {
    let with = |extra: &str| MINIMAL.replace("port = 7000", &format!("port = 7000\n{extra}"));
    let c = LinkConfig::from_toml_str(&with("peer = \"cm-main\"")).unwrap();
    assert_eq!(c.server_name(), "cm-main");
    let c =
        LinkConfig::from_toml_str(&with("peer = \"cm-main\"\nserver_name = \"cm-main\"")).unwrap();
    assert_eq!(c.server_name(), "cm-main");
    assert_eq!(
        LinkConfig::from_toml_str(MINIMAL).unwrap().server_name(),
        "127.0.0.1"
    );
    for bad in [
        "peer = \"10.0.0.1\"",
        "peer = \"not a name\"",
        "peer = \"cm-a\"\nserver_name = \"cm-b\"",
    ] {
        let err = LinkConfig::from_toml_str(&with(bad))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`peer`"), "{bad}: {err}");
    }
    let server = with("peer = \"cm-ext\"").replace("role = \"client\"", "role = \"server\"");
    assert_eq!(
        LinkConfig::from_toml_str(&server).unwrap().peer.as_deref(),
        Some("cm-ext")
    );
}

#[test]
fn absolute_names_lose_their_trailing_dot() {
    let with = |extra: &str| MINIMAL.replace("port = 7000", &format!("port = 7000\n{extra}"));
    let c = LinkConfig::from_toml_str(&with("peer = \"cm-main.\"")).unwrap();
    assert_eq!(c.server_name(), "cm-main");
    let c =
        LinkConfig::from_toml_str(&with("peer = \"cm-main\"\nserver_name = \"CM-Main.\"")).unwrap();
    assert_eq!(c.server_name(), "CM-Main");
    let c = LinkConfig::from_toml_str(&MINIMAL.replace("127.0.0.1", "node.example.org.")).unwrap();
    assert_eq!(c.server_name(), "node.example.org");
}

#[test]
fn a_server_name_on_a_server_is_warned_about() {
    let server = MINIMAL.replace("role = \"client\"", "role = \"server\"");
    let with = |extra: &str| server.replace("port = 7000", &format!("port = 7000\n{extra}"));
    assert!(LinkConfig::from_toml_str(&server)
        .unwrap()
        .warnings()
        .is_empty());
    let warnings = LinkConfig::from_toml_str(&with("server_name = \"cm-ext\""))
        .unwrap()
        .warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("checks no client name"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("set `peer`"), "{warnings:?}");
    let warnings = LinkConfig::from_toml_str(&with("server_name = \"cm-ext\"\npeer = \"cm-ext\""))
        .unwrap()
        .warnings();
    assert!(
        warnings[0].contains("no effect on a server"),
        "{warnings:?}"
    );
    let warnings = LinkConfig::from_toml_str(&with("connections_min = 2"))
        .unwrap()
        .warnings();
    assert!(warnings[0].contains("`connections_min`"), "{warnings:?}");
    // A client's server_name is what it is for.
    assert!(LinkConfig::from_toml_str(
        &MINIMAL.replace("port = 7000", "port = 7000\nserver_name = \"cm-main\"")
    )
    .unwrap()
    .warnings()
    .is_empty());
}
