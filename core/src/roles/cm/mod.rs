//! The communication manager's cores: what a CM relays between its cluster (MPI) and its link
//! to the peer CM, what waits for room in the link ([`LinkOutbox`]), its credit accounting and
//! its deadlines, without I/O. The driver
//! (`hmw::drivers::cm`) owns the MPI transport and the QUIC link, tells the core how the
//! link is doing ([`LinkView`]) and performs its [`CmOutput`]s.

mod link_side;
mod master_side;
mod output;
mod submaster_side;

pub use master_side::{CmMasterSide, Outbound};
pub use output::{CmOutput, LinkOutbox, LinkView};
pub use submaster_side::CmSubMasterSide;

#[cfg(test)]
mod tests;
