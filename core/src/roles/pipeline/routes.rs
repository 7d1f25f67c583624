//! Where a message for any rank of the run goes first from this rank: straight to a rank of
//! this cluster, or, wrapped in [`PipeMessage::Routed`], to the CM of this cluster that leads
//! towards the destination's cluster (down the tree through a CM facing a cluster below, up
//! through the CM facing this cluster's parent).

use std::collections::BTreeMap;

use super::output::PipeOutput;
use crate::{
    error::CoreError,
    machinefile::{Facing, MachineFile},
    pipeline::PipelineConfig,
    protocol::{
        encode,
        pipeline::{Address, ClusterRanks, PipeMessage},
    },
};

/// This rank's view of the run's clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct Routes {
    me: Address,
    /// Each cluster's parent (the main one has none).
    parents: Vec<Option<usize>>,
    /// The CM of this cluster facing each cluster directly below it.
    down: BTreeMap<usize, usize>,
    /// The CM facing this cluster's parent.
    up: Option<usize>,
}

impl Routes {
    /// The routes of rank `rank` of the cluster `machines` describes, in the run `config`
    /// lists: this cluster is the one named by its first line's `cluster=` (any name when the
    /// configuration lists no cluster: a run of one cluster), the clusters below are those
    /// named by its CMs facing a master (`# M ... cluster=`).
    pub fn new(
        config: &PipelineConfig,
        machines: &MachineFile,
        rank: usize,
    ) -> Result<Routes, CoreError> {
        let setup =
            |message: String| CoreError::Setup(format!("{}: {message}", machines.path.display()));
        let own = machines.ranks[0].annotations.cluster.as_deref();
        let cluster = config.cluster_index(own).ok_or_else(|| {
            setup(format!(
                "this cluster ({}) is not among [[pipeline.cluster]] of the configuration",
                own.unwrap_or("no cluster= on the first line")
            ))
        })?;
        let parents: Vec<Option<usize>> = if config.cluster.is_empty() {
            vec![None]
        } else {
            config
                .cluster
                .iter()
                .enumerate()
                .map(|(i, c)| match (&c.parent, i) {
                    (_, 0) => None,
                    (Some(p), _) => config.cluster_index(Some(p)),
                    (None, _) => Some(0),
                })
                .collect()
        };
        let mut down = BTreeMap::new();
        let mut up = None;
        for (r, line) in machines.ranks.iter().enumerate() {
            let Some(cm) = &line.cm else { continue };
            match cm.facing {
                Facing::SubMaster => up = Some(r),
                Facing::Master => {
                    let below = line.annotations.cluster.as_deref();
                    let index = config
                        .cluster_index(below)
                        .filter(|&i| parents.get(i) == Some(&Some(cluster)))
                        .ok_or_else(|| {
                            setup(format!(
                                "line {}: this CM's cluster ({}) is not a cluster below this one \
                                 in [[pipeline.cluster]]",
                                line.line_no,
                                below.unwrap_or("no cluster=")
                            ))
                        })?;
                    down.insert(index, r);
                }
            }
        }
        if cluster != 0 && up.is_none() {
            return Err(setup(
                "an external cluster needs its CM facing the parent cluster (# S ...)".into(),
            ));
        }
        Ok(Routes {
            me: Address::new(cluster, rank),
            parents,
            down,
            up,
        })
    }

    /// This rank.
    pub fn me(&self) -> Address {
        self.me
    }

    /// The clusters of the run.
    pub fn clusters(&self) -> usize {
        self.parents.len()
    }

    /// Each cluster's parent.
    pub fn parent(&self, cluster: usize) -> Option<usize> {
        self.parents.get(cluster).copied().flatten()
    }

    /// The ranks of this cluster as its machine file gives them, for the controller.
    pub fn cluster_ranks(&self, machines: &MachineFile) -> ClusterRanks {
        ClusterRanks {
            hosts: machines.ranks.iter().map(|l| l.host.clone()).collect(),
            nodes: machines.worker_ranks().iter().map(|&r| r as u32).collect(),
            upstream: self.up.map(|r| r as u32),
            downstream: self
                .down
                .iter()
                .map(|(&c, &r)| (c as u16, r as u32))
                .collect(),
        }
    }

    /// The rank of this cluster a message for `to` goes to first, and whether it must be
    /// wrapped for a CM (`None`: no way there).
    pub fn hop(&self, to: Address) -> Option<(usize, bool)> {
        if to.cluster() == self.me.cluster() {
            return Some((to.rank(), false));
        }
        // Up the tree from the destination: the cluster just below this one on that path.
        let mut at = to.cluster();
        for _ in 0..self.parents.len() {
            match self.parent(at) {
                Some(p) if p == self.me.cluster() => {
                    return self.down.get(&at).map(|&cm| (cm, true));
                }
                Some(p) => at = p,
                None => break,
            }
        }
        self.up.map(|cm| (cm, true))
    }

    /// Send `message` to `to`, through the CMs when it is in another cluster.
    pub fn send(
        &self,
        to: Address,
        message: &PipeMessage,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        self.send_bytes(to, encode(message), out)
    }

    /// [`send`](Self::send) of a message already encoded.
    pub fn send_bytes(
        &self,
        to: Address,
        bytes: Vec<u8>,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let (rank, wrap) = self
            .hop(to)
            .ok_or_else(|| CoreError::Setup(format!("rank {}: no route to rank {to}", self.me)))?;
        let bytes = if wrap {
            encode(&PipeMessage::Routed { to, bytes })
        } else {
            bytes
        };
        out.push(PipeOutput::Send { to: rank, bytes });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config() -> PipelineConfig {
        toml::from_str(
            "[[cluster]]\nname = \"a\"\n[[cluster]]\nname = \"b\"\n[[cluster]]\nname = \
             \"c\"\nparent = \"b\"\n[[cluster]]\nname = \"d\"\n",
        )
        .unwrap()
    }

    fn file(text: &str) -> MachineFile {
        MachineFile::parse(Path::new("hosts"), text).unwrap()
    }

    #[test]
    fn hops_go_down_towards_the_destination_and_up_otherwise() {
        // b: its head, a node, its CM up to a, its CM down to c.
        let b = file(
            "hb # cluster=b\nnb\ncb # S 0 7000 ha name=b-a\ncc # M 1 7001 name=b-c \
             cluster=c\n",
        );
        let routes = Routes::new(&config(), &b, 1).unwrap();
        assert_eq!(routes.me(), Address::new(1, 1));
        assert_eq!(routes.hop(Address::new(1, 0)), Some((0, false)));
        assert_eq!(routes.hop(Address::new(2, 1)), Some((3, true)));
        assert_eq!(routes.hop(Address::CONTROLLER), Some((2, true)));
        assert_eq!(routes.hop(Address::new(3, 1)), Some((2, true)));
        let ranks = routes.cluster_ranks(&b);
        assert_eq!(ranks.nodes, vec![1]);
        assert_eq!(ranks.upstream, Some(2));
        assert_eq!(ranks.downstream, vec![(2, 3)]);
        // The main cluster reaches c through its CM facing b.
        let a = file("ha # cluster=a\nna\nca # M 1 7000 name=a-b cluster=b\n");
        let routes = Routes::new(&config(), &a, 0).unwrap();
        assert_eq!(routes.hop(Address::new(2, 0)), Some((2, true)));
        assert_eq!(routes.hop(Address::new(3, 0)), None);
        let mut out = Vec::new();
        routes
            .send(Address::new(1, 1), &PipeMessage::Stop, &mut out)
            .unwrap();
        let PipeOutput::Send { to: 2, bytes } = &out[0] else {
            panic!("{out:?}")
        };
        let routed: PipeMessage = crate::protocol::decode(bytes, "routed").unwrap();
        assert!(matches!(routed, PipeMessage::Routed { to, .. } if to == Address::new(1, 1)));
    }

    #[test]
    fn a_cluster_the_configuration_does_not_know_is_an_error() {
        let x = file("hx # cluster=x\nn\n");
        let err = Routes::new(&config(), &x, 0).unwrap_err().to_string();
        assert!(err.contains("this cluster (x) is not among"), "{err}");
        let wrong_cm = file("ha # cluster=a\nca # M 1 7000 name=a-c cluster=c\n");
        let err = Routes::new(&config(), &wrong_cm, 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        // Without a cluster list, one cluster whatever its name.
        let one = Routes::new(&PipelineConfig::default(), &x, 1).unwrap();
        assert_eq!(one.me(), Address::new(0, 1));
    }
}
