//! How large a record may be: the bound the engine's options are checked against (options
//! whose log could not hold the largest record are refused at open, `db/open.rs`), and the
//! encoder's self-check that every record it writes keeps within that bound.

use super::wire::{MAX_LEN_VARINT, MAX_VARINT};
use super::{Change, PageOp, Record};
use crate::page::Limits;
use crate::page::{image_page_size, MAX_PAGE_SIZE, MIN_PAGE_SIZE};

/// Bytes of one page in an `Images` record: page id, length, and a compact image of at
/// most the whole page plus its 8-byte hole header.
const fn image_entry_bytes(page_size: usize) -> usize {
    8 + 4 + 8 + page_size
}

/// The most pages one `Images` record carries: a split logs the node, its new sibling,
/// the parent and the meta page (a root split: the root, two new children, the meta
/// page), plus the free-list page it took ids from (`space`); creating a database or a
/// table logs two or three, a torn-page image one; freeing pages logs the meta page and
/// at most four free-list pages.
pub(super) const MAX_IMAGES_PER_RECORD: usize = 5;

/// Participants a coordinated commit names at most (one per log manager).
pub const MAX_PARTICIPANTS: usize = 64;
/// Encoded bytes of one participant, at most (two 10-byte varints and an LSN).
const PARTICIPANT_BYTES: usize = 28;

/// The largest record about pages the engine writes with pages of `page_size` bytes:
/// the larger of a split's `Images` record and an `Update` whose key, old and new value
/// are as large as [`Limits`] allow (a `Clr` carries at most as much: one whole value,
/// or a delta of two, and one varint more).
fn max_page_record_bytes(page_size: usize) -> usize {
    let images = 1 + 4 + MAX_IMAGES_PER_RECORD * image_entry_bytes(page_size);
    // key + old and key + new are each at most max_entry, so all three at most twice it.
    // Numbers: txn, prev, page, tree (or undo next), and a delta's offset and tail.
    let entry = Limits::for_page_size(page_size).max_entry;
    let update = 1 + 6 * MAX_VARINT + 1 + 3 * MAX_LEN_VARINT + 2 * entry;
    images.max(update)
}

/// Bytes of an `EndCheckpoint` record with `active` transactions and `dirty` pages (and
/// the commit clock).
const fn checkpoint_record_bytes(active: usize, dirty: usize) -> usize {
    1 + 8 + 8 + 4 + 24 * active + 4 + 16 * dirty + 8
}

/// The largest record the engine writes with pages of `page_size` bytes and a pool of
/// `pool_pages` frames (so at most that many dirty pages in a checkpoint record),
/// counting no active transactions: each adds 24 bytes to a checkpoint record, and a
/// log that holds this has room for thousands.
pub(crate) fn max_record_bytes(page_size: usize, pool_pages: usize) -> usize {
    max_page_record_bytes(page_size).max(checkpoint_record_bytes(0, pool_pages))
}

/// For the encoder's self-check: the smallest page size whose records could carry
/// `key` with values of these lengths (the bound grows with the page size, so a record
/// must fit the bound of the smallest page that admits it).
fn smallest_page_for(key: usize, values: &[usize]) -> usize {
    let mut size = MIN_PAGE_SIZE;
    while size < MAX_PAGE_SIZE {
        let l = Limits::for_page_size(size);
        if key <= l.max_key && values.iter().all(|v| key + v <= l.max_entry) {
            break;
        }
        size *= 2;
    }
    size
}

impl Record {
    /// The bound [`max_record_bytes`] promises for this record, given what it carries
    /// (the self-check of that promise in [`Record::encode`]).
    pub(super) fn bound(&self) -> usize {
        match self {
            Record::Update { key, change, .. } => {
                let values = match change {
                    Change::Insert { value } => vec![value.bytes.len()],
                    Change::Update { old, new } => vec![old.bytes.len(), new.bytes.len()],
                    Change::Patch { delta } => vec![delta.old_len(), delta.new_len()],
                    Change::Delete { old } => vec![old.bytes.len()],
                };
                max_page_record_bytes(smallest_page_for(key.len(), &values))
            }
            Record::Clr { op, .. } => {
                let (key, values) = match op {
                    PageOp::Insert { key, value } | PageOp::Set { key, value } => {
                        (key.len(), vec![value.bytes.len()])
                    }
                    PageOp::Patch { key, delta } => {
                        (key.len(), vec![delta.old_len(), delta.new_len()])
                    }
                    PageOp::Remove { key } => (key.len(), vec![]),
                };
                max_page_record_bytes(smallest_page_for(key, &values))
            }
            Record::Images { pages } => {
                if pages.len() > MAX_IMAGES_PER_RECORD {
                    return 0;
                }
                // The page size an image was taken from (0 for a malformed image: tests
                // encode such records on purpose).
                let size = pages.iter().map(|(_, i)| image_page_size(i)).max();
                let size = size.unwrap_or(0).clamp(MIN_PAGE_SIZE, MAX_PAGE_SIZE);
                max_page_record_bytes(size.next_power_of_two())
            }
            Record::EndCheckpoint(c) => checkpoint_record_bytes(c.active.len(), c.dirty.len()),
            Record::Commit { .. }
            | Record::End { .. }
            | Record::BeginCheckpoint
            | Record::TreeCount { .. } => max_page_record_bytes(MIN_PAGE_SIZE),
            Record::Coordinated { .. } => {
                max_page_record_bytes(MIN_PAGE_SIZE) + MAX_PARTICIPANTS * PARTICIPANT_BYTES
            }
        }
    }
}
