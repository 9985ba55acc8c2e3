//! Each peer at its best client count, and sluice ÷ that best.
//!
//! A peer is an engine other than sluice and, for PostgreSQL, one of its pgbench
//! variants (they are driven differently, so each has a best of its own). Its rows are
//! its turns, one per client count of `--peer-clients`. The best is the highest tps
//! among the rows that count: the engine ran (did not fail), passed the consistency
//! check after every round, was durable by the settings read back, and committed
//! something. A faster row that lost transactions or acknowledged them before they were
//! on disk is not a peer's best; a peer none of whose rows counts has no best, and its
//! summary says why.

use super::engine::{CompareRow, Engine};
use serde::Serialize;

/// One peer's best client count and sluice ÷ its throughput there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeerBest {
    /// The engine.
    pub peer: Engine,
    /// How it was driven (PostgreSQL's two pgbench variants are two peers).
    pub variant: String,
    /// The client count of its best row; `None` when no row counts.
    pub best_clients: Option<usize>,
    /// The best row's tps; `None` when no row counts.
    pub best_tps: Option<f64>,
    /// sluice's tps ÷ `best_tps`; `None` without a best or without a sluice row that
    /// counts (sluice not asked for, or inconsistent).
    pub sluice_over_best: Option<f64>,
    /// Why there is no best: which counts failed, were inconsistent, were not durable or
    /// committed nothing, or why the engine ran at no count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_best: Option<String>,
}

/// Whether a row may be a best (and sluice's row a baseline): it ran, is consistent and
/// durable, and committed something.
fn counts(r: &CompareRow) -> bool {
    r.available && r.consistent && r.durable && r.tps > 0.0
}

/// Sets every row's [`CompareRow::sluice_over`] and each peer's
/// [`CompareRow::best`], and returns one [`PeerBest`] per peer in the order of the
/// rows. sluice's baseline is its first row that counts; a row's ratio is given when it
/// ran and committed something. A tie goes to the fewer clients.
pub fn rank(rows: &mut [CompareRow]) -> Vec<PeerBest> {
    let sluice = rows
        .iter()
        .find(|r| r.engine == Engine::Sluice && counts(r))
        .map(|r| r.tps);
    for r in rows.iter_mut() {
        r.best = false;
        r.sluice_over = match sluice {
            Some(s) if r.available && r.tps > 0.0 => Some(s / r.tps),
            _ => None,
        };
    }
    let mut peers: Vec<(Engine, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.engine != Engine::Sluice) {
        let key = (r.engine, r.variant.clone());
        if !peers.contains(&key) {
            peers.push(key);
        }
    }
    let mut out = Vec::with_capacity(peers.len());
    for (peer, variant) in peers {
        let mine = |r: &CompareRow| r.engine == peer && r.variant == variant;
        let best = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| mine(r) && counts(r))
            // `max_by` keeps the last of equal maxima: compare the client counts reversed
            // so that a tie goes to the fewer clients.
            .max_by(|(_, a), (_, b)| {
                a.tps
                    .total_cmp(&b.tps)
                    .then_with(|| b.clients.cmp(&a.clients))
            })
            .map(|(i, _)| i);
        let summary = match best {
            Some(i) => {
                let r = &mut rows[i];
                r.best = true;
                PeerBest {
                    peer,
                    variant,
                    best_clients: r.clients,
                    best_tps: Some(r.tps),
                    sluice_over_best: sluice.map(|s| s / r.tps),
                    no_best: None,
                }
            }
            None => {
                let no_best = Some(why_no_best(rows.iter().filter(|r| mine(r))));
                PeerBest {
                    peer,
                    variant,
                    best_clients: None,
                    best_tps: None,
                    sluice_over_best: None,
                    no_best,
                }
            }
        };
        out.push(summary);
    }
    out
}

/// Why none of a peer's rows counts, e.g. "failed at 1, 4; inconsistent at 16".
fn why_no_best<'a>(rows: impl Iterator<Item = &'a CompareRow>) -> String {
    let rows: Vec<&CompareRow> = rows.collect();
    if let [r] = rows[..] {
        if r.clients.is_none() {
            let how = if r.failed { "failed" } else { "unavailable" };
            return format!("{how}: {}", r.unavailable.as_deref().unwrap_or("no reason"));
        }
    }
    let mut parts = Vec::new();
    // What a row that does not count is, and how to tell.
    type Reason = (&'static str, fn(&CompareRow) -> bool);
    let reasons: [Reason; 4] = [
        ("failed", |r| !r.available),
        ("inconsistent", |r| r.available && !r.consistent),
        ("not durable", |r| r.available && r.consistent && !r.durable),
        ("committed nothing", |r| {
            r.available && r.consistent && r.durable && r.tps <= 0.0
        }),
    ];
    for (what, which) in reasons {
        let at: Vec<String> = rows
            .iter()
            .filter(|r| which(r))
            .map(|r| r.clients.map_or("-".into(), |c| c.to_string()))
            .collect();
        let unit = if at == ["1"] { "client" } else { "clients" };
        if !at.is_empty() {
            parts.push(format!("{what} at {} {unit}", at.join(", ")));
        }
    }
    assert!(
        !parts.is_empty(),
        "a peer without a best has a row that says why"
    );
    format!("no count qualifies: {}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::CompareWorkload;

    fn row(engine: Engine, variant: &str, clients: usize, tps: f64) -> CompareRow {
        CompareRow {
            available: true,
            unavailable: None,
            consistent: true,
            durable: true,
            tps,
            ..CompareRow::unavailable(
                CompareWorkload::Tpcb,
                engine,
                variant,
                Some(clients),
                String::new(),
            )
        }
    }

    fn failed(engine: Engine, clients: usize) -> CompareRow {
        CompareRow::unavailable(
            CompareWorkload::Tpcb,
            engine,
            "",
            Some(clients),
            "failed in round 1: busy".into(),
        )
        .into_failed()
    }

    #[test]
    fn the_best_is_the_fastest_consistent_durable_count_and_the_ratio_is_sluice_over_it() {
        let mut rows = vec![
            row(Engine::Sluice, "", 64, 90_000.0),
            row(Engine::Sqlite, "", 1, 2_000.0),
            row(Engine::Sqlite, "", 4, 4_500.0),
            row(Engine::Sqlite, "", 16, 3_000.0),
            // Faster, but lost a transaction: not a best.
            CompareRow {
                consistent: false,
                ..row(Engine::Sqlite, "", 64, 9_000.0)
            },
        ];
        let s = rank(&mut rows);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].peer, Engine::Sqlite);
        assert_eq!(s[0].best_clients, Some(4));
        assert_eq!(s[0].best_tps, Some(4_500.0));
        assert_eq!(s[0].sluice_over_best, Some(20.0));
        assert_eq!(s[0].no_best, None);
        let best: Vec<bool> = rows.iter().map(|r| r.best).collect();
        assert_eq!(best, [false, false, true, false, false]);
        // Every row that ran gets sluice ÷ its own tps, sluice's own 1.
        assert_eq!(rows[0].sluice_over, Some(1.0));
        assert_eq!(rows[1].sluice_over, Some(45.0));
        assert_eq!(rows[4].sluice_over, Some(10.0));
    }

    #[test]
    fn a_peer_whose_every_count_failed_or_was_inconsistent_has_no_best_and_says_so() {
        let mut rows = vec![
            row(Engine::Sluice, "", 64, 90_000.0),
            failed(Engine::Rocksdb, 1),
            failed(Engine::Rocksdb, 4),
            CompareRow {
                consistent: false,
                ..row(Engine::Rocksdb, "", 16, 7_000.0)
            },
            CompareRow {
                durable: false,
                ..row(Engine::Rocksdb, "", 64, 8_000.0)
            },
        ];
        let s = rank(&mut rows);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].best_clients, s[0].best_tps), (None, None));
        assert_eq!(s[0].sluice_over_best, None);
        assert_eq!(
            s[0].no_best.as_deref(),
            Some(
                "no count qualifies: failed at 1, 4 clients; inconsistent at 16 clients; \
                 not durable at 64 clients"
            )
        );
        assert!(rows.iter().all(|r| !r.best));
        assert_eq!(rows[1].sluice_over, None, "a failed row has no ratio");
    }

    #[test]
    fn each_postgres_variant_is_a_peer_of_its_own_and_a_tie_goes_to_fewer_clients() {
        let mut rows = vec![
            row(Engine::Postgres, "tpcb-like", 1, 1_000.0),
            row(Engine::Postgres, "tpcb-like", 16, 3_000.0),
            row(Engine::Postgres, "1 round trip", 4, 5_000.0),
            row(Engine::Postgres, "1 round trip", 16, 5_000.0),
            row(Engine::Sluice, "", 64, 50_000.0),
        ];
        let s = rank(&mut rows);
        let got: Vec<(&str, Option<usize>, Option<f64>)> = s
            .iter()
            .map(|p| (p.variant.as_str(), p.best_clients, p.sluice_over_best))
            .collect();
        assert_eq!(
            got,
            [
                ("tpcb-like", Some(16), Some(50_000.0 / 3_000.0)),
                ("1 round trip", Some(4), Some(10.0)),
            ]
        );
        assert_eq!(rows.iter().filter(|r| r.best).count(), 2);
    }

    #[test]
    fn without_sluice_the_best_is_still_picked_but_no_ratio_is_given() {
        let mut rows = vec![
            row(Engine::Sqlite, "", 1, 100.0),
            row(Engine::Sqlite, "", 4, 300.0),
        ];
        let s = rank(&mut rows);
        assert_eq!(s[0].best_clients, Some(4));
        assert_eq!(s[0].sluice_over_best, None);
        assert!(rows.iter().all(|r| r.sluice_over.is_none()));
    }

    #[test]
    fn an_engine_that_ran_at_no_count_has_no_best_and_gives_its_reason() {
        let mut rows = vec![
            row(Engine::Sluice, "", 64, 90_000.0),
            CompareRow::unavailable(
                CompareWorkload::Tpcb,
                Engine::Sqlite,
                "",
                None,
                "not built".into(),
            ),
            CompareRow::unavailable(
                CompareWorkload::Tpcb,
                Engine::Postgres,
                "",
                None,
                "no initdb".into(),
            )
            .into_failed(),
        ];
        let s = rank(&mut rows);
        let why: Vec<Option<&str>> = s.iter().map(|p| p.no_best.as_deref()).collect();
        assert_eq!(
            why,
            [Some("unavailable: not built"), Some("failed: no initdb")]
        );
    }
}
