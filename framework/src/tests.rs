//! Whole clusters played in this process: the drivers over the in-process transport, with
//! real threads, around the cores of `hmw-core`.

mod in_process;
mod journaled;
mod result_operations;
mod simulated_cores;
mod two_clusters_in_process;
