//! The shape of a log buffer: what [`LogBuffer::new`](super::LogBuffer::new) checks and
//! the core is built from.

use super::InsertVariant;

/// How a log buffer is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferOptions {
    /// Ring bytes; rounded up to a power of two.
    pub capacity: usize,
    /// LSN bytes per segment; frames never cross a multiple of this.
    pub segment_bytes: u64,
    /// The insertion algorithm.
    pub variant: InsertVariant,
    /// Slots in the consolidation array (variants that consolidate); at least 1.
    pub slots: usize,
}

impl BufferOptions {
    /// Most consolidation-array slots (each is a few cache lines; Aether found 3–4 best).
    pub const MAX_SLOTS: usize = 64;
}

impl Default for BufferOptions {
    fn default() -> Self {
        BufferOptions {
            capacity: 8 << 20,
            segment_bytes: 64 << 20,
            variant: InsertVariant::for_this_machine(),
            slots: 4,
        }
    }
}
