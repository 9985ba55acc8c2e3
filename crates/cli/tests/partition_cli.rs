//! `sluice bench partition --log-managers … --out DIR` from the outside: Tandem Fig. 6 in
//! rounds — every run in the CSV and the JSON with its round, a summary whose medians lie
//! within their min–max, the figure as PNG and SVG — and every bad argument one line on
//! stderr and exit code 2.

use crate::common;

use common::sluice;

#[test]
fn a_small_figure_writes_every_round_and_a_summary_within_its_spread() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fig");
    let out_arg = out.to_str().unwrap();
    let o = sluice(&[
        "bench",
        "partition",
        "--log-managers",
        "1,2",
        "--inserts-per-txn",
        "2,6",
        "--clients",
        "2",
        "--device-mb-per-s",
        "50",
        "--warmup",
        "0.05",
        "--seconds",
        "0.2",
        "--repeat",
        "2",
        "--out",
        out_arg,
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let stdout = String::from_utf8(o.stdout).unwrap();
    let (points, rounds) = (2 * 2, 2);
    for ext in ["csv", "json", "png", "svg"] {
        assert!(out.join(format!("tandem-fig6.{ext}")).exists(), "{ext}");
    }
    // Every run, each point once per round.
    let csv = std::fs::read_to_string(out.join("tandem-fig6.csv")).unwrap();
    common::assert_every_point_once_per_round(
        &csv,
        &["log_managers", "inserts_per_txn"],
        points,
        rounds,
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tandem-fig6.json")).unwrap())
            .unwrap();
    let json = json.as_array().unwrap();
    assert_eq!(json.len(), points * rounds);
    assert!(json.iter().all(|r| r["repeat"] == 0 || r["repeat"] == 1));
    assert!(json.iter().all(|r| r["log_mb_per_s"].as_f64() > Some(0.0)));
    // --json: one object per run at the end of stdout.
    assert_eq!(
        common::json_lines(&stdout).len(),
        points * rounds,
        "{stdout}"
    );
    // The summary: a line per point, each median within its min and max.
    let summary = std::fs::read_to_string(out.join("tandem-fig6-summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let body: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert_eq!(body.len(), points, "{summary}");
    let medians: Vec<usize> = (0..header.len())
        .filter(|&i| header[i].ends_with("_median"))
        .collect();
    assert!(medians.len() >= 5, "{header:?}");
    for row in &body {
        assert_eq!(
            row[header.iter().position(|h| *h == "repeats").unwrap()],
            2.0
        );
        for &m in &medians {
            let name = header[m].trim_end_matches("_median");
            assert_eq!(header[m + 1], format!("{name}_min"));
            assert_eq!(header[m + 2], format!("{name}_max"));
            assert!(
                row[m + 1] <= row[m] && row[m] <= row[m + 2],
                "{name}: {row:?}"
            );
        }
    }
    let png = std::fs::read(out.join("tandem-fig6.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let svg = std::fs::read_to_string(out.join("tandem-fig6.svg")).unwrap();
    for text in [
        "Tandem Fig. 6",
        "1 log manager",
        "2 log managers",
        "median of 2 interleaved rounds",
        "emulated device of 50 MB/s",
    ] {
        assert!(svg.contains(text), "the figure lacks {text:?}");
    }
    // The table: a line per point with its min–max over the rounds, and the notes.
    assert!(
        stdout.contains("rounds") && stdout.contains('–'),
        "{stdout}"
    );
    assert!(
        stdout.contains("note: L of 2 log managers ÷ L of 1"),
        "{stdout}"
    );
}

#[test]
fn the_table_without_out_runs_one_round_unless_asked() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "partition",
            "--log-managers",
            "2",
            "--inserts-per-txn",
            "3",
            "--clients",
            "2",
            "--device-mb-per-s",
            "50",
            "--warmup",
            "0",
            "--seconds",
            "0.1",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = sluice(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let once = run(&[]);
    assert_eq!(common::json_lines(&once).len(), 1, "{once}");
    assert!(!once.contains("rounds") && !once.contains('–'), "{once}");
    let twice = run(&["--repeat", "2"]);
    let rows = common::json_lines(&twice);
    assert_eq!(rows.len(), 2, "{twice}");
    assert_eq!(
        (rows[0]["repeat"].clone(), rows[1]["repeat"].clone()),
        (0.into(), 1.into())
    );
    assert!(twice.contains("rounds") && twice.contains('–'), "{twice}");
}

#[test]
fn bad_figure_arguments_exit_2_with_one_line() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let file = file.path().to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (&["--out", "/tmp/x"], "--log-managers"),
        (&["--repeat", "2"], "--log-managers"),
        (&["--horizontal", "1", "--out", "/tmp/x"], "--log-managers"),
        (&["--tpcb-overhead", "--repeat", "2"], "--log-managers"),
        (
            &["--log-managers", "1", "--repeat", "0"],
            "--repeat must be between 1 and 100, got 0",
        ),
        (&["--log-managers", "1", "--repeat", "101"], "--repeat"),
        (&["--log-managers", "1,2,1"], "--log-managers lists 1 twice"),
        (&["--log-managers", "1", "--warmup=-1"], "--warmup must be"),
        (
            &["--log-managers", "1", "--out", file],
            "is not a directory",
        ),
    ];
    for (extra, mentions) in cases {
        let mut args = vec!["bench", "partition"];
        args.extend_from_slice(extra);
        common::assert_usage_error(&args, mentions);
    }
}
