//! The control file: where the last complete checkpoint is.
//!
//! `CONTROL` holds magic, version, page size, the checkpoint's begin and end LSNs and a
//! CRC32C. It is replaced atomically: write `CONTROL.tmp`, sync it, rename it over
//! `CONTROL`, sync the directory. A crash leaves either the old or the new file.

use crate::error::{Error, Result};
use sluice_storage::{OpenOptions, Storage};
use sluice_wal::Lsn;
use std::path::Path;

const MAGIC: u64 = u64::from_le_bytes(*b"SLUICECF");
const VERSION: u32 = 1;
const LEN: usize = 40;
pub(crate) const NAME: &str = "CONTROL";
const TMP: &str = "CONTROL.tmp";

/// What the control file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Control {
    pub(crate) page_size: u32,
    /// The begin-checkpoint record: the redo point.
    pub(crate) begin: Lsn,
    /// The end-checkpoint record with the checkpoint's tables.
    pub(crate) end: Lsn,
}

impl Control {
    fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.page_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.begin.0.to_le_bytes());
        b[24..32].copy_from_slice(&self.end.0.to_le_bytes());
        let crc = crc32c::crc32c(&b[..32]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Result<Control, String> {
        if b.len() != LEN {
            return Err(format!("control file is {} bytes, not {LEN}", b.len()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8"));
        if u32_at(32) != crc32c::crc32c(&b[..32]) {
            return Err("control file checksum mismatch".into());
        }
        if u64_at(0) != MAGIC || u32_at(8) != VERSION {
            return Err("control file has a bad magic number or version".into());
        }
        let c = Control {
            page_size: u32_at(12),
            begin: Lsn(u64_at(16)),
            end: Lsn(u64_at(24)),
        };
        if c.begin >= c.end {
            return Err(format!(
                "control file: checkpoint {} ends at {}",
                c.begin, c.end
            ));
        }
        Ok(c)
    }

    /// Reads the control file, `None` if there is none (no checkpoint completed yet).
    pub(crate) fn read(storage: &dyn Storage, dir: &Path) -> Result<Option<Control>> {
        let path = dir.join(NAME);
        if !storage.exists(&path)? {
            return Ok(None);
        }
        let f = storage.open(&path, OpenOptions::EXISTING)?;
        let len = f.len()? as usize;
        if len > 4096 {
            return Err(Error::Corruption(format!("control file is {len} bytes")));
        }
        let mut b = vec![0u8; len];
        f.read_exact_at(&mut b, 0)?;
        Control::decode(&b).map(Some).map_err(Error::Corruption)
    }

    /// Atomically replaces the control file.
    pub(crate) fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<()> {
        let tmp = dir.join(TMP);
        let f = storage.open(
            &tmp,
            OpenOptions {
                create: true,
                create_new: false,
                truncate: true,
            },
        )?;
        f.write_at(&self.encode(), 0)?;
        f.sync_data()?;
        drop(f);
        storage.rename(&tmp, &dir.join(NAME))?;
        storage.sync_dir(dir)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_round_trips_and_rejects_damage() {
        let c = Control {
            page_size: 8192,
            begin: Lsn(4096),
            end: Lsn(4200),
        };
        let mut b = c.encode();
        assert_eq!(Control::decode(&b), Ok(c));
        b[20] ^= 4;
        assert!(Control::decode(&b).is_err());
        assert!(Control::decode(&b[..10]).is_err());
    }
}
