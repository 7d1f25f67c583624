//! [`SpareBuffers`]: buffers done with, kept to encode the next messages into.
//!
//! A master makes two buffers per task, its body and the batch that carries it, and is done with
//! two: the body when the task is gathered (kept by the master's core to encode a batch into),
//! the batch once the transport has sent it (kept by the transport, then by the task source to
//! encode a task into). Reused, they spare the allocator two `malloc`s and two `free`s per
//! task (callgrind, `docs/benchmarks.md`).

/// Buffers done with, emptied when taken.
#[derive(Debug, Default)]
pub struct SpareBuffers(Vec<Vec<u8>>);

impl SpareBuffers {
    /// Buffers kept at most: a burst of messages sent at once, and their bodies.
    const COUNT: usize = 16;
    /// The largest buffer kept: a rare large message does not pin its memory.
    pub const BYTES: usize = 64 << 10;

    /// Keep `buffer` if there is room for it (else it is freed).
    pub fn keep(&mut self, buffer: Vec<u8>) {
        if self.0.len() < Self::COUNT && (1..=Self::BYTES).contains(&buffer.capacity()) {
            self.0.push(buffer);
        }
    }

    /// A buffer kept, as it is, if any.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.0.pop()
    }

    /// An empty buffer: one kept if any (its capacity kept), else a new one.
    pub fn take(&mut self) -> Vec<u8> {
        let mut buffer = self.pop().unwrap_or_default();
        buffer.clear();
        buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_bounded_number_of_small_buffers_and_hands_them_back_empty() {
        let mut spare = SpareBuffers::default();
        assert_eq!(spare.take().capacity(), 0);
        spare.keep(Vec::new());
        spare.keep(vec![0; SpareBuffers::BYTES + 1]);
        assert_eq!(
            spare.take().capacity(),
            0,
            "empty and large buffers are not kept"
        );
        for _ in 0..2 * SpareBuffers::COUNT {
            spare.keep(vec![1; 100]);
        }
        assert_eq!(spare.0.len(), SpareBuffers::COUNT);
        let buffer = spare.take();
        assert!(buffer.is_empty() && buffer.capacity() >= 100);
    }
}
