//! The propagation experiment end to end, small: a paced run holds its rate and samples
//! once a second, restart finds every commit; the backlog sweep writes its CSV, JSON and
//! four-panel figure with one row per planned run (a run that fails — a strategy not in
//! this build — is a row that says why).

use sluice::Strategy;
use sluice_bench::experiments::propagation::{self, PropagationConfig, Throughput};
use sluice_bench::experiments::propagation_sweep::{self, SweepConfig, SweepFigure};
use std::time::Duration;

#[test]
fn a_paced_run_holds_its_rate_and_samples_every_second() {
    let data = tempfile::tempdir().unwrap();
    let cfg = PropagationConfig {
        seconds: Duration::from_secs(2),
        throughput: Throughput::Low,
        rate: 300.0,
        scale: 1,
        clients: 8,
        dir: Some(data.path().to_path_buf()),
        probe_bytes: 1 << 20,
        ..PropagationConfig::new("page-oldest:50".parse::<Strategy>().unwrap())
    };
    let mut last = 0.0;
    let r = propagation::run(&cfg, |p| {
        assert!(p.done >= last && p.done <= 1.0, "progress moves forward");
        last = p.done;
    })
    .unwrap();
    let s = &r.summary;
    assert!(s.consistent, "{:?}", s.violations);
    assert_eq!(s.strategy, "page-oldest:50");
    assert_eq!(s.target_tps, Some(300.0));
    assert!(
        (200.0..=330.0).contains(&s.tps),
        "paced to 300 tps, ran at {}",
        s.tps
    );
    assert_eq!(r.series.len(), 2, "{:?}", r.series);
    assert!((r.series[1].t_s - 2.0).abs() < 0.5);
    assert!(s.device_seq_write_mb_per_s.unwrap() > 0.0);
    assert!(s.data_pages > 0 && (s.data_pages as usize) < s.pool_pages);
    assert_eq!(s.eviction_writes, 0, "the data fits in the pool");
    assert!(s.restart_ms > 0.0);
    assert!(s.redo_first_third_max <= s.redo_bytes_max);
    // Only the directory the caller gave is left, empty.
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);
}

#[test]
fn the_backlog_sweep_writes_its_files_one_row_per_run() {
    let data = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        seconds: Duration::from_secs(1),
        rate: 200.0,
        scale: 1,
        clients: 4,
        probe_bytes: 1 << 20,
        dir: Some(data.path().to_path_buf()),
        repeat: 1,
        ..SweepConfig::new(SweepFigure::Backlog)
    };
    let r = propagation_sweep::run(&cfg, out.path(), |_| {}).unwrap();
    assert_eq!(r.rows.len(), 8);
    assert!(r.device.is_some());
    for row in &r.rows {
        assert!(
            row.result.is_some() != row.error.is_some(),
            "{}: a result or an error",
            row.label
        );
        if row.strategy.starts_with("page-") {
            let x = row.result.as_ref().expect("the page strategies run");
            assert!(x.summary.consistent, "{:?}", x.summary.violations);
            assert_eq!(x.series.len(), 1);
        }
    }
    for f in ["backlog.csv", "backlog.json", "backlog.png", "backlog.svg"] {
        let len = std::fs::metadata(out.path().join(f)).unwrap().len();
        assert!(len > 0, "{f} is empty");
    }
    let csv = std::fs::read_to_string(out.path().join("backlog.csv")).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "label,round,strategy,throughput,t_s,tps,dirty_pages,redo_bytes,write_mb_per_s"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("backlog.json")).unwrap())
            .unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 8);
    let svg = std::fs::read_to_string(out.path().join("backlog.svg")).unwrap();
    assert!(svg.contains("REDO length") && svg.contains("dirty pages"));
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);
}
