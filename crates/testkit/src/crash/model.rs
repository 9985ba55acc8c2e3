//! The crash sweep's key-value model: the tables and keys, the values a put writes, one
//! transaction of the workload with its outcome noted, the state a database shows, and
//! the chunks its large values must occupy.

use rand::rngs::StdRng;
use rand::Rng;
use sluice::{Database, Error, Limits, Options, Table, Transaction};
use sluice_wal::Lsn;
use std::collections::BTreeMap;
use std::sync::Mutex;

pub(crate) const DIR: &str = "/db";
pub(super) const THREADS: usize = 4;
pub(super) const TXNS_PER_THREAD: usize = 40;
pub(super) const KEYS: u32 = 24;
pub(crate) const TABLES: [&str; 2] = ["a", "b"];

pub(crate) type State = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

/// A transaction of a crash workload as it ended: what it did, the LSN of its commit
/// record when one was logged (a *candidate*), and whether its commit returned (it was
/// *acknowledged*).
#[derive(Debug, Clone)]
pub struct Outcome<W> {
    /// What it did (the key-value workload's writes, a TPC-B transaction's input).
    pub work: W,
    /// Its commit record's LSN, once logged.
    pub commit: Option<Lsn>,
    /// Its commit returned.
    pub acked: bool,
}

/// The key-value workload's work: each write (table, key, the value or `None` for a
/// delete).
pub(crate) type Writes = Vec<(usize, Vec<u8>, Option<Vec<u8>>)>;

/// How many transactions were acknowledged with their commit record logged.
pub fn acknowledged<W>(outcomes: &[Outcome<W>]) -> u64 {
    outcomes
        .iter()
        .filter(|o| o.acked && o.commit.is_some())
        .count() as u64
}

/// Commits `tx`, noting `work`'s outcome in `log` the moment its commit record is logged
/// (a halt may strike before the commit returns) and marking it acknowledged once the
/// commit returns.
pub fn commit_noted<W>(
    tx: Transaction,
    work: W,
    log: &Mutex<Vec<Outcome<W>>>,
) -> Result<(), Error> {
    let mut idx = None;
    tx.commit_observed(|commit| {
        let mut l = log.lock().expect("outcome log");
        l.push(Outcome {
            work,
            commit,
            acked: false,
        });
        idx = Some(l.len() - 1);
    })?;
    let idx = idx.expect("a committed transaction was observed");
    log.lock().expect("outcome log")[idx].acked = true;
    Ok(())
}

pub(crate) fn options() -> Options {
    let mut o = Options::small();
    o.pool_pages = 16;
    o.checkpoint_log_bytes = 24 << 10;
    o.log.segment_bytes = 16 << 10;
    o
}

pub(super) fn key(k: u32) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

/// What a put writes: a short value with `pad` bytes of padding, or a large one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ValueShape {
    Short(usize),
    Large(usize),
}

/// Short values of varying length, so pages fill and split unevenly. With `huge`
/// ([`CrashMode::LargeValues`](super::CrashMode::LargeValues)), one put in ten is a large value, too long for the
/// sweep's 1 KiB pages (entries of at most 232 bytes), so it is stored apart in chunks:
/// mostly up to 8 KiB, one in ten up to 64 KiB, and one in 400 of 1 MiB (a few seeds in
/// a hundred write one).
pub(super) fn draw_shape(rng: &mut StdRng, huge: bool) -> ValueShape {
    if !huge || !rng.gen_bool(0.1) {
        return ValueShape::Short(rng.gen_range(0..120));
    }
    ValueShape::Large(match rng.gen_range(0..40) {
        0 if rng.gen_bool(0.1) => 1 << 20,
        0..=3 => rng.gen_range(8 << 10..=64 << 10),
        _ => rng.gen_range(233..=8 << 10),
    })
}

/// The value a put writes: its writer and key, then padding; a large value's padding is
/// pseudo-random bytes drawn from the writer, so a misplaced or stale chunk shows.
pub(crate) fn make_value(tag: &str, k: u32, shape: ValueShape) -> Vec<u8> {
    let mut v = format!("{tag}:{k}:").into_bytes();
    match shape {
        ValueShape::Short(pad) => v.resize(v.len() + pad, b'x'),
        ValueShape::Large(len) => {
            let mut x = crc32c::crc32c(&v) as u64 | 1 << 32;
            while v.len() < len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v.push(x as u8);
            }
        }
    }
    v
}

/// One transaction of the workload: a few distinct keys in sorted order (so there are no
/// deadlocks), each written or deleted; committed or rolled back.
pub(crate) fn run_txn(
    db: &Database,
    tables: &[Table],
    rng: &mut StdRng,
    tag: String,
    log: &Mutex<Vec<Outcome<Writes>>>,
    shape: Shape,
) -> Result<(), Error> {
    let mut picks: Vec<(usize, u32)> = if shape.run > 0 {
        // A run of adjacent keys: many pages of one tree in one transaction.
        let t = rng.gen_range(0..tables.len());
        let start = rng.gen_range(0..shape.keys);
        (start..start + shape.run)
            .map(|k| (t, k % shape.keys))
            .collect()
    } else {
        let n = rng.gen_range(1..=4);
        (0..n)
            .map(|_| (rng.gen_range(0..tables.len()), rng.gen_range(0..shape.keys)))
            .collect()
    };
    picks.sort_unstable();
    picks.dedup();
    let mut tx = db.begin();
    let mut writes = Vec::new();
    for (t, k) in picks {
        let kb = key(k);
        if rng.gen_bool(0.25) {
            tx.delete(&tables[t], &kb)?;
            writes.push((t, kb, None));
        } else {
            let v = make_value(&tag, k, draw_shape(rng, shape.large_values));
            tx.put(&tables[t], &kb, &v)?;
            writes.push((t, kb, Some(v)));
        }
    }
    if rng.gen_bool(0.15) {
        return tx.rollback();
    }
    commit_noted(tx, writes, log)
}

pub(crate) fn read_state(db: &Database) -> Result<State, Error> {
    let mut s = State::new();
    let mut tx = db.begin();
    for (i, name) in TABLES.iter().enumerate() {
        let t = db.table(name)?;
        let mut prev: Option<Vec<u8>> = None;
        for e in tx.scan_all(&t) {
            let (k, v) = e?;
            if prev.as_ref().is_some_and(|p| p >= &k) {
                return Err(Error::Corruption(format!(
                    "table {name} scans out of order"
                )));
            }
            prev = Some(k.clone());
            s.insert((i, k), v);
        }
    }
    tx.commit()?;
    Ok(s)
}

/// Checks that the hidden table of large values holds exactly the chunks of the large
/// values in `state`: a chunk more is a trace of a transaction that did not commit (or
/// of an old value an overwrite should have deleted), a chunk less a damaged value.
pub(super) fn check_chunks(db: &Database, state: &State) -> Result<(), String> {
    let want = chunks_of(db.limits(), state.iter().map(|((_, k), v)| (k, v)));
    let got = db
        .large_value_chunks()
        .map_err(|e| format!("reading the table of large values failed: {e}"))?;
    if got != want {
        return Err(format!(
            "the table of large values holds {got} chunks, but the recovered large values have {want}"
        ));
    }
    Ok(())
}

/// The chunks the large values among `rows` (key, value) occupy in the hidden table of
/// large values: a value whose key plus value exceed `max_entry` is stored apart.
pub(crate) fn chunks_of<'a>(
    limits: Limits,
    rows: impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>,
) -> u64 {
    rows.filter(|(k, v)| k.len() + v.len() > limits.max_entry)
        .map(|(k, v)| {
            let c = limits.chunk_len(k.len()).expect("keys allow large values");
            v.len().div_ceil(c) as u64
        })
        .sum()
}

/// The size of a mode's workload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) threads: usize,
    pub(crate) txns: usize,
    pub(crate) keys: u32,
    /// Adjacent keys per transaction (0: one to four random keys).
    pub(crate) run: u32,
    pub(crate) crash_range: u64,
    /// One put in ten writes a large value (`draw_shape`).
    pub(crate) large_values: bool,
}
