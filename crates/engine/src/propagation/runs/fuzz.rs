//! The fuzz entry points of the run reader (forwarded by `crate::fuzzing` to the fuzz
//! target; called by the property tests). They read through [`super::decode_run`],
//! which reads from a [`MemFile`](super::mem_file::MemFile).

use sluice_wal::Lsn;

/// A sorted run's file, read block by block as a scan reads it. Its LSN range
/// (which a scan takes from the file name) is taken from the header's own fields, so
/// inputs can get past that check.
pub(crate) fn run(data: &[u8]) {
    let field = |o: usize| {
        data.get(o..o + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let (from, to) = (Lsn(field(16)), Lsn(field(24)));
    if let Ok(entries) = super::decode_run(data, from, to) {
        for e in &entries {
            assert!(from <= e.lsn && e.lsn < e.end && e.end <= to, "{e:?}");
        }
    }
}

/// [`run`] after rewriting every checksum the run's structure locates, so that
/// mutated inputs reach the checks behind them.
pub(crate) fn run_resealed(data: &[u8]) {
    let mut b = data.to_vec();
    super::reseal_run(&mut b);
    run(&b);
}
