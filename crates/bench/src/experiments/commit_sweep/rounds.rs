//! Rounds that interleave a figure's points ([`crate::experiments::noise::rounds`]: why
//! rounds), and the points' spreads over the rounds.

use super::{Planned, SweepRow};
use crate::experiments::noise::rounds;
use crate::output::Spread;
use sluice::experiment::Activity;

/// `repeat` rounds of `round`, in order, each run marked with its round.
pub fn interleave(round: &[Planned], repeat: usize) -> Vec<Planned> {
    rounds(round, repeat)
        .into_iter()
        .map(|(r, p)| Planned { repeat: r, ..p })
        .collect()
}

/// What makes two rows repeats of one point: everything but the round.
#[derive(Debug, Clone, PartialEq)]
pub struct PointKey {
    /// Fig. 9's step.
    pub step: Option<&'static str>,
    /// Commit protocol.
    pub commit: String,
    /// Log-buffer variant.
    pub log_buffer: String,
    /// Clients.
    pub clients: usize,
    /// Zipf skew.
    pub skew: f64,
    /// Log latency ("disk" for the real disk).
    pub log_latency: String,
}

impl PointKey {
    /// A table row's first cells: the step (with `steps`), commit protocol, log buffer
    /// and clients.
    pub(super) fn lead_cells(&self, steps: bool) -> Vec<String> {
        let step = steps.then(|| self.step.unwrap_or("").to_string());
        step.into_iter()
            .chain([
                self.commit.clone(),
                self.log_buffer.clone(),
                self.clients.to_string(),
            ])
            .collect()
    }

    /// The point `r` is a repeat of.
    pub fn of(r: &SweepRow) -> PointKey {
        PointKey {
            step: r.step,
            commit: r.row.commit.clone(),
            log_buffer: r.row.log_buffer.clone(),
            clients: r.row.clients,
            skew: r.row.skew,
            log_latency: r.row.log_latency.clone(),
        }
    }
}

/// One point of a figure: its repeats' spreads of the measures the figures draw.
#[derive(Debug, Clone)]
pub(super) struct Point {
    pub key: PointKey,
    /// Committed (TPC-B) or completed (TATP) transactions per second.
    pub throughput: Spread,
    pub ctx_switches_per_txn: Spread,
    pub voluntary_ctx_per_txn: Spread,
    /// CPU time (user + system) ÷ (wall × cores).
    pub cpu_util: Spread,
    /// System time ÷ (wall × cores).
    pub sys_cpu_util: Spread,
    pub p50_us: Spread,
    /// Each activity's share of the agents' time, in `Activity::ALL`'s order (empty
    /// for a run without the agents' clocks).
    pub time_shares: Vec<Spread>,
    /// Each activity's share of their busy time (idleness left out, so one fewer).
    pub busy_shares: Vec<Spread>,
}

/// The points of `rows`, in the order of their first repeat.
pub(super) fn points(rows: &[SweepRow]) -> Vec<Point> {
    let mut keys: Vec<PointKey> = Vec::new();
    for r in rows {
        let k = PointKey::of(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .filter_map(|key| {
            let mine: Vec<&SweepRow> = rows.iter().filter(|r| PointKey::of(r) == key).collect();
            let of = |f: &dyn Fn(&SweepRow) -> f64| Spread::of(mine.iter().map(|r| f(r)));
            Some(Point {
                throughput: of(&|r| r.throughput())?,
                ctx_switches_per_txn: of(&|r| r.row.cpu.ctx_switches_per_txn)?,
                voluntary_ctx_per_txn: of(&|r| r.row.cpu.voluntary_ctx_per_txn)?,
                cpu_util: of(&|r| r.row.cpu.cpu_util)?,
                sys_cpu_util: of(&|r| r.row.cpu.sys_cpu_util)?,
                p50_us: of(&|r| r.row.latency.p50_us as f64)?,
                time_shares: shares(&mine, false),
                busy_shares: shares(&mine, true),
                key,
            })
        })
        .collect()
}

/// The share of the agents' time `r` spent in `a`; `None` for a run without the
/// agents' clocks (or with no time at all).
pub(super) fn share(r: &SweepRow, a: Activity) -> Option<f64> {
    let t = r.row.agent_time?;
    let total = t.total().as_secs_f64();
    (total > 0.0).then(|| t.get(a).as_secs_f64() / total)
}

/// The share of the agents' busy time (all of it but idleness) `r` spent in `a`;
/// `None` for idleness itself, for a run without the agents' clocks, or with no busy
/// time.
pub(super) fn busy_share(r: &SweepRow, a: Activity) -> Option<f64> {
    let t = r.row.agent_time?;
    let busy = t
        .total()
        .saturating_sub(t.get(Activity::Idle))
        .as_secs_f64();
    (a != Activity::Idle && busy > 0.0).then(|| t.get(a).as_secs_f64() / busy)
}

/// The spread over rounds of the rows `pick` chooses (one point's rounds) of `a`'s share
/// of the agents' busy time (`busy`) or of all their time; `None` unless every chosen
/// row has the agents' clocks (or none is chosen). What the report reads of the
/// breakdown figures.
pub fn share_spread(
    rows: &[SweepRow],
    pick: impl Fn(&SweepRow) -> bool,
    a: Activity,
    busy: bool,
) -> Option<Spread> {
    spread_over(rows.iter().filter(|r| pick(r)), a, busy)
}

/// The spread of `a`'s share (busy share with `busy`) over `rows`; `None` unless every
/// row has one.
fn spread_over<'r>(
    rows: impl Iterator<Item = &'r SweepRow>,
    a: Activity,
    busy: bool,
) -> Option<Spread> {
    let v: Option<Vec<f64>> = rows
        .map(|r| if busy { busy_share(r, a) } else { share(r, a) })
        .collect();
    Spread::of(v?)
}

/// The activities of the busy shares: every one but idleness.
pub(super) fn busy_activities() -> impl Iterator<Item = Activity> {
    Activity::ALL.into_iter().filter(|&a| a != Activity::Idle)
}

/// Each activity's share over `rows` (one point's rounds), in [`Activity::ALL`]'s order;
/// with `busy`, each busy share (idleness left out). Empty unless every row has them.
pub(super) fn shares(rows: &[&SweepRow], busy: bool) -> Vec<Spread> {
    let of = |a: Activity| spread_over(rows.iter().copied(), a, busy);
    let all: Option<Vec<Spread>> = if busy {
        busy_activities().map(of).collect()
    } else {
        Activity::ALL.into_iter().map(of).collect()
    };
    all.unwrap_or_default()
}

/// The spread over rounds of `value(num) ÷ value(den)`, pairing the two rows of each
/// round: the runs of a round ran minutes closer together than those of different
/// rounds, so their ratio carries less of the machine's drift. Rounds missing either row,
/// or with a zero denominator, are left out; `None` when none is left.
pub(super) fn paired_ratio(
    rows: &[SweepRow],
    num: impl Fn(&SweepRow) -> bool,
    den: impl Fn(&SweepRow) -> bool,
    value: impl Fn(&SweepRow) -> f64,
) -> Option<Spread> {
    let rounds = rows.iter().map(|r| r.repeat).max()?;
    Spread::of((0..=rounds).filter_map(|k| {
        let n = rows.iter().find(|r| r.repeat == k && num(r))?;
        let d = rows.iter().find(|r| r.repeat == k && den(r))?;
        let (n, d) = (value(n), value(d));
        (d > 0.0).then(|| n / d)
    }))
}

#[cfg(test)]
mod tests {
    use super::super::{Figure, SweepConfig};
    use super::*;
    use crate::workloads::session::Row;

    fn row(repeat: usize, commit: &str, clients: usize, tps: f64) -> SweepRow {
        SweepRow {
            figure: Figure::Clients,
            repeat,
            step: None,
            row: Row {
                workload: "tpcb",
                commit: commit.into(),
                log_buffer: "mutex".into(),
                clients,
                agents: clients,
                skew: 0.0,
                log_latency: "1ms".into(),
                tps: Some(tps),
                mqth: None,
                committed: 1,
                aborted: 0,
                rolled_back: 0,
                latency: Default::default(),
                cpu: Default::default(),
                log_bytes_per_txn: 0.0,
                zero_fill_bytes_per_txn: 0.0,
                segments_recycled: 0,
                agent_parks_per_txn: 0.0,
                agent_time: None,
                group_commit: "adaptive",
                gather_budget: 0,
                flushes_per_txn: 0.0,
                flush: "daemon".into(),
                consistent: true,
                violations: Vec::new(),
                kinds: Vec::new(),
                seconds: 1.0,
            },
        }
    }

    #[test]
    fn each_round_runs_every_point_once_in_the_same_order() {
        let mut c = SweepConfig::new(Figure::Clients);
        c.clients = vec![1, 4];
        c.repeat = 3;
        let plan = c.plan();
        let per_round = 2 * 4;
        assert_eq!(plan.len(), per_round * 3);
        for (r, round) in plan.chunks(per_round).enumerate() {
            assert!(round.iter().all(|p| p.repeat == r), "round {r} marked");
            for (a, b) in round.iter().zip(&plan[..per_round]) {
                assert_eq!(a.spec.protocol, b.spec.protocol);
                assert_eq!(a.spec.clients, b.spec.clients);
            }
        }
        // Not all repeats of one point first: the second run is another point.
        assert_ne!(plan[1].spec.protocol, plan[0].spec.protocol);
    }

    #[test]
    fn points_gather_their_repeats_into_median_min_max() {
        let rows = [
            row(0, "classic", 1, 100.0),
            row(0, "elr", 1, 300.0),
            row(1, "classic", 1, 120.0),
            row(1, "elr", 1, 200.0),
            row(2, "classic", 1, 90.0),
            row(2, "elr", 1, 330.0),
        ];
        let p = points(&rows);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].key.commit, "classic");
        let t = p[0].throughput;
        assert_eq!((t.median, t.min, t.max, t.n), (100.0, 90.0, 120.0, 3));
        let t = p[1].throughput;
        assert_eq!((t.median, t.min, t.max), (300.0, 200.0, 330.0));
        assert!(!p[0].throughput.overlaps(&p[1].throughput));
    }

    #[test]
    fn a_share_spread_covers_the_chosen_rows_and_needs_every_clock() {
        use sluice::experiment::TimeBreakdown;
        let with = |repeat, clients, lock_wait_ms: u64, idle_ms: u64| {
            let mut r = row(repeat, "elr", clients, 1.0);
            let ms = std::time::Duration::from_millis;
            let t: TimeBreakdown = [
                (Activity::LockWait, ms(lock_wait_ms)),
                (Activity::Tree, ms(100 - lock_wait_ms)),
                (Activity::Idle, ms(idle_ms)),
            ]
            .into_iter()
            .collect();
            r.row.agent_time = Some(t);
            r
        };
        let rows = [with(0, 1, 10, 0), with(1, 1, 30, 100), with(0, 8, 50, 0)];
        let one = |r: &SweepRow| r.row.clients == 1;
        let near = |s: Spread, min: f64, max: f64| {
            assert!(
                (s.min - min).abs() < 1e-9 && (s.max - max).abs() < 1e-9,
                "{s:?}"
            );
        };
        let busy = share_spread(&rows, one, Activity::LockWait, true).unwrap();
        assert_eq!(busy.n, 2);
        near(busy, 0.1, 0.3);
        // Of all the time, idleness included: 30 of 200 ms in round 1.
        near(
            share_spread(&rows, one, Activity::LockWait, false).unwrap(),
            0.1,
            0.15,
        );
        let mut missing = rows.to_vec();
        missing[1].row.agent_time = None;
        assert_eq!(share_spread(&missing, one, Activity::LockWait, true), None);
        assert_eq!(share_spread(&rows, |_| false, Activity::Tree, true), None);
    }

    #[test]
    fn ratios_pair_the_rows_of_a_round() {
        let rows = [
            row(0, "classic", 1, 100.0),
            row(0, "elr", 1, 300.0),
            row(1, "classic", 1, 200.0),
            row(1, "elr", 1, 400.0),
            // Round 2 lost its elr row: left out, not paired with another round's.
            row(2, "classic", 1, 50.0),
        ];
        let s = paired_ratio(
            &rows,
            |r| r.row.commit == "elr",
            |r| r.row.commit == "classic",
            SweepRow::throughput,
        )
        .unwrap();
        assert_eq!((s.min, s.max, s.n), (2.0, 3.0, 2));
        assert_eq!(s.median, 2.5);
        let zero = [row(0, "classic", 1, 0.0), row(0, "elr", 1, 5.0)];
        let none = paired_ratio(
            &zero,
            |r| r.row.commit == "elr",
            |r| r.row.commit == "classic",
            SweepRow::throughput,
        );
        assert_eq!(none, None, "a zero denominator has no ratio");
    }
}
