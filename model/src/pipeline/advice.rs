//! Tuning advice for a mapped pipeline: replicate the bottleneck stage, and by how many; merge
//! consecutive stages that are light enough; or say that a WAN limits it
//! (`docs/model.md`, "Pipelines", (168), (169)).

use serde::Serialize;

use super::flow::{Evaluation, Part};
use super::production::{merged_production_time, processors_for};
use super::system::{Mapping, PipelineSystem};

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PipelineAdvice {
    /// (169): the bottleneck group, replicated behind a manager, comes down to the next
    /// slowest part's time with `replicas` replicas (`replicas + 1` processors with the
    /// manager, PL(4)/(5)); none is given when the manager's own time is above it.
    Replicate {
        /// The group (index in the mapping).
        group: usize,
        /// Its first and last stage.
        stages: (usize, usize),
        /// The time to reach: the next slowest part's.
        target_s: f64,
        /// Replicas needed.
        replicas: u64,
    },
    /// (168): groups `group` and `group + 1` on one node (the faster for them) take
    /// `merged_s`, no more than the bottleneck: a node is freed, and a WAN when they sit on
    /// two clusters.
    Merge {
        /// The first of the two groups.
        group: usize,
        /// The stages they hold.
        stages: (usize, usize),
        /// Their time merged.
        merged_s: f64,
        /// The node that would hold both.
        node: usize,
        /// A WAN between them that the merge saves.
        saves_wan: bool,
    },
    /// The bottleneck is a WAN: put the stages on either side of it in one cluster, or send
    /// fewer bytes across it.
    WanBound {
        /// The child cluster whose link it is.
        cluster: usize,
        /// Towards the main cluster.
        up: bool,
        /// Bytes per item crossing it.
        bytes: f64,
        /// Its production time.
        production_s: f64,
    },
}

/// The advice for `mapping`, evaluated as `evaluation`, on `system` (168)(169).
pub fn advise(
    system: &PipelineSystem,
    mapping: &Mapping,
    evaluation: &Evaluation,
) -> Vec<PipelineAdvice> {
    let mut advice = Vec::new();
    let bottleneck = &evaluation.parts[evaluation.bottleneck];
    match bottleneck.part {
        Part::Group { group } => {
            let next_slowest = evaluation
                .parts
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != evaluation.bottleneck)
                .map(|(_, p)| p.production_s)
                .fold(0.0, f64::max);
            // Alone, the group has no next slowest part to come down to.
            if next_slowest > 0.0 && next_slowest < evaluation.bottleneck_s {
                let g = &mapping.groups[group];
                let detail = &evaluation.groups[group];
                let one = detail.replica_s.iter().sum::<f64>() / detail.replica_s.len() as f64;
                let cluster = system.nodes[g.replicas[0]].cluster;
                let processors = processors_for(
                    one,
                    next_slowest,
                    system.app.input_bytes(g.first),
                    &system.lan_cost(cluster),
                );
                // Out of reach (its manager alone is slower than the target): no advice.
                if let Some(processors) = processors {
                    advice.push(PipelineAdvice::Replicate {
                        group,
                        stages: (g.first, g.last),
                        target_s: next_slowest,
                        replicas: processors.saturating_sub(1),
                    });
                }
            }
        }
        Part::Wan { cluster, up, bytes } => advice.push(PipelineAdvice::WanBound {
            cluster,
            up,
            bytes,
            production_s: bottleneck.production_s,
        }),
    }
    for (i, pair) in mapping.groups.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        if a.managed() || b.managed() {
            continue;
        }
        let (na, nb) = (a.replicas[0], b.replicas[0]);
        let merged = |node: usize| {
            merged_production_time(
                &system.nodes[node].stage_s[a.first..=b.last],
                Some(system.app.stages[b.last].output_bytes),
                &system.lan_cost(system.nodes[node].cluster),
            )
        };
        let (node, merged_s) = if merged(na) <= merged(nb) {
            (na, merged(na))
        } else {
            (nb, merged(nb))
        };
        if merged_s <= evaluation.bottleneck_s {
            advice.push(PipelineAdvice::Merge {
                group: i,
                stages: (a.first, b.last),
                merged_s,
                node,
                saves_wan: system.nodes[na].cluster != system.nodes[nb].cluster,
            });
        }
    }
    advice
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::flow::evaluate;
    use crate::pipeline::system::{one_cluster, PipelineOptions};

    fn system(stage_s: &[f64]) -> PipelineSystem {
        let options = PipelineOptions {
            message_overhead_s: 0.01,
            ..PipelineOptions::default()
        };
        one_cluster(10, stage_s, stage_s.len(), options)
    }

    #[test]
    fn replicate_the_bottleneck_and_merge_the_light() {
        // 0.1, 0.2, 1.0 s (+ 10 ms each): the last to 0.21 s needs 1.01 / 0.2 + 1 = 6.05 ->
        // 7 processors, 6 replicas; the first two merged take 0.31 s <= 1.01 s.
        let s = system(&[0.1, 0.2, 1.0]);
        let mapping = Mapping::one_stage_per_node(&[0, 1, 2]);
        let e = evaluate(&s, &mapping).unwrap();
        let advice = advise(&s, &mapping, &e);
        assert_eq!(
            advice[0],
            PipelineAdvice::Replicate {
                group: 2,
                stages: (2, 2),
                target_s: 0.21000000000000002,
                replicas: 6,
            }
        );
        assert!(matches!(
            advice[1],
            PipelineAdvice::Merge {
                group: 0,
                stages: (0, 1),
                saves_wan: false,
                ..
            }
        ));
        // The second and third merged (1.21 s) would be slower than the bottleneck.
        assert_eq!(advice.len(), 2);
    }
}
