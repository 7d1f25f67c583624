//! Deterministic simulation of two protocol cores joined by several connections of several
//! streams each, with the transport's failure modes: reordering across streams and
//! connections, connections dying with data in flight (loss), one side giving a connection up
//! while the other still reads late frames from it (real cross-connection duplicates), every
//! connection down at once, and either peer restarting.

use std::collections::{HashSet, VecDeque};

use proptest::prelude::*;

use super::sender::MESSAGE_PREFIX_LEN;
use super::*;

const CONNECTIONS: usize = 3;
const STREAMS: usize = 2;

/// One simulated transport connection: per-stream FIFO queues from A to B and one control
/// queue from B to A (acknowledgements).
struct SimConn {
    a_id: ConnId,
    b_id: ConnId,
    data: [VecDeque<Frame>; STREAMS],
    acks: VecDeque<Frame>,
    /// B closed it; A has not noticed yet and keeps sending into the void.
    b_gone: bool,
}

/// A connection A gave up (its blocks are queued again for other connections) whose frames
/// still reach B, late.
struct Zombie {
    b_id: ConnId,
    data: [VecDeque<Frame>; STREAMS],
}

struct Sim {
    a: Core,
    b: Core,
    config: CoreConfig,
    conns: Vec<SimConn>,
    zombies: Vec<Zombie>,
    next_conn_id: ConnId,
    next_session: u64,
    /// Messages B must hand out, in order: A's pushes, less those lost with a restarted peer.
    expected: Vec<Vec<u8>>,
    delivered: usize,
    next_payload: u8,
    max_in_flight: usize,
    /// Duplicates that arrived late on connections A had given up.
    late_duplicates: u64,
    /// B's connections that are alive and carried a block: exactly those whose replay
    /// memory B may keep.
    b_carrying: HashSet<ConnId>,
}

#[derive(Debug, Clone)]
enum Op {
    Push(usize),
    PushShared(usize),
    Transmit(usize, usize),
    Deliver(usize, usize),
    SendAck(usize),
    DeliverAck(usize),
    Pop(usize),
    /// Both sides see connection `c` die; frames in flight are lost.
    Disconnect(usize),
    /// A gives connection `c` up and resends its blocks elsewhere, but B keeps reading the
    /// frames already on their way.
    SenderAbandons(usize),
    /// B reads the next late frame of a given-up connection (index, stream).
    DeliverLate(usize, usize),
    /// B finally sees a given-up connection close.
    ReapZombie(usize),
    /// B closes connection `c`; A keeps sending on it until it notices (a `Disconnect`).
    ReceiverGivesUp(usize),
    /// Every connection down at once, then all reconnect.
    AllDown,
    /// A restarts: new session, empty buffers.
    RestartSender,
    /// B restarts: new session, empty buffers.
    RestartReceiver,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0usize..1500).prop_map(Op::Push),
        10 => (0usize..1500).prop_map(Op::PushShared),
        40 => (0..CONNECTIONS, 0..STREAMS).prop_map(|(c, s)| Op::Transmit(c, s)),
        40 => (0..CONNECTIONS, 0..STREAMS).prop_map(|(c, s)| Op::Deliver(c, s)),
        20 => (0..CONNECTIONS).prop_map(Op::SendAck),
        20 => (0..CONNECTIONS).prop_map(Op::DeliverAck),
        20 => (1usize..4).prop_map(Op::Pop),
        6 => (0..CONNECTIONS).prop_map(Op::Disconnect),
        6 => (0..CONNECTIONS).prop_map(Op::SenderAbandons),
        10 => (0usize..4, 0..STREAMS).prop_map(|(z, s)| Op::DeliverLate(z, s)),
        2 => (0usize..4).prop_map(Op::ReapZombie),
        3 => (0..CONNECTIONS).prop_map(Op::ReceiverGivesUp),
        2 => Just(Op::AllDown),
        1 => Just(Op::RestartSender),
        1 => Just(Op::RestartReceiver),
    ]
}

impl Sim {
    fn with_in_flight_limit(config: CoreConfig, max_in_flight: usize) -> Self {
        Self {
            max_in_flight,
            ..Self::new(config)
        }
    }

    fn new(config: CoreConfig) -> Self {
        let mut sim = Self {
            a: Core::new(config, 0xA),
            b: Core::new(config, 0xB),
            config,
            conns: Vec::new(),
            zombies: Vec::new(),
            next_conn_id: 1,
            next_session: 0x100,
            expected: Vec::new(),
            delivered: 0,
            next_payload: 0,
            max_in_flight: usize::MAX,
            late_duplicates: 0,
            b_carrying: HashSet::new(),
        };
        sim.a.sender_mut().set_zero_copy_min(100);
        for i in 0..CONNECTIONS {
            let conn = sim.connect(i as u32);
            sim.conns.push(conn);
        }
        sim
    }

    /// Opens a connection and exchanges hellos, as the driver does before any data.
    fn connect(&mut self, index: u32) -> SimConn {
        let (a_id, b_id) = (self.next_conn_id, self.next_conn_id + 1);
        self.next_conn_id += 2;
        self.a.connection_opened(a_id);
        self.b.connection_opened(b_id);
        let hello_a = self.a.hello(index);
        let hello_b = self.b.hello(index);
        self.a.on_frame(a_id, Frame::Hello(hello_b)).unwrap();
        self.b.on_frame(b_id, Frame::Hello(hello_a)).unwrap();
        // The receiver opens every connection with its full acknowledgement.
        let first_ack = self.b.ack();
        SimConn {
            a_id,
            b_id,
            data: Default::default(),
            acks: VecDeque::from([Frame::Ack(first_ack)]),
            b_gone: false,
        }
    }

    /// Every connection dies on both sides with whatever it carried; late frames of
    /// given-up connections too.
    fn drop_all_connections(&mut self) {
        for conn in std::mem::take(&mut self.conns) {
            self.a.connection_lost(conn.a_id);
            if !conn.b_gone {
                self.b_lost(conn.b_id);
            }
        }
        for zombie in std::mem::take(&mut self.zombies) {
            self.b_lost(zombie.b_id);
        }
    }

    fn reconnect_all(&mut self) {
        for i in 0..CONNECTIONS {
            let conn = self.connect(i as u32);
            self.conns.push(conn);
        }
    }

    fn new_session(&mut self) -> u64 {
        self.next_session += 1;
        self.next_session
    }

    fn push(&mut self, len: usize, shared: bool) {
        let message: Vec<u8> = (0..len)
            .map(|i| self.next_payload.wrapping_add(i as u8))
            .collect();
        let pushed = if shared {
            self.a
                .push_message_bytes(bytes::Bytes::from(message.clone()))
        } else {
            self.a.push_message(&message)
        };
        if pushed.is_ok() {
            self.expected.push(message);
            self.next_payload = self.next_payload.wrapping_add(1);
        }
    }

    fn pop(&mut self, n: usize) -> Result<(), TestCaseError> {
        for _ in 0..n {
            let Some(message) = self.b.pop_message() else {
                break;
            };
            prop_assert!(
                self.delivered < self.expected.len(),
                "more messages than sent"
            );
            prop_assert_eq!(&message[..], &self.expected[self.delivered][..]);
            self.delivered += 1;
        }
        Ok(())
    }

    /// B sees connection `b_id` end.
    fn b_lost(&mut self, b_id: ConnId) {
        self.b.connection_lost(b_id);
        self.b_carrying.remove(&b_id);
    }

    fn deliver_to_b(&mut self, b_id: ConnId, frame: Frame) -> Result<FrameEffect, TestCaseError> {
        if matches!(frame, Frame::Data(_)) {
            self.b_carrying.insert(b_id);
        }
        let effect = self.b.on_frame(b_id, frame);
        prop_assert!(effect.is_ok(), "B refused an honest frame: {:?}", effect);
        prop_assert!(self.b.receiver().buffered() <= self.b.receiver().capacity());
        Ok(effect.expect("checked"))
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Push(len) => self.push(len, false),
            Op::PushShared(len) => self.push(len, true),
            Op::Transmit(c, s) => {
                if let Some(block) = self.a.next_block(self.conns[c].a_id, self.max_in_flight) {
                    // On a connection B closed the block is lost.
                    if !self.conns[c].b_gone {
                        self.conns[c].data[s].push_back(Frame::Data(block));
                    }
                }
            }
            Op::Deliver(c, s) => {
                if let Some(frame) = self.conns[c].data[s].pop_front() {
                    self.deliver_to_b(self.conns[c].b_id, frame)?;
                }
            }
            Op::SendAck(c) => {
                if !self.conns[c].b_gone {
                    if let Some(ack) = self.b.take_ack() {
                        self.conns[c].acks.push_back(Frame::Ack(ack));
                    }
                }
            }
            Op::DeliverAck(c) => {
                if let Some(frame) = self.conns[c].acks.pop_front() {
                    let a_id = self.conns[c].a_id;
                    prop_assert!(self.a.on_frame(a_id, frame).is_ok());
                }
            }
            Op::Pop(n) => self.pop(n)?,
            Op::Disconnect(c) => {
                // Everything in flight on the connection is lost.
                self.a.connection_lost(self.conns[c].a_id);
                if !self.conns[c].b_gone {
                    self.b_lost(self.conns[c].b_id);
                }
                self.conns[c] = self.connect(c as u32);
            }
            Op::SenderAbandons(c) => {
                self.a.connection_lost(self.conns[c].a_id);
                let fresh = self.connect(c as u32);
                let old = std::mem::replace(&mut self.conns[c], fresh);
                // Acknowledgements on their way to A are lost with it; data already sent
                // still reaches B.
                if !old.b_gone {
                    self.zombies.push(Zombie {
                        b_id: old.b_id,
                        data: old.data,
                    });
                }
            }
            Op::DeliverLate(z, s) => {
                if !self.zombies.is_empty() {
                    let z = z % self.zombies.len();
                    if let Some(frame) = self.zombies[z].data[s].pop_front() {
                        let effect = self.deliver_to_b(self.zombies[z].b_id, frame)?;
                        if effect == FrameEffect::Block(BlockOutcome::Duplicate) {
                            self.late_duplicates += 1;
                        }
                    }
                }
            }
            Op::ReapZombie(z) => {
                if !self.zombies.is_empty() {
                    let zombie = self.zombies.remove(z % self.zombies.len());
                    self.b_lost(zombie.b_id);
                }
            }
            Op::ReceiverGivesUp(c) => {
                let conn = &mut self.conns[c];
                if !conn.b_gone {
                    let b_id = conn.b_id;
                    conn.b_gone = true;
                    conn.data = Default::default();
                    conn.acks.clear();
                    self.b_lost(b_id);
                }
            }
            Op::AllDown => {
                self.drop_all_connections();
                self.reconnect_all();
            }
            Op::RestartSender => {
                // Complete messages B holds from the old incarnation are still handed out;
                // the rest of what the old A sent is lost with it.
                let carried = self.b.ready_messages();
                self.expected.truncate(self.delivered + carried);
                self.drop_all_connections();
                let mut a = Core::new(self.config, self.new_session());
                a.sender_mut().set_zero_copy_min(100);
                self.a = a;
                let restarts = self.b.counters().peer_restarts;
                self.reconnect_all();
                prop_assert_eq!(self.b.counters().peer_restarts, restarts + 1);
                prop_assert_eq!(self.b.ready_messages(), carried);
            }
            Op::RestartReceiver => {
                // Whatever B had not handed out is lost with it; A drops what it buffered
                // for the old B when it meets the new one.
                self.expected.truncate(self.delivered);
                self.drop_all_connections();
                self.b = Core::new(self.config, self.new_session());
                let restarts = self.a.counters().peer_restarts;
                self.reconnect_all();
                prop_assert_eq!(self.a.counters().peer_restarts, restarts + 1);
                prop_assert!(self.a.sender().is_drained());
            }
        }
        Ok(())
    }

    /// Lets the network run without faults until everything is delivered and acknowledged:
    /// late frames reach B, then given-up connections close, A notices the connections B
    /// closed, and the rest flows.
    fn heal(&mut self) -> Result<(), TestCaseError> {
        while !self.zombies.is_empty() {
            for s in 0..STREAMS {
                while !self.zombies[0].data[s].is_empty() {
                    self.apply(Op::DeliverLate(0, s))?;
                }
            }
            self.apply(Op::ReapZombie(0))?;
        }
        for c in 0..CONNECTIONS {
            if self.conns[c].b_gone {
                self.apply(Op::Disconnect(c))?;
            }
        }
        for _ in 0..100_000 {
            let mut progressed = false;
            for c in 0..CONNECTIONS {
                for s in 0..STREAMS {
                    while let Some(block) =
                        self.a.next_block(self.conns[c].a_id, self.max_in_flight)
                    {
                        self.conns[c].data[s].push_back(Frame::Data(block));
                        progressed = true;
                    }
                    while let Some(frame) = self.conns[c].data[s].pop_front() {
                        self.deliver_to_b(self.conns[c].b_id, frame)?;
                        progressed = true;
                    }
                }
                let before = self.delivered;
                self.pop(usize::MAX)?;
                progressed |= self.delivered != before;
                if let Some(ack) = self.b.take_ack() {
                    self.conns[c].acks.push_back(Frame::Ack(ack));
                }
                while let Some(frame) = self.conns[c].acks.pop_front() {
                    prop_assert!(self.a.on_frame(self.conns[c].a_id, frame).is_ok());
                    progressed = true;
                }
            }
            if !progressed {
                return Ok(());
            }
        }
        Err(TestCaseError::fail("network did not settle"))
    }
}

fn config() -> impl Strategy<Value = CoreConfig> {
    (1usize..700, 1600usize..6000).prop_map(|(block_size, memory)| CoreConfig {
        block_size,
        send_memory: memory,
        recv_memory: memory,
        max_message: 1500,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the reordering, connection losses (on both sides, on one side while the other
    /// still reads late frames, all at once) and resulting duplicate resends, the receiver
    /// sees exactly the messages sent, each once, in send order, within its memory, and never
    /// takes an honest duplicate for a replay; a restarted peer costs exactly the messages
    /// that were in the dead process. Once the network heals everything is delivered and the
    /// sender's buffer is empty.
    #[test]
    fn messages_arrive_once_in_order_despite_faults(
        config in config(),
        max_in_flight in prop_oneof![Just(usize::MAX), 0usize..2000],
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let mut sim = Sim::with_in_flight_limit(config, max_in_flight);
        for op in ops {
            sim.apply(op)?;
            // Replay memory is kept for exactly the live connections that carried blocks:
            // released when a connection ends, however it ends.
            prop_assert_eq!(sim.b.receiver().tracked_connections(), sim.b_carrying.len());
        }
        sim.heal()?;
        prop_assert_eq!(sim.delivered, sim.expected.len());
        prop_assert!(sim.a.sender().is_drained());
        prop_assert_eq!(sim.a.sender().unacked_blocks(), 0);
        // Connections that are gone hold no replay memory.
        prop_assert_eq!(sim.b.receiver().tracked_connections(), sim.b_carrying.len());
        prop_assert!(sim.b_carrying.len() <= CONNECTIONS);
    }
}

#[test]
fn late_frames_on_a_connection_the_sender_gave_up_are_duplicates_not_replays() {
    let mut sim = Sim::new(CoreConfig {
        block_size: 10,
        send_memory: 1000,
        recv_memory: 1000,
        max_message: 500,
    });
    sim.push(45, false);
    sim.apply(Op::DeliverAck(0)).unwrap();
    for s in 0..STREAMS {
        for _ in 0..3 {
            sim.apply(Op::Transmit(0, s)).unwrap();
        }
    }
    // A gives connection 0 up with five blocks on their way and resends them on the new
    // connections; B receives the resends first, then the late originals.
    sim.apply(Op::SenderAbandons(0)).unwrap();
    assert_eq!(sim.zombies.len(), 1);
    for c in 0..CONNECTIONS {
        for s in 0..STREAMS {
            for _ in 0..5 {
                sim.apply(Op::Transmit(c, s)).unwrap();
                sim.apply(Op::Deliver(c, s)).unwrap();
            }
        }
    }
    sim.apply(Op::Pop(1)).unwrap();
    assert_eq!(sim.delivered, 1);
    for s in 0..STREAMS {
        for _ in 0..3 {
            sim.apply(Op::DeliverLate(0, s)).unwrap();
        }
    }
    assert_eq!(sim.late_duplicates, 5);
    assert_eq!(sim.b.receiver().duplicates(), 5);
    let tracked = sim.b.receiver().tracked_connections();
    sim.apply(Op::ReapZombie(0)).unwrap();
    assert_eq!(sim.b.receiver().tracked_connections(), tracked - 1);
    sim.heal().unwrap();
    assert_eq!(sim.delivered, 1);
    assert!(sim.a.sender().is_drained());
}

#[test]
fn every_connection_down_at_once_then_back() {
    let mut sim = Sim::new(CoreConfig {
        block_size: 7,
        send_memory: 2000,
        recv_memory: 2000,
        max_message: 500,
    });
    for len in [30, 0, 100, 3] {
        sim.push(len, false);
    }
    for c in 0..CONNECTIONS {
        sim.apply(Op::DeliverAck(c)).unwrap();
        for s in 0..STREAMS {
            sim.apply(Op::Transmit(c, s)).unwrap();
            sim.apply(Op::Transmit(c, s)).unwrap();
        }
        sim.apply(Op::Deliver(c, 0)).unwrap();
    }
    sim.apply(Op::AllDown).unwrap();
    assert_eq!(sim.a.joined_connections(), CONNECTIONS);
    sim.push(20, false);
    sim.heal().unwrap();
    assert_eq!(sim.delivered, 5);
    assert!(sim.a.sender().blocks_retransmitted() > 0);
}

#[test]
fn restarts_cost_exactly_what_the_dead_process_held() {
    let config = CoreConfig {
        block_size: 16,
        send_memory: 2000,
        recv_memory: 2000,
        max_message: 500,
    };
    // The sender restarts after B assembled two complete messages it has not handed out
    // and part of a third: the two are still delivered, the third is lost.
    let mut sim = Sim::new(config);
    sim.push(10, false);
    sim.push(12, false);
    sim.push(40, false);
    sim.apply(Op::DeliverAck(0)).unwrap();
    for _ in 0..3 {
        sim.apply(Op::Transmit(0, 0)).unwrap();
        sim.apply(Op::Deliver(0, 0)).unwrap();
    }
    assert_eq!(sim.b.ready_messages(), 2);
    sim.apply(Op::RestartSender).unwrap();
    assert_eq!(sim.expected.len(), 2);
    sim.push(5, false);
    sim.heal().unwrap();
    assert_eq!(sim.delivered, 3);
    // The receiver restarts with messages unread and unacknowledged: all of them are lost,
    // and the sender's buffer is emptied for the new receiver.
    sim.push(20, false);
    sim.apply(Op::DeliverAck(1)).unwrap();
    sim.apply(Op::Transmit(1, 1)).unwrap();
    sim.apply(Op::Deliver(1, 1)).unwrap();
    sim.push(20, false);
    sim.apply(Op::RestartReceiver).unwrap();
    assert_eq!(sim.a.counters().bytes_dropped_on_peer_restart, 48);
    sim.push(7, false);
    sim.heal().unwrap();
    assert_eq!(sim.delivered, 4);
    assert_eq!(&sim.expected[3], &sim.expected.last().unwrap().clone());
}

impl Sim {
    /// Lets frames and acknowledgements flow on every connection while B reads nothing.
    fn flow_without_reading(&mut self) {
        for _ in 0..50 {
            for c in 0..CONNECTIONS {
                self.apply(Op::SendAck(c)).unwrap();
                self.apply(Op::DeliverAck(c)).unwrap();
                for s in 0..STREAMS {
                    self.apply(Op::Transmit(c, s)).unwrap();
                    self.apply(Op::Deliver(c, s)).unwrap();
                }
            }
        }
    }
}

#[test]
fn messages_kept_from_restarted_peers_count_against_the_receive_memory() {
    let mut sim = Sim::new(CoreConfig {
        block_size: 100,
        send_memory: 1000,
        recv_memory: 1000,
        max_message: 500,
    });
    let framed = 200 + MESSAGE_PREFIX_LEN as u64;
    for _ in 0..3 {
        sim.push(200, false);
    }
    sim.flow_without_reading();
    assert_eq!(sim.b.ready_messages(), 3);
    // The sender restarts: its three complete messages stay in B, unread, and the new
    // incarnation may only fill the rest of B's memory.
    sim.apply(Op::RestartSender).unwrap();
    assert_eq!(sim.b.ready_messages(), 3);
    assert_eq!(sim.b.receiver().buffered() as u64, 3 * framed);
    assert_eq!(sim.b.ack().credit, 1000 - 3 * framed);
    for _ in 0..3 {
        sim.push(200, false);
    }
    sim.flow_without_reading();
    assert_eq!(
        sim.b.ready_messages(),
        4,
        "one new message fits beside the three"
    );
    assert!(sim.b.receiver().buffered() <= 1000);
    // Another restart: what B holds from both dead incarnations still fits in its memory,
    // and the newest incarnation gets only what is left.
    sim.apply(Op::RestartSender).unwrap();
    assert_eq!(sim.b.receiver().buffered() as u64, 4 * framed);
    assert_eq!(sim.b.ack().credit, 1000 - 4 * framed);
    sim.push(100, false);
    sim.push(100, false);
    sim.flow_without_reading();
    assert!(sim.b.receiver().buffered() <= 1000);
    // Reading them hands the memory back to the live incarnation.
    sim.apply(Op::Pop(4)).unwrap();
    assert_eq!(sim.b.ack().credit, 1000);
    sim.heal().unwrap();
    assert_eq!(sim.delivered, 6);
    assert_eq!(sim.b.receiver().buffered(), 0);
}

#[test]
fn resend_after_disconnect_is_deduplicated() {
    let mut sim = Sim::new(CoreConfig {
        block_size: 10,
        send_memory: 1000,
        recv_memory: 1000,
        max_message: 500,
    });
    sim.push(45, false);
    sim.apply(Op::DeliverAck(0)).unwrap();
    for _ in 0..5 {
        sim.apply(Op::Transmit(0, 0)).unwrap();
    }
    // Delivered to B, but the connection dies before the acknowledgement reaches A.
    for _ in 0..5 {
        sim.apply(Op::Deliver(0, 0)).unwrap();
    }
    sim.apply(Op::Disconnect(0)).unwrap();
    assert_eq!(sim.a.sender().unacked_blocks(), 5);
    sim.heal().unwrap();
    assert_eq!(sim.b.receiver().duplicates(), 5);
    assert_eq!(sim.a.sender().blocks_retransmitted(), 5);
    assert_eq!(sim.delivered, 1);
}

#[test]
fn restarted_peer_starts_a_new_session_and_old_connections_are_stale() {
    let config = CoreConfig {
        block_size: 100,
        send_memory: 1000,
        recv_memory: 1000,
        max_message: 500,
    };
    let mut a = Core::new(config, 1);
    let mut b_old = Core::new(config, 2);
    a.connection_opened(10);
    a.on_frame(10, Frame::Hello(b_old.hello(0))).unwrap();
    // The old incarnation delivered one complete message that A has not read yet.
    b_old.connection_opened(20);
    b_old.on_frame(20, Frame::Hello(a.hello(0))).unwrap();
    b_old.on_frame(20, Frame::Ack(a.ack())).unwrap();
    b_old.push_message(b"complete before the restart").unwrap();
    let early = b_old.next_block(20, usize::MAX).unwrap();
    a.on_frame(10, Frame::Data(early)).unwrap();
    a.on_frame(
        10,
        Frame::Ack(Ack {
            cumulative: 0,
            credit: 1000,
            ranges: vec![],
        }),
    )
    .unwrap();
    a.push_message(b"lost with the old peer").unwrap();
    assert!(a.next_block(10, usize::MAX).is_some());
    let b_new = Core::new(config, 3);
    a.connection_opened(11);
    let effect = a.on_frame(11, Frame::Hello(b_new.hello(0))).unwrap();
    assert_eq!(
        effect,
        FrameEffect::Handshake(Handshake {
            peer_restarted: true,
            stale_connections: vec![10]
        })
    );
    assert!(a.sender().is_drained());
    assert_eq!(a.counters().bytes_dropped_on_peer_restart, 26);
    // The complete message of the old incarnation is still handed out.
    assert_eq!(
        &a.pop_message().unwrap()[..],
        b"complete before the restart"
    );
    assert!(a.pop_message().is_none());
    assert_eq!(
        a.on_frame(10, Frame::Ack(Ack::default())),
        Err(ProtocolError::UnknownConnection(10))
    );
    assert_eq!(
        a.on_frame(11, Frame::Hello(b_new.hello(0))),
        Err(ProtocolError::DuplicateHello)
    );
}

#[test]
fn a_late_hello_of_a_previous_incarnation_is_refused_not_taken_for_a_restart() {
    let config = CoreConfig {
        block_size: 100,
        send_memory: 1000,
        recv_memory: 1000,
        max_message: 500,
    };
    let mut a = Core::new(config, 1);
    let b_old = Core::new(config, 2);
    a.connection_opened(10);
    a.on_frame(10, Frame::Hello(b_old.hello(0))).unwrap();
    // The old incarnation's second connection is established, its hello still on its way,
    // when the peer restarts and the new incarnation's first connection joins.
    a.connection_opened(11);
    let mut b_new = Core::new(config, 3);
    a.connection_opened(12);
    b_new.connection_opened(20);
    b_new.on_frame(20, Frame::Hello(a.hello(0))).unwrap();
    let effect = a.on_frame(12, Frame::Hello(b_new.hello(0))).unwrap();
    assert_eq!(
        effect,
        FrameEffect::Handshake(Handshake {
            peer_restarted: true,
            stale_connections: vec![10]
        })
    );
    a.on_frame(12, Frame::Ack(b_new.ack())).unwrap();
    a.push_message(b"for the new incarnation").unwrap();
    b_new.on_frame(20, Frame::Ack(a.ack())).unwrap();
    b_new.push_message(b"from the new incarnation").unwrap();
    let block = b_new.next_block(20, usize::MAX).unwrap();
    a.on_frame(12, Frame::Data(block)).unwrap();
    // The late hello: refused, and nothing of the new incarnation is touched.
    assert_eq!(
        a.on_frame(11, Frame::Hello(b_old.hello(1))),
        Err(ProtocolError::StaleSession { session: 2 })
    );
    a.connection_lost(11);
    assert_eq!(a.counters().peer_restarts, 1);
    assert_eq!(a.peer_session(), Some(3));
    assert_eq!(a.joined_connections(), 1);
    assert!(
        !a.sender().is_drained(),
        "the new incarnation's message is kept"
    );
    assert_eq!(a.counters().bytes_dropped_on_peer_restart, 0);
    assert_eq!(&a.pop_message().unwrap()[..], b"from the new incarnation");
    // Real restarts are still restarts; the memory of old sessions is bounded and keeps the
    // most recent ones.
    for session in 4..4 + PREVIOUS_SESSIONS as u64 + 5 {
        let conn = 100 + session;
        a.connection_opened(conn);
        let effect = a
            .on_frame(conn, Frame::Hello(Core::new(config, session).hello(0)))
            .unwrap();
        assert!(matches!(
            effect,
            FrameEffect::Handshake(Handshake {
                peer_restarted: true,
                ..
            })
        ));
    }
    assert_eq!(a.previous_peer_sessions.len(), PREVIOUS_SESSIONS);
    let newest_old = 3 + PREVIOUS_SESSIONS as u64 + 4;
    a.connection_opened(1000);
    assert_eq!(
        a.on_frame(1000, Frame::Hello(Core::new(config, newest_old).hello(0))),
        Err(ProtocolError::StaleSession {
            session: newest_old
        })
    );
}

#[test]
fn data_before_hello_and_incompatible_peers_are_refused() {
    let config = CoreConfig {
        block_size: 100,
        send_memory: 1000,
        recv_memory: 1000,
        max_message: 500,
    };
    let mut a = Core::new(config, 1);
    a.connection_opened(1);
    let block = Block {
        id: 0,
        offset: 0,
        payload: bytes::Bytes::from_static(b"x"),
    };
    assert_eq!(
        a.on_frame(1, Frame::Data(block)),
        Err(ProtocolError::NotHandshaken("data"))
    );
    let small = Core::new(
        CoreConfig {
            max_message: 100,
            ..config
        },
        2,
    );
    assert!(matches!(
        a.on_frame(1, Frame::Hello(small.hello(0))),
        Err(ProtocolError::IncompatiblePeer {
            peer_max: 100,
            our_max: 500
        })
    ));
}
