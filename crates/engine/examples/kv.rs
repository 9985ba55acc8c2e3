//! A small key-value program on the real file system: create a table, write in a
//! transaction, roll one back, reopen (recovery), and scan.
//!
//! Run with `cargo run -p sluice --example kv [DIR]`.

use sluice::{Database, Error};

fn main() -> Result<(), Error> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sluice-example"));
    let db = Database::open(&dir)?;
    let fruit = db.table_or_create("fruit")?;

    let mut tx = db.begin();
    tx.put(&fruit, b"apple", b"red")?;
    tx.put(&fruit, b"banana", b"yellow")?;
    tx.put(&fruit, b"cherry", b"dark red")?;
    tx.commit()?;

    let mut tx = db.begin();
    tx.delete(&fruit, b"banana")?;
    tx.rollback()?;
    drop(fruit);
    db.close()?;

    let db = Database::open(&dir)?;
    println!("recovery: {:?}", db.recovery_report());
    let fruit = db.table("fruit")?;
    let mut tx = db.begin();
    for entry in tx.scan_all(&fruit) {
        let (k, v) = entry?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&v)
        );
    }
    tx.commit()?;
    db.close()
}
