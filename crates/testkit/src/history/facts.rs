//! From operations to facts: what each transaction observed of the others (its external
//! reads) and what it left behind (its last write of each key), checking on the way that
//! it saw its own writes.
//!
//! Within a transaction, a key it already wrote must read as its own last write (or as
//! absent after its own delete), and a write's returned previous value must be its own
//! last write of the key: these are internal checks and make no edges. Every other read
//! — a point read, each key of the universe a scan covers (present or absent), the
//! previous value a first write of a key returns — is an *observation* of a version
//! another transaction installed. A `delete` that returns `None` wrote nothing (the key
//! was absent): it is an observation of absence, not a write.

use super::record::{show_read, History, Key, Op, Span, Txn, TxnNo, Val, ValueId};
use super::report::{Anomaly, Class};
use std::collections::{BTreeMap, HashMap};

/// One external read of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obs {
    /// The key.
    pub key: Key,
    /// What was seen (`None`: absent).
    pub seen: Option<Val>,
    /// The operation's index in its transaction.
    pub op: usize,
    /// Seen by a scan (its absence of a key is a predicate read).
    pub predicate: bool,
}

/// What a transaction left of one key: the version it overwrote first, and its last
/// write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The key.
    pub key: Key,
    /// What its first write of the key returned as the previous value.
    pub prev: Option<Val>,
    /// Its last write: a value, or `None` for a delete.
    pub last: Option<ValueId>,
}

/// A count (`len`) a transaction read: what it returned, and its own writes of the
/// table before it (which it counts as they stand, whatever the others committed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountObs {
    /// The operation's index in its transaction.
    pub op: usize,
    /// The table.
    pub table: u8,
    /// What `len` returned.
    pub got: u64,
    /// Its own writes of the table so far: each key, and whether it is present after.
    pub own: Vec<(Vec<u8>, bool)>,
}

impl CountObs {
    /// The count the transaction should see over `committed`, the keys of the table
    /// others' committed writes left (in a state of the serial order).
    pub fn expected<'k>(&self, committed: impl Iterator<Item = &'k Key>) -> u64 {
        let others = committed
            .filter(|k| k.table == self.table && !self.own.iter().any(|(o, _)| *o == k.key))
            .count();
        (others + self.own.iter().filter(|(_, present)| *present).count()) as u64
    }
}

/// The facts of one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Its external reads, in order.
    pub obs: Vec<Obs>,
    /// The counts it read (checked by the replay, `oracle`, not by the graph).
    pub counts: Vec<CountObs>,
    /// Its writes, one per key, in the order of its first write of each.
    pub writes: Vec<Write>,
}

/// What is known of every written value.
#[derive(Debug, Default)]
pub struct Values {
    /// Each value's key, and whether it is its writer's last write of that key.
    pub written: HashMap<ValueId, (Key, bool)>,
    /// Whether each transaction committed.
    pub committed: HashMap<TxnNo, bool>,
}

impl Values {
    /// The committed writer whose installed version `v` is, for a read of `key`; or
    /// the anomaly the read shows (G1a, G1b, or a value of no such write).
    pub fn writer(&self, key: &Key, v: &Val) -> Result<TxnNo, (Class, String)> {
        let v = match v {
            Val::Id(v) => v,
            Val::Garbled(g) => return Err((Class::Garbled, format!("read {key} = {g}"))),
        };
        match self.committed.get(&v.txn) {
            None => {
                return Err((
                    Class::Garbled,
                    format!("read {key} = {v}, of no transaction"),
                ))
            }
            Some(false) => {
                return Err((
                    Class::G1a,
                    format!("read {key} = {v}, written by {} which aborted", v.txn),
                ))
            }
            Some(true) => {}
        }
        match self.written.get(v) {
            Some((k, _)) if k != key => Err((
                Class::Garbled,
                format!("read {key} = {v}, a value written to {k}"),
            )),
            Some((_, true)) => Ok(v.txn),
            Some((_, false)) => Err((
                Class::G1b,
                format!(
                    "read {key} = {v}, which {} overwrote itself before committing",
                    v.txn
                ),
            )),
            None => Err((
                Class::Garbled,
                format!("read {key} = {v}, a write {} never made", v.txn),
            )),
        }
    }
}

fn same(own: &Option<ValueId>, seen: &Option<Val>) -> bool {
    match (own, seen) {
        (None, None) => true,
        (Some(a), Some(Val::Id(b))) => a == b,
        _ => false,
    }
}

/// Walks one transaction's operations.
struct Walk<'h> {
    h: &'h History,
    txn: &'h Txn,
    /// Its own last write of each key it wrote so far.
    own: BTreeMap<Key, Option<ValueId>>,
    facts: Facts,
    problems: Vec<Anomaly>,
}

impl Walk<'_> {
    fn internal(&mut self, op: usize, what: String) {
        self.problems.push(Anomaly::new(
            Class::Internal,
            vec![self.txn.no],
            format!("{} op {op}: {what}", self.txn.no),
        ));
    }

    /// A read of `key`: checked against its own write, or an observation.
    fn read(&mut self, op: usize, key: &Key, seen: &Option<Val>, predicate: bool) {
        match self.own.get(key) {
            Some(own) if !same(own, seen) => {
                let own = show_read(&own.map(Val::Id));
                self.internal(
                    op,
                    format!("read {key} = {} after its own write {own}", show_read(seen)),
                );
            }
            Some(_) => {}
            None => {
                if let Some(Val::Id(v)) = seen {
                    if v.txn == self.txn.no {
                        self.internal(op, format!("read {key} = {v}, its own write yet to come"));
                        return;
                    }
                }
                self.facts.obs.push(Obs {
                    key: key.clone(),
                    seen: seen.clone(),
                    op,
                    predicate,
                });
            }
        }
    }

    /// A write of `key` (`new`: `None` for a delete) that returned `prev`.
    fn write(&mut self, op: usize, key: &Key, prev: &Option<Val>, new: Option<ValueId>) {
        match self.own.get(key) {
            Some(own) => {
                if !same(own, prev) {
                    let own = show_read(&own.map(Val::Id));
                    self.internal(
                        op,
                        format!(
                            "a write of {key} returned {} after its own write {own}",
                            show_read(prev)
                        ),
                    );
                }
                if let Some(w) = self.facts.writes.iter_mut().find(|w| &w.key == key) {
                    w.last = new;
                }
            }
            None => {
                // The first write's previous value is a read of the version it replaces.
                self.read(op, key, prev, false);
                self.facts.writes.push(Write {
                    key: key.clone(),
                    prev: prev.clone(),
                    last: new,
                });
            }
        }
        self.own.insert(key.clone(), new);
    }

    /// A scan's entries: in order, in range, of the universe; then every key of the
    /// universe in range, seen or not, is read.
    fn scan(&mut self, op: usize, table: u8, span: &Span, seen: &[(Vec<u8>, Val)]) {
        if seen.windows(2).any(|w| w[0].0 >= w[1].0) {
            self.internal(
                op,
                format!("scan t{table} {span} returned keys out of order"),
            );
        }
        for (k, _) in seen {
            if !span.contains(k) || self.h.keys.binary_search(k).is_err() {
                let k = String::from_utf8_lossy(k);
                self.problems.push(Anomaly::new(
                    Class::Garbled,
                    vec![self.txn.no],
                    format!(
                        "{} op {op}: scan t{table} {span} returned key {k:?}",
                        self.txn.no
                    ),
                ));
            }
        }
        let h = self.h;
        for k in h.keys.iter().filter(|k| span.contains(k)) {
            let got = seen.iter().find(|(s, _)| s == k).map(|(_, v)| v.clone());
            let key = Key {
                table,
                key: k.clone(),
            };
            self.read(op, &key, &got, true);
        }
    }

    fn op(&mut self, i: usize, op: &Op) {
        match op {
            Op::Get { key, got, .. } => self.read(i, key, got, false),
            Op::Put {
                key, value, prev, ..
            } => self.write(i, key, prev, Some(*value)),
            Op::Delete { key, prev } => {
                if prev.is_some() || self.own.contains_key(key) {
                    self.write(i, key, prev, None);
                } else {
                    // Nothing was there and nothing was written: a read of absence.
                    self.read(i, key, prev, false);
                }
            }
            Op::Scan { table, span, seen } => self.scan(i, *table, span, seen),
            Op::Len { table, got } => {
                let own = self
                    .own
                    .iter()
                    .filter(|(k, _)| k.table == *table)
                    .map(|(k, v)| (k.key.clone(), v.is_some()))
                    .collect();
                self.facts.counts.push(CountObs {
                    op: i,
                    table: *table,
                    got: *got,
                    own,
                });
            }
            Op::Retain {
                table,
                span,
                seen,
                deleted,
                reported,
            } => {
                self.scan(i, *table, span, seen);
                if *reported != deleted.len() as u64 {
                    self.internal(
                        i,
                        format!(
                            "retain deleted {} keys but returned {reported}",
                            deleted.len()
                        ),
                    );
                }
                for k in deleted {
                    let key = Key {
                        table: *table,
                        key: k.clone(),
                    };
                    // Under the scan's lock the key still holds what the predicate saw.
                    let prev = seen.iter().find(|(s, _)| s == k).map(|(_, v)| v.clone());
                    self.write(i, &key, &prev, None);
                }
            }
        }
    }
}

/// The facts of every transaction, what is known of every value, and the internal
/// anomalies found on the way (of committed transactions only: an aborted one's reads
/// constrain nothing).
pub fn facts(h: &History) -> (HashMap<TxnNo, Facts>, Values, Vec<Anomaly>) {
    let mut values = Values::default();
    let mut all = HashMap::new();
    let mut problems = Vec::new();
    for t in &h.txns {
        values.committed.insert(t.no, t.end.committed());
        let mut w = Walk {
            h,
            txn: t,
            own: BTreeMap::new(),
            facts: Facts::default(),
            problems: Vec::new(),
        };
        for (i, op) in t.ops.iter().enumerate() {
            w.op(i, op);
        }
        for op in &t.ops {
            if let Op::Put { key, value, .. } = op {
                let last = w
                    .facts
                    .writes
                    .iter()
                    .any(|x| &x.key == key && x.last == Some(*value));
                values.written.insert(*value, (key.clone(), last));
            }
        }
        if t.end.committed() {
            problems.extend(w.problems);
        }
        all.insert(t.no, w.facts);
    }
    (all, values, problems)
}
