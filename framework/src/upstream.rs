//! The sub-master's task source: inter-cluster tasks arriving from its communication manager.
//!
//! Towards its communication manager (the *upstream* rank) a sub-master behaves like a worker
//! with a deep buffer: it offers room for inter-cluster tasks, receives batches, and returns
//! results. Towards its own workers it is a master ([`crate::master::Master`] with this
//! source). An inter-cluster task is a batch of `nt` tasks of the application; the sub-master
//! hands them out one by one, and joins the results of one batch, up to `nr` into one, before
//! they cross the WAN. Two results join only when [`TaskResult::join`] accepts them (two
//! partial products of different matrix blocks do not), and never across batches.

use std::{
    collections::{HashMap, VecDeque},
    marker::PhantomData,
};

use crate::{
    app::{TaskId, TaskResult},
    error::RunError,
    master::{Next, TaskSource},
    protocol::{decode, encode, ToMaster, ToWorker, WireResult, WireTask},
};

/// An inter-cluster task being worked on.
struct Batch<R> {
    /// Tasks of the batch not yet gathered.
    pending: usize,
    /// Results gathered but not yet sent upstream, each joining results that could be joined.
    joined: Vec<Joined<R>>,
}

struct Joined<R> {
    /// Upstream ids of the tasks it stands for.
    ids: Vec<TaskId>,
    operations: f64,
    busy_s: f64,
    result: R,
}

/// Inter-cluster tasks from the upstream communication manager, as a sub-master's source.
pub struct Upstream<R> {
    rank: usize,
    /// Local results joined into one inter-cluster result.
    nr: usize,
    /// Tasks the sub-master wants queued or on their way: enough to keep every rank it feeds
    /// busy.
    depth: usize,
    /// Room offered upstream and not used yet.
    offered: usize,
    /// Size of the last batch received: converts room (batches) into tasks.
    batch_size: usize,
    queue: VecDeque<(WireTask, u64)>,
    next_batch: u64,
    batches: HashMap<u64, Batch<R>>,
    /// Local id -> (batch, upstream id).
    local: HashMap<TaskId, (u64, TaskId)>,
    outbox: VecDeque<Vec<u8>>,
    stopped: bool,
    result_type: PhantomData<fn() -> R>,
}

impl<R: TaskResult> Upstream<R> {
    /// A source fed by upstream rank `rank`, joining `nr` results, keeping about `depth` tasks
    /// queued or requested.
    pub fn new(rank: usize, nr: usize, depth: usize) -> Self {
        let mut upstream = Upstream {
            rank,
            nr: nr.max(1),
            depth: depth.max(1),
            offered: 0,
            batch_size: 1,
            queue: VecDeque::new(),
            next_batch: 0,
            batches: HashMap::new(),
            local: HashMap::new(),
            outbox: VecDeque::new(),
            stopped: false,
            result_type: PhantomData,
        };
        upstream.top_up();
        upstream
    }

    /// Offer upstream enough room to keep `depth` tasks queued or on their way.
    fn top_up(&mut self) {
        if self.stopped {
            return;
        }
        let mut room = 0;
        while self.queue.len() + self.offered * self.batch_size < self.depth {
            self.offered += 1;
            room += 1;
        }
        if room > 0 {
            self.outbox.push_back(encode(&ToMaster::Ready { room }));
        }
    }

    /// Send a joined result upstream.
    fn send(&mut self, joined: Joined<R>) {
        let result = WireResult {
            ids: joined.ids,
            operations: joined.operations,
            busy_s: joined.busy_s,
            body: encode(&joined.result),
        };
        self.outbox
            .push_back(encode(&ToMaster::Result { result, room: 0 }));
    }

    /// Send every result batch `key` still holds, and forget the batch once it is complete.
    fn flush(&mut self, key: u64) {
        let Some(batch) = self.batches.get_mut(&key) else {
            return;
        };
        let joined = std::mem::take(&mut batch.joined);
        if batch.pending == 0 {
            self.batches.remove(&key);
        }
        for j in joined {
            self.send(j);
        }
    }

    fn flush_if_done(&mut self, key: u64) {
        if self.batches.get(&key).is_some_and(|b| b.pending == 0) {
            self.flush(key);
        }
    }
}

impl<R: TaskResult> TaskSource for Upstream<R> {
    fn next_task(&mut self, id: TaskId) -> Next {
        match self.queue.pop_front() {
            Some((task, batch)) => {
                self.local.insert(id, (batch, task.id));
                self.top_up();
                Next::Task {
                    operations: task.operations,
                    body: task.body,
                }
            }
            None if self.stopped => Next::Finished,
            None => Next::Later,
        }
    }

    fn gather(&mut self, result: WireResult) -> Result<(), RunError> {
        let mapped: Vec<(u64, TaskId)> = result
            .ids
            .iter()
            .map(|id| {
                self.local.remove(id).ok_or_else(|| RunError::Protocol {
                    rank: self.rank,
                    message: format!("a result for unknown local task {id}"),
                })
            })
            .collect::<Result<_, _>>()?;
        let upstream_ids: Vec<TaskId> = mapped.iter().map(|&(_, id)| id).collect();
        let key = mapped[0].0;
        if mapped.iter().any(|&(batch, _)| batch != key) {
            // Joined further down across batches: pass it on as it is.
            for (batch, _) in &mapped {
                if let Some(b) = self.batches.get_mut(batch) {
                    b.pending -= 1;
                }
            }
            let forwarded = WireResult {
                ids: upstream_ids,
                ..result
            };
            self.outbox.push_back(encode(&ToMaster::Result {
                result: forwarded,
                room: 0,
            }));
            for (batch, _) in mapped {
                self.flush_if_done(batch);
            }
            return Ok(());
        }
        let decoded: R = decode(&result.body, "result").map_err(|source| RunError::Decode {
            rank: self.rank,
            source,
        })?;
        let nr = self.nr;
        let batch = self
            .batches
            .get_mut(&key)
            .ok_or_else(|| RunError::Protocol {
                rank: self.rank,
                message: "a result for a finished inter-cluster task".into(),
            })?;
        batch.pending -= upstream_ids.len();
        // Join into the first held result that accepts it, or hold it on its own.
        let mut unjoined = Some(decoded);
        let mut full = None;
        for (i, held) in batch.joined.iter_mut().enumerate() {
            let candidate = unjoined.take().expect("still unjoined inside the loop");
            match held.result.join(candidate) {
                Ok(()) => {
                    held.ids.extend_from_slice(&upstream_ids);
                    held.operations += result.operations;
                    held.busy_s += result.busy_s;
                    full = (held.ids.len() >= nr).then_some(i);
                    break;
                }
                Err(back) => unjoined = Some(back),
            }
        }
        if let Some(result_alone) = unjoined {
            if upstream_ids.len() >= nr {
                full = Some(batch.joined.len());
            }
            batch.joined.push(Joined {
                ids: upstream_ids,
                operations: result.operations,
                busy_s: result.busy_s,
                result: result_alone,
            });
        }
        let complete = batch.pending == 0;
        if complete {
            self.flush(key);
        } else if let Some(i) = full {
            let joined = batch.joined.swap_remove(i);
            self.send(joined);
        }
        Ok(())
    }

    fn task_count(&self) -> Option<u64> {
        None
    }

    fn upstream(&self) -> Option<usize> {
        Some(self.rank)
    }

    fn on_upstream(&mut self, message: ToWorker) -> Result<(), RunError> {
        match message {
            ToWorker::Tasks(tasks) => {
                let key = self.next_batch;
                self.next_batch += 1;
                self.offered = self.offered.saturating_sub(1);
                self.batch_size = tasks.len().max(1);
                self.batches.insert(
                    key,
                    Batch {
                        pending: tasks.len(),
                        joined: Vec::new(),
                    },
                );
                self.queue.extend(tasks.into_iter().map(|t| (t, key)));
                self.top_up();
            }
            ToWorker::Stop => {
                self.stopped = true;
                self.queue.clear();
            }
        }
        Ok(())
    }

    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }

    fn stopped(&self) -> bool {
        self.stopped
    }
}
