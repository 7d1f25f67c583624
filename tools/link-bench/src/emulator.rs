//! The emulator's runtime (one thread of its own, as it would be a process of its own), and
//! emulators started on it.

use std::sync::OnceLock;

use anyhow::{Context, Result};
use hmw_cm::wanem::{Wanem, WanemConfig};

/// The emulator's runtime.
pub(crate) static EMULATOR: OnceLock<tokio::runtime::Handle> = OnceLock::new();

/// Starts an emulator on its own runtime.
pub(crate) async fn start_wanem(config: WanemConfig) -> Result<Wanem> {
    let handle = EMULATOR.get().context("no emulator runtime")?;
    Ok(handle.spawn(Wanem::start(config)).await??)
}
