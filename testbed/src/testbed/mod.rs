//! Bringing a testbed up and down, running commands on its hosts, changing its conditions.
//!
//! Topology (see `docs/architecture.md`, "The testbed"):
//! - a **fabric** namespace holds the bridges: one per cluster (its LAN) and the management
//!   bridge; nothing of the testbed lives in the machine's own network namespace;
//! - each **host** has a network namespace (a veth `eth0` on its cluster's bridge; the entry
//!   hosts also `mgmt0` on the management bridge), a UTS namespace (its host name) and a mount
//!   namespace (private `/run` and `/srv/hmw`; the testbed's hosts file on `/etc/hosts`,
//!   its ssh client configuration on `/etc/ssh/ssh_config`, a Slurm cluster's configuration on
//!   `/etc/slurm`), bound to files in the state dir;
//! - the **router** namespace has one port on every cluster's bridge (`.254`) and runs
//!   `hmw-wan-router`; every host routes the other clusters' subnets through it;
//! - the **launch** host (the user's machine) is only on the management bridge, whose other
//!   ports are isolated: it reaches every entry host, the entry hosts cannot reach each other
//!   that way, so an emulated outage cuts clusters from each other, not from the user.
//!
//! The parts, each a file: `instance.rs` (where a testbed is), `preflight.rs` (what building
//! one needs), `up.rs` (bringing it up), `build.rs` (its namespaces, links, cgroups and
//! daemons), `commands.rs` (running programs on its hosts), `netns.rs` (its network
//! namespaces), `cpu.rs` (its CPU quotas and weights), `conditions.rs` (changing them while it
//! runs), `faults.rs` (failing a host: its processes killed, its LAN cut), `down.rs` (taking
//! it down, and what remains), `status.rs` (its summary).

mod build;
pub(crate) mod commands;
mod conditions;
mod cpu;
mod down;
mod faults;
mod instance;
mod netns;
mod preflight;
mod status;
mod up;

pub use commands::{
    exec, exec_output, host_command, join_cgroup_on_exec, launch_host, shell_quote, spawn_daemon,
};
pub use conditions::{control, set_perf};
pub use cpu::{apply_quota, cgroups_of, TESTBED_WEIGHT};
pub use down::{down, leftovers};
pub use faults::{cut_lan, kill_host, revive_host};
pub use instance::Instance;
pub use netns::{netns_exists, netns_pids};
pub use preflight::preflight;
pub use status::status_text;
pub use up::{find_router, fnv_hex, up, UpOptions, UpOutcome};
