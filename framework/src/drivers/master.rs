//! The master's driver: a thin loop around a [`MasterCore`] over a [`Transport`].
//!
//! It waits for messages with the idle backoff, passes each to the core with the time since
//! it started, performs the sends the core asks for, and prints its progress lines. The same
//! core runs a sub-master ([`crate::drivers::submaster`]).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::RunError;
pub(crate) use hmw_core::roles::{ProblemSource, TaskSource};
use hmw_core::{
    config::RunConfig,
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

/// The master of one cluster: its core, and the transport it talks over.
pub(crate) struct Master<'a, S> {
    transport: &'a mut dyn Transport,
    core: MasterCore<S>,
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
        Ok(Master::with_core(
            transport,
            MasterCore::new(machines, config, scheduler, source),
        ))
    }

    /// A master driving `core` (built as a simulator or a test would build it).
    pub(crate) fn with_core(transport: &'a mut dyn Transport, core: MasterCore<S>) -> Self {
        Master { transport, core }
    }

    /// Run until every task is gathered (or upstream says stop), then stop the fed ranks.
    /// Returns the statistics and the task source (which now holds the gathered results).
    pub(crate) fn run(mut self) -> Result<(RunStats, S), RunError> {
        let clock = Instant::now();
        let mut started_unix_s = None;
        let mut out = Vec::new();
        let mut idle = Idle::default();
        self.core.start(clock.elapsed(), &mut out)?;
        self.perform(&mut out, &mut started_unix_s)?;
        while !self.core.is_done() {
            let mut instant = Instant::now();
            let mut now = instant - clock;
            if self.core.poll_timeout().is_some_and(|at| now >= at) {
                self.core.on_timer(now, &mut out);
                self.perform(&mut out, &mut started_unix_s)?;
                instant = Instant::now();
                now = instant - clock;
            }
            // While messages flow the wait is one probe and `now` still holds: one clock read
            // for the core and the backoff alike, and for the messages already there behind
            // the first (up to `BURST`).
            let pause = idle.next_pause_at(instant);
            if let Some(envelope) = self.transport.wait(pause)? {
                idle.reset();
                if !pause.is_zero() {
                    now = clock.elapsed();
                }
                self.deliver(now, envelope, &mut out, &mut started_unix_s)?;
                for _ in 1..BURST {
                    if self.core.is_done() {
                        break;
                    }
                    let Some(envelope) = self.transport.try_recv()? else {
                        break;
                    };
                    self.deliver(now, envelope, &mut out, &mut started_unix_s)?;
                }
            }
        }
        self.transport.flush()?;
        Ok(self.core.finish(started_unix_s))
    }

    /// Hand `envelope` to the core at `now`, and perform what it asks for.
    fn deliver(
        &mut self,
        now: Duration,
        envelope: Envelope,
        out: &mut Vec<Output>,
        started_unix_s: &mut Option<f64>,
    ) -> Result<(), RunError> {
        self.core.handle(now, envelope.from, &envelope.bytes, out)?;
        self.transport.recycle(envelope.bytes);
        self.perform(out, started_unix_s)
    }

    fn perform(
        &mut self,
        out: &mut Vec<Output>,
        started_unix_s: &mut Option<f64>,
    ) -> Result<(), RunError> {
        for output in out.drain(..) {
            match output {
                Output::Send { to, bytes } => self.transport.send(to, bytes)?,
                Output::Started => {
                    *started_unix_s = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .ok()
                        .map(|d| d.as_secs_f64());
                }
                Output::Progress(line) => println!("{line}"),
            }
        }
        while let Some(buffer) = self.transport.reclaim() {
            self.core.recycle(buffer);
        }
        Ok(())
    }
}
