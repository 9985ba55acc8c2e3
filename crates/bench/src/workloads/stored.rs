//! What a benchmark database holds. A session's loader records its workload and scale in
//! the table `bench_meta` once the load has committed, so that `sluice bench tpcb|tatp
//! --dir D` can reuse a loaded database (skipping the load) and refuse, naming the
//! difference, one that holds another workload or scale. Databases loaded before the
//! record existed are recognised by their tables and row counts.

use sluice::{Database, Error, Table};
use std::fmt;

/// The table holding the loader's record.
pub const META_TABLE: &str = "bench_meta";
/// The record's key in [`META_TABLE`].
const META_KEY: &[u8] = b"loaded";

const TPCB_TABLES: [&str; 4] = ["account", "branch", "history", "teller"];
const TATP_TABLES: [&str; 5] = [
    "access_info",
    "call_forwarding",
    "special_facility",
    "subscriber",
    "subscriber_nbr",
];

/// What a database holds, as far as the benchmarks are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// No tables: a new database, ready to load.
    Empty,
    /// TPC-B, fully loaded.
    Tpcb {
        /// Branches.
        scale: u32,
        /// Accounts per branch.
        accounts_per_branch: u32,
    },
    /// TATP, fully loaded.
    Tatp {
        /// Subscribers.
        subscribers: u32,
    },
    /// Anything else, described (other tables, or a load that did not finish).
    Other(String),
}

impl fmt::Display for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stored::Empty => write!(f, "no tables"),
            Stored::Tpcb {
                scale,
                accounts_per_branch,
            } => write!(
                f,
                "TPC-B at scale {scale} ({accounts_per_branch} accounts per branch)"
            ),
            Stored::Tatp { subscribers } => write!(f, "TATP with {subscribers} subscribers"),
            Stored::Other(s) => write!(f, "{s}"),
        }
    }
}

impl Stored {
    fn record(&self) -> Option<String> {
        match self {
            Stored::Tpcb {
                scale,
                accounts_per_branch,
            } => Some(format!("tpcb {scale} {accounts_per_branch}")),
            Stored::Tatp { subscribers } => Some(format!("tatp {subscribers}")),
            _ => None,
        }
    }

    fn parse(record: &[u8]) -> Option<Stored> {
        let s = std::str::from_utf8(record).ok()?;
        let f: Vec<&str> = s.split(' ').collect();
        match f.as_slice() {
            ["tpcb", scale, apb] => Some(Stored::Tpcb {
                scale: scale.parse().ok()?,
                accounts_per_branch: apb.parse().ok()?,
            }),
            ["tatp", n] => Some(Stored::Tatp {
                subscribers: n.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// Records what a finished load put in `db` (call it after the load committed: a
/// database whose record is missing did not finish loading).
pub fn record(db: &Database, what: &Stored) -> Result<(), Error> {
    let Some(v) = what.record() else {
        return Err(Error::InvalidArgument(format!(
            "only a loaded workload is recorded, not {what}"
        )));
    };
    let t = db.table_or_create(META_TABLE)?;
    let mut tx = db.begin();
    tx.put(&t, META_KEY, v.as_bytes())?;
    tx.commit()
}

fn count(db: &Database, t: &Table) -> Result<u64, Error> {
    let mut tx = db.begin();
    let n = tx.scan_all(t).try_fold(0u64, |n, r| r.map(|_| n + 1));
    tx.commit()?;
    n
}

fn counts(db: &Database, names: &[&str]) -> Result<Vec<u64>, Error> {
    names.iter().map(|n| count(db, &db.table(n)?)).collect()
}

/// What `db` holds: the loader's record if there is one, else what its tables and row
/// counts say (databases loaded before the record existed).
pub fn identify(db: &Database) -> Result<Stored, Error> {
    let mut names = db.table_names()?;
    names.sort();
    if names.is_empty() {
        return Ok(Stored::Empty);
    }
    if names.iter().any(|n| n == META_TABLE) {
        let t = db.table(META_TABLE)?;
        let mut tx = db.begin();
        let v = tx.get(&t, META_KEY)?;
        tx.commit()?;
        return Ok(match v.as_deref().map(Stored::parse) {
            Some(Some(s)) => s,
            Some(None) => Stored::Other(format!(
                "an unreadable load record {:?}",
                String::from_utf8_lossy(v.as_deref().unwrap_or_default())
            )),
            None => Stored::Other("a load that did not finish (no load record)".into()),
        });
    }
    if names == TPCB_TABLES {
        let c = counts(db, &["branch", "teller", "account"])?;
        let (b, t, a) = (c[0], c[1], c[2]);
        let whole = b > 0
            && b <= u32::MAX as u64
            && t == b * super::tpcb::TELLERS_PER_BRANCH as u64
            && a > 0
            && a % b == 0
            && a / b <= u32::MAX as u64;
        return Ok(if whole {
            Stored::Tpcb {
                scale: b as u32,
                accounts_per_branch: (a / b) as u32,
            }
        } else {
            Stored::Other(format!(
                "a partial TPC-B load ({b} branches, {t} tellers, {a} accounts)"
            ))
        });
    }
    if names == TATP_TABLES {
        let c = counts(db, &["subscriber", "subscriber_nbr"])?;
        return Ok(if c[0] > 0 && c[0] == c[1] && c[0] <= u32::MAX as u64 {
            Stored::Tatp {
                subscribers: c[0] as u32,
            }
        } else {
            Stored::Other(format!(
                "a partial TATP load ({} subscribers, {} subscriber numbers)",
                c[0], c[1]
            ))
        });
    }
    Ok(Stored::Other(format!("tables {}", names.join(", "))))
}

/// What the consistency check of a loaded benchmark database found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Checked {
    /// "tpcb" or "tatp".
    pub workload: &'static str,
    /// What was checked, one line.
    pub summary: String,
    /// The identities or rules that failed (empty: consistent).
    pub violations: Vec<String>,
}

impl Checked {
    /// True if nothing failed.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Runs the consistency check of the workload `db` holds (`what`, from [`identify`]):
/// TPC-B's balance identities ([`super::tpcb::check`]) and its row counts for the
/// scale; TATP's population rules ([`super::tatp::check_population`]).
pub fn check(db: &Database, what: &Stored) -> Result<Checked, Error> {
    match *what {
        Stored::Tpcb {
            scale,
            accounts_per_branch,
        } => {
            let t = super::tpcb::TpcbTables::open(db)?;
            let c = super::tpcb::check(db, &t, None)?;
            let mut violations = c.violations;
            let want = [
                ("branch", scale as u64),
                (
                    "teller",
                    scale as u64 * super::tpcb::TELLERS_PER_BRANCH as u64,
                ),
                ("account", scale as u64 * accounts_per_branch as u64),
            ];
            for (name, n) in want {
                let got = count(db, &db.table(name)?)?;
                if got != n {
                    violations.push(format!("{name} holds {got} rows, {what} has {n}"));
                }
            }
            Ok(Checked {
                workload: "tpcb",
                summary: format!(
                    "{what}: balances account {} teller {} branch {} history {}, {} history rows",
                    c.account_sum, c.teller_sum, c.branch_sum, c.history_sum, c.history_rows
                ),
                violations,
            })
        }
        Stored::Tatp { subscribers } => {
            let t = super::tatp::TatpTables::open(db)?;
            Ok(Checked {
                workload: "tatp",
                summary: format!("{what}: population rules"),
                violations: super::tatp::check_population(db, &t, subscribers)?,
            })
        }
        _ => Err(Error::InvalidArgument(format!(
            "no benchmark workload to check: the database holds {what}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for s in [
            Stored::Tpcb {
                scale: 3,
                accounts_per_branch: 100_000,
            },
            Stored::Tatp { subscribers: 77 },
        ] {
            assert_eq!(Stored::parse(s.record().unwrap().as_bytes()), Some(s));
        }
        assert_eq!(Stored::parse(b"tpcb x 1"), None);
        assert_eq!(Stored::parse(b"\xff"), None);
    }
}
