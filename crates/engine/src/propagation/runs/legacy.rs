//! The run directory's name, and the name it had before: until issue 23 the sorted runs
//! lived in `archive/` of the database directory, a word the WAL's segment archiver now
//! has to itself. A read-write open moves an old `archive/` to `runs/` ([`adopt`])
//! before it opens the run store, whatever the strategy (a database may change strategy
//! between opens). A read-only open never opens the run store (restart recovery replays
//! the log, never the runs), so it reads nothing there and leaves either name as it is.
//!
//! The move is one rename of the directory, then a sync of the database directory. A
//! crash between leaves the runs under one of the two names (a rename is atomic), with
//! everything in them: under the old one the next read-write open moves them again,
//! under the new one there is nothing left to do. Both names at once do not come from a
//! crash: the rename needs the new name free, and nothing here creates `archive/` or
//! creates `runs/` before the move. Only hands from outside could leave both (a build
//! from before the rename, which would start a fresh `archive/` beside `runs/`, or a
//! copy), and which runs are the database's is then not knowable here: the open is
//! refused, naming both, rather than replaying the wrong ones.

use crate::data_file::file_error;
use crate::error::{Error, Result};
use sluice_storage::Storage;
use std::path::{Path, PathBuf};

/// The sorted runs' directory, in the database directory.
pub(crate) const DIR: &str = "runs";
/// Its name before issue 23.
pub(crate) const OLD_DIR: &str = "archive";

/// The run directory of the database in `db_dir`, after moving it from its old name if
/// it is still there (durably: renamed, then the database directory synced).
pub(crate) fn adopt(storage: &dyn Storage, db_dir: &Path) -> Result<PathBuf> {
    let (dir, old) = (db_dir.join(DIR), db_dir.join(OLD_DIR));
    let io = |e| file_error("database directory", db_dir, e);
    if !storage.exists(&old).map_err(io)? {
        return Ok(dir);
    }
    if storage.exists(&dir).map_err(io)? {
        return Err(Error::Corruption(format!(
            "{} holds both `{DIR}` and `{OLD_DIR}` (the sorted runs' directory before it \
             was renamed): only one can be this database's; remove the other",
            db_dir.display()
        )));
    }
    storage
        .rename(&old, &dir)
        .map_err(|e| file_error("run directory", &old, e))?;
    storage.sync_dir(db_dir).map_err(io)?;
    Ok(dir)
}
