//! A CM's driver in a pipeline run: its cluster's messages for other clusters into the link,
//! the link's messages to their ranks, around a [`RelayCore`]; the link is the one a
//! master-worker run's CM opens ([`crate::drivers::cm`]).

use std::{collections::VecDeque, time::Instant};

use hmw_core::{
    config::CmConfig,
    machinefile::MachineFile,
    pipeline::stats::{PipeRole, RankReport},
    roles::pipeline::{RelayCore, RelayOutput},
};
use hmw_transport::{idle::Idle, Transport};

use crate::{
    drivers::cm::{open_link, pause, Wan, MESSAGES_PER_TURN},
    error::RunError,
};

/// Run the CM until the controller stops it; on an error, the controller is told when it is
/// in this cluster.
pub(crate) fn run(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    cm: &CmConfig,
    mut core: RelayCore,
) -> Result<(), RunError> {
    let rank = transport.rank();
    let host = machines.ranks[rank].host.clone();
    let mut wan = Some(open_link(machines, rank, cm, None)?);
    let served = serve(transport, &mut wan, &mut core, &host);
    if let Err(error) = &served {
        if let Some((to, bytes)) = core.failure(&error.to_string()) {
            let _ = transport.send(to, bytes);
        }
    }
    transport.flush()?;
    served
}

fn serve(
    transport: &mut dyn Transport,
    wan: &mut Option<Wan>,
    core: &mut RelayCore,
    host: &str,
) -> Result<(), RunError> {
    let clock = Instant::now();
    let mut idle = Idle::default();
    let mut out = Vec::new();
    loop {
        let mut active = false;
        while let Some(envelope) = transport.try_recv()? {
            active = true;
            core.on_cluster(envelope.from, envelope.bytes, &mut out)?;
            perform(transport, wan, core, host, &mut out)?;
            if core.is_done() {
                return Ok(());
            }
        }
        let mut wait = pause(active, &mut idle, core);
        for _ in 0..MESSAGES_PER_TURN {
            let Some(link) = wan.as_mut() else {
                return Ok(());
            };
            let Some(bytes) = link.recv(wait)? else {
                break;
            };
            wait = std::time::Duration::ZERO;
            active = true;
            core.on_link(bytes, &mut out)?;
            perform(transport, wan, core, host, &mut out)?;
            if core.is_done() {
                return Ok(());
            }
        }
        let Some(link) = wan.as_mut() else {
            return Ok(());
        };
        link.push(core)?;
        core.on_tick(clock.elapsed(), &link.view())?;
        if active {
            idle.reset();
        }
    }
}

fn perform(
    transport: &mut dyn Transport,
    wan: &mut Option<Wan>,
    core: &mut RelayCore,
    host: &str,
    out: &mut Vec<RelayOutput>,
) -> Result<(), RunError> {
    let mut queue: VecDeque<RelayOutput> = out.drain(..).collect();
    while let Some(output) = queue.pop_front() {
        match output {
            RelayOutput::ToRank { rank, bytes } => transport.send(rank, bytes)?,
            RelayOutput::Stopped => {
                let report = RankReport {
                    host: host.to_owned(),
                    role: PipeRole::Cm,
                    link: wan.as_ref().map(Wan::summary),
                    ..RankReport::default()
                };
                let mut more = Vec::new();
                core.finish(report, &mut more)?;
                queue.extend(more);
            }
            RelayOutput::CloseLink(patience) => {
                if let Some(link) = wan.take() {
                    link.close(core, patience);
                }
            }
        }
    }
    if let Some(link) = wan.as_mut() {
        link.push(core)?;
    }
    Ok(())
}
