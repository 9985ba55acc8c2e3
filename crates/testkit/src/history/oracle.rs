//! The second oracle, independent of the dependency graph: replay the committed
//! transactions in commit-LSN order against a `BTreeMap` and check that every external
//! read of every committed transaction returned exactly what the map holds at its place
//! (its own writes are checked apart, in `facts`), and every count (`len`) the number of
//! the table's keys the map holds there, with the transaction's own writes applied.
//!
//! Why the commit order: under strict two-phase locking a transaction holds every lock
//! until its commit record is in the log (every protocol of the engine releases no
//! earlier: early lock release only moves the release before the record is durable), so
//! the order of commit records is a serialization order.
//!
//! Read-only transactions write no commit record. Such a transaction holds its locks
//! until it ends, so it serializes at any point between its last lock and its first
//! release, a point that lies after every commit whose writes it read and before every
//! commit that overwrote what it read: somewhere in the commit order there is a place
//! where each of its reads is what the map holds. The oracle looks for that place: it
//! takes the place where the most of its reads match (the earliest, on a tie), and any
//! read that does not match there is a mismatch. The dependency graph then puts the
//! transaction at that place too.

use super::facts::{CountObs, Facts, Obs};
use super::record::{show_read, History, Key, TxnNo, Val, ValueId};
use super::report::{Anomaly, Class};
use std::collections::{BTreeMap, HashMap};

/// A place in the serial order: writer `i` of the commit order (from 1) is at `2i`; a
/// read-only transaction placed after `p` writers is at `2p + 1`; the initial state is at
/// 0.
pub type Pos = u64;

/// What the replay found.
#[derive(Debug, Default)]
pub struct Replay {
    /// Every committed transaction's place.
    pub pos: HashMap<TxnNo, Pos>,
    /// The committed transactions with a commit record, in commit order.
    pub writers: Vec<TxnNo>,
    /// External reads checked.
    pub reads_checked: u64,
    /// Reads that do not match the map.
    pub anomalies: Vec<Anomaly>,
}

fn matches(model: Option<ValueId>, seen: &Option<Val>) -> bool {
    match (model, seen) {
        (None, None) => true,
        (Some(m), Some(Val::Id(s))) => m == *s,
        _ => false,
    }
}

/// The value of a key after each writer that changed it: `(i, value)` from writer `i`
/// on (the initial absence at 0 is implicit).
type Timeline = Vec<(u64, Option<ValueId>)>;

fn at(line: Option<&Timeline>, p: u64) -> Option<ValueId> {
    let line = line.map_or(&[][..], Vec::as_slice);
    let i = line.partition_point(|(w, _)| *w <= p);
    if i == 0 {
        None
    } else {
        line[i - 1].1
    }
}

/// Replays `h` (with its `facts`) in commit-LSN order.
pub fn replay(h: &History, facts: &HashMap<TxnNo, Facts>) -> Replay {
    let mut r = Replay::default();
    let mut logged: Vec<(u64, TxnNo)> = Vec::new();
    let mut read_only = Vec::new();
    for t in &h.txns {
        match t.end {
            super::record::End::Committed { lsn: Some(l) } => logged.push((l.0, t.no)),
            super::record::End::Committed { lsn: None } => {
                if facts.get(&t.no).is_some_and(|f| !f.writes.is_empty()) {
                    r.anomalies.push(Anomaly::new(
                        Class::Internal,
                        vec![t.no],
                        format!("{} wrote but its commit logged no record", t.no),
                    ));
                }
                read_only.push(t.no);
            }
            _ => {}
        }
    }
    logged.sort_unstable();
    r.writers = logged.iter().map(|&(_, t)| t).collect();
    let n = r.writers.len() as u64;
    let mut model: BTreeMap<Key, ValueId> = BTreeMap::new();
    let mut lines: HashMap<Key, Timeline> = HashMap::new();
    let empty = Facts::default();
    let mut wrong: Vec<Wrong<'_>> = Vec::new();
    // The size of each table after each place: `sizes[p][table]`, p writers applied.
    let table_size = |model: &BTreeMap<Key, ValueId>| -> Vec<u64> {
        (0..h.tables)
            .map(|t| model.keys().filter(|k| k.table == t).count() as u64)
            .collect()
    };
    let mut sizes = vec![table_size(&model)];
    for (i, &t) in r.writers.iter().enumerate() {
        let i = i as u64 + 1;
        r.pos.insert(t, 2 * i);
        let f = facts.get(&t).unwrap_or(&empty);
        for o in &f.obs {
            r.reads_checked += 1;
            let m = model.get(&o.key).copied();
            if !matches(m, &o.seen) {
                wrong.push((t, format!("writer {i} of {n}"), o, m));
            }
        }
        for c in &f.counts {
            r.reads_checked += 1;
            let m = c.expected(model.keys());
            if m != c.got {
                r.anomalies
                    .push(wrong_count(t, &format!("writer {i} of {n}"), c, m));
            }
        }
        for w in &f.writes {
            match w.last {
                Some(v) => model.insert(w.key.clone(), v),
                None => model.remove(&w.key),
            };
            lines.entry(w.key.clone()).or_default().push((i, w.last));
        }
        sizes.push(table_size(&model));
    }
    for t in read_only {
        let f = facts.get(&t).unwrap_or(&empty);
        r.reads_checked += (f.obs.len() + f.counts.len()) as u64;
        // Count, for every place 0..=n, the reads that match there.
        let mut diff = vec![0i64; n as usize + 2];
        for c in &f.counts {
            // A read-only transaction has no writes of its own to count.
            for (p, size) in sizes.iter().enumerate() {
                if size[usize::from(c.table)] == c.got {
                    diff[p] += 1;
                    diff[p + 1] -= 1;
                }
            }
        }
        for o in &f.obs {
            let line = lines.get(&o.key);
            let changes = line.map_or(&[][..], Vec::as_slice);
            // The value holds from each change until the next.
            let mut from = 0u64;
            let mut value = None;
            for &(w, v) in changes.iter().chain(std::iter::once(&(n + 1, None))) {
                if matches(value, &o.seen) && from < w {
                    diff[from as usize] += 1;
                    diff[w as usize] -= 1;
                }
                from = w;
                value = v;
            }
        }
        let (mut best, mut best_count, mut run) = (0u64, -1i64, 0i64);
        for (p, d) in diff.iter().enumerate().take(n as usize + 1) {
            run += d;
            if run > best_count {
                best = p as u64;
                best_count = run;
            }
        }
        r.pos.insert(t, 2 * best + 1);
        for c in &f.counts {
            let m = sizes[best as usize][usize::from(c.table)];
            if m != c.got {
                let place = format!("read-only, best placed after writer {best} of {n}");
                r.anomalies.push(wrong_count(t, &place, c, m));
            }
        }
        for o in &f.obs {
            let m = at(lines.get(&o.key), best);
            if !matches(m, &o.seen) {
                let place = format!("read-only, best placed after writer {best} of {n}");
                wrong.push((t, place, o, m));
            }
        }
    }
    r.anomalies.extend(mismatches(h, wrong));
    r
}

/// A count that does not match the map's at the transaction's place.
fn wrong_count(t: TxnNo, place: &str, c: &CountObs, model: u64) -> Anomaly {
    Anomaly::new(
        Class::ModelMismatch,
        vec![t],
        format!(
            "{t} ({place}) op {} counted {} entries in t{} but the commit-order model has {model}",
            c.op, c.got, c.table
        ),
    )
}

/// One read that does not match the map: the reader, its place, the read, the map's value.
type Wrong<'f> = (TxnNo, String, &'f Obs, Option<ValueId>);

/// One anomaly per distinct wrong read (key, value seen, value the map has): a value
/// that reverted is read wrong by every later reader, and that is one defect.
fn mismatches(h: &History, wrong: Vec<Wrong<'_>>) -> Vec<Anomaly> {
    let mut groups: Vec<(Wrong<'_>, Vec<String>)> = Vec::new();
    for w in wrong {
        let same = |g: &&mut (Wrong<'_>, Vec<String>)| {
            g.0 .2.key == w.2.key && g.0 .2.seen == w.2.seen && g.0 .3 == w.3
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.1.push(format!("{} op {}", w.0, w.2.op)),
            None => groups.push((w, Vec::new())),
        }
    }
    groups
        .into_iter()
        .map(|((t, place, o, m), also)| {
            let more = match also.len() {
                0 => String::new(),
                n => format!("; {n} more reads the same"),
            };
            let how = h
                .scan_of(t, o.op)
                .map_or(String::new(), |s| format!(" ({s})"));
            let mut a = Anomaly::new(
                Class::ModelMismatch,
                vec![t],
                format!(
                    "{t} ({place}) op {}{how} read {} = {} but the commit-order model has {}{more}",
                    o.op,
                    o.key,
                    show_read(&o.seen),
                    show_read(&m.map(Val::Id))
                ),
            );
            if !also.is_empty() {
                let shown: Vec<&str> = also.iter().take(8).map(String::as_str).collect();
                let etc = if also.len() > 8 { ", ..." } else { "" };
                a.detail
                    .push(format!("also read so by {}{etc}", shown.join(", ")));
            }
            // The writers of both versions belong to the smallest history that shows it.
            let seen_writer = match &o.seen {
                Some(Val::Id(v)) => Some(v.txn),
                _ => None,
            };
            for w in [seen_writer, m.map(|v| v.txn)].into_iter().flatten() {
                if !a.txns.contains(&w) {
                    a.txns.push(w);
                }
            }
            a
        })
        .collect()
}
