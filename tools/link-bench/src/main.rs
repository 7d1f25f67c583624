//! `hmw-link-bench`: the benchmark of the long-distance link (`hmw-cm`). One side sends continuously, the other
//! measures goodput per interval and in total, plus disconnections and recovery.
//!
//! * `loopback`: the link against raw quinn (one connection, one stream, same TLS, same
//!   windows, same runtime) on 127.0.0.1.
//! * `wan`: the link through `hmw-wanem` for several connection counts.
//! * `outage`: the same WAN with an outage in the middle; checks exactly-once in-order
//!   delivery and measures the time from the link's return to full goodput.
//! * `best`: prints the connection count of the best run of a `wan` report (for scripts).
//! * `summary`: reads the three JSON reports and prints the one-line summary.
//!
//! The parts, each a file: `configs.rs` (the WAN's arguments, the link's and the emulator's
//! configurations), `emulator.rs` (the emulator's runtime), `meter.rs` (goodput and CPU time
//! measured), `raw_quinn.rs` and `transfer.rs` (a transfer over raw quinn, over the link),
//! `loopback.rs`, `wan.rs`, `outage.rs` and `ceiling.rs` (the scenarios), `report.rs` (the JSON
//! reports and the summary line).

mod ceiling;
mod cold;
mod configs;
mod emulator;
mod loopback;
mod meter;
mod outage;
mod raw_quinn;
mod report;
mod transfer;
mod wan;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use hmw_cm::keygen;
use hmw_cm::wanem::Outage;

use ceiling::ceiling;
use cold::cold_start;
use configs::WanArgs;
use emulator::EMULATOR;
use loopback::loopback;
use outage::outage_run;
use report::{best_connections, read_json, summary, write_report, ColdReports};
use wan::wan_sweep;

#[derive(Parser)]
#[command(about = "Benchmark of the hmw long-distance link (hmw-cm)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Link versus raw quinn on loopback.
    Loopback {
        /// Seconds measured per contender (after one second of warm-up).
        #[arg(long, default_value_t = 8.0)]
        seconds: f64,
        /// Message (and raw write) size in bytes.
        #[arg(long, default_value_t = 1 << 20)]
        message: usize,
        /// Block size of the link in bytes.
        #[arg(long, default_value_t = 2 << 20)]
        block_size: usize,
        /// Rounds (raw quinn, then the link, in turn); the median ratio is reported.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Send with the link's copying `send(&[u8])` instead of the zero-copy `send_bytes`.
        #[arg(long)]
        copying_send: bool,
        /// Write the JSON report here (also printed on stdout).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The link through the WAN emulator, for several connection counts.
    Wan {
        #[command(flatten)]
        wan: WanArgs,
        /// Connection counts to try.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,6,8,16")]
        connections: Vec<usize>,
        /// Seconds per setting.
        #[arg(long, default_value_t = 15.0)]
        seconds: f64,
        /// Seconds at the start of each run left out of the steady goodput.
        #[arg(long, default_value_t = 3.0)]
        warmup: f64,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// An outage in the middle of a WAN transfer.
    Outage {
        #[command(flatten)]
        wan: WanArgs,
        /// Connections.
        #[arg(long, default_value_t = 8)]
        connections: usize,
        /// When the outage starts, seconds.
        #[arg(long, default_value_t = 15.0)]
        outage_start: f64,
        /// How long it lasts, seconds.
        #[arg(long, default_value_t = 20.0)]
        outage_seconds: f64,
        /// Total sending time, seconds.
        #[arg(long, default_value_t = 55.0)]
        seconds: f64,
        /// Inactivity timeout of the link, ms.
        #[arg(long, default_value_t = 5000)]
        inactivity_ms: u64,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The emulator's own ceiling: datagrams of 1452 bytes offered at `--offered-mbit`
    /// through an unshaped hmw-wanem on loopback; what comes out per second.
    Ceiling {
        /// Offered rate, Mbit/s.
        #[arg(long, default_value_t = 2000.0)]
        offered_mbit: f64,
        /// Seconds measured (after half a second of warm-up).
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The first seconds of a link just connected (its default settings, `--defaults`): from
    /// the start signal, when the first message arrives, the goodput and the link's windows
    /// every 50 ms, and when it reaches 90 % of its rate.
    Cold {
        #[command(flatten)]
        wan: WanArgs,
        /// Seconds measured from the start signal.
        #[arg(long, default_value_t = 6.0)]
        seconds: f64,
        /// Give the link the path's rate and round trip, as `hmw launch` does from a plan.
        #[arg(long)]
        warm: bool,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Prints the connection count of the best run (highest fraction of the link) of a `wan`
    /// report.
    Best {
        /// Report of `wan`.
        wan: PathBuf,
    },
    /// Prints the summary line from the reports.
    Summary {
        /// Report of `loopback`.
        loopback: PathBuf,
        /// Report of `wan`.
        wan: PathBuf,
        /// Report of `outage`.
        outage: PathBuf,
        /// Report of `wan --defaults` at 1 Gbit/s, 50 ms, 0.1 % loss.
        #[arg(long)]
        wan1g: Option<PathBuf>,
        /// Report of `wan --defaults` at 200 Mbit/s, 50 ms, 0.5 % loss.
        #[arg(long)]
        lossy200: Option<PathBuf>,
        /// Report of `ceiling`.
        #[arg(long)]
        ceiling: Option<PathBuf>,
        /// A `cold` report: 1 MB messages over 8 MB/s and a 120 ms round trip.
        #[arg(long, requires = "cold1g")]
        cold: Option<PathBuf>,
        /// A `cold` report: over 1 Gbit/s and a 100 ms round trip.
        #[arg(long, requires = "cold")]
        cold1g: Option<PathBuf>,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if let Command::Summary {
        loopback,
        wan,
        outage,
        wan1g,
        lossy200,
        ceiling,
        cold,
        cold1g,
    } = &cli.command
    {
        let cold = cold
            .as_deref()
            .zip(cold1g.as_deref())
            .map(|(cold, cold1g)| ColdReports { cold, cold1g });
        return summary(
            loopback,
            wan,
            outage,
            wan1g.as_deref(),
            lossy200.as_deref(),
            ceiling.as_deref(),
            cold,
        );
    }
    if let Command::Best { wan } = &cli.command {
        println!("{}", best_connections(&read_json(wan)?)?);
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The emulator has a runtime of its own (one thread), as it would be a process of its own:
    // the link's two ends do not hold up its relaying, nor it theirs.
    let emulator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("wanem")
        .enable_all()
        .build()?;
    let _ = EMULATOR.set(emulator.handle().clone());
    let dir = std::env::temp_dir().join(format!("hmw-link-bench-{}", std::process::id()));
    let certs = keygen::generate(
        &dir,
        &["server".into(), "client".into()],
        &["localhost".into(), "127.0.0.1".into()],
    )?;
    let result = runtime.block_on(async {
        match cli.command {
            Command::Loopback {
                seconds,
                message,
                block_size,
                rounds,
                copying_send,
                json,
            } => write_report(
                loopback(&certs, seconds, message, block_size, rounds, !copying_send).await?,
                json,
            ),
            Command::Wan {
                wan,
                connections,
                seconds,
                warmup,
                json,
            } => write_report(
                wan_sweep(&certs, &wan, &connections, seconds, warmup).await?,
                json,
            ),
            Command::Outage {
                wan,
                connections,
                outage_start,
                outage_seconds,
                seconds,
                inactivity_ms,
                json,
            } => {
                let outage = Outage {
                    start_s: outage_start,
                    end_s: outage_start + outage_seconds,
                };
                let report =
                    outage_run(&certs, &wan, connections, outage, seconds, inactivity_ms).await?;
                write_report(report, json)
            }
            Command::Ceiling {
                offered_mbit,
                seconds,
                json,
            } => write_report(ceiling(offered_mbit, seconds).await?, json),
            Command::Cold {
                wan,
                seconds,
                warm,
                json,
            } => write_report(cold_start(&certs, &wan, seconds, warm).await?, json),
            Command::Summary { .. } | Command::Best { .. } => unreachable!("handled above"),
        }
    });
    emulator.shutdown_background();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
