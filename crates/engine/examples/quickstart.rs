//! The README's embedding example, verbatim below this header
//! (`crates/cli/tests/docs_do_not_rot.rs` fails when the two differ).
//! Run with `cargo run -p sluice --example quickstart`.

use sluice::{Database, Error};

fn main() -> Result<(), Error> {
    // Creates the database, or recovers it after a crash.
    let db = Database::open(std::env::temp_dir().join("sluice-quickstart"))?;
    let users = db.table_or_create("users")?;

    // Serializable; `commit` returns once the commit record is on disk.
    let mut tx = db.begin();
    tx.put(&users, b"ada", b"lovelace")?;
    tx.put(&users, b"alan", b"turing")?;
    tx.commit()?;

    // A closure in a transaction, run again after a deadlock or a lock timeout.
    db.transaction(|tx| tx.put(&users, b"grace", b"hopper"))?;

    let mut tx = db.begin();
    for entry in tx.scan(&users, "a".."h") {
        let (key, value) = entry?;
        println!("{} {}", key.escape_ascii(), value.escape_ascii());
    }
    tx.commit()?;
    db.close()
}
