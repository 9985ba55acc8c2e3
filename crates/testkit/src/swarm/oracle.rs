//! The oracle of a recovered database: what every state shown after a halt must be.
//!
//! * **Accounts**: all there, 8 bytes each, summing to the loaded total (no transfer is
//!   half there, under every protocol).
//! * **Markers**: each transaction's marker is in all the tables it wrote it to or in
//!   none (a partial transaction is never visible); no marker of a rolled-back
//!   transaction appears.
//! * **Each thread's transactions form a prefix**: those whose markers are present are
//!   the thread's first `p` attempted commits of the session, and `p` covers every
//!   acknowledged one unless the protocol is `async` or the transaction chose
//!   `Durability::Async` (then the missing ones are counted, not a violation — unless the
//!   database was closed cleanly, which must keep them). An async commit missing before
//!   an acknowledged durable one of its thread breaks the prefix rule.
//! * **Owned keys, markers and scratch tables exactly**: every row outside the accounts
//!   equals the state the previous recovery showed (`settled`) with the writes of each
//!   thread's prefix applied, values byte for byte — scratch tables as rows of one
//!   virtual table (`super::scratch`), so a table is listed exactly when the prefix
//!   created it and did not drop or rename it away, with exactly its rows.
//! * **Large values**: each database's hidden table holds exactly the chunks of the large
//!   values shown.

use super::config::{ACCT, TABLES};
use super::engine::{Db, Rows, Tbl};
use super::scratch::stored_key;
use super::workload::{total, Attempt, ThreadLog, Write};
use crate::crash::{chunks_of, state_diff};

/// What a recovered state is judged against.
pub(crate) struct Expected<'a> {
    /// The state the previous recovery showed (at first, the load).
    pub(crate) settled: &'a Rows,
    /// What each thread did since.
    pub(crate) threads: &'a [ThreadLog],
    /// The sum of the accounts.
    pub(crate) total: i64,
    /// Accounts in all.
    pub(crate) accounts: usize,
    /// Acknowledged durable commits must all be present (every protocol but `async`,
    /// and `async` after a clean close).
    pub(crate) durable: bool,
    /// Acknowledged async commits ([`sluice::Durability::Async`]) must be present too
    /// (after a clean close).
    pub(crate) keep_async: bool,
}

impl Expected<'_> {
    pub(crate) fn new<'a>(
        cfg: &super::config::Config,
        settled: &'a Rows,
        threads: &'a [ThreadLog],
        durable: bool,
        keep_async: bool,
    ) -> Expected<'a> {
        Expected {
            settled,
            threads,
            total: total(cfg),
            accounts: cfg.accounts as usize * ACCT.len(),
            durable,
            keep_async,
        }
    }

    /// Judges the rows a recovered database shows: how many acknowledged commits are
    /// missing (those that had to survive, and those a crash may take), and what rule
    /// broke, if any.
    pub(crate) fn judge(&self, got: &Rows) -> (Lost, Result<(), String>) {
        if let Err(p) = self.accounts(got) {
            return (Lost::default(), Err(p));
        }
        let mut want: Rows = self
            .settled
            .iter()
            .filter(|((t, _), _)| !ACCT.contains(t))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut lost = Lost::default();
        let mut problem = None;
        for (t, log) in self.threads.iter().enumerate() {
            for (tb, k, _) in &log.rolled_back {
                if got.contains_key(&(*tb, k.clone())) {
                    problem.get_or_insert(format!(
                        "the marker {} of a rolled-back transaction of thread {t} is in {}",
                        String::from_utf8_lossy(k),
                        TABLES[*tb]
                    ));
                }
            }
            let (p, broke) = prefix(t, &log.attempts, got);
            for a in log.attempts[p..].iter().filter(|a| a.acked) {
                if self.durable && (!a.is_async || self.keep_async) {
                    lost.kept += 1;
                } else {
                    lost.allowed += 1;
                }
            }
            if let Some(b) = broke {
                problem.get_or_insert(b);
            }
            for a in &log.attempts[..p] {
                for (tb, k, v) in &a.writes {
                    match v {
                        Some(v) => want.insert((*tb, k.clone()), v.clone()),
                        None => want.remove(&(*tb, k.clone())),
                    };
                }
            }
        }
        if let Some(p) = problem {
            return (lost, Err(p));
        }
        let shown: Rows = got
            .iter()
            .filter(|((t, _), _)| !ACCT.contains(t))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if shown != want {
            return (
                lost,
                Err(format!(
                    "owned keys, markers or scratch tables differ from the state of each thread's commit prefix (table index: {TABLES:?}, then the scratch tables); {}",
                    state_diff(&want, &shown)
                )),
            );
        }
        if lost.kept > 0 {
            return (
                lost,
                Err(format!(
                    "{} acknowledged commits that had to survive are missing",
                    lost.kept
                )),
            );
        }
        (lost, Ok(()))
    }

    fn accounts(&self, got: &Rows) -> Result<(), String> {
        let mut sum = 0i64;
        let mut n = 0;
        for ((t, k), v) in got.iter().filter(|((t, _), _)| ACCT.contains(t)) {
            let b: [u8; 8] = v.as_slice().try_into().map_err(|_| {
                format!(
                    "account {} of {} holds {} bytes, not 8",
                    String::from_utf8_lossy(k),
                    TABLES[*t],
                    v.len()
                )
            })?;
            sum += i64::from_le_bytes(b);
            n += 1;
        }
        if sum != self.total || n != self.accounts {
            return Err(format!(
                "{n} accounts sum to {sum}, not {} to {}: a transfer is half there",
                self.accounts, self.total
            ));
        }
        Ok(())
    }
}

/// Acknowledged commits a recovered state misses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lost {
    /// Those that had to survive (a violation).
    pub(crate) kept: u64,
    /// Those a crash may take: under the `async` protocol, or async commits
    /// ([`sluice::Durability::Async`]), before a clean close.
    pub(crate) allowed: u64,
}

/// Thread `t`'s prefix in `got`: how many of its attempts are present, and what broke (a
/// partial transaction, or a present one after an absent one).
fn prefix(t: usize, attempts: &[Attempt], got: &Rows) -> (usize, Option<String>) {
    let mut p = None;
    let mut broke = None;
    for (n, a) in attempts.iter().enumerate() {
        let markers: Vec<&Write> = a
            .writes
            .iter()
            .filter(|(tb, _, _)| super::config::MARK.contains(tb))
            .collect();
        let present: Vec<&str> = markers
            .iter()
            .filter(|(tb, k, _)| got.contains_key(&(*tb, k.clone())))
            .map(|(tb, _, _)| TABLES[*tb])
            .collect();
        let name = || {
            markers.first().map_or(String::new(), |(_, k, _)| {
                String::from_utf8_lossy(k).into_owned()
            })
        };
        if !present.is_empty() && present.len() != markers.len() {
            let all: Vec<&str> = markers.iter().map(|(tb, _, _)| TABLES[*tb]).collect();
            broke.get_or_insert(format!(
                "transaction {} is in {present:?} of {all:?}: a partial transaction is visible",
                name()
            ));
        }
        match (present.is_empty(), p) {
            (true, None) => p = Some(n),
            (false, Some(first)) => {
                broke.get_or_insert(format!(
                    "thread {t}'s transaction {} is present but its earlier transaction {} is not: not a prefix of the thread's commits",
                    name(),
                    attempts[first].index
                ));
            }
            _ => {}
        }
    }
    (p.unwrap_or(attempts.len()), broke)
}

/// Checks that each database's hidden table of large values holds exactly the chunks of
/// the large values `rows` show.
pub(crate) fn check_chunks(db: &Db, tables: &[Tbl], rows: &Rows) -> Result<(), String> {
    let got = db
        .large_value_chunks()
        .map_err(|e| format!("reading the tables of large values failed: {e}"))?;
    let limits = db.limits();
    for (i, &have) in got.iter().enumerate() {
        // A scratch table's row as stored: under its own key (its length counts).
        let stored: Vec<(Vec<u8>, &Vec<u8>)> = rows
            .iter()
            .filter(|((t, _), _)| tables.get(*t).map_or(0, Tbl::partition) == i)
            .map(|((t, k), v)| (stored_key(*t, k).to_vec(), v))
            .collect();
        let want = chunks_of(limits, stored.iter().map(|(k, v)| (k, *v)));
        if have != want {
            return Err(format!(
                "partition {i}'s table of large values holds {have} chunks, but its recovered large values have {want}"
            ));
        }
    }
    Ok(())
}
