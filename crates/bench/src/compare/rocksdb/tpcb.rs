//! TPC-B on RocksDB (the rocksdb crate): a `TransactionDB` (pessimistic locking), the
//! WAL synced at every commit (`WriteOptions::set_sync(true)`), one thread per client so
//! that RocksDB's write group batches concurrent commits into one WAL sync (its group
//! commit).
//!
//! Keys are a table tag byte and the big-endian id; values are exactly sluice's rows, so
//! the check decodes both engines' tables with the same code.

use crate::compare::peer::{PeerError, TpcbPeer};
use crate::workloads::tpcb::{self, Consistency, Tally, TpcbInput, TpcbShape, TELLERS_PER_BRANCH};
use rocksdb::{
    Direction, ErrorKind, IteratorMode, Options, TransactionDB, TransactionDBOptions,
    TransactionOptions, WriteBatchWithTransaction, WriteOptions,
};
use std::path::Path;

const BRANCH: u8 = b'b';
const TELLER: u8 = b't';
const ACCOUNT: u8 = b'a';
const HISTORY: u8 = b'h';

/// How long a transaction waits for a row lock before failing with a timeout (which the
/// driver counts and retries), ms.
pub const LOCK_TIMEOUT_MS: i64 = 2_000;

fn key(table: u8, id: u32) -> [u8; 5] {
    let mut k = [table; 5];
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

fn history_key(id: u64) -> [u8; 9] {
    let mut k = [HISTORY; 9];
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

fn err(e: rocksdb::Error) -> String {
    format!("rocksdb: {e}")
}

/// A TPC-B database in RocksDB.
pub struct RocksTpcb {
    db: TransactionDB,
    sync: WriteOptions,
}

/// What the durability column says of RocksDB.
pub(crate) const DURABILITY: &str = "TransactionDB, WAL synced per commit (WriteOptions::set_sync)";

/// Opens (creating) the `TransactionDB` in `dir/rocksdb`.
pub(crate) fn open_db(dir: &Path) -> Result<TransactionDB, String> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let mut txn = TransactionDBOptions::default();
    txn.set_txn_lock_timeout(LOCK_TIMEOUT_MS);
    TransactionDB::open(&opts, &txn, dir.join("rocksdb")).map_err(err)
}

/// Write options that sync the WAL at every commit.
pub(crate) fn sync_options() -> WriteOptions {
    let mut sync = WriteOptions::default();
    sync.set_sync(true);
    sync.disable_wal(false);
    sync
}

impl RocksTpcb {
    fn open_db(dir: &Path) -> Result<TransactionDB, String> {
        open_db(dir)
    }

    fn with(db: TransactionDB) -> RocksTpcb {
        RocksTpcb {
            db,
            sync: sync_options(),
        }
    }

    /// Creates the database in `dir` and loads it at `shape`. `progress` gets the
    /// fraction loaded.
    pub fn load(
        dir: &Path,
        shape: &TpcbShape,
        mut progress: impl FnMut(f64),
    ) -> Result<RocksTpcb, String> {
        let r = RocksTpcb::with(RocksTpcb::open_db(dir)?);
        // Large batches, each synced (a few dozen syncs): the load is durable before
        // the first measured commit.
        let synced = &r.sync;
        let mut batch = WriteBatchWithTransaction::<true>::default();
        for b in 0..shape.scale {
            batch.put(key(BRANCH, b), tpcb::encode_row(b, 0));
        }
        for t in 0..shape.scale * TELLERS_PER_BRANCH {
            batch.put(key(TELLER, t), tpcb::encode_row(t / TELLERS_PER_BRANCH, 0));
        }
        r.db.write_opt(batch, synced).map_err(err)?;
        let accounts = shape.scale * shape.accounts_per_branch;
        const BATCH: u32 = 50_000;
        let mut a = 0;
        while a < accounts {
            let end = (a + BATCH).min(accounts);
            let mut batch = WriteBatchWithTransaction::<true>::default();
            for id in a..end {
                batch.put(
                    key(ACCOUNT, id),
                    tpcb::encode_row(id / shape.accounts_per_branch, 0),
                );
            }
            r.db.write_opt(batch, synced).map_err(err)?;
            a = end;
            progress(a as f64 / accounts as f64);
        }
        Ok(r)
    }

    /// Opens a database [`RocksTpcb::load`] made (after a crash, too: RocksDB replays
    /// its WAL at open).
    pub fn open(dir: &Path) -> Result<RocksTpcb, String> {
        if !dir.join("rocksdb").is_dir() {
            return Err(format!("{}: no RocksDB database", dir.display()));
        }
        Ok(RocksTpcb::with(RocksTpcb::open_db(dir)?))
    }

    /// The ids of every history row (the kill test's acknowledged commits).
    pub fn history_ids(&self) -> Result<Vec<u64>, String> {
        let mut ids = Vec::new();
        self.scan(HISTORY, |k, _| {
            if k.len() == 9 {
                ids.push(u64::from_be_bytes(k[1..].try_into().expect("8 bytes")));
            }
        })?;
        Ok(ids)
    }

    fn scan(&self, table: u8, mut each: impl FnMut(&[u8], &[u8])) -> Result<(), String> {
        for r in self
            .db
            .iterator(IteratorMode::From(&[table], Direction::Forward))
        {
            let (k, v) = r.map_err(err)?;
            if k.first() != Some(&table) {
                break;
            }
            each(&k, &v);
        }
        Ok(())
    }

    fn update(
        txn: &rocksdb::Transaction<'_, TransactionDB>,
        k: &[u8],
        delta: i64,
    ) -> Result<i64, PeerError> {
        let v = txn
            .get_for_update(k, true)
            .map_err(fail)?
            .ok_or_else(|| PeerError::Fatal(format!("rocksdb: TPC-B row {k:?} missing")))?;
        let (owner, bal) = tpcb::decode_row(&v).map_err(|e| PeerError::Fatal(e.to_string()))?;
        txn.put(k, tpcb::encode_row(owner, bal + delta))
            .map_err(fail)?;
        Ok(bal + delta)
    }
}

/// Busy, timed out and try-again are retryable; anything else ends the run.
pub(crate) fn fail(e: rocksdb::Error) -> PeerError {
    match e.kind() {
        ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain => PeerError::Retry,
        _ => PeerError::Fatal(err(e)),
    }
}

impl TpcbPeer for RocksTpcb {
    type Client = ();

    fn client(&self) -> Result<(), String> {
        Ok(())
    }

    fn transact(&self, _: &mut (), i: &TpcbInput) -> Result<(), PeerError> {
        let mut topts = TransactionOptions::default();
        topts.set_deadlock_detect(true);
        let txn = self.db.transaction_opt(&self.sync, &topts);
        // Dropping `txn` on an error rolls it back.
        RocksTpcb::update(&txn, &key(ACCOUNT, i.account), i.delta)?;
        txn.put(history_key(i.history_id), tpcb::encode_history(i))
            .map_err(fail)?;
        RocksTpcb::update(&txn, &key(TELLER, i.teller), i.delta)?;
        RocksTpcb::update(&txn, &key(BRANCH, i.branch), i.delta)?;
        txn.commit().map_err(fail)
    }

    fn check(&self, expected_rows: Option<u64>) -> Result<Consistency, String> {
        let mut tally = Tally::new();
        let mut bad = Vec::new();
        let mut decode = |v: &[u8]| match tpcb::decode_row(v) {
            Ok(r) => Some(r),
            Err(e) => {
                bad.push(e.to_string());
                None
            }
        };
        let mut rows = Vec::new();
        self.scan(BRANCH, |_, v| rows.push(decode(v)))?;
        for (_, bal) in rows.drain(..).flatten() {
            tally.branch(bal);
        }
        self.scan(TELLER, |_, v| rows.push(decode(v)))?;
        for (b, bal) in rows.drain(..).flatten() {
            tally.teller(b, bal);
        }
        let mut sum = 0i64;
        self.scan(ACCOUNT, |_, v| {
            if let Some((_, bal)) = decode(v) {
                sum += bal;
            }
        })?;
        tally.account(sum);
        self.scan(HISTORY, |_, v| tpcb::tally_history(&mut tally, v))?;
        for b in bad {
            tally.violation(b);
        }
        Ok(tally.finish(expected_rows))
    }

    fn durability(&self) -> Result<(bool, String), String> {
        // The write options are ours; RocksDB has no call to read them back.
        Ok((true, DURABILITY.into()))
    }
}
