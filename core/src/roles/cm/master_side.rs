//! The core of a CM facing a master (`# M ...`).
//!
//! To its master it is a worker with a deep window. The far sub-master's requests for work
//! (its room) come back over the link as credit; the CM asks its master for as many batches
//! as that credit plus `window` more (the batches on their way across the WAN while the next
//! credit travels back), while its link is up and its send buffer less than half full. It
//! forwards each batch over the link (shaped by the application's [`Outbound`]), and passes
//! the results that come back to the master. If the link stays down past `lost_after`, or the
//! far cluster reports it cannot go on, it tells the master the cluster is lost. A cluster lost
//! by the deadline comes back when its link does (the link resumes its session only with the
//! same far CM, whose sub-master waits for it): the CM tells the master, which hands it new
//! tasks again.

use std::time::Duration;

use super::{
    link_side::LinkSide,
    output::{CmOutput, LinkOutbox, LinkView},
};
use crate::{
    error::CoreError,
    machinefile::MASTER,
    protocol::{decode, encode, LinkState, ToMaster, ToWorker},
    stats::{ClusterReport, LinkSummary},
};

/// The most room a CM offers its master at once (a far side asking for more gets it over
/// several offers).
const MAX_ROOM: u64 = 1 << 16;

/// How often a CM facing a master tells its master how its link is doing.
const LINK_REPORT_EVERY: Duration = Duration::from_secs(1);

/// How long a CM facing a master waits, once the run is stopping, for a link that is down to
/// bring the far cluster's statistics.
pub(crate) const STOP_PATIENCE: Duration = Duration::from_secs(5);

/// The application's shaping of a task's body before it crosses the WAN
/// ([`crate::app::Splitter::outbound`]), on a CM facing a master. `Send`, as the splitter it
/// wraps: a CM may run on a thread of a process serving several links.
pub type Outbound = Box<dyn FnMut(&[u8]) -> Result<Vec<u8>, CoreError> + Send>;

/// A CM in the master's cluster, as a state machine.
pub struct CmMasterSide {
    rank: usize,
    /// Batches sent ahead of the far side's credit.
    window: u64,
    lost_after: Duration,
    /// Room offered to the master and not used yet (in batches).
    offered: u64,
    /// Batches forwarded over the link.
    forwarded: u64,
    /// Room the far sub-master has asked for in all (batches).
    far_room: u64,
    lost: bool,
    /// Lost by the link's deadline (not by the far cluster's word): it may come back.
    may_return: bool,
    stopping: bool,
    report: Option<Box<ClusterReport>>,
    far_bye: bool,
    outbound: Option<Outbound>,
    /// Bytes of the task bodies the master handed over, and as they crossed the WAN.
    task_bytes: u64,
    task_bytes_sent: u64,
    /// Since when no connection is up (the link starts down).
    last_report: Duration,
    done: bool,
    /// How long the link has been down, and the messages waiting for room in it.
    link: LinkSide,
}

impl CmMasterSide {
    /// CM `rank`, sending `window` batches ahead of credit, giving its cluster up after
    /// `lost_after` without a connection, shaping tasks with `outbound`.
    pub fn new(rank: usize, window: u64, lost_after: Duration, outbound: Option<Outbound>) -> Self {
        CmMasterSide {
            rank,
            window,
            lost_after,
            offered: 0,
            forwarded: 0,
            far_room: 0,
            lost: false,
            may_return: false,
            stopping: false,
            report: None,
            far_bye: false,
            outbound,
            task_bytes: 0,
            task_bytes_sent: 0,
            last_report: Duration::ZERO,
            done: false,
            link: LinkSide::default(),
        }
    }

    /// A message from the master.
    pub fn on_cluster(&mut self, bytes: &[u8]) -> Result<(), CoreError> {
        let message: ToWorker =
            decode(bytes, "message to a CM").map_err(CoreError::decoding(MASTER))?;
        match message {
            ToWorker::Tasks(mut batch) => {
                self.offered = self.offered.saturating_sub(1);
                self.forwarded += 1;
                for task in &mut batch {
                    self.task_bytes += task.body.len() as u64;
                    if let Some(outbound) = &mut self.outbound {
                        task.body = outbound(&task.body)?;
                    }
                    self.task_bytes_sent += task.body.len() as u64;
                }
                self.link.send(encode(&ToWorker::Tasks(batch)));
            }
            ToWorker::Stop => {
                self.stopping = true;
                self.link.send(encode(&ToWorker::Stop));
            }
            ToWorker::Join(nr) => self.link.send(encode(&ToWorker::Join(nr))),
            ToWorker::Journaled(ids) => self.link.send(encode(&ToWorker::Journaled(ids))),
            ToWorker::Resend => {
                return Err(CoreError::Protocol {
                    rank: MASTER,
                    message: "a master asked its CM to resend results".into(),
                })
            }
        }
        Ok(())
    }

    /// A message from the far cluster.
    pub fn on_link(&mut self, bytes: &[u8], out: &mut Vec<CmOutput>) -> Result<(), CoreError> {
        let message: ToMaster = decode(bytes, "message from the far cluster")
            .map_err(CoreError::decoding(self.rank))?;
        match message {
            ToMaster::Result { result, .. } => {
                out.push(CmOutput::ToCluster(encode(&ToMaster::Result {
                    result,
                    room: 0,
                })));
            }
            ToMaster::Bye { report } => {
                // The far side closes once this is acknowledged: the link's figures now.
                self.report = Some(report.unwrap_or_default());
                self.far_bye = true;
                out.push(CmOutput::SnapshotLink);
            }
            ToMaster::Ready { room } => self.far_room += u64::from(room),
            // The far side's own link reports are not for this master, nor its CM's word
            // that it is back (its own side does not send it); a CM sends no worker's usage.
            ToMaster::Link(_) | ToMaster::Back | ToMaster::Usage(_) => {}
            // The far cluster reports it cannot go on: it is lost now, not after the deadline.
            ToMaster::Lost | ToMaster::Failed { .. } => {
                self.may_return = false;
                if !self.lost {
                    self.lost = true;
                    tracing::warn!("the far cluster reports it cannot go on: it is lost");
                    out.push(CmOutput::ToCluster(encode(&ToMaster::Lost)));
                }
            }
        }
        Ok(())
    }

    /// The far cluster's report has come: stop reading the link for this turn.
    pub fn far_bye(&self) -> bool {
        self.far_bye
    }

    /// The link's figures when the far cluster's report came ([`CmOutput::SnapshotLink`]).
    pub fn set_far_link(&mut self, link: LinkSummary) {
        if let Some(report) = &mut self.report {
            report.link = Some(link);
        }
    }

    /// After each turn at time `now`, with the link as `link`: the lost-after deadline, the
    /// link report to the master, and room asked for.
    pub fn on_tick(&mut self, now: Duration, link: &LinkView, out: &mut Vec<CmOutput>) {
        if self.link.peer_restarted(link) && !self.stopping {
            self.far_restarted(out);
        }
        let down_for = self.link.down_for(now, link);
        // Once stopping, the master has every result it needs: only the far cluster's
        // statistics are awaited, and not for long over a link that is down.
        let deadline = if self.stopping {
            self.lost_after.min(STOP_PATIENCE)
        } else {
            self.lost_after
        };
        if !self.lost && down_for > deadline {
            self.lost = true;
            self.may_return = true;
            // The master forgets the room offered by a lost cluster.
            self.offered = 0;
            if !self.stopping {
                tracing::warn!(
                    after_s = self.lost_after.as_secs_f64(),
                    "WAN link down past the deadline: the cluster behind it is lost"
                );
                out.push(CmOutput::ToCluster(encode(&ToMaster::Lost)));
            }
        }
        if self.lost && self.may_return && link.connected && !self.stopping {
            self.lost = false;
            self.may_return = false;
            tracing::warn!("WAN link back: the cluster behind it takes tasks again");
            out.push(CmOutput::ToCluster(encode(&ToMaster::Back)));
        }
        if self.stopping && (self.far_bye || self.lost || !link.ever_connected) {
            self.done = true;
            return;
        }
        if now.saturating_sub(self.last_report) >= LINK_REPORT_EVERY {
            self.last_report = now;
            let state = LinkState {
                connected: link.connected,
                tasks_waiting: self.link.waiting() || link.send_fill >= 0.5,
                send_bytes_per_s: link.send_bytes_per_s,
                recv_bytes_per_s: link.recv_bytes_per_s,
                rtt_s: link.rtt_s,
                reconnections: link.reconnections,
                blocks_resent: link.blocks_resent,
                packets_lost: link.packets_lost,
            };
            out.push(CmOutput::ToCluster(encode(&ToMaster::Link(state))));
        }
        self.offer_room(link, out);
    }

    /// The far CM is a new process (its cluster was started again): what the old one held is
    /// gone. The master takes back the tasks the cluster held (lost), and feeds it again from
    /// nothing (back), on the new cluster's credit alone; the tasks that waited here for the
    /// old one are the master's to hand out again.
    fn far_restarted(&mut self, out: &mut Vec<CmOutput>) {
        tracing::warn!("the far cluster started again: its tasks are taken back, it is fed anew");
        if !self.lost {
            out.push(CmOutput::ToCluster(encode(&ToMaster::Lost)));
        }
        self.lost = true;
        self.may_return = true;
        self.offered = 0;
        self.forwarded = 0;
        self.far_room = 0;
        self.link.retain(|_| false);
    }

    /// Ask the master for more while the window and the send buffer allow.
    fn offer_room(&mut self, link: &LinkView, out: &mut Vec<CmOutput>) {
        // Tasks handed over while the link is down would only wait here.
        if self.lost || self.stopping || self.link.waiting() || !link.connected {
            return;
        }
        if link.send_fill >= 0.5 {
            return;
        }
        let wanted = (self.far_room + self.window).saturating_sub(self.offered + self.forwarded);
        let room = wanted.min(MAX_ROOM);
        if room > 0 {
            self.offered += room;
            out.push(CmOutput::ToCluster(encode(&ToMaster::Ready {
                room: room as u32,
            })));
        }
    }

    /// The run is over for this CM: say `Bye` to the master ([`bye`](Self::bye)).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The `Bye` for the master, with the far cluster's report and the link's figures
    /// (`link`, unless taken when the report came).
    pub fn bye(&mut self, link: LinkSummary) -> Vec<u8> {
        let mut report = self.report.take().unwrap_or_default();
        if report.link.is_none() {
            report.link = Some(link);
        }
        report.task_bytes = self.task_bytes;
        report.task_bytes_sent = self.task_bytes_sent;
        encode(&ToMaster::Bye {
            report: Some(report),
        })
    }
}

impl LinkOutbox for CmMasterSide {
    fn next_for_link(&self) -> Option<&[u8]> {
        self.link.next()
    }

    fn pop_for_link(&mut self) -> Option<Vec<u8>> {
        self.link.pop()
    }
}
