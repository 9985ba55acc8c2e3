//! Format version 2's transaction records: read, never written.
//!
//! A database of format version 2 (`control.rs`) wrote its update, compensation, commit
//! and end records with tags 1–4 and fixed-width fields: numbers of 8 bytes, keys with a
//! 4-byte length, a value's length in 4 bytes with [`EXTERNAL_FLAG`] for a descriptor, an
//! optional LSN as a flag byte and 8 bytes, and no patches. Its other records are the same
//! as version 3's. The one decoder (`codec.rs`) reads such a record when its tag names
//! version 2, taking from here only the fields whose form differs, so that a log written
//! before the change still recovers.

use super::wire::{Reader, MAX_FIELD};
use crate::page::StoredValue;
use sluice_wal::Lsn;

/// The tags of format version 2's transaction records.
pub(super) const TAG_UPDATE: u8 = 1;
pub(super) const TAG_CLR: u8 = 2;
pub(super) const TAG_COMMIT: u8 = 3;
pub(super) const TAG_END: u8 = 4;

/// In a value's length field: the value is a large value's descriptor.
pub(super) const EXTERNAL_FLAG: u32 = 1 << 31;

/// A leaf value: its length in 4 bytes, [`EXTERNAL_FLAG`] set for a descriptor; its bytes.
pub(super) fn value(r: &mut Reader<'_>) -> Result<StoredValue, String> {
    let field = r.u32()?;
    let n = (field & !EXTERNAL_FLAG) as usize;
    if n > MAX_FIELD {
        return Err(format!("record field of {n} bytes"));
    }
    Ok(StoredValue {
        bytes: r.take(n)?.to_vec(),
        external: field & EXTERNAL_FLAG != 0,
    })
}

/// An optional record LSN: a flag byte (0 none, 1 some), then the LSN in 8 bytes.
pub(super) fn opt_lsn(r: &mut Reader<'_>) -> Result<Option<Lsn>, String> {
    match r.u8()? {
        0 => Ok(None),
        1 => match r.u64()? {
            l if l.is_multiple_of(8) => Ok(Some(Lsn(l))),
            l => Err(format!("record LSN {l} is not 8-aligned")),
        },
        f => Err(format!("bad LSN flag {f}")),
    }
}
