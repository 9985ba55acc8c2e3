//! `sluice report` from the outside: bad arguments are one line and exit code 2; a short
//! report of two sections writes a page that embeds their figures and says, for each
//! claim, what was measured and whether it shows the paper's effect.

use crate::common;

use common::sluice;

#[test]
fn bad_report_arguments_exit_2_with_one_line() {
    common::assert_usage_error(&["report"], "--out");
    common::assert_usage_error(&["report", "--out", "x", "--minutes", "0.01"], "--minutes");
    common::assert_usage_error(&["report", "--out", "x", "--minutes", "nan"], "--minutes");
    common::assert_usage_error(&["report", "--out", "x", "--minutes", "601"], "--minutes");
    common::assert_usage_error(&["report", "--out", "x", "--only", "fig99"], "aether-fig5");
    common::assert_usage_error(&["report", "--out", "x", "--dir", "/no/such/dir"], "--dir");
}

#[test]
fn only_help_lists_the_sections() {
    let o = sluice(&["report", "--only", "help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for id in [
        "aether-fig3",
        "aether-fig8",
        "propagation-fig3",
        "tandem-gamma",
    ] {
        assert!(out.lines().any(|l| l == id), "{id} missing from:\n{out}");
    }
}

#[test]
fn a_short_report_writes_one_page_with_every_finding_and_its_figure() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("report");
    let dir = d.path().to_str().unwrap();
    let o = sluice(&[
        "report",
        "--out",
        out.to_str().unwrap(),
        "--minutes",
        "0.2",
        "--only",
        "aether-fig8,tandem-gamma",
        "--dir",
        dir,
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    // The JSON: both sections, each with findings whose verdict is one of the three and
    // whose measurement has numbers; the machine described.
    let json = common::json_lines(&stdout);
    let r = json.last().expect("a JSON object at the end");
    let sections = r["sections"].as_array().unwrap();
    let ids: Vec<&str> = sections.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["aether-fig8", "tandem-gamma"]);
    for s in sections {
        assert!(s["error"].is_null(), "{s}");
        let findings = s["findings"].as_array().unwrap();
        assert!(!findings.is_empty(), "{s}");
        for f in findings {
            let v = f["verdict"].as_str().unwrap();
            assert!(["shown", "partly", "not-shown"].contains(&v), "{v}");
            let m = f["measured"].as_str().unwrap();
            assert!(m.chars().any(|c| c.is_ascii_digit()), "{m}");
        }
        assert!(s["seconds"].as_f64().unwrap() > 0.0);
    }
    assert!(r["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(
        r["machine"]["sync_p50_us"].as_u64().is_some(),
        "{}",
        r["machine"]
    );
    // The page: the summary, each claim and verdict, and Fig. 8's figure inline.
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("id=\"aether-fig8\"") && page.contains("id=\"tandem-gamma\""));
    for s in sections {
        for f in s["findings"].as_array().unwrap() {
            // As HTML writes it.
            let claim = f["claim"]
                .as_str()
                .unwrap()
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            assert!(
                page.contains(&claim),
                "claim missing from the page: {claim}"
            );
        }
    }
    // What the report leaves out is named, with the command that runs it.
    assert!(
        page.contains("Not run in this report")
            && page.contains("propagation-sweep --figure backlog"),
        "the figures not run are not listed"
    );
    assert!(page.contains("<svg"), "no figure inlined");
    assert!(!page.contains("<?xml"), "an SVG's prolog inside the page");
    assert!(!page.contains("<script"), "the page needs no script");
    // Every section's own files, as its sweep writes them.
    assert!(out.join("aether-fig8/threads.svg").is_file());
    assert!(out.join("aether-fig8/threads-summary.csv").is_file());
    assert!(out.join("report.json").is_file());
}
