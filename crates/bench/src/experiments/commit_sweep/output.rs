//! What a commit-protocol sweep prints and writes: the rows table, the speedup table,
//! CSV and JSON (every repeat), the summary CSV (median, min, max per point) and the
//! figures (medians with min–max error bars, each technique in its own panel).

use super::breakdown;
use super::notes::{log_note, machine_notes};
use super::rounds::{paired_ratio, points, Point};
use super::{Figure, SweepConfig, SweepRow, SCALABLE_STEP, TATP_STEPS};
use crate::output::{
    create_dir, json_array, spread_line, write_file, write_panels, Chart, Csv, Panel, Series,
    Spread, Table,
};
use crate::workloads::session::Row;
use std::path::{Path, PathBuf};

/// Ratios of throughputs, one row per series and one column per comparison; each ratio
/// is the spread over rounds of the ratio within a round.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedupTable {
    /// What the ratios are.
    pub title: String,
    /// The first column's header (what each row is).
    pub row_header: String,
    /// The other columns' headers.
    pub columns: Vec<String>,
    /// Row label and one ratio per column (`None`: the denominator was zero or missing).
    pub rows: Vec<(String, Vec<Option<Spread>>)>,
}

impl SpeedupTable {
    /// As a text table: the median ratio with two decimals and a ×, and the min–max
    /// over rounds when there was more than one.
    pub fn table(&self) -> Table {
        let mut t =
            Table::new(std::iter::once(self.row_header.clone()).chain(self.columns.clone()));
        for (label, vals) in &self.rows {
            t.row(
                std::iter::once(label.clone()).chain(vals.iter().map(|v| match v {
                    Some(x) if x.n > 1 => {
                        format!("{:.2}× ({:.2}–{:.2})", x.median, x.min, x.max)
                    }
                    Some(x) => format!("{:.2}×", x.median),
                    None => "-".into(),
                })),
            );
        }
        t
    }

    fn csv(&self) -> String {
        let header = std::iter::once(self.row_header.clone()).chain(
            self.columns
                .iter()
                .flat_map(|c| [c.clone(), format!("{c} min"), format!("{c} max")]),
        );
        let mut csv = Csv::new(header);
        for (label, vals) in &self.rows {
            csv.row(
                std::iter::once(label.clone()).chain(vals.iter().flat_map(|v| match v {
                    Some(x) => [x.median, x.min, x.max].map(|y| format!("{y:.4}")),
                    None => [String::new(), String::new(), String::new()],
                })),
            );
        }
        csv.finish()
    }
}

fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Throughput ratio of the rows matching `num` over those matching `den`, paired by
/// round.
fn speedup_of(
    rows: &[SweepRow],
    num: impl Fn(&SweepRow) -> bool,
    den: impl Fn(&SweepRow) -> bool,
) -> Option<Spread> {
    paired_ratio(rows, num, den, SweepRow::throughput)
}

/// The figure's speedup table, if it has one.
pub(super) fn speedup(figure: Figure, rows: &[SweepRow]) -> Option<SpeedupTable> {
    let clients = distinct(rows.iter().map(|r| r.row.clients));
    match figure {
        Figure::ElrSkew => {
            let latencies = distinct(rows.iter().map(|r| r.row.log_latency.clone()));
            let skews = distinct(rows.iter().map(|r| r.row.skew.to_bits()));
            let at = |l: &str, s: u64, commit: &'static str| {
                let l = l.to_string();
                move |r: &SweepRow| {
                    r.row.log_latency == l && r.row.skew.to_bits() == s && r.row.commit == commit
                }
            };
            Some(SpeedupTable {
                title: "ELR speedup over classic (elr tps ÷ classic tps)".into(),
                row_header: "log latency".into(),
                columns: skews
                    .iter()
                    .map(|s| format!("skew {}", f64::from_bits(*s)))
                    .collect(),
                rows: latencies
                    .iter()
                    .map(|l| {
                        let vals = skews
                            .iter()
                            .map(|&s| speedup_of(rows, at(l, s, "elr"), at(l, s, "classic")))
                            .collect();
                        (l.clone(), vals)
                    })
                    .collect(),
            })
        }
        Figure::Ctx | Figure::Breakdown => None,
        Figure::Clients => {
            let at = |c: usize, commit: &'static str| {
                move |r: &SweepRow| r.row.clients == c && r.row.commit == commit
            };
            let pairs = [
                ("elr", "classic"),
                ("elr-pipelined", "elr"),
                ("async", "classic"),
            ];
            Some(SpeedupTable {
                title: "tps ratios: ELR alone, flush pipelining alone, and async's bound".into(),
                row_header: "clients".into(),
                columns: pairs.iter().map(|(n, d)| format!("{n} ÷ {d}")).collect(),
                rows: clients
                    .iter()
                    .map(|&c| {
                        let vals = pairs
                            .iter()
                            .map(|&(n, d)| speedup_of(rows, at(c, n), at(c, d)))
                            .collect();
                        (c.to_string(), vals)
                    })
                    .collect(),
            })
        }
        Figure::TatpComponents | Figure::Cpu => {
            let steps = distinct(rows.iter().filter_map(|r| r.step));
            let at = |c: usize, step: &'static str| {
                move |r: &SweepRow| r.row.clients == c && r.step == Some(step)
            };
            let mut columns: Vec<String> = steps
                .windows(2)
                .map(|w| format!("{} ÷ {}", w[1], w[0]))
                .collect();
            columns.push(format!("all ÷ {}", TATP_STEPS[0].0));
            Some(SpeedupTable {
                title: format!(
                    "{} of each step ÷ the step before",
                    if figure.tatp() { "MQTh" } else { "tps" }
                ),
                row_header: "clients".into(),
                columns,
                rows: clients
                    .iter()
                    .map(|&c| {
                        let mut vals: Vec<Option<Spread>> = steps
                            .windows(2)
                            .map(|w| speedup_of(rows, at(c, w[1]), at(c, w[0])))
                            .collect();
                        vals.push(match (steps.first(), steps.last()) {
                            (Some(&f), Some(&l)) => speedup_of(rows, at(c, l), at(c, f)),
                            _ => None,
                        });
                        (c.to_string(), vals)
                    })
                    .collect(),
            })
        }
    }
}

/// The rows as a text table, one per run (every repeat, with its round).
pub fn rows_table(figure: Figure, rows: &[SweepRow]) -> Table {
    let mut header: Vec<&str> = vec!["round"];
    if figure.steps() {
        header.push("step");
    }
    header.extend(Row::columns(figure.tatp()));
    let mut t = Table::new(header);
    for r in rows {
        let mut cells = vec![(r.repeat + 1).to_string()];
        if figure.steps() {
            cells.push(r.step.unwrap_or("").to_string());
        }
        cells.extend(r.row.cells());
        t.row(cells);
    }
    t
}

/// The points as a text table: each measure's median over the rounds and, with more
/// than one round, its min–max.
pub fn summary_table(figure: Figure, rows: &[SweepRow]) -> Table {
    let tatp = figure.tatp();
    let mut header: Vec<&str> = Vec::new();
    if figure.steps() {
        header.push("step");
    }
    header.extend([
        "commit",
        "log buffer",
        "clients",
        "skew",
        "log",
        if tatp { "MQTh" } else { "tps" },
        "ctx sw/txn",
        "cpu %",
        "sys %",
        "rounds",
    ]);
    let mut t = Table::new(header);
    for p in points(rows) {
        let k = &p.key;
        let mut cells = k.lead_cells(figure.steps());
        cells.extend([
            k.skew.to_string(),
            k.log_latency.clone(),
            p.throughput.cell(0),
            p.ctx_switches_per_txn.cell(2),
            p.cpu_util.map(|c| c * 100.0).cell(0),
            p.sys_cpu_util.map(|c| c * 100.0).cell(0),
            p.throughput.n.to_string(),
        ]);
        t.row(cells);
    }
    t
}

/// The CSV's columns for a figure: the TATP figures count MQTh, the TPC-B ones tps; the
/// step figures have a `step`, the breakdown figures the agents' time per activity.
pub(super) fn csv_header(figure: Figure) -> Vec<String> {
    let tatp = figure.tatp();
    let mut h = vec!["figure", "repeat", "workload"];
    if figure.steps() {
        h.push("step");
    }
    h.extend([
        "commit",
        "log_buffer",
        "clients",
        "agents",
        "skew",
        "log_latency",
        if tatp { "mqth" } else { "tps" },
        "committed",
        "aborted",
        "rolled_back",
        "p50_us",
        "p99_us",
        "ctx_switches_per_txn",
        "voluntary_ctx_per_txn",
        "involuntary_ctx_per_txn",
        "cpu_util",
        "sys_cpu_util",
        "seconds",
        "consistent",
        "violations",
    ]);
    let mut h: Vec<String> = h.into_iter().map(String::from).collect();
    if figure.times() {
        h.extend(breakdown::csv_header());
    }
    h
}

fn csv(figure: Figure, rows: &[SweepRow]) -> String {
    let mut csv = Csv::new(csv_header(figure));
    for r in rows {
        let w = &r.row;
        let mut cells = vec![
            r.figure.to_string(),
            r.repeat.to_string(),
            w.workload.to_string(),
        ];
        if figure.steps() {
            cells.push(r.step.unwrap_or("").to_string());
        }
        cells.extend([
            w.commit.clone(),
            w.log_buffer.clone(),
            w.clients.to_string(),
            w.agents.to_string(),
            w.skew.to_string(),
            w.log_latency.clone(),
            format!("{:.1}", r.throughput()),
            w.committed.to_string(),
            w.aborted.to_string(),
            w.rolled_back.to_string(),
            w.latency.p50_us.to_string(),
            w.latency.p99_us.to_string(),
            format!("{:.4}", w.cpu.ctx_switches_per_txn),
            format!("{:.4}", w.cpu.voluntary_ctx_per_txn),
            format!("{:.4}", w.cpu.involuntary_ctx_per_txn),
            format!("{:.4}", w.cpu.cpu_util),
            format!("{:.4}", w.cpu.sys_cpu_util),
            format!("{:.3}", w.seconds),
            w.consistent.to_string(),
            w.violations.join("; "),
        ]);
        if figure.times() {
            cells.extend(breakdown::csv_cells(r));
        }
        csv.row(cells);
    }
    csv.finish()
}

/// A measure of a point.
type Measure = fn(&Point) -> Spread;

/// The measures of the summary CSV: name and value of a point.
const MEASURES: [(&str, Measure); 6] = [
    ("throughput", |p| p.throughput),
    ("ctx_switches_per_txn", |p| p.ctx_switches_per_txn),
    ("voluntary_ctx_per_txn", |p| p.voluntary_ctx_per_txn),
    ("cpu_util", |p| p.cpu_util),
    ("sys_cpu_util", |p| p.sys_cpu_util),
    ("p50_us", |p| p.p50_us),
];

/// One row per point: its key, the number of rounds, and each measure's median, min and
/// max over them (the breakdown figures: each activity's share too).
fn summary_csv(figure: Figure, rows: &[SweepRow]) -> String {
    let mut header: Vec<String> = [
        "step",
        "commit",
        "log_buffer",
        "clients",
        "skew",
        "log_latency",
        "repeats",
    ]
    .map(String::from)
    .to_vec();
    for (m, _) in MEASURES {
        header.extend([
            format!("{m}_median"),
            format!("{m}_min"),
            format!("{m}_max"),
        ]);
    }
    if figure.times() {
        header.extend(breakdown::summary_header());
    }
    let mut csv = Csv::new(header);
    for p in points(rows) {
        let k = &p.key;
        let mut cells = vec![
            k.step.unwrap_or("").to_string(),
            k.commit.clone(),
            k.log_buffer.clone(),
            k.clients.to_string(),
            k.skew.to_string(),
            k.log_latency.clone(),
            p.throughput.n.to_string(),
        ];
        for (_, f) in MEASURES {
            let s = f(&p);
            cells.extend([s.median, s.min, s.max].map(|v| format!("{v:.4}")));
        }
        if figure.times() {
            cells.extend(breakdown::summary_cells(&p));
        }
        csv.row(cells);
    }
    csv.finish()
}

/// How a panel's two series compare: at which x their spreads do not overlap, and
/// whether the second (the technique switched on) is above or below the first there.
fn separation_note(what: &str, a: &[(f64, Spread)], b: &[(f64, Spread)]) -> Option<String> {
    // (x, Some(second is higher)) where the spreads are apart, (x, None) where not.
    let pairs: Vec<(f64, Option<bool>)> = a
        .iter()
        .filter_map(|(x, sa)| {
            let (_, sb) = b.iter().find(|(xb, _)| xb == x)?;
            Some((*x, (!sa.overlaps(sb)).then_some(sb.median > sa.median)))
        })
        .collect();
    if pairs.is_empty() || a.first().is_none_or(|(_, s)| s.n < 2) {
        return None;
    }
    let at = |higher: bool| -> Vec<String> {
        pairs
            .iter()
            .filter(|(_, apart)| *apart == Some(higher))
            .map(|(x, _)| format!("{x}"))
            .collect()
    };
    let (up, down) = (at(true), at(false));
    if up.is_empty() && down.is_empty() {
        return Some(format!(
            "{what}: the spreads overlap at every point (no difference above this machine's noise)"
        ));
    }
    let mut parts = Vec::new();
    if !up.is_empty() {
        parts.push(format!("higher at x = {}", up.join(", ")));
    }
    if !down.is_empty() {
        parts.push(format!("lower at x = {}", down.join(", ")));
    }
    Some(format!(
        "{what}: spreads apart at {} of {} points, the second {}",
        up.len() + down.len(),
        pairs.len(),
        parts.join("; ")
    ))
}

/// The points of `commit` (or of Fig. 9's `step`) as (clients, measure).
fn by_clients(
    pts: &[Point],
    pick: impl Fn(&Point) -> bool,
    measure: impl Fn(&Point) -> Spread,
) -> Vec<(f64, Spread)> {
    pts.iter()
        .filter(|p| pick(p))
        .map(|p| (p.key.clients as f64, measure(p)))
        .collect()
}

/// What every panel says about how it was measured.
fn method_note(cfg: &SweepConfig) -> String {
    format!(
        "median of {} interleaved rounds, bars: min–max; {}",
        cfg.repeat,
        log_note(cfg)
    )
}

/// A panel comparing series over clients; its notes say how it was measured, whether
/// the first two series' spreads separate, and what this machine cannot show.
struct PanelSpec {
    title: String,
    y_label: String,
    log_y: bool,
    /// Label and points; the first two are the technique's before and after.
    lines: Vec<(String, Vec<(f64, Spread)>)>,
    /// What the first two series compare, for the separation note.
    compares: Option<String>,
}

fn panel(cfg: &SweepConfig, spec: PanelSpec) -> Panel {
    let mut series = Vec::new();
    let mut bars = Vec::new();
    for (label, pts) in &spec.lines {
        let (s, b) = spread_line(label.clone(), pts, spec.log_y);
        series.push(s);
        bars.push(b);
    }
    let mut notes = vec![method_note(cfg)];
    if let (Some(what), [a, b, ..]) = (&spec.compares, spec.lines.as_slice()) {
        notes.extend(separation_note(what, &a.1, &b.1));
    }
    notes.extend(machine_notes(cfg));
    Panel {
        chart: Chart {
            title: spec.title,
            x_label: "clients".into(),
            y_label: spec.y_label,
            log_x: cfg.clients.len() > 1,
            log_y: spec.log_y,
            series,
        },
        bars,
        notes,
        x_ticks: cfg.clients.iter().map(|&c| c as f64).collect(),
    }
}

/// The figure(s) of a sweep: file stem, grid title, panels and columns.
fn figures(
    cfg: &SweepConfig,
    rows: &[SweepRow],
    speedup: Option<&SpeedupTable>,
) -> Vec<(String, String, Vec<Panel>, usize)> {
    let stem = cfg.figure.to_string();
    let pts = points(rows);
    let commit = |name: &'static str| move |p: &Point| p.key.commit == name;
    let tput = |p: &Point| p.throughput.map(|t| t / 1e3);
    let scale = cfg.scale;
    match cfg.figure {
        Figure::ElrSkew => {
            let Some(sp) = speedup else {
                return Vec::new();
            };
            let skews = distinct(rows.iter().map(|r| r.row.skew));
            let mut series = Vec::new();
            let mut bars = Vec::new();
            for (latency, vals) in &sp.rows {
                let pts: Vec<(f64, Spread)> = skews
                    .iter()
                    .zip(vals)
                    .filter_map(|(&s, v)| v.map(|v| (s, v)))
                    .collect();
                let (s, b) = spread_line(format!("log latency {latency}"), &pts, true);
                series.push(s);
                bars.push(b);
            }
            // The no-gain line: what a speedup is read against, and it keeps 1 on the log
            // axis.
            if let (Some(&first), Some(&last)) = (skews.first(), skews.last()) {
                series.push(Series {
                    label: "1× (no gain)".into(),
                    points: vec![(first, 1.0), (last, 1.0)],
                });
            }
            let mut notes = vec![method_note(cfg)];
            // Whether the rise with skew is above the noise, per latency: the spread at
            // the highest skew against the one at the lowest.
            for (latency, vals) in &sp.rows {
                if let (Some(Some(lo)), Some(Some(hi))) = (vals.first(), vals.last()) {
                    if lo.n > 1 && skews.len() > 1 {
                        notes.push(format!(
                            "log {latency}: speedup {:.2}× at skew {} → {:.2}× at skew {}, spreads {}",
                            lo.median,
                            skews[0],
                            hi.median,
                            skews[skews.len() - 1],
                            if lo.overlaps(hi) { "overlap" } else { "apart" }
                        ));
                    }
                }
            }
            notes.extend(machine_notes(cfg));
            let p = Panel {
                chart: Chart {
                    title: format!(
                        "TPC-B SF {scale}, {} clients: ELR speedup over classic (Aether Fig. 3)",
                        cfg.clients[0]
                    ),
                    x_label: "Zipf skew".into(),
                    y_label: "speedup (elr tps ÷ classic tps)".into(),
                    log_x: false,
                    log_y: true,
                    series,
                },
                bars,
                notes,
                x_ticks: Vec::new(),
            };
            vec![(stem, String::new(), vec![p], 1)]
        }
        Figure::Ctx => {
            let ctx = |p: &Point| p.ctx_switches_per_txn;
            let vol = |p: &Point| p.voluntary_ctx_per_txn;
            let cpu = |p: &Point| p.cpu_util.map(|c| c * 100.0);
            let sys = |p: &Point| p.sys_cpu_util.map(|c| c * 100.0);
            let technique = |name: &str, before: &'static str, after: &'static str| {
                [
                    panel(
                        cfg,
                        PanelSpec {
                            title: format!("{name}: context switches per transaction"),
                            y_label: "context switches / transaction".into(),
                            log_y: true,
                            lines: vec![
                                (before.into(), by_clients(&pts, commit(before), ctx)),
                                (after.into(), by_clients(&pts, commit(after), ctx)),
                                (
                                    format!("{before}, voluntary"),
                                    by_clients(&pts, commit(before), vol),
                                ),
                                (
                                    format!("{after}, voluntary"),
                                    by_clients(&pts, commit(after), vol),
                                ),
                            ],
                            compares: Some(format!("{before} vs {after}")),
                        },
                    ),
                    panel(
                        cfg,
                        PanelSpec {
                            title: format!("{name}: CPU utilisation"),
                            y_label: "% of all cores".into(),
                            log_y: false,
                            lines: vec![
                                (
                                    format!("{before}, user + system"),
                                    by_clients(&pts, commit(before), cpu),
                                ),
                                (
                                    format!("{after}, user + system"),
                                    by_clients(&pts, commit(after), cpu),
                                ),
                                (
                                    format!("{before}, system"),
                                    by_clients(&pts, commit(before), sys),
                                ),
                                (
                                    format!("{after}, system"),
                                    by_clients(&pts, commit(after), sys),
                                ),
                            ],
                            compares: None,
                        },
                    ),
                ]
            };
            let mut panels = technique("ELR alone (classic → elr)", "classic", "elr").to_vec();
            panels.extend(technique(
                "Flush pipelining alone (elr → elr-pipelined)",
                "elr",
                "elr-pipelined",
            ));
            vec![(
                stem,
                format!("TPC-B SF {scale}: context switches and CPU (Aether Fig. 4)"),
                panels,
                2,
            )]
        }
        Figure::Clients => {
            let y = "thousands of committed transactions / s".to_string();
            let elr = panel(
                cfg,
                PanelSpec {
                    title: "ELR alone (classic → elr)".into(),
                    y_label: y.clone(),
                    log_y: false,
                    lines: vec![
                        ("classic".into(), by_clients(&pts, commit("classic"), tput)),
                        ("elr".into(), by_clients(&pts, commit("elr"), tput)),
                    ],
                    compares: Some("classic vs elr".into()),
                },
            );
            let pipelining = panel(
                cfg,
                PanelSpec {
                    title: "Flush pipelining alone (elr → elr-pipelined)".into(),
                    y_label: y,
                    log_y: false,
                    lines: vec![
                        ("elr".into(), by_clients(&pts, commit("elr"), tput)),
                        (
                            "elr-pipelined".into(),
                            by_clients(&pts, commit("elr-pipelined"), tput),
                        ),
                    ],
                    compares: Some("elr vs elr-pipelined".into()),
                },
            );
            // async has a panel of its own: drawn with the two techniques, its
            // throughput (tens of times theirs on an emulated log) squashed their lines.
            let all = panel(
                cfg,
                PanelSpec {
                    title: "All protocols; async, whose commits never wait, the bound".into(),
                    y_label: "thousands of committed transactions / s".into(),
                    log_y: true,
                    lines: ["classic", "elr", "elr-pipelined", "async"]
                        .into_iter()
                        .map(|c| (c.to_string(), by_clients(&pts, commit(c), tput)))
                        .collect(),
                    compares: None,
                },
            );
            vec![(
                stem,
                format!("TPC-B SF {scale}: throughput vs clients (Aether Fig. 5)"),
                vec![elr, pipelining, all],
                3,
            )]
        }
        // Stacked bars, not lines: `breakdown::figure` draws them.
        Figure::Breakdown | Figure::Cpu => Vec::new(),
        Figure::TatpComponents => {
            let step = |name: &'static str| move |p: &Point| p.key.step == Some(name);
            let label = |name: &str| {
                pts.iter()
                    .find(|p| p.key.step == Some(name))
                    .map(|p| {
                        if name == SCALABLE_STEP {
                            format!("{name} ({})", p.key.log_buffer)
                        } else {
                            format!("{name} ({})", p.key.commit)
                        }
                    })
                    .unwrap_or_else(|| name.to_string())
            };
            let y = "MQTh, thousands of transactions / s".to_string();
            let mut steps: Vec<&'static str> = TATP_STEPS.iter().map(|(s, _)| *s).collect();
            if pts.iter().any(|p| p.key.step == Some(SCALABLE_STEP)) {
                steps.push(SCALABLE_STEP);
            }
            let mut panels: Vec<Panel> = steps
                .windows(2)
                .map(|w| {
                    panel(
                        cfg,
                        PanelSpec {
                            title: format!("{} → {}", w[0], w[1]),
                            y_label: y.clone(),
                            log_y: false,
                            lines: vec![
                                (label(w[0]), by_clients(&pts, step(w[0]), tput)),
                                (label(w[1]), by_clients(&pts, step(w[1]), tput)),
                            ],
                            compares: Some(format!("{} vs {}", w[0], w[1])),
                        },
                    )
                })
                .collect();
            panels.push(panel(
                cfg,
                PanelSpec {
                    title: "all steps".into(),
                    y_label: y,
                    log_y: false,
                    lines: steps
                        .iter()
                        .map(|&s| (label(s), by_clients(&pts, step(s), tput)))
                        .collect(),
                    compares: None,
                },
            ));
            vec![(
                stem,
                format!(
                    "TATP UpdateLocation, {} subscribers: components switched on in turn (Aether Fig. 9)",
                    cfg.subscribers
                ),
                panels,
                2,
            )]
        }
    }
}

/// Writes the CSV, the JSON, the summary CSV, the speedup CSV and the figures; returns
/// their paths.
pub(super) fn write(
    cfg: &SweepConfig,
    out: &Path,
    rows: &[SweepRow],
    speedup: Option<&SpeedupTable>,
) -> Result<Vec<PathBuf>, String> {
    create_dir(out)?;
    let stem = cfg.figure.to_string();
    let mut files = Vec::new();
    let path = out.join(format!("{stem}.csv"));
    write_file(&path, &csv(cfg.figure, rows))?;
    files.push(path);
    let path = out.join(format!("{stem}.json"));
    write_file(&path, &json_array(rows))?;
    files.push(path);
    let path = out.join(format!("{stem}-summary.csv"));
    write_file(&path, &summary_csv(cfg.figure, rows))?;
    files.push(path);
    if let Some(sp) = speedup {
        let path = out.join(format!("{stem}-speedup.csv"));
        write_file(&path, &sp.csv())?;
        files.push(path);
    }
    for (name, title, panels, cols) in figures(cfg, rows, speedup) {
        match panels.as_slice() {
            [one] => one.write(out, &name)?,
            _ => write_panels(&title, &panels, cols, out, &name)?,
        }
        files.push(out.join(format!("{name}.png")));
        files.push(out.join(format!("{name}.svg")));
    }
    if cfg.figure.times() {
        files.extend(breakdown::write_figure(cfg, out, rows)?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(v: &[f64]) -> Spread {
        Spread::of(v.iter().copied()).unwrap()
    }

    #[test]
    fn the_separation_note_counts_points_whose_spreads_are_apart() {
        let a = [(1.0, spread(&[1.0, 2.0])), (2.0, spread(&[1.0, 2.0]))];
        let b = [(1.0, spread(&[3.0, 4.0])), (2.0, spread(&[1.5, 4.0]))];
        let n = separation_note("x vs y", &a, &b).unwrap();
        assert!(
            n.contains("apart at 1 of 2 points, the second higher at x = 1"),
            "{n}"
        );
        let n = separation_note("x vs y", &b, &a).unwrap();
        assert!(n.ends_with("the second lower at x = 1"), "{n}");
        let n = separation_note("x vs y", &a, &a).unwrap();
        assert!(n.contains("overlap at every point"), "{n}");
        let once = [(1.0, spread(&[1.0]))];
        assert_eq!(
            separation_note("x", &once, &once),
            None,
            "one round has no spread"
        );
    }

    #[test]
    fn the_speedup_table_prints_median_and_spread() {
        let t = SpeedupTable {
            title: String::new(),
            row_header: "c".into(),
            columns: vec!["a ÷ b".into(), "c ÷ d".into()],
            rows: vec![("1".into(), vec![Some(spread(&[1.0, 2.0, 1.5])), None])],
        };
        let text = t.table().render();
        assert!(text.contains("1.50× (1.00–2.00)"), "{text}");
        let csv = t.csv();
        assert!(
            csv.starts_with("c,a ÷ b,a ÷ b min,a ÷ b max,c ÷ d"),
            "{csv}"
        );
        assert!(csv.contains("1,1.5000,1.0000,2.0000,,,"), "{csv}");
    }
}
