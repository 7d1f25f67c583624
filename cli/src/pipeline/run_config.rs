//! The run configuration's `[pipeline]` table `hmw launch` writes for a pipeline plan: the
//! plan's options, clusters and stages, the calibration the prediction came from and the
//! mapping it chose, each node by its rank in the machine files the layout writes (a
//! cluster's first line its head, then its workers in plan order).

use anyhow::{Context as _, Result};
use hmw_core::pipeline::config::{
    ClusterEntry, GroupEntry, NodeEntry, PipelineConfig, RankRef, StageEntry,
};
use hmw_model::{
    pipeline::{Mapping, PipelineSystem},
    plan::{PipelinePlan, Plan},
};

/// The rank of each node of `system` in its cluster's machine file.
fn node_ranks(system: &PipelineSystem) -> Vec<RankRef> {
    let mut seen = vec![0u32; system.clusters.len()];
    system
        .nodes
        .iter()
        .map(|n| {
            seen[n.cluster] += 1;
            RankRef {
                cluster: system.clusters[n.cluster].name.clone(),
                rank: seen[n.cluster],
            }
        })
        .collect()
}

/// `[pipeline]` for a run of `plan` (its `[pipeline]` table `pipeline`) modelled as `system`,
/// starting with `mapping`; without a mapping, the run calibrates first.
pub(crate) fn pipeline_config(
    pipeline: &PipelinePlan,
    system: &PipelineSystem,
    mapping: Option<&Mapping>,
) -> PipelineConfig {
    let finite = |v: f64| v.is_finite().then_some(v);
    let parent_name = |c: &hmw_model::pipeline::PipelineCluster| {
        c.parent.map(|p| system.clusters[p].name.clone())
    };
    let ranks = node_ranks(system);
    let options = &pipeline.options;
    PipelineConfig {
        items: Some(pipeline.items),
        mapping: pipeline.mapping,
        threshold: pipeline.threshold,
        window: options.window,
        replica_buffers: options.replica_buffers,
        calibration_repeats: options.calibration_repeats,
        detection_items: options.detection_items,
        detection_by_cost: options.detection_by_cost,
        sends: options.sends,
        message_overhead_s: options.message_overhead_s,
        wan_stage: options.wan_stage,
        calibrate_only: false,
        cluster: system
            .clusters
            .iter()
            .map(|c| ClusterEntry {
                name: c.name.clone(),
                parent: parent_name(c),
                lan_bytes_per_s: finite(c.lan_bytes_per_s),
                wan_in_bytes_per_s: finite(c.wan_in_bytes_per_s),
                wan_out_bytes_per_s: finite(c.wan_out_bytes_per_s),
                wan_rtt_s: c.parent.map(|_| c.wan_rtt_s),
            })
            .collect(),
        stage: system
            .app
            .stages
            .iter()
            .map(|s| StageEntry {
                name: s.name.clone(),
                oper: Some(s.oper),
                output_bytes: Some(s.output_bytes),
            })
            .collect(),
        node: match mapping {
            Some(_) => system
                .nodes
                .iter()
                .zip(&ranks)
                .map(|(n, r)| NodeEntry {
                    cluster: r.cluster.clone(),
                    rank: r.rank,
                    stage_s: n.stage_s.clone(),
                    chain_cv: n.repeat_cv,
                })
                .collect(),
            None => Vec::new(),
        },
        group: mapping
            .map(|m| {
                m.groups
                    .iter()
                    .map(|g| GroupEntry {
                        first: g.first as u32,
                        last: g.last as u32,
                        replicas: g.replicas.iter().map(|&k| ranks[k].clone()).collect(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The clusters of `plan` as the run configuration lists them: names in plan order (the main
/// one first), parents, and the rates and round trips the plan gives.
pub(crate) fn cluster_entries(plan: &Plan) -> Result<Vec<ClusterEntry>> {
    plan.clusters
        .iter()
        .map(|c| {
            let launch = c
                .launch_settings()
                .map_err(|e| anyhow::anyhow!("cluster {}: launch: {}", c.name, e.message()))?;
            let parent = match (c.main, launch.parent) {
                (true, _) => None,
                (false, Some(p)) => Some(p),
                (false, None) => plan.clusters.first().map(|m| m.name.clone()),
            };
            Ok(ClusterEntry {
                name: c.name.clone(),
                lan_bytes_per_s: c.lan_bytes_per_s,
                wan_in_bytes_per_s: c.wan_in_bytes_per_s,
                wan_out_bytes_per_s: c.wan_out_bytes_per_s,
                wan_rtt_s: parent.as_ref().map(|_| c.wan_rtt_s(None)),
                parent,
            })
        })
        .collect()
}

/// `config` as a TOML table for the run configuration file.
pub(crate) fn as_table(config: &PipelineConfig) -> Result<toml::Table> {
    toml::Table::try_from(config).context("the [pipeline] table of the run configuration")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_named_by_their_rank_in_the_layouts_machine_files() {
        let text = include_str!("../../../configs/pipeline-two-clusters.toml");
        let plan = Plan::from_toml_str(text).unwrap();
        let system = plan.pipeline_system(None).unwrap();
        let (mapping, _) =
            hmw_model::pipeline::mapping_for(&system, hmw_model::plan::MappingMode::Model).unwrap();
        let config = pipeline_config(plan.pipeline.as_ref().unwrap(), &system, Some(&mapping));
        let layout =
            crate::layout::layout(&plan, None, crate::layout::Target::Deployment, None, || {
                7000
            })
            .unwrap();
        for node in &config.node {
            let cluster = layout
                .clusters
                .iter()
                .find(|c| c.name == node.cluster)
                .unwrap();
            let line = cluster
                .machine_file
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .nth(node.rank as usize)
                .unwrap();
            let host = line.split_whitespace().next().unwrap();
            let index = config.node.iter().position(|n| n == node).unwrap();
            assert_eq!(host, system.nodes[index].host, "{node:?}");
        }
        let table = as_table(&config).unwrap();
        let back: PipelineConfig = table.try_into().unwrap();
        assert_eq!(back, config);
        assert!(back.check(system.app.stages.len()).is_ok());
    }
}
