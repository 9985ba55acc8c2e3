//! What the checker reports: an anomaly, its class, and the smallest history that shows
//! it (only the transactions involved, with their operations).

use super::record::{History, TxnNo};
use std::collections::HashMap;
use std::fmt;

/// The kinds of anomaly (Adya's classes as Elle names them, plus the checks of a single
/// transaction and of the version order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// A cycle of write-write edges only (dirty write).
    G0,
    /// A committed transaction read a value written by one that aborted.
    G1a,
    /// A committed transaction read a value its writer later overwrote itself
    /// (an intermediate version).
    G1b,
    /// A cycle of write-write and write-read edges (circular information flow).
    G1c,
    /// A cycle with an anti-dependency on an item (a key read, then overwritten).
    G2Item,
    /// A cycle that needs an anti-dependency of a predicate read: a scan did not see a
    /// key of its range that another transaction then made appear (or a later delete
    /// made disappear).
    Phantom,
    /// A transaction did not see its own writes, or an operation's result contradicts
    /// itself (a scan out of order or outside its range, `retain`'s count).
    Internal,
    /// Two committed writers overwrote the same version, or a write claimed a key absent
    /// while a committed value of it was never overwritten or deleted.
    LostVersion,
    /// A read returned bytes no write produced, or a value of another key.
    Garbled,
    /// The second oracle: replaying the committed transactions in commit-LSN order
    /// against a map, a read returned something else.
    ModelMismatch,
    /// The engine failed (an error that is not contention, or `verify` failed).
    EngineError,
}

impl Class {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Class::G0 => "G0",
            Class::G1a => "G1a",
            Class::G1b => "G1b",
            Class::G1c => "G1c",
            Class::G2Item => "G2-item",
            Class::Phantom => "phantom",
            Class::Internal => "internal",
            Class::LostVersion => "lost-version",
            Class::Garbled => "garbled",
            Class::ModelMismatch => "model-mismatch",
            Class::EngineError => "engine-error",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One anomaly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anomaly {
    /// Its class.
    pub class: Class,
    /// One line saying what was seen.
    pub summary: String,
    /// The transactions that show it (a cycle's, in cycle order).
    pub txns: Vec<TxnNo>,
    /// More lines: a cycle's edges, the model's values.
    pub detail: Vec<String>,
}

impl Anomaly {
    /// An anomaly of `class` involving `txns`.
    pub fn new(class: Class, txns: Vec<TxnNo>, summary: impl Into<String>) -> Anomaly {
        Anomaly {
            class,
            summary: summary.into(),
            txns,
            detail: Vec::new(),
        }
    }

    /// One line: the class and the summary.
    pub fn line(&self) -> String {
        format!("{}: {}", self.class, self.summary)
    }

    /// The anomaly with the smallest history that shows it: its lines, then each of its
    /// transactions with how it ended and its operations.
    pub fn render(&self, h: &History) -> String {
        let by_no: HashMap<TxnNo, usize> =
            h.txns.iter().enumerate().map(|(i, t)| (t.no, i)).collect();
        let mut out = self.line();
        for d in &self.detail {
            out.push_str("\n    ");
            out.push_str(d);
        }
        let mut shown = Vec::new();
        for no in &self.txns {
            if shown.contains(no) {
                continue;
            }
            shown.push(*no);
            let Some(t) = by_no.get(no).map(|&i| &h.txns[i]) else {
                out.push_str(&format!("\n  {no}: not in the history"));
                continue;
            };
            let client = if t.client == usize::MAX {
                "load".to_string()
            } else {
                format!("client {}", t.client)
            };
            out.push_str(&format!("\n  {no} ({client}, {}):", t.end));
            for (i, op) in t.ops.iter().enumerate() {
                out.push_str(&format!("\n    {i}: {op}"));
            }
        }
        out
    }
}
