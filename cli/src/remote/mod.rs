//! `hmw launch` and `hmw calibrate` on real hosts: each cluster started on its head over ssh,
//! its files staged on its hosts, everything stopped and removed at the end.

mod allocation;
mod calibration;
mod cluster;
mod deployment;
mod restarts;
mod ssh;

pub(crate) use allocation::{allocate, place, Allocations};
pub(crate) use calibration::{Program, RemoteCalibration, RunFiles, RunOutput};
pub(crate) use cluster::RemoteCluster;
pub(crate) use deployment::{cleanup, is_remote, Deployment};
