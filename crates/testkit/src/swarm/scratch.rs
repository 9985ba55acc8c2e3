//! Scratch tables: creating, dropping and renaming tables inside a writing transaction,
//! a dimension of the swarm ([`Config::scratch_share`]).
//!
//! Each thread owns its scratch tables (`s{t}.{session}.{i}`, renamed to
//! `s{t}.{session}.{i}.r`), fenced off from the next thread's names in the catalog by an
//! empty table created with the database (`s{t}~`), so that no gap of the catalog is
//! shared and clients still never deadlock over it. A writing transaction may create one
//! and fill it with one to three rows (large values as the seed draws them), drop one of
//! the thread's tables (perhaps the one it just created), and rename one — all in the
//! transaction of its owned writes and markers, so the all-or-nothing rule covers them.
//! Before a drop and after a rename the transaction scans the table: it must hold the
//! rows the thread's model says.
//!
//! The oracle sees scratch tables as rows of one virtual table, [`SCRATCH`]: table `n` is
//! a row `n/` (its catalog entry) and a row `n/k` per row `k` in it. A create and its
//! fill are puts, a drop deletes the entry and every row, a rename moves them. The
//! recovered-state reader ([`read_rows`]) lists the catalog and reads every table
//! outside [`TABLES`] into it, so the oracle's rules — each thread's commits a prefix,
//! nothing of a rolled-back transaction, exact rows, the chunks of large values — judge
//! them as any other rows: a dropped table must not be listed, a rolled-back drop leaves
//! its rows, and recovery of an uncommitted create leaves nothing.
//!
//! Ordinary databases only: a partitioned database has no transactional create, drop
//! or rename (`Partitioned` creates tables on its own; [`Config::draw`] draws a share of
//! 0 for it).

use super::config::{Config, TABLES};
use super::engine::{Db, Ops, Rows, Tbl, Write};
use crate::crash::{make_value, ValueShape};
use rand::rngs::StdRng;
use rand::Rng;
use sluice::Error;
use std::collections::BTreeMap;

/// The index of the virtual table of scratch tables' rows in [`Rows`] (after [`TABLES`]).
pub(crate) const SCRATCH: usize = TABLES.len();

/// Between a table's name and a row's key in a key of [`SCRATCH`] (no name has one).
const SEP: u8 = b'/';

/// Rows of one table: (key, value), in key order.
type TableRows = Vec<(Vec<u8>, Vec<u8>)>;

/// The key in [`SCRATCH`] of row `key` of table `name` (`key` empty: the table itself).
pub(crate) fn scratch_key(name: &str, key: &[u8]) -> Vec<u8> {
    let mut k = name.as_bytes().to_vec();
    k.push(SEP);
    k.extend_from_slice(key);
    k
}

/// The value of a table's own row in [`SCRATCH`].
const LISTED: &[u8] = b"listed";

/// A key of [`SCRATCH`] split into the table's name and the row's key.
fn split(key: &[u8]) -> (&[u8], &[u8]) {
    let i = key.iter().position(|&b| b == SEP).unwrap_or(key.len());
    (&key[..i], &key[(i + 1).min(key.len())..])
}

/// The key a row of table index `t` has in its table: a scratch row's own key.
pub(crate) fn stored_key(t: usize, key: &[u8]) -> &[u8] {
    if t == SCRATCH {
        split(key).1
    } else {
        key
    }
}

/// The fence after thread `t`'s scratch tables in the catalog.
fn fence(t: usize) -> String {
    format!("s{t}~")
}

/// True for a row of [`SCRATCH`] in a table thread `t` owns.
pub(crate) fn owned_by(t: usize, tb: usize, key: &[u8]) -> bool {
    tb == SCRATCH && key.starts_with(format!("s{t}.").as_bytes())
}

/// The rows the fences add to the load (none when the seed draws no scratch tables).
pub(crate) fn initial_rows(cfg: &Config, rows: &mut Rows) {
    if cfg.scratch_share > 0.0 {
        for t in 0..super::config::MAX_THREADS {
            rows.insert((SCRATCH, scratch_key(&fence(t), b"")), LISTED.to_vec());
        }
    }
}

/// Creates the fences (with the database, when the seed draws scratch tables).
pub(crate) fn create_fences(db: &Db, cfg: &Config) -> Result<(), Error> {
    if cfg.scratch_share > 0.0 {
        let db = db
            .plain()
            .expect("scratch tables only in an ordinary database");
        for t in 0..super::config::MAX_THREADS {
            db.create_table(&fence(t))?;
        }
    }
    Ok(())
}

/// Thread `t`'s scratch tables in `model` (its committed state), with their rows.
fn tables_of(model: &Rows, t: usize) -> BTreeMap<String, TableRows> {
    let from = (SCRATCH, format!("s{t}.").into_bytes());
    let to = (SCRATCH, format!("s{t}/").into_bytes());
    let mut tables: BTreeMap<String, TableRows> = BTreeMap::new();
    for ((_, k), v) in model.range(from..to) {
        let (name, key) = split(k);
        let rows = tables
            .entry(String::from_utf8_lossy(name).into_owned())
            .or_default();
        if !key.is_empty() {
            rows.push((key.to_vec(), v.clone()));
        }
    }
    tables
}

/// A change to the thread's scratch tables.
#[derive(Debug, Clone)]
pub(super) enum TableOp {
    /// Creates table `name` and puts `rows` into it.
    Create { name: String, rows: TableRows },
    /// Drops table `name`, which holds `rows`.
    Drop { name: String, rows: TableRows },
    /// Renames table `from`, which holds `rows`, to `to`.
    Rename {
        from: String,
        to: String,
        rows: TableRows,
    },
}

/// What a seed's transactions did to tables (committed ones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TableCounts {
    pub(crate) created: u64,
    pub(crate) dropped: u64,
    pub(crate) renamed: u64,
}

impl TableCounts {
    pub(crate) fn add(&mut self, ops: &[TableOp]) {
        for op in ops {
            match op {
                TableOp::Create { .. } => self.created += 1,
                TableOp::Drop { .. } => self.dropped += 1,
                TableOp::Rename { .. } => self.renamed += 1,
            }
        }
    }

    pub(crate) fn merge(&mut self, o: TableCounts) {
        self.created += o.created;
        self.dropped += o.dropped;
        self.renamed += o.renamed;
    }
}

/// Draws the table operations of thread `t`'s `index`-th writing transaction from its
/// committed state `model` (none for most, or all, as the seed's share says).
pub(super) fn draw(
    rng: &mut StdRng,
    cfg: &Config,
    max_entry: usize,
    model: &Rows,
    (t, session, index): (usize, usize, usize),
) -> Vec<TableOp> {
    if cfg.scratch_share == 0.0 || !rng.gen_bool(cfg.scratch_share) {
        return Vec::new();
    }
    let mut tables = tables_of(model, t);
    let mut ops = Vec::new();
    if tables.is_empty() || rng.gen_bool(0.6) {
        let name = format!("s{t}.{session}.{index}");
        let rows: TableRows = (0..rng.gen_range(1..=3u32))
            .map(|r| {
                let shape = if rng.gen_bool(cfg.large.share) {
                    ValueShape::Large(
                        rng.gen_range(max_entry + 1..=max_entry * cfg.large.max_entries),
                    )
                } else {
                    ValueShape::Short(rng.gen_range(0..60))
                };
                let tag = format!("{}.{session}.{t}.{index}.s", cfg.seed);
                (format!("r{r}").into_bytes(), make_value(&tag, r, shape))
            })
            .collect();
        tables.insert(name.clone(), rows.clone());
        ops.push(TableOp::Create { name, rows });
    }
    let mut pick = |rng: &mut StdRng| {
        if tables.is_empty() {
            return None;
        }
        let name = tables.keys().nth(rng.gen_range(0..tables.len()))?.clone();
        tables.remove_entry(&name)
    };
    if rng.gen_bool(0.5) {
        if let Some((name, rows)) = pick(rng) {
            ops.push(TableOp::Drop { name, rows });
        }
    }
    if rng.gen_bool(0.4) {
        if let Some((from, rows)) = pick(rng) {
            let to = format!("s{t}.{session}.{index}.r");
            ops.push(TableOp::Rename { from, to, rows });
        }
    }
    ops
}

/// The names of the tables `ops` drop or rename that they do not create themselves: the
/// handles a transaction needs before it begins.
pub(super) fn needed(ops: &[TableOp]) -> Vec<String> {
    let created: Vec<&String> = ops
        .iter()
        .filter_map(|op| match op {
            TableOp::Create { name, .. } => Some(name),
            _ => None,
        })
        .collect();
    ops.iter()
        .filter_map(|op| match op {
            TableOp::Drop { name, .. } => Some(name),
            TableOp::Rename { from, .. } => Some(from),
            TableOp::Create { .. } => None,
        })
        .filter(|n| !created.contains(n))
        .cloned()
        .collect()
}

/// The writes of one operation to [`SCRATCH`], in order.
pub(super) fn writes_of(op: &TableOp) -> Vec<Write> {
    let put = |name: &str, rows: &TableRows| {
        std::iter::once((SCRATCH, scratch_key(name, b""), Some(LISTED.to_vec())))
            .chain(
                rows.iter()
                    .map(|(k, v)| (SCRATCH, scratch_key(name, k), Some(v.clone()))),
            )
            .collect::<Vec<Write>>()
    };
    let delete = |name: &str, rows: &TableRows| {
        std::iter::once((SCRATCH, scratch_key(name, b""), None))
            .chain(
                rows.iter()
                    .map(|(k, _)| (SCRATCH, scratch_key(name, k), None)),
            )
            .collect::<Vec<Write>>()
    };
    match op {
        TableOp::Create { name, rows } => put(name, rows),
        TableOp::Drop { name, rows } => delete(name, rows),
        TableOp::Rename { from, to, rows } => {
            let mut w = delete(from, rows);
            w.extend(put(to, rows));
            w
        }
    }
}

/// Runs `ops` in `tx`, with `handles` of the tables they need ([`needed`]): checks each
/// read against `rows` of the op, and appends the writes to `writes`.
pub(super) fn run(
    tx: &mut impl Ops,
    handles: &[(String, Tbl)],
    ops: &[TableOp],
    writes: &mut Vec<Write>,
    what: &dyn Fn(String) -> String,
) -> Result<Result<(), String>, Error> {
    let mut handles: Vec<(String, Tbl)> = handles.to_vec();
    let handle = |handles: &[(String, Tbl)], name: &str| {
        handles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h.clone())
            .expect("a handle for every table the ops use")
    };
    for op in ops {
        match op {
            TableOp::Create { name, rows } => {
                let tb = tx.create_table(name)?;
                for (k, v) in rows {
                    if tx.put(&tb, k, v)?.is_some() {
                        return Ok(Err(what(format!(
                            "a put into its new table {name} found a row"
                        ))));
                    }
                }
                handles.push((name.clone(), tb));
            }
            TableOp::Drop { name, rows } => {
                let tb = handle(&handles, name);
                if let Err(b) = holds(tx, &tb, rows, &format!("its table {name} before its drop"))?
                {
                    return Ok(Err(what(b)));
                }
                tx.drop_table(&tb)?;
            }
            TableOp::Rename { from, to, rows } => {
                let tb = handle(&handles, from);
                tx.rename_table(&tb, to)?;
                if let Err(b) = holds(tx, &tb, rows, &format!("its table {from} renamed to {to}"))?
                {
                    return Ok(Err(what(b)));
                }
            }
        }
        writes.extend(writes_of(op));
    }
    Ok(Ok(()))
}

/// Whether a scan of `tb` in `tx` returns exactly `rows` (else the rule it broke).
fn holds(
    tx: &mut impl Ops,
    tb: &Tbl,
    rows: &TableRows,
    what: &str,
) -> Result<Result<(), String>, Error> {
    let got = tx.scan(tb, None)?;
    if &got == rows {
        return Ok(Ok(()));
    }
    Ok(Err(format!(
        "{what} holds {} rows that differ from its model's {}",
        got.len(),
        rows.len()
    )))
}

/// Every row `db` shows, read in one transaction: those of [`TABLES`] under their
/// index, and those of every other table the catalog lists under [`SCRATCH`].
pub(crate) fn read_rows(db: &Db, tables: &[Tbl]) -> Result<Rows, Error> {
    let others = db.other_tables()?;
    let (mut rows, scanned) = db.read_rows(tables, &others)?;
    for (name, got) in scanned {
        rows.insert((SCRATCH, scratch_key(&name, b"")), LISTED.to_vec());
        rows.extend(
            got.into_iter()
                .map(|(k, v)| ((SCRATCH, scratch_key(&name, &k)), v)),
        );
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::super::config::MARK;
    use super::super::oracle::Expected;
    use super::super::workload::{initial_rows, marker_key, Attempt, ThreadLog};
    use super::*;

    /// A plain seed that draws scratch tables.
    fn config() -> Config {
        (0..)
            .map(Config::draw)
            .find(|c| c.scratch_share > 0.0)
            .expect("a seed draws scratch tables")
    }

    fn apply(rows: &mut Rows, writes: &[Write]) {
        for (tb, k, v) in writes {
            match v {
                Some(v) => rows.insert((*tb, k.clone()), v.clone()),
                None => rows.remove(&(*tb, k.clone())),
            };
        }
    }

    fn table(name: &str, n: u8) -> TableRows {
        (0..n)
            .map(|r| (vec![b'r', b'0' + r], format!("{name}:{r}").into_bytes()))
            .collect()
    }

    /// The oracle judges scratch tables as rows: a committed drop must take the table
    /// away (and only with its transaction's marker), a rolled-back create must leave
    /// nothing, and a rename must move every row.
    #[test]
    fn the_oracle_judges_scratch_tables_by_their_transactions() {
        let cfg = config();
        let mut settled = initial_rows(&cfg);
        let a = "s0.0.0".to_string();
        apply(
            &mut settled,
            &writes_of(&TableOp::Create {
                name: a.clone(),
                rows: table(&a, 2),
            }),
        );
        // Transaction 1 drops `a` and renames `b`, created by itself; transaction 2,
        // which created `c`, rolled back.
        let b = "s0.1.1".to_string();
        let ops = [
            TableOp::Create {
                name: b.clone(),
                rows: table(&b, 3),
            },
            TableOp::Drop {
                name: a.clone(),
                rows: table(&a, 2),
            },
            TableOp::Rename {
                from: b.clone(),
                to: "s0.1.1.r".into(),
                rows: table(&b, 3),
            },
        ];
        let marker = |i| (MARK[0], marker_key(0, 1, i), Some(marker_key(0, 1, i)));
        let mut writes: Vec<Write> = ops.iter().flat_map(writes_of).collect();
        writes.push(marker(1));
        let threads = [ThreadLog {
            attempts: vec![Attempt {
                index: 1,
                writes: writes.clone(),
                acked: true,
                is_async: false,
            }],
            rolled_back: vec![marker(2)],
        }];
        let judge = |got: &Rows, durable| {
            Expected::new(&cfg, &settled, &threads, durable, false)
                .judge(got)
                .1
        };
        let mut committed = settled.clone();
        apply(&mut committed, &writes);
        assert_eq!(judge(&committed, true), Ok(()));
        // Lost by a crash where that is allowed: `a` is still there, nothing else.
        assert_eq!(judge(&settled, false), Ok(()));

        let listed = |rows: &mut Rows, name: &str| {
            rows.insert((SCRATCH, scratch_key(name, b"")), LISTED.to_vec());
        };
        // The dropped table still listed, with or without its rows.
        let mut got = committed.clone();
        listed(&mut got, &a);
        assert!(judge(&got, true).is_err());
        apply(
            &mut got,
            &writes_of(&TableOp::Create {
                name: a.clone(),
                rows: table(&a, 2),
            }),
        );
        assert!(judge(&got, true).is_err());
        // The table the rolled-back transaction created is there.
        let mut got = committed.clone();
        listed(&mut got, "s0.1.2");
        assert!(judge(&got, true).is_err());
        // The renamed table under its old name too, or a row short.
        let mut got = committed.clone();
        listed(&mut got, &b);
        assert!(judge(&got, true).is_err());
        let mut got = committed.clone();
        got.remove(&(SCRATCH, scratch_key("s0.1.1.r", b"r2")));
        assert!(judge(&got, true).is_err());
        // The drop without its transaction's marker: a partial transaction.
        let mut got = settled.clone();
        apply(&mut got, &writes_of(&ops[1]));
        assert!(judge(&got, false).is_err());
    }

    #[test]
    fn a_plan_drops_and_renames_only_the_threads_committed_tables() {
        let cfg = config();
        let mut model = Rows::new();
        for name in ["s1.0.3", "s1.0.7.r"] {
            apply(
                &mut model,
                &writes_of(&TableOp::Create {
                    name: name.into(),
                    rows: table(name, 1),
                }),
            );
        }
        let (mut dropped, mut renamed) = (0, 0);
        let mut rng = rand::SeedableRng::seed_from_u64(7);
        for i in 0..200 {
            let ops = draw(&mut rng, &cfg, 100, &model, (1, 2, i));
            for op in &ops {
                match op {
                    TableOp::Create { name, rows } => {
                        assert_eq!(name, &format!("s1.2.{i}"));
                        assert!((1..=3).contains(&rows.len()));
                    }
                    TableOp::Drop { name, rows }
                    | TableOp::Rename {
                        from: name, rows, ..
                    } => {
                        let known = ["s1.0.3", "s1.0.7.r", &format!("s1.2.{i}")];
                        assert!(known.contains(&name.as_str()), "{name}");
                        if name.starts_with("s1.0.") {
                            assert_eq!(rows, &table(name, 1));
                        }
                        match op {
                            TableOp::Drop { .. } => dropped += 1,
                            _ => renamed += 1,
                        }
                    }
                }
            }
            let names: Vec<&String> = ops
                .iter()
                .filter_map(|op| match op {
                    TableOp::Drop { name, .. } | TableOp::Rename { from: name, .. } => Some(name),
                    TableOp::Create { .. } => None,
                })
                .collect();
            assert!(names.len() < 2 || names[0] != names[1], "{ops:?}");
        }
        assert!(dropped > 0 && renamed > 0);
    }
}
