//! What an empty database costs: the bytes it takes on disk and how long creating and
//! reopening it take (printed, for comparing builds; nothing is asserted).
//!
//! Run with `cargo run -p sluice --example empty_database [DIR]` (a debug build is what a
//! test suite opens databases with; add `--release` for the production figure).

use sluice::{Database, Error};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

/// Every file under `dir` with its length and the bytes it occupies on disk (allocated
/// blocks, as `du` counts them).
fn files(dir: &Path, out: &mut Vec<(String, u64, u64)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            files(&entry.path(), out)?;
        } else {
            let name = entry.path().display().to_string();
            out.push((name, meta.len(), meta.blocks() * 512));
        }
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sluice-empty-database"));
    let _ = std::fs::remove_dir_all(&dir);
    let t = Instant::now();
    let db = Database::open(&dir)?;
    let create = t.elapsed();
    db.close()?;
    let t = Instant::now();
    let db = Database::open(&dir)?;
    let reopen = t.elapsed();
    db.close()?;
    let mut found = Vec::new();
    files(&dir, &mut found)?;
    let on_disk: u64 = found.iter().map(|f| f.2).sum();
    println!(
        "create: {:.3} s, reopen: {:.3} s",
        create.as_secs_f64(),
        reopen.as_secs_f64()
    );
    println!(
        "on disk after close: {on_disk} bytes in {} files",
        found.len()
    );
    for (name, len, disk) in found {
        println!("  {name}: {len} bytes long, {disk} on disk");
    }
    Ok(())
}
