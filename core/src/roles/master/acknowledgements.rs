//! What the master tells the clusters behind its CMs of their results: that it has them
//! journaled ([`ToWorker::Journaled`]), so that their sub-masters may forget them. A sub-master
//! keeps every result it sent until then, and sends them again to a master started again: no
//! result a cluster computed is lost on the way, whichever side restarts.
//!
//! A result gathered is acknowledged once the task source says it is durable
//! ([`TaskSource::durable_results`]: the journal synced it; at once without a journal); a
//! result discharged (gathered before, from another copy, or from the journal) at once. The
//! acknowledgements go in batches, at most every [`EVERY`].

use std::{collections::VecDeque, time::Duration};

use crate::{
    app::TaskId,
    protocol::{encode, TaskIds, ToWorker},
    roles::output::Output,
};

/// The least time between two batches of acknowledgements.
pub(super) const EVERY: Duration = Duration::from_millis(250);

/// The acknowledgements a master owes.
#[derive(Debug, Default)]
pub(super) struct Acknowledgements {
    /// Results gathered so far (each call of the source's `gather`).
    gathered: u64,
    /// Results of CMs gathered and not yet durable: their number among those gathered, the
    /// CM, the tasks.
    waiting: VecDeque<(u64, usize, TaskIds)>,
    /// Tasks to acknowledge now, by CM.
    ready: Vec<(usize, Vec<TaskId>)>,
    /// No batch before this.
    next: Duration,
}

impl Acknowledgements {
    /// A result was gathered; from CM `cm` when it came from one.
    pub(super) fn gathered(&mut self, cm: Option<usize>, ids: TaskIds) {
        self.gathered += 1;
        if let Some(cm) = cm {
            self.waiting.push_back((self.gathered, cm, ids));
        }
    }

    /// CM `cm`'s result for `ids` was discharged: nothing to keep it for.
    pub(super) fn discharged(&mut self, cm: usize, ids: &[TaskId]) {
        self.ready_for(cm).extend_from_slice(ids);
    }

    fn ready_for(&mut self, cm: usize) -> &mut Vec<TaskId> {
        let at = match self.ready.iter().position(|(rank, _)| *rank == cm) {
            Some(at) => at,
            None => {
                self.ready.push((cm, Vec::new()));
                self.ready.len() - 1
            }
        };
        &mut self.ready[at].1
    }

    /// Whether any acknowledgement is owed.
    pub(super) fn owed(&self) -> bool {
        !self.waiting.is_empty() || !self.ready.is_empty()
    }

    /// When the next batch may go, while any is owed.
    pub(super) fn due(&self) -> Option<Duration> {
        self.owed().then_some(self.next)
    }

    /// At `now`, the batch due: each CM's tasks whose results are durable (the first
    /// `durable` results gathered; all of them when `None`).
    pub(super) fn send(&mut self, now: Duration, durable: Option<u64>, out: &mut Vec<Output>) {
        if now < self.next || !self.owed() {
            return;
        }
        while let Some((number, cm, _)) = self.waiting.front() {
            if durable.is_some_and(|d| *number > d) {
                break;
            }
            let cm = *cm;
            let (_, _, ids) = self.waiting.pop_front().expect("front");
            self.ready_for(cm).extend(ids);
        }
        for (cm, ids) in self.ready.drain(..) {
            out.push(Output::Send {
                to: cm,
                bytes: encode(&ToWorker::Journaled(ids)),
            });
        }
        self.next = now + EVERY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::decode;

    fn sent(out: &[Output]) -> Vec<(usize, Vec<TaskId>)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send { to, bytes } => match decode(bytes, "ack").unwrap() {
                    ToWorker::Journaled(ids) => Some((*to, ids)),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn results_are_acknowledged_once_durable_in_batches() {
        let mut acks = Acknowledgements::default();
        let mut out = Vec::new();
        acks.gathered(None, [1].into_iter().collect());
        assert!(!acks.owed(), "a worker's result is not acknowledged");
        acks.gathered(Some(3), [2, 3].into_iter().collect());
        acks.gathered(Some(4), [4].into_iter().collect());
        acks.discharged(4, &[9]);
        // Only the first two results are synced.
        acks.send(Duration::ZERO, Some(2), &mut out);
        assert_eq!(sent(&out), [(4, vec![9]), (3, vec![2, 3])]);
        out.clear();
        // All synced, but the next batch waits its turn.
        acks.send(Duration::from_millis(100), Some(3), &mut out);
        assert!(out.is_empty());
        assert_eq!(acks.due(), Some(EVERY));
        acks.send(EVERY, Some(3), &mut out);
        assert_eq!(sent(&out), [(4, vec![4])]);
        assert!(!acks.owed());
    }

    #[test]
    fn without_a_journal_every_result_goes_at_once() {
        let mut acks = Acknowledgements::default();
        let mut out = Vec::new();
        acks.gathered(Some(2), [7].into_iter().collect());
        acks.send(Duration::ZERO, None, &mut out);
        assert_eq!(sent(&out), [(2, vec![7])]);
    }
}
