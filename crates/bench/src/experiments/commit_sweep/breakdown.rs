//! The breakdown figures (Aether Figs. 7 and 2): where the agents' time goes, from the
//! engine's own clocks (`AgentOptions::time_breakdown`: each agent charges its time to
//! an [`Activity`] — B+tree work, a lock wait, a log insert, a wait for the log buffer
//! or the flush, idleness), and for Fig. 2 the machine's CPU time and idle beside it.
//! Here are their CSV columns, their summary, the table printed and the stacked bars.
//!
//! A row's share of an activity is its time ÷ the agents' time in all (about agents ×
//! seconds: every agent is always in exactly one activity), and its busy share its time
//! ÷ the agents' time less their idleness (what a transaction's execution is made of,
//! as the paper's profiles show it); a point draws the median of its rounds, and
//! `F-summary.csv` has each share's median, min and max.

use super::notes::{log_note, machine_notes};
use super::rounds::{busy_activities, points, share, Point, PointKey};
use super::{Figure, SweepConfig, SweepRow, SCALABLE_STEP, TATP_STEPS};
use crate::metrics::cores;
use crate::output::{Spread, StackedBars, Table};
use sluice::experiment::Activity;
use std::path::{Path, PathBuf};

/// How an activity is drawn: legend label and colour. Each wait is a light shade of its
/// work's colour (log in red, locks in blue, the tree and its pages in green), so that
/// contention reads as the pale part of its component.
fn style(a: Activity) -> (&'static str, (u8, u8, u8)) {
    match a {
        Activity::Tree => ("B+tree, buffer pool", (44, 160, 44)),
        Activity::PageWait => ("page wait (latch, miss)", (152, 223, 138)),
        Activity::Lock => ("lock manager", (31, 119, 180)),
        Activity::LockWait => ("lock wait", (174, 199, 232)),
        Activity::LogInsert => ("log insert", (214, 39, 40)),
        Activity::LogInsertWait => ("log buffer wait", (255, 152, 150)),
        Activity::LogFlushWait => ("log flush wait", (148, 103, 189)),
        Activity::Other => ("other (txn, commit)", (127, 127, 127)),
        Activity::Idle => ("idle (no work)", (222, 222, 222)),
    }
}

/// The agents' time ÷ (agents × the measured seconds): 1 when every moment of every
/// agent is accounted to one activity.
fn accounted(r: &SweepRow) -> Option<f64> {
    let t = r.row.agent_time?;
    let wall = r.row.agents as f64 * r.row.seconds;
    (wall > 0.0).then(|| t.total().as_secs_f64() / wall)
}

/// The per-run CSV's columns of the breakdown figures.
pub(super) fn csv_header() -> Vec<String> {
    let mut h: Vec<String> = ["agents_seconds", "accounted", "cpu_idle"]
        .map(String::from)
        .to_vec();
    for a in Activity::ALL {
        h.push(format!("{}_share", a.name()));
        h.push(format!("{}_us_per_txn", a.name()));
    }
    h
}

/// `r`'s cells under [`csv_header`]: the agents' time in all (agent-seconds), its ratio
/// to agents × seconds, the machine's idle (1 − CPU ÷ (wall × cores)), and per activity
/// its share and its microseconds per transaction.
pub(super) fn csv_cells(r: &SweepRow) -> Vec<String> {
    let w = &r.row;
    let txns = (w.committed + w.rolled_back).max(1) as f64;
    let mut cells = vec![
        w.agent_time
            .map_or(String::new(), |t| format!("{:.4}", t.total().as_secs_f64())),
        accounted(r).map_or(String::new(), |a| format!("{a:.4}")),
        format!("{:.4}", 1.0 - w.cpu.cpu_util),
    ];
    for a in Activity::ALL {
        cells.push(share(r, a).map_or(String::new(), |s| format!("{s:.4}")));
        cells.push(w.agent_time.map_or(String::new(), |t| {
            format!("{:.2}", t.get(a).as_secs_f64() * 1e6 / txns)
        }));
    }
    cells
}

/// The summary CSV's columns of the breakdown figures: each activity's share and busy
/// share, median, min and max over the rounds.
pub(super) fn summary_header() -> Vec<String> {
    let cols = |a: Activity, what: &str| {
        ["median", "min", "max"].map(|m| format!("{}_{what}_{m}", a.name()))
    };
    Activity::ALL
        .into_iter()
        .flat_map(|a| cols(a, "share"))
        .chain(busy_activities().flat_map(|a| cols(a, "busy_share")))
        .collect()
}

/// `p`'s cells under [`summary_header`] (empty cells for a point without shares).
pub(super) fn summary_cells(p: &Point) -> Vec<String> {
    let cells = |s: Option<&Spread>| match s {
        Some(s) => [s.median, s.min, s.max].map(|v| format!("{v:.4}")),
        None => [String::new(), String::new(), String::new()],
    };
    (0..Activity::COUNT)
        .flat_map(|i| cells(p.time_shares.get(i)))
        .chain((0..busy_activities().count()).flat_map(|i| cells(p.busy_shares.get(i))))
        .collect()
}

/// The rows of one point.
fn rows_of<'a>(rows: &'a [SweepRow], key: &PointKey) -> Vec<&'a SweepRow> {
    rows.iter().filter(|r| PointKey::of(r) == *key).collect()
}

/// The breakdown figures' table: one line per point, each activity's median share in
/// %, their sum, and how much of agents × seconds the clocks accounted for. `None` for
/// the other figures.
pub fn time_table(figure: Figure, rows: &[SweepRow]) -> Option<Table> {
    if !figure.times() {
        return None;
    }
    let mut header: Vec<String> = Vec::new();
    if figure.steps() {
        header.push("step".into());
    }
    header.extend(["commit", "log buffer", "clients"].map(String::from));
    header.extend(Activity::ALL.iter().map(|a| format!("{} %", a.name())));
    header.extend(["sum %", "accounted %"].map(String::from));
    let mut t = Table::new(header);
    for p in points(rows) {
        let k = &p.key;
        let mut cells = k.lead_cells(figure.steps());
        cells.extend(
            p.time_shares
                .iter()
                .map(|s| format!("{:.1}", s.median * 100.0)),
        );
        let sum: f64 = p.time_shares.iter().map(|s| s.median).sum();
        cells.push(format!("{:.1}", sum * 100.0));
        let acc = Spread::of(rows_of(rows, k).iter().filter_map(|r| accounted(r)));
        cells.push(acc.map_or("-".into(), |a| a.map(|v| v * 100.0).cell(1)));
        t.row(cells);
    }
    Some(t)
}

/// The kinds of segment of an agents'-time bar, bottom up: every activity, or (`busy`)
/// every one but idleness.
fn activity_kinds(busy: bool) -> Vec<(String, (u8, u8, u8))> {
    Activity::ALL
        .into_iter()
        .filter(|&a| !busy || a != Activity::Idle)
        .map(|a| {
            let (label, rgb) = style(a);
            (label.to_string(), rgb)
        })
        .collect()
}

/// A point's bar of the agents' time: each activity's median share (or busy share), in
/// %.
fn agents_bar(label: String, p: &Point, busy: bool) -> (String, Vec<f64>) {
    let shares = if busy { &p.busy_shares } else { &p.time_shares };
    (label, shares.iter().map(|s| s.median * 100.0).collect())
}

/// A panel of the agents' time (`busy`: their busy time, idle left out), one stacked bar
/// per point labelled by `label`.
fn agents_panel(
    title: &str,
    x_label: &str,
    pts: &[Point],
    label: &dyn Fn(&Point) -> String,
    busy: bool,
    notes: Vec<String>,
) -> StackedBars {
    StackedBars {
        title: title.into(),
        y_label: if busy {
            "% of the agents' busy time".into()
        } else {
            "% of the agents' time".into()
        },
        x_label: x_label.into(),
        kinds: activity_kinds(busy),
        bars: pts.iter().map(|p| agents_bar(label(p), p, busy)).collect(),
        y_max: Some(105.0),
        notes,
    }
}

/// How a breakdown panel was measured, and how much of agents × seconds the clocks
/// accounted for over every run (a check of the clocks: 100 % when nothing is missed).
fn method_notes(cfg: &SweepConfig, rows: &[SweepRow]) -> Vec<String> {
    let mut notes = vec![format!(
        "median share of {} interleaved rounds (min–max of each in {}-summary.csv); {}",
        cfg.repeat,
        cfg.figure,
        log_note(cfg)
    )];
    if let Some(a) = Spread::of(rows.iter().filter_map(accounted)) {
        notes.push(format!(
            "the agents' clocks accounted for {:.1}–{:.1} % of agents × seconds over the runs",
            a.min * 100.0,
            a.max * 100.0
        ));
    }
    notes
}

/// How the busy share of `a` moved from the first point to the last (a figure's trend,
/// with the spreads that say whether it is above the noise).
fn trend_note(pts: &[Point], a: Activity, at: &dyn Fn(&Point) -> String) -> Option<String> {
    let i = busy_activities().position(|x| x == a)?;
    let (first, last) = (pts.first()?, pts.last()?);
    let (s0, s1) = (first.busy_shares.get(i)?, last.busy_shares.get(i)?);
    let pct = |s: &Spread| s.map(|v| v * 100.0).cell(2);
    Some(format!(
        "{} (% of busy time): {} at {} → {} at {}{}",
        style(a).0,
        pct(s0),
        at(first),
        pct(s1),
        at(last),
        if s0.n > 1 && !s0.overlaps(s1) {
            ", spreads apart"
        } else if s0.n > 1 {
            ", spreads overlap"
        } else {
            ""
        }
    ))
}

/// A step's bar label: the baseline's protocol, the step that adds ELR or flush
/// pipelining, or the scalable step's log buffer.
fn step_label(p: &Point) -> String {
    match p.key.step {
        Some(s) if s == SCALABLE_STEP => format!("+{}", p.key.log_buffer),
        Some(s) if s == TATP_STEPS[0].0 => p.key.commit.clone(),
        Some(s) => s.to_string(),
        None => p.key.commit.clone(),
    }
}

/// The figure of a breakdown sweep: `F.png` and `F.svg` under `out`. Returns their paths.
pub(super) fn write_figure(
    cfg: &SweepConfig,
    out: &Path,
    rows: &[SweepRow],
) -> Result<Vec<PathBuf>, String> {
    let stem = cfg.figure.to_string();
    let pts: Vec<Point> = points(rows)
        .into_iter()
        .filter(|p| !p.time_shares.is_empty())
        .collect();
    let notes = method_notes(cfg, rows);
    match cfg.figure {
        Figure::Breakdown => {
            let at = |p: &Point| match p.key.clients {
                1 => "1 client".to_string(),
                n => format!("{n} clients"),
            };
            let mut busy_notes: Vec<String> = [Activity::LogInsertWait, Activity::LogInsert]
                .into_iter()
                .filter_map(|a| trend_note(&pts, a, &at))
                .collect();
            busy_notes.extend(machine_notes(cfg));
            let x_label = format!("clients (TATP, {} subscribers)", cfg.subscribers);
            let label = |p: &Point| p.key.clients.to_string();
            let panel = |busy: bool, notes: Vec<String>| {
                let title = if busy {
                    "Their busy time (idle left out)"
                } else {
                    "All of the agents' time"
                };
                agents_panel(title, &x_label, &pts, &label, busy, notes)
            };
            let charts = [panel(false, notes), panel(true, busy_notes)];
            StackedBars::write_grid(
                &format!(
                    "Aether Fig. 7: where the agents' time goes (TATP UpdateLocation, elr-pipelined, {} log buffer)",
                    pts.first().map_or("mutex", |p| p.key.log_buffer.as_str())
                ),
                &charts,
                2,
                out,
                &stem,
            )?;
        }
        Figure::Cpu => {
            let clients = cfg.clients.first().copied().unwrap_or(0);
            let x_label =
                "each bar adds one: ELR, flush pipelining, a scalable log buffer".to_string();
            let cpu_bars = pts
                .iter()
                .map(|p| {
                    let (cpu, sys) = (p.cpu_util.median, p.sys_cpu_util.median);
                    let values = vec![
                        (cpu - sys).max(0.0) * 100.0,
                        sys.max(0.0) * 100.0,
                        (1.0 - cpu).max(0.0) * 100.0,
                    ];
                    (step_label(p), values)
                })
                .collect();
            let cpu = StackedBars {
                title: format!("The machine: CPU time and idle ({} cores)", cores()),
                y_label: "% of wall time × cores".into(),
                x_label: x_label.clone(),
                kinds: vec![
                    ("user CPU".into(), (31, 119, 180)),
                    ("system CPU".into(), (255, 127, 14)),
                    ("idle".into(), (222, 222, 222)),
                ],
                bars: cpu_bars,
                y_max: Some(105.0),
                notes: vec![
                    "the whole process's CPU (getrusage: user, system) ÷ (wall time × cores); idle: the rest".into(),
                    format!("median of {} interleaved rounds; {}", cfg.repeat, log_note(cfg)),
                ],
            };
            let mut busy_notes: Vec<String> = [Activity::LogInsertWait, Activity::LockWait]
                .into_iter()
                .filter_map(|a| trend_note(&pts, a, &step_label))
                .collect();
            busy_notes.extend(machine_notes(cfg));
            let agents = |busy: bool, notes: Vec<String>| {
                let title = if busy {
                    "The agents' busy time (idle left out)"
                } else {
                    "The agents: where their time goes"
                };
                agents_panel(title, &x_label, &pts, &step_label, busy, notes)
            };
            let charts = [cpu, agents(false, notes), agents(true, busy_notes)];
            StackedBars::write_grid(
                &format!(
                    "TPC-B SF {}, {clients} clients: CPU and time breakdown as log bottlenecks are removed (Aether Fig. 2)",
                    cfg.scale
                ),
                &charts,
                3,
                out,
                &stem,
            )?;
        }
        _ => return Ok(Vec::new()),
    }
    Ok(vec![
        out.join(format!("{stem}.png")),
        out.join(format!("{stem}.svg")),
    ])
}
