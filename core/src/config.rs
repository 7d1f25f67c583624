//! The run configuration (TOML).
//!
//! ```toml
//! [run]
//! statistics_interval = 5     # seconds between progress lines; 0 = silent
//! worker_buffers = 2          # 1: compute then ask; 2: hold a second task while computing
//! reassign_last_task = true   # send in-flight tasks again to workers that go idle at the end
//! load_balance = false        # bound each cluster's share by the model's balanced workload
//! wait_for_links = false      # start only once every link to another cluster is up
//! scheduler = "on_demand"     # or fixed_size, kruskal_weiss, factoring, adaptive_factoring,
//!                             # adaptive_multi_round
//! chunk_fraction = 0.5        # the f of fixed_size and factoring
//! chunk_overhead_s = 1e-4     # the h of kruskal_weiss (required by it)
//! tune_workers = "off"        # iterative applications: "time" or "pi" tunes the workers
//! active_workers = 8          # iterative applications: workers that take tasks (default all)
//! tune_drift = 0.25           # relative change of a measured term the tuner acts on
//! adapt = false               # re-plan between clusters from live measurements
//! adapt_interval_s = 10       # at most one plan per interval (events aside)
//! adapt_rate_change = 0.3     # a cluster's rate moving this much is an event
//! adapt_min_efficiency = 0.1  # below this share of its capacity a cluster is dropped
//! adapt_hold_s = 10           # a cluster may hold what it computes in this time
//! journal_sync_s = 1          # the master's journal (--journal): results synced at most
//! journal_sync_bytes = 1048576 # this long after they are gathered, or once this many wait
//!
//! [application]               # read by the application itself
//! ```
//! The `[run]` table is strict (an unknown key is an error, so a typo never goes unnoticed);
//! other top-level tables belong to the application or to the plan and are left to them.

use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::pipeline::PipelineConfig;

/// An error in a configuration file, naming the file and, when known, the line.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The configuration file.
    pub path: PathBuf,
    /// 1-based line of the offending key (the TOML parser's own messages carry theirs).
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// A value that failed a check: its key (`table.key`) and what is wrong.
#[derive(Debug)]
struct Invalid {
    key: &'static str,
    message: String,
}

impl Invalid {
    fn new(key: &'static str, message: String) -> Self {
        Invalid { key, message }
    }
}

/// The 1-based line where `dotted_key` (`table.key`) is written in the TOML `text`.
pub fn line_of(text: &str, dotted_key: &str) -> Option<usize> {
    let document = toml_edit::ImDocument::parse(text).ok()?;
    let mut item = document.as_item();
    let mut span = None;
    for part in dotted_key.split('.') {
        let table = item.as_table_like()?;
        let (key, value) = table.get_key_value(part)?;
        span = key.span().or_else(|| value.span());
        item = value;
    }
    Some(text[..span?.start].matches('\n').count() + 1)
}

/// The framework's own settings: the `[run]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Seconds between progress lines at the master; 0 prints none.
    pub statistics_interval: f64,
    /// Task buffers per worker: 1 or 2.
    pub worker_buffers: u32,
    /// Reassign in-flight tasks to workers that go idle once no task is left.
    pub reassign_last_task: bool,
    /// Bound each cluster's share by the model's balanced workload (multi-cluster runs): each
    /// CM facing this master must then carry its bound (`max_tasks=`).
    pub load_balance: bool,
    /// Hand out no task until every link to another cluster is up (or given up), so the
    /// makespan leaves connecting out, as the model does: for measurements. By default local
    /// workers start at once and each cluster joins when its link is up.
    pub wait_for_links: bool,
    /// The scheduling policy: how many tasks one message to a worker carries (which rank is
    /// served first is the scheduler's too; every policy here keeps the default).
    pub scheduler: crate::scheduler::Policy,
    /// The `f` of the fixed-size and factoring schedulers.
    pub chunk_fraction: f64,
    /// The scheduling overhead per chunk `h`, seconds, of the `kruskal_weiss` scheduler: what
    /// one message to a worker costs beyond its tasks (the master's time per message, which
    /// `scripts/bench-dispatch.sh` measures, plus the LAN's latency).
    pub chunk_overhead_s: Option<f64>,
    /// Hand out only the first tasks of the problem (calibration runs); the application's
    /// final check is skipped, its answer being partial.
    pub max_tasks: Option<u64>,
    /// Each worker executes each task it receives this many times and returns the last
    /// result (calibration runs): a worker then computes without waiting for its next task,
    /// so its basic operations per busy second are its speed while every worker computes at
    /// once, however fast the master hands tasks out.
    pub repeat_tasks: u32,
    /// The master splits each task with the application's splitter, as a sub-master splits
    /// the tasks that reach it over a WAN, and hands out the parts (calibration runs of an
    /// external cluster's workers, which then compute at the grain they compute in a run).
    /// Ignored when the application has no splitter.
    pub split_tasks: bool,
    /// The master reads its thread's CPU clock around each message it handles and records
    /// the seconds in its statistics (`master_cpu_s`): `hmw calibrate` takes the master's CPU
    /// per task from it (`docs/model.md` (125)). Two clock reads a message: off by default.
    pub master_cpu: bool,
    /// Iterative applications: tune the number of active workers between iterations, for the
    /// fastest iteration (`time`) or the smallest performance index (`pi`); `off` keeps
    /// `active_workers`.
    pub tune_workers: TuneWorkers,
    /// Iterative applications: the workers that take tasks (the others idle); with the
    /// tuner, the most it may use. Default: every worker.
    pub active_workers: Option<usize>,
    /// Iterative applications: the relative change of a measured term (`Tc`, or the
    /// communication time over the iteration time) that the tuner takes for drift.
    pub tune_drift: f64,
    /// Re-plan between clusters during the run from what is measured ([`crate::adapt`]):
    /// each cluster's credit, `nt` and `nr`, dropping and re-admitting clusters. Needs
    /// `statistics_interval > 0` (plans are made at progress lines).
    pub adapt: bool,
    /// At most one plan per this many seconds, events aside.
    pub adapt_interval_s: f64,
    /// A relative move of a cluster's smoothed rate that is an event.
    pub adapt_rate_change: f64,
    /// A cluster computing less than this share of what its workers can is dropped.
    pub adapt_min_efficiency: f64,
    /// A cluster may hold what it computes in this many seconds.
    pub adapt_hold_s: f64,
    /// The master's journal of results (`--journal`): a result gathered is on disk at most
    /// this many seconds later (group commit: one sync for every result of the interval).
    pub journal_sync_s: f64,
    /// The same: at most this many bytes of results wait unsynced (the master waits for the
    /// disk beyond it).
    pub journal_sync_bytes: u64,
    /// Where the master appends its live feed, a line of JSON per progress line
    /// ([`crate::live_feed`]). Not a key of the file: the binary's `--live-json` sets it
    /// (`hmw launch` does, for its live state file).
    #[serde(skip)]
    pub live_json: Option<std::path::PathBuf>,
}

/// `[run] tune_workers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneWorkers {
    /// No tuning: `active_workers`, or every worker.
    #[default]
    Off,
    /// The count with the fastest iteration.
    Time,
    /// The count with the smallest performance index (the cheapest for its time).
    Pi,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            statistics_interval: 5.0,
            worker_buffers: 2,
            reassign_last_task: true,
            load_balance: false,
            wait_for_links: false,
            scheduler: crate::scheduler::Policy::OnDemand,
            chunk_fraction: 0.5,
            chunk_overhead_s: None,
            max_tasks: None,
            repeat_tasks: 1,
            split_tasks: false,
            master_cpu: false,
            tune_workers: TuneWorkers::Off,
            active_workers: None,
            tune_drift: 0.25,
            adapt: false,
            adapt_interval_s: 10.0,
            adapt_rate_change: 0.3,
            adapt_min_efficiency: 0.1,
            adapt_hold_s: 10.0,
            journal_sync_s: 1.0,
            journal_sync_bytes: 1 << 20,
            live_json: None,
        }
    }
}

impl RunConfig {
    /// The scheduler of the `scheduler` policy, with this run's chunk settings: what a master
    /// or sub-master schedules with unless the application gives its own.
    pub fn configured_scheduler(&self) -> Box<dyn crate::scheduler::Scheduler> {
        self.scheduler.scheduler(self.chunk_settings())
    }

    /// The numbers the chunking policies read.
    pub fn chunk_settings(&self) -> crate::scheduler::ChunkSettings {
        crate::scheduler::ChunkSettings {
            fraction: self.chunk_fraction,
            overhead_s: self.chunk_overhead_s.unwrap_or(0.0),
        }
    }

    /// The settings of [`crate::adapt`], when `adapt` is on.
    pub fn adapt_settings(&self) -> Option<crate::adapt::AdaptSettings> {
        self.adapt.then_some(crate::adapt::AdaptSettings {
            interval_s: self.adapt_interval_s,
            rate_change: self.adapt_rate_change,
            min_efficiency: self.adapt_min_efficiency,
            hold_s: self.adapt_hold_s,
        })
    }

    fn validate(&self) -> Result<(), Invalid> {
        let adapt = [
            (
                "run.adapt_interval_s",
                self.adapt_interval_s,
                0.0,
                f64::INFINITY,
                "seconds >= 0",
            ),
            (
                "run.adapt_rate_change",
                self.adapt_rate_change,
                f64::MIN_POSITIVE,
                f64::INFINITY,
                "a share > 0",
            ),
            (
                "run.adapt_min_efficiency",
                self.adapt_min_efficiency,
                0.0,
                1.0,
                "a share in [0, 1)",
            ),
            (
                "run.adapt_hold_s",
                self.adapt_hold_s,
                f64::MIN_POSITIVE,
                f64::INFINITY,
                "seconds > 0",
            ),
            (
                "run.journal_sync_s",
                self.journal_sync_s,
                f64::MIN_POSITIVE,
                f64::INFINITY,
                "seconds > 0",
            ),
        ];
        for (key, value, low, below, what) in adapt {
            if !(value >= low && value < below) {
                return Err(Invalid::new(
                    key,
                    format!("{key} = {value}: expected {what}"),
                ));
            }
        }
        if self.adapt && self.statistics_interval <= 0.0 {
            return Err(Invalid::new(
                "run.adapt",
                "run.adapt = true re-plans at progress lines: it needs run.statistics_interval > 0"
                    .to_string(),
            ));
        }
        match self.chunk_overhead_s {
            Some(h) if !(h.is_finite() && h >= 0.0) => {
                return Err(Invalid::new(
                    "run.chunk_overhead_s",
                    format!("run.chunk_overhead_s = {h}: expected seconds >= 0"),
                ))
            }
            None if self.scheduler == crate::scheduler::Policy::KruskalWeiss => {
                return Err(Invalid::new(
                    "run.chunk_overhead_s",
                    "run.scheduler = \"kruskal_weiss\" needs run.chunk_overhead_s, the \
                     scheduling overhead per chunk in seconds (the master's time per message \
                     from scripts/bench-dispatch.sh plus the LAN's latency)"
                        .to_string(),
                ))
            }
            _ => {}
        }
        if !(self.statistics_interval.is_finite() && self.statistics_interval >= 0.0) {
            return Err(Invalid::new(
                "run.statistics_interval",
                format!(
                    "run.statistics_interval = {}: expected seconds >= 0",
                    self.statistics_interval
                ),
            ));
        }
        if !(self.chunk_fraction > 0.0 && self.chunk_fraction <= 1.0) {
            return Err(Invalid::new(
                "run.chunk_fraction",
                format!(
                    "run.chunk_fraction = {}: expected a fraction in (0, 1]",
                    self.chunk_fraction
                ),
            ));
        }
        if self.active_workers == Some(0) {
            return Err(Invalid::new(
                "run.active_workers",
                "run.active_workers = 0: expected at least 1".into(),
            ));
        }
        if !(self.tune_drift.is_finite() && self.tune_drift > 0.0) {
            return Err(Invalid::new(
                "run.tune_drift",
                format!(
                    "run.tune_drift = {}: expected a relative change > 0",
                    self.tune_drift
                ),
            ));
        }
        if self.journal_sync_bytes == 0 {
            return Err(Invalid::new(
                "run.journal_sync_bytes",
                "run.journal_sync_bytes = 0: expected at least 1 byte".into(),
            ));
        }
        if self.repeat_tasks == 0 {
            return Err(Invalid::new(
                "run.repeat_tasks",
                "run.repeat_tasks = 0: expected at least 1".into(),
            ));
        }
        if !(1..=2).contains(&self.worker_buffers) {
            return Err(Invalid::new(
                "run.worker_buffers",
                format!(
                    "run.worker_buffers = {}: expected 1 or 2",
                    self.worker_buffers
                ),
            ));
        }
        Ok(())
    }
}

/// Settings of the communication managers: the `[cm]` table.
///
/// ```toml
/// [cm]
/// certs = "certs"          # folder with ca.pem, NAME.pem and NAME.key.pem (hmw keygen)
/// tasks_window = 8         # inter-cluster tasks a CM sends ahead of the far side's requests
/// lost_after_s = 60        # a link down this long loses its cluster (its tasks go elsewhere)
/// rejoin_within_s = 300    # a lost cluster waits this much longer for its link, to rejoin
/// connections = 2          # QUIC connections striped over at the start (the link adds and
///                          # removes some as they pay; each has its own congestion window)
/// streams = 2              # streams per connection
/// ```
/// `block_size`, `send_memory`, `recv_memory`, `max_memory`, `inactivity_timeout_ms` and
/// `congestion` (`cubic`, `bbr`, `newreno`) override the link's defaults (see
/// `cm/README.md`): `max_memory` caps what each CM's link sizes itself to, buffers and QUIC
/// windows together (a run of many links on one machine); the link refuses one below its
/// starting sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CmConfig {
    /// Folder with `ca.pem`, `NAME.pem` and `NAME.key.pem` (`hmw keygen`).
    pub certs: Option<PathBuf>,
    /// Inter-cluster tasks a CM sends ahead of the far sub-master's requests.
    pub tasks_window: usize,
    /// Seconds a link may stay down before its cluster is lost.
    pub lost_after_s: f64,
    /// Seconds a lost cluster keeps waiting for its link, beyond `lost_after_s`, to rejoin the
    /// run and take new tasks; then it stops (0: it stops when it is lost).
    pub rejoin_within_s: f64,
    /// QUIC connections the link stripes over (the link's default when absent).
    pub connections: Option<usize>,
    /// Streams per connection.
    pub streams: Option<usize>,
    /// Largest block a message is cut into, bytes.
    pub block_size: Option<usize>,
    /// Memory for messages sent and not yet acknowledged, bytes.
    pub send_memory: Option<usize>,
    /// Memory for messages received and not yet read, bytes.
    pub recv_memory: Option<usize>,
    /// The most memory each CM's link sizes itself to: its buffers and its connections' QUIC
    /// receive windows, bytes.
    pub max_memory: Option<usize>,
    /// Milliseconds without a packet after which a connection is dead.
    pub inactivity_timeout_ms: Option<u64>,
    /// Congestion controller of every connection.
    pub congestion: Option<hmw_wan::Congestion>,
}

impl Default for CmConfig {
    fn default() -> Self {
        CmConfig {
            certs: None,
            tasks_window: 8,
            lost_after_s: 60.0,
            rejoin_within_s: 300.0,
            connections: None,
            streams: None,
            block_size: None,
            send_memory: None,
            recv_memory: None,
            max_memory: None,
            inactivity_timeout_ms: None,
            congestion: None,
        }
    }
}

impl CmConfig {
    /// How long a CM facing a sub-master waits for its link before it stops its cluster: the
    /// master side's `lost_after_s`, then `rejoin_within_s` during which the lost cluster may
    /// still rejoin.
    pub fn give_up_after(&self) -> std::time::Duration {
        std::time::Duration::try_from_secs_f64(self.lost_after_s + self.rejoin_within_s)
            .unwrap_or(std::time::Duration::MAX)
    }

    /// Bytes a CM's link buffers for sending (messages sent and not yet acknowledged by the
    /// peer): `send_memory`, or the link's default.
    pub fn send_buffer_bytes(&self) -> usize {
        self.send_memory
            .unwrap_or(hmw_cm_proto::DEFAULT_LINK_MEMORY)
    }

    /// How long the link goes without a packet before its connection is dead, and the CMs
    /// see it down: `inactivity_timeout_ms`, or the link's default.
    pub fn inactivity_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.inactivity_timeout_ms
                .unwrap_or(hmw_cm_proto::DEFAULT_INACTIVITY_TIMEOUT_MS),
        )
    }

    fn validate(&self) -> Result<(), Invalid> {
        if self.tasks_window == 0 {
            return Err(Invalid::new(
                "cm.tasks_window",
                "cm.tasks_window = 0: expected at least 1".into(),
            ));
        }
        if !(self.lost_after_s.is_finite() && self.lost_after_s > 0.0) {
            return Err(Invalid::new(
                "cm.lost_after_s",
                format!(
                    "cm.lost_after_s = {}: expected seconds > 0",
                    self.lost_after_s
                ),
            ));
        }
        if !(self.rejoin_within_s.is_finite() && self.rejoin_within_s >= 0.0) {
            return Err(Invalid::new(
                "cm.rejoin_within_s",
                format!(
                    "cm.rejoin_within_s = {}: expected seconds >= 0",
                    self.rejoin_within_s
                ),
            ));
        }
        Ok(())
    }
}

/// A whole configuration file: the `[run]` and `[cm]` tables, and the text for the
/// application's table.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The file read (`defaults` when none was given).
    pub path: PathBuf,
    /// `[run]`.
    pub run: RunConfig,
    /// `[cm]`.
    pub cm: CmConfig,
    text: String,
}

impl ConfigFile {
    /// Read and validate a configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_owned(),
            line: None,
            message: format!("cannot read configuration: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Parse configuration text; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        #[derive(Deserialize)]
        struct Document {
            #[serde(default)]
            run: RunConfig,
            #[serde(default)]
            cm: CmConfig,
        }
        let error = |message: String| ConfigError {
            path: path.to_owned(),
            line: None,
            message,
        };
        let invalid = |invalid: Invalid| ConfigError {
            path: path.to_owned(),
            line: line_of(text, invalid.key),
            message: invalid.message,
        };
        let document: Document = toml::from_str(text).map_err(|e| error(e.to_string()))?;
        document.run.validate().map_err(invalid)?;
        document.cm.validate().map_err(invalid)?;
        let mut cm = document.cm;
        // Relative certificate folders are relative to the configuration file.
        if let (Some(certs), Some(dir)) = (&cm.certs, path.parent()) {
            cm.certs = Some(dir.join(certs));
        }
        Ok(ConfigFile {
            path: path.to_owned(),
            run: document.run,
            cm,
            text: text.to_owned(),
        })
    }

    /// A configuration with defaults and an empty `[application]` table.
    pub fn defaults() -> Self {
        ConfigFile {
            path: PathBuf::from("<defaults>"),
            run: RunConfig::default(),
            cm: CmConfig::default(),
            text: String::new(),
        }
    }

    /// The `[application]` table as TOML text, the same for the same settings however the
    /// file writes them (a journal's record of the application's parameters).
    pub fn application_text(&self) -> Result<String, ConfigError> {
        let table: toml::Table = self.application()?;
        toml::to_string(&table).map_err(|e| ConfigError {
            path: self.path.clone(),
            line: None,
            message: format!("[application]: {e}"),
        })
    }

    /// Deserialize the `[application]` table into the application's own settings type
    /// (from an empty table when the file has none, so defaults apply).
    pub fn application<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        #[derive(Deserialize)]
        struct Document<T> {
            application: Option<T>,
        }
        let error = |message: String| ConfigError {
            path: self.path.clone(),
            line: None,
            message,
        };
        let document: Document<T> =
            toml::from_str(&self.text).map_err(|e| error(format!("[application]: {e}")))?;
        match document.application {
            Some(settings) => Ok(settings),
            None => toml::Value::Table(toml::Table::new())
                .try_into()
                .map_err(|e: toml::de::Error| error(format!("[application]: {}", e.message()))),
        }
    }
}

impl ConfigFile {
    /// Whether the file has a top-level table `name`.
    pub fn text_has_table(&self, name: &str) -> bool {
        toml::from_str::<toml::Table>(&self.text).is_ok_and(|t| t.contains_key(name))
    }

    /// The `[pipeline]` table of a pipeline run ([`PipelineConfig`]), its defaults when the
    /// file has none; an unknown key or a bad value is an error naming the file and the key.
    pub fn pipeline(&self) -> Result<PipelineConfig, ConfigError> {
        #[derive(Deserialize)]
        struct Document {
            pipeline: Option<PipelineConfig>,
        }
        let document: Document = toml::from_str(&self.text).map_err(|e| ConfigError {
            path: self.path.clone(),
            line: None,
            message: format!("[pipeline]: {}", e.to_string().trim()),
        })?;
        Ok(document.pipeline.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(Path::new("run.toml"), text)
    }

    #[test]
    fn the_link_s_idle_timeout_is_its_default_or_the_cm_s_setting() {
        let config = parse("").unwrap();
        assert_eq!(
            config.cm.inactivity_timeout(),
            std::time::Duration::from_secs(5)
        );
        let set = parse("[cm]\ninactivity_timeout_ms = 1500\n").unwrap();
        assert_eq!(
            set.cm.inactivity_timeout(),
            std::time::Duration::from_millis(1500)
        );
    }

    #[test]
    fn the_pipeline_table_names_a_bad_key() {
        let config = parse("[pipeline]\nthreshold = \"never\"\n").unwrap();
        assert_eq!(
            config.pipeline().unwrap().threshold,
            hmw_model::plan::Threshold::Never
        );
        assert_eq!(
            parse("").unwrap().pipeline().unwrap(),
            PipelineConfig::default()
        );
        let err = parse("[pipeline]\nwindoww = 3\n")
            .unwrap()
            .pipeline()
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("run.toml: [pipeline]:"), "{err}");
        assert!(err.contains("unknown field `windoww`"), "{err}");
    }

    #[test]
    fn defaults_when_absent() {
        let config = parse("").unwrap();
        assert_eq!(config.run, RunConfig::default());
    }

    #[test]
    fn reads_run_and_application() {
        #[derive(Deserialize)]
        struct App {
            size: u32,
        }
        let config = parse(
            "[run]\nstatistics_interval = 0\nworker_buffers = 1\nreassign_last_task = false\n\
             [application]\nsize = 7\n",
        )
        .unwrap();
        assert_eq!(config.run.worker_buffers, 1);
        assert_eq!(config.run.statistics_interval, 0.0);
        assert!(!config.run.reassign_last_task);
        assert_eq!(config.application::<App>().unwrap().size, 7);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let err = parse("[run]\nworker_bufers = 2\n").unwrap_err().to_string();
        assert!(err.starts_with("run.toml:"), "{err}");
        assert!(
            err.contains("line 2") && err.contains("worker_bufers"),
            "{err}"
        );

        let err = parse("[run]\nworker_buffers = 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run.toml:2: ")
                && err.contains("worker_buffers = 3")
                && err.contains("1 or 2"),
            "{err}"
        );

        let err = parse("[run]\nrepeat_tasks = 0\n").unwrap_err().to_string();
        assert!(
            err.starts_with("run.toml:2: ") && err.contains("at least 1"),
            "{err}"
        );

        let err = parse("# intervals\n[run]\nworker_buffers = 1\nstatistics_interval = -1\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run.toml:4: ") && err.contains("statistics_interval"),
            "{err}"
        );

        let err = parse("[run]\nchunk_fraction = nan\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("run.toml:2: "), "{err}");

        let err = parse("[run]\n[cm]\nlost_after_s = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run.toml:3: ") && err.contains("cm.lost_after_s"),
            "{err}"
        );

        let err = parse("[run]\nadapt = true\nadapt_min_efficiency = 1.5\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run.toml:3: ") && err.contains("[0, 1)"),
            "{err}"
        );
        let err = parse("[run]\nstatistics_interval = 0\nadapt = true\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("run.toml:3: ") && err.contains("statistics_interval > 0"),
            "{err}"
        );

        let err = parse("[run\n").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");

        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct App {
            size: u32,
        }
        let err = parse("[application]\nsize = \"big\"\n")
            .unwrap()
            .application::<App>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("[application]"), "{err}");
    }
}
