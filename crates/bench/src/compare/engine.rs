//! The engines `sluice compare` knows, and the row it reports for each.

use crate::knobs::named_values;
use crate::metrics::Latency;
use crate::output::{thousands, Csv};
use serde::Serialize;

/// How to build the peers that need crates (printed when they are missing).
pub const BUILD_PEERS: &str = "cargo build --release -p sluice-cli --features peers";

/// An engine to compare (`--engines`), in the default order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Engine {
    /// sluice itself, through the bench driver.
    Sluice,
    /// SQLite through rusqlite (feature `peers`).
    Sqlite,
    /// RocksDB's TransactionDB through the rocksdb crate (feature `peers`).
    Rocksdb,
    /// PostgreSQL through pgbench, on a throwaway cluster.
    Postgres,
}

named_values!(Engine, "engine", serialize);

/// The workloads `sluice compare` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareWorkload {
    /// TPC-B on every engine.
    Tpcb,
    /// TATP on sluice, SQLite and RocksDB (pgbench has no TATP).
    Tatp,
}

named_values!(CompareWorkload, "workload", serialize);

impl Engine {
    /// Whether this binary was built with the engine (SQLite and RocksDB need the
    /// `peers` feature; PostgreSQL is an external program, found or not at run time).
    pub fn built(self) -> bool {
        match self {
            Engine::Sqlite | Engine::Rocksdb => cfg!(feature = "peers"),
            Engine::Sluice | Engine::Postgres => true,
        }
    }
}

/// One result row of a comparison (one JSON object).
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// The workload.
    pub workload: CompareWorkload,
    /// The engine.
    pub engine: Engine,
    /// How it was driven, e.g. "pgbench tpcb-like" or "1 round trip".
    pub variant: String,
    /// False when the engine could not run; then `unavailable` says why and the
    /// measurements are zero.
    pub available: bool,
    /// Why the engine did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The engine was asked for and is in this build but failed: it could not start or
    /// load, or it failed in a round (`unavailable` says how). An engine not built in,
    /// or PostgreSQL asked for TATP, is unavailable without having failed.
    pub failed: bool,
    /// Clients (transactions in the system at once) of this turn; `None` for an engine
    /// that ran at no count (not built, could not start or load, or PostgreSQL asked for
    /// TATP).
    pub clients: Option<usize>,
    /// Threads that ran them (sluice: agents; peers: one per client; pgbench: `-j`).
    pub threads: usize,
    /// Committed transactions per second over all rounds.
    pub tps: f64,
    /// Latency: the median of the rounds' medians and of their 99th percentiles.
    #[serde(flatten)]
    pub latency: Latency,
    /// Transactions committed in the measured windows.
    pub committed: u64,
    /// Attempts that failed with a retryable error (SQLITE_BUSY, lock timeout, busy,
    /// deadlock victim) and were run again.
    pub retries: u64,
    /// The workload's consistency check passed after every round.
    pub consistent: bool,
    /// What failed.
    pub violations: Vec<String>,
    /// Every acknowledged commit is on disk under the settings in force.
    pub durable: bool,
    /// The settings that make it durable (read back from the engine where it can say).
    pub durability: String,
    /// This peer's best client count: the highest tps among its consistent, durable
    /// counts ([`super::best::rank`]). Never set on sluice's row.
    pub best: bool,
    /// sluice's tps ÷ this row's tps (when both ran and this row committed anything).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sluice_over: Option<f64>,
    /// Rounds run.
    pub rounds: usize,
    /// Seconds measured over all rounds.
    pub seconds: f64,
}

impl CompareRow {
    /// A row for an engine that did not run.
    pub fn unavailable(
        workload: CompareWorkload,
        engine: Engine,
        variant: &str,
        clients: Option<usize>,
        why: String,
    ) -> CompareRow {
        CompareRow {
            workload,
            engine,
            variant: variant.to_string(),
            available: false,
            unavailable: Some(why),
            failed: false,
            clients,
            threads: 0,
            tps: 0.0,
            latency: Latency::default(),
            committed: 0,
            retries: 0,
            consistent: false,
            violations: Vec::new(),
            durable: false,
            durability: String::new(),
            best: false,
            sluice_over: None,
            rounds: 0,
            seconds: 0.0,
        }
    }

    /// This row (of an engine that did not run) marked failed (see
    /// [`CompareRow::failed`]).
    pub fn into_failed(self) -> CompareRow {
        CompareRow {
            failed: true,
            ..self
        }
    }

    /// Names of [`CompareRow::cells`]' columns.
    pub const COLUMNS: [&'static str; 12] = [
        "engine",
        "variant",
        "clients",
        "threads",
        "tps",
        "p50 µs",
        "p99 µs",
        "retries",
        "consistent",
        "durable",
        "best",
        "sluice ÷",
    ];

    /// The row as table cells.
    pub fn cells(&self) -> Vec<String> {
        if !self.available {
            // The word in the first column after the engine that has nothing to say: the
            // clients of an engine that ran at no count, else the threads.
            let how = if self.failed { "FAILED" } else { "unavailable" };
            let mut c = vec![self.engine.to_string(), self.variant.clone()];
            match self.clients {
                Some(n) => c.extend([n.to_string(), how.into()]),
                None => c.extend([how.into(), "-".into()]),
            }
            c.extend(std::iter::repeat_n("-".to_string(), 8));
            return c;
        }
        vec![
            self.engine.to_string(),
            self.variant.clone(),
            self.clients.map_or_else(|| "-".into(), |c| c.to_string()),
            self.threads.to_string(),
            thousands(self.tps),
            self.latency.p50_us.to_string(),
            self.latency.p99_us.to_string(),
            self.retries.to_string(),
            if self.consistent { "yes" } else { "NO" }.to_string(),
            if self.durable { "yes" } else { "no" }.to_string(),
            if self.best { "best" } else { "" }.to_string(),
            self.sluice_over
                .map(|r| format!("{r:.2}"))
                .unwrap_or_else(|| "-".into()),
        ]
    }
}

impl CompareRow {
    /// The rows as CSV: one line per row, the `note` column saying why an engine was
    /// unavailable or what made it durable.
    pub fn csv(rows: &[CompareRow]) -> String {
        let mut csv = Csv::new([
            "workload",
            "engine",
            "variant",
            "available",
            "clients",
            "threads",
            "tps",
            "p50_us",
            "p99_us",
            "committed",
            "retries",
            "consistent",
            "durable",
            "best",
            "sluice_over",
            "rounds",
            "seconds",
            "note",
        ]);
        for r in rows {
            csv.row([
                r.workload.to_string(),
                r.engine.to_string(),
                r.variant.clone(),
                r.available.to_string(),
                r.clients.map(|c| c.to_string()).unwrap_or_default(),
                r.threads.to_string(),
                format!("{:.1}", r.tps),
                r.latency.p50_us.to_string(),
                r.latency.p99_us.to_string(),
                r.committed.to_string(),
                r.retries.to_string(),
                r.consistent.to_string(),
                r.durable.to_string(),
                r.best.to_string(),
                r.sluice_over.map(|v| format!("{v:.4}")).unwrap_or_default(),
                r.rounds.to_string(),
                format!("{:.3}", r.seconds),
                r.unavailable
                    .clone()
                    .unwrap_or_else(|| r.durability.clone()),
            ]);
        }
        csv.finish()
    }
}

/// The median of some values (the mean of the middle two for an even count).
pub fn median(mut v: Vec<u64>) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for &e in Engine::value_variants() {
            assert_eq!(e.to_string().parse::<Engine>(), Ok(e));
        }
        assert!("oracle".parse::<Engine>().unwrap_err().contains("oracle"));
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(vec![3, 1, 2]), 2);
        assert_eq!(median(vec![4, 1, 3, 2]), 2);
        assert_eq!(median(vec![]), 0);
    }

    #[test]
    fn the_csv_quotes_a_variant_or_note_with_a_comma() {
        let mut r = CompareRow::unavailable(
            CompareWorkload::Tpcb,
            Engine::Sqlite,
            "WAL, a",
            Some(8),
            "why".into(),
        );
        r.durability = "fsync=on, sync".into();
        let csv = CompareRow::csv(&[r]);
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap().split(',').count(), 18);
        let row = lines.next().unwrap();
        assert!(row.starts_with("tpcb,sqlite,\"WAL, a\",false,8,"), "{row}");
        assert!(row.ends_with(",why"), "{row}");
    }

    #[test]
    fn a_failed_row_says_so_and_an_unavailable_one_does_not() {
        let f = CompareRow::unavailable(
            CompareWorkload::Tpcb,
            Engine::Postgres,
            "",
            None,
            "x".into(),
        )
        .into_failed();
        assert!(f.failed && !f.available);
        assert_eq!(f.cells()[2], "FAILED");
        let u =
            CompareRow::unavailable(CompareWorkload::Tpcb, Engine::Sqlite, "", None, "y".into());
        assert!(!u.failed);
        assert_eq!(u.cells()[2], "unavailable");
        // A turn that failed keeps its client count.
        let t = CompareRow::unavailable(
            CompareWorkload::Tpcb,
            Engine::Sqlite,
            "",
            Some(64),
            "z".into(),
        )
        .into_failed();
        assert_eq!(t.cells()[2..4], ["64", "FAILED"]);
    }

    #[test]
    fn an_unavailable_row_has_as_many_cells_as_columns() {
        let r = CompareRow::unavailable(
            CompareWorkload::Tpcb,
            Engine::Sqlite,
            "",
            Some(8),
            "why".into(),
        );
        assert_eq!(r.cells().len(), CompareRow::COLUMNS.len());
    }
}
