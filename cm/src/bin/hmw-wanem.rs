//! `hmw-wanem`: the user-space WAN emulator as a program. Configure it with a TOML file, flags
//! (which apply to both directions and override the file), or both.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use hmw_cm::wanem::{DirectionConfig, Outage, Wanem, WanemConfig};

/// Relays UDP between clients and a server through an emulated WAN: per direction a rate
/// limit (token bucket, bounded queue dropping on overflow), one-way delay with jitter,
/// seeded random loss, and an outage schedule.
#[derive(Parser)]
#[command(name = "hmw-wanem")]
struct Cli {
    /// TOML configuration (see the hmw-cm README).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address the clients send to.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Server address the traffic goes to.
    #[arg(long)]
    server: Option<SocketAddr>,
    /// Rate limit each way, Mbit/s (0 = unlimited).
    #[arg(long)]
    rate_mbit: Option<f64>,
    /// One-way delay each way, ms.
    #[arg(long)]
    delay_ms: Option<f64>,
    /// Jitter each way, ms.
    #[arg(long)]
    jitter_ms: Option<f64>,
    /// Loss probability each way (0.005 = 0.5 %).
    #[arg(long)]
    loss: Option<f64>,
    /// Queue before the rate limiter, in ms of traffic at the rate.
    #[arg(long)]
    queue_ms: Option<f64>,
    /// Outage, both ways: START-END or START+DURATION in seconds (repeatable).
    #[arg(long = "outage")]
    outages: Vec<Outage>,
    /// Seed of loss and jitter.
    #[arg(long)]
    seed: Option<u64>,
    /// Seconds between counter reports on standard error (0 = none).
    #[arg(long)]
    report_interval_s: Option<f64>,
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long)]
    duration_s: Option<f64>,
    /// Write the final counters as JSON to this file.
    #[arg(long)]
    counters_json: Option<PathBuf>,
}

fn apply(direction: &mut DirectionConfig, cli: &Cli) {
    if let Some(v) = cli.rate_mbit {
        direction.rate_mbit = v;
    }
    if let Some(v) = cli.delay_ms {
        direction.delay_ms = v;
    }
    if let Some(v) = cli.jitter_ms {
        direction.jitter_ms = v;
    }
    if let Some(v) = cli.loss {
        direction.loss = v;
    }
    if let Some(v) = cli.queue_ms {
        direction.queue_ms = v;
    }
}

fn config_from(cli: &Cli) -> Result<WanemConfig> {
    let mut config = match &cli.config {
        Some(path) => WanemConfig::from_file(path)?,
        None => WanemConfig::symmetric(
            cli.listen
                .context("--listen is required without --config")?,
            cli.server
                .context("--server is required without --config")?,
            DirectionConfig::default(),
        ),
    };
    if let Some(listen) = cli.listen {
        config.listen = listen;
    }
    if let Some(server) = cli.server {
        config.server = server;
    }
    apply(&mut config.client_to_server, cli);
    apply(&mut config.server_to_client, cli);
    config.outages.extend(cli.outages.iter().copied());
    if let Some(seed) = cli.seed {
        config.seed = seed;
    }
    if let Some(interval) = cli.report_interval_s {
        config.report_interval_s = interval;
    }
    config.validate()?;
    Ok(config)
}

async fn wait_for_stop(duration: Option<f64>) -> Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let limit = async {
        match duration {
            Some(s) => tokio::time::sleep(Duration::from_secs_f64(s)).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = terminate.recv() => {},
        () = limit => {},
    }
    Ok(())
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let config = config_from(&cli)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let wanem = Wanem::start(config.clone()).await?;
        eprintln!(
            "hmw-wanem: {} -> {} (client->server {:?}; server->client {:?}; outages {:?})",
            wanem.local_addr(),
            config.server,
            config.client_to_server,
            config.server_to_client,
            config.outages
        );
        wait_for_stop(cli.duration_s).await?;
        let counters = wanem.counters();
        eprint!(
            "hmw-wanem final counters after {:.1}s\n{counters}",
            wanem.elapsed().as_secs_f64()
        );
        if let Some(path) = &cli.counters_json {
            std::fs::write(path, serde_json::to_string_pretty(&counters)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        wanem.shutdown();
        anyhow::Ok(())
    })
}
