//! A communication manager's core in a pipeline run: the link to another cluster as a hop of
//! the run's routes. What its cluster sends it for another cluster goes over the link (held
//! here until the link has room, [`LinkOutbox`]); what the link brings goes to its rank in
//! this cluster, or to the CM of this cluster that leads further. When the controller stops
//! it (the last CMs of the run to stop, the far side of each link first), it says `Bye` with
//! its link's figures and closes the link once the peer has what it sent. A link down (or not
//! yet up) past `give_up_after` ends the run with an error.

use std::{collections::VecDeque, time::Duration};

use super::{output::PipeOutput, routes::Routes};
use crate::{
    error::CoreError,
    pipeline::stats::RankReport,
    protocol::{
        decode, encode,
        pipeline::{Address, PipeMessage},
    },
    roles::{LinkOutbox, LinkView},
};

/// How long a CM waits, once stopping, for its link to deliver what it holds.
pub const CLOSE_PATIENCE: Duration = Duration::from_secs(10);

/// What a relay asks its driver to do.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayOutput {
    /// Send these bytes to rank `rank` of this cluster.
    ToRank {
        /// The rank.
        rank: usize,
        /// The message.
        bytes: Vec<u8>,
    },
    /// The controller stopped this CM: call [`RelayCore::finish`] with its report.
    Stopped,
    /// Move the outbox into the link, waiting at most this long, then close it.
    CloseLink(Duration),
}

/// A CM of a pipeline run.
#[derive(Debug)]
pub struct RelayCore {
    routes: Routes,
    give_up_after: Duration,
    outbox: VecDeque<Vec<u8>>,
    down_since: Option<Duration>,
    done: bool,
}

impl RelayCore {
    /// CM `routes.me()`, ending the run when its link stays down past `give_up_after`.
    pub fn new(routes: Routes, give_up_after: Duration) -> Self {
        RelayCore {
            routes,
            give_up_after,
            outbox: VecDeque::new(),
            down_since: None,
            done: false,
        }
    }

    fn violation(&self, rank: usize, message: String) -> CoreError {
        CoreError::Protocol { rank, message }
    }

    /// A message from rank `from` of this cluster: for the link, or the controller's `Stop`.
    pub fn on_cluster(
        &mut self,
        from: usize,
        bytes: Vec<u8>,
        out: &mut Vec<RelayOutput>,
    ) -> Result<(), CoreError> {
        let message: PipeMessage =
            decode(&bytes, "message to a CM").map_err(CoreError::decoding(from))?;
        match message {
            PipeMessage::Routed { to, .. } if to.cluster != self.routes.me().cluster => {
                self.outbox.push_back(bytes);
            }
            PipeMessage::Stop => out.push(RelayOutput::Stopped),
            other => {
                return Err(self.violation(from, format!("a CM does not take {other:?}")));
            }
        }
        Ok(())
    }

    /// A message from the link.
    pub fn on_link(&mut self, bytes: Vec<u8>, out: &mut Vec<RelayOutput>) -> Result<(), CoreError> {
        let me = self.routes.me();
        let message: PipeMessage =
            decode(&bytes, "message from the link").map_err(CoreError::decoding(me.rank()))?;
        let PipeMessage::Routed { to, bytes: inner } = message else {
            return Err(self.violation(me.rank(), "an unrouted message from the link".into()));
        };
        if to == me {
            return match decode(&inner, "message to a CM")
                .map_err(CoreError::decoding(me.rank()))?
            {
                PipeMessage::Stop => {
                    out.push(RelayOutput::Stopped);
                    Ok(())
                }
                other => Err(self.violation(me.rank(), format!("a CM does not take {other:?}"))),
            };
        }
        if to.cluster == me.cluster {
            out.push(RelayOutput::ToRank {
                rank: to.rank(),
                bytes: inner,
            });
            return Ok(());
        }
        match self.routes.hop(to) {
            Some((rank, true)) if rank != me.rank() => {
                out.push(RelayOutput::ToRank { rank, bytes });
                Ok(())
            }
            _ => Err(self.violation(
                me.rank(),
                format!("a message for {to} came over the link that leads there"),
            )),
        }
    }

    /// After each turn at `now`, with the link as `link`: the deadline of a link down (or
    /// never up: the far cluster never came).
    pub fn on_tick(&mut self, now: Duration, link: &LinkView) -> Result<(), CoreError> {
        if link.connected || self.done {
            self.down_since = None;
            return Ok(());
        }
        let since = *self.down_since.get_or_insert(now);
        if now.saturating_sub(since) > self.give_up_after {
            return Err(CoreError::Setup(format!(
                "CM {}: its link has been down for more than {:.0} s",
                self.routes.me(),
                self.give_up_after.as_secs_f64()
            )));
        }
        Ok(())
    }

    /// Say `Bye` with `report` (its link's figures) and close the link.
    pub fn finish(
        &mut self,
        report: RankReport,
        out: &mut Vec<RelayOutput>,
    ) -> Result<(), CoreError> {
        let me = self.routes.me();
        let bye = PipeMessage::Bye { from: me, report };
        let mut sends = Vec::new();
        self.routes.send(Address::CONTROLLER, &bye, &mut sends)?;
        for send in sends {
            if let PipeOutput::Send { to, bytes } = send {
                if to == me.rank() {
                    // The controller is across this CM's own link.
                    self.outbox.push_back(bytes);
                } else {
                    out.push(RelayOutput::ToRank { rank: to, bytes });
                }
            }
        }
        out.push(RelayOutput::CloseLink(CLOSE_PATIENCE));
        self.done = true;
        Ok(())
    }

    /// The CM said `Bye` and closes its link.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// An encoded `Failed` for the controller and the rank it goes to, when this CM fails
    /// and the controller is in its cluster (a far cluster's failure reaches it as the link
    /// going down).
    pub fn failure(&self, message: &str) -> Option<(usize, Vec<u8>)> {
        let me = self.routes.me();
        let failed = PipeMessage::Failed {
            from: me,
            message: message.to_owned(),
        };
        (me.cluster == Address::CONTROLLER.cluster).then(|| (0, encode(&failed)))
    }
}

impl LinkOutbox for RelayCore {
    fn next_for_link(&self) -> Option<&[u8]> {
        self.outbox.front().map(Vec::as_slice)
    }

    fn pop_for_link(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::{machinefile::MachineFile, pipeline::PipelineConfig, protocol::encode};

    fn relay(text: &str, rank: usize) -> RelayCore {
        let config: PipelineConfig = toml::from_str(
            "[[cluster]]\nname = \"a\"\n[[cluster]]\nname = \"b\"\nparent = \"a\"\n",
        )
        .unwrap();
        let machines = MachineFile::parse(Path::new("hosts"), text).unwrap();
        let routes = Routes::new(&config, &machines, rank).unwrap();
        RelayCore::new(routes, Duration::from_secs(10))
    }

    #[test]
    fn messages_cross_to_their_rank_and_stop_ends_the_link() {
        let mut far = relay("hb # cluster=b\ncb # S 0 7000 ha name=b-a\nnb\n", 1);
        let mut out = Vec::new();
        // From the link, for rank 2 of this cluster: delivered unwrapped.
        let routed = PipeMessage::Routed {
            to: Address::new(1, 2),
            bytes: encode(&PipeMessage::Stop),
        };
        far.on_link(encode(&routed), &mut out).unwrap();
        assert_eq!(
            out,
            vec![RelayOutput::ToRank {
                rank: 2,
                bytes: encode(&PipeMessage::Stop)
            }]
        );
        // From the cluster, for the controller: into the outbox.
        let up = encode(&PipeMessage::Routed {
            to: Address::CONTROLLER,
            bytes: vec![1, 2],
        });
        out.clear();
        far.on_cluster(2, up.clone(), &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(far.pop_for_link(), Some(up));
        // A message for this cluster that came from it is no CM's.
        let own = encode(&PipeMessage::Routed {
            to: Address::new(1, 0),
            bytes: vec![],
        });
        assert!(far.on_cluster(2, own, &mut out).is_err());
        // Stopped over the link: its Bye goes up the link, then the link closes.
        let stop = encode(&PipeMessage::Routed {
            to: Address::new(1, 1),
            bytes: encode(&PipeMessage::Stop),
        });
        far.on_link(stop, &mut out).unwrap();
        assert_eq!(out, vec![RelayOutput::Stopped]);
        out.clear();
        far.finish(RankReport::default(), &mut out).unwrap();
        assert_eq!(out, vec![RelayOutput::CloseLink(CLOSE_PATIENCE)]);
        assert!(far.next_for_link().is_some() && far.is_done());
    }

    #[test]
    fn a_link_down_or_never_up_past_the_deadline_ends_the_run() {
        let mut main = relay("ha # cluster=a\nca # M 1 7000 name=a-b cluster=b\n", 1);
        let down = LinkView::default();
        assert!(main.on_tick(Duration::ZERO, &down).is_ok());
        assert!(main.on_tick(Duration::from_secs(9), &down).is_ok());
        let err = main.on_tick(Duration::from_secs(11), &down).unwrap_err();
        assert!(err.to_string().contains("down for more than 10 s"), "{err}");
        let up = LinkView {
            connected: true,
            ever_connected: true,
            ..LinkView::default()
        };
        assert!(main.on_tick(Duration::from_secs(12), &up).is_ok());
        assert!(main.on_tick(Duration::from_secs(20), &down).is_ok());
        assert!(main.failure("gone").is_some());
    }
}
