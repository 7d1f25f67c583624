//! Both CM sides when the process at the other end of the link is started again.

use std::time::Duration;

use super::{CmMasterSide, CmOutput, CmSubMasterSide, LinkOutbox, LinkView};
use crate::protocol::{decode, encode, ToMaster, ToWorker};

fn up(peer_restarts: u64) -> LinkView {
    LinkView {
        connected: true,
        ever_connected: true,
        peer_restarts,
        ..LinkView::default()
    }
}

/// What a CM facing a master told its master, decoded, link reports left out.
fn to_master(out: &[CmOutput]) -> Vec<ToMaster> {
    out.iter()
        .filter_map(|o| match o {
            CmOutput::ToCluster(bytes) => Some(decode(bytes, "to the master").unwrap()),
            _ => None,
        })
        .filter(|m| !matches!(m, ToMaster::Link(_)))
        .collect()
}

fn outbox(core: &mut impl LinkOutbox) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| core.pop_for_link()).collect()
}

/// The far cluster started again: its tasks are taken back at once (not after the lost-after
/// deadline), and it is fed anew as at the start of a run: its window, then its new credit.
#[test]
fn a_far_cluster_started_again_is_lost_then_back_and_fed_anew() {
    let mut cm = CmMasterSide::new(1, 2, Duration::from_secs(60), None);
    let mut out = Vec::new();
    let second = Duration::from_secs(1);
    cm.on_link(&encode(&ToMaster::Ready { room: 3 }), &mut out)
        .unwrap();
    cm.on_tick(second, &up(0), &mut out);
    assert_eq!(to_master(&out), [ToMaster::Ready { room: 5 }]);
    // One batch goes; another waits for the link when the far side restarts.
    for _ in 0..2 {
        cm.on_cluster(&encode(&ToWorker::Tasks(Vec::new())))
            .unwrap();
    }
    out.clear();
    cm.on_tick(2 * second, &up(1), &mut out);
    assert_eq!(
        to_master(&out),
        [ToMaster::Lost, ToMaster::Back, ToMaster::Ready { room: 2 }],
        "taken back, then fed again: its window ahead of its credit, as at the start"
    );
    assert!(
        outbox(&mut cm).is_empty(),
        "nothing left for the old cluster"
    );
    // More only once the new cluster offers room.
    out.clear();
    cm.on_tick(3 * second, &up(1), &mut out);
    assert!(to_master(&out).is_empty(), "{out:?}");
    cm.on_link(&encode(&ToMaster::Ready { room: 1 }), &mut out)
        .unwrap();
    cm.on_tick(4 * second, &up(1), &mut out);
    assert_eq!(to_master(&out), [ToMaster::Ready { room: 1 }]);
}

/// The master's side started again: the room the sub-master offered and that no batch used
/// is offered again, once, in place of the offers still waiting for the link.
#[test]
fn a_master_side_started_again_is_offered_the_room_left() {
    let mut cm = CmSubMasterSide::new(1, Duration::from_secs(360));
    let mut out = Vec::new();
    let second = Duration::from_secs(1);
    cm.on_cluster(&encode(&ToMaster::Ready { room: 2 }), &mut out)
        .unwrap();
    cm.on_tick(second, &up(0), &mut out);
    assert_eq!(outbox(&mut cm).len(), 1, "the offer went");
    cm.on_link(encode(&ToWorker::Tasks(Vec::new()))).unwrap();
    cm.on_tick(second, &up(0), &mut out);
    cm.on_cluster(&encode(&ToMaster::Ready { room: 4 }), &mut out)
        .unwrap();
    // The master's side restarts before this offer left.
    cm.on_tick(2 * second, &up(1), &mut out);
    let offers: Vec<ToMaster> = outbox(&mut cm)
        .iter()
        .map(|bytes| decode(bytes, "to the link").unwrap())
        .collect();
    assert_eq!(offers, [ToMaster::Ready { room: 5 }], "2 - 1 used + 4");
}
