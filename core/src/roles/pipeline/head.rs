//! The core of an external cluster's first rank in a pipeline run, its *head*: it tells the
//! controller its cluster's ranks at the start, runs the stage managers of its cluster's
//! replicated groups, follows each mapping and acknowledges it, and reports when the run
//! stops.

use super::{managers::Managers, output::PipeOutput, routes::Routes};
use crate::{
    error::CoreError,
    pipeline::stats::{PipeRole, RankReport},
    protocol::{
        decode,
        pipeline::{Address, ClusterRanks, PipeMessage},
    },
};

/// An external cluster's head.
#[derive(Debug)]
pub struct HeadCore {
    routes: Routes,
    ranks: ClusterRanks,
    managers: Managers,
    buffers: u64,
    report: RankReport,
    done: bool,
}

impl HeadCore {
    /// The head of the cluster whose ranks are `ranks`, its replicas holding `buffers` items.
    pub fn new(routes: Routes, ranks: ClusterRanks, buffers: u64) -> Self {
        let host = ranks.hosts.first().cloned().unwrap_or_default();
        HeadCore {
            routes,
            ranks,
            managers: Managers::default(),
            buffers,
            report: RankReport {
                host,
                role: PipeRole::Head,
                ..RankReport::default()
            },
            done: false,
        }
    }

    /// At the start: the controller learns this cluster's ranks.
    pub fn start(&mut self, out: &mut Vec<PipeOutput>) -> Result<(), CoreError> {
        let hello = PipeMessage::Hello {
            cluster: self.routes.me().cluster,
            ranks: self.ranks.clone(),
        };
        self.routes.send(Address::CONTROLLER, &hello, out)
    }

    /// A message from rank `from` of this cluster.
    pub fn handle(
        &mut self,
        from: usize,
        bytes: &[u8],
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let message: PipeMessage =
            decode(bytes, "message to a cluster's head").map_err(CoreError::decoding(from))?;
        let me = self.routes.me();
        match message {
            PipeMessage::Item(item) => self.managers.on_item(item, &self.routes, out)?,
            PipeMessage::Done {
                epoch,
                group,
                replica,
            } => self
                .managers
                .on_done(epoch, group, replica, &self.routes, out)?,
            PipeMessage::Assign(assignment) => {
                self.managers.assign(&assignment, me, self.buffers)?;
                let ack = PipeMessage::Assigned {
                    epoch: assignment.epoch,
                    from: me,
                };
                self.routes.send(Address::CONTROLLER, &ack, out)?;
            }
            PipeMessage::Stop => {
                self.report.handed = self.managers.handed;
                let bye = PipeMessage::Bye {
                    from: me,
                    report: self.report.clone(),
                };
                self.routes.send(Address::CONTROLLER, &bye, out)?;
                self.done = true;
            }
            other => {
                return Err(CoreError::Protocol {
                    rank: from,
                    message: format!("a cluster's head does not take {other:?}"),
                })
            }
        }
        Ok(())
    }

    /// The head said `Bye`.
    pub fn is_done(&self) -> bool {
        self.done
    }
}
