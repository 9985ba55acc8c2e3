//! Operator tools: `sluice verify`, `sluice log dump`, `sluice stats`, `sluice tables`,
//! `sluice get` and `sluice scan`.
//!
//! Exit codes, the same for every one of them: 0 when the command did what it was asked
//! (and, for `verify`, found nothing wrong); 2 only for bad arguments — a missing
//! directory, a directory that is not a sluice database (no `CONTROL`), an unknown
//! table, a key that is not valid hex or escaped text; 1 when the database is there but
//! the command failed — it cannot be opened (damage, a creation interrupted before its
//! first checkpoint, held by another process, an I/O error), damage found, a key absent.
//! A crashed database is not a failure: the read-only tools recover it in memory,
//! whatever the size of its redo (pages beyond the pool go to a temporary file outside
//! DIR). Each failure is one line on stderr (`verify --json` prints its verdict as JSON
//! on stdout as well).

use crate::Failure;
use clap::{Args, Subcommand};
use serde_json::json;
use sluice::inspect::{dump_log, escape_bytes, unescape_bytes};
use sluice::{Database, Error};
use std::path::{Path, PathBuf};

/// `sluice verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Check without changing anything: open read-only (recovery runs in memory only).
    /// Without it the database is opened read-write, so a crashed directory is recovered
    /// and checkpointed first, as an operator repairing it expects.
    #[arg(long)]
    pub read_only: bool,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `sluice log`.
#[derive(Subcommand, Debug)]
pub enum LogCommand {
    /// One line per log record, oldest first: LSN, frame length, transaction, record
    /// type, pages and a short payload summary. Reads the log read-only.
    Dump(DumpArgs),
}

/// `sluice log dump`.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Start at this LSN (a record's LSN, as an earlier dump printed it); default: the
    /// log's first record.
    #[arg(long)]
    pub from: Option<u64>,
    /// Print at most this many records.
    #[arg(long)]
    pub limit: Option<usize>,
    /// JSON lines: one object per record (`lsn`, `len`, `payload_len`, `txn` (null
    /// when none), `type`, `pages`, `summary`).
    #[arg(long)]
    pub json: bool,
}

/// `sluice stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `sluice tables`.
#[derive(Args, Debug)]
pub struct TablesArgs {
    /// The database directory.
    pub dir: PathBuf,
}

/// `sluice get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// The table.
    pub table: String,
    /// The key as `scan` prints it: its UTF-8 bytes, with `\\`, `\"`, `\n`, `\t`,
    /// `\xNN`… read as escapes (a key with a backslash is written `\\`); hex digits
    /// with `--hex`.
    pub key: String,
    /// KEY is given in hex, and the value is printed in hex.
    #[arg(long)]
    pub hex: bool,
}

/// `sluice scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// The table.
    pub table: String,
    /// Only keys starting with this (escaped as KEY of `get`; hex digits with `--hex`).
    #[arg(long)]
    pub prefix: Option<String>,
    /// Print at most this many entries.
    #[arg(long)]
    pub limit: Option<usize>,
    /// The prefix is given in hex, and keys and values are printed in hex.
    #[arg(long)]
    pub hex: bool,
}

/// DIR must be an existing sluice database directory (one holding `CONTROL`): checked
/// before anything opens it, so that a read-write open never creates a database where
/// an operator mistyped a path.
pub(crate) fn check_dir(dir: &Path) -> Result<(), Failure> {
    if !dir.exists() {
        return Err(Failure::Usage(format!("{} does not exist", dir.display())));
    }
    if !dir.is_dir() {
        return Err(Failure::Usage(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    if !dir.join("CONTROL").exists() {
        return Err(Failure::Usage(format!(
            "{} is not a sluice database: it has no CONTROL file",
            dir.display()
        )));
    }
    Ok(())
}

/// An engine error as a failure: one that says DIR or an argument is not usable is a
/// usage error; anything else (damage, a lock held elsewhere, I/O) a runtime failure.
fn failure(e: Error) -> Failure {
    match e {
        Error::InvalidArgument(_) | Error::NotFound(_) => Failure::Usage(e.to_string()),
        e => Failure::Runtime(e.to_string()),
    }
}

/// An error opening DIR, which `check_dir` found to be a database: never a usage error
/// (the arguments were right), whatever the engine calls it.
pub(crate) fn open_failure(dir: &Path, e: Error) -> Failure {
    Failure::Runtime(format!("cannot open {}: {e}", dir.display()))
}

fn open_read_only(dir: &Path) -> Result<Database, Failure> {
    check_dir(dir)?;
    Database::open_read_only(dir).map_err(|e| open_failure(dir, e))
}

/// `sluice verify DIR`.
pub fn verify(a: VerifyArgs) -> Result<(), Failure> {
    check_dir(&a.dir)?;
    let opened = if a.read_only {
        Database::open_read_only(&a.dir)
    } else {
        Database::open(&a.dir)
    };
    let opened: Result<Database, Error> = match opened {
        Ok(db) => Ok(db),
        Err(e) => {
            if a.json {
                let j = json!({ "ok": false, "dir": a.dir.display().to_string(), "error": e.to_string() });
                println!("{j}");
            }
            return Err(open_failure(&a.dir, e));
        }
    };
    let result = opened.and_then(|db| {
        let rec = db.recovery_report().clone();
        let report = db.verify()?;
        if !db.is_read_only() {
            db.close()?;
        }
        Ok((rec, report))
    });
    let (rec, report) = match result {
        Ok(r) => r,
        Err(e) => {
            if a.json {
                let j = json!({ "ok": false, "dir": a.dir.display().to_string(), "error": e.to_string() });
                println!("{j}");
            }
            return Err(match e {
                Error::InvalidArgument(_) => Failure::Usage(e.to_string()),
                e => Failure::Runtime(format!("verify {}: {e}", a.dir.display())),
            });
        }
    };
    if a.json {
        let tables: Vec<_> = report
            .per_table
            .iter()
            .map(|(n, t)| json!({ "name": n, "entries": t.entries, "pages": t.pages, "depth": t.depth }))
            .collect();
        let j = json!({
            "ok": true,
            "dir": a.dir.display().to_string(),
            "read_only": a.read_only,
            "tables": tables,
            "entries": report.entries,
            "data_pages": report.pages,
            "recovery": {
                "redone": rec.redone,
                "losers": rec.losers,
                "undone": rec.undone,
                "restored_pages": rec.restored_pages,
            },
        });
        println!("{j}");
        return Ok(());
    }
    println!(
        "recovery: {} change(s) redone, {} loser(s) rolled back, {} page(s) restored from images{}",
        rec.redone,
        rec.losers,
        rec.restored_pages,
        if a.read_only { " (in memory only)" } else { "" }
    );
    print_table_rows(&report.per_table);
    println!(
        "ok: {} table(s), {} entries, {} data-file pages with valid checksums",
        report.tables, report.entries, report.pages
    );
    Ok(())
}

fn print_table_rows(rows: &[(String, sluice::TreeReport)]) {
    let w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(5);
    println!(
        "{:<w$}  {:>10}  {:>8}  {:>5}",
        "table", "entries", "pages", "depth"
    );
    for (n, t) in rows {
        println!(
            "{:<w$}  {:>10}  {:>8}  {:>5}",
            n, t.entries, t.pages, t.depth
        );
    }
}

/// `sluice log dump DIR`.
pub fn log(c: LogCommand) -> Result<(), Failure> {
    let LogCommand::Dump(a) = c;
    check_dir(&a.dir)?;
    let dump = dump_log(&a.dir, a.from, a.limit).map_err(failure)?;
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for e in &dump.entries {
        let r = if a.json {
            let j = json!({
                "lsn": e.lsn, "len": e.len, "payload_len": e.payload_len, "txn": e.txn,
                "type": e.kind, "pages": e.pages, "summary": e.summary,
                "commit_time_us": e.commit_time.map(|t| t.as_micros()),
            });
            writeln!(out, "{j}")
        } else {
            let txn = e.txn.map_or("-".to_string(), |t| t.to_string());
            let pages = if e.pages.is_empty() {
                "-".to_string()
            } else {
                e.pages
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            writeln!(
                out,
                "lsn {:<10} len {:<5} txn {:<6} {:<16} pages {:<10} {}",
                e.lsn, e.len, txn, e.kind, pages, e.summary
            )
        };
        if r.is_err() {
            // stdout closed (a pager quit): stop quietly.
            return Ok(());
        }
    }
    if !a.json {
        let _ = writeln!(
            out,
            "-- {} record(s); the log holds [{}, {})",
            dump.entries.len(),
            dump.start,
            dump.end
        );
    }
    Ok(())
}

/// Bytes of the regular files directly in `dir` (0 if it cannot be listed).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// `sluice stats DIR`.
pub fn stats(a: StatsArgs) -> Result<(), Failure> {
    let db = open_read_only(&a.dir)?;
    let mut tables = Vec::new();
    let mut total = 0u64;
    for name in db.table_names().map_err(failure)? {
        let t = db.table(&name).map_err(failure)?;
        let mut tx = db.begin();
        let n = tx.scan_all(&t).try_fold(0u64, |n, r| r.map(|_| n + 1));
        let _ = tx.rollback();
        let n = n.map_err(failure)?;
        total += n;
        tables.push((name, n));
    }
    // Leaf fill: the trees walked (read-only, nothing checkpointed or written).
    let fill: std::collections::HashMap<String, sluice::TreeReport> = db
        .verify()
        .map_err(failure)?
        .per_table
        .into_iter()
        .collect();
    let rec = db.recovery_report();
    let log_start = db.log().start_lsn().0;
    let log_end = db.stats().log_end;
    let log_bytes = dir_bytes(&a.dir.join("log"));
    let data_bytes = std::fs::metadata(a.dir.join("data")).map_or(0, |m| m.len());
    let page_size = db.page_size() as u64;
    let checkpoint = rec.checkpoint.map(|l| l.0);
    if a.json {
        let t: Vec<_> = tables
            .iter()
            .map(|(n, e)| {
                let f = fill.get(n).map(sluice::TreeReport::leaf_fill);
                json!({ "name": n, "entries": e, "leaf_fill": f })
            })
            .collect();
        let j = json!({
            "dir": a.dir.display().to_string(),
            "page_size": page_size,
            "data_bytes": data_bytes,
            "data_pages": data_bytes.div_ceil(page_size),
            "tables": t,
            "entries": total,
            "log_bytes": log_bytes,
            "log_start": log_start,
            "log_end": log_end,
            "checkpoint_lsn": checkpoint,
            "recovery_redone": rec.redone,
            "recovery_losers": rec.losers,
        });
        println!("{j}");
        return Ok(());
    }
    println!("database     {}", a.dir.display());
    println!("page size    {page_size} B");
    println!(
        "data file    {data_bytes} B ({} pages)",
        // A file that ends inside its last page (a torn extension) still holds that
        // page: it reads with zeros past the end, as verify and backups read it.
        data_bytes.div_ceil(page_size)
    );
    println!("log          {log_bytes} B on disk, LSN [{log_start}, {log_end})");
    match checkpoint {
        Some(c) => println!("checkpoint   redo point at LSN {c}"),
        None => println!("checkpoint   none"),
    }
    if rec.redone > 0 || rec.losers > 0 {
        println!(
            "recovery     {} change(s) to redo, {} loser(s) to roll back (not yet applied on disk)",
            rec.redone, rec.losers
        );
    }
    println!("tables       {} ({total} entries)", tables.len());
    for (n, e) in &tables {
        let f = fill.get(n).map_or(0.0, sluice::TreeReport::leaf_fill);
        println!("  {n:<30} {e:>10} entries, leaves {:.1} % full", 100.0 * f);
    }
    Ok(())
}

/// `sluice tables DIR`.
pub fn tables(a: TablesArgs) -> Result<(), Failure> {
    let db = open_read_only(&a.dir)?;
    for name in db.table_names().map_err(failure)? {
        println!("{name}");
    }
    Ok(())
}

fn parse_bytes(s: &str, hex: bool, what: &str) -> Result<Vec<u8>, Failure> {
    if !hex {
        // The form `scan` prints (`sluice::inspect::escape_bytes`), read back.
        return unescape_bytes(s).map_err(|e| Failure::Usage(format!("{what} {e}")));
    }
    let bad = || {
        Failure::Usage(format!(
            "{what} {s:?} is not hex (an even number of 0-9a-f digits)"
        ))
    };
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return Err(bad());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| bad()))
        .collect()
}

fn show(b: &[u8], hex: bool) -> String {
    if hex {
        b.iter().map(|x| format!("{x:02x}")).collect()
    } else {
        escape_bytes(b, usize::MAX)
    }
}

/// `sluice get DIR TABLE KEY`: prints the value; exit 1 if the key is absent.
pub fn get(a: GetArgs) -> Result<(), Failure> {
    let key = parse_bytes(&a.key, a.hex, "KEY")?;
    let db = open_read_only(&a.dir)?;
    let t = db.table(&a.table).map_err(failure)?;
    let mut tx = db.begin();
    let v = tx.get(&t, &key).map_err(failure)?;
    let _ = tx.rollback();
    match v {
        Some(v) => {
            println!("{}", show(&v, a.hex));
            Ok(())
        }
        None => Err(Failure::Runtime(format!(
            "key {:?} not found in table {}",
            show(&key, a.hex),
            a.table
        ))),
    }
}

/// `sluice scan DIR TABLE`: one `key<TAB>value` line per entry, in key order.
pub fn scan(a: ScanArgs) -> Result<(), Failure> {
    let prefix = a
        .prefix
        .as_deref()
        .map(|p| parse_bytes(p, a.hex, "--prefix"))
        .transpose()?;
    let db = open_read_only(&a.dir)?;
    let t = db.table(&a.table).map_err(failure)?;
    let mut tx = db.begin();
    let scan = match &prefix {
        Some(p) => tx.scan_prefix(&t, p),
        None => tx.scan_all(&t),
    };
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for item in scan.take(a.limit.unwrap_or(usize::MAX)) {
        let (k, v) = item.map_err(failure)?;
        if writeln!(out, "{}\t{}", show(&k, a.hex), show(&v, a.hex)).is_err() {
            break;
        }
    }
    drop(out);
    let _ = tx.rollback();
    Ok(())
}
