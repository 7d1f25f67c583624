//! The thin tokio + quinn driver around the protocol core: endpoints, connection tasks,
//! reconnection, and the [`Link`] and [`BlockingLink`] APIs.

mod blocking;
mod connection;
mod endpoint;
mod error;
mod link;
mod shared;
mod tuner;

pub use blocking::{BlockingLink, Doorbell, LinkRuntime};
pub use endpoint::transport_config;
pub use error::{LinkError, TrySendError};
pub use link::Link;
