//! The partitioning planner against the Tandem paper's numbers (§5 Table 1, §6 Tables 2
//! and 3), read from the example profiles in `examples/plan/`, and on made-up profiles
//! that exercise the assignment.
//!
//! Numbers worked by hand (Lmax = 972,327 B/s, c = 50 B, 64 generators):
//!
//! | profile | G × R              | L_i (paper)       | R·c     | L = 64·L_i + R·c (paper)    | L / Lmax |
//! |---------|--------------------|-------------------|---------|-----------------------------|----------|
//! | T1      | 28.73 × 332.90     | 9,564.2 (9,563)   | 16,645  | 628,754.9 (628,703)         | 0.6467   |
//! | T2      | 223.04 × 67.08     | 14,961.5 (14,962) | 3,354   | 960,891.5 (960,892)         | 0.9882   |
//! | T3      | 441.25 × 34.37     | 15,165.8 (15,166) | 1,718.5 | 972,327.3 (972,327)         | 1.0000   |
//! | T1 2LM  | 29.36 × 412.34     | 12,106.3 (12,107) | 20,617  | 795,420.4 (795,442)         | 0.8181   |
//! | T2 2LM  | 224.98 × 117.22    | 26,372.2 (26,372) | 5,861   | 1,693,679.0 (1,693,652)     | 1.7419   |
//! | T3 2LM  | 434.45 × 68.31     | 29,677.3 (29,677) | 3,415.5 | 1,902,761.4 (1,902,774)     | 1.9569   |
//!
//! The paper prints G and R rounded to two decimals (its L_i were computed before
//! rounding), so products differ from its rows by up to 0.005 / 28.73 ≈ 1.7e-4
//! relative; the tests allow 2e-4.

use sluice_plan::{plan, Case, Partitioning, Plan, Profile, WarningKind};

const LMAX: f64 = 972_327.0;

fn example(name: &str) -> Profile {
    let path = format!("{}/../../examples/plan/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Profile::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn close(got: f64, paper: f64) -> bool {
    ((got - paper) / paper).abs() < 2e-4
}

/// Checks a 64-generator Tandem profile against its paper row: every L_i and L.
fn assert_paper_row(p: &Plan, li: f64, l: f64) {
    assert_eq!(p.generators.len(), 64);
    for g in &p.generators {
        assert!(
            close(g.log_bytes_per_s, li),
            "{}: L_i {} vs paper {li}",
            g.name,
            g.log_bytes_per_s
        );
    }
    assert!(
        close(p.log_bytes_per_s, l),
        "L {} vs paper {l}",
        p.log_bytes_per_s
    );
    // L is Σ L_i + R·c, exactly as the model defines it.
    let sum: f64 = p.generators.iter().map(|g| g.log_bytes_per_s).sum();
    assert!((p.log_bytes_per_s - (sum + p.commit_log_bytes_per_s)).abs() < 1e-6);
    assert_eq!(p.lmax_bytes_per_s, LMAX);
}

#[test]
fn table2_t1_is_case_1_at_gamma_0_8() {
    // L = 628,755 < γ·Lmax = 0.8 × 972,327 = 777,862: case 1, one manager. Case 1 holds
    // for any γ above L / Lmax = 0.6467; below it T1 would need horizontal partitioning.
    let mut prof = example("tandem-t1.json");
    let p = plan(&prof).unwrap();
    assert_paper_row(&p, 9_563.0, 628_703.0);
    assert!((p.transactions_per_s - 332.90).abs() < 1e-9);
    assert!((p.commit_log_bytes_per_s - 16_645.0).abs() < 1e-6);
    assert_eq!(p.case, Case::NoPartitioning);
    assert_eq!(p.partitioning, Partitioning::None);
    assert_eq!((p.managers_by_formula, p.manager_count), (1, 1));
    assert_eq!(p.managers[0].generators.len(), 64);
    assert!(!p.managers[0].needs_horizontal);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);

    prof.gamma = 0.65; // γ·Lmax = 632,013 > 628,755
    assert_eq!(plan(&prof).unwrap().case, Case::NoPartitioning);
    prof.gamma = 0.64; // γ·Lmax = 622,289 ≤ 628,755 < Lmax
    assert_eq!(plan(&prof).unwrap().case, Case::Horizontal);
}

#[test]
fn table2_t2_is_case_2_horizontal() {
    // L = 960,891 (paper 960,892): 777,862 ≤ L < 972,327 → case 2, horizontal, one
    // manager; only a γ above L / Lmax = 0.9882 would make it case 1.
    let mut prof = example("tandem-t2.json");
    let p = plan(&prof).unwrap();
    assert_paper_row(&p, 14_962.0, 960_892.0);
    assert_eq!(p.case, Case::Horizontal);
    assert_eq!(p.partitioning, Partitioning::Horizontal);
    assert_eq!(p.manager_count, 1);
    assert!(p.managers[0].needs_horizontal);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);

    prof.gamma = 0.98; // γ·Lmax = 952,880 ≤ L
    assert_eq!(plan(&prof).unwrap().case, Case::Horizontal);
    prof.gamma = 0.99; // γ·Lmax = 962,604 > L
    assert_eq!(plan(&prof).unwrap().case, Case::NoPartitioning);
}

#[test]
fn table2_t3_saturates_one_manager_so_is_case_3() {
    // L = 972,327.3 — the plateau that defines Lmax (the paper prints L = 972,327 = Lmax).
    // A manager at Lmax is saturated (Table 4: 3.55 s per transaction), and the boundary
    // rule counts L ≥ Lmax as case 3: the smallest n with L / n < Lmax is 2, the paper's
    // next experiment. The commit coordinator's 1,718.5 B/s on manager 1 makes it take
    // the first generator last: 32/32 either way.
    let p = plan(&example("tandem-t3.json")).unwrap();
    assert_paper_row(&p, 15_166.0, 972_327.0);
    assert_eq!(p.case, Case::Vertical);
    assert_eq!((p.managers_by_formula, p.manager_count), (2, 2));
    assert_eq!(p.managers[0].generators.len(), 32);
    assert_eq!(p.managers[1].generators.len(), 32);
    // The paper's printed L sits exactly on the boundary: still case 3.
    assert_eq!(Case::of(972_327.0, 0.8, LMAX), Case::Vertical);
    assert_eq!(Case::of(972_326.9, 0.8, LMAX), Case::Horizontal);
    assert_eq!(Case::of(0.8 * LMAX, 0.8, LMAX), Case::Horizontal);
}

#[test]
fn table3_two_manager_targets() {
    // T1 with Table 3's rate: L = 795,420 (paper 795,442), L / Lmax = 0.818 ≥ 0.8 →
    // case 2: one manager suffices for the model; the measured gain of a second manager
    // was small because the commit coordinator limited T1 (§6).
    let p = plan(&example("tandem-t1-2lm.json")).unwrap();
    assert_paper_row(&p, 12_107.0, 795_442.0);
    assert_eq!((p.case, p.manager_count), (Case::Horizontal, 1));

    // T2: L = 1,693,679 (paper 1,693,652) → case 3, ⌈1.742⌉ = 2 managers.
    // T3: L = 1,902,761 (paper 1,902,774) → case 3, ⌈1,902,774 / 972,327⌉ = ⌈1.957⌉ = 2.
    for (file, li, l) in [
        ("tandem-t2-2lm.json", 26_372.0, 1_693_652.0),
        ("tandem-t3-2lm.json", 29_677.0, 1_902_774.0),
    ] {
        let p = plan(&example(file)).unwrap();
        assert_paper_row(&p, li, l);
        assert_eq!(p.case, Case::Vertical, "{file}");
        assert_eq!(p.partitioning, Partitioning::Vertical, "{file}");
        assert_eq!((p.managers_by_formula, p.manager_count), (2, 2), "{file}");
        assert!(p.warnings.is_empty(), "{file}: {:?}", p.warnings);
        // Balanced: 32 equal generators each; manager 1 also carries R·c.
        let li = p.generators[0].log_bytes_per_s;
        assert_eq!(p.commit_coordinator_manager, 1);
        assert!(p.managers[0].commit_coordinator && !p.managers[1].commit_coordinator);
        for m in &p.managers {
            assert_eq!(m.generators.len(), 32, "{file}: manager {}", m.manager);
            let commit = if m.commit_coordinator {
                p.commit_log_bytes_per_s
            } else {
                0.0
            };
            assert!((m.load_bytes_per_s - (32.0 * li + commit)).abs() < 1e-6);
            assert!(m.load_bytes_per_s < LMAX);
        }
        let total: f64 = p.managers.iter().map(|m| m.load_bytes_per_s).sum();
        assert!((total - p.log_bytes_per_s).abs() < 1e-6);
        // Every generator is on exactly the manager that lists it.
        for g in &p.generators {
            assert!(p.managers[g.manager - 1].generators.contains(&g.name));
        }
    }

    // T3 2LM: manager 1 = 32 × 29,677.3 + 3,415.5 = 953,088 B/s = 98% of Lmax ≥ γ·Lmax:
    // each manager also wants horizontal partitioning.
    let p = plan(&example("tandem-t3-2lm.json")).unwrap();
    assert!((p.managers[0].load_bytes_per_s - 953_088.4).abs() < 1.0);
    assert!(p.managers.iter().all(|m| m.needs_horizontal));
}

fn profile(lmax: f64, rate: f64, commit_bytes: f64, gens: &[(&str, f64)]) -> Profile {
    let generators: Vec<String> = gens
        .iter()
        .map(|(n, g)| format!(r#"{{"name":"{n}","bytes_per_txn":{{"T":{g}}}}}"#))
        .collect();
    Profile::from_json(&format!(
        r#"{{"commit_record_bytes":{commit_bytes},"lmax_bytes_per_s":{lmax},"gamma":0.8,
            "transactions":[{{"name":"T","rate_tps":{rate}}}],
            "generators":[{}]}}"#,
        generators.join(",")
    ))
    .unwrap()
}

fn names(p: &Plan, manager: usize) -> Vec<&str> {
    p.managers[manager - 1]
        .generators
        .iter()
        .map(String::as_str)
        .collect()
}

#[test]
fn uneven_profile_goes_largest_first_to_the_least_loaded() {
    // R = 10 tps, c = 50 → R·c = 500 on manager 1. L_i (×10 tps): C 300k, A 500k, E 100k,
    // B 400k, D 200k (profile order scrambled). L = 1,500,500 ≥ Lmax = 1,000,000 → case
    // 3, 2 managers. Largest first: A → M2 (0 < 500); B → M1 (500 < 500k) = 400,500;
    // C → M1 (400,500 < 500k) = 700,500; D → M2 (500k < 700,500) = 700k; E → M2
    // (700k < 700,500) = 800k.
    let p = profile(
        1_000_000.0,
        10.0,
        50.0,
        &[
            ("C", 30_000.0),
            ("A", 50_000.0),
            ("E", 10_000.0),
            ("B", 40_000.0),
            ("D", 20_000.0),
        ],
    );
    let p = plan(&p).unwrap();
    assert_eq!(p.case, Case::Vertical);
    assert_eq!(p.manager_count, 2);
    assert_eq!(names(&p, 1), ["B", "C"]);
    assert_eq!(names(&p, 2), ["A", "D", "E"]);
    assert_eq!(p.managers[0].load_bytes_per_s, 700_500.0);
    assert_eq!(p.managers[1].load_bytes_per_s, 800_000.0);
    // The per-generator view agrees, in profile order.
    let by_gen: Vec<(&str, usize)> = p
        .generators
        .iter()
        .map(|g| (g.name.as_str(), g.manager))
        .collect();
    assert_eq!(by_gen, [("C", 1), ("A", 2), ("E", 2), ("B", 1), ("D", 2)]);
    assert!(p.warnings.is_empty());
}

#[test]
fn managers_are_added_until_none_is_over_lmax() {
    // Seven generators of 400 B/s, c = 0, Lmax = 1,000: L = 2,800 → ⌈2.8⌉ = 3 managers,
    // but 3 does not divide 7: largest first gives 3/2/2 and 3 × 400 = 1,200 ≥ Lmax. The
    // planner adds a fourth (footnote 9): 2/2/2/1, at most 800. (It gets there at once:
    // since three of them reach Lmax, at most two share a manager, so ⌈7 / 2⌉ = 4.)
    let gens: Vec<(String, f64)> = (1..=7).map(|i| (format!("G{i}"), 40.0)).collect();
    let gens: Vec<(&str, f64)> = gens.iter().map(|(n, g)| (n.as_str(), *g)).collect();
    let p = plan(&profile(1_000.0, 10.0, 0.0, &gens)).unwrap();
    assert_eq!(p.managers_by_formula, 3);
    assert_eq!(p.manager_count, 4);
    let sizes: Vec<usize> = p.managers.iter().map(|m| m.generators.len()).collect();
    assert_eq!(sizes, [2, 2, 2, 1]);
    assert!(p.managers.iter().all(|m| m.load_bytes_per_s < 1_000.0));
    assert_eq!(
        p.warnings.iter().map(|w| &w.kind).collect::<Vec<_>>(),
        [&WarningKind::ManagersAdded {
            by_formula: 3,
            planned: 4
        }]
    );
}

#[test]
fn a_generator_above_lmax_is_warned_and_left_alone() {
    // Big = 1,500 B/s alone exceeds Lmax = 1,000; three of 100; R·c = 10 × 5 = 50 on M1.
    // L = 1,850 → case 3, 2 managers. Big → M2 (0 < 50), the small ones → M1 (450).
    // M2 stays over Lmax with one generator: adding managers cannot help, so the planner
    // stops at 2 and says to reorganize the partitions.
    let p = plan(&profile(
        1_000.0,
        10.0,
        5.0,
        &[("s1", 10.0), ("Big", 150.0), ("s2", 10.0), ("s3", 10.0)],
    ))
    .unwrap();
    assert_eq!(p.case, Case::Vertical);
    assert_eq!(p.manager_count, 2);
    assert_eq!(names(&p, 2), ["Big"]);
    assert_eq!(names(&p, 1), ["s1", "s2", "s3"]);
    let kinds: Vec<&WarningKind> = p.warnings.iter().map(|w| &w.kind).collect();
    assert_eq!(
        kinds,
        [
            &WarningKind::GeneratorAboveLmax {
                generator: "Big".into(),
                log_bytes_per_s: 1_500.0
            },
            &WarningKind::ManagerAboveLmax {
                manager: 2,
                load_bytes_per_s: 1_500.0
            }
        ]
    );
    assert!(p.warnings[0].message.contains("reorganize"));
    assert!(p.warnings.iter().all(|w| !w.message.contains('\n')));
}

#[test]
fn the_plan_serializes_case_and_strategy_plainly() {
    let p = plan(&example("tandem-t3-2lm.json")).unwrap();
    let v: serde_json::Value = serde_json::to_value(&p).unwrap();
    assert_eq!(v["case"], 3);
    assert_eq!(v["strategy"], "vertical");
    assert_eq!(v["manager_count"], 2);
    assert_eq!(v["managers"][0]["generators"].as_array().unwrap().len(), 32);
    let p = plan(&profile(1_000.0, 10.0, 5.0, &[("Big", 150.0)])).unwrap();
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(v["warnings"][0]["kind"], "generator_above_lmax");
    assert_eq!(v["warnings"][0]["generator"], "Big");
    assert!(v["warnings"][0]["message"].is_string());
}

#[test]
fn many_generators_that_only_pair_are_planned_quickly() {
    // 60,000 generators of 340 B/s, Lmax = 1,000, c = 0: L = 20,400,000 → ⌈20.4M / 1,000⌉
    // = 20,401 managers (an exact multiple: one more), but three generators reach 1,020
    // ≥ Lmax, so only pairs fit: 30,000 managers of 680 B/s. Must not take a walk of
    // ~10,000 reassignments.
    let text = r#"{"commit_record_bytes":0,"lmax_bytes_per_s":1000,"gamma":0.5,
        "transactions":[{"name":"T","rate_tps":1}],
        "generators":[{"name":"G","count":60000,"bytes_per_txn":{"T":340}}]}"#;
    let start = std::time::Instant::now();
    let p = plan(&Profile::from_json(text).unwrap()).unwrap();
    assert_eq!(p.managers_by_formula, 20_401);
    assert_eq!(p.manager_count, 30_000);
    assert!(p.managers.iter().all(|m| m.generators.len() == 2));
    assert!(p.managers.iter().all(|m| m.load_bytes_per_s < 1_000.0));
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn largest_first_that_still_overloads_gets_another_manager() {
    // Lmax = 1,000, c = 0; L_i 900, 800, 600, 400, 400, 400: L = 3,500 → ⌈3.5⌉ = 4, and
    // no packing argument asks for more (three items ≥ 500 need three managers). Largest
    // first on 4: 900 → M1, 800 → M2, 600 → M3, 400 → M4, 400 → M4 (400 < 600) = 800,
    // 400 → M3 (600 is least) = 1,000 — at Lmax, saturated. With 5: 900, 800, 600, 400 +
    // 400, 400: all below Lmax.
    let p = plan(&profile(
        1_000.0,
        10.0,
        0.0,
        &[
            ("a", 90.0),
            ("b", 80.0),
            ("c", 60.0),
            ("d", 40.0),
            ("e", 40.0),
            ("f", 40.0),
        ],
    ))
    .unwrap();
    assert_eq!((p.managers_by_formula, p.manager_count), (4, 5));
    let loads: Vec<f64> = p.managers.iter().map(|m| m.load_bytes_per_s).collect();
    assert_eq!(loads, [900.0, 800.0, 600.0, 800.0, 400.0]);
    assert_eq!(names(&p, 4), ["d", "f"]);
    assert_eq!(
        p.warnings.iter().map(|w| &w.kind).collect::<Vec<_>>(),
        [&WarningKind::ManagersAdded {
            by_formula: 4,
            planned: 5
        }]
    );
}
