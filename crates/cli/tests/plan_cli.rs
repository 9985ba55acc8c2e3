//! `sluice plan` on the example profiles (the Tandem paper's Tables 2 and 3), and its
//! refusal of bad profiles: one line on stderr, exit code 2.

use crate::common;

use common::{assert_usage_error, sluice};

fn example(name: &str) -> String {
    format!("{}/../../examples/plan/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn t3_two_managers_json_is_case_3_with_two_balanced_managers() {
    let path = example("tandem-t3-2lm.json");
    let out = sluice(&["plan", "--profile", &path, "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().count(),
        1,
        "--json prints one JSON line only"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["case"], 3);
    assert_eq!(v["strategy"], "vertical");
    assert_eq!(v["manager_count"], 2);
    assert_eq!(v["managers_by_formula"], 2);
    // L = 64 × 434.45 × 68.31 + 68.31 × 50 = 1,902,761 (the paper prints 1,902,774).
    let l = v["log_bytes_per_s"].as_f64().unwrap();
    assert!((l - 1_902_774.0).abs() / 1_902_774.0 < 2e-4, "{l}");
    let managers = v["managers"].as_array().unwrap();
    assert_eq!(managers.len(), 2);
    for m in managers {
        assert_eq!(m["generators"].as_array().unwrap().len(), 32);
        assert!(m["load_bytes_per_s"].as_f64().unwrap() < 972_327.0);
    }
    assert_eq!(managers[0]["commit_coordinator"], true);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0);
}

#[test]
fn text_output_names_the_case_and_each_table_2_profile_lands_in_its_case() {
    for (file, case) in [
        (
            "tandem-t1.json",
            "Case 1 (L < γ·Lmax): no log partitioning necessary",
        ),
        (
            "tandem-t2.json",
            "Case 2 (γ·Lmax ≤ L < Lmax): horizontal log partitioning",
        ),
        (
            "tandem-t3.json",
            "Case 3 (L ≥ Lmax): vertical log partitioning",
        ),
    ] {
        let out = sluice(&["plan", "--profile", &example(file)]);
        assert_eq!(out.status.code(), Some(0), "{file}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(case), "{file}:\n{text}");
        assert!(
            text.contains("Lmax (B/s)") && text.contains("972,327"),
            "{text}"
        );
        assert!(text.contains("Warnings: none"), "{text}");
    }
}

#[test]
fn bad_profiles_print_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let good = std::fs::read_to_string(example("tandem-t3-2lm.json")).unwrap();
    let cases = [
        (write("truncated.json", "{\"gamma\":"), "malformed profile"),
        (write("notjson.json", "gamma = 0.8"), "malformed profile"),
        (
            write(
                "gamma.json",
                &good.replace("\"gamma\": 0.8", "\"gamma\": 1"),
            ),
            "gamma is 1",
        ),
        (
            write("negative.json", &good.replace("68.31", "-68.31")),
            "rate_tps is -68.31",
        ),
        (
            write(
                "unknown.json",
                &good.replace("\"T3\": 434.45", "\"T4\": 434.45"),
            ),
            "\"T4\"",
        ),
        (
            write("nogens.json", &{
                let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
                v["generators"] = serde_json::json!([]);
                v.to_string()
            }),
            "generators is empty",
        ),
    ];
    for (path, says) in &cases {
        assert_usage_error(&["plan", "--profile", path], says);
    }
    let missing = dir.path().join("absent.json");
    assert_usage_error(
        &["plan", "--profile", missing.to_str().unwrap(), "--json"],
        "cannot read profile",
    );
    assert_usage_error(&["plan"], "--profile");
    // --measure: a directory that is not one, or a profile that is bad apart from the
    // fields it measures, is refused at once (nothing is measured).
    let good_path = example("tandem-t3-2lm.json");
    assert_usage_error(
        &[
            "plan",
            "--profile",
            &good_path,
            "--measure",
            "/nonexistent/sluice",
        ],
        "--measure",
    );
    let d = dir.path().to_str().unwrap();
    let negative = &cases.iter().find(|c| c.1.contains("-68.31")).unwrap().0;
    assert_usage_error(
        &["plan", "--profile", negative, "--measure", d],
        "rate_tps is -68.31",
    );
    assert_usage_error(&["measure-lmax", "--dir", "/nonexistent/sluice"], "--dir");
    assert_usage_error(
        &["measure-lmax", "--inserts-per-txn", "10,0"],
        "--inserts-per-txn",
    );
}

#[test]
fn lmax_that_depends_on_bytes_per_transaction_changes_the_case() {
    // The paper's T1 (Table 2): L = 628,703 B/s at 1,889 B/txn. With one Lmax for all
    // (972,327, T3's plateau) L / Lmax = 0.65: case 1 at γ = 0.8. With Lmax following
    // b — B and t0 fitted through Table 2's T1 and T3 plateaus — T1's Lmax is its own
    // plateau, L / Lmax = 1: case 3, the commit coordinator's limit the paper describes.
    let path = example("tandem-t1.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["lmax_bytes_per_s"] = 1_011_890.0.into();
    v["lmax_txn_overhead_s"] = 0.0011375.into();
    let dir = tempfile::tempdir().unwrap();
    let curved = dir.path().join("t1-curve.json");
    std::fs::write(&curved, v.to_string()).unwrap();
    let run = |p: &str| -> serde_json::Value {
        let out = sluice(&["plan", "--profile", p, "--json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let flat = run(&path);
    assert_eq!(flat["case"], 1);
    let curve = run(curved.to_str().unwrap());
    let b = curve["log_bytes_per_txn"].as_f64().unwrap();
    assert!((b - 1888.7).abs() < 1.0, "{b}");
    let lmax = curve["lmax_bytes_per_s"].as_f64().unwrap();
    assert!((lmax / 628_703.0 - 1.0).abs() < 0.01, "{lmax}");
    assert_eq!(curve["lmax_curve"]["txn_overhead_s"], 0.0011375);
    assert!(curve["case"] == 3 || curve["case"] == 2, "{curve}");
}
