//! The version order of every key, recovered from what the writes returned.
//!
//! A write returns the value it replaced, so a write whose first write of a key
//! returned value `v` comes right after `v`'s writer in the key's order: these links are
//! exact (as the list-append workload's are in Elle). Absence carries no name: a write
//! that returned `None` replaced *some* absent version — the initial absence or a
//! committed delete. Following the exact links from each such write gives *fragments*
//! of the order, each starting from absence; the fragments are put in the order of
//! their first writer's commit (the commit order is a serialization order, `oracle`).
//! Every fragment but the last must end with a delete: one that ends with a value and is
//! followed by another means the next one's writer claimed the key absent while a
//! committed value was never overwritten (a lost version). Two committed writers that
//! replaced the same value are a lost version too (one of them overwrote a version that
//! was no longer there).

use super::facts::{Facts, Values};
use super::oracle::Pos;
use super::record::{Key, TxnNo, Val};
use super::report::{Anomaly, Class};
use std::collections::{BTreeMap, HashMap};

/// A version of a key: the initial absence (`None`) or the last write of a committed
/// transaction (a value or a delete).
pub type Version = Option<TxnNo>;

/// One write-write edge: `from`'s version of `key` was replaced by `to`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WwEdge {
    /// The earlier writer.
    pub from: TxnNo,
    /// The later writer.
    pub to: TxnNo,
    /// The key.
    pub key: Key,
    /// Known only from the commit order (between fragments), not from a returned value.
    pub inferred: bool,
}

/// The version order of every key.
#[derive(Debug, Default)]
pub struct Versions {
    /// The writers that replaced each version (more than one: a lost version).
    pub next: HashMap<(Key, Version), Vec<TxnNo>>,
    /// Each key's absent versions with their places, in order (the initial absence at 0).
    pub absent: HashMap<Key, Vec<(Pos, Version)>>,
    /// Every write-write edge.
    pub ww: Vec<WwEdge>,
    /// Lost versions and writes over versions no committed write installed.
    pub anomalies: Vec<Anomaly>,
}

impl Versions {
    /// The absent version of `key` a transaction at `pos` saw: the latest one installed
    /// before its place.
    pub fn absent_before(&self, key: &Key, pos: Pos) -> Version {
        let list = self.absent.get(key).map_or(&[][..], Vec::as_slice);
        let i = list.partition_point(|(p, _)| *p < pos);
        if i == 0 {
            None
        } else {
            list[i - 1].1
        }
    }

    /// The writers that replaced `version` of `key`.
    pub fn after(&self, key: &Key, version: Version) -> &[TxnNo] {
        self.next
            .get(&(key.clone(), version))
            .map_or(&[][..], Vec::as_slice)
    }
}

/// One committed writer of one key.
struct Writer {
    txn: TxnNo,
    pos: Pos,
    prev: Option<Val>,
    deletes: bool,
}

/// Recovers the version order of every key from the committed writers' facts; `pos`
/// places them (the commit order).
pub fn versions(
    facts: &HashMap<TxnNo, Facts>,
    values: &Values,
    pos: &HashMap<TxnNo, Pos>,
) -> Versions {
    let mut by_key: BTreeMap<Key, Vec<Writer>> = BTreeMap::new();
    for (&txn, f) in facts {
        let Some(&p) = pos.get(&txn) else { continue };
        for w in &f.writes {
            by_key.entry(w.key.clone()).or_default().push(Writer {
                txn,
                pos: p,
                prev: w.prev.clone(),
                deletes: w.last.is_none(),
            });
        }
    }
    let mut v = Versions::default();
    for (key, mut writers) in by_key {
        writers.sort_by_key(|w| w.pos);
        let mut starts = Vec::new();
        let mut succ: HashMap<TxnNo, Vec<TxnNo>> = HashMap::new();
        for w in &writers {
            let Some(val) = &w.prev else {
                starts.push(w.txn);
                continue;
            };
            // A value that names no committed write is reported with the reads (the
            // returned value is one): it links nothing.
            if let Ok(u) = values.writer(&key, val) {
                succ.entry(u).or_default().push(w.txn);
                v.ww.push(WwEdge {
                    from: u,
                    to: w.txn,
                    key: key.clone(),
                    inferred: false,
                });
            }
        }
        for (u, overwriters) in &succ {
            if overwriters.len() > 1 {
                let names: Vec<String> = overwriters.iter().map(ToString::to_string).collect();
                let mut txns = vec![*u];
                txns.extend(overwriters);
                v.anomalies.push(Anomaly::new(
                    Class::LostVersion,
                    txns,
                    format!(
                        "{} all overwrote {u}'s version of {key}",
                        names.join(" and ")
                    ),
                ));
            }
            v.next.insert((key.clone(), Some(*u)), overwriters.clone());
        }
        // Fragments in the order of their first writer's commit.
        let info: HashMap<TxnNo, &Writer> = writers.iter().map(|w| (w.txn, w)).collect();
        let mut absent = vec![(0, None)];
        let mut tail: Version = None;
        let mut tail_deleted = true;
        for &s in &starts {
            if !tail_deleted {
                let t = tail.expect("only a writer's version holds a value");
                v.anomalies.push(Anomaly::new(
                    Class::LostVersion,
                    vec![t, s],
                    format!(
                        "{s} wrote {key} over absence, but {t}'s value of it (committed before) was never overwritten or deleted"
                    ),
                ));
            }
            v.next.entry((key.clone(), tail)).or_default().push(s);
            if let Some(t) = tail {
                v.ww.push(WwEdge {
                    from: t,
                    to: s,
                    key: key.clone(),
                    inferred: true,
                });
            }
            // Follow the exact links, taking the earliest overwriter at a fork.
            let mut at = s;
            let mut seen = vec![s];
            while let Some(n) = succ
                .get(&at)
                .and_then(|o| o.iter().min_by_key(|t| info[t].pos))
            {
                if seen.contains(n) {
                    break;
                }
                seen.push(*n);
                at = *n;
            }
            tail = Some(at);
            tail_deleted = info[&at].deletes;
            if tail_deleted {
                absent.push((info[&at].pos, tail));
            }
        }
        // Fragments overlap in commit order only when something is already wrong; keep
        // the list searchable anyway.
        absent.sort_by_key(|(p, _)| *p);
        v.absent.insert(key, absent);
    }
    v
}
