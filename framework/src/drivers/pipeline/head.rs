//! A cluster's head's driver: the loop around a [`HeadCore`].

use hmw_core::roles::pipeline::HeadCore;
use hmw_transport::{idle::Idle, Transport};

use super::send_all;
use crate::error::RunError;

/// Run the head until the controller stops it.
pub(crate) fn run(transport: &mut dyn Transport, mut core: HeadCore) -> Result<(), RunError> {
    let mut out = Vec::new();
    let mut idle = Idle::default();
    core.start(&mut out)?;
    send_all(transport, &mut out)?;
    while !core.is_done() {
        if let Some(envelope) = transport.wait(idle.next_pause())? {
            idle.reset();
            core.handle(envelope.from, &envelope.bytes, &mut out)?;
            transport.recycle(envelope.bytes);
            send_all(transport, &mut out)?;
        }
    }
    transport.flush()?;
    Ok(())
}
