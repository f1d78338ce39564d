//! The per-process load folder `<base>/<pid>/` and the removal of what dead processes left.

use std::io;
use std::path::{Path, PathBuf};

/// Marks a per-process folder as osgauge's (so stale ones are removed only when they are ours).
pub(super) const MARKER: &str = ".osgauge-loads";

/// Default base of the load folders: `<cache dir>/loads`, else `<temp dir>/osgauge/loads`.
pub fn default_load_base() -> PathBuf {
    crate::workload::work::cache_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("osgauge"))
        .join("loads")
}

/// The per-process folder `<base>/<pid>` holding this process's load files; removed (with the
/// files in it) on drop.
pub struct LoadFolder {
    path: PathBuf,
}

impl LoadFolder {
    /// Create `<base>/<pid>`. The default base is created if missing; a base the user gave
    /// (`--load-dir`) must exist.
    pub fn create(base: &Path) -> io::Result<LoadFolder> {
        if base == default_load_base() {
            std::fs::create_dir_all(base)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", base.display())))?;
        } else if !base.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a directory", base.display()),
            ));
        }
        let path = base.join(std::process::id().to_string());
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let ours = path.join(MARKER).exists()
                    || std::fs::read_dir(&path).map(|mut d| d.next().is_none())?;
                if !ours {
                    return Err(io::Error::other(format!(
                        "{} exists and is not an osgauge load folder",
                        path.display()
                    )));
                }
            }
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
        std::fs::write(
            path.join(MARKER),
            b"osgauge load files; removed when the load ends\n",
        )?;
        Ok(LoadFolder { path })
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LoadFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Remove what dead osgauge processes left: `<base>/<pid>` folders whose process is gone (under
/// the default base every such folder; under a user's `--load-dir` only folders that carry
/// osgauge's marker or are empty), and old-style `osgauge-load-<pid>-*.tmp` files in each of
/// `old_style_dirs` from dead processes. Returns what was removed.
pub fn remove_stale(base: &Path, old_style_dirs: &[&Path]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let own_base = base == default_load_base();
    if let Ok(entries) = std::fs::read_dir(base) {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let path = e.path();
            if pid == std::process::id() || crate::platform::process_alive(pid) || !path.is_dir() {
                continue;
            }
            let gone = if own_base || path.join(MARKER).exists() {
                std::fs::remove_dir_all(&path).is_ok()
            } else {
                std::fs::remove_dir(&path).is_ok()
            };
            if gone {
                removed.push(path);
            }
        }
    }
    for dir in old_style_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.ends_with(".tmp"))
                .and_then(|n| n.strip_prefix("osgauge-load-"))
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id()
                && !crate::platform::process_alive(pid)
                && std::fs::remove_file(e.path()).is_ok()
            {
                removed.push(e.path());
            }
        }
    }
    removed
}
