//! The engine behind one face: an ordinary [`Database`] or a [`Partitioned`] one, opened
//! read-write or read-only on a seed's simulated disk, and the transaction operations the
//! workload and the oracle use ([`Ops`]), implemented by both kinds of transaction.

use super::config::{Config, Layout, TABLES};
use crate::crash::DIR;
use crate::fence::FencedStorage;
use sluice::{
    Database, Durability, Error, Options, Partitioned, PartitionedTable, PartitionedTransaction,
    Table, Transaction,
};
use sluice_storage::SimStorage;
use std::collections::BTreeMap;

/// Every row of every table of [`TABLES`] (and of the scratch tables, under
/// `super::scratch::SCRATCH`): (table index, key) → value.
pub(crate) type Rows = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

/// A write of a transaction: (table index, key, new value or `None` for a delete).
pub(crate) type Write = (usize, Vec<u8>, Option<Vec<u8>>);

/// The rows a scan returned, in order: (key, value).
pub(crate) type Scanned = Vec<(Vec<u8>, Vec<u8>)>;

/// An open database of either kind.
pub(crate) enum Db {
    Plain(Database),
    Part(Partitioned),
}

/// A table of either kind of database.
#[derive(Clone)]
pub(crate) enum Tbl {
    Plain(Table),
    Part(PartitionedTable),
}

/// A transaction of either kind (one at a time per client, on its stack: the size of
/// an ordinary one is no cost worth a box).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Tx {
    Plain(Transaction),
    Part(PartitionedTransaction),
}

/// Opens the seed's database on `sim` (a view that dies with the incarnation) with
/// `options` — read-only if they say so.
pub(crate) fn open(sim: &SimStorage, cfg: &Config, options: Options) -> Result<Db, Error> {
    let storage = FencedStorage::for_incarnation(sim);
    match &cfg.layout {
        Layout::Plain { log_dir } => {
            let mut b = Database::builder(DIR).options(options).storage(storage);
            if let Some(d) = log_dir {
                b = b.log_dir(d);
            }
            b.open().map(Db::Plain)
        }
        Layout::Partitioned(p) => {
            let mut b = Partitioned::builder(DIR)
                .log_managers(p.log_managers)
                .options(options)
                .storage(storage)
                .unassigned(p.unassigned);
            for (t, a) in p.assigned.iter().enumerate() {
                if let Some(i) = a {
                    b = b.assign(TABLES[t], *i);
                }
            }
            for (i, d) in p.log_dirs.iter().enumerate() {
                if let Some(d) = d {
                    b = b.log_dir(i, d);
                }
            }
            b.open().map(Db::Part)
        }
    }
}

impl Db {
    /// The ordinary database, for agents (the config draws agents only for one).
    pub(crate) fn plain(&self) -> Option<&Database> {
        match self {
            Db::Plain(d) => Some(d),
            Db::Part(_) => None,
        }
    }

    /// The database of each log: the ordinary one, or each partition.
    pub(crate) fn databases(&self) -> Vec<&Database> {
        match self {
            Db::Plain(d) => vec![d],
            Db::Part(d) => (0..d.log_managers()).map(|i| d.partition(i)).collect(),
        }
    }

    pub(crate) fn read_only(&self) -> bool {
        match self {
            Db::Plain(d) => d.is_read_only(),
            Db::Part(d) => d.partition(0).is_read_only(),
        }
    }

    /// Pages the pools wrote back to make room: for a read-only database, the pages
    /// restart recovery changed that it spilled to its scratch file.
    pub(crate) fn victim_writes(&self) -> u64 {
        match self {
            Db::Plain(d) => d.stats().pool.victim_writes,
            Db::Part(d) => (0..d.log_managers())
                .map(|i| d.partition(i).stats().pool.victim_writes)
                .sum(),
        }
    }

    /// Creates every table of [`TABLES`].
    pub(crate) fn create_tables(&self) -> Result<Vec<Tbl>, Error> {
        TABLES
            .iter()
            .map(|n| match self {
                Db::Plain(d) => d.create_table(n).map(Tbl::Plain),
                Db::Part(d) => d.create_table(n).map(Tbl::Part),
            })
            .collect()
    }

    /// Opens every table of [`TABLES`].
    pub(crate) fn tables(&self) -> Result<Vec<Tbl>, Error> {
        TABLES
            .iter()
            .map(|n| match self {
                Db::Plain(d) => d.table(n).map(Tbl::Plain),
                Db::Part(d) => d.table(n).map(Tbl::Part),
            })
            .collect()
    }

    pub(crate) fn begin(&self) -> Tx {
        match self {
            Db::Plain(d) => Tx::Plain(d.begin()),
            Db::Part(d) => Tx::Part(d.begin()),
        }
    }

    pub(crate) fn checkpoint(&self) -> Result<(), Error> {
        match self {
            Db::Plain(d) => d.checkpoint(),
            Db::Part(d) => d.checkpoint(),
        }
    }

    /// Compacts every database of the layout; the data-file pages returned.
    pub(crate) fn compact(&self) -> Result<u64, Error> {
        let reports = match self {
            Db::Plain(d) => vec![d.compact()?],
            Db::Part(d) => d.compact()?,
        };
        Ok(reports.iter().map(|r| r.pages_returned).sum())
    }

    pub(crate) fn verify(&self) -> Result<(), Error> {
        match self {
            Db::Plain(d) => d.verify().map(drop),
            Db::Part(d) => d.verify().map(drop),
        }
    }

    pub(crate) fn close(self) -> Result<(), Error> {
        match self {
            Db::Plain(d) => d.close(),
            Db::Part(d) => d.close(),
        }
    }

    /// `Ok` while every partition takes work.
    pub(crate) fn health(&self) -> Result<(), Error> {
        match self {
            Db::Plain(d) => d.health(),
            Db::Part(d) => (0..d.log_managers()).try_for_each(|i| d.partition(i).health()),
        }
    }

    /// The databases holding the tables, and for each table the one it lives in.
    fn parts(&self) -> Vec<&Database> {
        match self {
            Db::Plain(d) => vec![d],
            Db::Part(d) => (0..d.log_managers()).map(|i| d.partition(i)).collect(),
        }
    }

    /// Per database of [`Db::parts`]: its `max_entry` (the same everywhere) and the
    /// chunks its hidden table of large values holds.
    pub(crate) fn large_value_chunks(&self) -> Result<Vec<u64>, Error> {
        self.parts()
            .into_iter()
            .map(Database::large_value_chunks)
            .collect()
    }

    /// Key and value limits (every partition has the same page size).
    pub(crate) fn limits(&self) -> sluice::Limits {
        self.parts()[0].limits()
    }

    /// Every table of an ordinary database outside [`TABLES`], by name (none in a
    /// partitioned one, which the swarm gives no other table).
    pub(crate) fn other_tables(&self) -> Result<Vec<(String, Tbl)>, Error> {
        let Db::Plain(d) = self else {
            return Ok(Vec::new());
        };
        d.table_names()?
            .into_iter()
            .filter(|n| !TABLES.contains(&n.as_str()))
            .map(|n| d.table(&n).map(|t| (n, Tbl::Plain(t))))
            .collect()
    }

    /// Every row of every table, read in one transaction: those of `tables` under their
    /// index, and those of `others` by name; each table's keys must come in order (a
    /// table out of order is reported as corruption).
    pub(crate) fn read_rows(
        &self,
        tables: &[Tbl],
        others: &[(String, Tbl)],
    ) -> Result<(Rows, Vec<(String, Scanned)>), Error> {
        let mut tx = self.begin();
        let mut rows = Rows::new();
        let mut scan = |name: &str, t: &Tbl| {
            let got = tx.scan(t, None)?;
            if got.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(Error::Corruption(format!(
                    "table {name} scans out of order"
                )));
            }
            Ok(got)
        };
        for (i, t) in tables.iter().enumerate() {
            rows.extend(scan(TABLES[i], t)?.into_iter().map(|(k, v)| ((i, k), v)));
        }
        let others = others
            .iter()
            .map(|(name, t)| Ok((name.clone(), scan(name, t)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        tx.commit()?;
        Ok((rows, others))
    }
}

impl Tbl {
    /// The partition (index of [`Db::parts`]) the table lives in.
    pub(crate) fn partition(&self) -> usize {
        match self {
            Tbl::Plain(_) => 0,
            Tbl::Part(t) => t.partition(),
        }
    }

    fn plain(&self) -> &Table {
        match self {
            Tbl::Plain(t) => t,
            Tbl::Part(_) => unreachable!("a partitioned table in an ordinary transaction"),
        }
    }

    fn part(&self) -> &PartitionedTable {
        match self {
            Tbl::Part(t) => t,
            Tbl::Plain(_) => unreachable!("an ordinary table in a partitioned transaction"),
        }
    }
}

/// The operations of a transaction the workload uses, over either kind.
pub(crate) trait Ops {
    fn get(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    fn get_for_update(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    fn put(&mut self, t: &Tbl, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    fn delete(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    /// The rows of `[from, to)` (`None`: the whole table), collected.
    fn scan(&mut self, t: &Tbl, range: Option<(Vec<u8>, Vec<u8>)>) -> Result<Scanned, Error>;
    /// The table's entry count (`len`: the strong table lock, which waits for every
    /// other writer of the table).
    fn len(&mut self, t: &Tbl) -> Result<u64, Error>;
    /// Chooses how the transaction commits (a partitioned transaction has no such
    /// choice: the swarm never draws `Async` for one, `Config::async_share`).
    fn set_durability(&mut self, d: Durability);
    /// Creates, drops and renames a table inside the transaction: an ordinary
    /// database's only (a partitioned transaction refuses them; the swarm draws them
    /// only for an ordinary database, `super::scratch`).
    fn create_table(&mut self, name: &str) -> Result<Tbl, Error>;
    fn drop_table(&mut self, t: &Tbl) -> Result<(), Error>;
    fn rename_table(&mut self, t: &Tbl, to: &str) -> Result<(), Error>;
}

/// The refusal of a table operation inside a partitioned transaction.
fn no_table_ops() -> Error {
    Error::InvalidArgument("a partitioned transaction cannot create, drop or rename tables".into())
}

impl Ops for Transaction {
    fn set_durability(&mut self, d: Durability) {
        Transaction::set_durability(self, d)
    }
    fn get(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Transaction::get(self, t.plain(), key)
    }
    fn get_for_update(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Transaction::get_for_update(self, t.plain(), key)
    }
    fn put(&mut self, t: &Tbl, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Transaction::put(self, t.plain(), key, value)
    }
    fn delete(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Transaction::delete(self, t.plain(), key)
    }
    fn scan(&mut self, t: &Tbl, range: Option<(Vec<u8>, Vec<u8>)>) -> Result<Scanned, Error> {
        match range {
            Some((from, to)) => Transaction::scan(self, t.plain(), from..to).collect(),
            None => Transaction::scan(self, t.plain(), ..).collect(),
        }
    }
    fn len(&mut self, t: &Tbl) -> Result<u64, Error> {
        Transaction::len(self, t.plain())
    }
    fn create_table(&mut self, name: &str) -> Result<Tbl, Error> {
        Transaction::create_table(self, name).map(Tbl::Plain)
    }
    fn drop_table(&mut self, t: &Tbl) -> Result<(), Error> {
        Transaction::drop_table(self, t.plain())
    }
    fn rename_table(&mut self, t: &Tbl, to: &str) -> Result<(), Error> {
        Transaction::rename_table(self, t.plain(), to)
    }
}

impl Ops for PartitionedTransaction {
    fn set_durability(&mut self, d: Durability) {
        assert_eq!(
            d,
            Durability::Durable,
            "a partitioned transaction commits durably"
        );
    }
    fn get(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        PartitionedTransaction::get(self, t.part(), key)
    }
    fn get_for_update(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        PartitionedTransaction::get_for_update(self, t.part(), key)
    }
    fn put(&mut self, t: &Tbl, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        PartitionedTransaction::put(self, t.part(), key, value)
    }
    fn delete(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        PartitionedTransaction::delete(self, t.part(), key)
    }
    fn scan(&mut self, t: &Tbl, range: Option<(Vec<u8>, Vec<u8>)>) -> Result<Scanned, Error> {
        match range {
            Some((from, to)) => PartitionedTransaction::scan(self, t.part(), from..to)?.collect(),
            None => PartitionedTransaction::scan(self, t.part(), ..)?.collect(),
        }
    }
    fn len(&mut self, t: &Tbl) -> Result<u64, Error> {
        PartitionedTransaction::len(self, t.part())
    }
    fn create_table(&mut self, _: &str) -> Result<Tbl, Error> {
        Err(no_table_ops())
    }
    fn drop_table(&mut self, _: &Tbl) -> Result<(), Error> {
        Err(no_table_ops())
    }
    fn rename_table(&mut self, _: &Tbl, _: &str) -> Result<(), Error> {
        Err(no_table_ops())
    }
}

impl Ops for Tx {
    fn set_durability(&mut self, d: Durability) {
        match self {
            Tx::Plain(x) => Ops::set_durability(x, d),
            Tx::Part(x) => Ops::set_durability(x, d),
        }
    }
    fn get(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self {
            Tx::Plain(x) => Ops::get(x, t, key),
            Tx::Part(x) => Ops::get(x, t, key),
        }
    }
    fn get_for_update(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self {
            Tx::Plain(x) => Ops::get_for_update(x, t, key),
            Tx::Part(x) => Ops::get_for_update(x, t, key),
        }
    }
    fn put(&mut self, t: &Tbl, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self {
            Tx::Plain(x) => Ops::put(x, t, key, value),
            Tx::Part(x) => Ops::put(x, t, key, value),
        }
    }
    fn delete(&mut self, t: &Tbl, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        match self {
            Tx::Plain(x) => Ops::delete(x, t, key),
            Tx::Part(x) => Ops::delete(x, t, key),
        }
    }
    fn scan(&mut self, t: &Tbl, range: Option<(Vec<u8>, Vec<u8>)>) -> Result<Scanned, Error> {
        match self {
            Tx::Plain(x) => Ops::scan(x, t, range),
            Tx::Part(x) => Ops::scan(x, t, range),
        }
    }
    fn len(&mut self, t: &Tbl) -> Result<u64, Error> {
        match self {
            Tx::Plain(x) => Ops::len(x, t),
            Tx::Part(x) => Ops::len(x, t),
        }
    }
    fn create_table(&mut self, name: &str) -> Result<Tbl, Error> {
        match self {
            Tx::Plain(x) => Ops::create_table(x, name),
            Tx::Part(x) => Ops::create_table(x, name),
        }
    }
    fn drop_table(&mut self, t: &Tbl) -> Result<(), Error> {
        match self {
            Tx::Plain(x) => Ops::drop_table(x, t),
            Tx::Part(x) => Ops::drop_table(x, t),
        }
    }
    fn rename_table(&mut self, t: &Tbl, to: &str) -> Result<(), Error> {
        match self {
            Tx::Plain(x) => Ops::rename_table(x, t, to),
            Tx::Part(x) => Ops::rename_table(x, t, to),
        }
    }
}

impl Tx {
    pub(crate) fn commit(self) -> Result<(), Error> {
        match self {
            Tx::Plain(x) => x.commit(),
            Tx::Part(x) => x.commit(),
        }
    }

    pub(crate) fn rollback(self) -> Result<(), Error> {
        match self {
            Tx::Plain(x) => x.rollback(),
            Tx::Part(x) => x.rollback(),
        }
    }
}
