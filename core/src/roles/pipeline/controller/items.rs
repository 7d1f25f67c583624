//! The controller's items: handed out from the source while fewer than the window are in
//! flight, gathered at the sink and delivered in the source's order, each exactly once.

use std::time::Duration;

use super::{ControllerCore, ItemSource, Phase};
use crate::{
    error::CoreError,
    protocol::pipeline::{Item, PipeMessage},
    roles::pipeline::output::PipeOutput,
};

impl<S: ItemSource> ControllerCore<S> {
    /// The next item of the source, within `[pipeline] items`.
    fn pull(&mut self) -> Option<Vec<u8>> {
        if let Some(held) = self.held.take() {
            return Some(held);
        }
        if self.source_done
            || self
                .setup
                .config
                .items
                .is_some_and(|limit| self.next_seq >= limit)
        {
            return None;
        }
        self.source.next_item()
    }

    /// Holds the source's first item back as the calibration's sample; `false` when the
    /// source has none.
    pub(super) fn take_sample(&mut self) -> bool {
        self.held = self.pull();
        self.sample = self.held.clone();
        self.source_done = self.held.is_none();
        self.held.is_some()
    }

    /// Hand items out while the window allows; stop the run once every item is through.
    pub(super) fn issue(
        &mut self,
        now: Duration,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        while self.phase == Phase::Running && self.in_flight < self.window {
            let Some(body) = self.pull() else {
                self.source_done = true;
                break;
            };
            let item = Item {
                seq: self.next_seq,
                epoch: self.assignment.epoch,
                group: 0,
                body,
                times: Vec::new(),
            };
            self.next_seq += 1;
            self.in_flight += 1;
            self.first_issue.get_or_insert(now);
            self.send_item(item, out)?;
        }
        if self.phase == Phase::Running && self.source_done && self.in_flight == 0 {
            self.stop(now, out)?;
        }
        Ok(())
    }

    /// `item` to its group's entry: a manager here, or a rank anywhere.
    fn send_item(&mut self, item: Item, out: &mut Vec<PipeOutput>) -> Result<(), CoreError> {
        let entry = self.assignment.groups[item.group as usize].entry();
        if entry == self.me() {
            self.managers.on_item(item, &self.setup.routes, out)
        } else {
            self.setup.routes.send(entry, &PipeMessage::Item(item), out)
        }
    }

    /// An item for the sink, or for a group this rank manages.
    pub(super) fn on_item(
        &mut self,
        now: Duration,
        item: Item,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let sink = self.assignment.groups.len() as u32;
        if item.group != sink {
            return self.managers.on_item(item, &self.setup.routes, out);
        }
        if item.epoch != self.assignment.epoch
            || item.seq >= self.next_seq
            || item.seq < self.delivered
            || self.reorder.contains_key(&item.seq)
        {
            return Err(CoreError::Protocol {
                rank: 0,
                message: format!(
                    "item {} of mapping {} at the sink: not one in flight (mapping {}, {} \
                     delivered, {} handed out)",
                    item.seq, item.epoch, self.assignment.epoch, self.delivered, self.next_seq
                ),
            });
        }
        self.monitor.record(&item);
        for t in &item.times {
            let sums = self.stage_sums.entry((t.stage, t.node)).or_default();
            sums.0 += 1;
            sums.1 += t.seconds;
        }
        self.in_flight -= 1;
        self.last_delivery = now;
        self.reorder.insert(item.seq, item.body);
        while let Some(body) = self.reorder.remove(&self.delivered) {
            out.push(PipeOutput::Deliver {
                seq: self.delivered,
                body,
            });
            self.delivered += 1;
        }
        if self.phase == Phase::Running {
            self.check_threshold(now);
        }
        match self.phase {
            Phase::Running => self.issue(now, out),
            Phase::Draining if self.in_flight == 0 => self.calibrate(now, out),
            _ => Ok(()),
        }
    }
}
