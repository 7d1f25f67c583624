//! The drivers of a pipeline run's roles: thin loops around the cores of
//! [`hmw_core::roles::pipeline`] over a transport (MPI, or the in-process one).
//!
//! - [`controller`]: the main cluster's first rank: the source, the sink, the decisions;
//! - [`head`]: another cluster's first rank: its stage managers;
//! - [`node`]: a worker: a communication thread around a [`hmw_core::roles::pipeline::NodeCore`]
//!   and a compute thread that runs the stages, timing each;
//! - [`relay`]: a CM: its cluster's messages for other clusters over the link, and back.

pub(crate) mod controller;
pub(crate) mod head;
pub(crate) mod node;
pub(crate) mod relay;

use hmw_core::roles::pipeline::PipeOutput;
use hmw_transport::Transport;

use crate::error::RunError;

/// Perform a core's sends; what else it asks for is the caller's (`Deliver`, `Progress`).
pub(crate) fn send_all(
    transport: &mut dyn Transport,
    out: &mut Vec<PipeOutput>,
) -> Result<Vec<PipeOutput>, RunError> {
    let mut rest = Vec::new();
    for output in out.drain(..) {
        match output {
            PipeOutput::Send { to, bytes } => transport.send(to, bytes)?,
            other => rest.push(other),
        }
    }
    Ok(rest)
}
