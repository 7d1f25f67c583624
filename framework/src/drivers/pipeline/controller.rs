//! The controller's driver: the loop around a [`ControllerCore`], its source's items encoded
//! for the core, and the items the core delivers decoded for the application's sink.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hmw_core::{
    pipeline::{deliver, stats::PipelineStats, Sink, Source},
    protocol::encode,
    roles::pipeline::{ControllerCore, ControllerSetup, ItemSource, PipeOutput},
    CoreError,
};
use hmw_transport::{idle::Idle, Transport};
use serde::de::DeserializeOwned;

use super::send_all;
use crate::error::RunError;

/// The application's source, its items encoded.
struct Encoding<So>(So);

impl<So: Source> ItemSource for Encoding<So> {
    fn next_item(&mut self) -> Option<Vec<u8>> {
        self.0.next_item().map(|item| encode(&item))
    }
}

/// Run the controller with `source` and `sink` until every rank said `Bye`; the sink with
/// every item, and the statistics.
pub(crate) fn run<So, Si, T>(
    transport: &mut dyn Transport,
    setup: ControllerSetup,
    source: So,
    mut sink: Si,
) -> Result<(Si, PipelineStats), RunError>
where
    So: Source,
    Si: Sink<T>,
    T: DeserializeOwned,
{
    let mut core = ControllerCore::new(setup, Encoding(source));
    let clock = Instant::now();
    let mut out = Vec::new();
    let mut idle = Idle::default();
    if let Ok(since_epoch) = SystemTime::now().duration_since(UNIX_EPOCH) {
        core.started_at_unix_s(since_epoch.as_secs_f64());
    }
    core.start(clock.elapsed(), &mut out)?;
    perform(transport, &mut sink, &mut out)?;
    while !core.is_done() {
        let now = clock.elapsed();
        if core.poll_timeout().is_some_and(|at| now >= at) {
            core.on_timer(now, &mut out);
            perform(transport, &mut sink, &mut out)?;
        }
        if let Some(envelope) = transport.wait(idle.next_pause())? {
            idle.reset();
            core.handle(clock.elapsed(), envelope.from, &envelope.bytes, &mut out)?;
            transport.recycle(envelope.bytes);
            perform(transport, &mut sink, &mut out)?;
        }
    }
    transport.flush()?;
    let (stats, _) = core.finish();
    Ok((sink, stats))
}

fn perform<Si: Sink<T>, T: DeserializeOwned>(
    transport: &mut dyn Transport,
    sink: &mut Si,
    out: &mut Vec<PipeOutput>,
) -> Result<(), RunError> {
    for output in send_all(transport, out)? {
        match output {
            PipeOutput::Deliver { seq, body } => deliver(sink, seq, &body)
                .map_err(|source| RunError::Core(CoreError::Decode { rank: 0, source }))?,
            PipeOutput::Progress(line) => println!("{line}"),
            PipeOutput::Send { .. } => {}
        }
    }
    Ok(())
}
