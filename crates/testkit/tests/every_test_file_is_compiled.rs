//! Each crate's scenario files are modules of one test binary (`tests/scenarios.rs`, with
//! `autotests = false` in the crate's manifest), so cargo no longer finds a new
//! `tests/*.rs` file on its own: one that `scenarios.rs` does not declare and no
//! `[[test]]` target names would never be compiled, and its tests would pass by never
//! running. This checks, for every crate of the workspace, that each `tests/*.rs` file is
//! exactly one of the two, and that every module `scenarios.rs` declares is a file there.

use std::collections::BTreeSet;
use std::path::Path;

fn crates_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `name` from each line `mod name;` of `text`.
fn declared_modules(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// The `path = "tests/…"` of each `[[test]]` target of a manifest.
fn test_target_paths(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_test = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_test = line == "[[test]]";
        } else if in_test {
            if let Some(p) = line.strip_prefix("path = \"tests/") {
                out.insert(p.trim_end_matches('"').to_string());
            }
        }
    }
    out
}

#[test]
fn every_tests_file_of_every_crate_is_a_module_of_its_scenarios_or_a_test_target() {
    let mut problems = Vec::new();
    let mut crates_seen = 0;
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let tests = dir.join("tests");
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if !tests.is_dir() {
            continue;
        }
        crates_seen += 1;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let files: BTreeSet<String> = std::fs::read_dir(&tests)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".rs"))
            .collect();
        let autotests_off = manifest.lines().any(|l| l.trim() == "autotests = false");
        if !autotests_off {
            // cargo builds every tests/*.rs file on its own: nothing can be forgotten.
            continue;
        }
        let targets = test_target_paths(&manifest);
        let modules = match std::fs::read_to_string(tests.join("scenarios.rs")) {
            Ok(text) => declared_modules(&text),
            Err(_) => BTreeSet::new(),
        };
        for f in &files {
            let module = f.trim_end_matches(".rs");
            let as_module = modules.contains(module);
            let as_target = targets.contains(f.as_str());
            match (as_module, as_target) {
                (false, false) => problems.push(format!(
                    "crates/{name}/tests/{f}: neither a module of tests/scenarios.rs nor a [[test]] target: it is never compiled"
                )),
                (true, true) => problems.push(format!(
                    "crates/{name}/tests/{f}: both a module of tests/scenarios.rs and a [[test]] target: it runs twice"
                )),
                _ => {}
            }
        }
        for m in &modules {
            let is_file = files.contains(&format!("{m}.rs"));
            let is_dir = tests.join(m).join("mod.rs").is_file();
            if !is_file && !is_dir {
                problems.push(format!(
                    "crates/{name}/tests/scenarios.rs declares `{m}`, which is no file there"
                ));
            }
        }
    }
    assert!(
        crates_seen >= 6,
        "only {crates_seen} crates with tests found"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
