//! Two ranks exchange messages of every size class of the MPI transport at once: empty, small,
//! exactly the posted receive's size, one byte over (sent as a notice and a body), and large
//! (a rendezvous transfer), interleaved. Each rank checks that the other's messages arrive
//! whole and in the order they were sent, then prints `transport_order ok messages=N`.
//! Run by `tests/tests/single_cluster.rs` under `mpirun -np 2`.

use std::time::Duration;

use hmw_transport::{idle::Idle, mpi::MpiTransport, Transport};

/// The sizes sent, in turn.
const SIZES: [usize; 7] = [0, 64, 4096, 4097, 100_000, 1, 2 << 20];
const MESSAGES: usize = 70;

/// Message `i`'s bytes: its size from `SIZES`, each byte a function of `i` and its place.
fn message(i: usize) -> Vec<u8> {
    (0..SIZES[i % SIZES.len()])
        .map(|at| (i * 31 + at * 7) as u8)
        .collect()
}

fn main() {
    let mut transport = MpiTransport::init().expect("MPI not yet initialised");
    assert_eq!(transport.size(), 2, "run with mpirun -np 2");
    let peer = 1 - transport.rank();
    for i in 0..MESSAGES {
        transport.send(peer, message(i)).expect("send");
    }
    let mut idle = Idle::default();
    let mut received = 0;
    while received < MESSAGES {
        let Some(envelope) = transport.wait(idle.next_pause()).expect("receive") else {
            continue;
        };
        idle.reset();
        assert_eq!(envelope.from, peer);
        assert!(
            envelope.bytes == message(received),
            "message {received} from rank {peer}: {} bytes, not the {} sent, or not in order",
            envelope.bytes.len(),
            SIZES[received % SIZES.len()]
        );
        transport.recycle(envelope.bytes);
        received += 1;
    }
    transport.flush().expect("flush");
    // Nothing more arrives.
    std::thread::sleep(Duration::from_millis(50));
    assert!(transport.try_recv().expect("receive").is_none());
    println!("transport_order ok messages={received}");
}
