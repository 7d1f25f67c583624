//! The link of a communication manager of an hmw run: what its machine-file line and the run
//! configuration's `[cm]` table say, as a [`LinkConfig`]. The CM's driver (crate `hmw`) and
//! the WAN probe of `hmw calibrate`, which measures a link as the CMs will use it, both build
//! it here.

use std::path::Path;

use hmw_core::{
    config::CmConfig,
    machinefile::{Endpoint, MachineFile},
};

use crate::{LinkConfig, PathHint, Role, TlsConfig};

/// A CM's line or `[cm]` table that cannot configure its link: the message names the
/// machine file and the line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CmLineError(String);

/// Build the link configuration of CM `rank` from its machine-file line and `[cm]`.
pub fn link_config(
    machines: &MachineFile,
    rank: usize,
    cm: &CmConfig,
) -> Result<LinkConfig, CmLineError> {
    let line = &machines.ranks[rank];
    let at = format!("{}:{}", machines.path.display(), line.line_no);
    let spec = line
        .cm
        .as_ref()
        .ok_or_else(|| CmLineError(format!("{at}: not a communication manager")))?;
    let name = line.annotations.name.as_deref().ok_or_else(|| {
        CmLineError(format!(
            "{at}: a communication manager needs name=NAME (the name of its certificate)"
        ))
    })?;
    let certs = cm.certs.as_deref().ok_or_else(|| {
        CmLineError(format!(
            "{at}: communication managers need [cm] certs = FOLDER in the configuration \
             (create one with `hmw-cm keygen`)"
        ))
    })?;
    let file = |name: &str| certs.join(name);
    let tls = TlsConfig {
        cert: file(&format!("{name}.pem")),
        key: file(&format!("{name}.key.pem")),
        ca: Some(file("ca.pem")),
        pinned_peer: None,
    };
    let mut config = match &spec.endpoint {
        Endpoint::Server { port } => {
            let bind = line.annotations.bind.as_ref().unwrap_or(&line.host);
            let mut config = LinkConfig::new(Role::Server, bind.clone(), *port, tls);
            // Only the client CM of this name may connect (others of the same CA are refused).
            config.peer = line.annotations.peer.clone();
            config
        }
        Endpoint::Client { host, port } => {
            let mut config = LinkConfig::new(Role::Client, host.clone(), *port, tls);
            config.server_name = line.annotations.peer.clone();
            config
        }
    };
    // The path the plan or the calibration expects: the link starts warm.
    let a = &line.annotations;
    if let (Some(send), Some(recv), Some(rtt_ms)) = (a.path_send, a.path_recv, a.path_rtt_ms) {
        config.path = Some(PathHint {
            send_bytes_per_s: send,
            recv_bytes_per_s: recv,
            rtt_ms,
        });
    }
    // Each `[cm]` key given overrides the link's default.
    macro_rules! overrides {
        ($($key:ident),*) => {$(
            if let Some(value) = cm.$key {
                config.$key = value;
            }
        )*};
    }
    overrides!(
        connections,
        streams,
        block_size,
        send_memory,
        recv_memory,
        inactivity_timeout_ms,
        congestion
    );
    if let Some(max) = cm.max_memory {
        config.max_memory = Some(max);
    }
    config
        .validate()
        .map_err(|e| CmLineError(format!("{at}: {e}")))?;
    for path in [&config.tls.cert, &config.tls.key] {
        if !Path::new(path).exists() {
            return Err(CmLineError(format!(
                "{at}: {} does not exist (run `hmw-cm keygen` for this CM name)",
                path.display()
            )));
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[cm]`'s keys reach the link: the memory cap among them, the link's own default
    /// (256 MiB, or the starting sizes if more) when it is absent; a cap below the starting
    /// sizes (buffers and every connection's first window) is refused with the figures.
    #[test]
    fn the_cm_table_caps_the_links_memory() {
        let certs = tempfile::tempdir().unwrap();
        for file in ["ca.pem", "a-b.pem", "a-b.key.pem"] {
            std::fs::write(certs.path().join(file), "").unwrap();
        }
        let machines = MachineFile::parse(
            Path::new("a.hosts"),
            "m\nw\nc # M 1 7000 name=a-b peer=b-a cluster=b\n",
        )
        .unwrap();
        let mut cm = CmConfig {
            certs: Some(certs.path().to_owned()),
            send_memory: Some(1 << 20),
            recv_memory: Some(1 << 20),
            ..CmConfig::default()
        };
        let default = link_config(&machines, 2, &cm).unwrap();
        assert_eq!(default.max_memory(), 256 << 20);
        cm.max_memory = Some(40 << 20);
        let capped = link_config(&machines, 2, &cm).unwrap();
        assert_eq!(
            (capped.send_memory, capped.max_memory()),
            (1 << 20, 40 << 20)
        );
        cm.max_memory = Some(16 << 20);
        let refused = link_config(&machines, 2, &cm).unwrap_err().to_string();
        assert!(
            refused.contains("a.hosts:3") && refused.contains("max_memory"),
            "{refused}"
        );
    }
}
