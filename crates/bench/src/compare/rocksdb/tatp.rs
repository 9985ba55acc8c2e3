//! TATP on RocksDB, at the same durability as its TPC-B (`TransactionDB`, WAL synced per
//! commit). Each TATP table is a key prefix; values are exactly sluice's rows, and the
//! transactions are sluice's own bodies ([`tatp::run_on`]): reads are plain reads,
//! reads for update take RocksDB's exclusive row lock (`get_for_update`).

use super::tpcb::{fail, open_db, sync_options, DURABILITY};
use crate::compare::peer::{PeerError, TatpPeer};
use crate::workloads::tatp::{self, TatpInput, TatpStore, TatpTable};
use rand::SeedableRng;
use rocksdb::{
    Transaction, TransactionDB, TransactionOptions, WriteBatchWithTransaction, WriteOptions,
};
use std::path::Path;

fn tag(t: TatpTable) -> u8 {
    match t {
        TatpTable::Subscriber => b'S',
        TatpTable::SubscriberNbr => b'N',
        TatpTable::AccessInfo => b'A',
        TatpTable::SpecialFacility => b'F',
        TatpTable::CallForwarding => b'C',
    }
}

fn key(t: TatpTable, k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.push(tag(t));
    v.extend_from_slice(k);
    v
}

/// A TATP database in RocksDB.
pub struct RocksTatp {
    db: TransactionDB,
    sync: WriteOptions,
}

struct Store<'a, 'db>(&'a Transaction<'db, TransactionDB>);

impl TatpStore for Store<'_, '_> {
    type Error = PeerError;
    fn get(&mut self, t: TatpTable, k: &[u8]) -> Result<Option<Vec<u8>>, PeerError> {
        self.0.get(key(t, k)).map_err(fail)
    }
    fn get_for_update(&mut self, t: TatpTable, k: &[u8]) -> Result<Option<Vec<u8>>, PeerError> {
        self.0.get_for_update(key(t, k), true).map_err(fail)
    }
    fn put(&mut self, t: TatpTable, k: &[u8], v: &[u8]) -> Result<(), PeerError> {
        self.0.put(key(t, k), v).map_err(fail)
    }
    fn delete(&mut self, t: TatpTable, k: &[u8]) -> Result<bool, PeerError> {
        let k = key(t, k);
        let was = self.0.get_for_update(&k, true).map_err(fail)?.is_some();
        if was {
            self.0.delete(&k).map_err(fail)?;
        }
        Ok(was)
    }
    fn corrupt(what: String) -> PeerError {
        PeerError::Fatal(format!("rocksdb: {what}"))
    }
}

impl RocksTatp {
    /// Creates the database in `dir` and loads `subscribers` subscribers by TATP's
    /// population rules (the same seed as sluice's loader), in synced batches.
    pub fn load(
        dir: &Path,
        subscribers: u32,
        mut progress: impl FnMut(f64),
    ) -> Result<RocksTatp, String> {
        let r = RocksTatp {
            db: open_db(dir)?,
            sync: sync_options(),
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(subscribers as u64);
        const BATCH: u32 = 10_000;
        let mut s = 1;
        while s <= subscribers {
            let end = (s + BATCH).min(subscribers + 1);
            let mut batch = WriteBatchWithTransaction::<true>::default();
            for s_id in s..end {
                tatp::populate::<()>(&mut rng, s_id, &mut |t, k, v| {
                    batch.put(key(t, k), v);
                    Ok(())
                })
                .expect("a batch put cannot fail");
            }
            r.db.write_opt(batch, &r.sync)
                .map_err(|e| format!("rocksdb: {e}"))?;
            s = end;
            progress((s - 1) as f64 / subscribers as f64);
        }
        Ok(r)
    }
}

impl TatpPeer for RocksTatp {
    type Client = ();

    fn client(&self) -> Result<(), String> {
        Ok(())
    }

    fn transact(&self, _: &mut (), i: &TatpInput) -> Result<bool, PeerError> {
        let mut topts = TransactionOptions::default();
        topts.set_deadlock_detect(true);
        let txn = self.db.transaction_opt(&self.sync, &topts);
        // Dropping `txn` on an error rolls it back.
        let found = tatp::run_on(&mut Store(&txn), i)?;
        if found || i.kind.read_only() {
            txn.commit().map_err(fail)?;
        } else {
            txn.rollback().map_err(fail)?;
        }
        Ok(found)
    }

    fn durability(&self) -> Result<(bool, String), String> {
        Ok((true, DURABILITY.into()))
    }
}
