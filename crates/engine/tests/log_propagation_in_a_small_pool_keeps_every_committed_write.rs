//! Postmortem (issue 22, defect 1): under log-based propagation with a small pool, a
//! value reverted to an older committed write during normal operation. An eviction copied
//! a page, let the latch go and waited for the log; the log cleaner meanwhile wrote a
//! newer version of the same page; the eviction's older copy then landed over it and the
//! frame was marked clean, so the next load read the old version. Every page write now
//! goes through one protocol (`buffer_pool/write_protocol.rs`) that never lands an older
//! version of a page over a newer one.
//!
//! Each thread owns its keys and keeps an exact model of them; every read, in every
//! transaction, is checked against it, while checkpoints run every few milliseconds and a
//! 16-page pool evicts constantly. Some values are large (stored in chunks), and deleted
//! ones leave runs of empty leaves in the chunk tree: four threads coupling them filled
//! the 16 frames and waited each other out ("buffer pool exhausted") until a walk that
//! holds leaves stopped waiting for a frame (`BufferPool::try_fetch`).

use sluice::{Database, Options, Strategy, Table};
use sluice_storage::{DeviceModel, DeviceProfile, SimStorage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const THREADS: usize = 4;
const KEYS: usize = 24;
const TXNS: usize = 400;

/// A thread's keys and their committed values.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(strategy: Strategy) -> Options {
    let mut o = Options::small();
    o.pool_pages = 16;
    o.propagation = strategy;
    o.checkpoint_log_bytes = 4 << 10;
    o.checkpoint_interval = Duration::from_millis(2);
    o.log.segment_bytes = 16 << 10;
    o
}

fn value(t: usize, i: usize, k: usize) -> Vec<u8> {
    let mut v = format!("{t}.{i}.{k}:").into_bytes();
    // One value in eight is large (several chunks); the rest fill a good part of a leaf.
    let pad = if (i + k).is_multiple_of(8) {
        3000
    } else {
        40 + (i * 7 + k) % 90
    };
    v.resize(v.len() + pad, b'a' + (i % 26) as u8);
    v
}

/// Why a transaction stopped: a retryable conflict (run it again), or a failure.
enum Stop {
    Retry,
    Fail(String),
}

impl From<sluice::Error> for Stop {
    fn from(e: sluice::Error) -> Stop {
        if e.is_retryable() {
            Stop::Retry
        } else {
            Stop::Fail(e.to_string())
        }
    }
}

fn run(db: &Database, table: &Table, t: usize) -> Result<(), String> {
    let mut model = Model::new();
    let mut i = 0;
    while i < TXNS {
        match txn(db, table, t, i, &model) {
            Ok(Some(m)) => model = m,
            Ok(None) => {}
            Err(Stop::Retry) => continue,
            Err(Stop::Fail(e)) => return Err(e),
        }
        i += 1;
    }
    Ok(())
}

/// Transaction `i` of thread `t`: the model after it if it committed.
fn txn(
    db: &Database,
    table: &Table,
    t: usize,
    i: usize,
    model: &Model,
) -> Result<Option<Model>, Stop> {
    {
        let mut tx = db.begin();
        let mut mine = model.clone();
        // Read every key this transaction touches, change some, delete some, then read
        // them back within the transaction and (after commit) in the next one.
        for j in 0..3 {
            let k = (i * 5 + j * 7 + t) % KEYS;
            let key = format!("t{t}-{k:02}").into_bytes();
            let got = tx.get(table, &key)?;
            if got.as_ref() != mine.get(&key) {
                return Err(Stop::Fail(format!(
                    "thread {t} txn {i}: {} read {:?}, the model holds {:?}",
                    String::from_utf8_lossy(&key),
                    got.map(|v| String::from_utf8_lossy(&v[..v.len().min(16)]).into_owned()),
                    mine.get(&key)
                        .map(|v| String::from_utf8_lossy(&v[..v.len().min(16)]).into_owned())
                )));
            }
            if (i + j) % 5 == 4 {
                tx.delete(table, &key)?;
                mine.remove(&key);
            } else {
                let v = value(t, i, k);
                tx.put(table, &key, &v)?;
                mine.insert(key, v);
            }
        }
        let prefix = format!("t{t}-");
        let seen: Vec<Vec<u8>> = tx
            .scan_prefix(table, prefix.as_bytes())
            .map(|r| r.map(|(k, _)| k))
            .collect::<Result<_, _>>()?;
        let want: Vec<Vec<u8>> = mine.keys().cloned().collect();
        if seen != want {
            return Err(Stop::Fail(format!(
                "thread {t} txn {i}: its own scan saw {} keys, the model holds {}",
                seen.len(),
                want.len()
            )));
        }
        if i % 9 == 8 {
            tx.rollback()?;
            Ok(None)
        } else {
            tx.commit()?;
            Ok(Some(mine))
        }
    }
}

#[test]
fn log_propagation_in_a_small_pool_keeps_every_committed_write() {
    for round in 0..6u64 {
        let dir = tempfile::tempdir().unwrap();
        let b = Database::builder(dir.path().join("db")).options(options(Strategy::Log));
        // Odd rounds on the simulated disk, even ones on the real one (whose syncs take
        // long enough for an eviction to wait for the log while the cleaner writes).
        let b = if round % 2 == 1 {
            // A log that takes a millisecond to sync: evictions wait for it while the
            // other threads change the page and a checkpoint's cleaner writes it.
            let slow = DeviceModel::new(
                SimStorage::new(round),
                DeviceProfile::sync_latency(Duration::from_millis(1)),
            );
            b.storage(Arc::new(slow))
        } else {
            b
        };
        let db = b.open().unwrap();
        let table = db.create_table("t").unwrap();
        let errors: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (db, table) = (&db, &table);
                    s.spawn(move || run(db, table, t))
                })
                .collect();
            hs.into_iter()
                .filter_map(|h| h.join().unwrap().err())
                .collect()
        });
        assert!(errors.is_empty(), "round {round}: {errors:#?}");
        eprintln!("round {round}: {:?}", db.backlog());
        db.verify().unwrap();
        drop(table);
        db.close().unwrap();
    }
}
