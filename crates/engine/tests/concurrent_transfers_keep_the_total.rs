//! Several threads (more than cores) move money between accounts on the real file
//! system; locks serialise conflicting transfers, victims of lock timeouts roll back,
//! and the total never changes — in memory and after reopening.

use sluice::{Database, Error, Options};
use sluice_storage::OsStorage;
use std::sync::Arc;
use std::time::Duration;

const ACCOUNTS: u32 = 50;
const START: u64 = 1000;

fn total(db: &Database) -> u64 {
    let t = db.table("acct").unwrap();
    let mut tx = db.begin();
    let sum = tx
        .scan_all(&t)
        .map(|e| u64::from_le_bytes(e.unwrap().1.try_into().unwrap()))
        .sum();
    tx.commit().unwrap();
    sum
}

#[test]
fn transfers_from_many_threads_keep_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::small();
    o.pool_pages = 24;
    o.lock_timeout = Duration::from_millis(100);
    let db = Database::open_on(Arc::new(OsStorage::new()), dir.path(), o.clone()).unwrap();
    let t = db.create_table("acct").unwrap();
    let mut tx = db.begin();
    for a in 0..ACCOUNTS {
        tx.put(&t, format!("a{a:03}").as_bytes(), START.to_le_bytes())
            .unwrap();
    }
    tx.commit().unwrap();
    let handles: Vec<_> = (0..6u32)
        .map(|th| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut x = th as u64 * 7919 + 1;
                let mut done = 0;
                while done < 60 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let (from, to) = ((x >> 33) as u32 % ACCOUNTS, (x >> 45) as u32 % ACCOUNTS);
                    if from == to {
                        continue;
                    }
                    let mut tx = db.begin();
                    let r = (|| {
                        let kf = format!("a{from:03}").into_bytes();
                        let kt = format!("a{to:03}").into_bytes();
                        let f = u64::from_le_bytes(
                            tx.get_for_update(&t, &kf)?.unwrap().try_into().unwrap(),
                        );
                        let g = u64::from_le_bytes(
                            tx.get_for_update(&t, &kt)?.unwrap().try_into().unwrap(),
                        );
                        let amount = (x % 10).min(f);
                        tx.put(&t, &kf, (f - amount).to_le_bytes())?;
                        tx.put(&t, &kt, (g + amount).to_le_bytes())?;
                        Ok::<_, Error>(())
                    })();
                    match r {
                        Ok(()) => {
                            tx.commit().unwrap();
                            done += 1;
                        }
                        Err(e) if e.is_retryable() => tx.rollback().unwrap(),
                        Err(e) => panic!("transfer failed: {e}"),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(total(&db), ACCOUNTS as u64 * START);
    db.verify().unwrap();
    drop(t);
    db.close().unwrap();
    let db = Database::open_on(Arc::new(OsStorage::new()), dir.path(), o).unwrap();
    assert_eq!(total(&db), ACCOUNTS as u64 * START);
}
