//! The cores of a pipeline run (`docs/architecture.md`, "Pipelines"): state machines with no
//! I/O and no clock, as the master-worker roles' are.
//!
//! Who runs what: the main cluster's first rank (the master line of its machine file) is the
//! [`ControllerCore`] — the source, the sink, the managers of the main cluster's replicated
//! groups, every decision; each other cluster's first rank (its sub-master line) is a
//! [`HeadCore`] — its cluster's managers; every worker line is a [`NodeCore`] — the stages the
//! mapping gives it; every CM line is a [`RelayCore`] — its link as a hop of the [`Routes`].
//! A group of several replicas is fed by a stage manager ([`Managers`]) on its cluster's
//! first rank.

mod controller;
mod head;
mod managers;
mod monitor;
mod node;
mod output;
mod relay;
mod routes;

pub use controller::{ControllerCore, ControllerSetup, ItemSource};
pub use head::HeadCore;
pub use managers::Managers;
pub use monitor::Monitor;
pub use node::{calibration_of, Job, NodeCore};
pub use output::PipeOutput;
pub use relay::{RelayCore, RelayOutput, CLOSE_PATIENCE};
pub use routes::Routes;
