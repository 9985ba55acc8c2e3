//! Power loss: what of the unsynced state reaches the platter.
//!
//! Directory operations survive as a random *prefix* of the journal, because file systems
//! journal metadata in order; a directory whose creation is lost takes everything under
//! it along. File data survives sector by sector: each 512-byte sector
//! (aligned to absolute file offsets) of each unsynced write is kept, dropped or garbled,
//! the last unsynced write of a file may also be torn (only a prefix of its sectors
//! reaches the disk at all), and each unsynced length change (`set_len`, `allocate`) is
//! kept or dropped. All of it
//! is drawn from the seeded generator, in a fixed order, so a seed replays exactly.

use std::mem;

use rand::rngs::StdRng;
use rand::Rng;

use super::disk::Disk;
use super::inode::{apply_write, DataOp, Inode};

/// The unit in which a disk writes: a write either reaches a sector or not, never half.
pub(super) const SECTOR_BYTES: u64 = 512;

/// Out of 100: the chance that a sector of an unsynced write is kept, and (next band)
/// dropped; the rest are garbled. Dropping is common because unsynced data usually is
/// still in the page cache; garbling is rarer but must be tested for.
const KEEP_PERCENT: u32 = 50;
const DROP_PERCENT: u32 = 35;
const _: () = assert!(KEEP_PERCENT + DROP_PERCENT < 100);

/// One in this many "last unsynced writes" of a file is torn.
const TEAR_ONE_IN: u32 = 4;

/// What one sector of an unsynced write turns into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Keep,
    Drop,
    Garble,
}

fn roll_fate(rng: &mut StdRng) -> Fate {
    let roll = rng.gen_range(0..100u32);
    if roll < KEEP_PERCENT {
        Fate::Keep
    } else if roll < KEEP_PERCENT + DROP_PERCENT {
        Fate::Drop
    } else {
        Fate::Garble
    }
}

/// The sector-aligned pieces `[start, end)` of the byte range `offset..offset + len`.
fn sector_spans(offset: u64, len: u64) -> Vec<(u64, u64)> {
    let end = offset + len;
    let mut spans = Vec::new();
    let mut start = offset;
    while start < end {
        let sector_end = (start / SECTOR_BYTES + 1) * SECTOR_BYTES;
        let piece_end = sector_end.min(end);
        spans.push((start, piece_end));
        start = piece_end;
    }
    spans
}

/// Replays one unsynced write onto `image`, sector by sector, with random fates.
fn settle_write(image: &mut Vec<u8>, offset: u64, bytes: &[u8], may_tear: bool, rng: &mut StdRng) {
    let spans = sector_spans(offset, bytes.len() as u64);
    assert!(!spans.is_empty(), "empty writes are never pending");
    let reaching_disk = if may_tear && rng.gen_ratio(1, TEAR_ONE_IN) {
        rng.gen_range(0..spans.len())
    } else {
        spans.len()
    };
    for &(start, end) in &spans[..reaching_disk] {
        let piece = &bytes[(start - offset) as usize..(end - offset) as usize];
        match roll_fate(rng) {
            Fate::Keep => apply_write(image, start, piece),
            Fate::Drop => {}
            Fate::Garble => {
                let mut junk = vec![0u8; piece.len()];
                rng.fill(&mut junk[..]);
                apply_write(image, start, &junk);
            }
        }
    }
}

/// Decides what of an inode's unsynced changes survive; afterwards the inode has nothing
/// pending and its volatile image equals its durable one. Orphaned writes (dropped from
/// write-back by a failed sync) are not pending: they vanish with the cache.
fn settle_inode(inode: &mut Inode, rng: &mut StdRng) {
    let last_write = inode
        .pending
        .iter()
        .rposition(|op| matches!(op, DataOp::Write { .. }));
    let mut image = mem::take(&mut inode.durable);
    for (index, op) in mem::take(&mut inode.pending).into_iter().enumerate() {
        match op {
            // An unsynced length change, `allocate`'s included, is kept or dropped.
            op @ (DataOp::SetLen(_) | DataOp::Allocate(_)) => {
                if rng.gen_bool(0.5) {
                    op.apply(&mut image);
                }
            }
            DataOp::Write { offset, bytes } => {
                let may_tear = Some(index) == last_write;
                settle_write(&mut image, offset, &bytes, may_tear, rng);
            }
        }
    }
    inode.volatile = image.clone();
    inode.durable = image;
    inode.orphaned = false;
    inode.open_handles = 0;
}

impl Disk {
    /// Power loss. The name space becomes the durable one plus a random prefix of the
    /// journal, less whatever lies under a lost directory; then unreferenced inodes are
    /// freed; then each surviving inode's unsynced changes meet their fates. Inodes are
    /// visited in id order, so a seed replays.
    pub(super) fn crash(&mut self, rng: &mut StdRng) {
        let journal = mem::take(&mut self.journal);
        let surviving = rng.gen_range(0..=journal.len());
        for op in &journal[..surviving] {
            op.apply(&mut self.durable);
        }
        self.settle_namespace();
        // No handle outlives a crash; the storage layer makes the old ones stale.
        for inode in self.inodes.values_mut() {
            inode.open_handles = 0;
        }
        self.free_unreferenced();
        for inode in self.inodes.values_mut() {
            settle_inode(inode, rng);
        }
        assert!(self.journal.is_empty());
        assert!(self
            .live
            .entries
            .values()
            .all(|inode| self.inodes.contains_key(inode)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_spans_follow_absolute_sector_boundaries() {
        assert_eq!(sector_spans(0, 512), [(0, 512)]);
        assert_eq!(sector_spans(500, 30), [(500, 512), (512, 530)]);
        assert_eq!(
            sector_spans(100, 1024),
            [(100, 512), (512, 1024), (1024, 1124)]
        );
        assert_eq!(sector_spans(1024, 1), [(1024, 1025)]);
        assert!(sector_spans(7, 0).is_empty());
    }
}
