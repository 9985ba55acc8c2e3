//! What a commit-protocol sweep prints and writes: the rows table, the speedup table,
//! CSV, JSON and the figures.

use super::{Figure, SweepConfig, SweepRow, SCALABLE_STEP, TATP_STEPS};
use crate::output::{create_dir, json_line, write_file, Chart, Csv, Series, Table};
use crate::workloads::session::Row;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Ratios of throughputs, one row per series and one column per comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedupTable {
    /// What the ratios are.
    pub title: String,
    /// The first column's header (what each row is).
    pub row_header: String,
    /// The other columns' headers.
    pub columns: Vec<String>,
    /// Row label and one ratio per column (`None`: the denominator was zero or missing).
    pub rows: Vec<(String, Vec<Option<f64>>)>,
}

impl SpeedupTable {
    /// As a text table (ratios with two decimals and a ×).
    pub fn table(&self) -> Table {
        let mut t =
            Table::new(std::iter::once(self.row_header.clone()).chain(self.columns.clone()));
        for (label, vals) in &self.rows {
            t.row(
                std::iter::once(label.clone()).chain(vals.iter().map(|v| match v {
                    Some(x) => format!("{x:.2}×"),
                    None => "-".into(),
                })),
            );
        }
        t
    }

    fn csv(&self) -> String {
        let mut csv = Csv::new(std::iter::once(&self.row_header).chain(&self.columns));
        for (label, vals) in &self.rows {
            csv.row(
                std::iter::once(label.clone()).chain(
                    vals.iter()
                        .map(|v| v.map_or(String::new(), |x| format!("{x:.4}"))),
                ),
            );
        }
        csv.finish()
    }
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0 && num.is_finite()).then(|| num / den)
}

/// The throughput of the row matching `pred`.
fn find(rows: &[SweepRow], pred: impl Fn(&SweepRow) -> bool) -> Option<f64> {
    rows.iter().find(|r| pred(r)).map(SweepRow::throughput)
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

/// The figure's speedup table, if it has one.
pub(super) fn speedup(figure: Figure, rows: &[SweepRow]) -> Option<SpeedupTable> {
    let clients = distinct(rows.iter().map(|r| r.row.clients));
    match figure {
        Figure::ElrSkew => {
            let latencies = distinct(rows.iter().map(|r| r.row.log_latency.clone()));
            let skews = distinct(rows.iter().map(|r| r.row.skew.to_bits()));
            let at = |l: &str, s: u64, commit: &str| {
                find(rows, |r| {
                    r.row.log_latency == l && r.row.skew.to_bits() == s && r.row.commit == commit
                })
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
                            .map(|&s| ratio(at(l, s, "elr")?, at(l, s, "classic")?))
                            .collect();
                        (l.clone(), vals)
                    })
                    .collect(),
            })
        }
        Figure::Ctx => None,
        Figure::Clients => {
            let at = |c: usize, commit: &str| {
                find(rows, |r| r.row.clients == c && r.row.commit == commit)
            };
            Some(SpeedupTable {
                title: "tps ÷ classic tps".into(),
                row_header: "clients".into(),
                columns: vec!["async ÷ classic".into(), "elr-pipelined ÷ classic".into()],
                rows: clients
                    .iter()
                    .map(|&c| {
                        let vals = ["async", "elr-pipelined"]
                            .iter()
                            .map(|p| ratio(at(c, p)?, at(c, "classic")?))
                            .collect();
                        (c.to_string(), vals)
                    })
                    .collect(),
            })
        }
        Figure::TatpComponents => {
            let steps = distinct(rows.iter().filter_map(|r| r.step));
            let at =
                |c: usize, step: &str| find(rows, |r| r.row.clients == c && r.step == Some(step));
            let mut columns: Vec<String> = steps
                .windows(2)
                .map(|w| format!("{} ÷ {}", w[1], w[0]))
                .collect();
            columns.push(format!("all ÷ {}", TATP_STEPS[0].0));
            Some(SpeedupTable {
                title: "MQTh of each step ÷ the step before".into(),
                row_header: "clients".into(),
                columns,
                rows: clients
                    .iter()
                    .map(|&c| {
                        let mut vals: Vec<Option<f64>> = steps
                            .windows(2)
                            .map(|w| ratio(at(c, w[1])?, at(c, w[0])?))
                            .collect();
                        let last = steps.last().and_then(|s| at(c, s));
                        vals.push(last.and_then(|l| ratio(l, at(c, steps[0])?)));
                        (c.to_string(), vals)
                    })
                    .collect(),
            })
        }
    }
}

/// The rows as a text table.
pub fn rows_table(figure: Figure, rows: &[SweepRow]) -> Table {
    let tatp = figure == Figure::TatpComponents;
    let mut header: Vec<&str> = Vec::new();
    if tatp {
        header.push("step");
    }
    header.extend(Row::columns(tatp));
    let mut t = Table::new(header);
    for r in rows {
        let mut cells = Vec::new();
        if tatp {
            cells.push(r.step.unwrap_or("").to_string());
        }
        cells.extend(r.row.cells());
        t.row(cells);
    }
    t
}

/// The CSV's columns for a figure: the TATP figure has a `step` and counts MQTh, the
/// TPC-B ones count tps.
pub(super) fn csv_header(figure: Figure) -> Vec<&'static str> {
    let tatp = figure == Figure::TatpComponents;
    let mut h = vec!["figure", "workload"];
    if tatp {
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
        "seconds",
        "consistent",
        "violations",
    ]);
    h
}

fn csv(figure: Figure, rows: &[SweepRow]) -> String {
    let mut csv = Csv::new(csv_header(figure));
    for r in rows {
        let w = &r.row;
        let mut cells = vec![r.figure.to_string(), w.workload.to_string()];
        if figure == Figure::TatpComponents {
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
            format!("{:.3}", w.seconds),
            w.consistent.to_string(),
            w.violations.join("; "),
        ]);
        csv.row(cells);
    }
    csv.finish()
}

/// One series per distinct `label`, points (x, y) in row order; non-positive y values
/// are dropped on a log axis, where they cannot be drawn.
fn series_by(
    rows: &[SweepRow],
    label: impl Fn(&SweepRow) -> String,
    xy: impl Fn(&SweepRow) -> (f64, f64),
    log_y: bool,
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in rows {
        let l = label(r);
        let (x, y) = xy(r);
        if !y.is_finite() || (log_y && y <= 0.0) {
            continue;
        }
        match out.iter_mut().find(|s| s.label == l) {
            Some(s) => s.points.push((x, y)),
            None => out.push(Series {
                label: l,
                points: vec![(x, y)],
            }),
        }
    }
    out
}

fn charts(
    cfg: &SweepConfig,
    rows: &[SweepRow],
    speedup: Option<&SpeedupTable>,
) -> Vec<(String, Chart)> {
    let stem = cfg.figure.to_string();
    let by_commit = |r: &SweepRow| r.row.commit.clone();
    let clients = |r: &SweepRow| r.row.clients as f64;
    let log_x = cfg.clients.len() > 1;
    // Throughput in thousands: short tick labels that leave room for the axis title.
    match cfg.figure {
        Figure::ElrSkew => {
            let sp = speedup.expect("elr-skew has a speedup table");
            let skews = distinct(rows.iter().map(|r| r.row.skew));
            let mut series: Vec<Series> = sp
                .rows
                .iter()
                .map(|(latency, vals)| Series {
                    label: format!("log latency {latency}"),
                    points: skews
                        .iter()
                        .zip(vals)
                        .filter_map(|(&s, v)| v.filter(|v| *v > 0.0).map(|v| (s, v)))
                        .collect(),
                })
                .collect();
            // The no-gain line: what a speedup is read against, and it keeps 1 on the log
            // axis (whose labels plotters leaves out below 10 when the range starts at 1.3).
            if let (Some(&first), Some(&last)) = (skews.first(), skews.last()) {
                series.push(Series {
                    label: "1× (no gain)".into(),
                    points: vec![(first, 1.0), (last, 1.0)],
                });
            }
            vec![(
                stem.to_string(),
                Chart {
                    title: format!(
                        "TPC-B SF {}, {} clients: ELR speedup over classic (Aether Fig. 3)",
                        cfg.scale, cfg.clients[0]
                    ),
                    x_label: "Zipf skew".into(),
                    y_label: "speedup (elr tps ÷ classic tps)".into(),
                    log_x: false,
                    log_y: true,
                    series,
                },
            )]
        }
        Figure::Ctx => vec![
            (
                format!("{stem}-switches"),
                Chart {
                    title: format!(
                        "TPC-B SF {}: context switches per transaction (Aether Fig. 4)",
                        cfg.scale
                    ),
                    x_label: "clients".into(),
                    y_label: "context switches / transaction".into(),
                    log_x,
                    log_y: true,
                    // Total, as the paper counts them, and the voluntary ones alone
                    // (threads blocking: the protocol's own cost); the difference is
                    // preemption, on a shared machine partly by other processes.
                    series: [
                        series_by(
                            rows,
                            by_commit,
                            |r| (clients(r), r.row.cpu.ctx_switches_per_txn),
                            true,
                        ),
                        series_by(
                            rows,
                            |r| format!("{}, voluntary only", r.row.commit),
                            |r| (clients(r), r.row.cpu.voluntary_ctx_per_txn),
                            true,
                        ),
                    ]
                    .concat(),
                },
            ),
            (
                format!("{stem}-cpu"),
                Chart {
                    title: format!(
                        "TPC-B SF {}: CPU utilisation (Aether Fig. 4)",
                        cfg.scale
                    ),
                    x_label: "clients".into(),
                    y_label: "CPU utilisation, % of all cores".into(),
                    log_x,
                    log_y: false,
                    series: series_by(
                        rows,
                        by_commit,
                        |r| (clients(r), r.row.cpu.cpu_util * 100.0),
                        false,
                    ),
                },
            ),
        ],
        Figure::Clients => vec![(
            stem.to_string(),
            Chart {
                title: format!(
                    "TPC-B SF {}, real disk: throughput vs clients (Aether Fig. 5)",
                    cfg.scale
                ),
                x_label: "clients".into(),
                y_label: "thousands of committed transactions / s".into(),
                log_x,
                log_y: false,
                series: series_by(rows, by_commit, |r| (clients(r), r.throughput() / 1e3), false),
            },
        )],
        Figure::TatpComponents => vec![(
            stem.to_string(),
            Chart {
                title: format!(
                    "TATP UpdateLocation, {} subscribers: components switched on in turn (Aether Fig. 9)",
                    cfg.subscribers
                ),
                x_label: "clients".into(),
                y_label: "MQTh, thousands of transactions / s".into(),
                log_x,
                log_y: false,
                series: series_by(
                    rows,
                    |r| {
                        let step = r.step.unwrap_or("?");
                        if step == SCALABLE_STEP {
                            format!("{step} ({})", r.row.log_buffer)
                        } else {
                            format!("{step} ({})", r.row.commit)
                        }
                    },
                    |r| (clients(r), r.throughput() / 1e3),
                    false,
                ),
            },
        )],
    }
}

/// Writes the CSV, the JSON, the speedup CSV and the figures; returns their paths.
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
    // A JSON array with one row object per line: valid JSON for a parser, and still
    // one row per line for grep and line-oriented tools.
    let mut json = String::from("[\n");
    for (i, r) in rows.iter().enumerate() {
        let sep = if i + 1 < rows.len() { "," } else { "" };
        writeln!(json, "{}{sep}", json_line(r)).expect("writing to a String cannot fail");
    }
    json.push_str("]\n");
    let path = out.join(format!("{stem}.json"));
    write_file(&path, &json)?;
    files.push(path);
    if let Some(sp) = speedup {
        let path = out.join(format!("{stem}-speedup.csv"));
        write_file(&path, &sp.csv())?;
        files.push(path);
    }
    for (name, chart) in charts(cfg, rows, speedup) {
        chart.write(out, &name)?;
        files.push(out.join(format!("{name}.png")));
        files.push(out.join(format!("{name}.svg")));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_denominator_has_no_ratio() {
        assert_eq!(ratio(5.0, 0.0), None);
        assert_eq!(ratio(6.0, 2.0), Some(3.0));
    }
}
