//! TPC-B on SQLite (rusqlite, bundled): WAL mode, `synchronous=FULL`, `BEGIN IMMEDIATE`,
//! one connection per client.
//!
//! Rows are SQL columns (id, owner, balance, filler) rather than sluice's byte rows:
//! that is how SQLite is used, and `UPDATE … RETURNING` does an update and its read in
//! one statement, as sluice's `get_for_update` + `put` do in two calls. Fillers pad rows
//! to about the same 100 (history 50) bytes.

use crate::compare::peer::{PeerError, TpcbPeer};
use crate::workloads::tpcb::{Consistency, Tally, TpcbInput, TpcbShape, TELLERS_PER_BRANCH};
use rusqlite::{params, Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a connection waits for the write lock inside SQLite before `BEGIN
/// IMMEDIATE` returns SQLITE_BUSY (which the driver counts and retries). SQLite's busy
/// handler sleeps in steps of up to 100 ms, as every application using it does.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

const ROW_FILLER: usize = 84;
const HISTORY_FILLER: usize = 30;

/// A TPC-B database in SQLite.
pub struct SqliteTpcb {
    path: PathBuf,
}

fn err(e: rusqlite::Error) -> String {
    format!("sqlite: {e}")
}

/// SQLITE_BUSY or SQLITE_LOCKED: the attempt is rolled back and retried.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl SqliteTpcb {
    /// The database file inside `dir`.
    pub fn file(dir: &Path) -> PathBuf {
        dir.join("tpcb.sqlite")
    }

    /// A connection in WAL mode with `synchronous=FULL` and the busy timeout.
    pub(crate) fn connect(path: &Path) -> Result<Connection, rusqlite::Error> {
        let c = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {mode}, not WAL"
            )));
        }
        c.execute_batch("PRAGMA synchronous=FULL")?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(c)
    }

    /// Creates the tables in `dir` and loads them at `shape`. `progress` gets the
    /// fraction loaded.
    pub fn load(
        dir: &Path,
        shape: &TpcbShape,
        mut progress: impl FnMut(f64),
    ) -> Result<SqliteTpcb, String> {
        let path = SqliteTpcb::file(dir);
        let mut c = SqliteTpcb::connect(&path).map_err(err)?;
        c.execute_batch(
            "CREATE TABLE branch (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, filler BLOB NOT NULL);
             CREATE TABLE teller (id INTEGER PRIMARY KEY, branch INTEGER NOT NULL, balance INTEGER NOT NULL, filler BLOB NOT NULL);
             CREATE TABLE account (id INTEGER PRIMARY KEY, branch INTEGER NOT NULL, balance INTEGER NOT NULL, filler BLOB NOT NULL);
             CREATE TABLE history (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, teller INTEGER NOT NULL, branch INTEGER NOT NULL, delta INTEGER NOT NULL, filler BLOB NOT NULL);",
        )
        .map_err(err)?;
        let filler = [b' '; ROW_FILLER];
        let accounts = shape.scale * shape.accounts_per_branch;
        const BATCH: u32 = 50_000;
        let tx = c.transaction().map_err(err)?;
        for b in 0..shape.scale {
            tx.execute(
                "INSERT INTO branch VALUES (?1, 0, ?2)",
                params![b, &filler[..]],
            )
            .map_err(err)?;
        }
        for t in 0..shape.scale * TELLERS_PER_BRANCH {
            tx.execute(
                "INSERT INTO teller VALUES (?1, ?2, 0, ?3)",
                params![t, t / TELLERS_PER_BRANCH, &filler[..]],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        let mut a = 0;
        while a < accounts {
            let end = (a + BATCH).min(accounts);
            let tx = c.transaction().map_err(err)?;
            {
                let mut st = tx
                    .prepare("INSERT INTO account VALUES (?1, ?2, 0, ?3)")
                    .map_err(err)?;
                for id in a..end {
                    st.execute(params![id, id / shape.accounts_per_branch, &filler[..]])
                        .map_err(err)?;
                }
            }
            tx.commit().map_err(err)?;
            a = end;
            progress(a as f64 / accounts as f64);
        }
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(err)?;
        Ok(SqliteTpcb { path })
    }

    /// Opens a database [`SqliteTpcb::load`] made (after a crash, too: SQLite recovers
    /// from its WAL on first access).
    pub fn open(dir: &Path) -> Result<SqliteTpcb, String> {
        let path = SqliteTpcb::file(dir);
        if !path.is_file() {
            return Err(format!("{}: no such database", path.display()));
        }
        SqliteTpcb::connect(&path).map_err(err)?;
        Ok(SqliteTpcb { path })
    }

    /// The ids of every history row (the kill test's acknowledged commits).
    pub fn history_ids(&self) -> Result<Vec<u64>, String> {
        let c = SqliteTpcb::connect(&self.path).map_err(err)?;
        let mut st = c.prepare("SELECT id FROM history").map_err(err)?;
        let ids = st
            .query_map([], |r| r.get::<_, i64>(0))
            .map_err(err)?
            .map(|r| r.map(|v| v as u64).map_err(err))
            .collect();
        ids
    }

    fn body(c: &Connection, i: &TpcbInput) -> Result<(), rusqlite::Error> {
        let mut st = c.prepare_cached(
            "UPDATE account SET balance = balance + ?1 WHERE id = ?2 RETURNING balance",
        )?;
        let _balance: i64 = st.query_row(params![i.delta, i.account], |r| r.get(0))?;
        c.prepare_cached("INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
            .execute(params![
                i.history_id as i64,
                i.account,
                i.teller,
                i.branch,
                i.delta,
                &[b' '; HISTORY_FILLER][..]
            ])?;
        c.prepare_cached("UPDATE teller SET balance = balance + ?1 WHERE id = ?2")?
            .execute(params![i.delta, i.teller])?;
        c.prepare_cached("UPDATE branch SET balance = balance + ?1 WHERE id = ?2")?
            .execute(params![i.delta, i.branch])?;
        Ok(())
    }
}

impl TpcbPeer for SqliteTpcb {
    type Client = Connection;

    fn client(&self) -> Result<Connection, String> {
        SqliteTpcb::connect(&self.path).map_err(err)
    }

    fn transact(&self, c: &mut Connection, i: &TpcbInput) -> Result<(), PeerError> {
        let fail = |e: rusqlite::Error| {
            if is_busy(&e) {
                PeerError::Retry
            } else {
                PeerError::Fatal(err(e))
            }
        };
        // BEGIN IMMEDIATE takes the write lock up front: the transaction cannot fail
        // halfway with SQLITE_BUSY on its first write (a deferred one can, and then
        // deadlocks with a reader upgrading too).
        c.prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut s| s.execute([]))
            .map_err(fail)?;
        let r = SqliteTpcb::body(c, i).and_then(|()| {
            c.prepare_cached("COMMIT")?.execute([])?;
            Ok(())
        });
        if let Err(e) = r {
            // A failed COMMIT (busy) leaves the transaction open: roll it back.
            if !c.is_autocommit() {
                c.execute_batch("ROLLBACK")
                    .map_err(|e| PeerError::Fatal(err(e)))?;
            }
            return Err(fail(e));
        }
        Ok(())
    }

    fn check(&self, expected_rows: Option<u64>) -> Result<Consistency, String> {
        let c = SqliteTpcb::connect(&self.path).map_err(err)?;
        let mut tally = Tally::new();
        let mut st = c
            .prepare("SELECT balance FROM branch ORDER BY id")
            .map_err(err)?;
        for b in st.query_map([], |r| r.get::<_, i64>(0)).map_err(err)? {
            tally.branch(b.map_err(err)?);
        }
        let mut st = c
            .prepare("SELECT branch, balance FROM teller ORDER BY id")
            .map_err(err)?;
        for t in st
            .query_map([], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, i64>(1)?)))
            .map_err(err)?
        {
            let (b, bal) = t.map_err(err)?;
            tally.teller(b, bal);
        }
        let sum: i64 = c
            .query_row("SELECT coalesce(sum(balance), 0) FROM account", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        tally.account(sum);
        let mut st = c
            .prepare(
                "SELECT teller, branch, sum(delta), count(*) FROM history GROUP BY teller, branch",
            )
            .map_err(err)?;
        for h in st
            .query_map([], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .map_err(err)?
        {
            let (t, b, d, n) = h.map_err(err)?;
            tally.history_group(t, b, d, n as u64);
        }
        Ok(tally.finish(expected_rows))
    }

    fn durability(&self) -> Result<(bool, String), String> {
        durability_of(&self.client()?)
    }
}

/// Whether a commit on `c` is durable, read back from the connection (the settings are
/// per connection), and the settings in words.
pub(crate) fn durability_of(c: &Connection) -> Result<(bool, String), String> {
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(err)?;
    let sync: i64 = c
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .map_err(err)?;
    // FULL (2) or EXTRA (3) syncs the WAL at every commit; NORMAL (1) in WAL mode
    // does not (a power loss may lose the last commits).
    let durable = mode.eq_ignore_ascii_case("wal") && sync >= 2;
    let name = match sync {
        0 => "OFF",
        1 => "NORMAL",
        2 => "FULL",
        _ => "EXTRA",
    };
    Ok((
        durable,
        format!("journal_mode={mode}, synchronous={name}, BEGIN IMMEDIATE"),
    ))
}
