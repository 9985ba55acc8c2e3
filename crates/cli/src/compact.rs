//! `sluice compact DIR`: gives a database's free space back (`Database::compact`).
//!
//! Exit codes as the operator tools' (`inspect`): 0 when it compacted, 2 only for bad
//! arguments (no such directory, not a sluice database), 1 when the database cannot be
//! opened or the compaction fails.

use crate::inspect::{check_dir, open_failure};
use crate::Failure;
use clap::Args;
use sluice::Database;
use std::path::PathBuf;

/// `sluice compact`.
#[derive(Args, Debug)]
pub struct CompactArgs {
    /// The database directory (opened read-write: a crashed one is recovered first).
    pub dir: PathBuf,
}

/// `sluice compact DIR`.
pub fn run(a: CompactArgs) -> Result<(), Failure> {
    check_dir(&a.dir)?;
    let db = Database::open(&a.dir).map_err(|e| open_failure(&a.dir, e))?;
    let r = db
        .compact()
        .and_then(|r| db.close().map(|()| r))
        .map_err(|e| Failure::Runtime(format!("compact {}: {e}", a.dir.display())))?;
    println!(
        "compacted {}: {} page(s) freed, {} page(s) ({} bytes) returned to the file system; \
         data file {} -> {} bytes; {} free page(s) left for reuse",
        a.dir.display(),
        r.pages_freed,
        r.pages_returned,
        r.bytes_returned,
        r.size_before,
        r.size_after,
        r.pages_free
    );
    Ok(())
}
