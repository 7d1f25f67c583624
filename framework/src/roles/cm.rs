//! The communication-manager role: the bridge between MPI inside a cluster and the WAN link
//! (crate `hmw-cm`) to the peer CM of another cluster.
//!
//! - Facing a master (`# M ...`): to its master it is a worker with a deep window. The far
//!   sub-master's requests for work (its room) come back over the link as credit; the CM asks
//!   its master for as many batches as that credit plus `tasks_window` more (the batches on
//!   their way across the WAN while the next credit travels back), while its link's send
//!   buffer is less than half full. It forwards each batch over the link, and passes the
//!   results that come back to the master. The far cluster thus never hoards more than it
//!   asked for plus the window. The master never waits on the WAN: a slow or
//!   broken link only delays the tasks already handed to this CM. If the link stays down past
//!   `lost_after_s`, it tells the master the cluster is lost, and the master hands that
//!   cluster's tasks to others.
//! - Facing a sub-master (`# S ...`): the sub-master's input and output. Tasks from the link
//!   go to the sub-master as it offers room; its results go back over the link.
//!
//! Both sides poll MPI and the link and sleep in between (on the link's receive, so a WAN
//! message wakes them at once).

use std::{
    collections::VecDeque,
    path::Path,
    time::{Duration, Instant},
};

use hmw_cm::{BlockingLink, LinkConfig, LinkError, LinkStats, TlsConfig, TrySendError};

use crate::{
    config::CmConfig,
    error::RunError,
    idle::Idle,
    machinefile::{Endpoint, Facing, MachineFile, MASTER},
    protocol::{decode, encode, LinkState, ToMaster, ToWorker},
    stats::{ClusterReport, LinkSummary, Outage},
    transport::Transport,
};

/// Messages a CM takes from its link before it looks at MPI again.
const MESSAGES_PER_TURN: usize = 64;

/// The most room a CM offers its master at once (a far side asking for more gets it over
/// several offers).
const MAX_ROOM: u64 = 1 << 16;

/// How often a CM facing a master tells its master how its link is doing.
const LINK_REPORT_EVERY: Duration = Duration::from_secs(1);

/// How long a CM facing a master waits, once the run is stopping, for a link that is down to
/// bring the far cluster's statistics.
const STOP_PATIENCE: Duration = Duration::from_secs(5);

/// The application's shaping of a task's body before it crosses the WAN
/// ([`crate::app::Splitter::outbound`]), on a CM facing a master.
pub type Outbound = Box<dyn FnMut(&[u8]) -> Result<Vec<u8>, RunError>>;

/// Build the link configuration of CM `rank` from its machine-file line and `[cm]`.
pub fn link_config(
    machines: &MachineFile,
    rank: usize,
    cm: &CmConfig,
) -> Result<LinkConfig, RunError> {
    let line = &machines.ranks[rank];
    let at = format!("{}:{}", machines.path.display(), line.line_no);
    let spec = line
        .cm
        .as_ref()
        .ok_or_else(|| RunError::Setup(format!("{at}: not a communication manager")))?;
    let name = line.annotations.name.as_deref().ok_or_else(|| {
        RunError::Setup(format!(
            "{at}: a communication manager needs name=NAME (the name of its certificate)"
        ))
    })?;
    let certs = cm.certs.as_deref().ok_or_else(|| {
        RunError::Setup(format!(
            "{at}: communication managers need [cm] certs = FOLDER in the configuration \
             (create one with `hmw-cm keygen`)"
        ))
    })?;
    let file = |name: &str| certs.join(name);
    let tls = TlsConfig {
        cert: file(&format!("{name}.pem")),
        key: file(&format!("{name}.key.pem")),
        ca: Some(file("ca.pem")),
        pinned_peer: None,
    };
    let mut config = match &spec.endpoint {
        Endpoint::Server { port } => {
            let bind = line.annotations.bind.as_ref().unwrap_or(&line.host);
            let mut config = LinkConfig::new(hmw_cm::Role::Server, bind.clone(), *port, tls);
            // Only the client CM of this name may connect (others of the same CA are refused).
            config.peer = line.annotations.peer.clone();
            config
        }
        Endpoint::Client { host, port } => {
            let mut config = LinkConfig::new(hmw_cm::Role::Client, host.clone(), *port, tls);
            config.server_name = line.annotations.peer.clone();
            config
        }
    };
    // Each `[cm]` key given overrides the link's default.
    macro_rules! overrides {
        ($($key:ident),*) => {$(
            if let Some(value) = cm.$key {
                config.$key = value;
            }
        )*};
    }
    overrides!(
        connections,
        streams,
        block_size,
        send_memory,
        recv_memory,
        inactivity_timeout_ms,
        congestion
    );
    config
        .validate()
        .map_err(|e| RunError::Setup(format!("{at}: {e}")))?;
    for path in [&config.tls.cert, &config.tls.key] {
        if !Path::new(path).exists() {
            return Err(RunError::Setup(format!(
                "{at}: {} does not exist (run `hmw-cm keygen` for this CM name)",
                path.display()
            )));
        }
    }
    Ok(config)
}

fn link_error(error: impl std::fmt::Display) -> RunError {
    RunError::Setup(format!("WAN link: {error}"))
}

/// Summary of a link's statistics for the run report.
pub fn summarize(stats: &LinkStats) -> LinkSummary {
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
    }
}

/// The link side of a CM: messages that wait for send-buffer space go out in order.
struct Wan {
    link: BlockingLink,
    backlog: VecDeque<Vec<u8>>,
    /// Since when no connection is up (the link starts down).
    down_since: Option<Instant>,
}

impl Wan {
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), RunError> {
        self.backlog.push_back(bytes);
        self.push()
    }

    /// Move what fits from the backlog into the link's send buffer.
    fn push(&mut self) -> Result<(), RunError> {
        while let Some(bytes) = self.backlog.front() {
            match self.link.try_send(bytes) {
                Ok(()) => {
                    self.backlog.pop_front();
                }
                Err(TrySendError::Full { .. }) => break,
                Err(TrySendError::Link(e)) => return Err(link_error(e)),
            }
        }
        Ok(())
    }

    /// The next message from the peer, waiting at most `timeout`.
    fn recv(&mut self, timeout: Duration) -> Result<Option<Vec<u8>>, RunError> {
        let received = if timeout.is_zero() {
            self.link.try_recv()
        } else {
            self.link.recv_timeout(timeout)
        };
        match received {
            Ok(message) => Ok(message.map(|b| b.to_vec())),
            // The peer closed after sending everything: nothing more will come.
            Err(LinkError::PeerClosed) => Ok(None),
            Err(e) => Err(link_error(e)),
        }
    }

    /// How long the link has been down (zero while connected).
    fn down_for(&mut self) -> Duration {
        if self.link.is_connected() {
            self.down_since = None;
            Duration::ZERO
        } else {
            self.down_since.get_or_insert_with(Instant::now).elapsed()
        }
    }

    /// Let the peer receive what is buffered, then close. Gives up after `timeout`, or as
    /// soon as the peer has closed (it needs nothing more).
    fn close(self, timeout: Duration) {
        let start = Instant::now();
        while start.elapsed() < timeout {
            match self.link.flush(Duration::from_millis(100)) {
                Err(LinkError::Timeout) => {
                    if matches!(self.link.try_recv(), Err(LinkError::PeerClosed)) {
                        break;
                    }
                }
                _ => break,
            }
        }
        self.link.close();
    }
}

/// Run CM `rank` until its master (or the far side) ends the run. `outbound` shapes the
/// tasks a CM facing a master forwards.
pub fn run(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    cm: &CmConfig,
    outbound: Option<Outbound>,
) -> Result<(), RunError> {
    let rank = transport.rank();
    let config = link_config(machines, rank, cm)?;
    let link = BlockingLink::start(config).map_err(link_error)?;
    let wan = Wan {
        link,
        backlog: VecDeque::new(),
        down_since: None,
    };
    let lost_after = Duration::from_secs_f64(cm.lost_after_s);
    let line = &machines.ranks[rank];
    let window = line.annotations.window.unwrap_or(cm.tasks_window as u64);
    match line.cm.as_ref().map(|c| c.facing) {
        Some(Facing::Master) => MasterSide::new(transport, wan, window, lost_after, outbound).run(),
        _ => SubMasterSide::new(transport, wan, lost_after).run(),
    }
}

/// A CM in the master's cluster.
struct MasterSide<'a> {
    transport: &'a mut dyn Transport,
    wan: Wan,
    /// Batches sent ahead of the far side's credit.
    window: u64,
    lost_after: Duration,
    /// Room offered to the master and not used yet (in batches).
    offered: u64,
    /// Batches forwarded over the link.
    forwarded: u64,
    /// Room the far sub-master has asked for in all (batches).
    far_room: u64,
    lost: bool,
    stopping: bool,
    report: Option<Box<ClusterReport>>,
    far_bye: bool,
    outbound: Option<Outbound>,
    /// Bytes of the task bodies the master handed over, and as they crossed the WAN.
    task_bytes: u64,
    task_bytes_sent: u64,
}

impl<'a> MasterSide<'a> {
    fn new(
        transport: &'a mut dyn Transport,
        wan: Wan,
        window: u64,
        lost_after: Duration,
        outbound: Option<Outbound>,
    ) -> Self {
        MasterSide {
            transport,
            wan,
            window,
            lost_after,
            offered: 0,
            forwarded: 0,
            far_room: 0,
            lost: false,
            stopping: false,
            report: None,
            far_bye: false,
            outbound,
            task_bytes: 0,
            task_bytes_sent: 0,
        }
    }

    fn run(mut self) -> Result<(), RunError> {
        let mut idle = Idle::default();
        let mut last_report = Instant::now();
        loop {
            let mut active = false;
            while let Some(envelope) = self.transport.try_recv()? {
                active = true;
                let message = decode(&envelope.bytes, "message to a CM")
                    .map_err(RunError::decoding(envelope.from))?;
                self.on_master_message(message)?;
            }
            let pause = if active {
                Duration::ZERO
            } else {
                idle.next_pause()
            };
            let mut wait = pause;
            for _ in 0..MESSAGES_PER_TURN {
                let Some(bytes) = self.wan.recv(wait)? else {
                    break;
                };
                wait = Duration::ZERO;
                active = true;
                self.on_far_message(&bytes)?;
                if self.far_bye {
                    break;
                }
            }
            self.wan.push()?;
            // Once stopping, the master has every result it needs: only the far cluster's
            // statistics are awaited, and not for long over a link that is down.
            let deadline = if self.stopping {
                self.lost_after.min(STOP_PATIENCE)
            } else {
                self.lost_after
            };
            if !self.lost && self.wan.down_for() > deadline {
                self.lost = true;
                if !self.stopping {
                    tracing::warn!(
                        after_s = self.lost_after.as_secs_f64(),
                        "WAN link down past the deadline: the cluster behind it is lost"
                    );
                    self.transport.send(MASTER, encode(&ToMaster::Lost))?;
                }
            }
            let never_connected = self.wan.link.stats().connections_established == 0;
            if self.stopping && (self.far_bye || self.lost || never_connected) {
                break;
            }
            if last_report.elapsed() >= LINK_REPORT_EVERY {
                last_report = Instant::now();
                self.report_link()?;
            }
            self.offer_room()?;
            if active {
                idle.reset();
            }
        }
        let mut report = self.report.take().unwrap_or_default();
        if report.link.is_none() {
            report.link = Some(summarize(&self.wan.link.stats()));
        }
        report.task_bytes = self.task_bytes;
        report.task_bytes_sent = self.task_bytes_sent;
        self.transport.send(
            MASTER,
            encode(&ToMaster::Bye {
                report: Some(report),
            }),
        )?;
        self.transport.flush()?;
        self.wan.close(Duration::from_secs(2));
        Ok(())
    }

    fn on_master_message(&mut self, message: ToWorker) -> Result<(), RunError> {
        match message {
            ToWorker::Tasks(mut batch) => {
                self.offered = self.offered.saturating_sub(1);
                self.forwarded += 1;
                for task in &mut batch {
                    self.task_bytes += task.body.len() as u64;
                    if let Some(outbound) = &mut self.outbound {
                        task.body = outbound(&task.body)?;
                    }
                    self.task_bytes_sent += task.body.len() as u64;
                }
                self.wan.send(encode(&ToWorker::Tasks(batch)))
            }
            ToWorker::Stop => {
                self.stopping = true;
                self.wan.send(encode(&ToWorker::Stop))
            }
        }
    }

    fn on_far_message(&mut self, bytes: &[u8]) -> Result<(), RunError> {
        let message: ToMaster = decode(bytes, "message from the far cluster")
            .map_err(RunError::decoding(self.transport.rank()))?;
        match message {
            ToMaster::Result { result, .. } => {
                self.transport
                    .send(MASTER, encode(&ToMaster::Result { result, room: 0 }))?;
            }
            ToMaster::Bye { report } => {
                // The far side closes once this is acknowledged: take the link's figures now.
                let mut report = report.unwrap_or_default();
                report.link = Some(summarize(&self.wan.link.stats()));
                self.report = Some(report);
                self.far_bye = true;
            }
            ToMaster::Ready { room } => self.far_room += u64::from(room),
            // The far side's own link reports are not for this master.
            ToMaster::Link(_) => {}
            // The far cluster reports it cannot go on: it is lost now, not after the deadline.
            ToMaster::Lost | ToMaster::Failed { .. } => {
                if !self.lost {
                    self.lost = true;
                    tracing::warn!("the far cluster reports it cannot go on: it is lost");
                    self.transport.send(MASTER, encode(&ToMaster::Lost))?;
                }
            }
        }
        Ok(())
    }

    /// Tell the master how the link is doing, for its live prediction.
    fn report_link(&mut self) -> Result<(), RunError> {
        let stats = self.wan.link.stats();
        let state = LinkState {
            connected: self.wan.link.is_connected(),
            tasks_waiting: !self.wan.backlog.is_empty()
                || self.wan.link.send_buffer().fill() >= 0.5,
            send_bytes_per_s: stats.send_rate_current,
            recv_bytes_per_s: stats.recv_rate_current,
        };
        self.transport
            .send(MASTER, encode(&ToMaster::Link(state)))?;
        Ok(())
    }

    /// Ask the master for more while the window and the send buffer allow.
    fn offer_room(&mut self) -> Result<(), RunError> {
        // Tasks handed over while the link is down would only wait here.
        if self.lost
            || self.stopping
            || !self.wan.backlog.is_empty()
            || !self.wan.link.is_connected()
        {
            return Ok(());
        }
        if self.wan.link.send_buffer().fill() >= 0.5 {
            return Ok(());
        }
        let wanted = (self.far_room + self.window).saturating_sub(self.offered + self.forwarded);
        let room = wanted.min(MAX_ROOM);
        if room > 0 {
            self.offered += room;
            self.transport
                .send(MASTER, encode(&ToMaster::Ready { room: room as u32 }))?;
        }
        Ok(())
    }
}

/// A CM in an external cluster, in front of its sub-master.
struct SubMasterSide<'a> {
    transport: &'a mut dyn Transport,
    wan: Wan,
    lost_after: Duration,
    /// Room the sub-master offered and that no batch used yet.
    room: u32,
    queue: VecDeque<ToWorker>,
    stop_sent: bool,
}

impl<'a> SubMasterSide<'a> {
    fn new(transport: &'a mut dyn Transport, wan: Wan, lost_after: Duration) -> Self {
        SubMasterSide {
            transport,
            wan,
            lost_after,
            room: 0,
            queue: VecDeque::new(),
            stop_sent: false,
        }
    }

    fn run(mut self) -> Result<(), RunError> {
        let mut idle = Idle::default();
        loop {
            let mut active = false;
            while let Some(envelope) = self.transport.try_recv()? {
                active = true;
                let message: ToMaster = decode(&envelope.bytes, "message to a CM")
                    .map_err(RunError::decoding(envelope.from))?;
                match message {
                    ToMaster::Ready { room } => {
                        // Credit for the master's side, which sends no more than asked for.
                        self.room += room;
                        self.wan.send(encode(&ToMaster::Ready { room }))?;
                    }
                    ToMaster::Bye { report } => {
                        self.wan.send(encode(&ToMaster::Bye { report }))?;
                        self.wan.push()?;
                        // The far side needs the results and the report: wait (bounded).
                        self.wan.close(self.lost_after);
                        return Ok(());
                    }
                    ToMaster::Lost => {
                        // The sub-master cannot go on: tell the far side, then let it know
                        // that the message is on its way (it is waiting to end its cluster).
                        self.wan.send(encode(&ToMaster::Lost))?;
                        self.wan.push()?;
                        self.wan.close(STOP_PATIENCE);
                        self.transport.send(MASTER, encode(&ToWorker::Stop))?;
                        self.transport.flush()?;
                        return Ok(());
                    }
                    other => self.wan.send(encode(&other))?,
                }
            }
            let pause = if active {
                Duration::ZERO
            } else {
                idle.next_pause()
            };
            let mut wait = pause;
            for _ in 0..MESSAGES_PER_TURN {
                let Some(bytes) = self.wan.recv(wait)? else {
                    break;
                };
                wait = Duration::ZERO;
                active = true;
                match decode(&bytes, "message from the master's cluster")
                    .map_err(RunError::decoding(self.transport.rank()))?
                {
                    ToWorker::Stop => {
                        // Tasks still queued are not needed any more.
                        self.queue.clear();
                        self.queue.push_back(ToWorker::Stop);
                    }
                    // Once this cluster is stopping, tasks that still come are not for it.
                    tasks if !self.stop_sent => self.queue.push_back(tasks),
                    _ => {}
                }
            }
            self.wan.push()?;
            if !self.stop_sent && self.wan.down_for() > self.lost_after {
                tracing::warn!("WAN link down past the deadline: stopping this cluster");
                self.queue.clear();
                self.queue.push_back(ToWorker::Stop);
            }
            self.forward()?;
            if active {
                idle.reset();
            }
        }
    }

    /// Hand queued batches to the sub-master as its room allows; `Stop` goes at once.
    fn forward(&mut self) -> Result<(), RunError> {
        while let Some(front) = self.queue.front() {
            let is_stop = matches!(front, ToWorker::Stop);
            if !is_stop && self.room == 0 {
                break;
            }
            let message = self.queue.pop_front().expect("front exists");
            if is_stop {
                if self.stop_sent {
                    continue;
                }
                self.stop_sent = true;
            } else {
                self.room -= 1;
            }
            self.transport.send(MASTER, encode(&message))?;
        }
        Ok(())
    }
}
