//! CPU quotas of the emulated hosts: one cgroup per host under one cgroup per testbed
//! (`hmw-testbed-NAME/hosts/HOST`, plus `router` and `launch`).
//!
//! Both cgroup versions: v1's `cpu` controller (`cpu.cfs_quota_us` over `cpu.cfs_period_us`)
//! and v2's `cpu.max` (`QUOTA PERIOD`, `max` for none). [`CpuCgroups::detect`] picks the one this
//! machine has: v1 when `/sys/fs/cgroup/cpu/cpu.cfs_quota_us` exists, v2 when
//! `/sys/fs/cgroup/cgroup.controllers` lists `cpu`. The root folder is a parameter, so the tests
//! run against a fake cgroup folder in a tempdir.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The period of a quota, microseconds, unless the quota would be under the kernel's least
/// (1 ms): then the period is as long as that takes ([`period_us`]).
///
/// A quota emulates a slower host only on average over its periods: a host that starts to
/// compute part way through a period, with that period's quota unused, gets up to a period's
/// quota more over a run. With the kernel's default 100 ms, a TSP run of 0.6 s on hosts of
/// 0.20-0.45 of a core went 7 % faster than with 10 ms (five interleaved runs each,
/// `docs/benchmarks.md`), and faster than `hmw calibrate`'s 2 s measurement of the same hosts: no
/// slower processor does that.
pub const PERIOD_US: u64 = 10_000;

/// The kernel's least quota per period, microseconds.
const MIN_QUOTA_US: f64 = 1000.0;

/// The period for a quota of `cores`: [`PERIOD_US`], longer when the quota would be under
/// the kernel's least.
pub fn period_us(cores: f64) -> u64 {
    PERIOD_US.max((MIN_QUOTA_US / cores).ceil() as u64)
}

/// The cgroup version and where its CPU hierarchy is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuCgroups {
    /// cgroup v1: the `cpu` controller's mount (`/sys/fs/cgroup/cpu`).
    V1(PathBuf),
    /// cgroup v2: the unified hierarchy (`/sys/fs/cgroup`).
    V2(PathBuf),
}

impl CpuCgroups {
    /// The version this machine has, under `root` (`/sys/fs/cgroup`).
    pub fn detect(root: &Path) -> anyhow::Result<CpuCgroups> {
        for v1 in ["cpu", "cpu,cpuacct"] {
            let dir = root.join(v1);
            if dir.join("cpu.cfs_quota_us").exists() {
                return Ok(CpuCgroups::V1(dir));
            }
        }
        let controllers = root.join("cgroup.controllers");
        if let Ok(text) = fs::read_to_string(&controllers) {
            if text.split_whitespace().any(|c| c == "cpu") {
                return Ok(CpuCgroups::V2(root.to_path_buf()));
            }
        }
        bail!(
            "no cgroup CPU controller under {}: neither v1 `cpu/cpu.cfs_quota_us` nor v2 \
             `cgroup.controllers` listing cpu",
            root.display()
        )
    }

    /// `v1` or `v2`.
    pub fn version(&self) -> &'static str {
        match self {
            CpuCgroups::V1(_) => "v1",
            CpuCgroups::V2(_) => "v2",
        }
    }

    /// The folder of the cgroup at `rel` (relative to the hierarchy's root).
    pub fn path(&self, rel: &str) -> PathBuf {
        match self {
            CpuCgroups::V1(root) | CpuCgroups::V2(root) => root.join(rel),
        }
    }

    /// Creates the cgroup at `rel`, and on v2 enables the `cpu` controller for the children of
    /// each of its ancestors. Returns its folder.
    pub fn create(&self, rel: &str) -> anyhow::Result<PathBuf> {
        let path = self.path(rel);
        if let CpuCgroups::V2(root) = self {
            // Every ancestor (the root included) must hand `cpu` to its children.
            let mut dir = root.clone();
            for part in Path::new(rel).components() {
                let control = dir.join("cgroup.subtree_control");
                let current = fs::read_to_string(&control).unwrap_or_default();
                if !current.split_whitespace().any(|c| c == "cpu") {
                    fs::write(&control, "+cpu")
                        .with_context(|| format!("enabling cpu in {}", control.display()))?;
                }
                dir = dir.join(part);
                if !dir.exists() {
                    mkdir_cgroup(&dir)?;
                }
            }
        } else {
            let mut dir = self.path("");
            for part in Path::new(rel).components() {
                dir = dir.join(part);
                if !dir.exists() {
                    mkdir_cgroup(&dir)?;
                }
            }
        }
        Ok(path)
    }

    /// Sets the quota of the cgroup at `rel`: `cores` of CPU time per period, or none.
    pub fn set_quota(&self, rel: &str, cores: Option<f64>) -> anyhow::Result<()> {
        let dir = self.path(rel);
        let period = cores.map_or(PERIOD_US, period_us);
        let quota = cores.map(|c| (c * period as f64).round() as u64);
        match self {
            CpuCgroups::V1(_) => {
                // No quota first: a new period is checked against the current quota (a
                // shorter one under a quota may be refused), then the period, then the quota.
                write(&dir.join("cpu.cfs_quota_us"), "-1")?;
                write(&dir.join("cpu.cfs_period_us"), &period.to_string())?;
                let q = quota.map(|q| q.to_string()).unwrap_or_else(|| "-1".into());
                write(&dir.join("cpu.cfs_quota_us"), &q)
            }
            CpuCgroups::V2(_) => {
                let q = quota.map(|q| q.to_string()).unwrap_or_else(|| "max".into());
                write(&dir.join("cpu.max"), &format!("{q} {period}"))
            }
        }
    }

    /// Sets the weight of the cgroup at `rel` against its siblings under contention, on v1's
    /// scale (`cpu.shares`, default 1024; v2's `cpu.weight` gets `weight / 10.24`, default 100).
    pub fn set_weight(&self, rel: &str, weight: u64) -> anyhow::Result<()> {
        let dir = self.path(rel);
        match self {
            CpuCgroups::V1(_) => write(
                &dir.join("cpu.shares"),
                &weight.clamp(2, 262_144).to_string(),
            ),
            CpuCgroups::V2(_) => {
                let w = ((weight as f64 / 10.24).round() as u64).clamp(1, 10_000);
                write(&dir.join("cpu.weight"), &w.to_string())
            }
        }
    }

    /// The quota of the cgroup at `rel` in cores, `None` for none.
    pub fn quota(&self, rel: &str) -> anyhow::Result<Option<f64>> {
        let dir = self.path(rel);
        match self {
            CpuCgroups::V1(_) => {
                let q: i64 = read(&dir.join("cpu.cfs_quota_us"))?.trim().parse()?;
                let p: f64 = read(&dir.join("cpu.cfs_period_us"))?.trim().parse()?;
                Ok((q > 0).then(|| q as f64 / p))
            }
            CpuCgroups::V2(_) => {
                let text = read(&dir.join("cpu.max"))?;
                let mut it = text.split_whitespace();
                let q = it.next().unwrap_or("max");
                let p: f64 = it.next().unwrap_or("100000").parse()?;
                Ok(if q == "max" {
                    None
                } else {
                    Some(q.parse::<f64>()? / p)
                })
            }
        }
    }

    /// Moves process `pid` into the cgroup at `rel`.
    pub fn add(&self, rel: &str, pid: u32) -> anyhow::Result<()> {
        write(&self.path(rel).join("cgroup.procs"), &pid.to_string())
    }

    /// The processes in the cgroup at `rel` (none when it does not exist).
    pub fn procs(&self, rel: &str) -> Vec<u32> {
        fs::read_to_string(self.path(rel).join("cgroup.procs"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Removes the (empty) cgroup at `rel`; no error when it is already gone.
    pub fn remove(&self, rel: &str) -> anyhow::Result<()> {
        let dir = self.path(rel);
        match fs::remove_dir(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing cgroup {}", dir.display())),
        }
    }
}

fn mkdir_cgroup(dir: &Path) -> anyhow::Result<()> {
    fs::create_dir(dir).with_context(|| format!("creating cgroup {}", dir.display()))
}

fn write(path: &Path, value: &str) -> anyhow::Result<()> {
    fs::write(path, value).with_context(|| format!("writing `{value}` to {}", path.display()))
}

fn read(path: &Path) -> anyhow::Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hmw-testbed-cg-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_quota_under_the_kernels_least_gets_a_longer_period() {
        assert_eq!(period_us(0.45), PERIOD_US);
        assert_eq!(period_us(0.10), PERIOD_US);
        assert_eq!(period_us(0.05), 20_000);
        assert_eq!(period_us(0.03), 33_334);
    }

    #[test]
    fn v1_fake_folder() {
        let root = tempdir("v1");
        fs::create_dir(root.join("cpu")).unwrap();
        fs::write(root.join("cpu/cpu.cfs_quota_us"), "-1").unwrap();
        let cg = CpuCgroups::detect(&root).unwrap();
        assert_eq!(cg.version(), "v1");
        let dir = cg.create("tb-x/hosts/h1").unwrap();
        assert!(dir.ends_with("cpu/tb-x/hosts/h1"));
        // a real cgroupfs creates the files; the fake needs them to read back.
        cg.set_quota("tb-x/hosts/h1", Some(0.15)).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("cpu.cfs_quota_us")).unwrap(),
            "1500"
        );
        assert_eq!(
            fs::read_to_string(dir.join("cpu.cfs_period_us")).unwrap(),
            "10000"
        );
        assert_eq!(cg.quota("tb-x/hosts/h1").unwrap(), Some(0.15));
        cg.set_quota("tb-x/hosts/h1", None).unwrap();
        assert_eq!(cg.quota("tb-x/hosts/h1").unwrap(), None);
        cg.add("tb-x/hosts/h1", 42).unwrap();
        cg.set_weight("tb-x/hosts/h1", 154).unwrap();
        assert_eq!(fs::read_to_string(dir.join("cpu.shares")).unwrap(), "154");
        assert_eq!(cg.procs("tb-x/hosts/h1"), vec![42]);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn v2_fake_folder() {
        let root = tempdir("v2");
        fs::write(root.join("cgroup.controllers"), "cpuset cpu io memory pids").unwrap();
        fs::write(root.join("cgroup.subtree_control"), "").unwrap();
        let cg = CpuCgroups::detect(&root).unwrap();
        assert_eq!(cg.version(), "v2");
        let dir = cg.create("tb-y/h1").unwrap();
        assert_eq!(
            fs::read_to_string(root.join("cgroup.subtree_control")).unwrap(),
            "+cpu"
        );
        assert_eq!(
            fs::read_to_string(root.join("tb-y/cgroup.subtree_control")).unwrap(),
            "+cpu"
        );
        cg.set_quota("tb-y/h1", Some(0.3)).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("cpu.max")).unwrap(),
            "3000 10000"
        );
        assert_eq!(cg.quota("tb-y/h1").unwrap(), Some(0.3));
        cg.set_weight("tb-y/h1", 8192).unwrap();
        assert_eq!(fs::read_to_string(dir.join("cpu.weight")).unwrap(), "800");
        cg.set_quota("tb-y/h1", None).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("cpu.max")).unwrap(),
            "max 10000"
        );
        assert_eq!(cg.quota("tb-y/h1").unwrap(), None);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn none_found() {
        let root = tempdir("none");
        assert!(CpuCgroups::detect(&root).is_err());
        fs::remove_dir_all(&root).unwrap();
    }
}
