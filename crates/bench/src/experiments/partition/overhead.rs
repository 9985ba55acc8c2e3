//! `bench partition --tpcb-overhead`: what the partitioned engine costs with one log
//! manager. TPC-B runs on an ordinary [`Database`] and on a [`Partitioned`] one with a
//! single log manager, same options, same scale, both in fresh directories on the same
//! disk, in alternating rounds within one process (the machine is shared and noisy:
//! compare the two as a ratio of medians, not against other runs).

use crate::compare::peer::{self, PeerError, PeerRunConfig, TpcbPeer};
use crate::workloads::tpcb::{self, Consistency, TpcbInput, TpcbShape, TpcbTables};
use crate::workloads::tpcb_partitioned::Parted;
use serde::Serialize;
use sluice::{Database, Error, Partitioned};
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
        let p = self.db().partition(0).options().commit;
        Ok((p.durable(), p.to_string()))
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
    let plain_db = Database::open(dir.join("plain")).map_err(e)?;
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
    parted.into_db().close().map_err(e)?;
    Ok(result)
}
