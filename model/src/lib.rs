//! `hmw-model`: the embedded analytical model of `hmw`, the methodology built on it, and the
//! formats of the files it reads (the plan, the measured-system file of `hmw calibrate`).
//!
//! Plain functions over parameter structs — no MPI, no tokio, no QUIC, no I/O but reading a
//! plan — so `hmw predict` builds and runs anywhere, and the master calls the same functions
//! with measured values. Each function cites the equation it implements; the
//! numbering follows the multi-cluster thesis the project is built from (see `docs/model.md`).
//!
//! - [`params`]: the inputs (section 1);
//! - [`execution`], [`limits`], [`local`], [`external`], [`cluster`]: the three states of a
//!   pipelined execution (section 2);
//! - [`main_path`]: the main master and the main cluster's CMs shared by every cluster;
//! - [`methodology`]: local and multi-cluster analysis, selection, balance, advice (section 3);
//!   [`predict`] is the entry point;
//! - [`range`]: the working range every derived quantity must stay in;
//! - [`tuning`] and [`chunking`]: tuning inside a cluster and the scheduler's chunk sizes
//!   (section 5); [`iteration_fit`]: section 5's terms fitted to measured iterations;
//! - [`row_column`]: the matrix product's row/column strategy (section 7);
//! - [`pipeline`]: pipelines of stages, their mapping onto nodes and remapping (140)-(169);
//! - [`queueing`]: closed queueing networks solved by Mean Value Analysis (section 15);
//! - [`plan`]: the plan file and the measured-system file, read and checked with errors that
//!   name the file, the cluster, the machine and the key.

pub mod chunking;
pub mod cluster;
pub mod contention;
pub mod execution;
pub mod external;
pub mod iteration_fit;
pub mod limits;
pub mod local;
pub mod main_path;
pub mod methodology;
pub mod params;
pub mod pipeline;
pub mod plan;
pub mod queueing;
pub mod range;
pub mod row_column;
pub mod shared_links;
pub mod tuning;

pub use cluster::{Case, ClusterModel};
pub use limits::{Bottleneck, PerformanceLimits};
pub use methodology::advice::{
    Advice, AdviceEffect, AdviceKind, AdviceValue, GrainReason, GrainRow, LinkNeed, Remark,
};
pub use methodology::selection::{SelectionMethod, SelectionOutcome};
pub use methodology::{predict, ClusterPrediction, ModelError, Prediction, RunPrediction};
pub use params::{
    ApplicationParams, ClusterOptions, ClusterParams, Contention, DispatchCosts, ExternalLink,
    GrainCandidate, MeasuredCluster, MeasuredSystem, MeasuredWorker, ModelForm, ModelInput,
    ModelOptions, ModelTerms, SelectionRequest, SystemParams, WorkerParams,
    DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SELECTION_BUDGET_S, MAX_EXHAUSTIVE_LIMIT,
    RUNTIME_WORKER_BUFFERS,
};
pub use range::{check_working_range, RangeError};
