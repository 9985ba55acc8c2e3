//! The report's sections: for each paper figure or table, the sweep that measures it
//! (sized to the section's share of the budget), and the claims checked against what it
//! measured.

use super::{relative, Ctx, Finding, Section, Verdict};
use crate::experiments::commit_sweep::{self, Figure, SweepConfig, SweepResult, SweepRow};
use crate::experiments::log_insert_sweep;
use crate::experiments::log_insert_sweep::{self as li_output, SweepConfig as LiConfig};
use crate::experiments::noise::hardware_note;
use crate::experiments::partition::gamma::{self, GammaConfig};
use crate::experiments::partition::vertical_sweep;
use crate::experiments::propagation_sweep::{self, SweepFigure};
use crate::experiments::restore::{self, RestoreConfig};
use crate::metrics::cores;
use crate::output::Spread;
use sluice::experiment::Activity;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One section: what it is and how it runs.
pub(crate) struct Spec {
    pub id: &'static str,
    /// The figure's name in the paper ("Fig. 3"), for the summary.
    pub short: &'static str,
    pub paper: &'static str,
    pub title: &'static str,
    pub command: &'static str,
    /// Its share of the budget (the weights of all sections add up to 100).
    pub weight: f64,
    run: fn(&mut Ctx<'_>) -> Result<Body, String>,
}

/// What a section's run produced.
#[derive(Default)]
struct Body {
    setup: String,
    findings: Vec<Finding>,
    figures: Vec<PathBuf>,
    table: Option<String>,
    notes: Vec<String>,
}

const AETHER: &str = "Aether";
const PROPAGATION: &str = "Update propagation";
const TANDEM: &str = "Tandem log partitioning";

/// Every section, in the page's order.
pub(crate) static ALL: &[Spec] = &[
    Spec {
        id: "aether-fig2",
        short: "Fig. 2",
        paper: AETHER,
        title: "Fig. 2: CPU and where the time goes as the log bottlenecks are removed \
                (TPC-B, 60 clients)",
        command: "sluice bench commit-sweep --figure cpu --out DIR",
        weight: 4.0,
        run: aether_fig2,
    },
    Spec {
        id: "aether-fig3",
        short: "Fig. 3",
        paper: AETHER,
        title: "Fig. 3: ELR's speedup over classic commit vs skew, per log latency (TPC-B)",
        command: "sluice bench commit-sweep --figure elr-skew --out DIR",
        weight: 11.0,
        run: aether_fig3,
    },
    Spec {
        id: "aether-fig4",
        short: "Fig. 4",
        paper: AETHER,
        title: "Fig. 4: context switches and CPU vs clients, ELR and flush pipelining (TPC-B)",
        command: "sluice bench commit-sweep --figure ctx --out DIR",
        weight: 8.0,
        run: aether_fig4,
    },
    Spec {
        id: "aether-fig5",
        short: "Fig. 5",
        paper: AETHER,
        title: "Fig. 5: throughput vs clients, classic, ELR, flush pipelining, async (TPC-B)",
        command: "sluice bench commit-sweep --figure clients --out DIR",
        weight: 10.0,
        run: aether_fig5,
    },
    Spec {
        id: "aether-fig7",
        short: "Fig. 7",
        paper: AETHER,
        title: "Fig. 7: where the time goes as load grows, ELR and flush pipelining on \
                (TATP UPDATE_LOCATION)",
        command: "sluice bench commit-sweep --figure breakdown --out DIR",
        weight: 3.0,
        run: aether_fig7,
    },
    Spec {
        id: "aether-fig8",
        short: "Fig. 8",
        paper: AETHER,
        title: "Fig. 8 (left): log-buffer insert throughput vs threads, 120-byte records",
        command: "sluice bench log-insert-sweep --figure threads --out DIR",
        weight: 5.0,
        run: aether_fig8,
    },
    Spec {
        id: "aether-fig8-size",
        short: "Fig. 8 r.",
        paper: AETHER,
        title: "Fig. 8 (right): log-buffer insert throughput vs record size, 64 threads",
        command: "sluice bench log-insert-sweep --figure size --out DIR",
        weight: 3.0,
        run: aether_fig8_size,
    },
    Spec {
        id: "aether-fig11",
        short: "Fig. 11",
        paper: AETHER,
        title: "Fig. 11: hybrid (CD) vs delegated release (CDME) vs outlier record size",
        command: "sluice bench log-insert-sweep --figure outlier --out DIR",
        weight: 4.0,
        run: aether_fig11,
    },
    Spec {
        id: "aether-fig12",
        short: "Fig. 12",
        paper: AETHER,
        title: "Fig. 12: the hybrid's bandwidth vs consolidation-array slots and threads",
        command: "sluice bench log-insert-sweep --figure slots --out DIR",
        weight: 4.0,
        run: aether_fig12,
    },
    Spec {
        id: "aether-fig9",
        short: "Fig. 9",
        paper: AETHER,
        title: "Fig. 9: TATP UPDATE_LOCATION as each component of Aether switches on",
        command: "sluice bench commit-sweep --figure tatp-components --out DIR",
        weight: 10.0,
        run: aether_fig9,
    },
    Spec {
        id: "propagation-fig3",
        short: "Fig. 3",
        paper: PROPAGATION,
        title: "Fig. 3: write bandwidth of page cleaners and of log-based propagation (TPC-B)",
        command: "sluice bench propagation-sweep --figure bandwidth --out DIR",
        weight: 18.0,
        run: propagation_fig3,
    },
    Spec {
        id: "restore",
        short: "restore",
        paper: PROPAGATION,
        title: "Single-pass restore from the sorted log archive vs replay in log order",
        command: "sluice bench restore",
        weight: 9.0,
        run: restore_section,
    },
    Spec {
        id: "tandem-gamma",
        short: "γ",
        paper: TANDEM,
        title: "γ: the log's throughput right after a rollover, while the archiver copies",
        command: "sluice bench partition --horizontal 1,2",
        weight: 4.0,
        run: tandem_gamma,
    },
    Spec {
        id: "tandem-fig6",
        short: "Fig. 6",
        paper: TANDEM,
        title: "Fig. 6 (Tables 2–3): aggregate log throughput vs log bytes per transaction, \
                one and two log managers",
        command: "sluice bench partition --log-managers 1,2 --out DIR",
        weight: 7.0,
        run: tandem_fig6,
    },
];

/// The paper figures the report does not run, each with its command and why: the page
/// lists them under the summary.
pub(crate) static NOT_RUN: &[(&str, &str, &str, &str)] = &[(
    PROPAGATION,
    "Fig. 4: the backlog (dirty pages and REDO length over time, low and high throughput)",
    "sluice bench propagation-sweep --figure backlog --out DIR",
    "a time series needs runs of 10 s or more, and each run also copies, crashes, recovers \
     and checks its database (about 15–20 s here): its 8 variants take about 13 minutes, \
     more than the whole report's default budget",
)];

/// Runs `spec` in `ctx`, started at `t0`: a section whatever happens (a failed run is
/// its error, shown on the page).
pub(crate) fn run(spec: &Spec, ctx: &mut Ctx<'_>, t0: Instant) -> Section {
    let budget_seconds = ctx.seconds;
    let out_root = ctx.out.parent().map(PathBuf::from).unwrap_or_default();
    let r = (spec.run)(ctx);
    (ctx.tick)(1.0);
    let (body, error) = match r {
        Ok(b) => (b, None),
        Err(e) => (Body::default(), Some(e)),
    };
    Section {
        id: spec.id,
        short: spec.short,
        paper: spec.paper,
        title: spec.title,
        command: spec.command,
        setup: body.setup,
        findings: body.findings,
        figures: body
            .figures
            .iter()
            .map(|f| relative(f, &out_root))
            .collect(),
        table: body.table,
        notes: body.notes,
        budget_seconds,
        seconds: t0.elapsed().as_secs_f64(),
        error,
    }
}

/// A ratio of 1: what "faster" is compared with.
const ONE: Spread = Spread {
    median: 1.0,
    min: 1.0,
    max: 1.0,
    n: 1,
};

/// Seconds per run that fit `runs` runs, each with `overhead` seconds of its own, and
/// `fixed` seconds of setup into `share`; within `lo..=hi`.
fn per_run(share: f64, runs: usize, fixed: f64, overhead: f64, lo: f64, hi: f64) -> f64 {
    ((share - fixed) / runs.max(1) as f64 - overhead).clamp(lo, hi)
}

/// The rounds every section runs: enough for a spread.
pub(crate) const REPEAT: usize = 3;

fn finding(
    claim: &'static str,
    paper: &'static str,
    measured: String,
    verdict: Verdict,
    why: String,
) -> Finding {
    Finding {
        claim,
        paper,
        measured,
        verdict,
        why,
    }
}

fn cell(s: &Spread, digits: usize) -> String {
    s.cell(digits)
}

fn ratio_cell(s: &Spread) -> String {
    if s.n > 1 {
        format!("{:.2}× ({:.2}–{:.2})", s.median, s.min, s.max)
    } else {
        format!("{:.2}×", s.median)
    }
}

/// Why a comparison came out as it did: the words for each verdict, with the machine's
/// limit (`hw`) added where the effect needs more hardware threads than it has.
fn why(v: Verdict, shown: &str, hw: &Option<String>) -> String {
    let base = match v {
        Verdict::Shown => format!("{shown}; the spreads over the rounds do not overlap"),
        Verdict::Partly => "the medians are in the paper's order, but the spreads over the \
                            rounds overlap: this machine's noise is as large as the effect"
            .to_string(),
        Verdict::NotShown => "the medians are not in the paper's order".to_string(),
    };
    match (v, hw) {
        (Verdict::Shown, _) | (_, None) => base,
        (_, Some(h)) => format!("{base}; {h}"),
    }
}

// ---------------------------------------------------------------------------------------
// Aether: the commit-protocol sweeps.

/// Runs a commit sweep sized to the section's share; `fixed` is its load's seconds.
fn commit(
    ctx: &mut Ctx<'_>,
    mut cfg: SweepConfig,
    fixed: f64,
) -> Result<(SweepResult, String), String> {
    cfg.repeat = REPEAT;
    cfg.dir = ctx.dir.clone();
    let runs = cfg.plan().len();
    let t = per_run(ctx.seconds, runs, fixed, 0.3, 0.3, 1.5);
    cfg.seconds = Duration::from_secs_f64(0.7 * t);
    cfg.warmup = Duration::from_secs_f64(0.3 * t);
    cfg.normalise();
    cfg.validate()?;
    let setup = format!(
        "{} runs ({} rounds), {:.2} s measured after {:.2} s of warm-up each; {}",
        runs,
        cfg.repeat,
        cfg.seconds.as_secs_f64(),
        cfg.warmup.as_secs_f64(),
        if cfg.figure.tatp() {
            format!("{} subscribers", cfg.subscribers)
        } else {
            format!("TPC-B scale {}", cfg.scale)
        }
    );
    let tick = &mut *ctx.tick;
    let r = commit_sweep::run(&cfg, &ctx.out, |p| tick(p.done / p.total.max(1) as f64))
        .map_err(|e| e.to_string())?;
    if !r.consistent() {
        return Err("a run's consistency check failed (see the CSV)".into());
    }
    Ok((r, setup))
}

fn svg_of(files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "svg"))
        .cloned()
        .collect()
}

/// The speedup table's ratio in row `row`, column `col`.
fn ratio(r: &SweepResult, row: &str, col: &str) -> Option<Spread> {
    let t = r.speedup.as_ref()?;
    let c = t.columns.iter().position(|x| x == col)?;
    t.rows.iter().find(|(l, _)| l == row)?.1[c]
}

fn commit_body(r: &SweepResult, setup: String, findings: Vec<Finding>) -> Body {
    let mut table = commit_sweep::summary_table(r.figure, &r.rows).render();
    if let Some(t) = commit_sweep::time_table(r.figure, &r.rows) {
        table = format!(
            "{table}\n\nWhere the agents' time went (median %)\n{}",
            t.render()
        );
    }
    if let Some(sp) = &r.speedup {
        table = format!("{table}\n\n{}\n{}", sp.title, sp.table().render());
    }
    Body {
        setup,
        findings,
        figures: svg_of(&r.files),
        table: Some(table),
        notes: r.notes.clone(),
    }
}

fn commit_hw(clients: &[usize]) -> Option<String> {
    let most = clients.iter().copied().max().unwrap_or(1);
    hardware_note(
        cores(),
        most,
        "clients",
        "the agents share cores, so what needs idle cores cannot show",
    )
}

fn missing(what: &str) -> String {
    format!("no measurement of {what} (every round failed)")
}

fn aether_fig3(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut cfg = SweepConfig::new(Figure::ElrSkew);
    cfg.skews = vec![0.0, 0.8, 1.2];
    cfg.latencies = vec![Duration::from_micros(100), Duration::from_millis(10)];
    let (r, setup) = commit(ctx, cfg.clone(), 30.0)?;
    let label = |d: Duration| {
        r.rows
            .iter()
            .find(|row| row.row.log_latency != "disk" && d == parse_latency(&row.row.log_latency))
            .map(|row| row.row.log_latency.clone())
            .unwrap_or_default()
    };
    let (fast, slow) = (label(cfg.latencies[0]), label(cfg.latencies[1]));
    let col = |s: f64| format!("skew {s}");
    let mut findings = Vec::new();
    match (ratio(&r, &slow, &col(1.2)), ratio(&r, &slow, &col(0.0))) {
        (Some(hi), Some(lo)) => {
            let v = Verdict::of(&hi, &lo);
            findings.push(finding(
                "ELR's gain rises with contention: little at low skew, large at high skew",
                "speedup from about 1× at skew 0 to 35× at high skew with a 10 ms log \
                 (Shore-MT, 64-context Niagara II)",
                format!(
                    "elr ÷ classic at {slow}: {} at skew 1.2, {} at skew 0",
                    ratio_cell(&hi),
                    ratio_cell(&lo)
                ),
                v,
                why(
                    v,
                    "the speedup at high skew is above the one at skew 0",
                    &None,
                ),
            ));
        }
        _ => return Err(missing("ELR's speedup at the slow log")),
    }
    match (ratio(&r, &slow, &col(1.2)), ratio(&r, &fast, &col(1.2))) {
        (Some(s), Some(f)) => {
            let v = Verdict::of(&s, &f);
            findings.push(finding(
                "ELR matters most with a slow log device, and still with a fast one",
                "35× with a 10 ms log, 2× with a 100 µs (flash) log, under contention",
                format!(
                    "elr ÷ classic at skew 1.2: {} at {slow}, {} at {fast}",
                    ratio_cell(&s),
                    ratio_cell(&f)
                ),
                v,
                why(v, "the slower log's speedup is the larger", &None),
            ));
        }
        _ => return Err(missing("ELR's speedup at skew 1.2")),
    }
    Ok(commit_body(&r, setup, findings))
}

/// A latency as the rows spell it ("100us", "10ms", "0").
fn parse_latency(s: &str) -> Duration {
    sluice_storage::DeviceProfile::parse_latency(s).unwrap_or(Duration::MAX)
}

/// The spread of `value` over the rounds of the rows of `commit` at `clients` clients.
fn spread_at(
    rows: &[SweepRow],
    commit: &str,
    clients: usize,
    value: impl Fn(&SweepRow) -> f64,
) -> Option<Spread> {
    Spread::of(
        rows.iter()
            .filter(|r| r.row.commit == commit && r.row.clients == clients)
            .map(value),
    )
}

const TPCB_CLIENTS: [usize; 4] = [1, 4, 16, 64];

fn aether_fig4(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut cfg = SweepConfig::new(Figure::Ctx);
    cfg.clients = TPCB_CLIENTS.to_vec();
    let (r, setup) = commit(ctx, cfg.clone(), 8.0)?;
    let most = *cfg.clients.iter().max().unwrap_or(&1);
    let ctx_of = |c: &str| spread_at(&r.rows, c, most, |r| r.row.cpu.ctx_switches_per_txn);
    let (Some(elr), Some(piped)) = (ctx_of("elr"), ctx_of("elr-pipelined")) else {
        return Err(missing("context switches"));
    };
    let v = Verdict::of(&elr, &piped);
    let hw = commit_hw(&cfg.clients);
    let findings = vec![finding(
        "Flush pipelining takes the log flush out of the agents' scheduling: fewer context \
         switches per transaction than ELR alone",
        "baseline: context switches rise steadily with clients and 12 of 64 contexts idle; \
         pipelining: almost steady, utilization 64 of 64",
        format!(
            "context switches per transaction at {most} clients: elr {}, elr-pipelined {}",
            cell(&elr, 2),
            cell(&piped, 2)
        ),
        v,
        why(v, "pipelining's agents switch less per transaction", &hw),
    )];
    Ok(commit_body(&r, setup, findings))
}

fn aether_fig5(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut cfg = SweepConfig::new(Figure::Clients);
    cfg.clients = TPCB_CLIENTS.to_vec();
    let (r, setup) = commit(ctx, cfg.clone(), 8.0)?;
    let most = cfg.clients.iter().max().unwrap_or(&1).to_string();
    let hw = commit_hw(&cfg.clients);
    let mut findings = Vec::new();
    let Some(elr) = ratio(&r, &most, "elr ÷ classic") else {
        return Err(missing("ELR's speedup"));
    };
    let v = Verdict::of(&elr, &ONE);
    findings.push(finding(
        "Early lock release: TPC-B's hot rows stop serialising on the log flush",
        "Fig. 3's 35× at high contention; TPC-B exhibits significant lock contention",
        format!("elr ÷ classic at {most} clients: {}", ratio_cell(&elr)),
        v,
        why(v, "ELR commits more per second than classic", &hw),
    ));
    let Some(piped) = ratio(&r, &most, "elr-pipelined ÷ elr") else {
        return Err(missing("flush pipelining's speedup"));
    };
    let v = Verdict::of(&piped, &ONE);
    findings.push(finding(
        "Flush pipelining on top of ELR scales like asynchronous commit, safely",
        "up to 22% above the baseline at 64 clients on 64 contexts, as high as async commit",
        format!(
            "elr-pipelined ÷ elr at {most} clients: {}",
            ratio_cell(&piped)
        ),
        v,
        why(v, "pipelining commits more per second than ELR alone", &hw),
    ));
    Ok(commit_body(&r, setup, findings))
}

fn aether_fig9(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut cfg = SweepConfig::new(Figure::TatpComponents);
    cfg.clients = TPCB_CLIENTS.to_vec();
    let (r, setup) = commit(ctx, cfg.clone(), 8.0)?;
    let most = cfg.clients.iter().max().unwrap_or(&1).to_string();
    let hw = commit_hw(&cfg.clients);
    let mut findings = Vec::new();
    let Some(p) = ratio(&r, &most, "+pipelining ÷ +elr") else {
        return Err(missing("flush pipelining's step"));
    };
    let v = Verdict::of(&p, &ONE);
    findings.push(finding(
        "Flush pipelining is the largest single step for TATP UPDATE_LOCATION",
        "68% above the baseline (64 contexts)",
        format!("+pipelining ÷ +elr at {most} clients: {}", ratio_cell(&p)),
        v,
        why(v, "pipelining's step raises MQTh", &hw),
    ));
    match ratio(&r, &most, "+scalable-buffer ÷ +pipelining") {
        Some(b) => {
            let v = Verdict::of(&b, &ONE);
            findings.push(finding(
                "The scalable log buffer adds a further, modest step",
                "7% more (64 contexts), a share the paper expects to grow with cores",
                format!(
                    "+scalable-buffer ÷ +pipelining at {most} clients: {}",
                    ratio_cell(&b)
                ),
                v,
                why(v, "the scalable buffer's step raises MQTh", &hw),
            ));
        }
        None => findings.push(finding(
            "The scalable log buffer adds a further, modest step",
            "7% more (64 contexts)",
            "not run: this build has no scalable log-buffer variant".into(),
            Verdict::NotShown,
            "the step was left out".into(),
        )),
    }
    Ok(commit_body(&r, setup, findings))
}

/// `a`'s share of the agents' busy time over the rounds of the rows `pick` chooses.
fn busy(r: &SweepResult, a: Activity, pick: impl Fn(&SweepRow) -> bool) -> Option<Spread> {
    commit_sweep::share_spread(&r.rows, pick, a, true)
}

/// A share as a percentage cell.
fn pct(s: &Spread) -> String {
    s.map(|v| v * 100.0).cell(1) + " %"
}

fn aether_fig2(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let cfg = SweepConfig::new(Figure::Cpu);
    let (r, setup) = commit(ctx, cfg.clone(), 25.0)?;
    let step = |name: &'static str| move |row: &SweepRow| row.step == Some(name);
    let (base, elr, piped) = (step("baseline"), step("+elr"), step("+pipelining"));
    let hw = commit_hw(&cfg.clients);
    let mut findings = Vec::new();
    let (Some(lw0), Some(lw1)) = (
        busy(&r, Activity::LockWait, base),
        busy(&r, Activity::LockWait, elr),
    ) else {
        return Err(missing("the lock waits"));
    };
    let v = Verdict::of(&lw0, &lw1);
    findings.push(finding(
        "Under classic commit the agents wait for locks held across the log flush; ELR \
         removes that wait",
        "the first bar: lock contention leaves the machine 75% idle",
        format!(
            "lock wait, share of the agents' busy time: classic {}, +elr {}",
            pct(&lw0),
            pct(&lw1)
        ),
        v,
        why(v, "ELR takes the lock wait out of the agents' time", &hw),
    ));
    let (Some(fw0), Some(fw1)) = (
        busy(&r, Activity::LogFlushWait, elr),
        busy(&r, Activity::LogFlushWait, piped),
    ) else {
        return Err(missing("the flush waits"));
    };
    let v = Verdict::of(&fw0, &fw1);
    findings.push(finding(
        "With ELR alone the agents block on the log flush (and the scheduler); flush \
         pipelining takes the flush off the agents",
        "the second bar: 20% idle with transactions ready to run; the third: the hardware \
         fully used",
        format!(
            "log flush wait, share of the agents' busy time: +elr {}, +pipelining {}",
            pct(&fw0),
            pct(&fw1)
        ),
        v,
        why(v, "pipelining's agents no longer wait for the flush", &hw),
    ));
    let idle = |pick: &dyn Fn(&SweepRow) -> bool| {
        Spread::of(
            r.rows
                .iter()
                .filter(|row| pick(row))
                .map(|row| 1.0 - row.row.cpu.cpu_util),
        )
    };
    let (Some(i0), Some(i2)) = (idle(&base), idle(&piped)) else {
        return Err(missing("the machine's idle time"));
    };
    let v = Verdict::of(&i0, &i2);
    findings.push(finding(
        "Removing the lock and flush bottlenecks puts the idle machine to work",
        "75% idle under classic commit; fully used with ELR and flush pipelining",
        format!(
            "machine idle (1 − CPU ÷ (wall × {} cores)): classic {}, +pipelining {}",
            cores(),
            pct(&i0),
            pct(&i2)
        ),
        v,
        why(v, "the machine is busier with ELR and pipelining", &hw),
    ));
    Ok(commit_body(&r, setup, findings))
}

fn aether_fig7(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let cfg = SweepConfig::new(Figure::Breakdown);
    let (r, setup) = commit(ctx, cfg.clone(), 5.0)?;
    let (least, most) = (
        *cfg.clients.iter().min().unwrap_or(&1),
        *cfg.clients.iter().max().unwrap_or(&1),
    );
    let at = |n: usize| move |row: &SweepRow| row.row.clients == n;
    let (Some(w0), Some(w1)) = (
        busy(&r, Activity::LogInsertWait, at(least)),
        busy(&r, Activity::LogInsertWait, at(most)),
    ) else {
        return Err(missing("the log-buffer waits"));
    };
    let v = Verdict::of(&w1, &w0);
    let inserters = hardware_note(
        cores(),
        most,
        "clients",
        "only that many agents insert into the log at once, so the wait cannot grow to \
         the paper's size",
    );
    let mut findings = vec![finding(
        "With ELR and flush pipelining on, the time waiting for the log buffer grows with \
         the load",
        "from nothing at few clients to more than 35% of the execution time at 64 \
         (64 hardware contexts, the baseline log buffer)",
        format!(
            "log-buffer wait, share of the agents' busy time: {} at {least} client{}, {} \
             at {most}",
            pct(&w0),
            if least == 1 { "" } else { "s" },
            pct(&w1)
        ),
        v,
        why(v, "the wait grows with the load", &inserters),
    )];
    // The bottleneck: the log-buffer wait against the largest other share of the busy
    // time at the most clients.
    let rest = Activity::ALL
        .into_iter()
        .filter(|&a| !matches!(a, Activity::LogInsertWait | Activity::Idle))
        .filter_map(|a| busy(&r, a, at(most)).map(|s| (a, s)))
        .max_by(|x, y| x.1.median.total_cmp(&y.1.median));
    let Some((top, top_share)) = rest else {
        return Err(missing("the other activities"));
    };
    let v = Verdict::of(&w1, &top_share);
    findings.push(finding(
        "At high load the log-buffer wait is the bottleneck: the largest share of a \
         transaction's time",
        "more than 35% of the execution time at 64 clients",
        format!(
            "at {most} clients: log-buffer wait {}, the largest other share ({}) {}",
            pct(&w1),
            top.name(),
            pct(&top_share)
        ),
        v,
        why(v, "the log buffer is the largest share", &inserters),
    ));
    Ok(commit_body(&r, setup, findings))
}

// ---------------------------------------------------------------------------------------
// Aether: the log buffer alone.

/// Runs a log-insert sweep of `figure` sized to the section's share; its points' MB/s
/// are looked up with the returned closure's arguments (variant, threads, record bytes
/// or outlier size, slots).
struct LogInsertRun {
    cfg: LiConfig,
    points: Vec<li_output::Point>,
    body: Body,
    hw: Option<String>,
}

impl LogInsertRun {
    fn new(ctx: &mut Ctx<'_>, figure: log_insert_sweep::Figure) -> Result<LogInsertRun, String> {
        let mut cfg = LiConfig::new(figure);
        cfg.repeat = REPEAT;
        let runs = cfg.runs();
        // Each run also starts and joins its threads: about 20 ms.
        let t = per_run(ctx.seconds, runs, 0.0, 0.02, 0.05, 0.5);
        cfg.per_point = Duration::from_secs_f64(t);
        cfg.validate()?;
        let tick = &mut *ctx.tick;
        let rows = log_insert_sweep::run(&cfg, |d, n| tick(d as f64 / n.max(1) as f64))
            .map_err(|e| e.to_string())?;
        let files = li_output::write_outputs(&ctx.out, &cfg, &rows)?;
        let hw = hardware_note(
            cores(),
            cfg.max_threads,
            "threads",
            "the inserting threads share cores, so the figure cannot show the paper's scaling",
        );
        Ok(LogInsertRun {
            points: li_output::points(&rows),
            body: Body {
                setup: format!(
                    "{runs} runs ({} rounds, limit runs included), {t:.2} s each, up to {} \
                     threads",
                    cfg.repeat, cfg.max_threads
                ),
                findings: Vec::new(),
                figures: svg_of(&files),
                table: Some(li_output::summary_table(&rows).render()),
                notes: li_output::notes(&cfg),
            },
            cfg,
            hw,
        })
    }

    /// The MB/s of `variant` at the point `at` picks.
    fn mb(&self, variant: &str, at: impl Fn(&li_output::PointKey) -> bool) -> Option<Spread> {
        let s = self
            .points
            .iter()
            .find(|p| p.key.variant == variant && at(&p.key))?
            .bytes_per_sec;
        Some(Spread {
            median: s.median / 1e6,
            min: s.min / 1e6,
            max: s.max / 1e6,
            n: s.n,
        })
    }

    /// A finding that `high` inserts more MB/s than `low` at the point `at` (named
    /// `where_`).
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &mut self,
        claim: &'static str,
        paper: &'static str,
        (high, hi_name): (&str, &str),
        (low, lo_name): (&str, &str),
        where_: &str,
        at: impl Fn(&li_output::PointKey) -> bool,
    ) -> Result<(), String> {
        let (Some(h), Some(l)) = (self.mb(high, &at), self.mb(low, &at)) else {
            return Err(missing(&format!("{high} and {low} {where_}")));
        };
        let v = Verdict::of(&h, &l);
        self.body.findings.push(finding(
            claim,
            paper,
            format!(
                "MB/s {where_}: {hi_name} {}, {lo_name} {}",
                cell(&h, 1),
                cell(&l, 1)
            ),
            v,
            why(
                v,
                &format!("{hi_name} inserts more than {lo_name}"),
                &self.hw,
            ),
        ));
        Ok(())
    }
}

fn aether_fig8(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut r = LogInsertRun::new(ctx, log_insert_sweep::Figure::Threads)?;
    let most = r.cfg.max_threads;
    let at = move |k: &li_output::PointKey| k.threads == most;
    let where_ = format!("at {most} threads");
    r.compare(
        "The hybrid buffer (consolidation + decoupled fill) scales past the baseline",
        "baseline peaks at about 140 MB/s; the hybrid scales near-linearly to 64 threads \
         (Niagara II)",
        ("hybrid", "hybrid"),
        ("mutex", "mutex"),
        &where_,
        at,
    )?;
    r.compare(
        "Consolidation beats the baseline once contention grows",
        "starts below the baseline, then scales linearly as threads combine requests",
        ("consolidated", "consolidated"),
        ("mutex", "mutex"),
        &where_,
        at,
    )?;
    Ok(r.body)
}

fn aether_fig8_size(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut r = LogInsertRun::new(ctx, log_insert_sweep::Figure::Size)?;
    let (small, large) = (log_insert_sweep::SIZES[0], 4096);
    r.compare(
        "The hybrid buffer outperforms the baseline whatever the record size",
        "64 threads, 48 B to 12 KiB records: the baseline improves as records grow, but \
         the hybrid stays well above it across the whole range",
        ("hybrid", "hybrid"),
        ("mutex", "mutex"),
        &format!("with {small} B records"),
        move |k| k.record_bytes == small,
    )?;
    r.compare(
        "Past 1 KiB records, decoupled fill beats consolidation",
        "consolidation is better with small records, decoupled insert once records pass \
         1 KiB and more inserts copy at once",
        ("decoupled", "decoupled"),
        ("consolidated", "consolidated"),
        &format!("with {} KiB records", large >> 10),
        move |k| k.record_bytes == large,
    )?;
    Ok(r.body)
}

fn aether_fig11(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut r = LogInsertRun::new(ctx, log_insert_sweep::Figure::Outlier)?;
    let largest = log_insert_sweep::OUTLIERS[log_insert_sweep::OUTLIERS.len() - 1];
    r.compare(
        "Delegated buffer release (CDME) keeps scaling where one large record stalls the \
         hybrid (CD)",
        "one outlier every 60 records of 48 B: CD levels off from about 8 KiB, CDME reaches \
         up to 2× CD past 65 KiB",
        ("delegated", "delegated (CDME)"),
        ("hybrid", "hybrid (CD)"),
        &format!("with {} KiB outliers", largest >> 10),
        move |k| k.record_bytes == largest,
    )?;
    Ok(r.body)
}

fn aether_fig12(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut r = LogInsertRun::new(ctx, log_insert_sweep::Figure::Slots)?;
    let most = r.cfg.max_threads;
    // The variant names are the same; the slot counts differ: compare through the
    // points directly.
    let at = |slots: usize| {
        r.points
            .iter()
            .find(|p| p.key.threads == most && p.key.slots == slots)
            .map(|p| p.bytes_per_sec)
    };
    let (Some(four), Some(one)) = (at(4), at(1)) else {
        return Err(missing("4 and 1 slots"));
    };
    let mb = |s: Spread| Spread {
        median: s.median / 1e6,
        min: s.min / 1e6,
        max: s.max / 1e6,
        n: s.n,
    };
    let (four, one) = (mb(four), mb(one));
    let v = Verdict::of(&four, &one);
    r.body.findings.push(finding(
        "A consolidation array of a few slots beats a single slot at high thread counts",
        "peak at 3–4 slots, high thread counts needing somewhat more; fixed at 4",
        format!(
            "hybrid MB/s at {most} threads: 4 slots {}, 1 slot {}",
            cell(&four, 1),
            cell(&one, 1)
        ),
        v,
        why(v, "four slots insert more than one", &r.hw),
    ));
    Ok(r.body)
}

// ---------------------------------------------------------------------------------------
// Update propagation.

fn propagation_fig3(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut cfg = propagation_sweep::SweepConfig::new(SweepFigure::Bandwidth);
    // One heap size of the paper's three (1% of the pool): the three policies' choices
    // differ by policy more than by heap, and the budget buys rounds instead.
    cfg.heaps_pct = vec![1.0];
    // And five of the strategies: each kind of page cleaner once (single pages by age
    // and by heat, every dirty page, clustered) and the log; three (by age, clustered,
    // the log) when the share cannot buy five at the shortest runs. A run costs about
    // 16 s besides its measured seconds (copying the loaded database, the crash and the
    // restart it times; measured: 355 s for 15 runs of 5 s), and the template's load
    // about 35 s once, so the budget buys rounds rather than variants.
    const OVERHEAD: f64 = 16.0;
    const LOAD: f64 = 35.0;
    let five = [
        "oldest 1%",
        "hottest 1%",
        "no policy",
        "clustered ≥8",
        "log",
    ];
    let fits = |n: usize| LOAD + (n * REPEAT) as f64 * (OVERHEAD + 2.0) <= ctx.seconds;
    let chosen: &[&str] = if fits(five.len()) {
        &five
    } else {
        &["oldest 1%", "clustered ≥8", "log"]
    };
    cfg.only = chosen.iter().map(|s| s.to_string()).collect();
    cfg.repeat = REPEAT;
    cfg.dir = ctx.dir.clone();
    // A 64 MiB device measurement instead of 256.
    cfg.probe_bytes = 64 << 20;
    let runs = cfg.plan().len() * cfg.repeat;
    let t = per_run(ctx.seconds, runs, LOAD, OVERHEAD, 2.0, 5.0);
    cfg.seconds = Duration::from_secs_f64(t.round());
    cfg.validate()?;
    let tick = &mut *ctx.tick;
    let r = propagation_sweep::run(&cfg, &ctx.out, |p| tick(p.done / p.total.max(1) as f64))
        .map_err(|e| e.to_string())?;
    if !r.consistent() {
        return Err("a run's consistency check failed (see the CSV)".into());
    }
    let of = |label: &str| {
        r.plan
            .iter()
            .find(|p| p.label == label)
            .and_then(|p| r.bandwidth_of(p))
    };
    let others = |pred: &dyn Fn(&str) -> bool| {
        r.plan
            .iter()
            .filter(|p| pred(&p.label))
            .filter_map(|p| r.bandwidth_of(p).map(|s| (p.label.clone(), s)))
            .max_by(|a, b| a.1.median.total_cmp(&b.1.median))
    };
    let mut findings = Vec::new();
    let log = of("log").ok_or_else(|| missing("log-based propagation"))?;
    let best = others(&|l| l != "log").ok_or_else(|| missing("the page cleaners"))?;
    let v = Verdict::of(&log, &best.1);
    findings.push(finding(
        "Log-based propagation writes at a far higher bandwidth than any page cleaner",
        "log-based 100 MB/s (half the SSD's 200 MB/s; the other half reads); clustered about \
         18 MB/s; the nine page policies 3–5 MB/s (TPC-C, 13 GB)",
        format!(
            "MB/s while propagating: log {}, best page cleaner ({}) {}",
            cell(&log, 1),
            best.0,
            cell(&best.1, 1)
        ),
        v,
        why(v, "log-based propagation writes faster", &None),
    ));
    let clustered = others(&|l| l.starts_with("clustered"));
    let single = others(&|l| {
        ["oldest", "coldest", "hottest"]
            .iter()
            .any(|p| l.starts_with(p))
    });
    if let (Some(c), Some(s)) = (clustered, single) {
        let v = Verdict::of(&c.1, &s.1);
        findings.push(finding(
            "Clustered writes beat the single-page policies",
            "clustered about 18 MB/s against 3–5 MB/s",
            format!(
                "MB/s while propagating: {} {}, best single-page policy ({}) {}",
                c.0,
                cell(&c.1, 1),
                s.0,
                cell(&s.1, 1)
            ),
            v,
            why(v, "clustered writes are faster", &None),
        ));
    }
    Ok(Body {
        setup: format!(
            "{} strategies × {} rounds, {} s each, TPC-B scale {}, {} clients",
            cfg.plan().len(),
            cfg.repeat,
            cfg.seconds.as_secs(),
            cfg.scale,
            cfg.clients
        ),
        findings,
        figures: svg_of(&r.files),
        table: Some(r.table().render()),
        notes: r.notes.clone(),
    })
}

fn restore_section(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let cfg = RestoreConfig {
        // SF 10 (about 110 MiB of data) against the restore's 32 MiB pool: at SF 2 the
        // whole database fits in the pool and replaying in log order never re-reads a
        // page, which is what the single pass saves (measured: at SF 2 log order was
        // the faster).
        scale: 10,
        // The load makes the log both restores replay; the restores take about as long
        // again, three times each, after the load of SF 10 (about 40 s).
        seconds: ((ctx.seconds - 40.0) * 0.4).clamp(5.0, 60.0).round(),
        repeat: REPEAT,
        dir: ctx.dir.clone(),
        ..RestoreConfig::default()
    };
    let tick = &mut *ctx.tick;
    let r = restore::run(&cfg, |p| tick(p.done)).map_err(|e| e.to_string())?;
    let of = |replay: &str| {
        Spread::of(
            r.runs
                .iter()
                .filter(|x| x.replay == replay)
                .map(|x| x.seconds),
        )
    };
    let (Some(log_order), Some(sorted)) = (of("log-order"), of("sorted-runs")) else {
        return Err(missing("the restores"));
    };
    let v = Verdict::of(&log_order, &sorted);
    let findings = vec![finding(
        "A restore that merges the archive's sorted runs replays in one sequential pass, \
         faster than replaying the log in order",
        "single-pass restore: log replay in page order, no noticeable overhead in normal \
         processing (Sauer et al., BTW 2015, cited as [11])",
        format!(
            "seconds to restore: log order {}, sorted runs {}",
            cell(&log_order, 2),
            cell(&sorted, 2)
        ),
        v,
        why(v, "the single pass is faster", &None),
    )];
    Ok(Body {
        setup: format!(
            "TPC-B scale {}, {} s of load ({} commits, {:.1} MB of log to replay), {} rounds",
            cfg.scale,
            cfg.seconds,
            r.committed,
            r.log_bytes as f64 / 1e6,
            cfg.repeat
        ),
        findings,
        figures: Vec::new(),
        table: None,
        notes: r.notes.clone(),
    })
}

// ---------------------------------------------------------------------------------------
// Tandem.

fn tandem_gamma(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let dirs = [1usize, 2];
    let runs = dirs.len() * REPEAT;
    // Each run warms up until the archiver has copied a segment (a second or two).
    let t = per_run(ctx.seconds, runs, 0.0, 2.0, 1.0, 4.0);
    let mut results: Vec<(usize, gamma::GammaResult)> = Vec::new();
    let mut done = 0;
    for _ in 0..REPEAT {
        for &d in &dirs {
            let cfg = GammaConfig {
                horizontal_dirs: d,
                duration: Duration::from_secs_f64(t),
                ..GammaConfig::default()
            };
            let tick = &mut *ctx.tick;
            let r = gamma::run(&cfg, |f| tick((done as f64 + f) / runs as f64))
                .map_err(|e| e.to_string())?;
            done += 1;
            results.push((d, r));
        }
    }
    let g = |d: usize| {
        Spread::of(
            results
                .iter()
                .filter(|(x, _)| *x == d)
                .map(|(_, r)| r.gamma),
        )
    };
    let (Some(one), Some(two)) = (g(1), g(2)) else {
        return Err(missing("γ"));
    };
    let v = Verdict::of(&two, &one);
    let mut table = crate::output::Table::new(["log directories", "γ", "log MB/s", "rollovers"]);
    for &d in &dirs {
        let mine: Vec<&gamma::GammaResult> = results
            .iter()
            .filter(|(x, _)| *x == d)
            .map(|(_, r)| r)
            .collect();
        let s = |f: fn(&gamma::GammaResult) -> f64| Spread::of(mine.iter().map(|r| f(r)));
        table.row([
            d.to_string(),
            s(|r| r.gamma).map_or("-".into(), |x| x.cell(2)),
            s(|r| r.log_mb_per_s).map_or("-".into(), |x| x.cell(2)),
            s(|r| r.rollovers as f64).map_or("-".into(), |x| x.cell(0)),
        ]);
    }
    let findings = vec![finding(
        "Right after a rollover the archiver's reads slow the log (γ < 1); horizontal \
         partitioning puts the next file on another disk and removes that contention",
        "γ is defined (0 < γ < 1) and left to be measured; the model plans horizontal \
         partitioning when γ·Lmax < L < Lmax",
        format!(
            "γ with one log directory {}, with two {}",
            cell(&one, 2),
            cell(&two, 2)
        ),
        v,
        why(
            v,
            "two directories keep the log's throughput after a rollover",
            &None,
        ),
    )];
    Ok(Body {
        setup: format!(
            "{} rounds × {{1, 2}} emulated log devices of {} MB/s, {:.1} s measured each",
            REPEAT,
            GammaConfig::default().device_bytes_per_sec >> 20,
            t
        ),
        findings,
        figures: Vec::new(),
        table: Some(table.render()),
        notes: Vec::new(),
    })
}

fn tandem_fig6(ctx: &mut Ctx<'_>) -> Result<Body, String> {
    let mut cfg = vertical_sweep::SweepConfig::figure();
    // Three of the figure's five sizes, smallest to largest, and a 2 s warm-up instead
    // of 3: a run costs about 0.6 s besides its warm-up and measured time (creating the
    // partitioned database), so the budget buys rounds and measured time. (A 1 s warm-up
    // left one round's two-manager run at 2.8 MB/s against 7.6.)
    cfg.inserts_per_txn = vec![10, 50, 200];
    cfg.run.warmup = Duration::from_secs(2);
    cfg.repeat = REPEAT;
    let runs = cfg.plan().len();
    let t = per_run(
        ctx.seconds,
        runs,
        0.0,
        2.6,
        0.5,
        vertical_sweep::FIGURE_SECONDS,
    );
    cfg.run.duration = Duration::from_secs_f64(t);
    cfg.validate()?;
    let tick = &mut *ctx.tick;
    let rows = vertical_sweep::run(&cfg, tick)?;
    let files = vertical_sweep::write_outputs(&ctx.out, &cfg, &rows)?;
    let points = vertical_sweep::points(&rows);
    let largest = *cfg.inserts_per_txn.iter().max().unwrap_or(&1);
    let at = |managers: usize| {
        points
            .iter()
            .find(|p| p.log_managers == managers && p.inserts_per_txn == largest)
    };
    let (Some(two), Some(one)) = (at(2), at(1)) else {
        return Err(missing("one and two log managers"));
    };
    let v = Verdict::of(&two.log_mb_per_s, &one.log_mb_per_s);
    let findings = vec![finding(
        "A second log manager (vertical partitioning with a commit coordinator) raises the \
         aggregate log throughput once transactions log enough",
        "T3 (441 B per generator per transaction): 0.97 MB/s with one log manager, 1.90 MB/s \
         with two — doubled; T1 (29 B) gained less, the commit coordinator limiting it",
        format!(
            "L, MB/s, at {largest} inserts per transaction ({:.0} B logged per transaction): \
             two log managers {}, one {}",
            one.log_bytes_per_txn.median,
            cell(&two.log_mb_per_s, 2),
            cell(&one.log_mb_per_s, 2)
        ),
        v,
        why(v, "two log managers carry more log per second", &None),
    )];
    Ok(Body {
        setup: format!(
            "{runs} runs ({} rounds), {t:.1} s measured each, {} clients, each log on an \
             emulated device",
            cfg.repeat, cfg.run.clients
        ),
        findings,
        figures: svg_of(&files),
        table: Some(vertical_sweep::table(&rows).render()),
        notes: vertical_sweep::notes(&cfg, &rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_share_the_whole_budget_and_ids_are_distinct() {
        let sum: f64 = ALL.iter().map(|s| s.weight).sum();
        assert!(sum <= 100.0 + 1e-9, "{sum}");
        let mut ids: Vec<_> = ALL.iter().map(|s| s.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), ALL.len());
    }

    #[test]
    fn runs_are_sized_to_their_share_within_bounds() {
        assert!((per_run(100.0, 10, 0.0, 0.0, 0.1, 100.0) - 10.0).abs() < 1e-9);
        assert!((per_run(100.0, 10, 50.0, 1.0, 0.1, 100.0) - 4.0).abs() < 1e-9);
        assert_eq!(per_run(1.0, 10, 50.0, 1.0, 0.3, 2.0), 0.3);
        assert_eq!(per_run(1e6, 10, 0.0, 0.0, 0.3, 2.0), 2.0);
    }

    #[test]
    fn why_adds_the_hardware_note_only_where_the_effect_did_not_show() {
        let hw = Some("2 hardware threads here".to_string());
        assert!(!why(Verdict::Shown, "x", &hw).contains("hardware"));
        assert!(why(Verdict::Partly, "x", &hw).contains("2 hardware threads"));
        assert!(why(Verdict::NotShown, "x", &None).contains("not in the paper's order"));
    }
}
