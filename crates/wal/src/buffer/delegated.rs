//! `delegated` (CDME): Aether Algorithm 4 on top of the hybrid. A group's last member (or
//! a solo inserter) does not wait for its predecessors: if its range is not at the head of
//! the release queue it delegates the release to whoever gets there (`queue`) and returns.
//! So small records copied in the shadow of a large one leave at once instead of waiting
//! for it (Aether Figure 11).
//!
//! About 1 in 32 ranges keep their own release and wait for their turn instead: while such
//! an owner waits, the hand-off stops at its unmarked entry, so the thread at the head is
//! not kept on a treadmill of releasing for others. The wait only spins (about a
//! microsecond, and only when the released position is close) and then delegates after
//! all: a parked owner would have to be woken and scheduled before anything behind it
//! could be released, and with more threads than cores that wake-up would sit on the
//! critical path of the whole log. The choice is a
//! hash of the range's LSN — no random-number state on the insert path, and reproducible
//! under loom, where it picks every other 8-byte block so the models cover both paths.

use super::carray::{Consolidating, GroupRelease};
use super::queue::ReleaseQueue;
use super::BufferCore;
use crate::error::Result;
use crate::Lsn;

/// Releases through the delegation queue.
pub(crate) struct DelegatedRelease {
    queue: ReleaseQueue,
}

impl GroupRelease for DelegatedRelease {
    const SERIAL: bool = false;
    fn release(&self, core: &BufferCore, start: Lsn, end: Lsn) -> Result<()> {
        if keeps_release(start)
            && start.0 - core.released().0 <= NEAR_BYTES
            && core.spin_for_turn(start)
        {
            // The turn came while we waited: it is ours, and the hand-off stops at us.
            self.queue.release_from(core, start, end);
        } else {
            self.queue.finish(core, start, end);
        }
        Ok(())
    }
}

/// A range that keeps its release waits for its turn only if the released position is
/// this close: then a head is releasing towards it (the treadmill case, where taking over
/// matters) and the turn comes within the spin. Farther away, the gap is usually a
/// descheduled thread, and a spin would only burn the CPU that thread needs.
const NEAR_BYTES: u64 = 4 << 10;

/// True for the ranges whose owners do not delegate (about 1 in 32).
fn keeps_release(start: Lsn) -> bool {
    let block = start.0 / crate::frame::ALIGN;
    if cfg!(loom) {
        block % 2 == 1
    } else {
        // Fibonacci hashing: the top 5 bits of the product are well mixed.
        block.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59 == 0
    }
}

pub(crate) fn new(core: &BufferCore, start: Lsn, slots: usize) -> Consolidating<DelegatedRelease> {
    let release = DelegatedRelease {
        queue: ReleaseQueue::new(core, start),
    };
    Consolidating::new(core, start, slots, release)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn about_one_range_in_32_keeps_its_release() {
        let kept = (0..64_000u64)
            .filter(|&b| keeps_release(Lsn(b * 8)))
            .count();
        assert!((1_600..2_400).contains(&kept), "{kept} of 64000");
        // Consecutive small records are not all kept or all delegated.
        let run: Vec<bool> = (0..40u64).map(|b| keeps_release(Lsn(b * 24))).collect();
        assert!(run.iter().any(|&k| !k));
    }
}
