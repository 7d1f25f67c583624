//! `hmw-testbed`: emulated hosts on this machine from a plan (see the README, "A testbed on
//! this machine").

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use hmw_testbed::testbed::{self, Instance, UpOptions, UpOutcome};
use hmw_testbed::{state::State, tools};

#[derive(Parser)]
#[command(
    name = "hmw-testbed",
    version,
    about = "Emulated hosts, LANs and WANs on this machine from a plan"
)]
struct Cli {
    /// The instance (default: the only testbed up; for `up`, from the plan's file name).
    #[arg(long, global = true)]
    name: Option<String>,
    /// The instance's state dir (default: /var/lib/hmw-testbed/NAME).
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Brings a plan's testbed up (a no-op when the same plan's is up).
    Up {
        /// The plan.
        plan: PathBuf,
        /// The WAN emulator's binary (default: next to hmw-testbed, then PATH).
        #[arg(long)]
        router: Option<PathBuf>,
        /// Fail when the emulator is absent instead of forwarding without it.
        #[arg(long)]
        require_router: bool,
    },
    /// Takes a testbed down: everything its state file records.
    Down,
    /// The hosts, their addresses, quotas and processes.
    Status,
    /// Runs a command on a host: its namespaces, its cgroup, /srv/hmw as working folder.
    Exec {
        /// The host (`launch` is the launching machine).
        host: String,
        /// The command.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Prints the path of the ssh client configuration for the launch host (`ssh -F FILE HOST`).
    SshConfig {
        /// The configuration used inside the hosts instead.
        #[arg(long)]
        hosts: bool,
    },
    /// Changes a host's perf (its CPU quota).
    SetPerf {
        /// The host.
        host: String,
        /// Its new perf.
        perf: f64,
    },
    /// Changes a WAN's rate (Mbit/s; 0 = unlimited).
    SetRate {
        /// The cluster.
        cluster: String,
        /// Towards the cluster only.
        #[arg(long, group = "dir")]
        to: bool,
        /// From the cluster only.
        #[arg(long, group = "dir")]
        from: bool,
        /// Both ways (the default).
        #[arg(long, group = "dir")]
        both: bool,
        /// The rate.
        mbit: f64,
    },
    /// Cuts a cluster's WAN for some seconds from now.
    Outage {
        /// The cluster.
        cluster: String,
        /// How long.
        seconds: f64,
    },
    /// Fails a host: every process of it killed at once (its ranks, sshd, Slurm, munge), as
    /// a host that dies; with --wipe its /srv/hmw emptied too.
    KillHost {
        /// The host.
        host: String,
        /// Remove what its /srv/hmw holds (the run folders on it).
        #[arg(long)]
        wipe: bool,
    },
    /// Brings a killed host back: its sshd (and Slurm daemons) started again.
    Revive {
        /// The host.
        host: String,
    },
    /// Cuts a host's LAN port for some seconds from now (returns when it is up again).
    CutLan {
        /// The host.
        host: String,
        /// How long.
        seconds: f64,
    },
    /// The start signal: the plan's outage times count from now.
    Start,
    /// The emulator's counters (JSON).
    Counters,
    /// What remains of a testbed after down, from a copy of its state file (one line per
    /// resource; nothing when clean).
    #[command(hide = true)]
    Leftovers {
        /// The copy of the state file.
        state_file: PathBuf,
    },
    /// Measuring tools for the checks.
    #[command(hide = true, subcommand)]
    Tool(ToolCmd),
}

#[derive(Subcommand)]
enum ToolCmd {
    /// Spins; prints rounds per second of wall time and of CPU time.
    Cpu {
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
    /// Receives one TCP transfer; prints `bytes seconds rate`.
    Sink {
        #[arg(long)]
        listen: String,
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
    },
    /// Sends for some seconds.
    Send {
        #[arg(long)]
        to: String,
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
}

fn instance(cli: &Cli) -> anyhow::Result<Instance> {
    Instance::find(cli.name.as_deref(), cli.state_dir.as_deref())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hmw-testbed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    match &cli.cmd {
        Cmd::Up {
            plan,
            router,
            require_router,
        } => {
            let opts = UpOptions {
                name: cli.name.clone(),
                state_dir: cli.state_dir.clone(),
                router: router.clone(),
                require_router: *require_router,
            };
            let t0 = std::time::Instant::now();
            match testbed::up(plan, &opts)? {
                UpOutcome::AlreadyUp(st) => {
                    println!(
                        "testbed {} is already up with this plan: nothing done",
                        st.name
                    )
                }
                UpOutcome::Built(st) => {
                    print!("{}", testbed::status_text(&st));
                    println!(
                        "testbed {} up in {:.1} s: hosts={} clusters={} wan={}; ssh -F {} HOST",
                        st.name,
                        t0.elapsed().as_secs_f64(),
                        st.hosts.len() - 1,
                        st.layout.clusters.len(),
                        st.wan,
                        st.dir.join("ssh/ssh_config").display()
                    );
                }
            }
        }
        Cmd::Down => {
            let inst = instance(cli)?;
            let done = testbed::down(&inst)?;
            println!(
                "testbed {} down: {} resources removed",
                inst.name,
                done.len()
            );
        }
        Cmd::Status => {
            let st = instance(cli)?.state()?;
            print!("{}", testbed::status_text(&st));
        }
        Cmd::Exec { host, command } => {
            let st = instance(cli)?.state()?;
            let status = testbed::exec(&st, host, command)?;
            return Ok(ExitCode::from(
                status.code().unwrap_or(128 + 9).clamp(0, 255) as u8,
            ));
        }
        Cmd::SshConfig { hosts } => {
            let st = instance(cli)?.state()?;
            let f = if *hosts {
                "ssh/hosts_config"
            } else {
                "ssh/ssh_config"
            };
            println!("{}", st.dir.join(f).display());
        }
        Cmd::SetPerf { host, perf } => {
            let inst = instance(cli)?;
            let cores = testbed::set_perf(&inst, host, *perf)?;
            println!(
                "{host}: perf {perf}, quota {:.3} cores",
                cores.unwrap_or(0.0)
            );
        }
        Cmd::SetRate {
            cluster,
            to,
            from,
            both: _,
            mbit,
        } => {
            let st = instance(cli)?.state()?;
            if st.layout.cluster(cluster).is_none() {
                bail!("no cluster `{cluster}`");
            }
            let direction = if *to {
                "to_cluster"
            } else if *from {
                "from_cluster"
            } else {
                "both"
            };
            let reply = testbed::control(
                &st,
                &serde_json::json!({"cmd": "set", "cluster": cluster, "direction": direction, "rate_mbit": mbit}),
            )?;
            println!("{reply}");
        }
        Cmd::KillHost { host, wipe } => {
            let killed = testbed::kill_host(&instance(cli)?, host, *wipe)?;
            println!(
                "{host}: {killed} processes killed{}",
                if *wipe { ", /srv/hmw emptied" } else { "" }
            );
        }
        Cmd::Revive { host } => {
            testbed::revive_host(&instance(cli)?, host)?;
            println!("{host}: its daemons started again");
        }
        Cmd::CutLan { host, seconds } => {
            testbed::cut_lan(&instance(cli)?, host, *seconds)?;
            println!("{host}: LAN cut for {seconds} s, up again");
        }
        Cmd::Outage { cluster, seconds } => {
            let st = instance(cli)?.state()?;
            let reply = testbed::control(
                &st,
                &serde_json::json!({"cmd": "outage", "cluster": cluster, "seconds": seconds}),
            )?;
            println!("{reply}");
        }
        Cmd::Start => {
            let st = instance(cli)?.state()?;
            println!(
                "{}",
                testbed::control(&st, &serde_json::json!({"cmd": "start"}))?
            );
        }
        Cmd::Counters => {
            let st = instance(cli)?.state()?;
            println!(
                "{}",
                testbed::control(&st, &serde_json::json!({"cmd": "counters"}))?
            );
        }
        Cmd::Leftovers { state_file } => {
            let text = std::fs::read_to_string(state_file)
                .with_context(|| format!("reading {}", state_file.display()))?;
            let st: State = serde_json::from_str(&text)?;
            let left = testbed::leftovers(&st);
            for l in &left {
                println!("{l}");
            }
            return Ok(if left.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        Cmd::Tool(t) => match t {
            ToolCmd::Cpu { seconds } => {
                let (wall, cpu) = tools::cpu_loop(*seconds);
                println!("{wall:.0} {cpu:.0}");
            }
            ToolCmd::Sink { listen, timeout } => {
                let (bytes, secs, rate) = tools::sink(listen, *timeout)?;
                println!("{bytes} {secs:.3} {rate:.0}");
            }
            ToolCmd::Send { to, seconds } => println!("{}", tools::send(to, *seconds)?),
        },
    }
    Ok(ExitCode::SUCCESS)
}
