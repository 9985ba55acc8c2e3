//! Entry points for the fuzz targets (the `fuzz/` crate at the repository root): one
//! function per decoder of on-disk bytes, each running the decoder on arbitrary input and
//! checking what a decoder promises. They panic only if a decoder misbehaves (panics,
//! or accepts bytes it then cannot hand on safely), which is what a fuzzer reports.
//!
//! Not part of the API: hidden, unstable, and present only because the decoders are
//! `pub(crate)` and a fuzz target is another crate. Each entry point lives next to its
//! decoder (the property tests there call it); this module only forwards to them, so it
//! sits above every layer and nothing imports it.

/// A log record payload (`Record::decode`, the transaction records of both formats, and
/// the delta of an update). A record that decodes has deltas that apply to exactly the
/// values they describe; `commit_of` (is it a commit record, and when) agrees with the
/// decoder.
pub fn log_record(data: &[u8]) {
    crate::log_record::fuzz::record(data)
}

/// A page as read from the data file: the checksum, then `validate` against the id the
/// page itself claims, and, if it passes, every accessor the engine uses on it.
pub fn page(data: &[u8]) {
    crate::page::fuzz::page(data)
}

/// A compact page image from an `Images` record: the first byte picks the page size
/// (1 KiB to 32 KiB), the rest is the image. An image that expands and validates is read
/// as a page.
pub fn page_image(data: &[u8]) {
    crate::page::fuzz::page_image(data)
}

/// The control file (a 65th byte with its low bit set reseals the checksum first).
pub fn control(data: &[u8]) {
    crate::control::fuzz(data)
}

/// A sorted run's file (log-based propagation), read block by block as a scan reads it.
pub fn sorted_run(data: &[u8]) {
    crate::propagation::runs::fuzz::run(data)
}

/// [`sorted_run`] after rewriting every checksum the run's structure locates.
pub fn sorted_run_resealed(data: &[u8]) {
    crate::propagation::runs::fuzz::run_resealed(data)
}

/// Writes seed inputs for the fuzz targets (valid encodings of each kind) under the
/// directory `SLUICE_FUZZ_SEEDS` names, one folder per target: `cargo test -p sluice --lib
/// write_fuzz_seeds -- --ignored`, then `cargo fuzz run <target> fuzz/seeds/<target>`.
#[cfg(test)]
mod seeds {
    use crate::control::Control;
    use crate::ids::PageId;
    use crate::log_record::tests_prop::record;
    use crate::page;
    use crate::propagation::runs::{encode_run, RunEntry};
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    use sluice_wal::Lsn;
    use std::path::Path;

    fn put(dir: &Path, target: &str, name: String, bytes: &[u8]) {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    }

    #[test]
    #[ignore = "writes fuzz seeds when asked to"]
    fn write_fuzz_seeds() {
        let Some(dir) = std::env::var_os("SLUICE_FUZZ_SEEDS") else {
            return;
        };
        let dir = Path::new(&dir);
        let mut runner = TestRunner::deterministic();
        let recs: Vec<Vec<u8>> = (0..40)
            .map(|_| record().new_tree(&mut runner).unwrap().current().encode())
            .collect();
        for (i, r) in recs.iter().enumerate() {
            put(dir, "log_record", format!("rec{i}"), r);
        }
        for (i, p) in crate::page::tests_prop::seed_pages().iter().enumerate() {
            put(dir, "page", format!("page{i}"), p);
            let mut img = vec![(p.len() / page::MIN_PAGE_SIZE).trailing_zeros() as u8];
            img.extend_from_slice(&page::compress(p));
            put(dir, "page_image", format!("img{i}"), &img);
        }
        let mut c = Control::created(4096).encode().to_vec();
        put(dir, "control", "created".into(), &c);
        c.push(1);
        put(dir, "control", "created_resealed".into(), &c);
        for (i, n) in [0usize, 1, 5, 30].into_iter().enumerate() {
            let entries: Vec<RunEntry> = (0..n)
                .map(|k| RunEntry {
                    page: PageId(k as u64 / 3),
                    lsn: Lsn(4096 + 8 * k as u64),
                    end: Lsn(4104 + 8 * k as u64),
                    record: recs[k % recs.len()].clone(),
                })
                .collect();
            let run = encode_run(Lsn(4096), Lsn(1 << 20), &entries, 200);
            put(dir, "sorted_run", format!("run{i}"), &run);
        }
    }
}
