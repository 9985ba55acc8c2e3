//! Files of the database directory other than the pages: the error that names a file,
//! and the durable small-file writer (control file, partition manifest and markers). The
//! data file itself belongs to the buffer pool (`buffer_pool::DataFile`), the only code
//! that writes pages. (A lower layer than the buffer pool: it imports nothing of it.)

use crate::error::{Error, Result};
use sluice_storage::{FileHandle, OpenOptions, Storage};
use std::io;
use std::path::Path;

/// An I/O error about the file at `path`, saying which file (`what`) it is: the kind is
/// kept, so ENOSPC stays `StorageFull`.
pub(crate) fn file_error(what: &str, path: &Path, e: io::Error) -> Error {
    Error::from(io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

/// Reads `buf.len()` bytes of the data file `f` from `at` as every reader of pages reads
/// them: the bytes past the file's end are zeros. The buffer pool reads its pages so (a
/// page allocated and never written reads as zeros; so does the tail of a page the file
/// ends inside, which a power loss leaves when a page written past the old end reaches
/// the disk only in its first sectors — valid if the sectors lost held zeros, as those of
/// an empty node do), and so must every copy of the data file (a backup's), or it would
/// leave out a page the database holds.
pub(crate) fn read_pages(f: &dyn FileHandle, buf: &mut [u8], at: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = f.read_at(&mut buf[done..], at + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    buf[done..].fill(0);
    Ok(())
}

/// Writes a file whole under a temporary name and moves it into place: `write` fills
/// `tmp` (created, or truncated), which is synced, closed and renamed to `path`. The
/// directory is not synced: the caller does, when the new name must be durable. `io`
/// names the file in the errors of these steps. Returns what `write` returned.
pub(crate) fn write_and_rename<T>(
    storage: &dyn Storage,
    (tmp, path): (&Path, &Path),
    io: impl Fn(io::Error) -> Error + Copy,
    write: impl FnOnce(&dyn FileHandle) -> Result<T>,
) -> Result<T> {
    let f = storage
        .open(
            tmp,
            OpenOptions {
                truncate: true,
                ..OpenOptions::CREATE
            },
        )
        .map_err(io)?;
    let out = write(&*f)?;
    f.sync_data().map_err(io)?;
    drop(f);
    storage.rename(tmp, path).map_err(io)?;
    Ok(out)
}

/// Writes a small file durably: `bytes` into `dir/tmp` (created or truncated), synced,
/// renamed to `dir/name`, and the directory synced; errors name the file as `what`.
/// `renamed` names the failure point between the rename and the directory sync.
pub(crate) fn write_durably(
    storage: &dyn Storage,
    dir: &Path,
    (tmp, name): (&str, &str),
    bytes: &[u8],
    what: &str,
    renamed: Option<&'static str>,
) -> Result<()> {
    let path = dir.join(name);
    let io = |e| file_error(what, &path, e);
    write_and_rename(storage, (&dir.join(tmp), &path), io, |f| {
        f.write_at(bytes, 0).map_err(io)
    })?;
    if let Some(point) = renamed {
        storage.failpoint(point, &path).map_err(io)?;
    }
    storage.sync_dir(dir).map_err(io)?;
    Ok(())
}
