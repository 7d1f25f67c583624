//! The command line of `hmw calibrate`: the plan, the file written, and how long and how often
//! each part is measured.

use std::{path::PathBuf, time::Duration};

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// The plan (TOML), as for `hmw launch`.
    pub(super) plan: PathBuf,
    /// The system-parameter file to write (TOML).
    #[arg(long, default_value = "system.toml")]
    pub(super) out: PathBuf,
    /// Tasks per worker in the workers' run (every worker at once).
    #[arg(long, default_value_t = 8)]
    pub(super) tasks: u64,
    /// Times each worker executes each task of the workers' run: a worker then computes
    /// without waiting for the master, so its figure is its speed while every worker
    /// computes at once, even where the master cannot hand tasks out as fast as they are
    /// done (a worker that waits computes faster while it computes on shared or
    /// quota-limited cores).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) repeats: u32,
    /// Workers: the shortest busy time that counts, seconds: while a worker of the workers'
    /// run computed for less, the run is done again with more tasks (a speed under a CPU
    /// quota or on a shared core is an average over many scheduling periods: over 0.4 s
    /// of 100 ms quota periods, two calibrations of the same hosts differed by 10 %).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "2",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    pub(super) worker_seconds: Duration,
    /// LAN: runs with each worker count (1, half, all); 0 measures no LAN, and the plan's
    /// `lan_bytes_per_s` stays.
    #[arg(long, default_value_t = 3)]
    pub(super) lan_runs: u32,
    /// LAN: the shortest run counted, seconds (a shorter one is run again, longer).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "1",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    pub(super) lan_seconds: Duration,
    /// LAN: the fewest tasks of a run.
    #[arg(long, default_value_t = 200)]
    pub(super) lan_tasks: u64,
    /// WAN: seconds each link carries traffic before the timed window, at least (30 round
    /// trips when longer: a direction that starts idle ramps up over round trips).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "1",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    pub(super) wan_warmup: Duration,
    /// WAN: seconds timed, each direction in turn. The relays share this machine's cores
    /// with the links they relay, so their deliveries can lag and catch up: over 3 s that
    /// moved a 1 MB/s link's figure by up to 7%, over 6 s by under 5%.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "6",
        value_parser = crate::positive_seconds,
        allow_negative_numbers = true
    )]
    pub(super) wan_seconds: Duration,
    /// Seconds a calibration run may last before it is killed as hung (an error).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "600",
        value_parser = crate::positive_seconds,
        allow_negative_numbers = true
    )]
    pub(super) run_timeout: Duration,
    /// Folder for the calibration runs' files (default: a temporary folder, removed at the
    /// end unless the calibration fails).
    #[arg(long)]
    pub(super) work_dir: Option<PathBuf>,
}
