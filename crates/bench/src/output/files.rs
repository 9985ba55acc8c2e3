//! Writing an experiment's files: every error names the path, as one line for the user.

use std::path::{Path, PathBuf};

/// Makes `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Writes `text` to `path`, replacing what was there.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a sweep's text files under `dir` (made first): each `(suffix, text)` to
/// `stem` + `suffix` (`.csv`, `.json`, `-summary.csv`); returns their paths, in order.
pub fn write_texts(
    dir: &Path,
    stem: &str,
    texts: &[(&str, String)],
) -> Result<Vec<PathBuf>, String> {
    create_dir(dir)?;
    texts
        .iter()
        .map(|(suffix, text)| {
            let path = dir.join(format!("{stem}{suffix}"));
            write_file(&path, text).map(|()| path)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_go_to_the_stem_and_suffix_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("new");
        let files = write_texts(
            &sub,
            "fig",
            &[(".csv", "a\n".into()), ("-summary.csv", "b\n".into())],
        )
        .unwrap();
        assert_eq!(files, [sub.join("fig.csv"), sub.join("fig-summary.csv")]);
        assert_eq!(std::fs::read_to_string(&files[1]).unwrap(), "b\n");
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = write_texts(&file, "fig", &[(".csv", String::new())]).unwrap_err();
        assert!(e.contains("file"), "the path is named: {e}");
    }
}
