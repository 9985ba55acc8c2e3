//! The control file: what identifies a directory as a sluice database, and where its last
//! complete checkpoint is.
//!
//! `CONTROL` (format version 3, 64 bytes, little-endian):
//!
//! | offset | size | field                                                          |
//! |-------:|-----:|----------------------------------------------------------------|
//! | 0      | 8    | magic `SLUICECF`                                               |
//! | 8      | 4    | format version (3; 2 is read too)                              |
//! | 12     | 4    | page size                                                      |
//! | 16     | 8    | database id (random, chosen at creation; for tools)            |
//! | 24     | 4    | flags: bit 0 = a checkpoint is recorded; other bits zero       |
//! | 28     | 4    | zero                                                           |
//! | 32     | 8    | the checkpoint's begin record (its redo point), or 0           |
//! | 40     | 8    | the checkpoint's end record, or 0                              |
//! | 48     | 8    | data-file length made durable by that checkpoint's sync        |
//! | 56     | 4    | CRC32C of bytes 0..56                                          |
//! | 60     | 4    | zero                                                           |
//!
//! The version is the database's: version 3 logs transaction records in the compact form
//! of `log_record` (varints, updates as deltas); version 2 wrote them fixed-width. This
//! sluice reads both forms, so it opens a version 2 database, recovers its log, and
//! writes version 3 at its next checkpoint (the first one is at the end of that open);
//! a sluice that reads only version 2 refuses a version 3 `CONTROL` by name instead of
//! meeting record types it does not know in recovery. Record tags added since (entry
//! counts; commit times, issue 26) came without a new version: they only add forms, every
//! record an older sluice wrote still decodes, and an older sluice meeting a new tag
//! fails recovery with "unknown record type", loudly.
//!
//! Creating a database writes it first, in the "created, no checkpoint yet" state, before
//! the log and the data file exist: a directory without `CONTROL` never holds a sluice
//! database, only (at most) the leftovers of a creation that did not get that far. It is
//! replaced atomically: write `CONTROL.tmp`, sync it, rename it over `CONTROL`, sync the
//! directory. A crash leaves either the old or the new file.

use crate::data_file::{file_error, write_durably};
use crate::error::{Error, Result};
use crate::page::{MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::Lsn;
use std::path::Path;

const MAGIC: u64 = u64::from_le_bytes(*b"SLUICECF");
const VERSION: u32 = 3;
/// The earlier version this one still opens (see the module docs).
const READ_VERSION: u32 = 2;
const LEN: usize = 64;
const CRC_AT: usize = 56;
const FLAG_CHECKPOINT: u32 = 1;
/// The control file's name.
pub(crate) const NAME: &str = "CONTROL";
/// The name it is written under before the rename that replaces it.
pub(crate) const TMP: &str = "CONTROL.tmp";

/// A complete checkpoint: recovery starts from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// The begin-checkpoint record: the redo point.
    pub(crate) begin: Lsn,
    /// The end-checkpoint record with the checkpoint's tables.
    pub(crate) end: Lsn,
}

/// What the control file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Control {
    pub(crate) page_size: u32,
    /// Chosen at random when the database is created; never changes.
    pub(crate) database_id: u64,
    /// The last complete checkpoint (`None`: created, no checkpoint yet).
    pub(crate) checkpoint: Option<Checkpoint>,
    /// The data file's length when that checkpoint's sync made it durable: the file can
    /// only be longer (it never shrinks), so a shorter one has been damaged.
    pub(crate) data_len: u64,
}

impl Control {
    /// The control file of a database being created.
    pub(crate) fn created(page_size: usize) -> Control {
        Control {
            page_size: u32::try_from(page_size).expect("page sizes are at most 32 KiB"),
            database_id: rand::random(),
            checkpoint: None,
            data_len: 0,
        }
    }

    pub(crate) fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        let (flags, begin, end) = match self.checkpoint {
            Some(c) => (FLAG_CHECKPOINT, c.begin.0, c.end.0),
            None => (0, 0, 0),
        };
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.page_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.database_id.to_le_bytes());
        b[24..28].copy_from_slice(&flags.to_le_bytes());
        b[32..40].copy_from_slice(&begin.to_le_bytes());
        b[40..48].copy_from_slice(&end.to_le_bytes());
        b[48..56].copy_from_slice(&self.data_len.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CRC_AT]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(Control::decode(&b), Ok(*self));
        b
    }

    /// Parses a control file. Never panics, whatever the bytes.
    pub(crate) fn decode(b: &[u8]) -> Result<Control, String> {
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let version = |b: &[u8]| u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
        if b.len() >= 12 && u64_at(0) == MAGIC && ![VERSION, READ_VERSION].contains(&version(b)) {
            return Err(format!(
                "format version {} is not supported (this sluice reads versions \
                 {READ_VERSION} and {VERSION})",
                version(b)
            ));
        }
        if b.len() != LEN {
            return Err(format!("{} bytes, not {LEN}", b.len()));
        }
        if u32_at(CRC_AT) != crc32c::crc32c(&b[..CRC_AT]) {
            return Err("checksum mismatch".into());
        }
        if u64_at(0) != MAGIC {
            return Err("bad magic number".into());
        }
        let page_size = u32_at(12);
        let size = page_size as usize;
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&size) || !size.is_power_of_two() {
            return Err(format!("page size {page_size} is not a valid page size"));
        }
        let flags = u32_at(24);
        if flags & !FLAG_CHECKPOINT != 0 || u32_at(28) != 0 || u32_at(60) != 0 {
            return Err(format!("unknown flags {flags:#x} or reserved bytes set"));
        }
        let (begin, end) = (Lsn(u64_at(32)), Lsn(u64_at(40)));
        let checkpoint = if flags & FLAG_CHECKPOINT != 0 {
            if begin >= end {
                return Err(format!("checkpoint {begin} ends at {end}"));
            }
            Some(Checkpoint { begin, end })
        } else {
            if begin.0 != 0 || end.0 != 0 {
                return Err("checkpoint LSNs set without a checkpoint".into());
            }
            None
        };
        let data_len = u64_at(48);
        if !data_len.is_multiple_of(u64::from(page_size)) {
            return Err(format!(
                "data file length {data_len} is not a whole number of {page_size}-byte pages"
            ));
        }
        Ok(Control {
            page_size,
            database_id: u64_at(16),
            checkpoint,
            data_len,
        })
    }

    /// Reads the control file in `dir`, `None` if there is none.
    pub(crate) fn read(storage: &dyn Storage, dir: &Path) -> Result<Option<Control>> {
        Control::read_with(storage, dir, false)
    }

    /// [`Control::read`] for a read-only database: the file is opened read-only, and
    /// settled through that handle as [`Control::read`] settles it (a sync writes no
    /// byte; see `sluice_storage::settle`).
    pub(crate) fn read_only(storage: &dyn Storage, dir: &Path) -> Result<Option<Control>> {
        Control::read_with(storage, dir, true)
    }

    fn read_with(storage: &dyn Storage, dir: &Path, read_only: bool) -> Result<Option<Control>> {
        let path = dir.join(NAME);
        let io = |e| file_error("control file", &path, e);
        if !storage.exists(&path).map_err(io)? {
            return Ok(None);
        }
        let how = if read_only {
            OpenOptions::READ_ONLY
        } else {
            OpenOptions::EXISTING
        };
        let f = storage.open(&path, how).map_err(io)?;
        // Read what the device holds, not what a dead process left in the cache (see
        // `DataFile::open`): sync, then drop the cached pages — read-only too, through the
        // read-only handle, or a read-only open could act on a control file a power loss
        // then takes back.
        sluice_storage::settle(&*f, read_only).map_err(io)?;
        let len = f.len().map_err(io)?;
        // Bounded before allocating: a damaged length must not become a huge buffer.
        let mut b = vec![0u8; len.min(LEN as u64 + 1) as usize];
        f.read_exact_at(&mut b, 0).map_err(io)?;
        if len > LEN as u64 {
            return Err(Error::Corruption(format!(
                "control file {} is {len} bytes, not {LEN}",
                path.display()
            )));
        }
        Control::decode(&b)
            .map(Some)
            .map_err(|e| Error::Corruption(format!("control file {}: {e}", path.display())))
    }

    /// Atomically replaces (or creates) the control file in `dir`.
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        write_durably(
            storage,
            dir,
            (TMP, NAME),
            &self.encode(),
            "control file",
            Some(sluice_storage::failpoint::CONTROL_RENAMED),
        )
    }
}

/// The control file. One that decodes re-encodes to a file that decodes to it. A 65th
/// byte with its low bit set asks for the first 64 bytes' checksum to be rewritten first,
/// so that inputs reach the checks behind it.
pub(crate) fn fuzz(data: &[u8]) {
    let mut file = data.to_vec();
    if let Some((&flag, rest)) = data.split_last() {
        if rest.len() == 64 {
            file.truncate(64);
            if flag & 1 != 0 {
                let crc = crc32c::crc32c(&file[..56]);
                file[56..60].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    if let Ok(c) = Control::decode(&file) {
        assert_eq!(Control::decode(&c.encode()), Ok(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Control {
        Control {
            page_size: 8192,
            database_id: 0x1234_5678_9abc_def0,
            checkpoint: Some(Checkpoint {
                begin: Lsn(4096),
                end: Lsn(4200),
            }),
            data_len: 16 * 8192,
        }
    }

    #[test]
    fn control_round_trips_and_rejects_damage() {
        let c = sample();
        let mut b = c.encode();
        assert_eq!(Control::decode(&b), Ok(c));
        let created = Control::created(1024);
        assert_eq!(Control::decode(&created.encode()), Ok(created));
        b[20] ^= 4;
        assert!(Control::decode(&b).is_err());
        assert!(Control::decode(&b[..10]).is_err());
    }

    #[test]
    fn version_1_is_refused_by_name() {
        let mut b = [0u8; 40];
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        let e = Control::decode(&b).unwrap_err();
        assert!(e.contains("format version 1"), "{e}");
    }

    #[test]
    fn version_2_opens_and_is_rewritten_as_version_3() {
        // Version 2's log records still decode (log_record.rs), so its CONTROL is read;
        // the next one written says 3.
        let mut b = sample().encode();
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 3);
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CRC_AT]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Control::decode(&b), Ok(sample()));
        b[8..12].copy_from_slice(&4u32.to_le_bytes());
        let e = Control::decode(&b).unwrap_err();
        assert!(e.contains("format version 4"), "{e}");
    }

    #[test]
    fn fields_that_cannot_be_are_refused_with_a_valid_checksum() {
        let reseal = |mut c: [u8; LEN]| {
            let crc = crc32c::crc32c(&c[..CRC_AT]);
            c[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            c
        };
        let good = sample().encode();
        for (at, v) in [(12, 3000u64), (12, 0), (24, 2), (32, 5000), (48, 100)] {
            let mut b = good;
            let w = if at == 12 || at == 24 { 4 } else { 8 };
            b[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
            assert!(Control::decode(&reseal(b)).is_err(), "field at {at} = {v}");
        }
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Control::decode(&bytes);
        }

        #[test]
        fn decode_of_mutated_files_never_panics(pos in 0usize..LEN, x in 1u8..) {
            let mut b = sample().encode();
            b[pos] ^= x;
            // Any single-byte change is caught (the CRC covers every used byte; the
            // unused ones must be zero).
            prop_assert!(Control::decode(&b).is_err());
            // And resealed, the decoder still either refuses or round-trips.
            let crc = crc32c::crc32c(&b[..CRC_AT]);
            b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            if let Ok(c) = Control::decode(&b) {
                prop_assert_eq!(Control::decode(&c.encode()), Ok(c));
            }
        }

        #[test]
        fn every_control_round_trips(
            shift in 0u32..6,
            database_id in any::<u64>(),
            checkpoint in proptest::option::of((0u64..u64::MAX - 1, 1u64..1 << 40)),
            pages in 0u64..1 << 40,
        ) {
            let page_size = (crate::page::MIN_PAGE_SIZE << shift) as u32;
            let c = Control {
                page_size,
                database_id,
                checkpoint: checkpoint.map(|(b, d)| Checkpoint {
                    begin: Lsn(b),
                    end: Lsn(b.saturating_add(d).max(b + 1)),
                }),
                data_len: pages * u64::from(page_size),
            };
            prop_assert_eq!(Control::decode(&c.encode()), Ok(c));
        }

        #[test]
        fn damaged_files_resealed_or_not_never_panic(
            ms in crate::mutations::mutations(4),
            reseal in any::<bool>(),
        ) {
            let mut b = sample().encode().to_vec();
            crate::mutations::apply(&mut b, &ms);
            if reseal && b.len() >= CRC_AT + 4 {
                let crc = crc32c::crc32c(&b[..CRC_AT]);
                b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            }
            crate::alloc_probe::assert_bounded(&b, fuzz);
        }
    }
}
