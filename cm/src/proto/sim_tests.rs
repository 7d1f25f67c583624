//! Deterministic simulation of two protocol cores joined by several connections of several
//! streams each, with the transport's failure modes: reordering across streams and
//! connections, connections dying with data in flight (loss), resends arriving as duplicates,
//! and peers restarting.

use std::collections::VecDeque;

use proptest::prelude::*;

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
}

struct Sim {
    a: Core,
    b: Core,
    conns: Vec<SimConn>,
    next_conn_id: ConnId,
    expected: Vec<Vec<u8>>,
    delivered: usize,
    next_payload: u8,
    max_in_flight: usize,
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
    Disconnect(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..1500).prop_map(Op::Push),
        1 => (0usize..1500).prop_map(Op::PushShared),
        4 => (0..CONNECTIONS, 0..STREAMS).prop_map(|(c, s)| Op::Transmit(c, s)),
        4 => (0..CONNECTIONS, 0..STREAMS).prop_map(|(c, s)| Op::Deliver(c, s)),
        2 => (0..CONNECTIONS).prop_map(Op::SendAck),
        2 => (0..CONNECTIONS).prop_map(Op::DeliverAck),
        2 => (1usize..4).prop_map(Op::Pop),
        1 => (0..CONNECTIONS).prop_map(Op::Disconnect),
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
            conns: Vec::new(),
            next_conn_id: 1,
            expected: Vec::new(),
            delivered: 0,
            next_payload: 0,
            max_in_flight: usize::MAX,
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
        }
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

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Push(len) => self.push(len, false),
            Op::PushShared(len) => self.push(len, true),
            Op::Transmit(c, s) => {
                if let Some(block) = self.a.next_block(self.conns[c].a_id, self.max_in_flight) {
                    self.conns[c].data[s].push_back(Frame::Data(block));
                }
            }
            Op::Deliver(c, s) => {
                if let Some(frame) = self.conns[c].data[s].pop_front() {
                    let b_id = self.conns[c].b_id;
                    prop_assert!(self.b.on_frame(b_id, frame).is_ok());
                    prop_assert!(self.b.receiver().buffered() <= self.b.receiver().capacity());
                }
            }
            Op::SendAck(c) => {
                if let Some(ack) = self.b.take_ack() {
                    self.conns[c].acks.push_back(Frame::Ack(ack));
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
                self.b.connection_lost(self.conns[c].b_id);
                self.conns[c] = self.connect(c as u32);
            }
        }
        Ok(())
    }

    /// Lets the network run without faults until everything is delivered and acknowledged.
    fn heal(&mut self) -> Result<(), TestCaseError> {
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
                        prop_assert!(self.b.on_frame(self.conns[c].b_id, frame).is_ok());
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

    /// Whatever the reordering, connection losses and resulting duplicate resends, the receiver
    /// sees exactly the messages sent, each once, in send order, within its memory; once the
    /// network heals everything is delivered and the sender's buffer is empty.
    #[test]
    fn messages_arrive_once_in_order_despite_faults(
        config in config(),
        max_in_flight in prop_oneof![Just(usize::MAX), 0usize..2000],
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let mut sim = Sim::with_in_flight_limit(config, max_in_flight);
        for op in ops {
            sim.apply(op)?;
        }
        sim.heal()?;
        prop_assert_eq!(sim.delivered, sim.expected.len());
        prop_assert!(sim.a.sender().is_drained());
        prop_assert_eq!(sim.a.sender().unacked_blocks(), 0);
    }
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
