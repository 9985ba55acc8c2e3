//! Writing an experiment's files: every error names the path, as one line for the user.

use std::path::Path;

/// Makes `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Writes `text` to `path`, replacing what was there.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
