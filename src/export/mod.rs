//! Exporters: pure functions of the result record (one file per format), and an atomic writer.

pub mod csv;
pub mod json;
pub mod markdown;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::model::RunRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
}

impl Format {
    pub fn flag(self) -> &'static str {
        match self {
            Format::Json => "--export-json",
            Format::Csv => "--export-csv",
            Format::Markdown => "--export-markdown",
        }
    }

    pub fn render(self, record: &RunRecord) -> anyhow::Result<String> {
        match self {
            Format::Json => json::render(record),
            Format::Csv => csv::render(record),
            Format::Markdown => Ok(markdown::render(record)),
        }
    }
}

/// Check before running that `path` can be written: its directory exists and accepts a new file,
/// and the path itself is not a directory. Nothing is left behind.
pub fn check_writable(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{} is a directory", path.display()));
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    tempfile::NamedTempFile::new_in(&dir)
        .map(drop)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Write `contents` to `path` atomically: a temporary file in the same directory, flushed, then
/// renamed over the target, so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut builder = tempfile::Builder::new();
    if let Some(perm) = crate::platform::user_file_permissions() {
        builder.permissions(perm);
    }
    let mut tmp = builder.tempfile_in(parent_dir(path))?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            let expect = crate::platform::user_file_permissions().unwrap().mode();
            assert_eq!(
                mode, expect,
                "exports get the user's normal file mode, not 0600"
            );
        }
    }

    #[test]
    fn writability_is_checked_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(&dir.path().join("x.csv")).is_ok());
        assert!(
            check_writable(dir.path())
                .unwrap_err()
                .contains("is a directory")
        );
        let missing = dir.path().join("no/such/dir/x.csv");
        assert!(
            check_writable(&missing)
                .unwrap_err()
                .contains("does not exist")
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
