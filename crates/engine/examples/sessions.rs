//! Prefix scans and deleting while iterating: sessions stored under `session/<user>/<id>`
//! with an expiry time; list one user's sessions with `scan_prefix`, then expire old
//! sessions of every user with `retain`, in one transaction.
//!
//! Run with `cargo run -p sluice --example sessions [DIR]`.

use sluice::{Database, Error};

fn main() -> Result<(), Error> {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("sluice-sessions-{}", std::process::id())),
    };
    let db = Database::open(&dir)?;
    let t = db.table_or_create("sessions")?;
    db.transaction(|tx| {
        for (user, id, expires) in [
            ("ann", 1, 100u64),
            ("ann", 2, 300),
            ("bob", 1, 50),
            ("bob", 7, 500),
            ("cid", 3, 200),
        ] {
            let k = format!("session/{user}/{id}");
            tx.put(&t, k.as_bytes(), expires.to_be_bytes())?;
        }
        Ok::<_, sluice::Error>(())
    })?;

    let now = 150u64;
    let (anns, expired) = db.transaction(|tx| {
        let anns = tx.scan_prefix(&t, "session/ann/").count();
        let expired = tx.retain(&t, "session/".."session0", |_, v| {
            u64::from_be_bytes(v.try_into().expect("8 bytes")) > now
        })?;
        Ok::<_, sluice::Error>((anns, expired))
    })?;
    println!("ann had {anns} sessions; {expired} sessions expired at time {now}");

    let mut tx = db.begin();
    for entry in tx.scan_prefix(&t, "session/") {
        let (k, _) = entry?;
        println!("still open: {}", String::from_utf8_lossy(&k));
    }
    tx.commit()?;
    drop(t);
    db.close()
}
