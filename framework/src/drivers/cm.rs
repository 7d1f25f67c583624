//! The communication manager's driver: the bridge between MPI inside a cluster and the WAN
//! link (crate `hmw-cm`) to the peer CM of another cluster, around a CM core
//! ([`CmMasterSide`] facing a master, [`CmSubMasterSide`] facing a sub-master).
//!
//! The loop polls MPI and the link, passes what arrives to the core, tells it how the link is
//! doing ([`LinkView`]) and performs its outputs; it sleeps in between on the link's receive,
//! so a WAN message wakes it at once. CMs facing the master that share a process
//! ([`run_shared`]) each run this loop on a thread of their own.

use std::{
    sync::Arc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use hmw_cm::{
    cm_line::link_config, config::LINK_THREADS, driver::Doorbell, BlockingLink, LinkError,
    LinkRuntime, LinkStats, TrySendError,
};

use crate::error::RunError;
pub(crate) use hmw_core::roles::Outbound;
use hmw_core::{
    config::CmConfig,
    machinefile::{Facing, MachineFile, MASTER},
    roles::{CmMasterSide, CmOutput, CmSubMasterSide, LinkOutbox, LinkView},
    stats::{LinkSummary, Outage},
};
use hmw_transport::{
    idle::{Idle, MAX_PAUSE},
    shared::SharedProcess,
    Transport,
};

/// Messages a CM takes from its link before it looks at MPI again.
pub(crate) const MESSAGES_PER_TURN: usize = 64;

fn link_error(error: impl std::fmt::Display) -> RunError {
    RunError::Link(error.to_string())
}

/// Summary of a link's statistics for the run report.
pub(crate) fn summarize(stats: &LinkStats) -> LinkSummary {
    LinkSummary {
        bytes_sent: stats.bytes_sent,
        bytes_received: stats.bytes_received,
        send_bytes_per_s: stats.send_rate_average,
        recv_bytes_per_s: stats.recv_rate_average,
        disconnections: stats.disconnections,
        disconnected_s: stats.time_disconnected_s,
        blocks_retransmitted: stats.blocks_retransmitted,
        max_reconnect_s: stats.max_reconnect_latency_s,
        refused: stats.connections_refused,
        connections_established: stats.connections_established,
        packets_lost: stats.packets_lost,
        outages: stats
            .outages
            .iter()
            .map(|o| Outage {
                start_unix_s: o.start_unix_s,
                end_unix_s: o.end_unix_s,
            })
            .collect(),
        first_connected_unix_s: stats.first_connected_unix_s,
    }
}

/// The link side of a CM (of a master-worker run, or of a pipeline run:
/// [`crate::drivers::pipeline`]).
pub(crate) struct Wan {
    link: BlockingLink,
    /// Rung by the cluster's messages to this CM, when its transport can: a wait on the link
    /// then ends for them too.
    bell: Option<Doorbell>,
}

impl Wan {
    /// Move what the link has room for from the core's outbox into the link's send buffer,
    /// oldest first.
    pub(crate) fn push(&mut self, core: &mut impl LinkOutbox) -> Result<(), RunError> {
        while let Some(bytes) = core.next_for_link() {
            match self.link.try_send(bytes) {
                Ok(()) => {
                    core.pop_for_link();
                }
                Err(TrySendError::Full { .. }) => break,
                Err(TrySendError::Link(e)) => return Err(link_error(e)),
            }
        }
        Ok(())
    }

    /// Have the cluster's messages to this CM end its waits on the link, when `transport` can
    /// say when one arrives (in-process): then the CM may idle long, and the backoff returned
    /// grows to long pauses; over MPI, which cannot, it polls its cluster between short ones.
    pub(crate) fn wake_on_cluster(&mut self, transport: &mut dyn Transport) -> Idle {
        let bell = Doorbell::default();
        let ring = bell.clone();
        if transport.on_arrival(Arc::new(move || ring.ring())) {
            self.bell = Some(bell);
            Idle::woken_on_arrival()
        } else {
            Idle::default()
        }
    }

    /// The next message from the peer, waiting at most `timeout` (less when the cluster's
    /// messages ring: [`wake_on_cluster`](Self::wake_on_cluster)).
    pub(crate) fn recv(&mut self, timeout: Duration) -> Result<Option<Vec<u8>>, RunError> {
        let received = match &self.bell {
            _ if timeout.is_zero() => self.link.try_recv(),
            Some(bell) => self.link.recv_timeout_or(timeout, bell),
            None => self.link.recv_timeout(timeout),
        };
        match received {
            Ok(message) => Ok(message.map(|b| b.to_vec())),
            // The peer closed after sending everything: nothing more will come.
            Err(LinkError::PeerClosed) => Ok(None),
            Err(e) => Err(link_error(e)),
        }
    }

    /// The link as the core sees it.
    pub(crate) fn view(&self) -> LinkView {
        let stats = self.link.stats();
        LinkView {
            connected: self.link.is_connected(),
            ever_connected: stats.connections_established > 0,
            send_fill: self.link.send_buffer().fill(),
            send_bytes_per_s: stats.send_rate_current,
            recv_bytes_per_s: stats.recv_rate_current,
            rtt_s: stats.windows.rtt_ms / 1e3,
            peer_restarts: stats.peer_restarts,
            reconnections: stats.reconnections,
            blocks_resent: stats.blocks_retransmitted,
            packets_lost: stats.packets_lost,
        }
    }

    /// Move the core's outbox into the link as room frees, let the peer receive what is
    /// buffered, then close. Gives up after `timeout` in all, or as soon as the peer has closed
    /// (it needs nothing more).
    pub(crate) fn close(mut self, core: &mut impl LinkOutbox, timeout: Duration) {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.push(core).is_err() {
                break;
            }
            // Everything in the link: wait for the peer to have it; else for room in the link.
            let all_in = core.next_for_link().is_none();
            let wait = Duration::from_millis(if all_in { 100 } else { 10 });
            match self.link.flush(wait) {
                Err(LinkError::Timeout) => {
                    if matches!(self.link.try_recv(), Err(LinkError::PeerClosed)) {
                        break;
                    }
                }
                _ if all_in => break,
                _ => {}
            }
        }
        self.link.close();
    }

    /// The link's figures so far.
    pub(crate) fn summary(&self) -> LinkSummary {
        summarize(&self.link.stats())
    }
}

/// The link of CM `rank`, configured from its machine-file line and `[cm]`, started on a
/// runtime of its own, or on `shared` (the CMs of a shared process).
pub(crate) fn open_link(
    machines: &MachineFile,
    rank: usize,
    cm: &CmConfig,
    shared: Option<&LinkRuntime>,
) -> Result<Wan, RunError> {
    let config = link_config(machines, rank, cm).map_err(|e| RunError::setup(e.to_string()))?;
    let link = match shared {
        Some(runtime) => BlockingLink::start_on(config, runtime),
        None => BlockingLink::start(config),
    }
    .map_err(link_error)?;
    Ok(Wan { link, bell: None })
}

/// Run CM `rank` until its master (or the far side) ends the run, its link on a runtime of
/// its own or on `shared`. `outbound` shapes the tasks a CM facing a master forwards.
pub(crate) fn run(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    cm: &CmConfig,
    outbound: Option<Outbound>,
    shared: Option<&LinkRuntime>,
) -> Result<(), RunError> {
    let rank = transport.rank();
    let wan = open_link(machines, rank, cm, shared)?;
    let lost_after = Duration::from_secs_f64(cm.lost_after_s);
    let line = &machines.ranks[rank];
    let window = line.annotations.window.unwrap_or(cm.tasks_window as u64);
    match line.cm.as_ref().map(|c| c.facing) {
        Some(Facing::Master) => {
            let core = CmMasterSide::new(rank, window, lost_after, outbound);
            run_master_side(transport, wan, core)
        }
        _ => run_submaster_side(
            transport,
            wan,
            CmSubMasterSide::new(rank, cm.give_up_after()),
        ),
    }
}

/// Run the CMs facing the master that share this process (`ranks`, in rank order; see
/// `hmw_core::machinefile::ProcessMap`): each on a thread of its own as in a process of its
/// own, this thread routing between them and the cluster's `transport`. `outbounds`: each
/// one's shaping of the tasks it forwards, in order. The first CM to fail ends them all.
pub(crate) fn run_shared(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    cm: &CmConfig,
    ranks: &[usize],
    outbounds: Vec<Option<Outbound>>,
) -> Result<(), RunError> {
    let machines = Arc::new(machines.clone());
    // One runtime for every link, of as many threads as a link's own has: their timers and
    // packets wake its threads, not threads of their own.
    let runtime = LinkRuntime::new(LINK_THREADS).map_err(link_error)?;
    let (mut router, members) = SharedProcess::new(transport, ranks, machines.rank_count());
    let mut threads = Vec::with_capacity(ranks.len());
    for (mut member, outbound) in members.into_iter().zip(outbounds) {
        let (machines, cm, runtime) = (machines.clone(), cm.clone(), runtime.clone());
        let thread = std::thread::Builder::new()
            .name(format!("hmw-cm-{}", member.rank()))
            .spawn(move || run(&mut member, &machines, &cm, outbound, Some(&runtime)))
            .map_err(|e| RunError::setup(format!("cannot start a CM's thread: {e}")))?;
        threads.push(Some(thread));
    }
    // The links hold it now: the last of them to close shuts it down.
    drop(runtime);
    let mut failed = None;
    router.route(|| {
        for slot in &mut threads {
            if slot.as_ref().is_some_and(JoinHandle::is_finished) {
                let ended = slot.take().expect("checked").join();
                if let Err(e) = ended.unwrap_or_else(|_| Err(link_error("a CM's thread panicked")))
                {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.is_some() || threads.iter().all(Option::is_none)
    })?;
    failed.map_or(Ok(()), Err)
}

/// The sleep before the next poll of the link: none after activity, and no longer than the
/// default backoff's while `core` has messages the link had no room for (the link frees room
/// without waking anyone).
pub(crate) fn pause(active: bool, idle: &mut Idle, core: &impl LinkOutbox) -> Duration {
    if active {
        Duration::ZERO
    } else if core.next_for_link().is_some() {
        idle.next_pause().min(MAX_PAUSE)
    } else {
        idle.next_pause()
    }
}

/// A CM in the master's cluster.
fn run_master_side(
    transport: &mut dyn Transport,
    mut wan: Wan,
    mut core: CmMasterSide,
) -> Result<(), RunError> {
    let clock = Instant::now();
    let mut idle = wan.wake_on_cluster(transport);
    let mut out = Vec::new();
    loop {
        let mut active = false;
        while let Some(envelope) = transport.try_recv()? {
            active = true;
            core.on_cluster(&envelope.bytes)?;
            wan.push(&mut core)?;
        }
        let mut wait = pause(active, &mut idle, &core);
        for _ in 0..MESSAGES_PER_TURN {
            let Some(bytes) = wan.recv(wait)? else {
                break;
            };
            wait = Duration::ZERO;
            active = true;
            core.on_link(&bytes, &mut out)?;
            perform_master_side(transport, &mut wan, &mut core, &mut out)?;
            if core.far_bye() {
                break;
            }
        }
        wan.push(&mut core)?;
        core.on_tick(clock.elapsed(), &wan.view(), &mut out);
        perform_master_side(transport, &mut wan, &mut core, &mut out)?;
        if core.is_done() {
            break;
        }
        if active {
            idle.reset();
        }
    }
    let bye = core.bye(summarize(&wan.link.stats()));
    transport.send(MASTER, bye)?;
    transport.flush()?;
    wan.close(&mut core, Duration::from_secs(2));
    Ok(())
}

fn perform_master_side(
    transport: &mut dyn Transport,
    wan: &mut Wan,
    core: &mut CmMasterSide,
    out: &mut Vec<CmOutput>,
) -> Result<(), RunError> {
    for output in out.drain(..) {
        match output {
            CmOutput::ToCluster(bytes) => transport.send(MASTER, bytes)?,
            CmOutput::SnapshotLink => core.set_far_link(summarize(&wan.link.stats())),
            // A CM facing a master closes its link after its `Bye` (see the end of the loop).
            CmOutput::CloseLink(_) => {}
        }
    }
    wan.push(core)
}

/// A CM in an external cluster, in front of its sub-master.
fn run_submaster_side(
    transport: &mut dyn Transport,
    mut wan: Wan,
    mut core: CmSubMasterSide,
) -> Result<(), RunError> {
    let clock = Instant::now();
    let mut idle = wan.wake_on_cluster(transport);
    let mut out = Vec::new();
    let mut wan = Some(wan);
    loop {
        let mut active = false;
        while let Some(envelope) = transport.try_recv()? {
            active = true;
            core.on_cluster(&envelope.bytes, &mut out)?;
            perform_submaster_side(transport, &mut wan, &mut core, &mut out)?;
            if core.is_done() {
                transport.flush()?;
                return Ok(());
            }
        }
        let Some(link) = wan.as_mut() else {
            return Ok(());
        };
        let mut wait = pause(active, &mut idle, &core);
        for _ in 0..MESSAGES_PER_TURN {
            let Some(bytes) = link.recv(wait)? else {
                break;
            };
            wait = Duration::ZERO;
            active = true;
            core.on_link(bytes)?;
        }
        link.push(&mut core)?;
        let view = link.view();
        core.on_tick(clock.elapsed(), &view, &mut out);
        perform_submaster_side(transport, &mut wan, &mut core, &mut out)?;
        if active {
            idle.reset();
        }
    }
}

fn perform_submaster_side(
    transport: &mut dyn Transport,
    wan: &mut Option<Wan>,
    core: &mut CmSubMasterSide,
    out: &mut Vec<CmOutput>,
) -> Result<(), RunError> {
    for output in out.drain(..) {
        match output {
            CmOutput::ToCluster(bytes) => transport.send(MASTER, bytes)?,
            CmOutput::CloseLink(patience) => {
                if let Some(wan) = wan.take() {
                    wan.close(core, patience);
                }
            }
            CmOutput::SnapshotLink => {}
        }
    }
    match wan {
        Some(wan) => wan.push(core),
        None => Ok(()),
    }
}
