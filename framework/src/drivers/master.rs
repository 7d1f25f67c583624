//! The master's driver: a thin loop around a [`MasterCore`] over a [`Transport`].
//!
//! It waits for messages with the idle backoff, passes each to the core with the time since
//! it started, performs the sends the core asks for, prints its progress lines and, when asked,
//! appends its live feed ([`hmw_core::live_feed`]). The same core runs a sub-master ([`crate::drivers::submaster`]).

use std::{
    path::Path,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use crate::{drivers::live_feed::Feed, error::RunError};
pub(crate) use hmw_core::roles::{ProblemSource, TaskSource};
use hmw_core::{
    config::RunConfig,
    cpu_clock::thread_cpu_s,
    machinefile::MachineFile,
    roles::{MasterCore, Output},
    scheduler::Scheduler,
    stats::RunStats,
};
use hmw_transport::{idle::Idle, Envelope, Transport};

/// Messages handled at one reading of the clock when they arrived together: the core's time
/// is then late by the handling of those before it, about a microsecond each on this
/// machine's master (`docs/benchmarks.md`), and a timer due meanwhile waits as long.
const BURST: usize = 8;

/// The master of one cluster: its core, the transport it talks over, and its live feed.
pub(crate) struct Master<'a, S> {
    transport: &'a mut dyn Transport,
    core: MasterCore<S>,
    /// Its thread's CPU seconds handling messages, when `[run] master_cpu` asks for them.
    handling_cpu_s: Option<f64>,
    feed: Option<Feed>,
}

impl<'a, S: TaskSource> Master<'a, S> {
    /// A master feeding the workers and master-facing communication managers of `machines`.
    pub(crate) fn new(
        transport: &'a mut dyn Transport,
        machines: &MachineFile,
        config: RunConfig,
        scheduler: Box<dyn Scheduler>,
        source: S,
    ) -> Result<Self, RunError> {
        let feed = config.live_json.clone();
        let timed = config.master_cpu;
        let mut master = Master::with_core(
            transport,
            MasterCore::new(machines, config, scheduler, source),
        )
        .feeding(feed.as_deref());
        master.handling_cpu_s = timed.then_some(0.0);
        Ok(master)
    }

    /// A master driving `core` (built as a simulator or a test would build it).
    pub(crate) fn with_core(transport: &'a mut dyn Transport, core: MasterCore<S>) -> Self {
        Master {
            transport,
            core,
            handling_cpu_s: None,
            feed: None,
        }
    }

    /// Append the live feed to `path` at each progress line, when given.
    pub(crate) fn feeding(mut self, path: Option<&Path>) -> Self {
        self.feed = path.and_then(Feed::create);
        self
    }

    /// Run until every task is gathered (or upstream says stop), then stop the fed ranks.
    /// Returns the statistics and the task source (which now holds the gathered results). On
    /// an error the core is told the run failed and given the time it asks for (a
    /// sub-master's `Lost` to its parent cluster) before the error is returned.
    pub(crate) fn run(mut self) -> Result<(RunStats, S), RunError> {
        let clock = Instant::now();
        let mut out = Vec::new();
        if let Err(error) = self.serve(clock, &mut out) {
            self.fail(clock, &mut out);
            return Err(error);
        }
        self.transport.flush()?;
        let (mut stats, source) = self.core.finish();
        stats.master_cpu_s = self.handling_cpu_s;
        Ok((stats, source))
    }

    /// The loop: messages and timers to the core until it is done.
    fn serve(&mut self, clock: Instant, out: &mut Vec<Output>) -> Result<(), RunError> {
        let mut idle = Idle::for_transport(&*self.transport);
        self.core.start(clock.elapsed(), out)?;
        self.perform(out)?;
        while !self.core.is_done() {
            let mut instant = Instant::now();
            let mut now = instant - clock;
            if self.core.poll_timeout().is_some_and(|at| now >= at) {
                self.core.on_timer(now, out);
                self.perform(out)?;
                instant = Instant::now();
                now = instant - clock;
            }
            // While messages flow the wait is one probe and `now` still holds: one clock read
            // for the core and the backoff alike, and for the messages already there behind
            // the first (up to `BURST`).
            let pause = until_timer(idle.next_pause_at(instant), self.core.poll_timeout(), now);
            if let Some(envelope) = self.transport.wait(pause)? {
                idle.reset();
                if !pause.is_zero() {
                    now = clock.elapsed();
                }
                self.deliver(now, envelope, out)?;
                for _ in 1..BURST {
                    if self.core.is_done() {
                        break;
                    }
                    let Some(envelope) = self.transport.try_recv()? else {
                        break;
                    };
                    self.deliver(now, envelope, out)?;
                }
            }
        }
        Ok(())
    }

    /// The run failed: the core says so where it must, and is given messages and timers
    /// until it is done (what else arrives is ignored), as long as the transport works.
    fn fail(&mut self, clock: Instant, out: &mut Vec<Output>) {
        out.clear();
        self.core.fail(clock.elapsed(), out);
        let mut idle = Idle::for_transport(&*self.transport);
        while self.perform(out).is_ok() && !self.core.is_done() {
            let now = clock.elapsed();
            if self.core.poll_timeout().is_some_and(|at| now >= at) {
                self.core.on_timer(now, out);
                continue;
            }
            match self.transport.wait(until_timer(
                idle.next_pause(),
                self.core.poll_timeout(),
                now,
            )) {
                Ok(Some(envelope)) => {
                    let _ = self
                        .core
                        .handle(clock.elapsed(), envelope.from, &envelope.bytes, out);
                }
                Ok(None) => {}
                Err(_) => break,
            }
        }
    }

    /// Hand `envelope` to the core at `now`, and perform what it asks for.
    fn deliver(
        &mut self,
        now: Duration,
        envelope: Envelope,
        out: &mut Vec<Output>,
    ) -> Result<(), RunError> {
        let from = self.handling_cpu_s.map(|_| thread_cpu_s());
        self.core.handle(now, envelope.from, &envelope.bytes, out)?;
        self.transport.recycle(envelope.bytes);
        let performed = self.perform(out);
        if let (Some(total), Some(from)) = (self.handling_cpu_s.as_mut(), from) {
            *total += thread_cpu_s() - from;
        }
        performed
    }

    fn perform(&mut self, out: &mut Vec<Output>) -> Result<(), RunError> {
        for output in out.drain(..) {
            match output {
                Output::Send { to, bytes } => self.transport.send(to, bytes)?,
                Output::Started => {
                    if let Ok(since_epoch) = SystemTime::now().duration_since(UNIX_EPOCH) {
                        self.core.started_at_unix_s(since_epoch.as_secs_f64());
                    }
                }
                Output::Progress(line) => {
                    println!("{line}");
                    if self
                        .feed
                        .as_mut()
                        .is_some_and(|feed| !feed.append(&self.core))
                    {
                        self.feed = None;
                    }
                }
            }
        }
        while let Some(buffer) = self.transport.reclaim() {
            self.core.recycle(buffer);
        }
        Ok(())
    }
}

/// `pause`, cut short so that the wait ends when the core's timer (`at`, if any) is due.
fn until_timer(pause: Duration, at: Option<Duration>, now: Duration) -> Duration {
    at.map_or(pause, |at| pause.min(at.saturating_sub(now)))
}
