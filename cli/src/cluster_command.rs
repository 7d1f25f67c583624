//! The command that starts one cluster on this machine (`hmw launch` of local clusters, and
//! the commands `--print` shows): `mpirun` with one rank per machine-file line, or, for a
//! cluster of threads (`launcher = "threads"`), the application itself with `--threads`:
//! every rank a thread of one process over the in-process transport, the same roles and CM
//! links, no MPI.

use std::{path::Path, process::Command};

use hmw_model::plan::launch::Launcher;

use crate::layout::ClusterLayout;

/// The files a cluster's command reads and writes.
pub(crate) struct ClusterFiles<'a> {
    /// Its machine file.
    pub(crate) hosts: &'a Path,
    /// The run's configuration.
    pub(crate) config: &'a Path,
    /// Where its statistics go.
    pub(crate) stats: &'a Path,
}

/// The command that runs `cluster` of `binary` with `files`; for a real deployment (`print`),
/// `mpirun` reads the machine file as its hostfile, else it may oversubscribe this machine.
pub(crate) fn cluster_command(
    cluster: &ClusterLayout,
    binary: &Path,
    files: &ClusterFiles<'_>,
    print: bool,
) -> Command {
    let mut command = match cluster.launcher {
        Launcher::Threads => Command::new(binary),
        Launcher::Local | Launcher::Ssh | Launcher::Slurm => {
            let mut mpirun = Command::new("mpirun");
            if print {
                mpirun.arg("--hostfile").arg(files.hosts);
            } else {
                mpirun.arg("--oversubscribe");
            }
            mpirun.args(["-np", &cluster.ranks.to_string()]).arg(binary);
            mpirun
        }
    };
    command
        .arg("-m")
        .arg(files.hosts)
        .arg("-c")
        .arg(files.config)
        .arg("--stats-json")
        .arg(files.stats);
    if !cluster.launcher.uses_mpi() {
        command.arg("--threads");
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &Command) -> Vec<String> {
        std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn mpirun_for_mpi_clusters_the_binary_alone_for_threads() {
        let mut cluster = ClusterLayout {
            name: "spain".into(),
            machine_file: String::new(),
            ranks: 4,
            link: None,
            workers: Vec::new(),
            launcher: Launcher::Local,
        };
        let files = ClusterFiles {
            hosts: Path::new("spain.hosts"),
            config: Path::new("run.toml"),
            stats: Path::new("spain.stats.json"),
        };
        let tail = "-m spain.hosts -c run.toml --stats-json spain.stats.json";
        assert_eq!(
            args(&cluster_command(&cluster, Path::new("app"), &files, false)).join(" "),
            format!("mpirun --oversubscribe -np 4 app {tail}")
        );
        assert_eq!(
            args(&cluster_command(&cluster, Path::new("app"), &files, true)).join(" "),
            format!("mpirun --hostfile spain.hosts -np 4 app {tail}")
        );
        cluster.launcher = Launcher::Threads;
        assert_eq!(
            args(&cluster_command(&cluster, Path::new("app"), &files, false)).join(" "),
            format!("app {tail} --threads")
        );
    }
}
