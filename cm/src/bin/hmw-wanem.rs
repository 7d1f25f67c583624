//! `hmw-wanem`: the user-space WAN emulator as a program. Configure it with a TOML file, flags
//! (which apply to both directions and override the file), or both.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use hmw_cm::wanem::config::limits;
use hmw_cm::wanem::{DirectionConfig, Outage, Wanem, WanemConfig, WanemConfigError};

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

/// The flag given on the command line that set configuration `key` (`client_to_server.loss`,
/// `report_interval_s`...), if one did: the configuration's own check then names the flag.
/// A jitter out of range may come from the delay flag against the file's jitter.
fn flag_of(cli: &Cli, key: &str) -> Option<&'static str> {
    let given = |flag: &'static str, set: bool| set.then_some(flag);
    match key.rsplit('.').next()? {
        "rate_mbit" => given("--rate-mbit", cli.rate_mbit.is_some()),
        "delay_ms" => given("--delay-ms", cli.delay_ms.is_some()),
        "jitter_ms" => given("--jitter-ms", cli.jitter_ms.is_some())
            .or(given("--delay-ms", cli.delay_ms.is_some())),
        "loss" => given("--loss", cli.loss.is_some()),
        "queue_ms" => given("--queue-ms", cli.queue_ms.is_some()),
        "burst_bytes" => given("--burst-bytes", cli.burst_bytes.is_some()),
        "report_interval_s" => given("--report-interval-s", cli.report_interval_s.is_some()),
        _ => None,
    }
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
    // The only flag that is no configuration value.
    if let Some(duration) = cli.duration_s {
        if let Err(reason) = limits::duration_s(duration) {
            bail!("--duration-s {duration:?}: {reason}");
        }
    }
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
    // One check of every value, flags and file together (a jitter flag against the file's
    // delay, for instance); a value a flag set is reported with the flag.
    if let Err(e) = config.validate() {
        let context = |key: &str| {
            let file = cli.config.as_ref().map(|path| path.display().to_string());
            match (key.contains('.'), file) {
                (true, Some(file)) => format!(" (flags apply to both directions, with {file})"),
                (true, None) => " (flags apply to both directions)".to_string(),
                (false, Some(file)) => format!(" (with {file})"),
                (false, None) => String::new(),
            }
        };
        match &e {
            WanemConfigError::Invalid { key, reason, .. } => match flag_of(cli, key) {
                Some(flag) => bail!("{flag}: `{key}` {reason}{}", context(key)),
                None => bail!("{e}{}", context(key)),
            },
            _ => bail!("{e}"),
        }
    }
    Ok(config)
}

async fn wait_for_stop(duration: Option<f64>) -> Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    // Checked by `config_from`; a value no duration holds would mean "forever" anyway.
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
