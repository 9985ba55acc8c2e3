//! The checker: a history in, its anomalies out.

use super::cycles;
use super::facts::facts;
use super::graph;
use super::oracle::replay;
use super::record::History;
use super::report::Anomaly;
use super::versions::versions;

/// What checking a history found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Transactions in the history.
    pub transactions: u64,
    /// Of which committed.
    pub committed: u64,
    /// External reads of committed transactions checked (each key a point read named,
    /// each key of the universe a scan covered, each first write's previous value).
    pub reads_checked: u64,
    /// Dependency edges.
    pub edges: u64,
    /// Every anomaly: the graph's (cycles, G1a, G1b, internal, lost versions, garbled
    /// values) and the commit-order model's mismatches. The two oracles are independent,
    /// so one defect is often reported by both.
    pub anomalies: Vec<Anomaly>,
}

/// Checks `h`: its facts, the commit-order replay (which also places the read-only
/// transactions), the version order, the dependency graph and its cycles.
pub fn check(h: &History) -> Checked {
    let (facts, values, mut anomalies) = facts(h);
    let r = replay(h, &facts);
    let v = versions(&facts, &values, &r.pos);
    let (g, problems) = graph::build(h, &facts, &values, &v, &r.pos);
    anomalies.extend(v.anomalies);
    anomalies.extend(problems);
    anomalies.extend(cycles::anomalies(&g));
    anomalies.extend(r.anomalies);
    Checked {
        transactions: h.txns.len() as u64,
        committed: h.txns.iter().filter(|t| t.end.committed()).count() as u64,
        reads_checked: r.reads_checked,
        edges: g.edges() as u64,
        anomalies,
    }
}
