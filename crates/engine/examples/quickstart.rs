//! The README's embedding example, verbatim below this header
//! (`crates/cli/tests/docs_do_not_rot.rs` fails when the two differ).
//! Run with `cargo run -p sluice --example quickstart`.

use sluice::Database;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::open(std::env::temp_dir().join("sluice-quickstart"))?; // or recovers it
    let accounts = db.table_or_create("accounts")?;
    let mut tx = db.begin(); // serializable; `commit` returns once it is on disk
    tx.put(&accounts, "ada", 100u64.to_le_bytes())?;
    tx.put(&accounts, "alan", 50u64.to_le_bytes())?;
    tx.commit()?;
    // Run again, with backoff, while it loses a lock conflict; its own error aborts it.
    let left = db.transaction(|tx| {
        // Write-locks at once: a `get` then `put` in two transactions would deadlock.
        let ada: [u8; 8] = tx.get_for_update(&accounts, "ada")?.ok_or("no ada")?[..].try_into()?;
        let left = u64::from_le_bytes(ada).checked_sub(30).ok_or("overdrawn")?;
        tx.put(&accounts, "ada", left.to_le_bytes())?;
        Ok::<_, Box<dyn std::error::Error>>(left) // the application's own error type
    })?;
    let mut tx = db.begin();
    let keys: Vec<_> = tx.scan(&accounts, ..).map(|e| e.map(|(k, _)| k)).collect();
    let back: Vec<_> = tx.scan(&accounts, ..).rev().collect::<Result<_, _>>()?;
    let n = tx.len(&accounts)?; // exact, O(1)
    tx.commit()?;
    println!("ada has {left} left; {n} keys: {keys:?}, backwards: {back:?}");
    db.drop_table("accounts")?; // waits for its users; old handles then get `NotFound`
    db.close()?; // closes every clone of `db`
    Ok(())
}
