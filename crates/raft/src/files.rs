//! Small files written whole and replaced atomically, through the storage seam: the
//! state machine's `CURRENT` pointer and its snapshots.
//!
//! A file is `MAGIC`, a CRC32C of the body, the body's length, then the body; it is
//! written to `NAME.tmp`, synced, renamed over `NAME`, and the directory synced, so
//! after a crash `NAME` is either the old file or the new one, whole.

use std::io;
use std::path::Path;

use sluice_storage::{OpenOptions, Storage};

const MAGIC: &[u8; 8] = b"SLUICERF";
const HEADER: usize = 8 + 4 + 8;

/// Writes `body` to `dir/name` atomically and durably.
pub(crate) fn write_atomic(
    storage: &dyn Storage,
    dir: &Path,
    name: &str,
    body: &[u8],
) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut bytes = Vec::with_capacity(HEADER + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
    bytes.extend_from_slice(body);
    {
        let f = storage.open(
            &tmp,
            OpenOptions {
                create: true,
                truncate: true,
                ..OpenOptions::EXISTING
            },
        )?;
        f.write_at(&bytes, 0)?;
        f.sync_data()?;
    }
    storage.rename(&tmp, &dir.join(name))?;
    storage.sync_dir(dir)
}

/// Reads what [`write_atomic`] wrote at `path`; `None` if there is no file. Damage is an
/// [`io::ErrorKind::InvalidData`] error naming the file.
pub(crate) fn read_checked(storage: &dyn Storage, path: &Path) -> io::Result<Option<Vec<u8>>> {
    if !storage.exists(path)? {
        return Ok(None);
    }
    let f = storage.open(path, OpenOptions::READ_ONLY)?;
    let len = f.len()? as usize;
    let damaged = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {why}", path.display()),
        )
    };
    if len < HEADER {
        return Err(damaged("shorter than its header"));
    }
    let mut bytes = vec![0; len];
    f.read_exact_at(&mut bytes, 0)?;
    if &bytes[..8] != MAGIC {
        return Err(damaged("not a sluice-raft file"));
    }
    let crc = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let body_len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    if body_len != (len - HEADER) as u64 {
        return Err(damaged("its length does not match its header"));
    }
    let body = bytes.split_off(HEADER);
    if crc32c::crc32c(&body) != crc {
        return Err(damaged("checksum mismatch"));
    }
    Ok(Some(body))
}

/// Removes every file under `dir`, depth first (directories stay, empty).
pub(crate) fn clear_dir(storage: &dyn Storage, dir: &Path) -> io::Result<()> {
    if !storage.exists(dir)? {
        return Ok(());
    }
    for name in storage.list(dir)? {
        let path = dir.join(&name);
        match storage.list(&path) {
            Ok(_) => clear_dir(storage, &path)?,
            Err(_) => storage.remove(&path)?,
        }
    }
    storage.sync_dir(dir)
}
