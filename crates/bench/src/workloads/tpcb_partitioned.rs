//! TPC-B on a [`Partitioned`] database: the four tables of [`super::tpcb`], each in the
//! partition the database's assignment gives it, with the same rows, the same
//! transaction and the same consistency check ([`Tally`]). The workload of `sluice bench
//! partition --tpcb-overhead` and of `sluice crash-test kill --log-managers K`.

use super::tpcb::{self, encode_row, Consistency, Tally, TpcbInput, TpcbShape};
use sluice::{Error, Partitioned, PartitionedTable, PartitionedTransaction};

/// TPC-B on a [`Partitioned`] database: its four tables (each in the partition the
/// database's assignment gives it), the load, one transaction and the check. Also the
/// workload of `sluice crash-test kill --log-managers K`.
pub struct Parted {
    db: Partitioned,
    branch: PartitionedTable,
    teller: PartitionedTable,
    account: PartitionedTable,
    history: PartitionedTable,
}

fn update(
    tx: &mut PartitionedTransaction,
    t: &PartitionedTable,
    id: u32,
    delta: i64,
) -> Result<(), Error> {
    let k = tpcb::key(id);
    let v = tx
        .get_for_update(t, k)?
        .ok_or_else(|| Error::NotFound(format!("TPC-B row {id} in {}", t.name())))?;
    let (owner, bal) = tpcb::decode_row(&v)?;
    tx.put(t, k, encode_row(owner, bal + delta))?;
    Ok(())
}

impl Parted {
    /// The TPC-B tables of a database [`Parted::load`] filled before.
    pub fn open(db: Partitioned) -> Result<Parted, Error> {
        Ok(Parted {
            branch: db.table("branch")?,
            teller: db.table("teller")?,
            account: db.table("account")?,
            history: db.table("history")?,
            db,
        })
    }

    /// The database.
    pub fn db(&self) -> &Partitioned {
        &self.db
    }

    /// The database, its tables let go (to close it).
    pub fn into_db(self) -> Partitioned {
        self.db
    }

    /// Runs TPC-B transaction `i` and commits it (rolled back on an error).
    pub fn transact_once(&self, i: &TpcbInput) -> Result<(), Error> {
        let mut tx = self.db.begin();
        match self.body(&mut tx, i) {
            Ok(()) => tx.commit(),
            Err(e) => {
                let _ = tx.rollback();
                Err(e)
            }
        }
    }

    /// The history row of transaction `history_id`, if it is there.
    pub fn history_row(&self, history_id: u64) -> Result<Option<Vec<u8>>, Error> {
        let mut tx = self.db.begin();
        let row = tx.get(&self.history, history_id.to_be_bytes())?;
        tx.commit()?;
        Ok(row)
    }

    /// Creates the four tables in `db` and loads them at `shape`'s scale.
    pub fn load(db: Partitioned, shape: &TpcbShape) -> Result<Parted, Error> {
        let p = Parted {
            branch: db.create_table("branch")?,
            teller: db.create_table("teller")?,
            account: db.create_table("account")?,
            history: db.create_table("history")?,
            db,
        };
        let mut tx = p.db.begin();
        for b in 0..shape.scale {
            tx.put(&p.branch, tpcb::key(b), encode_row(b, 0))?;
        }
        for t in 0..shape.scale * tpcb::TELLERS_PER_BRANCH {
            tx.put(
                &p.teller,
                tpcb::key(t),
                encode_row(t / tpcb::TELLERS_PER_BRANCH, 0),
            )?;
        }
        tx.commit()?;
        let total = shape.scale * shape.accounts_per_branch;
        for chunk in (0..total).collect::<Vec<_>>().chunks(5_000) {
            let mut tx = p.db.begin();
            for &a in chunk {
                tx.put(
                    &p.account,
                    tpcb::key(a),
                    encode_row(a / shape.accounts_per_branch, 0),
                )?;
            }
            tx.commit()?;
        }
        Ok(p)
    }

    fn body(&self, tx: &mut PartitionedTransaction, i: &TpcbInput) -> Result<(), Error> {
        update(tx, &self.account, i.account, i.delta)?;
        tx.put(
            &self.history,
            i.history_id.to_be_bytes(),
            tpcb::encode_history(i),
        )?;
        update(tx, &self.teller, i.teller, i.delta)?;
        update(tx, &self.branch, i.branch, i.delta)
    }
}

impl Parted {
    /// The TPC-B identities over all four tables, read in one transaction.
    pub fn consistency(&self, expected_rows: Option<u64>) -> Result<Consistency, String> {
        let s = |e: Error| e.to_string();
        let mut tally = Tally::new();
        let mut tx = self.db.begin();
        for r in tx.scan(&self.branch, ..).map_err(s)? {
            let (_, v) = r.map_err(s)?;
            tally.branch(tpcb::decode_row(&v).map_err(s)?.1);
        }
        for r in tx.scan(&self.teller, ..).map_err(s)? {
            let (_, v) = r.map_err(s)?;
            let (b, bal) = tpcb::decode_row(&v).map_err(s)?;
            tally.teller(b, bal);
        }
        for r in tx.scan(&self.account, ..).map_err(s)? {
            let (_, v) = r.map_err(s)?;
            tally.account(tpcb::decode_row(&v).map_err(s)?.1);
        }
        for r in tx.scan(&self.history, ..).map_err(s)? {
            let (_, v) = r.map_err(s)?;
            tpcb::tally_history(&mut tally, &v);
        }
        tx.commit().map_err(s)?;
        Ok(tally.finish(expected_rows))
    }
}
