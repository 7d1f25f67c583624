//! The two messages every task makes, a batch of tasks and a result, encoded and decoded by
//! hand, byte for byte as bincode's standard configuration does through serde.
//!
//! Through serde, bincode spends about 900 instructions encoding a batch of one small task and
//! 700 decoding a result (callgrind, `hmw simulate`): more than half of what the master does
//! for a task besides. Written out, each is a few dozen. The layout (bincode 2, `standard()`):
//! integers as varints (below 251 one byte; else a marker 251, 252 or 253 and the value as
//! 2, 4 or 8 little-endian bytes), `f64` as 8 little-endian bytes, an enum's variant as a
//! `u32`, a sequence's or a byte string's length before it. The tests check every encoding
//! against bincode's own, and decoding against it on arbitrary bytes.
//!
//! A decoder here returns `None` for anything it does not read exactly (another message, a
//! varint not in its shortest form, too few bytes): the caller then decodes through serde,
//! which gives the same value or bincode's error. So this path can make decoding faster,
//! never different.

use std::ops::Range;

use smallvec::SmallVec;

use super::{ResultRef, TaskIds, ToWorker, WireResult, WireTask, WireTaskRef};
use crate::app::TaskId;

/// `ToWorker::Tasks`'s variant index.
const TASKS: u64 = 0;
/// `ToMaster::Result`'s variant index.
const RESULT: u64 = 1;

/// Append `n` as a bincode varint.
#[inline]
fn put_varint(out: &mut Vec<u8>, n: u64) {
    if n < 251 {
        out.push(n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        out.push(251);
        out.extend_from_slice(&n.to_le_bytes());
    } else if let Ok(n) = u32::try_from(n) {
        out.push(252);
        out.extend_from_slice(&n.to_le_bytes());
    } else {
        out.push(253);
        out.extend_from_slice(&n.to_le_bytes());
    }
}

/// Bytes of `n` as a varint.
fn varint_len(n: u64) -> usize {
    match n {
        0..251 => 1,
        251..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

#[inline]
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Start a `ToWorker::Tasks` in `out` (emptied first): its variant, and one byte for its
/// count, which [`end_tasks`] writes once the tasks are in.
pub(super) fn start_tasks(out: &mut Vec<u8>) {
    out.clear();
    put_varint(out, TASKS);
    out.push(0);
}

/// Append a task to the batch started in `out`, as bincode encodes a `WireTask`.
pub(super) fn put_task(out: &mut Vec<u8>, task: WireTaskRef<'_>) {
    out.reserve(varint_len(task.id) + 8 + varint_len(task.body.len() as u64) + task.body.len());
    put_varint(out, task.id);
    out.extend_from_slice(&task.operations.to_le_bytes());
    put_bytes(out, task.body);
}

/// End the batch of `count` tasks in `out`: its count in the place [`start_tasks`] kept, which
/// grows when the count takes more than one byte.
pub(super) fn end_tasks(out: &mut Vec<u8>, count: usize) {
    const AT: usize = 1;
    if count < 251 {
        out[AT] = count as u8;
        return;
    }
    let mut varint = Vec::with_capacity(9);
    put_varint(&mut varint, count as u64);
    out.splice(AT..AT + 1, varint);
}

/// `ToMaster::Result`, as bincode encodes it, written in the result's own body buffer: the
/// header is appended after the body and rotated in front of it, so a result costs no second
/// buffer (a small body encoded by [`super::encode`] has room for the header already).
pub(super) fn encode_result(result: WireResult, room: u32) -> Vec<u8> {
    let WireResult {
        ids,
        operations,
        busy_s,
        decode_s,
        encode_s,
        body: mut out,
    } = result;
    let body = out.len();
    out.reserve(
        varint_len(RESULT)
            + varint_len(ids.len() as u64)
            + ids.iter().map(|&id| varint_len(id)).sum::<usize>()
            + 4 * 8
            + varint_len(body as u64)
            + varint_len(room.into()),
    );
    put_varint(&mut out, RESULT);
    put_varint(&mut out, ids.len() as u64);
    for &id in &ids {
        put_varint(&mut out, id);
    }
    for figure in [operations, busy_s, decode_s, encode_s] {
        out.extend_from_slice(&figure.to_le_bytes());
    }
    put_varint(&mut out, body as u64);
    move_header_to_front(&mut out, body);
    put_varint(&mut out, room.into());
    out
}

/// `out` holds a body of `body` bytes and then a header: put the header in front. A header of
/// one task's result fits on the stack, and three plain copies cost less than a rotation (a
/// worker's encoding of a result went from 389 to 359 instructions, callgrind).
fn move_header_to_front(out: &mut [u8], body: usize) {
    const ON_STACK: usize = 64;
    let header = out.len() - body;
    if header > ON_STACK {
        out.rotate_right(header);
        return;
    }
    let mut copy = [0u8; ON_STACK];
    copy[..header].copy_from_slice(&out[body..]);
    out.copy_within(..body, header);
    out[..header].copy_from_slice(&copy[..header]);
}

/// Reads what this module writes; every read is `None` past the end or off the exact form.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    /// A varint in its shortest form, at most `max`.
    fn varint(&mut self, max: u64) -> Option<u64> {
        let n = match self.array::<1>()?[0] {
            small @ 0..251 => u64::from(small),
            251 => Some(u64::from(u16::from_le_bytes(self.array()?))).filter(|&n| n >= 251)?,
            252 => Some(u64::from(u32::from_le_bytes(self.array()?))).filter(|&n| n > 0xffff)?,
            253 => Some(u64::from_le_bytes(self.array()?)).filter(|&n| n > 0xffff_ffff)?,
            _ => return None,
        };
        (n <= max).then_some(n)
    }

    /// A length of items of at least `min_item` bytes each, no more than the bytes left hold.
    fn length(&mut self, min_item: usize) -> Option<usize> {
        let n = usize::try_from(self.varint(u64::MAX)?).ok()?;
        (n.checked_mul(min_item)? <= self.0.len()).then_some(n)
    }

    fn f64(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.array()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.length(1)?;
        self.take(n)
    }
}

/// A `ToMaster::Result` and its room, read without serde, the body borrowed from `bytes`;
/// `None` for any other message or form.
pub(super) fn decode_result(bytes: &[u8]) -> Option<(ResultRef<'_>, u32)> {
    let mut r = Reader(bytes);
    if r.varint(u32::MAX.into())? != RESULT {
        return None;
    }
    let count = r.length(1)?;
    let mut ids = TaskIds::new();
    for _ in 0..count {
        ids.push(r.varint(u64::MAX)?);
    }
    let result = ResultRef {
        ids,
        operations: r.f64()?,
        busy_s: r.f64()?,
        decode_s: r.f64()?,
        encode_s: r.f64()?,
        body: r.bytes()?,
    };
    let room = u32::try_from(r.varint(u32::MAX.into())?).ok()?;
    Some((result, room))
}

/// The count that follows variant `variant` at the start of `bytes`: a batch's tasks after
/// `TASKS`, a result's ids after `RESULT`. Only the first bytes are read.
fn count_after(bytes: &[u8], variant: u64) -> Option<usize> {
    let mut r = Reader(bytes);
    if r.varint(u32::MAX.into())? != variant {
        return None;
    }
    usize::try_from(r.varint(u64::MAX)?).ok()
}

/// The tasks in a `ToWorker::Tasks`, from its first bytes alone; `None` for another message.
pub(super) fn batch_len(bytes: &[u8]) -> Option<usize> {
    count_after(bytes, TASKS)
}

/// The ids of a `ToMaster::Result`, from its first bytes alone; `None` for another message.
pub(super) fn result_len(bytes: &[u8]) -> Option<usize> {
    count_after(bytes, RESULT)
}

/// A task of a batch as [`read_tasks`] finds it: its id, operations, and where its body lies
/// in the message.
type TaskAt = (TaskId, f64, Range<usize>);

/// The tasks of a `ToWorker::Tasks` in `bytes`, read without serde; `None` for any other
/// message or form.
fn read_tasks(bytes: &[u8]) -> Option<SmallVec<[TaskAt; 2]>> {
    let mut r = Reader(bytes);
    if r.varint(u32::MAX.into())? != TASKS {
        return None;
    }
    // A task is at least an id, an f64 and a length: 10 bytes.
    let count = r.length(10)?;
    let mut tasks = SmallVec::new();
    for _ in 0..count {
        let id = r.varint(u64::MAX)?;
        let operations = r.f64()?;
        let body = r.bytes()?;
        let start = body.as_ptr() as usize - bytes.as_ptr() as usize;
        tasks.push((id, operations, start..start + body.len()));
    }
    Some(tasks)
}

/// A `ToWorker::Tasks`, read without serde; `None` for any other message or form.
pub(super) fn decode_tasks(bytes: &[u8]) -> Option<ToWorker> {
    let tasks = read_tasks(bytes)?
        .into_iter()
        .map(|(id, operations, body)| WireTask {
            id,
            operations,
            body: bytes[body].to_vec(),
        })
        .collect();
    Some(ToWorker::Tasks(tasks))
}

/// A `ToWorker::Tasks` read without serde, its tasks given to `task` in order, the last one's
/// body in `bytes`' own buffer (the bytes around it cut off): a batch of one task allocates
/// nothing. `Err(bytes)` for any other message or form, before any task is given.
pub(super) fn take_tasks(
    mut bytes: Vec<u8>,
    mut task: impl FnMut(WireTask),
) -> Result<(), Vec<u8>> {
    let Some(mut tasks) = read_tasks(&bytes) else {
        return Err(bytes);
    };
    let Some((id, operations, last)) = tasks.pop() else {
        return Ok(());
    };
    for (id, operations, body) in tasks {
        let body = bytes[body].to_vec();
        task(WireTask {
            id,
            operations,
            body,
        });
    }
    bytes.copy_within(last.clone(), 0);
    bytes.truncate(last.len());
    task(WireTask {
        id,
        operations,
        body: bytes,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::{collection::vec, prelude::*};

    use super::*;
    use crate::protocol::{decode, encode, ToMaster};

    /// Ids and lengths around every varint boundary.
    fn id() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..300,
            250u64..252,
            0xfff0u64..0x1_0010,
            0xffff_fff0u64..0x1_0000_0010,
            any::<u64>(),
        ]
    }

    fn figure() -> impl Strategy<Value = f64> {
        prop_oneof![any::<f64>(), Just(0.0), Just(-0.0), Just(f64::NAN)]
    }

    fn result() -> impl Strategy<Value = (WireResult, u32)> {
        (
            vec(id(), 0..5),
            figure(),
            figure(),
            figure(),
            figure(),
            prop_oneof![vec(any::<u8>(), 0..8), vec(any::<u8>(), 250..260)],
            prop_oneof![0u32..300, Just(u32::MAX), any::<u32>()],
        )
            .prop_map(
                |(ids, operations, busy_s, decode_s, encode_s, body, room)| {
                    (
                        WireResult {
                            ids: ids.into(),
                            operations,
                            busy_s,
                            decode_s,
                            encode_s,
                            body,
                        },
                        room,
                    )
                },
            )
    }

    fn tasks() -> impl Strategy<Value = Vec<WireTask>> {
        vec(
            (id(), figure(), vec(any::<u8>(), 0..300)).prop_map(|(id, operations, body)| {
                WireTask {
                    id,
                    operations,
                    body,
                }
            }),
            0..4,
        )
    }

    /// Equal as bincode sees them (NaN figures compare by their bits).
    fn same(a: &ToMaster, b: &ToMaster) -> bool {
        encode(a) == encode(b)
    }

    /// The message a result read on the hot path stands for.
    fn owned((result, room): (ResultRef, u32)) -> ToMaster {
        ToMaster::Result {
            result: WireResult {
                ids: result.ids,
                operations: result.operations,
                busy_s: result.busy_s,
                decode_s: result.decode_s,
                encode_s: result.encode_s,
                body: result.body.to_vec(),
            },
            room,
        }
    }

    proptest! {
        #[test]
        fn a_result_encodes_and_decodes_as_bincode_does((result, room) in result()) {
            let message = ToMaster::Result { result: result.clone(), room };
            let bytes = encode(&message);
            prop_assert_eq!(encode_result(result.clone(), room), bytes.clone());
            let decoded = owned(decode_result(&bytes).expect("its own encoding"));
            prop_assert!(same(&decoded, &message));
            prop_assert_eq!(result_len(&bytes), Some(result.ids.len()));
            prop_assert_eq!(batch_len(&bytes), None);
        }

        #[test]
        fn tasks_encode_and_decode_as_bincode_does(tasks in tasks()) {
            let bytes = encode(&ToWorker::Tasks(tasks.clone()));
            // Into a new buffer, and into one that held something: the same bytes.
            for buffer in [Vec::new(), vec![9; 300]] {
                let mut out = buffer;
                start_tasks(&mut out);
                for t in &tasks {
                    put_task(&mut out, WireTaskRef { id: t.id, operations: t.operations, body: &t.body });
                }
                end_tasks(&mut out, tasks.len());
                prop_assert_eq!(out, bytes.clone());
            }
            let decoded = decode_tasks(&bytes).expect("its own encoding");
            prop_assert_eq!(encode(&decoded), bytes.clone());
            let mut taken = Vec::new();
            take_tasks(bytes.clone(), |task| taken.push(task)).expect("its own encoding");
            prop_assert_eq!(batch_len(&bytes), Some(tasks.len()));
            prop_assert_eq!(result_len(&bytes), None);
            prop_assert_eq!(encode(&ToWorker::Tasks(taken)), bytes);
        }

        #[test]
        fn on_any_bytes_the_fast_decoders_agree_with_bincode_or_step_aside(
            bytes in prop_oneof![
                vec(any::<u8>(), 0..64),
                result().prop_map(|(r, room)| {
                    let mut b = encode_result(r, room);
                    let at = b.len() / 2;
                    b[at] ^= 0xfb;
                    b
                }),
            ]
        ) {
            if let Some(fast) = decode_result(&bytes).map(owned) {
                let slow: ToMaster = decode(&bytes, "result").expect("bincode reads it too");
                prop_assert!(same(&fast, &slow));
            }
            if let Some(fast) = decode_tasks(&bytes) {
                let slow: ToWorker = decode(&bytes, "tasks").expect("bincode reads it too");
                prop_assert_eq!(encode(&fast), encode(&slow));
            }
            let mut taken = Vec::new();
            match take_tasks(bytes.clone(), |task| taken.push(task)) {
                Ok(()) => {
                    let decoded = decode_tasks(&bytes).expect("read alike");
                    prop_assert_eq!(encode(&ToWorker::Tasks(taken)), encode(&decoded));
                }
                Err(back) => {
                    prop_assert!(taken.is_empty());
                    prop_assert_eq!(back, bytes);
                }
            }
        }
    }
}
