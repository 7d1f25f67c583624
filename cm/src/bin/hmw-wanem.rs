//! `hmw-wanem`: the user-space WAN emulator as a program. Configure it with a TOML file, flags
//! (which apply to both directions and override the file), or both.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use hmw_cm::wanem::config::limits;
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
    /// Rate limit each way, Mbit/s: 0 = unlimited, else 0.001 to 1000000.
    #[arg(long, allow_negative_numbers = true)]
    rate_mbit: Option<f64>,
    /// One-way delay each way, ms (0 to 600000).
    #[arg(long, allow_negative_numbers = true)]
    delay_ms: Option<f64>,
    /// Jitter each way, ms (0 to the delay).
    #[arg(long, allow_negative_numbers = true)]
    jitter_ms: Option<f64>,
    /// Loss probability each way (0.005 = 0.5 %).
    #[arg(long, allow_negative_numbers = true)]
    loss: Option<f64>,
    /// Queue before the rate limiter, in ms of traffic at the rate (more than 0, at most
    /// 600000).
    #[arg(long, allow_negative_numbers = true)]
    queue_ms: Option<f64>,
    /// Token-bucket depth each way, bytes: how much may leave back to back (1500 to 1 GiB).
    #[arg(long)]
    burst_bytes: Option<usize>,
    /// Outage, both ways: START-END or START+DURATION in seconds (repeatable).
    #[arg(long = "outage")]
    outages: Vec<Outage>,
    /// Outage of the client-to-server direction only (repeatable).
    #[arg(long = "outage-c2s")]
    outages_c2s: Vec<Outage>,
    /// Outage of the server-to-client direction only (repeatable).
    #[arg(long = "outage-s2c")]
    outages_s2c: Vec<Outage>,
    /// Seed of loss and jitter.
    #[arg(long)]
    seed: Option<u64>,
    /// Seconds between counter reports on standard error: 0 = none, else 0.1 to 86400.
    #[arg(long, allow_negative_numbers = true)]
    report_interval_s: Option<f64>,
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long, allow_negative_numbers = true)]
    duration_s: Option<f64>,
    /// Write the final counters as JSON to this file.
    #[arg(long)]
    counters_json: Option<PathBuf>,
}

/// Checks a flag's value against its limits, naming the flag.
fn check<T: std::fmt::Debug + Copy>(
    flag: &str,
    value: Option<T>,
    limit: impl Fn(T) -> Result<(), String>,
) -> Result<()> {
    if let Some(v) = value {
        if let Err(reason) = limit(v) {
            bail!("--{flag} {v:?}: {reason}");
        }
    }
    Ok(())
}

fn check_flags(cli: &Cli) -> Result<()> {
    check("rate-mbit", cli.rate_mbit, limits::rate_mbit)?;
    check("delay-ms", cli.delay_ms, limits::delay_ms)?;
    check("jitter-ms", cli.jitter_ms, |v| {
        limits::jitter_ms(v, cli.delay_ms.unwrap_or(limits::MAX_DELAY_MS))
    })?;
    check("loss", cli.loss, limits::loss)?;
    check("queue-ms", cli.queue_ms, limits::queue_ms)?;
    check("burst-bytes", cli.burst_bytes, limits::burst_bytes)?;
    check(
        "report-interval-s",
        cli.report_interval_s,
        limits::report_interval_s,
    )?;
    check("duration-s", cli.duration_s, limits::duration_s)?;
    Ok(())
}

fn apply(direction: &mut DirectionConfig, cli: &Cli, own_outages: &[Outage]) {
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
    if let Some(v) = cli.burst_bytes {
        direction.burst_bytes = v;
    }
    direction.outages.extend_from_slice(own_outages);
}

fn config_from(cli: &Cli) -> Result<WanemConfig> {
    check_flags(cli)?;
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
    apply(&mut config.client_to_server, cli, &cli.outages_c2s);
    apply(&mut config.server_to_client, cli, &cli.outages_s2c);
    config.outages.extend(cli.outages.iter().copied());
    if let Some(seed) = cli.seed {
        config.seed = seed;
    }
    if let Some(interval) = cli.report_interval_s {
        config.report_interval_s = interval;
    }
    // Flags and file together (a jitter flag against the file's delay, for instance).
    if let Err(e) = config.validate() {
        match &cli.config {
            Some(path) => bail!(
                "{e} (flags, which apply to both directions, combined with {})",
                path.display()
            ),
            None => bail!("{e} (flags apply to both directions)"),
        }
    }
    Ok(config)
}

async fn wait_for_stop(duration: Option<f64>) -> Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    // Checked by `check_flags`; a value no duration holds would mean "forever" anyway.
    let limit = async {
        match duration.and_then(|s| Duration::try_from_secs_f64(s).ok()) {
            Some(d) => tokio::time::sleep(d).await,
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
