//! Batched UDP I/O of the emulator, so that it relays 1 Gbit/s and more on one core: receives
//! take up to [`quinn_udp::BATCH_SIZE`] datagrams per system call (`recvmmsg`), each possibly a
//! GRO train of same-size datagrams; sends put a train of same-size datagrams to one address in
//! one system call (GSO); socket buffers are enlarged (up to the system's `net.core.rmem_max`
//! and `wmem_max`); received datagrams are copied into a shared arena instead of a fresh
//! allocation each.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use quinn_udp::{RecvMeta, Transmit, UdpSocketState, BATCH_SIZE};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Socket buffer size asked for (the kernel caps it at `net.core.rmem_max` / `wmem_max`).
pub(crate) const SOCKET_BUFFER: usize = 32 << 20;

/// Room for one received datagram or GRO train (at most 64 KiB).
const SLOT: usize = 64 * 1024;

/// Largest train sent at once (a GSO send is one datagram of at most 64 KiB to the kernel).
const MAX_TRAIN_BYTES: usize = 65_000;

/// Largest datagram sent in trains: what fits a 1500-byte MTU over IPv6 (QUIC's datagrams
/// do); larger ones go one by one, as the kernel would refuse a segment beyond the MTU.
const MAX_TRAIN_SEGMENT: usize = 1452;

/// Arena chunk the received datagrams are copied into.
const ARENA: usize = 1 << 20;

/// A UDP socket with batched receives and sends.
#[derive(Debug)]
pub(crate) struct BatchSocket {
    socket: UdpSocket,
    state: UdpSocketState,
}

impl BatchSocket {
    /// Binds `addr` with large buffers, GRO on where the system has it (call inside a tokio
    /// runtime).
    pub(crate) fn bind(addr: SocketAddr) -> io::Result<Self> {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        // Best effort: capped by the system's limits, which the benchmark script raises.
        let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
        socket.bind(&addr.into())?;
        socket.set_nonblocking(true)?;
        let socket = UdpSocket::from_std(socket.into())?;
        let state = UdpSocketState::new((&socket).into())?;
        Ok(Self { socket, state })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Receives a batch into `scratch`; returns how many entries of `scratch` were filled
    /// (each a datagram or a train of same-size datagrams, see [`RecvScratch::datagrams`]).
    pub(crate) async fn recv(&self, scratch: &mut RecvScratch) -> io::Result<usize> {
        loop {
            self.socket.readable().await?;
            let mut chunks = scratch.buf.chunks_mut(SLOT);
            let mut slices: [IoSliceMut<'_>; BATCH_SIZE] =
                std::array::from_fn(|_| IoSliceMut::new(chunks.next().expect("BATCH_SIZE slots")));
            let result = self.socket.try_io(Interest::READABLE, || {
                self.state
                    .recv((&self.socket).into(), &mut slices, &mut scratch.meta)
            });
            match result {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends `contents` to `to` as datagrams of `segment` bytes each (the last may be
    /// shorter), waiting while the socket buffer is full. Send errors other than a full buffer
    /// are dropped datagrams, as on a real network (quinn-udp logs them).
    pub(crate) async fn send(
        &self,
        to: SocketAddr,
        contents: &[u8],
        segment: usize,
    ) -> io::Result<()> {
        let transmit = Transmit {
            destination: to,
            ecn: None,
            contents,
            segment_size: (contents.len() > segment).then_some(segment),
            src_ip: None,
        };
        loop {
            self.socket.writable().await?;
            let result = self.socket.try_io(Interest::WRITABLE, || {
                self.state.send((&self.socket).into(), &transmit)
            });
            match result {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// How many datagrams of `size` bytes one [`send`](Self::send) may carry: 1 for those
    /// larger than [`MAX_TRAIN_SEGMENT`] (a GSO segment must fit the path's MTU).
    pub(crate) fn train_len(&self, size: usize) -> usize {
        if size > MAX_TRAIN_SEGMENT {
            return 1;
        }
        self.state
            .max_gso_segments()
            .min(MAX_TRAIN_BYTES / size.max(1))
            .max(1)
    }
}

/// Buffers of one batched receive.
pub(crate) struct RecvScratch {
    buf: Vec<u8>,
    meta: [RecvMeta; BATCH_SIZE],
}

impl Default for RecvScratch {
    fn default() -> Self {
        Self {
            buf: vec![0; SLOT * BATCH_SIZE],
            meta: [RecvMeta::default(); BATCH_SIZE],
        }
    }
}

impl RecvScratch {
    /// Entry `i` of the last receive: the sender's address and its datagrams (one, or a GRO
    /// train cut at its stride).
    pub(crate) fn datagrams(&self, i: usize) -> (SocketAddr, impl Iterator<Item = &[u8]>) {
        let meta = &self.meta[i];
        let data = &self.buf[i * SLOT..i * SLOT + meta.len.min(SLOT)];
        (meta.addr, data.chunks(meta.stride.max(1)))
    }
}

/// Copies datagrams into large shared chunks: one allocation per [`ARENA`] bytes instead of
/// one per datagram.
#[derive(Default)]
pub(crate) struct Arena(BytesMut);

impl Arena {
    /// `data` as shared bytes.
    pub(crate) fn copy(&mut self, data: &[u8]) -> Bytes {
        if self.0.capacity() - self.0.len() < data.len() {
            self.0 = BytesMut::with_capacity(ARENA.max(data.len()));
        }
        self.0.extend_from_slice(data);
        self.0.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arena_hands_out_each_copy_whole_and_apart() {
        let mut arena = Arena::default();
        let a = arena.copy(b"first");
        let big = vec![7u8; ARENA];
        let b = arena.copy(&big);
        let c = arena.copy(b"third");
        assert_eq!(&a[..], b"first");
        assert_eq!(&b[..], &big[..]);
        assert_eq!(&c[..], b"third");
    }

    #[tokio::test]
    async fn a_train_sent_at_once_arrives_as_its_datagrams() {
        let rx = BatchSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let tx = BatchSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = rx.local_addr().unwrap();
        let mut contents = Vec::new();
        for i in 0..5u8 {
            contents.extend(std::iter::repeat_n(i, if i == 4 { 300 } else { 1200 }));
        }
        let n = tx.train_len(1200).min(5);
        assert!(n >= 1);
        // As many as one send may carry, then the rest one by one.
        let mut sent = 0;
        while sent < 5 {
            let take = if sent == 0 { n } else { 1 };
            let from = sent * 1200;
            let to_byte = ((sent + take) * 1200).min(contents.len());
            tx.send(to, &contents[from..to_byte], 1200).await.unwrap();
            sent += take;
        }
        let mut scratch = RecvScratch::default();
        let mut got = Vec::new();
        while got.len() < 5 {
            let entries =
                tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv(&mut scratch))
                    .await
                    .expect("datagrams arrive")
                    .unwrap();
            for i in 0..entries {
                let (from, datagrams) = scratch.datagrams(i);
                assert_eq!(from, tx.local_addr().unwrap());
                got.extend(datagrams.map(<[u8]>::to_vec));
            }
        }
        let sizes: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1200, 1200, 1200, 1200, 300]);
        for (i, d) in got.iter().enumerate() {
            assert!(d.iter().all(|&b| b == i as u8));
        }
    }
}
