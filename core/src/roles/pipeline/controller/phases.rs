//! The controller's phases: the start once every cluster is known, calibrations, mappings
//! handed out and followed, the drain the threshold calls for, and the end.

use std::{
    collections::{BTreeSet, VecDeque},
    time::Duration,
};

use hmw_model::pipeline::{calibration::calls_for_remap, Evaluation};

use super::{ControllerCore, ItemSource, Phase};
use crate::{
    error::CoreError,
    pipeline::stats::{CalibrationRecord, DecisionKind, MappingRecord, PipeDecision, RankReport},
    protocol::pipeline::{Address, Assignment, Calibration, PipeMessage},
    roles::pipeline::{monitor::Monitor, output::PipeOutput},
};

impl<S: ItemSource> ControllerCore<S> {
    fn decide(&mut self, now: Duration, decision: DecisionKind) {
        tracing::info!(
            at_s = now.as_secs_f64(),
            "{}",
            crate::pipeline::stats::describe(&decision)
        );
        self.stats.decisions.push(PipeDecision {
            at_s: now.as_secs_f64(),
            delivered: self.delivered,
            decision,
        });
    }

    /// Once every cluster said which ranks it has: the configuration's mapping, or a
    /// calibration of every node first.
    pub(super) fn begin_when_gathered(
        &mut self,
        now: Duration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        if self.phase != Phase::Gathering || self.clusters.iter().any(Option::is_none) {
            return Ok(());
        }
        if self.nodes().is_empty() {
            return Err(CoreError::Setup(
                "the pipeline has no node: give at least one worker line".into(),
            ));
        }
        if !self.take_sample() {
            return self.stop(now, out);
        }
        if self.setup.config.group.is_empty() {
            return self.calibrate(now, out);
        }
        let (system, mapping) = self.configured()?;
        let evaluation = hmw_model::pipeline::evaluate(&system, &mapping).map_err(|e| {
            CoreError::Setup(format!("[pipeline] group: the mapping does not fit: {e}"))
        })?;
        let assignment = self.to_assignment(&system, &mapping, 1);
        self.assign(now, assignment, &system, &evaluation, out)
    }

    /// Every node computes the source's first item through every stage.
    pub(super) fn calibrate(
        &mut self,
        now: Duration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let nodes = self.nodes();
        self.decide(now, DecisionKind::Calibrate { nodes: nodes.len() });
        self.calibrations.clear();
        let message = PipeMessage::Calibrate {
            sample: self.sample.clone().unwrap_or_default(),
            repeats: self.setup.config.calibration_repeats as u32,
        };
        for &node in &nodes {
            self.setup.routes.send(node, &message, out)?;
        }
        self.phase = Phase::Calibrating {
            pending: nodes.into_iter().collect(),
        };
        Ok(())
    }

    pub(super) fn on_calibrated(
        &mut self,
        now: Duration,
        node: Address,
        calibration: Calibration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let Phase::Calibrating { pending } = &mut self.phase else {
            return Err(CoreError::Protocol {
                rank: node.rank(),
                message: format!("a calibration of {node} that nobody asked for"),
            });
        };
        if !pending.remove(&node) {
            return Err(CoreError::Protocol {
                rank: node.rank(),
                message: format!("a second calibration of {node}"),
            });
        }
        let last = pending.is_empty();
        if calibration.stage_s.len() != self.setup.stages.len() {
            return Err(CoreError::Protocol {
                rank: node.rank(),
                message: format!(
                    "{node} timed {} stages, the pipeline has {}",
                    calibration.stage_s.len(),
                    self.setup.stages.len()
                ),
            });
        }
        self.stats.calibrations.push(CalibrationRecord {
            at_s: now.as_secs_f64(),
            node,
            host: self.host_of(node),
            stage_s: calibration.stage_s.clone(),
            output_bytes: calibration.output_bytes.clone(),
            chain_cv: calibration.chain_cv,
        });
        self.calibrations.insert(node, calibration);
        if !last {
            return Ok(());
        }
        if self.setup.config.calibrate_only {
            return self.stop(now, out);
        }
        let system = self.calibrated()?;
        let (mapping, evaluation) =
            hmw_model::pipeline::mapping_for(&system, self.setup.config.mapping).ok_or_else(
                || CoreError::Setup("the model found no mapping of the stages".into()),
            )?;
        let assignment = self.to_assignment(&system, &mapping, self.assignment.epoch + 1);
        self.assign(now, assignment, &system, &evaluation, out)
    }

    /// Hand `assignment` out to every rank that follows it.
    fn assign(
        &mut self,
        now: Duration,
        assignment: Assignment,
        system: &hmw_model::pipeline::PipelineSystem,
        evaluation: &Evaluation,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let mapping = self.to_mapping(&assignment);
        self.bottleneck_s = evaluation.bottleneck_s;
        self.threshold = hmw_model::pipeline::threshold_value(system, self.setup.config.threshold);
        self.window = hmw_model::pipeline::flow::window_items(system, &mapping, evaluation);
        self.detection_items =
            hmw_model::pipeline::gain::detection_items(system, self.window, evaluation);
        let hosts = assignment
            .groups
            .iter()
            .map(|g| {
                let names: Vec<String> = g.replicas.iter().map(|&r| self.host_of(r)).collect();
                let stages = &self.setup.stages;
                let label = if g.first == g.last {
                    stages[g.first as usize].0.clone()
                } else {
                    format!(
                        "{}..{}",
                        stages[g.first as usize].0, stages[g.last as usize].0
                    )
                };
                format!("{label}: {}", names.join(", "))
            })
            .collect();
        self.stats.mappings.push(MappingRecord {
            epoch: assignment.epoch,
            at_s: now.as_secs_f64(),
            groups: assignment.groups.clone(),
            hosts,
            predicted_bottleneck_s: evaluation.bottleneck_s,
            predicted_latency_s: evaluation.latency_s,
            threshold: self.threshold,
            window: self.window,
            detection_items: self.detection_items,
        });
        if assignment.epoch > 1 {
            self.decide(
                now,
                DecisionKind::Remap {
                    epoch: assignment.epoch,
                    predicted_bottleneck_s: evaluation.bottleneck_s,
                },
            );
        }
        let me = self.me();
        self.managers
            .assign(&assignment, me, self.setup.config.replica_buffers)?;
        let followers = self.followers();
        let message = PipeMessage::Assign(assignment.clone());
        for &rank in &followers {
            self.setup.routes.send(rank, &message, out)?;
        }
        self.assignment = assignment;
        self.phase = Phase::Assigning { pending: followers };
        Ok(())
    }

    pub(super) fn on_assigned(
        &mut self,
        now: Duration,
        epoch: u32,
        from: Address,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let Phase::Assigning { pending } = &mut self.phase else {
            return Err(CoreError::Protocol {
                rank: from.rank(),
                message: format!("{from} follows mapping {epoch}, which is not being handed out"),
            });
        };
        if epoch != self.assignment.epoch || !pending.remove(&from) {
            return Err(CoreError::Protocol {
                rank: from.rank(),
                message: format!("{from} follows mapping {epoch} unasked"),
            });
        }
        if !pending.is_empty() {
            return Ok(());
        }
        self.monitor = Monitor::new(&self.assignment, self.detection_items);
        self.phase = Phase::Running;
        if self.assignment.epoch > 1 {
            self.decide(now, DecisionKind::Resume { epoch });
        } else {
            self.stats.calibration_s = now.as_secs_f64();
        }
        self.issue(now, out)
    }

    /// (157): the slowest group's recent time against `(1 + X) t_b`; past it, drain.
    pub(super) fn check_threshold(&mut self, now: Duration) {
        if self.source_done {
            return;
        }
        let Some((group, measured_s)) = self.monitor.slowest() else {
            return;
        };
        if calls_for_remap(measured_s, self.bottleneck_s, self.threshold) {
            let limit_s = (1.0 + self.threshold.unwrap_or(0.0)) * self.bottleneck_s;
            self.decide(
                now,
                DecisionKind::Drain {
                    group: group as u32,
                    measured_s,
                    limit_s,
                },
            );
            self.phase = Phase::Draining;
        }
    }

    /// Every item is through: stop the nodes and heads.
    pub(super) fn stop(
        &mut self,
        now: Duration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        if let Some(first) = self.first_issue {
            self.stats.makespan_s = self.last_delivery.saturating_sub(first).as_secs_f64();
        }
        let ranks = self.followers();
        for &rank in &ranks {
            self.setup.routes.send(rank, &PipeMessage::Stop, out)?;
        }
        self.phase = Phase::StoppingRanks { pending: ranks };
        self.stop_cms_when_ready(now, out)
    }

    pub(super) fn on_bye(
        &mut self,
        now: Duration,
        from: Address,
        report: RankReport,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let expected = match &mut self.phase {
            Phase::StoppingRanks { pending } => pending.remove(&from),
            Phase::StoppingCms { waiting, .. } if *waiting == Some(from) => {
                *waiting = None;
                true
            }
            _ => false,
        };
        if !expected {
            return Err(CoreError::Protocol {
                rank: from.rank(),
                message: format!("a Bye from {from}, which was not stopped"),
            });
        }
        self.stats.ranks.push((from, report));
        self.stop_cms_when_ready(now, out)
    }

    /// Once the nodes and heads are stopped, the CMs one after the other, the far side of
    /// each link first, deepest links first (so every route stays up while it is used).
    fn stop_cms_when_ready(
        &mut self,
        now: Duration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        if let Phase::StoppingRanks { pending } = &self.phase {
            if !pending.is_empty() {
                return Ok(());
            }
            let order = self.cm_order();
            self.phase = Phase::StoppingCms {
                order,
                waiting: None,
            };
        }
        let Phase::StoppingCms { order, waiting } = &mut self.phase else {
            return Ok(());
        };
        if waiting.is_some() {
            return Ok(());
        }
        match order.pop_front() {
            Some(cm) => {
                *waiting = Some(cm);
                self.setup.routes.send(cm, &PipeMessage::Stop, out)
            }
            None => {
                self.stats.wall_s = now.as_secs_f64();
                self.phase = Phase::Done;
                Ok(())
            }
        }
    }

    /// The CMs in the order they stop: for each cluster below the main one, deepest first,
    /// its CM facing its parent, then the parent's CM facing it.
    fn cm_order(&self) -> VecDeque<Address> {
        let depth = |mut c: usize| {
            let mut d = 0;
            while let Some(p) = self.setup.routes.parent(c) {
                d += 1;
                c = p;
                if d > self.clusters.len() {
                    break;
                }
            }
            d
        };
        let mut below: Vec<usize> = (1..self.clusters.len()).collect();
        below.sort_by_key(|&c| std::cmp::Reverse(depth(c)));
        let mut order = VecDeque::new();
        let mut seen = BTreeSet::new();
        for c in below {
            let ranks = self.clusters[c].as_ref();
            if let Some(up) = ranks.and_then(|r| r.upstream) {
                order.push_back(Address::new(c, up as usize));
            }
            let parent = self.setup.routes.parent(c).unwrap_or(0);
            let facing = self.clusters[parent]
                .as_ref()
                .and_then(|r| r.downstream.iter().find(|(k, _)| *k as usize == c));
            if let Some(&(_, rank)) = facing {
                let cm = Address::new(parent, rank as usize);
                if seen.insert(cm) {
                    order.push_back(cm);
                }
            }
        }
        order
    }
}
