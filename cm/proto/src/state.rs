//! The protocol core's state: sessions with the peer, the send and receive buffers of the
//! link, and what each event makes the driver do.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;

use super::error::ProtocolError;
use super::frame::{self, Ack, Block, ConnId, Frame, Hello};
use super::receiver::{BlockOutcome, ReceiveBuffer};
use super::sender::{PushError, SendBuffer};

/// How many session ids of previous incarnations of the peer are remembered (their late
/// hellos are refused instead of being taken for yet another restart).
pub const PREVIOUS_SESSIONS: usize = 16;

/// Sizes that shape the protocol core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreConfig {
    /// Largest block payload this side cuts.
    pub block_size: usize,
    /// Send buffer capacity in bytes.
    pub send_memory: usize,
    /// Receive buffer capacity in bytes.
    pub recv_memory: usize,
    /// Largest message this side sends or accepts.
    pub max_message: usize,
}

/// Result of a hello: the connection joined the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    /// The peer is a new incarnation (its session id changed): buffers were reset.
    pub peer_restarted: bool,
    /// Connections of the previous incarnation, to be closed by the driver.
    pub stale_connections: Vec<ConnId>,
}

/// What a frame did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameEffect {
    /// The connection joined the session.
    Handshake(Handshake),
    /// A data block was taken.
    Block(BlockOutcome),
    /// An acknowledgement freed this many send-buffer bytes.
    Acked(usize),
}

/// Counters kept by the core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreCounters {
    /// Messages accepted by `push_message`.
    pub messages_pushed: u64,
    /// Message bytes accepted by `push_message`.
    pub bytes_pushed: u64,
    /// Messages handed out by `pop_message`.
    pub messages_popped: u64,
    /// Message bytes handed out by `pop_message`.
    pub bytes_popped: u64,
    /// Times the peer was found restarted.
    pub peer_restarts: u64,
    /// Send-buffer bytes dropped because the peer they were addressed to restarted.
    pub bytes_dropped_on_peer_restart: u64,
}

/// The whole protocol state of one link end.
#[derive(Debug)]
pub struct Core {
    config: CoreConfig,
    session: u64,
    peer_session: Option<u64>,
    /// Session ids of the peer's previous incarnations, newest last, at most
    /// [`PREVIOUS_SESSIONS`].
    pub(super) previous_peer_sessions: VecDeque<u64>,
    /// Connections known to the core; `true` once their hello arrived.
    connections: HashMap<ConnId, bool>,
    sender: SendBuffer,
    receiver: ReceiveBuffer,
    counters: CoreCounters,
}

impl Core {
    /// A fresh link end with random identity `session`.
    pub fn new(config: CoreConfig, session: u64) -> Self {
        Self {
            config,
            session,
            peer_session: None,
            previous_peer_sessions: VecDeque::new(),
            connections: HashMap::new(),
            sender: SendBuffer::new(config.send_memory, config.block_size, config.max_message),
            receiver: ReceiveBuffer::new(config.recv_memory, config.max_message),
            counters: CoreCounters::default(),
        }
    }

    /// Raises the send and receive buffer capacities to at least `send_memory` and
    /// `recv_memory` (never lowers them). Returns whether the receive side grew (an
    /// acknowledgement carrying the new credit is then due).
    pub fn grow_memory(&mut self, send_memory: usize, recv_memory: usize) -> bool {
        self.sender.grow(send_memory);
        self.config.send_memory = self.sender.capacity();
        let grew = recv_memory > self.receiver.capacity();
        self.receiver.grow(recv_memory);
        self.config.recv_memory = self.receiver.capacity();
        grew
    }

    /// The hello to send first on connection number `connection_index`.
    pub fn hello(&self, connection_index: u32) -> Hello {
        Hello {
            version: frame::PROTOCOL_VERSION,
            session: self.session,
            connection_index,
            max_message: self.config.max_message as u64,
            block_size: self.config.block_size as u32,
        }
    }

    /// A transport connection was established (its hello not yet received).
    pub fn connection_opened(&mut self, conn: ConnId) {
        self.connections.insert(conn, false);
    }

    /// A transport connection is gone: its unacknowledged blocks will be sent elsewhere.
    pub fn connection_lost(&mut self, conn: ConnId) {
        self.connections.remove(&conn);
        self.sender.on_connection_lost(conn);
        self.receiver.forget_connection(conn);
    }

    /// Handles one frame received on `conn`.
    pub fn on_frame(&mut self, conn: ConnId, frame: Frame) -> Result<FrameEffect, ProtocolError> {
        let Some(&handshaken) = self.connections.get(&conn) else {
            return Err(ProtocolError::UnknownConnection(conn));
        };
        match frame {
            Frame::Hello(hello) if !handshaken => {
                self.on_hello(conn, hello).map(FrameEffect::Handshake)
            }
            Frame::Hello(_) => Err(ProtocolError::DuplicateHello),
            Frame::Data(_) if !handshaken => Err(ProtocolError::NotHandshaken("data")),
            Frame::Ack(_) if !handshaken => Err(ProtocolError::NotHandshaken("acknowledgement")),
            Frame::Data(block) => self.receiver.on_block(conn, block).map(FrameEffect::Block),
            Frame::Ack(ack) => Ok(FrameEffect::Acked(self.sender.on_ack(&ack)?)),
        }
    }

    fn on_hello(&mut self, conn: ConnId, hello: Hello) -> Result<Handshake, ProtocolError> {
        if hello.version != frame::PROTOCOL_VERSION {
            return Err(ProtocolError::VersionMismatch {
                ours: frame::PROTOCOL_VERSION,
                theirs: hello.version,
            });
        }
        if hello.max_message < self.config.max_message as u64 {
            return Err(ProtocolError::IncompatiblePeer {
                peer_max: hello.max_message,
                our_max: self.config.max_message as u64,
            });
        }
        if self.previous_peer_sessions.contains(&hello.session) {
            return Err(ProtocolError::StaleSession {
                session: hello.session,
            });
        }
        let mut handshake = Handshake {
            peer_restarted: false,
            stale_connections: Vec::new(),
        };
        match self.peer_session {
            Some(known) if known != hello.session => {
                handshake.peer_restarted = true;
                handshake.stale_connections = self
                    .connections
                    .iter()
                    .filter(|&(&c, &joined)| joined && c != conn)
                    .map(|(&c, _)| c)
                    .collect();
                handshake.stale_connections.sort_unstable();
                for stale in &handshake.stale_connections {
                    self.connections.remove(stale);
                }
                if self.previous_peer_sessions.len() == PREVIOUS_SESSIONS {
                    self.previous_peer_sessions.pop_front();
                }
                self.previous_peer_sessions.push_back(known);
                self.counters.peer_restarts += 1;
                self.counters.bytes_dropped_on_peer_restart +=
                    self.sender.reset_for_new_peer() as u64;
                // Complete messages of the previous incarnation are still handed out, first,
                // within the receive memory.
                self.receiver.reset_for_new_peer();
            }
            _ => {}
        }
        self.peer_session = Some(hello.session);
        self.connections.insert(conn, true);
        Ok(handshake)
    }

    /// The next block to write on `conn`, if any may be sent now and fewer than
    /// `max_in_flight` bytes sent on `conn` are unacknowledged.
    pub fn next_block(&mut self, conn: ConnId, max_in_flight: usize) -> Option<Block> {
        if self.connections.get(&conn) != Some(&true) {
            return None;
        }
        self.sender.next_block(conn, max_in_flight)
    }

    /// Whether some block could be sent now on a joined connection.
    pub fn has_sendable(&self) -> bool {
        self.sender.has_sendable()
    }

    /// The acknowledgement to send, if the receive state changed since the last one.
    pub fn take_ack(&mut self) -> Option<Ack> {
        self.receiver.ack_dirty().then(|| self.receiver.ack())
    }

    /// The acknowledgement describing the current receive state, changed or not.
    pub fn ack(&mut self) -> Ack {
        self.receiver.ack()
    }

    /// Appends a message to the send buffer.
    pub fn push_message(&mut self, message: &[u8]) -> Result<(), PushError> {
        self.sender.push_message(message)?;
        self.counters.messages_pushed += 1;
        self.counters.bytes_pushed += message.len() as u64;
        Ok(())
    }

    /// Appends a message to the send buffer without copying it (if it is large enough to be
    /// worth it, see [`super::sender::ZERO_COPY_MIN`]).
    pub fn push_message_bytes(&mut self, message: Bytes) -> Result<(), PushError> {
        let len = message.len() as u64;
        self.sender.push_message_bytes(message)?;
        self.counters.messages_pushed += 1;
        self.counters.bytes_pushed += len;
        Ok(())
    }

    /// The next received message, in send order.
    pub fn pop_message(&mut self) -> Option<Bytes> {
        let message = self.receiver.pop_message()?;
        self.counters.messages_popped += 1;
        self.counters.bytes_popped += message.len() as u64;
        Some(message)
    }

    /// Complete messages waiting for [`pop_message`](Self::pop_message), including those of a
    /// previous incarnation of the peer.
    pub fn ready_messages(&self) -> usize {
        self.receiver.ready_messages()
    }

    /// This side's session identity.
    pub fn session(&self) -> u64 {
        self.session
    }

    /// The peer's session identity, once a hello arrived.
    pub fn peer_session(&self) -> Option<u64> {
        self.peer_session
    }

    /// Number of connections that completed the hello.
    pub fn joined_connections(&self) -> usize {
        self.connections.values().filter(|&&joined| joined).count()
    }

    /// The send buffer, mutable (tests adjust thresholds).
    #[cfg(test)]
    pub(crate) fn sender_mut(&mut self) -> &mut SendBuffer {
        &mut self.sender
    }

    /// The send buffer (fill level, counters).
    pub fn sender(&self) -> &SendBuffer {
        &self.sender
    }

    /// The receive buffer (fill level, counters).
    pub fn receiver(&self) -> &ReceiveBuffer {
        &self.receiver
    }

    /// Counters.
    pub fn counters(&self) -> CoreCounters {
        self.counters
    }

    /// Configuration.
    pub fn config(&self) -> CoreConfig {
        self.config
    }
}
