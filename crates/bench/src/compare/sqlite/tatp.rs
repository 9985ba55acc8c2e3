//! TATP on SQLite, at the same durability as its TPC-B (WAL, `synchronous=FULL`, one
//! connection per client). Each TATP table is a key-value table (`k BLOB PRIMARY KEY, v
//! BLOB`, `WITHOUT ROWID`) holding exactly sluice's keys and rows, and the transactions
//! are sluice's own bodies ([`tatp::run_on`]) over it, so both engines run the same
//! reads and writes. Updating transactions begin `IMMEDIATE`; read-only ones begin
//! deferred, so that in WAL mode they never wait for the writer.

use super::tpcb::{durability_of, is_busy, SqliteTpcb};
use crate::compare::peer::{PeerError, TatpPeer};
use crate::workloads::tatp::{self, TatpInput, TatpStore, TatpTable};
use rand::SeedableRng;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// A TATP database in SQLite.
pub struct SqliteTatp {
    path: PathBuf,
}

fn sql_err(e: rusqlite::Error) -> PeerError {
    if is_busy(&e) {
        PeerError::Retry
    } else {
        PeerError::Fatal(format!("sqlite: {e}"))
    }
}

struct Store<'a>(&'a Connection);

impl TatpStore for Store<'_> {
    type Error = PeerError;
    fn get(&mut self, t: TatpTable, k: &[u8]) -> Result<Option<Vec<u8>>, PeerError> {
        self.0
            .prepare_cached(&format!("SELECT v FROM {} WHERE k = ?1", t.name()))
            .and_then(|mut s| s.query_row([k], |r| r.get(0)).optional())
            .map_err(sql_err)
    }
    fn get_for_update(&mut self, t: TatpTable, k: &[u8]) -> Result<Option<Vec<u8>>, PeerError> {
        // The transaction already holds SQLite's one write lock.
        self.get(t, k)
    }
    fn put(&mut self, t: TatpTable, k: &[u8], v: &[u8]) -> Result<(), PeerError> {
        self.0
            .prepare_cached(&format!(
                "INSERT INTO {} (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                t.name()
            ))
            .and_then(|mut s| s.execute(params![k, v]))
            .map(|_| ())
            .map_err(sql_err)
    }
    fn delete(&mut self, t: TatpTable, k: &[u8]) -> Result<bool, PeerError> {
        self.0
            .prepare_cached(&format!("DELETE FROM {} WHERE k = ?1", t.name()))
            .and_then(|mut s| s.execute([k]))
            .map(|n| n > 0)
            .map_err(sql_err)
    }
    fn corrupt(what: String) -> PeerError {
        PeerError::Fatal(format!("sqlite: {what}"))
    }
}

impl SqliteTatp {
    /// Creates the tables in `dir` and loads `subscribers` subscribers by TATP's
    /// population rules (the same seed as sluice's loader).
    pub fn load(
        dir: &Path,
        subscribers: u32,
        mut progress: impl FnMut(f64),
    ) -> Result<SqliteTatp, String> {
        let path = dir.join("tatp.sqlite");
        let err = |e: rusqlite::Error| format!("sqlite: {e}");
        let mut c = SqliteTpcb::connect(&path).map_err(err)?;
        for t in TatpTable::ALL {
            c.execute_batch(&format!(
                "CREATE TABLE {} (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
                t.name()
            ))
            .map_err(err)?;
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(subscribers as u64);
        const BATCH: u32 = 10_000;
        let mut s = 1;
        while s <= subscribers {
            let end = (s + BATCH).min(subscribers + 1);
            let tx = c.transaction().map_err(err)?;
            for s_id in s..end {
                tatp::populate(&mut rng, s_id, &mut |t, k, v| {
                    tx.prepare_cached(&format!("INSERT INTO {} (k, v) VALUES (?1, ?2)", t.name()))
                        .and_then(|mut st| st.execute(params![k, v]))
                        .map(|_| ())
                })
                .map_err(err)?;
            }
            tx.commit().map_err(err)?;
            s = end;
            progress((s - 1) as f64 / subscribers as f64);
        }
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(err)?;
        Ok(SqliteTatp { path })
    }
}

impl TatpPeer for SqliteTatp {
    type Client = Connection;

    fn client(&self) -> Result<Connection, String> {
        SqliteTpcb::connect(&self.path).map_err(|e| format!("sqlite: {e}"))
    }

    fn transact(&self, c: &mut Connection, i: &TatpInput) -> Result<bool, PeerError> {
        let begin = if i.kind.read_only() {
            "BEGIN"
        } else {
            "BEGIN IMMEDIATE"
        };
        c.prepare_cached(begin)
            .and_then(|mut s| s.execute([]))
            .map_err(sql_err)?;
        let r = tatp::run_on(&mut Store(c), i);
        let end = match &r {
            Ok(found) if *found || i.kind.read_only() => "COMMIT",
            _ => "ROLLBACK",
        };
        let ended = c.prepare_cached(end).and_then(|mut s| s.execute([]));
        if !c.is_autocommit() {
            // A COMMIT that failed (busy) leaves the transaction open.
            c.execute_batch("ROLLBACK").map_err(sql_err)?;
        }
        let found = r?;
        ended.map_err(sql_err)?;
        Ok(found)
    }

    fn durability(&self) -> Result<(bool, String), String> {
        durability_of(&self.client()?)
    }
}
