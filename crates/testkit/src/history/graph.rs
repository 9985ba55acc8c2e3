//! The dependency graph over committed transactions (Adya): write-write edges from the
//! version order, write-read edges from each read to the version's writer, and
//! read-write anti-dependencies from each read to the writers that replaced the version
//! it saw. A scan's absence of a key is a predicate read: its anti-dependency, to the
//! writer that made the key appear, is what a phantom needs.

use super::facts::{Facts, Values};
use super::oracle::Pos;
use super::record::{show_read, History, TxnNo, Val};
use super::report::Anomaly;
use super::versions::Versions;
use std::collections::{HashMap, HashSet};

/// The kind of a dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `to` replaced `from`'s version.
    Ww,
    /// `to` read `from`'s version.
    Wr,
    /// `from` read a version of a key that `to` replaced.
    RwItem,
    /// `from`'s scan did not see a key of its range that `to` then made appear.
    RwPredicate,
}

impl Kind {
    /// The short name edges print with.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ww => "ww",
            Kind::Wr => "wr",
            Kind::RwItem => "rw",
            Kind::RwPredicate => "rw-predicate",
        }
    }
}

/// One edge, with why it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The target node.
    pub to: usize,
    /// Its kind.
    pub kind: Kind,
    /// What made it (the key, the read).
    pub why: String,
}

/// The graph: committed transactions and their dependencies.
#[derive(Debug, Default)]
pub struct Graph {
    /// The nodes' transactions.
    pub nodes: Vec<TxnNo>,
    /// Each node's outgoing edges (one per target and kind).
    pub adj: Vec<Vec<Edge>>,
    index: HashMap<TxnNo, usize>,
    have: HashSet<(usize, usize, Kind)>,
}

impl Graph {
    fn node(&mut self, t: TxnNo) -> usize {
        if let Some(&i) = self.index.get(&t) {
            return i;
        }
        self.nodes.push(t);
        self.adj.push(Vec::new());
        self.index.insert(t, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    /// Adds an edge (self-edges and repeats of a target and kind are dropped).
    pub fn add(&mut self, from: TxnNo, to: TxnNo, kind: Kind, why: impl FnOnce() -> String) {
        if from == to {
            return;
        }
        let (f, t) = (self.node(from), self.node(to));
        if self.have.insert((f, t, kind)) {
            self.adj[f].push(Edge {
                to: t,
                kind,
                why: why(),
            });
        }
    }

    /// Edges in total.
    pub fn edges(&self) -> usize {
        self.adj.iter().map(Vec::len).sum()
    }
}

/// Builds the graph of `h`; `pos` places every committed transaction (`oracle`). Reads
/// of aborted or intermediate values are returned as G1a / G1b (one per reader and
/// writer), and reads of values no write made as garbled.
pub fn build(
    h: &History,
    facts: &HashMap<TxnNo, Facts>,
    values: &Values,
    versions: &Versions,
    pos: &HashMap<TxnNo, Pos>,
) -> (Graph, Vec<Anomaly>) {
    let mut g = Graph::default();
    let mut problems = Vec::new();
    let mut reported = HashSet::new();
    for e in &versions.ww {
        let how = if e.inferred { " (by commit order)" } else { "" };
        g.add(e.from, e.to, Kind::Ww, || format!("{}{how}", e.key));
    }
    let mut readers: Vec<(&TxnNo, &Pos)> = pos.iter().collect();
    readers.sort();
    for (&t, &p) in readers {
        let Some(f) = facts.get(&t) else { continue };
        for o in &f.obs {
            let version = match &o.seen {
                None => versions.absent_before(&o.key, p),
                Some(v) => match values.writer(&o.key, v) {
                    Ok(w) => Some(w),
                    Err((class, what)) => {
                        let writer = match v {
                            Val::Id(id) => Some(id.txn),
                            Val::Garbled(_) => None,
                        };
                        if reported.insert((class, t, writer)) {
                            let mut txns = vec![t];
                            txns.extend(writer);
                            problems.push(Anomaly::new(
                                class,
                                txns,
                                format!("{t} op {}: {what}", o.op),
                            ));
                        }
                        continue;
                    }
                },
            };
            let seen = show_read(&o.seen);
            if let Some(w) = version {
                g.add(w, t, Kind::Wr, || format!("{} = {seen}", o.key));
            }
            let kind = if o.predicate && o.seen.is_none() {
                Kind::RwPredicate
            } else {
                Kind::RwItem
            };
            for &n in versions.after(&o.key, version) {
                g.add(t, n, kind, || match h.scan_of(t, o.op) {
                    Some(scan) if o.seen.is_none() => {
                        format!("{scan} op {} did not see {}", o.op, o.key)
                    }
                    _ => format!("op {} read {} = {seen}", o.op, o.key),
                });
            }
        }
    }
    (g, problems)
}
