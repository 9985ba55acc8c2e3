//! Read-only open: a database written and closed by one handle, then opened read-only —
//! as a second process, a backup reader or a tool inspecting a crashed process's
//! directory would. Several read-only handles share the database; a writer is kept out
//! while they are open, and every write through them is refused.
//!
//! Run with `cargo run -p sluice --example read_only [DIR]` (a temporary directory by
//! default, removed at the end).

use sluice::{Database, Error};

fn main() -> Result<(), Error> {
    let (dir, temporary) = match std::env::args().nth(1) {
        Some(d) => (std::path::PathBuf::from(d), false),
        None => (
            std::env::temp_dir().join(format!("sluice-read-only-{}", std::process::id())),
            true,
        ),
    };

    // A writer fills a table and closes.
    let db = Database::open(&dir)?;
    let cities = db.table_or_create("cities")?;
    db.transaction(|tx| {
        for (name, population) in [
            ("Lisbon", 545_000u32),
            ("Oslo", 709_000),
            ("Porto", 232_000),
        ] {
            tx.put(&cities, name.as_bytes(), population.to_le_bytes())?;
        }
        Ok::<_, sluice::Error>(())
    })?;
    drop(cities);
    db.close()?;

    // Two readers at once; nothing on disk changes while they read.
    let reader = Database::open_read_only(&dir)?;
    let other = Database::builder(&dir).read_only(true).open()?;
    println!(
        "opened {} read-only twice (options().read_only = {})",
        dir.display(),
        reader.options().read_only
    );
    let cities = reader.table("cities")?;
    let mut tx = reader.begin();
    for entry in tx.scan_prefix(&cities, b"") {
        let (name, population) = entry?;
        let population = u32::from_le_bytes(population.as_slice().try_into().unwrap());
        println!("  {:<8} {population}", String::from_utf8_lossy(&name));
    }

    // Writes are refused, and a refused write fails its transaction.
    match tx.put(&cities, b"Madrid", 3_300_000u32.to_le_bytes()) {
        Err(e @ Error::ReadOnly) => println!("put refused: {e}"),
        other => panic!("a read-only database took a write: {other:?}"),
    }
    drop(tx);
    match reader.table_or_create("countries") {
        Err(e) => println!("table_or_create(\"countries\") refused: {e}"),
        Ok(_) => panic!("a read-only database created a table"),
    }

    // A writer must wait until the readers are gone.
    match Database::open(&dir) {
        Err(e @ Error::Locked(_)) => println!("read-write open while readers are open: {e}"),
        other => panic!("a writer got in beside readers: {other:?}"),
    }
    drop(cities);
    reader.close()?;
    other.close()?;
    Database::open(&dir)?.close()?;
    println!("read-write open after the readers closed: ok");

    if temporary {
        std::fs::remove_dir_all(&dir).map_err(|e| Error::Io(std::sync::Arc::new(e)))?;
    }
    Ok(())
}
