//! A tiny commit-protocol sweep writes its CSV, JSON and figures, with one row per
//! planned run and the columns the figure's readers expect.

use sluice_bench::experiments::commit_sweep::{self, Figure, SweepConfig};
use std::path::Path;
use std::time::Duration;

fn tiny(figure: Figure, data: &Path) -> SweepConfig {
    SweepConfig {
        scale: 1,
        subscribers: 1_000,
        clients: vec![1, 2],
        warmup: Duration::ZERO,
        seconds: Duration::from_millis(200),
        repeat: 1,
        // Not the crate directory, which is where tests run.
        dir: Some(data.to_path_buf()),
        ..SweepConfig::new(figure)
    }
}

fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    // No field of these sweeps needs quoting when the runs are consistent.
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header, rows)
}

fn assert_files(out: &Path, names: &[&str]) {
    for n in names {
        let p = out.join(n);
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{} missing or empty", p.display());
    }
    let png = std::fs::read(out.join(names.iter().find(|n| n.ends_with(".png")).unwrap())).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

#[test]
fn elr_skew_sweep_writes_rows_speedups_and_figure() {
    let data = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        clients: vec![4],
        skews: vec![1.0, 0.0],
        latencies: vec![Duration::ZERO],
        repeat: 2,
        ..tiny(Figure::ElrSkew, data.path())
    };
    let mut last = 0.0;
    let r = commit_sweep::run(&cfg, out.path(), |p| {
        assert!(
            p.done >= last && p.done <= p.total as f64,
            "progress moves forward"
        );
        last = p.done;
    })
    .unwrap();
    assert!(r.consistent(), "{:?}", r.rows);
    assert_eq!(last, 8.0, "2 rounds of 2 skews × 2 protocols");
    assert_files(
        out.path(),
        &[
            "elr-skew.csv",
            "elr-skew.json",
            "elr-skew-speedup.csv",
            "elr-skew-summary.csv",
            "elr-skew.png",
            "elr-skew.svg",
        ],
    );

    let (header, rows) = csv(&out.path().join("elr-skew.csv"));
    for col in [
        "figure",
        "repeat",
        "commit",
        "clients",
        "agents",
        "skew",
        "log_latency",
        "tps",
        "ctx_switches_per_txn",
        "voluntary_ctx_per_txn",
        "cpu_util",
        "sys_cpu_util",
        "consistent",
    ] {
        assert!(
            header.iter().any(|h| h == col),
            "no column {col}: {header:?}"
        );
    }
    assert_eq!(rows.len(), 8);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // Two rounds, each of the sorted skews, classic before elr at each, all on 4
    // blocking agents.
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r[col("repeat")].as_str(),
                r[col("skew")].as_str(),
                r[col("commit")].as_str(),
            )
        })
        .collect();
    let round = |r| {
        [
            (r, "0", "classic"),
            (r, "0", "elr"),
            (r, "1", "classic"),
            (r, "1", "elr"),
        ]
    };
    assert_eq!(got, [round("0"), round("1")].concat());
    // The summary: one row per point, over both rounds.
    let (sh, srows) = csv(&out.path().join("elr-skew-summary.csv"));
    assert_eq!(srows.len(), 4);
    let scol = |name: &str| sh.iter().position(|h| h == name).unwrap();
    for r in &srows {
        assert_eq!(r[scol("repeats")], "2");
        let v = |n: &str| r[scol(n)].parse::<f64>().unwrap();
        assert!(v("throughput_min") <= v("throughput_median"));
        assert!(v("throughput_median") <= v("throughput_max"));
        // Some round of each point committed (one 200 ms window on a loaded CI machine
        // may commit nothing, so not every round is required to).
        assert!(v("throughput_max") > 0.0, "{r:?}");
    }
    for r in &rows {
        assert_eq!(r.len(), header.len());
        assert_eq!(r[col("agents")], "4");
        assert_eq!(r[col("consistent")], "true");
        assert!(r[col("tps")].parse::<f64>().unwrap() >= 0.0);
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("elr-skew.json")).unwrap())
            .unwrap();
    let objs = json.as_array().unwrap();
    assert_eq!(objs.len(), 8);
    assert_eq!(objs[4]["repeat"], 1);
    assert_eq!(objs[0]["figure"], "elr-skew");
    assert_eq!(objs[0]["consistent"], true);

    let sp = r.speedup.unwrap();
    assert_eq!(sp.columns, ["skew 0", "skew 1"]);
    assert_eq!(sp.rows.len(), 1);
    assert!(sp.rows[0]
        .1
        .iter()
        .all(|v| v.is_some_and(|x| x.max > 0.0 && (1..=2).contains(&x.n))));
}

#[test]
fn tatp_components_sweep_opens_a_session_per_log_buffer() {
    let data = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let cfg = tiny(Figure::TatpComponents, data.path());
    let steps = 3 + cfg.scalable_buffer.is_some() as usize;
    let r = commit_sweep::run(&cfg, out.path(), |_| {}).unwrap();
    assert!(r.consistent(), "{:?}", r.rows);
    assert_files(
        out.path(),
        &[
            "tatp-components.csv",
            "tatp-components.json",
            "tatp-components.png",
            "tatp-components.svg",
        ],
    );
    let (header, rows) = csv(&out.path().join("tatp-components.csv"));
    assert_eq!(rows.len(), steps * 2);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert!(header.iter().all(|h| h != "tps"), "TATP counts MQTh");
    // The steps side by side at each client count.
    let first: Vec<_> = rows
        .iter()
        .take(steps)
        .map(|r| (r[col("step")].as_str(), r[col("commit")].as_str()))
        .collect();
    assert_eq!(
        &first[..3],
        [
            ("baseline", "classic"),
            ("+elr", "elr"),
            ("+pipelining", "elr-pipelined")
        ]
    );
    for r in &rows {
        if r[col("step")] == "+scalable-buffer" {
            let v = cfg.scalable_buffer.unwrap();
            assert_eq!(r[col("log_buffer")], v.name());
            assert_eq!(r[col("commit")], "elr-pipelined");
        } else {
            assert_eq!(r[col("log_buffer")], "mutex");
        }
        assert!(r[col("mqth")].parse::<f64>().unwrap() > 0.0);
    }
    let sp = r.speedup.unwrap();
    assert_eq!(sp.rows.len(), 2, "one row per client count");
    assert_eq!(
        sp.columns.len(),
        steps,
        "each step over the one before, and all over baseline"
    );
}

/// The rows of a breakdown figure's CSV as maps from column to value.
fn csv_maps(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let (header, rows) = csv(path);
    rows.into_iter()
        .map(|r| {
            assert_eq!(r.len(), header.len(), "{r:?}");
            header.iter().cloned().zip(r).collect()
        })
        .collect()
}

fn num(r: &std::collections::HashMap<String, String>, col: &str) -> f64 {
    r.get(col)
        .unwrap_or_else(|| panic!("no column {col}"))
        .parse()
        .unwrap_or_else(|e| panic!("{col}: {e}: {r:?}"))
}

/// The agents' clocks account for every moment of every agent: their activities add up
/// to agents × the measured seconds (measured by the driver's own clock). An agent
/// parked for the whole window, a thread left out or a switch counted twice would put
/// the sum off.
fn assert_accounted(rows: &[std::collections::HashMap<String, String>]) {
    for r in rows {
        let acc = num(r, "accounted");
        assert!((0.97..=1.03).contains(&acc), "accounted {acc}: {r:?}");
        let agent_s = num(r, "agents_seconds");
        let wall = num(r, "agents") * num(r, "seconds");
        assert!((agent_s / wall - acc).abs() < 0.01, "{r:?}");
        let shares: f64 = sluice::experiment::Activity::ALL
            .iter()
            .map(|a| num(r, &format!("{}_share", a.name())))
            .sum();
        assert!(
            (shares - 1.0).abs() < 0.001,
            "shares sum to {shares}: {r:?}"
        );
    }
}

#[test]
fn breakdown_sweep_accounts_for_the_agents_time_where_the_tatp_work_is() {
    let data = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        clients: vec![1, 8],
        seconds: Duration::from_millis(300),
        repeat: 2,
        ..tiny(Figure::Breakdown, data.path())
    };
    let r = commit_sweep::run(&cfg, out.path(), |_| {}).unwrap();
    assert!(r.consistent(), "{:?}", r.rows);
    assert_files(
        out.path(),
        &[
            "breakdown.csv",
            "breakdown.json",
            "breakdown-summary.csv",
            "breakdown.png",
            "breakdown.svg",
        ],
    );
    let rows = csv_maps(&out.path().join("breakdown.csv"));
    assert_eq!(rows.len(), 2 * 2);
    assert_accounted(&rows);
    for r in &rows {
        assert_eq!(r["commit"], "elr-pipelined");
        assert_eq!(r["log_buffer"], "mutex");
        // Every UPDATE_LOCATION searches the tree, takes a lock and logs an update and
        // a commit; a pipelined agent never blocks on the flush (no transaction of this
        // type rolls back, and the pool holds every page).
        for a in ["tree_share", "lock_share", "log_insert_share"] {
            assert!(num(r, a) > 0.0, "{a}: {r:?}");
        }
        assert!(num(r, "log_flush_wait_share") < 0.01, "{r:?}");
        assert!(num(r, "log_insert_us_per_txn") > 0.0, "{r:?}");
    }
    // One client keeps at most one agent busy at a time: the agents (one per core) idle
    // for part of it — but not when there is only one agent.
    if sluice_bench::metrics::cores() > 1 {
        let one = rows.iter().find(|r| r["clients"] == "1").unwrap();
        assert!(num(one, "idle_share") > 0.2, "{one:?}");
    }
    let (sh, srows) = csv(&out.path().join("breakdown-summary.csv"));
    assert_eq!(srows.len(), 2, "one row per client count");
    assert!(sh.iter().any(|h| h == "log_insert_wait_share_median"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("breakdown.json")).unwrap())
            .unwrap();
    let t = &json[0]["agent_time"];
    assert!(t["tree"].as_u64().unwrap() > 0, "{t}");
    assert!(t.get("log_insert_wait").is_some(), "{t}");
    let table = commit_sweep::time_table(Figure::Breakdown, &r.rows)
        .unwrap()
        .render();
    assert!(table.contains("log_insert_wait %"), "{table}");
}

#[test]
fn cpu_sweep_shows_lock_waits_go_with_elr_and_flush_waits_with_pipelining() {
    let data = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        clients: vec![6],
        seconds: Duration::from_millis(300),
        ..tiny(Figure::Cpu, data.path())
    };
    let r = commit_sweep::run(&cfg, out.path(), |_| {}).unwrap();
    assert!(r.consistent(), "{:?}", r.rows);
    assert_files(
        out.path(),
        &[
            "cpu.csv",
            "cpu.json",
            "cpu-summary.csv",
            "cpu.png",
            "cpu.svg",
        ],
    );
    let rows = csv_maps(&out.path().join("cpu.csv"));
    assert_eq!(rows.len(), 3 + cfg.scalable_buffer.is_some() as usize);
    assert_accounted(&rows);
    let step = |s: &str| rows.iter().find(|r| r["step"] == s).unwrap();
    let (classic, elr, pipelined) = (step("baseline"), step("+elr"), step("+pipelining"));
    // SF 1 has one branch: under classic every transaction holds its lock through the
    // 1 ms flush, and the other five agents wait for it. ELR lets it go before the
    // flush, so they wait for the flush instead; pipelined agents wait for neither.
    assert!(
        num(classic, "lock_wait_share") > 0.4,
        "classic waits for locks: {classic:?}"
    );
    assert!(
        num(elr, "lock_wait_share") < num(classic, "lock_wait_share") / 2.0,
        "{elr:?}"
    );
    assert!(num(elr, "log_flush_wait_share") > 0.4, "{elr:?}");
    assert!(
        num(pipelined, "log_flush_wait_share") < 0.01,
        "{pipelined:?}"
    );
    assert_eq!(num(classic, "agents"), 6.0);
    for r in &rows {
        let idle = num(r, "cpu_idle");
        assert!((-0.05..=1.0).contains(&idle), "{r:?}");
    }
    let svg = std::fs::read_to_string(out.path().join("cpu.svg")).unwrap();
    for text in ["user CPU", "lock wait", "log flush wait", "+elr"] {
        assert!(svg.contains(text), "{text} not in the figure");
    }
    let sp = r.speedup.unwrap();
    assert!(sp.title.starts_with("tps"), "{}", sp.title);
}
