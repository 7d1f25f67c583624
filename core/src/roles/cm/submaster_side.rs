//! The core of a CM facing a sub-master (`# S ...`): the sub-master's input and output.
//! Tasks from the link go to the sub-master as it offers room (its room goes back over the
//! link as credit); its results and final report go back over the link. If the link stays
//! down past `give_up_after` it stops its cluster (the driver gives it the master side's
//! `lost_after` plus the time a lost cluster waits to rejoin: until then the cluster goes on
//! with the tasks it holds and takes new ones when the link returns); if the sub-master
//! reports it cannot go on, it passes `Lost` over the link before the cluster ends.

use std::{collections::VecDeque, time::Duration};

use super::{
    link_side::LinkSide,
    master_side::STOP_PATIENCE,
    output::{CmOutput, LinkOutbox, LinkView},
};
use crate::{
    error::CoreError,
    machinefile::MASTER,
    protocol::{decode, encode, ToMaster, ToWorker},
};

/// What a message queued for the sub-master is: a batch waits for room, the others do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relay {
    Tasks,
    Stop,
    Join,
}

/// A CM in an external cluster, in front of its sub-master, as a state machine.
pub struct CmSubMasterSide {
    rank: usize,
    give_up_after: Duration,
    /// Room the sub-master offered and that no batch used yet.
    room: u32,
    /// Messages from the link for the sub-master, as encoded, and what each is.
    queue: VecDeque<(Vec<u8>, Relay)>,
    stop_sent: bool,
    done: bool,
    /// How long the link has been down, and the messages waiting for room in it.
    link: LinkSide,
}

impl CmSubMasterSide {
    /// CM `rank`, stopping its cluster after `give_up_after` without a connection.
    pub fn new(rank: usize, give_up_after: Duration) -> Self {
        CmSubMasterSide {
            rank,
            give_up_after,
            room: 0,
            queue: VecDeque::new(),
            stop_sent: false,
            done: false,
            link: LinkSide::default(),
        }
    }

    /// A message from the sub-master.
    pub fn on_cluster(&mut self, bytes: &[u8], out: &mut Vec<CmOutput>) -> Result<(), CoreError> {
        let message: ToMaster =
            decode(bytes, "message to a CM").map_err(CoreError::decoding(MASTER))?;
        match message {
            ToMaster::Ready { room } => {
                // Credit for the master's side, which sends no more than asked for.
                self.room += room;
                self.link.send(encode(&ToMaster::Ready { room }));
            }
            ToMaster::Bye { report } => {
                self.link.send(encode(&ToMaster::Bye { report }));
                // The far side needs the results and the report: wait (bounded).
                out.push(CmOutput::CloseLink(self.give_up_after));
                self.done = true;
            }
            ToMaster::Lost => {
                // The sub-master cannot go on: tell the far side, then let it know that the
                // message is on its way (it is waiting to end its cluster).
                self.link.send(encode(&ToMaster::Lost));
                out.push(CmOutput::CloseLink(STOP_PATIENCE));
                out.push(CmOutput::ToCluster(encode(&ToWorker::Stop)));
                self.done = true;
            }
            other => self.link.send(encode(&other)),
        }
        Ok(())
    }

    /// A message from the master's cluster.
    pub fn on_link(&mut self, bytes: Vec<u8>) -> Result<(), CoreError> {
        let message: ToWorker = decode(&bytes, "message from the master's cluster")
            .map_err(CoreError::decoding(self.rank))?;
        match message {
            ToWorker::Stop => {
                // Tasks still queued are not needed any more.
                self.queue.clear();
                self.queue.push_back((bytes, Relay::Stop));
            }
            ToWorker::Join(_) if !self.stop_sent => self.queue.push_back((bytes, Relay::Join)),
            ToWorker::Join(_) => {}
            // Once this cluster is stopping, tasks that still come are not for it.
            ToWorker::Tasks(_) if !self.stop_sent => self.queue.push_back((bytes, Relay::Tasks)),
            ToWorker::Tasks(_) => {}
        }
        Ok(())
    }

    /// After each turn at time `now`, with the link as `link`: the lost-after deadline, and
    /// batches handed to the sub-master as its room allows (`Stop` at once).
    pub fn on_tick(&mut self, now: Duration, link: &LinkView, out: &mut Vec<CmOutput>) {
        if self.link.peer_restarted(link) && !self.stop_sent && !self.done {
            self.master_side_restarted();
        }
        let down_for = self.link.down_for(now, link);
        if !self.stop_sent && down_for > self.give_up_after {
            tracing::warn!("WAN link down past the deadline: stopping this cluster");
            self.queue.clear();
            self.queue.push_back((encode(&ToWorker::Stop), Relay::Stop));
        }
        while let Some(&(_, relay)) = self.queue.front() {
            if relay == Relay::Tasks && self.room == 0 {
                break;
            }
            let (bytes, _) = self.queue.pop_front().expect("front exists");
            match relay {
                Relay::Stop if self.stop_sent => continue,
                Relay::Stop => self.stop_sent = true,
                Relay::Tasks => self.room -= 1,
                Relay::Join => {}
            }
            out.push(CmOutput::ToCluster(bytes));
        }
    }

    /// The master's side is a new process (the main cluster started again, its master from
    /// its journal): it knows nothing of the room this cluster offered. The room not used yet
    /// is offered again, in one message, in place of the offers still waiting for the link;
    /// results still waiting go to the new master, which gathers those it has not.
    fn master_side_restarted(&mut self) {
        tracing::warn!(
            room = self.room,
            "the master's side started again: this cluster's room is offered anew"
        );
        self.link.retain(|bytes| {
            !matches!(
                decode::<ToMaster>(bytes, "message for the link"),
                Ok(ToMaster::Ready { .. })
            )
        });
        if self.room > 0 {
            self.link.send(encode(&ToMaster::Ready { room: self.room }));
        }
    }

    /// The sub-master said `Bye` or `Lost`: the CM ends once the outputs are performed.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

impl LinkOutbox for CmSubMasterSide {
    fn next_for_link(&self) -> Option<&[u8]> {
        self.link.next()
    }

    fn pop_for_link(&mut self) -> Option<Vec<u8>> {
        self.link.pop()
    }
}
