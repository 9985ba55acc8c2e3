//! Outside review of `sluice backup` / `sluice restore` (issue 26): a backup label whose
//! checksum is right but whose end LSN is absurd (hand-edited, or written by a buggy
//! tool) must be named as damage — exit 1, one line on stderr — never abort the process.

use crate::common;
use common::run;
use std::path::Path;

/// CRC32C, as the label's last line holds it.
fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Rewrites `key`'s value in the label of the backup in `dir`, with a checksum that matches.
fn edit_label(dir: &Path, key: &str, value: &str) {
    let text = std::fs::read_to_string(dir.join("BACKUP")).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("crc32c "))
        .map(|l| {
            if l.starts_with(&format!("{key} ")) {
                format!("{key} {value}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let original = text.rsplit_once("crc32c ").unwrap();
    assert_eq!(
        format!("{:08x}", crc32c(original.0.as_bytes())),
        original.1.trim_end(),
        "the label's checksum is CRC32C of the lines before it"
    );
    std::fs::write(
        dir.join("BACKUP"),
        format!("{body}crc32c {:08x}\n", crc32c(body.as_bytes())),
    )
    .unwrap();
}

/// Postmortem (outside review, issue 26): a label whose end LSN lay far past what its
/// `log/` holds made the restore's source collect every segment start from the log's
/// start to that end before comparing it with the files — 2^46 entries here — so
/// `sluice backup list`, `backup verify` and `restore` died on a failed allocation
/// (SIGABRT) instead of naming the damage. Now the files are compared with the range
/// without listing it.
#[test]
fn a_label_with_an_absurd_end_lsn_is_damage_not_an_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let dir = tmp.path().join("db");
    let db = common::open_in_process(&dir);
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
    let base = tmp.path().join("base");
    assert_eq!(run(&["backup", &s(&dir), &s(&base)]).0, Some(0));
    edit_label(&base, "end_lsn", &(1u64 << 62).to_string());

    for args in [
        vec!["backup".to_string(), "list".into(), s(&base)],
        vec![
            "restore".to_string(),
            "--from".into(),
            s(&base),
            "--to-end".into(),
            s(&tmp.path().join("r")),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _out, err) = run(&args);
        assert!(
            code == Some(1) && err.trim().lines().count() == 1,
            "sluice {}: exit {code:?}, stderr: {err}",
            args.join(" ")
        );
    }
}
