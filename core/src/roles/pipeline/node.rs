//! A node's core (a worker of a pipeline run): it computes the stages of the group the
//! mapping gives it, one item at a time in the order they came, and sends each output on to
//! the next group's entry (or the sink) with the times it took; a replica behind a manager
//! also tells the manager it has room again. It calibrates when asked, follows each new
//! mapping and acknowledges it, and reports what it did when the run stops.

use std::collections::VecDeque;

use super::{output::PipeOutput, routes::Routes};
use crate::{
    error::CoreError,
    pipeline::stats::{PipeRole, RankReport},
    protocol::{
        decode,
        pipeline::{Address, Assignment, Calibration, Item, PipeMessage, StageTime},
    },
};

/// What the node's compute thread does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// Stages `first..=last` on `item`, one after the other.
    Item {
        /// The item, as it came.
        item: Item,
        /// The group's first stage.
        first: usize,
        /// Its last.
        last: usize,
    },
    /// Every stage on `sample`, `repeats` times, timing each.
    Calibrate {
        /// The source's item.
        sample: Vec<u8>,
        /// How many times.
        repeats: u32,
    },
}

/// A calibration from its repeats: `times[j]` the seconds of stage `j` at each repeat,
/// `output_bytes` each stage's output, `chains` each repeat's seconds through every stage.
/// Of several repeats the first warms the caches up and is not counted. Each stage's time is
/// the mean of the others: a host under a CPU quota computes in bursts, and only a mean over
/// the quota's periods is its rate. The noise of (158) is the coefficient of variation of
/// the chains counted.
pub fn calibration_of(times: Vec<Vec<f64>>, output_bytes: Vec<u64>, chains: &[f64]) -> Calibration {
    let counted = |t: &[f64]| -> Vec<f64> {
        if t.len() > 1 {
            t[1..].to_vec()
        } else {
            t.to_vec()
        }
    };
    let stage_s = times
        .iter()
        .map(|t| {
            let t = counted(t);
            (t.iter().sum::<f64>() / t.len().max(1) as f64).max(1e-9)
        })
        .collect();
    Calibration {
        stage_s,
        output_bytes,
        chain_cv: hmw_model::pipeline::calibration::coefficient_of_variation(&counted(chains)),
    }
}

/// A node of a pipeline run.
#[derive(Debug)]
pub struct NodeCore {
    routes: Routes,
    assignment: Option<Assignment>,
    group: Option<usize>,
    queue: VecDeque<Job>,
    computing: bool,
    report: RankReport,
    done: bool,
}

impl NodeCore {
    /// The node `routes.me()` on `host`, for a chain of `stages` stages.
    pub fn new(routes: Routes, host: &str, stages: usize) -> Self {
        NodeCore {
            routes,
            assignment: None,
            group: None,
            queue: VecDeque::new(),
            computing: false,
            report: RankReport {
                host: host.to_owned(),
                role: PipeRole::Node,
                stage_items: vec![0; stages],
                stage_busy_s: vec![0.0; stages],
                ..RankReport::default()
            },
            done: false,
        }
    }

    fn me(&self) -> Address {
        self.routes.me()
    }

    fn violation(&self, message: String) -> CoreError {
        CoreError::Protocol {
            rank: self.me().rank(),
            message,
        }
    }

    /// A message from rank `from` of this cluster.
    pub fn handle(
        &mut self,
        from: usize,
        bytes: &[u8],
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let message: PipeMessage =
            decode(bytes, "message to a node").map_err(CoreError::decoding(from))?;
        match message {
            PipeMessage::Item(item) => {
                let (epoch, group) = match (&self.assignment, self.group) {
                    (Some(a), Some(g)) => (a.epoch, g),
                    _ => return Err(self.violation(format!("item {} before a mapping", item.seq))),
                };
                if item.epoch != epoch || item.group as usize != group {
                    return Err(self.violation(format!(
                        "item {} of mapping {} for group {}; this node computes group {group} of \
                         mapping {epoch}",
                        item.seq, item.epoch, item.group
                    )));
                }
                let g = &self.assignment.as_ref().expect("checked").groups[group];
                let (first, last) = (g.first as usize, g.last as usize);
                self.queue.push_back(Job::Item { item, first, last });
            }
            PipeMessage::Calibrate { sample, repeats } => {
                self.queue.push_back(Job::Calibrate { sample, repeats });
            }
            PipeMessage::Assign(assignment) => {
                if self.computing || self.queue.iter().any(|j| matches!(j, Job::Item { .. })) {
                    return Err(self.violation(
                        "a new mapping while this node holds items of the last".into(),
                    ));
                }
                let epoch = assignment.epoch;
                self.group = assignment.group_of(self.me());
                self.assignment = Some(assignment);
                let ack = PipeMessage::Assigned {
                    epoch,
                    from: self.me(),
                };
                self.routes.send(Address::CONTROLLER, &ack, out)?;
            }
            PipeMessage::Stop => {
                if self.computing || !self.queue.is_empty() {
                    return Err(self.violation("stopped while work is left".into()));
                }
                let bye = PipeMessage::Bye {
                    from: self.me(),
                    report: self.report.clone(),
                };
                self.routes.send(Address::CONTROLLER, &bye, out)?;
                self.done = true;
            }
            other => {
                return Err(self.violation(format!("a node does not take {other:?}")));
            }
        }
        Ok(())
    }

    /// The next job for the compute thread, once it is idle.
    pub fn next_job(&mut self) -> Option<Job> {
        if self.computing {
            return None;
        }
        let job = self.queue.pop_front()?;
        self.computing = true;
        Some(job)
    }

    /// Whether a job is being computed or waits.
    pub fn has_work(&self) -> bool {
        self.computing || !self.queue.is_empty()
    }

    /// The compute thread finished `item` (its group's stages `first..`): `output` is the
    /// last stage's, `stage_s` the seconds each stage took.
    pub fn on_item_done(
        &mut self,
        mut item: Item,
        first: usize,
        output: Vec<u8>,
        stage_s: &[f64],
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        self.computing = false;
        let me = self.me();
        let assignment = self
            .assignment
            .as_ref()
            .ok_or_else(|| self.violation("an item done without a mapping".into()))?;
        let group = item.group as usize;
        for (i, &seconds) in stage_s.iter().enumerate() {
            let stage = first + i;
            item.times.push(StageTime {
                stage: stage as u32,
                node: me,
                seconds,
            });
            if let (Some(n), Some(b)) = (
                self.report.stage_items.get_mut(stage),
                self.report.stage_busy_s.get_mut(stage),
            ) {
                *n += 1;
                *b += seconds;
            }
        }
        let (next, to) = assignment.after(group);
        let manager = assignment.groups[group].manager;
        let epoch = assignment.epoch;
        item.group = next;
        item.body = output;
        self.routes.send(to, &PipeMessage::Item(item), out)?;
        if let Some(manager) = manager {
            let done = PipeMessage::Done {
                epoch,
                group: group as u32,
                replica: me,
            };
            self.routes.send(manager, &done, out)?;
        }
        Ok(())
    }

    /// The compute thread finished a calibration.
    pub fn on_calibrated(
        &mut self,
        calibration: Calibration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        self.computing = false;
        self.report.calibrations += 1;
        let message = PipeMessage::Calibrated {
            node: self.me(),
            calibration,
        };
        self.routes.send(Address::CONTROLLER, &message, out)
    }

    /// The compute thread failed on a job (a stage panicked, or its input did not decode):
    /// the controller is told, and ends the run.
    pub fn failed(&mut self, message: &str, out: &mut Vec<PipeOutput>) -> Result<(), CoreError> {
        self.computing = false;
        let failed = PipeMessage::Failed {
            from: self.me(),
            message: message.to_owned(),
        };
        self.routes.send(Address::CONTROLLER, &failed, out)
    }

    /// The node said `Bye`: it ends once its sends are done.
    pub fn is_done(&self) -> bool {
        self.done
    }
}
