//! Opening a database with options: a smaller page, a bigger cache, the classic commit
//! protocol, and the log on a directory of its own (on a real machine, another device).
//! Then what is in force is printed — a reopen keeps the page size it was created with.
//!
//! Run with `cargo run -p sluice --example builder [DIR]`.

use sluice::{CommitProtocol, Database, Error};
use std::time::Duration;

fn main() -> Result<(), Error> {
    let base = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("sluice-builder-{}", std::process::id())),
    };
    let (data, log) = (base.join("data"), base.join("log-device"));
    let open = |page_size| {
        Database::builder(&data)
            .page_size(page_size)
            .pool_pages(2048)
            .commit(CommitProtocol::Classic)
            .lock_timeout(Duration::from_secs(1))
            .log_dir(&log)
            .open()
    };
    let db = open(4096)?;
    let t = db.table_or_create("notes")?;
    db.transaction(|tx| tx.put(&t, b"hello", b"world").map(drop))?;
    drop(t);
    db.close()?;

    let db = open(16384)?; // asks for 16 KiB pages; the database keeps its 4 KiB
    let o = db.options();
    println!(
        "page size {} B, pool {} pages, commit {}, lock timeout {:?}, log segments of {} B in {}",
        o.page_size,
        o.pool_pages,
        o.commit,
        o.lock_timeout,
        o.log.segment_bytes,
        log.display()
    );
    assert_eq!(o.page_size, 4096);
    db.close()
}
