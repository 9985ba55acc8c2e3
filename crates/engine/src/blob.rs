//! Large values: a value too large for a leaf is split into chunks kept in a hidden
//! B+tree, and the user's leaf holds a small descriptor in its place.
//!
//! The hidden tree is an ordinary table, created on the first large value and listed in
//! the catalog under the empty name, which no user table can have. A chunk's key is
//! `[table root u64 BE][key length u16 BE][user key][generation u8][chunk index u32 BE]`
//! and its value as much of the large value as an entry may hold, so a value's chunks
//! are adjacent, in order, and found from the user's key alone. The *generation* (0 or 1)
//! alternates: an overwrite writes the new value's chunks under the generation the old
//! one does not use, then deletes the old ones, all in one transaction. So the chunk keys
//! a value uses are the ones its predecessor used one overwrite earlier, and pages that
//! deletes emptied are filled again (nothing frees pages; keys that only grew, like
//! transaction ids, would leave every emptied leaf behind for good). In every committed
//! state, the generation a descriptor names is the only one with chunks for that key.
//!
//! Chunks are written and deleted as ordinary logged changes of the transaction that
//! writes the value (so rollback, restart undo, redo and torn-page protection need
//! nothing new), but without key-range locks of their own: the user's key, which every
//! reader and writer of the value locks, covers them. Overwriting or deleting a large
//! value deletes its chunks in the same transaction, and the old value it returns is
//! assembled from those deletes.
//!
//! Descriptor (the leaf cell's value, flagged [`crate::page::node::EXTERNAL`]), 18 bytes:
//! `[format u8 = 1][generation u8][length u64 LE][chunk bytes u32 LE][CRC32C of the value
//! u32 LE]`. Reading checks the chunks' total length and the CRC, so a missing or damaged
//! chunk is reported as corruption, never returned.

use crate::btree::{scan_batch, BatchEnd, Btree, ChangeLogger};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::lock::LockMode;
use crate::page::CellValue;
use std::ops::Bound;

// The sizes live with the limits they set (`options`, below this module).
pub(crate) use crate::page::{chunk_size, CHUNK_KEY_OVERHEAD, DESC_LEN};
const FORMAT: u8 = 1;

/// A large value's descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Descriptor {
    pub(crate) generation: u8,
    pub(crate) len: u64,
    pub(crate) chunk: u32,
    pub(crate) crc: u32,
}

impl Descriptor {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(DESC_LEN);
        b.push(FORMAT);
        b.push(self.generation);
        b.extend_from_slice(&self.len.to_le_bytes());
        b.extend_from_slice(&self.chunk.to_le_bytes());
        b.extend_from_slice(&self.crc.to_le_bytes());
        debug_assert_eq!(b.len(), DESC_LEN);
        b
    }

    /// Parses a descriptor; a malformed one is corruption (never a panic).
    pub(crate) fn decode(b: &[u8]) -> Result<Descriptor> {
        let bad = || {
            Error::Corruption(format!(
                "a large value's descriptor of {} bytes is malformed",
                b.len()
            ))
        };
        if b.len() != DESC_LEN || b[0] != FORMAT || b[1] > 1 {
            return Err(bad());
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let d = Descriptor {
            generation: b[1],
            len: u64::from_le_bytes(b[2..10].try_into().expect("8 bytes")),
            chunk: u32_at(10),
            crc: u32_at(14),
        };
        if d.chunk == 0 || d.chunks().is_none() {
            return Err(bad());
        }
        Ok(d)
    }

    /// How many chunks hold the value (`None` if more than chunk indexes can number).
    pub(crate) fn chunks(&self) -> Option<u32> {
        u32::try_from(self.len.div_ceil(u64::from(self.chunk.max(1)))).ok()
    }

    /// The range of keys holding this value's chunks, for the user's `key` of `table`.
    pub(crate) fn range(&self, table: PageId, key: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let n = self
            .chunks()
            .expect("a decoded descriptor counts its chunks");
        (
            Bound::Included(chunk_key(table, key, self.generation, 0)),
            Bound::Excluded(chunk_key(table, key, self.generation, n)),
        )
    }

    /// Checks a value assembled from the chunks against the descriptor.
    pub(crate) fn check(&self, value: &[u8]) -> Result<()> {
        if value.len() as u64 != self.len {
            return Err(Error::Corruption(format!(
                "a large value's chunks hold {} bytes, its descriptor says {}",
                value.len(),
                self.len
            )));
        }
        if crc32c::crc32c(value) != self.crc {
            return Err(Error::Corruption(format!(
                "a large value of {} bytes fails its checksum",
                self.len
            )));
        }
        Ok(())
    }
}

/// The key of chunk `i` of generation `generation` of the value of `key` in `table`.
pub(crate) fn chunk_key(table: PageId, key: &[u8], generation: u8, i: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(CHUNK_KEY_OVERHEAD + key.len());
    k.extend_from_slice(&table.0.to_be_bytes());
    k.extend_from_slice(&(key.len() as u16).to_be_bytes());
    k.extend_from_slice(key);
    k.push(generation);
    k.extend_from_slice(&i.to_be_bytes());
    k
}

/// Stores the chunks of the large value `value` of `key` in `table`, described by `d`,
/// in the hidden tree `blobs`, as changes `logger` logs, without locks of their own (the
/// user's key, locked by the caller, covers them).
pub(crate) fn write(
    blobs: &Btree<'_>,
    table: PageId,
    key: &[u8],
    d: &Descriptor,
    value: &[u8],
    logger: &mut dyn ChangeLogger,
) -> Result<()> {
    for (i, part) in value.chunks(d.chunk as usize).enumerate() {
        blobs.set(
            &chunk_key(table, key, d.generation, i as u32),
            Some(CellValue::inline(part)),
            logger,
        )?;
    }
    Ok(())
}

/// Deletes the chunks of the large value of `key` in `table`, described by `d`, from the
/// hidden tree `blobs`, as changes `logger` logs; returns the value they held (checked
/// against `d`; at most `max_value` bytes are reserved up front).
pub(crate) fn delete(
    blobs: &Btree<'_>,
    table: PageId,
    key: &[u8],
    d: &Descriptor,
    max_value: usize,
    logger: &mut dyn ChangeLogger,
) -> Result<Vec<u8>> {
    let n = d.chunks().expect("a decoded descriptor counts its chunks");
    let mut value = Vec::with_capacity(d.len.min(max_value as u64) as usize);
    for i in 0..n {
        let k = chunk_key(table, key, d.generation, i);
        match blobs.set(&k, None, logger)? {
            Some(c) if !c.external => value.extend_from_slice(&c.bytes),
            _ => {
                return Err(Error::Corruption(format!(
                    "chunk {i} of the large value of a key in table {table} is missing"
                )))
            }
        }
    }
    d.check(&value)?;
    Ok(value)
}

/// Reads the large value of `key` in `table`, described by `d`, from its chunks in the
/// hidden tree `blobs` (checked against `d`; at most `max_value` bytes are reserved up
/// front). The caller holds a lock on the key, so nobody changes them meanwhile; no page
/// latch is held between batches.
pub(crate) fn read(
    blobs: &Btree<'_>,
    table: PageId,
    key: &[u8],
    d: &Descriptor,
    max_value: usize,
) -> Result<Vec<u8>> {
    let mut value = Vec::with_capacity(d.len.min(max_value as u64) as usize);
    let (mut from, to) = d.range(table, key);
    let mut no_locks = |_: Option<&[u8]>, _: LockMode| Ok(());
    loop {
        let batch = scan_batch(blobs, as_ref(&from), as_ref(&to), 1024, &mut no_locks)?;
        for (_, c) in &batch.entries {
            if c.external || value.len() + c.bytes.len() > d.len as usize {
                return Err(Error::Corruption(format!(
                    "the chunks of a large value in table {table} exceed its {} bytes",
                    d.len
                )));
            }
            value.extend_from_slice(&c.bytes);
        }
        match (batch.end, batch.entries.last()) {
            (BatchEnd::More, Some((k, _))) => from = Bound::Excluded(k.clone()),
            _ => break,
        }
    }
    d.check(&value)?;
    Ok(value)
}

/// Deletes every chunk of every large value of `table` from the hidden tree `blobs`, as
/// changes `logger` logs (a dropped table's: the caller holds the table's drop lock, so
/// nobody reads or writes them). Returns how many it deleted.
pub(crate) fn delete_table(
    blobs: &Btree<'_>,
    table: PageId,
    logger: &mut dyn ChangeLogger,
) -> Result<u64> {
    let from = table.0.to_be_bytes().to_vec();
    let to = match table.0.checked_add(1) {
        Some(next) => Bound::Excluded(next.to_be_bytes().to_vec()),
        None => Bound::Unbounded,
    };
    let mut no_locks = |_: Option<&[u8]>, _: LockMode| Ok(());
    let mut deleted = 0;
    loop {
        let batch = scan_batch(
            blobs,
            Bound::Included(&from[..]),
            as_ref(&to),
            1024,
            &mut no_locks,
        )?;
        if batch.entries.is_empty() {
            return Ok(deleted);
        }
        for (k, _) in &batch.entries {
            blobs.set(k, None, logger)?;
            deleted += 1;
        }
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v),
        Bound::Excluded(v) => Bound::Excluded(v),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_bad_ones_are_errors() {
        let d = Descriptor {
            generation: 1,
            len: 5000,
            chunk: 2008,
            crc: 99,
        };
        let b = d.encode();
        assert_eq!(Descriptor::decode(&b).unwrap(), d);
        assert_eq!(d.chunks(), Some(3));
        assert!(Descriptor::decode(&b[..DESC_LEN - 1]).is_err());
        let mut z = b.clone();
        z[10..14].fill(0);
        assert!(Descriptor::decode(&z).is_err(), "zero chunk size accepted");
        let mut g = b.clone();
        g[1] = 2;
        assert!(Descriptor::decode(&g).is_err(), "generation 2 accepted");
        let mut f = b;
        f[0] = 9;
        assert!(Descriptor::decode(&f).is_err());
    }

    #[test]
    fn chunk_keys_order_by_chunk_and_never_mix_keys() {
        let t = PageId(5);
        assert!(chunk_key(t, b"a", 0, 1) < chunk_key(t, b"a", 0, 2));
        assert!(chunk_key(t, b"a", 0, u32::MAX) < chunk_key(t, b"a", 1, 0));
        // A longer key never falls inside a shorter key's range.
        let (lo, hi) = (chunk_key(t, b"a", 0, 0), chunk_key(t, b"a", 1, 0));
        let other = chunk_key(t, b"a\0\0\0\0", 0, 0);
        assert!(!(lo <= other && other < hi));
        assert_eq!(chunk_size(2024, 10), Some(2024 - 25));
        assert_eq!(chunk_size(232, 200), None);
    }
}
