//! The fuzz entry points of the run reader (forwarded by `crate::fuzzing` to the fuzz
//! target; called by the property tests), and the in-memory file they read from.

use parking_lot::Mutex;
use sluice_storage::FileHandle;
use sluice_wal::Lsn;
use std::io;

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

/// A file held in memory, for reading a run without a file system.
pub(crate) struct MemFile(Mutex<Vec<u8>>);

impl MemFile {
    pub(crate) fn new(bytes: Vec<u8>) -> MemFile {
        MemFile(Mutex::new(bytes))
    }
    #[cfg(test)]
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0.into_inner()
    }
}

impl FileHandle for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let b = self.0.lock();
        let Some(src) = usize::try_from(offset).ok().and_then(|o| b.get(o..)) else {
            return Ok(0);
        };
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut b = self.0.lock();
        let at = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let end = at + buf.len();
        if b.len() < end {
            b.resize(end, 0);
        }
        b[at..end].copy_from_slice(buf);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        self.0.lock().resize(len, 0);
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.lock().len() as u64)
    }
    fn drop_cache(&self) -> io::Result<()> {
        Ok(())
    }
}
