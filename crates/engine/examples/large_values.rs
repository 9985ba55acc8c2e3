//! Stores a 10 MiB value in a database on a real temporary directory, reads it back,
//! replaces it with a smaller one and deletes it, timing each step.
//!
//! ```text
//! cargo run --release -p sluice --example large_values [SIZE_MIB]
//! ```

use sluice::Database;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: usize = match std::env::args().nth(1) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("SIZE_MIB must be a whole number of MiB, not {s:?}"))?,
        None => 10,
    };
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("db");
    let db = Database::open(&path)?;
    let files = db.table_or_create("files")?;
    println!(
        "limits: keys up to {} bytes, values up to {} bytes (more than {} bytes with the key are stored apart from the tree's leaves)",
        db.limits().max_key,
        db.limits().max_value,
        db.limits().max_entry
    );

    // Bytes that differ from one position to the next, so a misplaced chunk would show.
    let value: Vec<u8> = (0..mib << 20).map(|i| (i * 31 % 251) as u8).collect();

    let t = Instant::now();
    let mut tx = db.begin();
    tx.put(&files, b"video.bin", &value)?;
    tx.commit()?;
    println!(
        "put {mib} MiB and commit: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    db.checkpoint()?;
    let data = std::fs::metadata(path.join("data"))?.len();
    println!(
        "data file holding it: {:.1} MiB ({:.3} bytes per value byte)",
        data as f64 / (1 << 20) as f64,
        data as f64 / value.len() as f64
    );

    let t = Instant::now();
    let mut tx = db.begin();
    let back = tx
        .get(&files, b"video.bin")?
        .ok_or("the value is missing")?;
    tx.commit()?;
    println!("get {mib} MiB: {:.3} s", t.elapsed().as_secs_f64());
    assert!(back == value, "the value read back differs");

    // Replacing and deleting return the whole old value, like any put and delete.
    let mut tx = db.begin();
    let old = tx.put(&files, b"video.bin", b"a short value now")?;
    assert!(old.as_deref() == Some(&value[..]));
    tx.commit()?;
    let mut tx = db.begin();
    tx.delete(&files, b"video.bin")?;
    tx.commit()?;

    // Storing it again reuses the pages the delete emptied.
    let mut tx = db.begin();
    tx.put(&files, b"video.bin", &value)?;
    tx.commit()?;
    db.checkpoint()?;
    let again = std::fs::metadata(path.join("data"))?.len();
    println!(
        "data file after a delete and a second put: {:.1} MiB",
        again as f64 / (1 << 20) as f64
    );
    // An overwrite writes the new chunks before it deletes the old ones, under the other
    // of two generations of chunk keys: the file holds up to two copies, and no more.
    for _ in 0..3 {
        let mut tx = db.begin();
        tx.put(&files, b"video.bin", &value)?;
        tx.commit()?;
    }
    db.checkpoint()?;
    let overwritten = std::fs::metadata(path.join("data"))?.len();
    println!(
        "data file after three overwrites: {:.1} MiB",
        overwritten as f64 / (1 << 20) as f64
    );
    drop(files);
    db.close()?;
    Ok(())
}
