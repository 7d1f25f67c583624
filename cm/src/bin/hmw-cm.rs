//! `hmw-cm`: certificates for a deployment (`keygen`), configuration checks (`check`), and a
//! standalone link end (`pipe`) that carries standard input lines to the peer and prints what
//! the peer sends.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use hmw_cm::keygen;
use hmw_cm::{BlockingLink, LinkConfig, LinkError};

#[derive(Parser)]
#[command(
    name = "hmw-cm",
    about = "hmw long-distance service: certificates and a standalone link end"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a CA and one certificate + key per CM into a folder.
    Keygen {
        /// Output folder (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Extra subject alternative names for every CM certificate (host names or IP
        /// addresses peers use to reach it; repeatable).
        #[arg(long = "san", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string()])]
        sans: Vec<String>,
        /// CM names (each becomes NAME.pem and NAME.key.pem, and a DNS name in its certificate).
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Validate a link configuration and load its certificates.
    Check {
        /// Link configuration (TOML).
        config: PathBuf,
    },
    /// Run one link end: each line of standard input is a message to the peer; each message
    /// from the peer is printed as a line. Statistics go to standard error (JSON) at the end.
    Pipe {
        /// Link configuration (TOML).
        config: PathBuf,
        /// Seconds to wait for outstanding messages to be acknowledged at end of input.
        #[arg(long, default_value_t = 30.0)]
        flush_timeout_s: f64,
        /// After the end of input, keep printing until the peer closes the link.
        #[arg(long)]
        wait_peer: bool,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Keygen { out, sans, names } => {
            let written = keygen::generate(&out, &names, &sans)?;
            println!("CA certificate: {}", written.ca_cert.display());
            println!(
                "CA key (keep it off the clusters): {}",
                written.ca_key.display()
            );
            for cm in written.cms {
                println!("{}: {} {}", cm.name, cm.cert.display(), cm.key.display());
            }
            Ok(())
        }
        Command::Check { config } => {
            let link = LinkConfig::from_file(&config)?;
            hmw_cm::tls::TlsMaterial::load(&link.tls)
                .with_context(|| format!("certificates of {}", config.display()))?;
            for warning in link.warnings() {
                eprintln!("warning: {}: {warning}", config.display());
            }
            // A name that resolves only on the real cluster is fine: a client keeps trying.
            if let Err(e) = link.socket_addr() {
                let consequence = match link.role {
                    hmw_cm::Role::Client => "the client will keep trying to resolve it",
                    hmw_cm::Role::Server => "the server cannot start here",
                };
                eprintln!(
                    "warning: {}: host `{}` does not resolve on this machine ({e}); {consequence}",
                    config.display(),
                    link.host
                );
            }
            let peer = match (link.role, &link.peer) {
                (hmw_cm::Role::Client, _) => format!("server must be `{}`", link.server_name()),
                (hmw_cm::Role::Server, Some(peer)) => format!("client must be `{peer}`"),
                (hmw_cm::Role::Server, None) => "any client the trust accepts".to_string(),
            };
            println!(
                "{}: {:?} {}:{} ({peer}), {} connection(s) x {} stream(s), blocks of {} B, send {} B, receive {} B, max message {} B, inactivity {} ms",
                config.display(),
                link.role,
                link.host,
                link.port,
                link.connections,
                link.streams,
                link.block_size,
                link.send_memory,
                link.recv_memory,
                link.max_message(),
                link.inactivity_timeout_ms
            );
            Ok(())
        }
        Command::Pipe {
            config,
            flush_timeout_s,
            wait_peer,
        } => pipe(&config, Duration::from_secs_f64(flush_timeout_s), wait_peer),
    }
}

fn pipe(config: &std::path::Path, flush_timeout: Duration, wait_peer: bool) -> Result<()> {
    let link = LinkConfig::from_file(config)?;
    let link = BlockingLink::start(link)?;
    eprintln!("hmw-cm: link up on {}", link.local_addr());
    std::thread::scope(|s| {
        let printer = s.spawn(|| -> Result<()> {
            let stdout = std::io::stdout();
            loop {
                match link.recv() {
                    Ok(message) => {
                        let mut out = stdout.lock();
                        out.write_all(&message)?;
                        out.write_all(b"\n")?;
                        out.flush()?;
                    }
                    Err(LinkError::PeerClosed | LinkError::Closed) => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
            }
        });
        for line in std::io::stdin().lock().lines() {
            link.send(line?.as_bytes())?;
        }
        link.flush(flush_timeout)
            .context("messages still unacknowledged at the end of input")?;
        if wait_peer {
            while !printer.is_finished() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        eprintln!("{}", serde_json::to_string(&link.stats())?);
        link.close();
        printer.join().expect("printer thread")?;
        anyhow::Ok(())
    })
}
