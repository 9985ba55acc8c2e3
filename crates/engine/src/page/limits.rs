//! The size limits the page format puts on keys and values ([`Limits`]), and the sizes
//! of a large value's chunks that follow from them (`crate::blob` stores a value too
//! large for its leaf apart, in chunks, each an entry of a hidden tree). They live with
//! the page format because they are derived from it; `blob`, `store` and the log-record
//! limits import them from here (below them all, so no import circle).

use super::HEADER_LEN;

/// Size limits of keys and values. Keys, and entries stored in the leaf, are bounded by
/// the page size so that every leaf holds at least four entries and every internal node
/// at least four separators (which keeps splits simple: one split always makes room).
/// A value too large for its leaf (key plus value above `max_entry`) is stored apart, in
/// chunks, up to `max_value` bytes; its key may then be at most `max_large_key` bytes
/// (the chunks' keys contain it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest key.
    pub max_key: usize,
    /// The longest key plus value stored in the leaf itself; larger values are stored
    /// apart.
    pub max_entry: usize,
    /// The longest value (1 GiB). The whole value is held in memory by `put` and `get`,
    /// and overwriting or deleting it keeps the old one in memory for rollback.
    pub max_value: usize,
    /// The longest key of a value stored apart (`max_entry - 79`, capped at `max_key`:
    /// 1,024 with 8 KiB pages).
    pub max_large_key: usize,
}

/// The longest value, whatever the page size.
pub const MAX_VALUE: usize = 1 << 30;

/// Bytes of a large value's descriptor (`crate::blob`).
pub(crate) const DESC_LEN: usize = 18;
/// Bytes of a large value's chunk key besides the user's key (`crate::blob`).
pub(crate) const CHUNK_KEY_OVERHEAD: usize = 15;
/// The fewest value bytes a chunk may carry: a key so long that chunks would be smaller
/// cannot have a large value.
pub(crate) const MIN_CHUNK: usize = 64;

/// The chunk size for a user key of `key_len` bytes when entries may be `max_entry`
/// bytes; `None` if the key is too long for a large value.
pub(crate) fn chunk_size(max_entry: usize, key_len: usize) -> Option<usize> {
    let room = max_entry.checked_sub(CHUNK_KEY_OVERHEAD + key_len)?;
    (room >= MIN_CHUNK && key_len + DESC_LEN <= max_entry).then_some(room)
}

impl Limits {
    /// The bytes of a large value each of its chunks holds (the last holds the rest),
    /// for a key of `key_len` bytes; `None` if such a key is too long for a large value
    /// (above `max_large_key`).
    pub fn chunk_len(&self, key_len: usize) -> Option<usize> {
        chunk_size(self.max_entry, key_len)
    }

    /// The limits for pages of `page_size` bytes.
    pub fn for_page_size(page_size: usize) -> Limits {
        // Four cells of (cell header + slot + payload) must fit the page body; the
        // larger cell header is the internal one (10 bytes), plus a 2-byte slot.
        let max_entry = (page_size - HEADER_LEN) / 4 - 12;
        Limits {
            max_key: max_entry.min(1024),
            max_entry,
            max_value: MAX_VALUE,
            max_large_key: max_entry
                .saturating_sub(CHUNK_KEY_OVERHEAD + MIN_CHUNK)
                .min(max_entry.min(1024)),
        }
    }
}

/// The deepest a tree may be; a longer path means a cycle in corrupt pages.
pub(crate) const MAX_DEPTH: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_leave_room_for_four_cells() {
        for size in [1024, 4096, 8192, 32768] {
            let l = Limits::for_page_size(size);
            assert!(4 * (l.max_entry + 12) <= size - HEADER_LEN);
            assert!(l.max_key <= l.max_entry);
            assert!(chunk_size(l.max_entry, l.max_large_key).is_some());
            assert!(
                chunk_size(l.max_entry, l.max_large_key + 1).is_none()
                    || l.max_large_key == l.max_key
            );
        }
        assert_eq!(Limits::for_page_size(8192).max_key, 1024);
    }
}
