//! `sluice compare tpcb --engines sluice,postgres --peer-clients 1,2`, on a real
//! PostgreSQL: each pgbench variant runs at both client counts in every round, every
//! row is consistent and durable, each variant's best is its faster row, and the
//! summary gives sluice's tps ÷ that row's. Needs PostgreSQL's server programs (as
//! `sluice compare` finds them). Without them it says so on stderr and checks nothing —
//! unless `SLUICE_REQUIRE_POSTGRES` is set, as CI sets it after installing PostgreSQL
//! (`.ci/run`): then it fails, saying how to get them. (The README's test command must
//! pass on a fresh machine, which has no PostgreSQL.)

use crate::common;
use common::json_lines;

#[test]
fn compare_picks_each_postgres_variants_best_client_count() {
    if let Err(why) = sluice_bench::compare::postgres::find_bin() {
        if std::env::var_os("SLUICE_REQUIRE_POSTGRES").is_none() {
            eprintln!(
                "SKIPPED: no PostgreSQL here ({why}); set SLUICE_REQUIRE_POSTGRES=1 to make \
                 this a failure"
            );
            return;
        }
        panic!(
            "this test runs a real PostgreSQL and cannot here: {why}. \
             Install it (Debian/Ubuntu: apt-get install postgresql) or point SLUICE_PG_BIN \
             at a directory with initdb, postgres, pgbench and psql."
        );
    }
    let data = tempfile::tempdir_in(".").unwrap();
    let o = common::sluice(&[
        "compare",
        "tpcb",
        "--engines",
        "sluice,postgres",
        "--peer-clients",
        "1,2",
        "--seconds",
        "2",
        "--warmup",
        "0",
        "--scale",
        "1",
        "--clients",
        "4",
        "--dir",
        data.path().to_str().unwrap(),
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let (rows, summary): (Vec<_>, Vec<_>) = json_lines(&stdout)
        .into_iter()
        .partition(|o| o.get("engine").is_some());
    let got: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| {
            let clients = r["clients"].as_u64().expect("every turn has its clients");
            (
                r["engine"].as_str().unwrap(),
                r["variant"].as_str().unwrap(),
                clients,
            )
        })
        .collect();
    let (tpcb_like, one_trip) = ("pgbench tpcb-like", "1 round trip");
    assert_eq!(
        got,
        [
            ("sluice", "elr-pipelined, real disk", 4),
            ("postgres", tpcb_like, 1),
            ("postgres", tpcb_like, 2),
            ("postgres", one_trip, 1),
            ("postgres", one_trip, 2),
        ],
        "{stdout}"
    );
    for r in &rows {
        assert_eq!(r["available"], true, "{r}");
        assert_eq!(r["consistent"], true, "{r}");
        assert_eq!(r["durable"], true, "{r}");
        assert_eq!(r["rounds"], 2, "{r}");
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
    }
    let tps = |r: &serde_json::Value| r["tps"].as_f64().unwrap();
    let sluice_tps = tps(&rows[0]);
    assert_eq!(rows[0]["best"], false);
    assert_eq!(summary.len(), 2, "{stdout}");
    for (s, (variant, pair)) in summary
        .iter()
        .zip([(tpcb_like, &rows[1..3]), (one_trip, &rows[3..5])])
    {
        assert_eq!(s["peer"], "postgres", "{s}");
        assert_eq!(s["variant"], variant, "{s}");
        // The best is the faster of the two rows (the fewer clients on a tie), and the
        // only one marked.
        let best = if tps(&pair[1]) > tps(&pair[0]) { 1 } else { 0 };
        let marked: Vec<bool> = pair.iter().map(|r| r["best"] == true).collect();
        assert_eq!(marked, [best == 0, best == 1], "{stdout}");
        assert_eq!(s["best_clients"], pair[best]["clients"], "{s}");
        assert_eq!(s["best_tps"].as_f64(), Some(tps(&pair[best])), "{s}");
        let ratio = s["sluice_over_best"].as_f64().unwrap();
        let want = sluice_tps / tps(&pair[best]);
        assert!(
            (ratio - want).abs() <= want * 1e-9,
            "{ratio} != {want}: {s}"
        );
        assert_eq!(pair[best]["sluice_over"].as_f64(), Some(ratio), "{s}");
        assert!(s.get("no_best").is_none(), "{s}");
    }
    assert!(
        stdout.contains("postgres (1 round trip): best at ") && stdout.contains("sluice ÷ best = "),
        "{stdout}"
    );
    // The throwaway cluster and every data directory are gone.
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);
}
