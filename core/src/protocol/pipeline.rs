//! The messages of a pipeline run, between its controller (the main cluster's first rank:
//! source, sink, the decisions), the clusters' heads (the other clusters' first ranks: their
//! stage managers), the nodes (workers: the stages) and the communication managers that carry
//! them between clusters. Every rank is named by an [`Address`]; a message for another
//! cluster travels inside [`PipeMessage::Routed`] to the CM that leads there, over the link,
//! and on to its rank.

use serde::{Deserialize, Serialize};

use super::report::LinkSummary;

/// A rank of the run: its cluster (index in the run's cluster list, the main one 0) and its
/// rank in that cluster's MPI job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Address {
    /// The cluster's index.
    pub cluster: u16,
    /// The rank in the cluster.
    pub rank: u32,
}

impl Address {
    /// The controller: the main cluster's first rank.
    pub const CONTROLLER: Address = Address {
        cluster: 0,
        rank: 0,
    };

    /// Rank `rank` of cluster `cluster`.
    pub fn new(cluster: usize, rank: usize) -> Self {
        Address {
            cluster: cluster as u16,
            rank: rank as u32,
        }
    }

    /// The rank in its cluster.
    pub fn rank(self) -> usize {
        self.rank as usize
    }

    /// The cluster's index.
    pub fn cluster(self) -> usize {
        self.cluster as usize
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.cluster, self.rank)
    }
}

/// The seconds one stage took for one item on one node: the time travels with the item.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StageTime {
    /// The stage (index).
    pub stage: u32,
    /// The node that computed it.
    pub node: Address,
    /// Seconds of computation.
    pub seconds: f64,
}

/// An item on its way through the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Its sequence number: the source's order, which the sink receives it in.
    pub seq: u64,
    /// The mapping it travels under.
    pub epoch: u32,
    /// The group it goes to next (the number of groups: the sink).
    pub group: u32,
    /// Its value, encoded: the source's, or the output of the last stage it went through.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
    /// What each stage it went through took.
    pub times: Vec<StageTime>,
}

/// Consecutive stages, the nodes that compute them and the manager that feeds them when they
/// are several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRanks {
    /// Its first stage.
    pub first: u32,
    /// Its last stage.
    pub last: u32,
    /// The nodes computing its items.
    pub replicas: Vec<Address>,
    /// The manager feeding them (its cluster's head), when they are several.
    pub manager: Option<Address>,
}

impl GroupRanks {
    /// Where an item for this group goes: its manager, or its one replica.
    pub fn entry(&self) -> Address {
        self.manager.unwrap_or(self.replicas[0])
    }
}

/// The mapping every rank follows from its epoch on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Assignment {
    /// It replaces the mappings of earlier epochs.
    pub epoch: u32,
    /// The groups, first stages first.
    pub groups: Vec<GroupRanks>,
}

impl Assignment {
    /// Where an item goes after group `group`: the next group's entry, or the sink.
    pub fn after(&self, group: usize) -> (u32, Address) {
        let next = group + 1;
        match self.groups.get(next) {
            Some(g) => (next as u32, g.entry()),
            None => (self.groups.len() as u32, Address::CONTROLLER),
        }
    }

    /// The group `node` computes, if any.
    pub fn group_of(&self, node: Address) -> Option<usize> {
        self.groups.iter().position(|g| g.replicas.contains(&node))
    }
}

/// What one calibration of a node measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Seconds of one item of each stage (the mean of the repeats after the first).
    pub stage_s: Vec<f64>,
    /// Bytes of each stage's output.
    pub output_bytes: Vec<u64>,
    /// The coefficient of variation of the repeats' whole-chain times.
    pub chain_cv: f64,
}

/// The ranks of one cluster, as its head reads them from its machine file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ClusterRanks {
    /// Each rank's host.
    pub hosts: Vec<String>,
    /// Its workers: the nodes that may compute stages.
    pub nodes: Vec<u32>,
    /// Its CM towards its parent cluster (none in the main cluster).
    pub upstream: Option<u32>,
    /// Its CMs towards the clusters below it: (cluster, rank).
    pub downstream: Vec<(u16, u32)>,
}

/// A message of a pipeline run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PipeMessage {
    /// A head to the controller at start: its cluster's ranks.
    Hello {
        /// The cluster.
        cluster: u16,
        /// Its ranks.
        ranks: ClusterRanks,
    },
    /// An item, to a group's entry or to the sink.
    Item(Item),
    /// A replica to its group's manager: it finished an item, it has room for another.
    Done {
        /// The mapping the item travelled under (a late `Done` of an earlier mapping gives
        /// no room).
        epoch: u32,
        /// The group.
        group: u32,
        /// The replica.
        replica: Address,
    },
    /// The controller to a node: time `repeats` items of every stage, from `sample` (an item
    /// of the source).
    Calibrate {
        /// The source's item, encoded.
        #[serde(with = "serde_bytes")]
        sample: Vec<u8>,
        /// How many times.
        repeats: u32,
    },
    /// A node's calibration.
    Calibrated {
        /// The node.
        node: Address,
        /// What it measured.
        calibration: Calibration,
    },
    /// The controller to every rank: the mapping from now on.
    Assign(Assignment),
    /// A rank to the controller: it follows the mapping of `epoch`.
    Assigned {
        /// The mapping's epoch.
        epoch: u32,
        /// The rank.
        from: Address,
    },
    /// The controller to a rank: the run is over.
    Stop,
    /// A rank to the controller: stopped, with what it did.
    Bye {
        /// The rank.
        from: Address,
        /// What it did.
        report: RankReport,
    },
    /// A rank to the controller: it cannot go on.
    Failed {
        /// The rank.
        from: Address,
        /// Why.
        message: String,
    },
    /// A message for a rank of another cluster, on its way through the CMs.
    Routed {
        /// Where it goes.
        to: Address,
        /// The message, encoded.
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
}

/// What a rank plays in a pipeline run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PipeRole {
    /// The main cluster's first rank: source, sink, decisions, its cluster's managers.
    #[default]
    Controller,
    /// Another cluster's first rank: its cluster's managers.
    Head,
    /// A worker: the stages.
    Node,
    /// A communication manager: the link to another cluster.
    Cm,
}

/// What one rank did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// Its host.
    pub host: String,
    /// Its role.
    pub role: PipeRole,
    /// Items of each stage it computed.
    pub stage_items: Vec<u64>,
    /// Seconds it computed each stage.
    pub stage_busy_s: Vec<f64>,
    /// Calibrations it made.
    pub calibrations: u64,
    /// Items its managers handed to replicas.
    pub handed: u64,
    /// Its link, for a CM (always written: the report travels in bincode, which cannot skip
    /// a field).
    #[serde(default)]
    pub link: Option<LinkSummary>,
}
