//! The pipeline model's input as the controller knows the run: its clusters and options from
//! the configuration, its stages from the application (their costs and sizes from the
//! configuration or the calibration), its nodes from a calibration made before the run or
//! during it; and mappings of the model's nodes as ranks of the run.

use hmw_model::pipeline::{
    Group, Mapping, PipelineApp, PipelineCluster, PipelineNode, PipelineOptions, PipelineSystem,
    StageParams,
};

use super::{ControllerCore, ItemSource};
use crate::{
    error::CoreError,
    protocol::pipeline::{Address, Assignment, GroupRanks},
};

/// The median of `values` (0 for none).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

impl<S: ItemSource> ControllerCore<S> {
    /// The clusters, stages and options of the model; the nodes are the caller's.
    fn skeleton(&self, measured_output_bytes: &[f64]) -> Result<PipelineSystem, CoreError> {
        let config = &self.setup.config;
        let clusters = if config.cluster.is_empty() {
            vec![PipelineCluster {
                name: "main".into(),
                parent: None,
                lan_bytes_per_s: f64::INFINITY,
                wan_in_bytes_per_s: f64::INFINITY,
                wan_out_bytes_per_s: f64::INFINITY,
                wan_rtt_s: 0.0,
            }]
        } else {
            config
                .cluster
                .iter()
                .enumerate()
                .map(|(i, c)| PipelineCluster {
                    name: c.name.clone(),
                    parent: self.setup.routes.parent(i),
                    lan_bytes_per_s: c.lan_bytes_per_s.unwrap_or(f64::INFINITY),
                    wan_in_bytes_per_s: c.wan_in_bytes_per_s.unwrap_or(f64::INFINITY),
                    wan_out_bytes_per_s: c.wan_out_bytes_per_s.unwrap_or(f64::INFINITY),
                    wan_rtt_s: c.wan_rtt_s.unwrap_or(0.0),
                })
                .collect()
        };
        let mut stages = Vec::new();
        for (i, (name, oper)) in self.setup.stages.iter().enumerate() {
            let entry = config.stage.get(i);
            if let Some(e) = entry.filter(|e| &e.name != name) {
                return Err(CoreError::Setup(format!(
                    "[pipeline] stage {}: named `{}`, the application's stage {} is `{name}`",
                    i + 1,
                    e.name,
                    i + 1
                )));
            }
            stages.push(StageParams {
                name: name.clone(),
                oper: entry.and_then(|e| e.oper).unwrap_or(*oper),
                output_bytes: entry
                    .and_then(|e| e.output_bytes)
                    .or_else(|| measured_output_bytes.get(i).copied())
                    .unwrap_or(0.0),
            });
        }
        Ok(PipelineSystem {
            app: PipelineApp {
                items: config.items.unwrap_or(0),
                item_bytes: self.sample.as_ref().map_or(0.0, |s| s.len() as f64),
                stages,
            },
            nodes: Vec::new(),
            clusters,
            options: PipelineOptions {
                sends: config.sends,
                message_overhead_s: config.message_overhead_s,
                wan_stage: config.wan_stage,
                remap_cost: true,
                window: config.window,
                replica_buffers: config.replica_buffers,
                calibration_repeats: config.calibration_repeats,
                detection_items: config.detection_items,
                detection_by_cost: config.detection_by_cost,
            },
        })
    }

    fn node(&self, at: Address, stage_s: Vec<f64>, repeat_cv: f64) -> PipelineNode {
        PipelineNode {
            cluster: at.cluster(),
            host: self.host_of(at),
            stage_s,
            repeat_cv,
        }
    }

    /// The model of the run from the calibrations just made, its nodes in address order.
    pub(super) fn calibrated(&mut self) -> Result<PipelineSystem, CoreError> {
        let stages = self.setup.stages.len();
        let output_bytes: Vec<f64> = (0..stages)
            .map(|i| {
                median(
                    self.calibrations
                        .values()
                        .filter_map(|c| c.output_bytes.get(i).map(|&b| b as f64))
                        .collect(),
                )
            })
            .collect();
        let mut system = self.skeleton(&output_bytes)?;
        self.model_nodes = self.calibrations.keys().copied().collect();
        system.nodes = self
            .calibrations
            .iter()
            .map(|(&at, c)| self.node(at, c.stage_s.clone(), c.chain_cv))
            .collect();
        Ok(system)
    }

    /// The model of the run and the mapping to start with, from the configuration's
    /// calibration (`[[pipeline.node]]`) and mapping (`[[pipeline.group]]`).
    pub(super) fn configured(&mut self) -> Result<(PipelineSystem, Mapping), CoreError> {
        let mut system = self.skeleton(&[])?;
        let config = self.setup.config.clone();
        let known = self.nodes();
        let address = |cluster: &str, rank: u32, key: &str| -> Result<Address, CoreError> {
            let c = config.cluster_index(Some(cluster)).ok_or_else(|| {
                CoreError::Setup(format!("[pipeline] {key}: no cluster `{cluster}`"))
            })?;
            let at = Address::new(c, rank as usize);
            if known.contains(&at) {
                Ok(at)
            } else {
                Err(CoreError::Setup(format!(
                    "[pipeline] {key}: rank {rank} of cluster `{cluster}` is not a worker"
                )))
            }
        };
        self.model_nodes.clear();
        for n in &config.node {
            let at = address(&n.cluster, n.rank, "node")?;
            self.model_nodes.push(at);
            system
                .nodes
                .push(self.node(at, n.stage_s.clone(), n.chain_cv));
        }
        let mut groups = Vec::new();
        for g in &config.group {
            let mut replicas = Vec::new();
            for r in &g.replicas {
                let at = address(&r.cluster, r.rank, "group")?;
                let index = self
                    .model_nodes
                    .iter()
                    .position(|&n| n == at)
                    .ok_or_else(|| {
                        CoreError::Setup(format!(
                            "[pipeline] group: rank {} of cluster `{}` has no [[pipeline.node]] \
                         calibration",
                            r.rank, r.cluster
                        ))
                    })?;
                replicas.push(index);
            }
            groups.push(Group {
                first: g.first as usize,
                last: g.last as usize,
                replicas,
            });
        }
        Ok((system, Mapping { groups }))
    }

    /// `mapping` of the model's nodes as ranks: a group of several replicas is fed by its
    /// cluster's head (the controller on the main cluster).
    pub(super) fn to_assignment(
        &self,
        system: &PipelineSystem,
        mapping: &Mapping,
        epoch: u32,
    ) -> Assignment {
        let groups = mapping
            .groups
            .iter()
            .map(|g| {
                let replicas: Vec<Address> =
                    g.replicas.iter().map(|&k| self.model_nodes[k]).collect();
                let cluster = system.nodes[g.replicas[0]].cluster;
                GroupRanks {
                    first: g.first as u32,
                    last: g.last as u32,
                    manager: g.managed().then(|| Address::new(cluster, 0)),
                    replicas,
                }
            })
            .collect();
        Assignment { epoch, groups }
    }

    /// `assignment` as the model's mapping.
    pub(super) fn to_mapping(&self, assignment: &Assignment) -> Mapping {
        Mapping {
            groups: assignment
                .groups
                .iter()
                .map(|g| Group {
                    first: g.first as usize,
                    last: g.last as usize,
                    replicas: g
                        .replicas
                        .iter()
                        .filter_map(|r| self.model_nodes.iter().position(|n| n == r))
                        .collect(),
                })
                .collect(),
        }
    }
}
