//! A file held in memory: what [`decode_run`](super::decode_run) (the fuzz entry's
//! reader) reads a run from and the tests' `encode_run` writes one to, without a file
//! system.

use parking_lot::Mutex;
use sluice_storage::FileHandle;
use std::io;

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
    fn allocate(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        let mut bytes = self.0.lock();
        if bytes.len() < len {
            bytes.resize(len, 0);
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.lock().len() as u64)
    }
    fn drop_cache(&self) -> io::Result<()> {
        Ok(())
    }
}
