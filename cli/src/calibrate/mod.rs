//! `hmw calibrate PLAN.toml`: measure the system parameters of a plan on this machine, where
//! `hmw launch` runs it — each worker's available performance with the application's own
//! tasks, each LAN with task- and result-sized messages, each emulated WAN link both ways —
//! and write them as a system-parameter file that `hmw predict --measured` (and `hmw launch`,
//! `hmw report`) take in place of the plan's hand-written values.
//!
//! - Workers: every worker of every cluster in one run, all computing at once as they do in a
//!   run here, where they share this machine's cores: `--tasks` tasks of the application per
//!   worker, handed out on demand; a worker's perf is its basic operations per busy second.
//!   The last few tasks, when some workers are done, run under less load than a run's. On the
//!   clusters' own hosts ([`calibrate_remote`]) an external cluster's workers compute the parts
//!   its sub-master splits tasks into when the application splits them (`[run] split_tasks`):
//!   their figures are per part, and their own communication (100) is counted per task of
//!   the plan, `parts_per_task` parts'. The same run gives the master's CPU per task
//!   (`[run] master_cpu`, its thread's CPU around each message it handles; (125)), written
//!   for every cluster (on this machine one master stands for every cluster's head), and the
//!   spread of a task's time, `oper_cv` (129).
//! - LAN: the synthetic application with the plan's task and result sizes and no
//!   computation, with 1, half and all of the cluster's workers (`--lan-runs` runs each, every
//!   run at least `--lan-seconds` long and `--lan-tasks` tasks; `--lan-runs 0` measures none
//!   and leaves the plan's value); throughput `tasks * (task + result bytes) / makespan`.
//!   The file keeps each count's mean, standard deviation, minimum and maximum in the
//!   cluster's `[[clusters.lan_runs]]` tables and gives the model, as `lan_bytes_per_s`, the
//!   mean with every worker, the load the run puts on its master.
//! - WAN: a pair of hmw-cm links configured from the plan's `[launch.cm]` exactly as the
//!   communication managers configure theirs (same machine-file lines, same `[cm]` keys,
//!   certificates as `hmw launch` writes them), through the link's emulator, one direction
//!   at a time (inter-cluster tasks one way, then inter-cluster results the other; both at
//!   once, each direction's acknowledgements queue behind the other's data:
//!   [`crate::wan_probe`]), each `--wan-warmup` seconds of warm-up, then `--wan-seconds`
//!   timed. Every link at once (each has an emulator of its own), while the workers' run
//!   computes (run again until the links are measured): relays, links and workers share the
//!   cores in a run, and the links are measured under that load ([`under_load`]). The
//!   workers' figures come from that first run, the probes beside it. Their saturating
//!   traffic is no run's, and on the testbed, where every host shares this machine's cores,
//!   it costs the workers CPU: there they read 5-10 % slower than a compute-only run
//!   computes. Measured alone first instead (tried and reverted: `docs/validation.md`), they matched
//!   those runs, but a full `scripts/validate.sh` then missed `tb-matmul-two-clusters` by
//!   +29 % and `tb-tsp-three-clusters` by +15 % (+2 % and +4 % the run before, under the
//!   probes), `tb-srmsd-one-to-many` going from -4.9 % to +1.1 %: a run's own inter-cluster
//!   traffic, relays and CMs take CPU from its workers too, and the probes' load stands in
//!   for it better than no load does.
//!
//! Each run is one `mpirun` started and stopped as `hmw launch` does ([`crate::processes`]):
//! in a process group of its own, SIGTERM from the kernel if `hmw calibrate` dies, ranks
//! orphaned by their `mpirun` re-parented here and killed; a run still going after
//! `--run-timeout` is killed and is an error. Ctrl-C, SIGTERM and SIGHUP stop the run under
//! way (or the WAN measurement) and everything below `hmw calibrate`, which then fails.
//!
//! The parts, each a file:
//!
//! - [`args`]: the command line;
//! - [`command`]: the command itself, from the plan to the file written;
//! - [`local`]: the calibration on this machine, one `mpirun` per run;
//! - [`remote`]: the calibration on the clusters' own hosts, through their launchers;
//! - [`workers`]: the workers' runs and each worker's figures in them;
//! - [`worker_figures`]: what the model takes of a worker (`perf`, `tput_own` (100));
//! - [`run_figures`]: what the workers' run tells of the master's CPU per task (125) and of
//!   the spread of a task's time (129);
//! - [`lan`]: the LAN runs;
//! - [`wan`]: the WAN probes on this machine;
//! - [`under_load`]: the WANs measured while the workers' run loads the cores;
//! - [`run_config`]: what a calibration run starts with (binary, machine file, configuration);
//! - [`system_file`]: the system-parameter file written, and its conditions;
//! - [`pipeline`]: a pipeline plan's calibration: every node times every stage;
//! - [`tables`]: the report printed.
//!
//! [`calibrate_remote`]: remote::calibrate_remote

mod args;
mod command;
mod lan;
mod local;
mod pipeline;
mod remote;
mod run_config;
mod run_figures;
mod system_file;
mod tables;
#[cfg(test)]
mod tests;
mod under_load;
mod wan;
mod worker_figures;
mod workers;

pub use args::CalibrateArgs;
pub use command::run;
