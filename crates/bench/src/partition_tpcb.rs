//! `bench partition --tpcb-overhead`: what the partitioned engine costs with one log
//! manager. TPC-B runs on an ordinary [`Database`] and on a [`Partitioned`] one with a
//! single log manager, same options, same scale, both in fresh directories on the same
//! disk, in alternating rounds within one process (the machine is shared and noisy:
//! compare the two as a ratio of medians, not against other runs).

use crate::compare::peer::{self, PeerError, PeerRunConfig, TpcbPeer};
use crate::tpcb::{self, encode_row, Consistency, Tally, TpcbInput, TpcbShape, TpcbTables};
use serde::Serialize;
use sluice::{Database, Error, Partitioned, PartitionedTable, PartitionedTransaction};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct OverheadConfig {
    /// TPC-B scale (branches).
    pub scale: u32,
    /// Client threads.
    pub clients: usize,
    /// Rounds per engine (alternating).
    pub rounds: usize,
    /// Measured seconds per round.
    pub seconds: f64,
}

/// What the rounds measured.
#[derive(Debug, Clone, Serialize)]
pub struct OverheadResult {
    /// Transactions per second of each round of the ordinary database.
    pub plain_tps: Vec<f64>,
    /// Each round of the partitioned one (one log manager).
    pub partitioned_tps: Vec<f64>,
    /// Median of the partitioned rounds ÷ median of the ordinary ones.
    pub ratio: f64,
    /// Both databases passed the TPC-B consistency check at the end.
    pub consistent: bool,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn retry_or_fatal(e: Error) -> PeerError {
    if e.is_retryable() {
        PeerError::Retry
    } else {
        PeerError::Fatal(e.to_string())
    }
}

struct Plain {
    db: Database,
    tables: TpcbTables,
}

impl TpcbPeer for Plain {
    type Client = ();
    fn client(&self) -> Result<(), String> {
        Ok(())
    }
    fn transact(&self, _: &mut (), i: &TpcbInput) -> Result<(), PeerError> {
        let mut tx = self.db.begin();
        match tpcb::run(&mut tx, &self.tables, i) {
            Ok(_) => tx.commit().map_err(retry_or_fatal),
            Err(e) => {
                let _ = tx.rollback();
                Err(retry_or_fatal(e))
            }
        }
    }
    fn check(&self, expected_rows: Option<u64>) -> Result<Consistency, String> {
        tpcb::check(&self.db, &self.tables, expected_rows).map_err(|e| e.to_string())
    }
    fn durability(&self) -> Result<(bool, String), String> {
        let p = self.db.options().commit;
        Ok((p.durable(), p.to_string()))
    }
}

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
        .get_for_update(t, &k)?
        .ok_or_else(|| Error::NotFound(format!("TPC-B row {id} in {}", t.name())))?;
    let (owner, bal) = tpcb::decode_row(&v)?;
    tx.put(t, &k, &encode_row(owner, bal + delta))?;
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
        let row = tx.get(&self.history, &history_id.to_be_bytes())?;
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
            tx.put(&p.branch, &tpcb::key(b), &encode_row(b, 0))?;
        }
        for t in 0..shape.scale * tpcb::TELLERS_PER_BRANCH {
            tx.put(
                &p.teller,
                &tpcb::key(t),
                &encode_row(t / tpcb::TELLERS_PER_BRANCH, 0),
            )?;
        }
        tx.commit()?;
        let total = shape.scale * shape.accounts_per_branch;
        for chunk in (0..total).collect::<Vec<_>>().chunks(5_000) {
            let mut tx = p.db.begin();
            for &a in chunk {
                tx.put(
                    &p.account,
                    &tpcb::key(a),
                    &encode_row(a / shape.accounts_per_branch, 0),
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
            &i.history_id.to_be_bytes(),
            &tpcb::encode_history(i),
        )?;
        update(tx, &self.teller, i.teller, i.delta)?;
        update(tx, &self.branch, i.branch, i.delta)
    }
}

impl TpcbPeer for Parted {
    type Client = ();
    fn client(&self) -> Result<(), String> {
        Ok(())
    }
    fn transact(&self, _: &mut (), i: &TpcbInput) -> Result<(), PeerError> {
        self.transact_once(i).map_err(retry_or_fatal)
    }
    fn check(&self, expected_rows: Option<u64>) -> Result<Consistency, String> {
        self.consistency(expected_rows)
    }
    fn durability(&self) -> Result<(bool, String), String> {
        let p = self.db.partition(0).options().commit;
        Ok((p.durable(), p.to_string()))
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

/// Loads both databases in `dir` and runs the alternating rounds. `tick` gets the
/// fraction of rounds done.
pub fn run(
    dir: &Path,
    cfg: &OverheadConfig,
    mut tick: impl FnMut(f64),
) -> Result<OverheadResult, String> {
    let shape = TpcbShape::standard(cfg.scale);
    let e = |e: Error| e.to_string();
    let plain_db = Database::open_path(dir.join("plain")).map_err(e)?;
    let tables = tpcb::load(&plain_db, &shape, |_| {}).map_err(e)?;
    let plain = Plain {
        db: plain_db,
        tables,
    };
    let parted_db = Partitioned::builder(dir.join("partitioned"))
        .log_managers(1)
        .open()
        .map_err(e)?;
    let parted = Parted::load(parted_db, &shape).map_err(e)?;
    let mut result = OverheadResult {
        plain_tps: Vec::new(),
        partitioned_tps: Vec::new(),
        ratio: 0.0,
        consistent: false,
    };
    let stop = AtomicBool::new(false);
    let mut rows = (0u64, 0u64);
    for round in 0..cfg.rounds {
        let rc = |tag: u64| PeerRunConfig {
            clients: cfg.clients,
            warmup: Duration::from_millis(300),
            measure: Duration::from_secs_f64(cfg.seconds),
            seed: round as u64,
            run_tag: tag,
        };
        let a = peer::run(&plain, shape, &rc(round as u64 + 1), &|_| {}, &stop, |_| {})?;
        rows.0 += a.committed_total;
        result.plain_tps.push(a.committed as f64 / a.seconds);
        let b = peer::run(
            &parted,
            shape,
            &rc(round as u64 + 1),
            &|_| {},
            &stop,
            |_| {},
        )?;
        rows.1 += b.committed_total;
        result.partitioned_tps.push(b.committed as f64 / b.seconds);
        tick((round + 1) as f64 / cfg.rounds as f64);
    }
    result.ratio = median(&result.partitioned_tps) / median(&result.plain_tps);
    let c0 = plain.check(Some(rows.0))?;
    let c1 = parted.check(Some(rows.1))?;
    result.consistent = c0.ok() && c1.ok();
    if !result.consistent {
        return Err(format!(
            "TPC-B consistency failed: ordinary {c0:?}, partitioned {c1:?}"
        ));
    }
    plain.db.close().map_err(e)?;
    parted.db.close().map_err(e)?;
    Ok(result)
}
