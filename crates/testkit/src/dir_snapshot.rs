//! What a real directory holds, byte for byte: for tests that show an operation left a
//! database directory as it was (read-only opens, the read-only tools).

use std::collections::BTreeMap;
use std::path::Path;

/// Every file under `dir`, recursively: its path relative to `dir` → its bytes.
pub fn dir_snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                files.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    files
}
