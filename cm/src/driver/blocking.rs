//! The blocking facade for plain (MPI-side) threads: the same link, driven by its own tokio
//! runtime; every call parks the calling thread instead of spinning.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::error::{LinkError, TrySendError};
use super::link::Link;
use crate::config::LinkConfig;
use crate::stats::{BufferUsage, LinkStats};

/// What wakes a thread waiting on a link ([`BlockingLink::recv_timeout_or`]) for something
/// else that happened: a message on its cluster's side, say. Cheap to clone; any thread may
/// ring it.
#[derive(Debug, Clone, Default)]
pub struct Doorbell(std::sync::Arc<tokio::sync::Notify>);

impl Doorbell {
    /// Wake the waiter, or the next one if none waits now.
    pub fn ring(&self) {
        self.0.notify_one();
    }
}

/// The runtime that drives blocking links: one a link ([`BlockingLink::start`]), or one that
/// several links share ([`BlockingLink::start_on`]: the CMs of a process serving many links,
/// whose timers and packets then wake two threads rather than two a link). Cheap to clone;
/// shut down when the last link and the last clone are gone.
#[derive(Debug, Clone)]
pub struct LinkRuntime(Arc<tokio::runtime::Runtime>);

impl LinkRuntime {
    /// A runtime of `threads` threads.
    pub fn new(threads: usize) -> Result<Self, LinkError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("hmw-cm-link")
            .enable_all()
            .build()
            .map_err(LinkError::Runtime)?;
        Ok(LinkRuntime(Arc::new(runtime)))
    }
}

/// A [`Link`] usable from threads outside any async runtime. It is `Send + Sync`: several
/// threads may send and receive through one link at the same time. Do not call it from
/// inside an async runtime.
#[derive(Debug)]
pub struct BlockingLink {
    link: Option<Link>,
    runtime: Option<LinkRuntime>,
}

impl BlockingLink {
    /// Starts the link on a runtime of its own, of `config.threads` threads.
    pub fn start(config: LinkConfig) -> Result<Self, LinkError> {
        let runtime = LinkRuntime::new(config.threads)?;
        Self::start_on(config, &runtime)
    }

    /// Starts the link on `runtime`, which other links may share.
    pub fn start_on(config: LinkConfig, runtime: &LinkRuntime) -> Result<Self, LinkError> {
        let link = runtime.0.block_on(Link::start(config))?;
        Ok(Self {
            link: Some(link),
            runtime: Some(runtime.clone()),
        })
    }

    fn link(&self) -> &Link {
        self.link.as_ref().expect("link present until drop")
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime
            .as_ref()
            .expect("runtime present until drop")
            .0
            .handle()
            .block_on(future)
    }

    /// The async link inside (for statistics or configuration).
    pub fn inner(&self) -> &Link {
        self.link()
    }

    /// The local UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.link().local_addr()
    }

    /// Queues a message, blocking while the send buffer lacks room.
    pub fn send(&self, message: &[u8]) -> Result<(), LinkError> {
        self.block_on(self.link().send(message))
    }

    /// Queues a message without copying it (from 16 KiB on), blocking while the send buffer
    /// lacks room.
    pub fn send_bytes(&self, message: Bytes) -> Result<(), LinkError> {
        self.block_on(self.link().send_bytes(message))
    }

    /// Queues a message if there is room now.
    pub fn try_send(&self, message: &[u8]) -> Result<(), TrySendError> {
        self.link().try_send(message)
    }

    /// The next message in send order, blocking until one arrives.
    pub fn recv(&self) -> Result<Bytes, LinkError> {
        self.block_on(self.link().recv())
    }

    /// The next message, or `None` if none arrived within `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<Bytes>, LinkError> {
        self.block_on(async {
            match tokio::time::timeout(timeout, self.link().recv()).await {
                Ok(result) => result.map(Some),
                Err(_) => Ok(None),
            }
        })
    }

    /// The next message, or `None` if none arrived within `timeout` or `bell` rang first (a
    /// ring while nobody waits is kept for the next wait).
    pub fn recv_timeout_or(
        &self,
        timeout: Duration,
        bell: &Doorbell,
    ) -> Result<Option<Bytes>, LinkError> {
        if let Some(message) = self.try_recv()? {
            return Ok(Some(message));
        }
        self.block_on(async {
            tokio::select! {
                result = self.link().recv() => result.map(Some),
                () = bell.0.notified() => Ok(None),
                () = tokio::time::sleep(timeout) => Ok(None),
            }
        })
    }

    /// The next message if one is waiting.
    pub fn try_recv(&self) -> Result<Option<Bytes>, LinkError> {
        self.link().try_recv()
    }

    /// Blocks until everything sent is acknowledged, or `timeout` passes.
    pub fn flush(&self, timeout: Duration) -> Result<(), LinkError> {
        self.block_on(async {
            tokio::time::timeout(timeout, self.link().flush())
                .await
                .map_err(|_| LinkError::Timeout)?
        })
    }

    /// Blocks until a connection joined, or `timeout` passes.
    pub fn wait_connected(&self, timeout: Duration) -> Result<(), LinkError> {
        self.block_on(async {
            tokio::time::timeout(timeout, self.link().wait_connected())
                .await
                .map_err(|_| LinkError::Timeout)?
        })
    }

    /// Blocks until the send buffer has at least `bytes` free; `Ok(false)` if `timeout`
    /// passed first.
    pub fn wait_for_space(&self, bytes: usize, timeout: Duration) -> Result<bool, LinkError> {
        self.block_on(async {
            match tokio::time::timeout(timeout, self.link().wait_for_space(bytes)).await {
                Ok(result) => result.map(|()| true),
                Err(_) => Ok(false),
            }
        })
    }

    /// How long the link has been without any connection; `None` while connected.
    pub fn disconnected_for(&self) -> Option<Duration> {
        self.link().disconnected_for()
    }

    /// Whether a connection is joined now.
    pub fn is_connected(&self) -> bool {
        self.link().is_connected()
    }

    /// Send buffer fill.
    pub fn send_buffer(&self) -> BufferUsage {
        self.link().send_buffer()
    }

    /// Receive buffer fill.
    pub fn recv_buffer(&self) -> BufferUsage {
        self.link().recv_buffer()
    }

    /// Largest message accepted.
    pub fn max_message(&self) -> usize {
        self.link().max_message()
    }

    /// A snapshot of the statistics.
    pub fn stats(&self) -> LinkStats {
        self.link().stats()
    }

    /// Closes the link (see [`Link::close`]).
    pub fn close(&self) {
        self.block_on(self.link().close());
    }
}

impl Drop for BlockingLink {
    fn drop(&mut self) {
        if let (Some(link), Some(runtime)) = (self.link.take(), self.runtime.as_ref()) {
            runtime.0.block_on(link.close());
            drop(link);
        }
        // The last user of the runtime shuts it down.
        if let Some(Ok(runtime)) = self.runtime.take().map(|r| Arc::try_unwrap(r.0)) {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}
