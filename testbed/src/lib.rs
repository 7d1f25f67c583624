//! `hmw-testbed`: a plan's hosts emulated on this machine, and taken down again.
//!
//! Each host of a plan becomes a network + UTS + mount namespace with its own host name,
//! address on its cluster's LAN (a bridge), private work folder and CPU quota (a cgroup
//! proportional to its `perf`); every packet between clusters crosses the WAN emulator
//! `hmw-wan-router` in a router namespace; each host runs a real sshd, and Slurm clusters run
//! munge, slurmctld and slurmd. A state file records everything before it is created, so that
//! `down` removes it all, also after a crash. See the README, "A testbed on this machine", and
//! `docs/architecture.md`, "The testbed".

pub mod cgroup;
pub mod daemons;
pub mod harness;
pub mod layout;
pub mod names;
pub mod state;
pub mod sys;
pub mod testbed;
pub mod tools;
