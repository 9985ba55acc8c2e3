use super::format::{Footer, FOOTER_LEN, HEADER_LEN};
use super::*;
use crate::{Database, Options, Table};
use sluice_storage::SimStorage;

const ALL: (PageId, PageId) = (PageId(0), PageId(u64::MAX));
const EVER: (Lsn, Lsn) = (Lsn(0), Lsn(u64::MAX));

fn options() -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0; // only the checkpoints a test asks for
    o
}

/// A database on simulated storage whose log holds `n` committed puts (splits, so
/// multi-page images) and a rolled-back transaction every 10 (compensation records).
fn database(seed: u64, n: usize) -> (SimStorage, Database, Table) {
    let sim = SimStorage::new(seed);
    let db = Database::open_on(Arc::new(sim.pinned()), "/db", options()).unwrap();
    let t = db.create_table("t").unwrap();
    write(&db, &t, 0..n);
    (sim, db, t)
}

fn write(db: &Database, t: &Table, keys: std::ops::Range<usize>) {
    for i in keys {
        let mut tx = db.begin();
        // Scattered keys, so changes are spread over many leaves.
        let k = format!("key{:05}", (i * 7919) % 100_000);
        tx.put(t, k.as_bytes(), [i as u8; 40]).unwrap();
        if i % 10 == 9 {
            tx.put(t, b"doomed", b"never").unwrap();
            tx.rollback().unwrap();
        } else {
            tx.commit().unwrap();
        }
    }
}

fn log(db: &Database) -> &LogSink {
    &db.inner.store.log
}

/// A run store in `/runs` on its own simulated disk (so a crash armed on it hits only
/// the store's operations).
fn store_on(sim: &SimStorage) -> RunStore {
    RunStore::open(Arc::new(sim.pinned()), Path::new("/runs")).unwrap()
}

/// What the runs must hold, computed from the log directly: each page change with
/// LSN in `[from, to)` of pages `first..=last`, by (page, LSN).
fn expected(log: &LogSink, pages: (PageId, PageId), from: Lsn, to: Lsn) -> Vec<RunEntry> {
    let mut out = Vec::new();
    for rec in log.read_from(from.max(log.start_lsn())).unwrap() {
        let rec = rec.unwrap();
        if rec.lsn >= to {
            break;
        }
        let mut add = |page: PageId, record: Vec<u8>| {
            if (pages.0..=pages.1).contains(&page) {
                out.push(RunEntry {
                    page,
                    lsn: rec.lsn,
                    end: rec.end,
                    record,
                });
            }
        };
        match Record::decode(&rec.payload).unwrap() {
            Record::Update { page, .. } | Record::Clr { page, .. } => {
                add(page, rec.payload.clone())
            }
            Record::Images { pages } => {
                for (p, image) in pages {
                    add(
                        p,
                        Record::Images {
                            pages: vec![(p, image)],
                        }
                        .encode(),
                    );
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|e| (e.page, e.lsn));
    out
}

fn scan_all(a: &RunStore, pages: (PageId, PageId), from: Lsn, to: Lsn) -> Vec<RunEntry> {
    a.scan(pages.0, pages.1, from, to)
        .unwrap()
        .collect::<std::result::Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("scan failed: {e}"))
}

fn damage_of(a: &RunStore, pages: (PageId, PageId), from: Lsn, to: Lsn) -> Damage {
    for r in a.scan(pages.0, pages.1, from, to).unwrap() {
        match r {
            Ok(_) => {}
            Err(ScanError::Damaged(d)) => return d,
            Err(e) => panic!("not damage: {e}"),
        }
    }
    panic!("the scan found no damage")
}

fn read_file(st: &SimStorage, path: &Path) -> Vec<u8> {
    let f = st.open(path, OpenOptions::EXISTING).unwrap();
    let mut b = vec![0u8; f.len().unwrap() as usize];
    f.read_exact_at(&mut b, 0).unwrap();
    b
}

fn flip(st: &SimStorage, path: &Path, at: u64) {
    let f = st.open(path, OpenOptions::EXISTING).unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_at(&[b[0] ^ 0x10], at).unwrap();
    f.sync_data().unwrap();
}

fn footer_of(st: &SimStorage, path: &Path) -> (Footer, u64) {
    let b = read_file(st, path);
    let at = b.len() - FOOTER_LEN as usize;
    (Footer::decode(&b[at..]).unwrap(), at as u64)
}

#[test]
fn round_trip_gives_back_every_page_record_of_the_log() {
    let (_sim, db, _t) = database(1, 300);
    let runs_sim = SimStorage::new(100);
    let a = store_on(&runs_sim);
    assert_eq!(a.sorted_lsn(), Lsn(0));
    let durable = log(&db).durable_lsn();
    a.catch_up(log(&db), durable).unwrap();
    assert_eq!(a.sorted_lsn(), durable);
    assert_eq!(a.runs(), vec![(log(&db).start_lsn(), durable)]);

    let want = expected(log(&db), ALL, Lsn(0), durable);
    let got = scan_all(&a, ALL, EVER.0, EVER.1);
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    // The log had every kind of page change, and images of several pages were split.
    let kinds: Vec<Record> = got
        .iter()
        .map(|e| Record::decode(&e.record).unwrap())
        .collect();
    assert!(kinds.iter().any(|r| matches!(r, Record::Update { .. })));
    assert!(kinds.iter().any(|r| matches!(r, Record::Clr { .. })));
    assert!(kinds
        .iter()
        .all(|r| !matches!(r, Record::Images { pages } if pages.len() != 1)));
    let images = kinds
        .iter()
        .filter(|r| matches!(r, Record::Images { .. }))
        .count();
    assert!(images > 10, "only {images} images");
    assert!(got
        .windows(2)
        .all(|w| (w[0].page, w[0].lsn) <= (w[1].page, w[1].lsn)));

    // Bytes written are the run file's, and a reopened store finds the run.
    let path = a.run_path(log(&db).start_lsn(), durable);
    assert_eq!(a.bytes_written(), read_file(&runs_sim, &path).len() as u64);
    drop(a);
    let a = store_on(&runs_sim);
    assert_eq!(a.sorted_lsn(), durable);
    assert_eq!(a.bytes_written(), 0);
    assert_eq!(scan_all(&a, ALL, EVER.0, EVER.1), want);
    // Nothing more to sort: no new run.
    a.catch_up(log(&db), durable).unwrap();
    assert_eq!(a.runs().len(), 1);
}

#[test]
fn a_range_without_page_records_still_writes_a_run() {
    let (_sim, db, _t) = database(2, 20);
    let a = store_on(&SimStorage::new(101));
    // A commit record: a range of the log that changes no page.
    let commit = log(&db)
        .read_from(log(&db).start_lsn())
        .unwrap()
        .map(|r| r.unwrap())
        .find(|r| matches!(Record::decode(&r.payload), Ok(Record::Commit { .. })))
        .unwrap();
    a.catch_up(log(&db), commit.lsn).unwrap();
    let before = a.runs().len();
    a.catch_up(log(&db), commit.end).unwrap();
    assert_eq!(a.sorted_lsn(), commit.end);
    assert_eq!(a.runs().len(), before + 1);
    assert_eq!(a.runs().last(), Some(&(commit.lsn, commit.end)));
    assert!(scan_all(&a, ALL, commit.lsn, commit.end).is_empty());
    let durable = log(&db).durable_lsn();
    a.catch_up(log(&db), durable).unwrap();
    assert_eq!(
        scan_all(&a, ALL, EVER.0, EVER.1),
        expected(log(&db), ALL, Lsn(0), durable)
    );
}

#[test]
fn runs_merge_in_page_then_lsn_order() {
    let (_sim, db, t) = database(3, 150);
    let a = store_on(&SimStorage::new(102));
    a.set_limits(6 << 10, 700); // many runs of many blocks
    a.catch_up(log(&db), log(&db).durable_lsn()).unwrap();
    write(&db, &t, 150..250);
    a.catch_up(log(&db), log(&db).durable_lsn()).unwrap();
    write(&db, &t, 250..300);
    let durable = log(&db).durable_lsn();
    a.catch_up(log(&db), durable).unwrap();

    let runs = a.runs();
    assert!(runs.len() >= 5, "only {} runs", runs.len());
    assert_eq!(runs.first().unwrap().0, log(&db).start_lsn());
    assert_eq!(runs.last().unwrap().1, durable);
    for w in runs.windows(2) {
        assert_eq!(w[0].1, w[1].0, "runs are contiguous and do not overlap");
    }
    let want = expected(log(&db), ALL, Lsn(0), durable);
    let got = scan_all(&a, ALL, EVER.0, EVER.1);
    assert_eq!(got, want);
    // Pages really are spread over several runs (else there was nothing to merge).
    let busy = got[0].page;
    let runs_of_busy = runs
        .iter()
        .filter(|r| {
            got.iter()
                .any(|e| e.page == busy && (r.0..r.1).contains(&e.lsn))
        })
        .count();
    assert!(runs_of_busy >= 2, "page {busy} is in {runs_of_busy} runs");
}

#[test]
fn scans_filter_pages_and_lsns() {
    let (_sim, db, _t) = database(4, 300);
    let a = store_on(&SimStorage::new(103));
    a.set_limits(8 << 10, 500);
    let durable = log(&db).durable_lsn();
    a.catch_up(log(&db), durable).unwrap();
    let all = expected(log(&db), ALL, Lsn(0), durable);
    let max_page = all.iter().map(|e| e.page.0).max().unwrap();
    assert!(max_page >= 8, "only {max_page} pages");
    // LSN bounds inside runs, on record starts and between them.
    let lsns: Vec<Lsn> = all.iter().map(|e| e.lsn).collect();
    let mut bounds = vec![
        (Lsn(0), durable),
        (lsns[lsns.len() / 3], durable),
        (Lsn(0), lsns[lsns.len() / 2]),
        (Lsn(lsns[10].0 + 8), Lsn(lsns[lsns.len() - 10].0 + 8)),
        (durable, Lsn(u64::MAX)),
    ];
    bounds.sort();
    for &(from, to) in &bounds {
        for pages in [
            ALL,
            (PageId(0), PageId(0)),
            (PageId(2), PageId(max_page / 2)),
            (PageId(max_page / 2), PageId(max_page)),
            (PageId(max_page), PageId(max_page + 100)),
            (PageId(max_page + 1), PageId(u64::MAX)),
        ] {
            let want: Vec<RunEntry> = all
                .iter()
                .filter(|e| (pages.0..=pages.1).contains(&e.page) && (from..to).contains(&e.lsn))
                .cloned()
                .collect();
            let got = scan_all(&a, pages, from, to);
            assert_eq!(got, want, "pages {pages:?}, LSNs [{from}, {to})");
        }
    }
    assert!(scan_all(&a, (PageId(5), PageId(4)), EVER.0, EVER.1).is_empty());
}

#[test]
fn catch_up_refuses_a_limit_past_the_durable_log_or_inside_a_record() {
    let (_sim, db, _t) = database(5, 30);
    let a = store_on(&SimStorage::new(104));
    let durable = log(&db).durable_lsn();
    let e = a.catch_up(log(&db), durable.add(8)).unwrap_err();
    assert!(e.to_string().contains("durable only up to"), "{e}");
    let inside = expected(log(&db), ALL, Lsn(0), durable)[5].lsn.add(8);
    let e = a.catch_up(log(&db), inside).unwrap_err();
    assert!(e.to_string().contains("ends at"), "{e}");
    assert_eq!(a.sorted_lsn(), Lsn(0));
    assert!(a.runs().is_empty());
    a.catch_up(log(&db), durable).unwrap();
    assert_eq!(a.sorted_lsn(), durable);
}

#[test]
fn concurrent_catch_ups_never_overlap() {
    let (_sim, db, _t) = database(6, 200);
    let a = store_on(&SimStorage::new(105));
    let durable = log(&db).durable_lsn();
    let all = expected(log(&db), ALL, Lsn(0), durable);
    let middles: Vec<Lsn> = (1..8).map(|i| all[all.len() * i / 8].lsn).collect();
    std::thread::scope(|s| {
        for m in &middles {
            let (a, db) = (&a, &db);
            s.spawn(move || a.catch_up(log(db), *m).unwrap());
        }
        s.spawn(|| a.catch_up(log(&db), durable).unwrap());
    });
    let runs = a.runs();
    for w in runs.windows(2) {
        assert_eq!(w[0].1, w[1].0);
    }
    assert_eq!(a.sorted_lsn(), durable);
    assert_eq!(scan_all(&a, ALL, EVER.0, EVER.1), all);
}

/// A damaged structure is reported with its run, its offset and the run's LSN range;
/// the store still opens; the runs around it still read.
#[test]
fn flipped_bytes_are_reported_as_damage_where_they_are() {
    let (_sim, db, t) = database(7, 200);
    let st = SimStorage::new(106);
    let a = store_on(&st);
    a.set_limits(usize::MAX, 600);
    let d1 = log(&db).durable_lsn();
    a.catch_up(log(&db), d1).unwrap();
    write(&db, &t, 200..260);
    let d2 = log(&db).durable_lsn();
    a.catch_up(log(&db), d2).unwrap();
    let start = log(&db).start_lsn();
    assert_eq!(a.runs(), vec![(start, d1), (d1, d2)]);
    let path = a.run_path(start, d1);
    let pristine = read_file(&st, &path);
    let restore = || {
        let f = st.open(&path, OpenOptions::EXISTING).unwrap();
        f.write_at(&pristine, 0).unwrap();
        f.sync_data().unwrap();
    };
    let (footer, footer_at) = footer_of(&st, &path);
    assert!(footer.blocks >= 4, "{} blocks", footer.blocks);

    let check = |d: &Damage, offset: u64, what: &str| {
        assert_eq!(d.run, path);
        assert_eq!((d.from, d.to), (start, d1));
        assert_eq!(d.offset, offset, "{d}");
        assert!(d.what.contains(what), "{d}");
        assert_eq!(
            d.to_string(),
            format!(
                "sorted run {} is damaged at offset {offset}: {}",
                path.display(),
                d.what
            )
        );
    };

    // A block: the first one.
    flip(&st, &path, HEADER_LEN + 20);
    check(
        &damage_of(&a, ALL, EVER.0, EVER.1),
        HEADER_LEN,
        "block 0: checksum",
    );
    // The scan seeks past it: pages after its blocks read fine, and so does the other run.
    let last_page = expected(log(&db), ALL, Lsn(0), d1).last().unwrap().page;
    let tail = (last_page, PageId(u64::MAX));
    assert_eq!(
        scan_all(&a, tail, EVER.0, EVER.1),
        expected(log(&db), tail, Lsn(0), d2)
    );
    assert_eq!(scan_all(&a, ALL, d1, d2), expected(log(&db), ALL, d1, d2));
    // The store opens with a damaged run; the damage shows when it is read.
    let reopened = store_on(&st);
    assert_eq!(reopened.sorted_lsn(), d2);
    check(
        &damage_of(&reopened, ALL, EVER.0, EVER.1),
        HEADER_LEN,
        "checksum",
    );
    restore();

    // The index.
    flip(&st, &path, footer.index_offset + 9);
    check(
        &damage_of(&a, ALL, EVER.0, EVER.1),
        footer.index_offset,
        "index checksum",
    );
    restore();

    // The header.
    flip(&st, &path, 20);
    check(&damage_of(&a, ALL, EVER.0, EVER.1), 0, "header checksum");
    restore();

    // The footer.
    flip(&st, &path, footer_at + 3);
    check(
        &damage_of(&a, ALL, EVER.0, EVER.1),
        footer_at,
        "footer checksum",
    );
    restore();

    // A truncated run.
    let f = st.open(&path, OpenOptions::EXISTING).unwrap();
    f.set_len(pristine.len() as u64 - 10).unwrap();
    let d = damage_of(&a, ALL, EVER.0, EVER.1);
    assert_eq!(d.run, path);
    drop(f);
    restore();

    assert_eq!(
        scan_all(&a, ALL, EVER.0, EVER.1),
        expected(log(&db), ALL, Lsn(0), d2)
    );
}

#[test]
fn regenerate_replaces_a_damaged_run_from_the_log() {
    let (_sim, db, t) = database(8, 150);
    let st = SimStorage::new(107);
    let a = store_on(&st);
    a.set_limits(10 << 10, 1000);
    let durable = {
        a.catch_up(log(&db), log(&db).durable_lsn()).unwrap();
        write(&db, &t, 150..200);
        let d = log(&db).durable_lsn();
        a.catch_up(log(&db), d).unwrap();
        d
    };
    let runs = a.runs();
    assert!(runs.len() >= 3);
    let (from, to) = runs[1];
    let path = a.run_path(from, to);
    let (footer, _) = footer_of(&st, &path);
    flip(&st, &path, footer.index_offset - 30); // the last block
    let d = damage_of(&a, ALL, EVER.0, EVER.1);
    assert_eq!((d.run.clone(), d.from, d.to), (path.clone(), from, to));

    let written = a.bytes_written();
    a.regenerate(log(&db), d.from, d.to).unwrap();
    assert!(a.bytes_written() > written);
    assert_eq!(a.runs(), runs, "the same ranges");
    assert_eq!(
        scan_all(&a, ALL, EVER.0, EVER.1),
        expected(log(&db), ALL, Lsn(0), durable)
    );
    let kept = PathBuf::from(format!("{}.damaged", path.display()));
    assert!(st.exists(&kept).unwrap(), "the damaged run is kept");
    // A reopened store ignores it.
    let a = store_on(&st);
    assert_eq!(a.runs(), runs);
    assert_eq!(
        scan_all(&a, ALL, EVER.0, EVER.1),
        expected(log(&db), ALL, Lsn(0), durable)
    );
}

#[test]
fn regenerate_refuses_a_range_the_log_no_longer_holds() {
    let (_sim, db, t) = database(9, 150);
    let a = store_on(&SimStorage::new(108));
    let d1 = log(&db).durable_lsn();
    a.catch_up(log(&db), d1).unwrap();
    let first = a.runs()[0];
    // Enough log for the checkpoints to truncate whole segments.
    write(&db, &t, 150..600);
    db.checkpoint().unwrap();
    write(&db, &t, 600..650);
    db.checkpoint().unwrap();
    let start = log(&db).start_lsn();
    assert!(start > first.0, "the log was not truncated");
    let e = a.regenerate(log(&db), first.0, first.1).unwrap_err();
    assert!(matches!(e, Error::Corruption(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("[{}, {})", first.0, first.1)) && msg.contains("no longer holds"),
        "{msg}"
    );
    assert_eq!(a.runs(), vec![first], "nothing replaced");

    // A store that starts after the truncation starts at the log's start: a gap
    // only where the log is gone.
    let b = RunStore::open(Arc::new(SimStorage::new(109)), Path::new("/runs")).unwrap();
    let durable = log(&db).durable_lsn();
    b.catch_up(log(&db), durable).unwrap();
    assert_eq!(b.runs(), vec![(start, durable)]);
    // And `a` continues from where it ended, the gap left where the log was cut.
    a.catch_up(log(&db), durable).unwrap();
    assert_eq!(a.runs(), vec![first, (start.max(d1), durable)]);
    assert_eq!(
        scan_all(&a, ALL, start, durable),
        expected(log(&db), ALL, start, durable)
    );
}

#[test]
fn remove_below_removes_whole_runs_only() {
    let (_sim, db, _t) = database(10, 150);
    let st = SimStorage::new(110);
    let a = store_on(&st);
    a.set_limits(8 << 10, 1000);
    let durable = log(&db).durable_lsn();
    a.catch_up(log(&db), durable).unwrap();
    let runs = a.runs();
    assert!(runs.len() >= 3);
    // Inside the second run: only the first goes.
    a.remove_below(Lsn(runs[1].0 .0 + 8)).unwrap();
    assert_eq!(a.runs(), runs[1..].to_vec());
    a.remove_below(runs[2].1).unwrap();
    assert_eq!(a.runs(), runs[3..].to_vec());
    assert_eq!(a.sorted_lsn(), durable);
    let names = st.list(Path::new("/runs")).unwrap();
    assert_eq!(names.len(), runs.len() - 3, "{names:?}");
    assert_eq!(store_on(&st).runs(), runs[3..].to_vec());

    // A scan that has begun keeps reading the runs removed under it.
    let from = runs[3].0;
    let mut merge = a.scan(ALL.0, ALL.1, EVER.0, EVER.1).unwrap();
    let mut got = vec![merge.next().unwrap().unwrap()];
    a.remove_below(durable).unwrap();
    assert!(a.runs().is_empty());
    assert!(st.list(Path::new("/runs")).unwrap().is_empty());
    got.extend(merge.map(|r| r.unwrap()));
    assert_eq!(got, expected(log(&db), ALL, from, durable));
}

/// A power loss at each operation of writing a run: the store reopens, shows no
/// partial run (only no run, or the whole run that reads back), and catches up again.
#[test]
fn a_crash_while_writing_a_run_leaves_no_partial_run() {
    let (_sim, db, _t) = database(11, 120);
    let durable = log(&db).durable_lsn();
    let want = expected(log(&db), ALL, Lsn(0), durable);
    let mut crashed = 0;
    for n in 1.. {
        let st = SimStorage::new(200 + n);
        let a = store_on(&st);
        a.set_limits(usize::MAX, 4000);
        st.crash_at_op(n);
        let r = a.catch_up(log(&db), durable);
        if st.crashed_count() == 0 {
            r.unwrap();
            st.disarm_crash();
            break;
        }
        crashed += 1;
        assert!(r.is_err(), "a crash at op {n} went unnoticed");
        drop(a);
        let a = store_on(&st);
        let names = st.list(Path::new("/runs")).unwrap();
        assert!(
            names.iter().all(|n| RunMeta::parse(n).is_some()),
            "crash at op {n}: {names:?}"
        );
        match a.runs().as_slice() {
            [] => assert_eq!(a.sorted_lsn(), Lsn(0)),
            [(from, to)] => {
                assert_eq!((*from, *to), (log(&db).start_lsn(), durable));
                assert_eq!(scan_all(&a, ALL, EVER.0, EVER.1), want, "crash at op {n}");
            }
            more => panic!("crash at op {n}: runs {more:?}"),
        }
        a.catch_up(log(&db), durable).unwrap();
        assert_eq!(scan_all(&a, ALL, EVER.0, EVER.1), want, "crash at op {n}");
    }
    assert!(crashed >= 4, "only {crashed} crash points");
}

/// A power loss at each operation of a regeneration: the store reopens with the same
/// LSN ranges, holding either the damaged run or its replacement, and a second
/// regeneration (if needed) repairs it.
#[test]
fn a_crash_while_regenerating_leaves_the_old_run_or_the_new_one() {
    let (_sim, db, _t) = database(12, 120);
    let durable = log(&db).durable_lsn();
    let want = expected(log(&db), ALL, Lsn(0), durable);
    let mut crashed = 0;
    for n in 1.. {
        let st = SimStorage::new(300 + n);
        let a = store_on(&st);
        a.set_limits(6 << 10, 4000);
        a.catch_up(log(&db), durable).unwrap();
        let runs = a.runs();
        let (from, to) = runs[1];
        flip(&st, &a.run_path(from, to), HEADER_LEN + 5);
        st.crash_at_op(n);
        let r = a.regenerate(log(&db), from, to);
        if st.crashed_count() == 0 {
            r.unwrap();
            st.disarm_crash();
            assert_eq!(scan_all(&a, ALL, EVER.0, EVER.1), want);
            break;
        }
        crashed += 1;
        drop(a);
        let a = store_on(&st);
        assert_eq!(a.runs(), runs, "crash at op {n}");
        let names = st.list(Path::new("/runs")).unwrap();
        assert!(
            names
                .iter()
                .all(|n| RunMeta::parse(n).is_some() || n.ends_with(DAMAGED)),
            "crash at op {n}: {names:?}"
        );
        let results: Vec<_> = a.scan(ALL.0, ALL.1, EVER.0, EVER.1).unwrap().collect();
        if results.iter().any(|r| r.is_err()) {
            let d = damage_of(&a, ALL, EVER.0, EVER.1);
            assert_eq!((d.from, d.to), (from, to), "crash at op {n}");
            a.regenerate(log(&db), d.from, d.to).unwrap();
        }
        assert_eq!(scan_all(&a, ALL, EVER.0, EVER.1), want, "crash at op {n}");
    }
    assert!(crashed >= 6, "only {crashed} crash points");
}

#[test]
fn open_finishes_an_interrupted_replacement() {
    let (_sim, db, _t) = database(13, 100);
    let st = SimStorage::new(111);
    let a = store_on(&st);
    let durable = log(&db).durable_lsn();
    a.catch_up(log(&db), durable).unwrap();
    let (from, to) = a.runs()[0];
    let path = a.run_path(from, to);
    let good = read_file(&st, &path);
    drop(a);
    let dir = Path::new("/runs");
    let put = |name: &str, bytes: &[u8]| {
        let f = st.open(&dir.join(name), OpenOptions::CREATE).unwrap();
        f.write_at(bytes, 0).unwrap();
        f.sync_data().unwrap();
    };
    // A replacement that starts later, with the same end, complete as `.new`; the old
    // run (damaged) still in place; a stray temp file.
    let later = RunMeta {
        from: Lsn(from.0 + 8),
        to,
    };
    put(&format!("{}.new", later.name()), b"replacement");
    put(&format!("{}.tmp", later.name()), b"partial");
    flip(&st, &path, 30);
    let a = store_on(&st);
    assert_eq!(a.runs(), vec![(later.from, to)]);
    // (`list` sorts.)
    let mut want = vec![
        later.name(),
        format!("{}.damaged", RunMeta { from, to }.name()),
    ];
    want.sort();
    assert_eq!(st.list(dir).unwrap(), want);
    // The same name: the `.new` goes in place, the old run is kept aside.
    drop(a);
    st.remove(&dir.join(later.name())).unwrap();
    put(&RunMeta { from, to }.name(), b"old and damaged");
    put(&format!("{}.new", RunMeta { from, to }.name()), &good);
    let a = store_on(&st);
    assert_eq!(a.runs(), vec![(from, to)]);
    assert_eq!(read_file(&st, &path), good);
    assert_eq!(
        read_file(
            &st,
            &dir.join(format!("{}.damaged", RunMeta { from, to }.name()))
        ),
        b"old and damaged"
    );
    assert_eq!(
        scan_all(&a, ALL, EVER.0, EVER.1),
        expected(log(&db), ALL, Lsn(0), durable)
    );
}

#[test]
fn run_names_parse_strictly() {
    let r = RunMeta {
        from: Lsn(0x10),
        to: Lsn(0xabc0),
    };
    assert_eq!(r.name(), "run-0000000000000010-000000000000abc0");
    assert_eq!(RunMeta::parse(&r.name()), Some(r));
    for bad in [
        "run-0000000000000010-000000000000ABC0",
        "run-0000000000000010-000000000000abc0.tmp",
        "run-0000000000000010-000000000000abc0.damaged",
        "run-10-abc0",
        "run-000000000000abc0-0000000000000010",
        "run-0000000000000010-0000000000000010",
        "CONTROL",
    ] {
        assert_eq!(RunMeta::parse(bad), None, "{bad}");
    }
}
