//! `hmw check`: validate a configuration and a machine file and show the roles they give.

use std::path::PathBuf;

use hmw_core::{
    config::ConfigFile,
    machinefile::{MachineFile, Role},
};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Enhanced machine file.
    #[arg(long, short = 'm')]
    machinefile: PathBuf,
    /// Run configuration (TOML).
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
}

pub fn run(args: CheckArgs) -> anyhow::Result<()> {
    let config = match &args.config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::defaults(),
    };
    let machines = MachineFile::load(&args.machinefile)?;
    let processes = &machines.processes;
    println!(
        "{}: {} ranks{}",
        machines.path.display(),
        machines.rank_count(),
        if processes.is_one_rank_each() {
            String::new()
        } else {
            format!(", {} processes (mpirun -np)", processes.count())
        }
    );
    for (rank, line) in machines.ranks.iter().enumerate() {
        let role = machines.role(rank);
        let mut shown = format!("  rank {rank:>3}  {:<24} {role}", line.host);
        let process = processes.process_of(rank);
        if processes.shared_ranks(process).is_some() {
            shown.push_str(&format!(" (in process {process})"));
        }
        if role == Role::Worker && line.speed() != 1.0 {
            shown.push_str(&format!(" (speed {})", line.speed()));
        }
        if let Some(cm) = &line.cm {
            shown.push_str(&format!(" facing {:?}, {:?}", cm.facing, cm.endpoint));
        }
        println!("{shown}");
    }
    println!("{}: {:?}", config.path.display(), config.run);
    // A pipeline run's table, when there is one: its keys and values, and its clusters
    // against this machine file.
    if config.text_has_table("pipeline") {
        let pipeline = config.pipeline()?;
        hmw_core::roles::pipeline::Routes::new(&pipeline, &machines, 0)?;
        println!(
            "{}: [pipeline] {} clusters, mapping {}, threshold {:?}",
            config.path.display(),
            pipeline.cluster.len().max(1),
            pipeline.mapping.name(),
            pipeline.threshold
        );
    }
    Ok(())
}
