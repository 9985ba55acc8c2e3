//! Bulk load and verification of one large B+tree.

use sluice::{Database, Error, Options, Result};
use sluice_storage::{SimStorage, Storage};
use std::sync::Arc;
use std::time::Instant;

/// What [`load_verify`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadReport {
    /// Keys loaded and verified.
    pub keys: u64,
    /// Seconds to load (insert and commit) every key.
    pub load_secs: f64,
    /// Keys inserted per second.
    pub keys_per_sec: f64,
    /// Seconds to verify: a full ordered scan, a point lookup of every key, a tree check.
    pub verify_secs: f64,
}

/// Keys per loading transaction.
const LOAD_BATCH: u64 = 10_000;
/// Entries per verifying scan transaction (scans lock every key they return).
const SCAN_CHUNK: usize = 50_000;

/// A bijection on `u64` (splitmix64's finaliser): distinct indexes give distinct keys,
/// in an order unrelated to the index, so the load splits pages all over the tree.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&mix(i).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn value(i: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v[8..].copy_from_slice(&(!i).to_le_bytes());
    v
}

fn fail(what: String) -> Error {
    Error::Corruption(format!("load_verify: {what}"))
}

/// Loads `keys` keys (16-byte keys, 16-byte values, in pseudo-random order) into a
/// fresh database on the simulated in-memory disk, then verifies them with an ordered
/// scan and a point lookup of every key. Measures the engine, not a disk.
pub fn load_verify(keys: u64) -> Result<LoadReport> {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new(keys));
    let options = Options {
        pool_pages: 16_384,
        checkpoint_log_bytes: 64 << 20,
        ..Options::default()
    };
    load_verify_on(storage, "/load", options, keys)
}

/// [`load_verify`] on a given storage, directory and options.
pub fn load_verify_on(
    storage: Arc<dyn Storage>,
    dir: &str,
    options: Options,
    keys: u64,
) -> Result<LoadReport> {
    let db = Database::open_on(storage, dir, options)?;
    let t = db.create_table("load")?;
    let start = Instant::now();
    let mut i = 0;
    while i < keys {
        let mut tx = db.begin();
        let end = (i + LOAD_BATCH).min(keys);
        for j in i..end {
            tx.put(&t, key(j), value(j))?;
        }
        tx.commit()?;
        i = end;
    }
    let load_secs = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let mut expected: Vec<([u8; 16], u64)> = (0..keys).map(|i| (key(i), i)).collect();
    expected.sort_unstable();
    let mut seen = 0usize;
    let mut last: Option<Vec<u8>> = None;
    loop {
        let mut tx = db.begin();
        let chunk: Vec<(Vec<u8>, Vec<u8>)> = match &last {
            None => tx.scan_all(&t).take(SCAN_CHUNK).collect::<Result<_>>()?,
            Some(k) => tx
                .scan(
                    &t,
                    (
                        std::ops::Bound::Excluded(&k[..]),
                        std::ops::Bound::Unbounded,
                    ),
                )
                .take(SCAN_CHUNK)
                .collect::<Result<_>>()?,
        };
        tx.commit()?;
        if chunk.is_empty() {
            break;
        }
        for (k, v) in &chunk {
            let Some((ek, ei)) = expected.get(seen) else {
                return Err(fail(format!("scan returned more than {keys} entries")));
            };
            if k[..] != ek[..] || v[..] != value(*ei)[..] {
                return Err(fail(format!("entry {seen} of the scan is wrong")));
            }
            seen += 1;
        }
        last = chunk.last().map(|e| e.0.clone());
    }
    if seen as u64 != keys {
        return Err(fail(format!("scan found {seen} of {keys} keys")));
    }
    let mut i = 0;
    while i < keys {
        let mut tx = db.begin();
        let end = (i + LOAD_BATCH).min(keys);
        for j in i..end {
            if tx.get(&t, key(j))?.as_deref() != Some(&value(j)[..]) {
                return Err(fail(format!("point lookup of key {j} failed")));
            }
        }
        tx.commit()?;
        i = end;
    }
    let report = db.verify()?;
    if report.entries != keys {
        return Err(fail(format!("verify counted {} entries", report.entries)));
    }
    let verify_secs = start.elapsed().as_secs_f64();
    db.close()?;
    Ok(LoadReport {
        keys,
        load_secs,
        keys_per_sec: keys as f64 / load_secs.max(1e-9),
        verify_secs,
    })
}
