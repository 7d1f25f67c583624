//! Which solver a network gets: exact while its work is small, Schweitzer-Bard beyond.

use super::exact::{exact, exact_steps};
use super::network::{ClosedNetwork, NetworkError, Solution};
use super::schweitzer::schweitzer_bard;

/// The most work ([`exact_steps`]: states times levels times centres) an exact solve may
/// take; beyond it Schweitzer-Bard (117) takes over. A step is a handful of floating-point
/// operations, so an exact solve stays within about a million instructions, and so does an
/// approximate one of a cluster of a few dozen kinds of worker (`docs/model.md` section 15).
pub const EXACT_STEP_LIMIT: u64 = 20_000;

/// The network's mean values: exact MVA (113)-(116) when [`exact_steps`] is at most
/// [`EXACT_STEP_LIMIT`], else Schweitzer-Bard (117). Fails on a network
/// [`ClosedNetwork::check`] rejects.
pub fn solve(network: &ClosedNetwork) -> Result<Solution, NetworkError> {
    network.check()?;
    Ok(match exact_steps(network) {
        Some(steps) if steps <= EXACT_STEP_LIMIT => exact(network),
        _ => schweitzer_bard(network),
    })
}
