//! The work directory every fs benchmark writes in: a fresh `osgauge-fs-<pid>-<n>` directory
//! under the chosen parent, owned through an exclusive lock on a marker file inside it. It is
//! removed when dropped (normal end, error, Ctrl-C: the harness's cancel flag unwinds to here);
//! a directory whose marker is no longer locked belongs to a run that was killed and is removed
//! at the next start. Space for files comes from [`budget`]: free space minus a margin, halved,
//! and never over a hard cap.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::platform::fs as pfs;
use crate::record::BenchError;

pub const PREFIX: &str = "osgauge-fs-";
pub const MARKER: &str = ".osgauge-fs-owner";
/// The marker's name while it is made and locked, before it is renamed to [`MARKER`].
const MARKER_PENDING: &str = ".osgauge-fs-owner.new";
/// Always left free on the file system.
pub const MARGIN: u64 = 1 << 30;
/// Never more than this in files, whatever is free or asked.
pub const HARD_CAP: u64 = 64 << 30;
/// Below this there is no room for any fs benchmark.
pub const MIN_SPACE: u64 = 16 << 20;

#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    lock: Option<File>,
}

impl WorkDir {
    /// Remove stale work directories under `parent`, then make a new one.
    pub fn create(parent: &Path) -> io::Result<WorkDir> {
        clean_stale(parent);
        let pid = std::process::id();
        // A name is never used twice by one process: a concurrent start still removing this
        // process's previous (dropped, unlocked) directory by its path must not hit a new one.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        for _ in 0..10_000u32 {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = parent.join(format!("{PREFIX}{pid}-{n}"));
            match std::fs::create_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            }
            let mut wd = WorkDir { path, lock: None };
            // The marker appears under its name already locked (made and locked under another
            // name, then renamed: the lock belongs to the open file and moves with it). So a
            // concurrent start's clean_stale never finds this marker unlocked; until it appears
            // the directory has no marker and is young, which clean_stale leaves alone.
            let pending = wd.path.join(MARKER_PENDING);
            let mut f = File::create(&pending)?;
            f.try_lock()
                .map_err(|e| io::Error::other(format!("locking the marker: {e}")))?;
            writeln!(
                f,
                "osgauge fs work directory of process {pid}; removed when unlocked"
            )?;
            std::fs::rename(&pending, wd.path.join(MARKER))?;
            wd.lock = Some(f);
            return Ok(wd);
        }
        Err(io::Error::other("no free work-directory name"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // Unlock and close first: Windows cannot delete an open file.
        self.lock.take();
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Remove every `osgauge-fs-*` directory under `parent` whose marker no process holds (its run
/// was killed). Returns the directories removed.
pub fn clean_stale(parent: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(parent) else {
        return removed;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) || !e.path().is_dir() {
            continue;
        }
        let marker = e.path().join(MARKER);
        let stale = match OpenOptions::new().read(true).write(true).open(&marker) {
            // Lock taken: nobody holds it, the owner is gone.
            Ok(f) => f.try_lock().is_ok(),
            // No marker: a start between mkdir and the marker's rename (it appears locked), or
            // a marker-less leftover; stale once it is a minute old.
            Err(_) => e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 60),
        };
        if stale && std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// Check `dir` before anything runs: exists, is a directory, writable (a work directory can be
/// made and removed there), and has room for at least [`MIN_SPACE`] beyond the margin.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let md = std::fs::metadata(dir).map_err(|e| format!("--dir {}: {e}", dir.display()))?;
    if !md.is_dir() {
        return Err(format!("--dir {}: not a directory", dir.display()));
    }
    WorkDir::create(dir).map_err(|e| format!("--dir {}: not writable ({e})", dir.display()))?;
    let free = crate::platform::fs::free_bytes(dir)
        .map_err(|e| format!("--dir {}: free space unknown ({e})", dir.display()))?;
    if free < MARGIN + MIN_SPACE {
        return Err(format!(
            "--dir {}: only {} free; the fs suite keeps {} free and needs {} more",
            dir.display(),
            crate::units::format_size(free),
            crate::units::format_size(MARGIN),
            crate::units::format_size(MIN_SPACE)
        ));
    }
    Ok(())
}

/// Bytes of files a benchmark may make under `dir` when it wants `want`: at most half of
/// (free − margin), at most the hard cap. Err when not even [`MIN_SPACE`] fits.
pub fn budget(dir: &Path, want: u64) -> Result<u64, BenchError> {
    let free = crate::platform::fs::free_bytes(dir)
        .map_err(|e| BenchError::failed(format!("free space of {}: {e}", dir.display())))?;
    let room = (free.saturating_sub(MARGIN) / 2).min(HARD_CAP);
    if room < MIN_SPACE.min(want) {
        return Err(BenchError::failed(format!(
            "not enough free space in {}: {} free, {} kept free",
            dir.display(),
            crate::units::format_size(free),
            crate::units::format_size(MARGIN)
        )));
    }
    Ok(want.min(room))
}

/// Why a cache-bypassed read in `dir` cannot be done or checked; the unsupported error.
pub fn refuse_memory_backed(dir: &Path) -> Result<(), BenchError> {
    match pfs::bypass_refusal(dir) {
        Some(why) => Err(BenchError::unsupported(
            crate::platform::unsupported(&why).to_string(),
        )),
        None => Ok(()),
    }
}

/// A benchmark whose figure is about storage (an fsync's trip to the device, the file cache in
/// front of a disk) cannot run on a memory-backed file system (tmpfs): there is no storage under
/// it, and the figure would be a memory operation under a storage name (872 ns "fsync").
pub fn refuse_on_memory_fs(dir: &Path, what: &str) -> Result<(), BenchError> {
    match crate::platform::storage::memory_backed_fs(dir) {
        Ok(Some(fs)) => Err(BenchError::unsupported(format!(
            "{} is on {fs} (memory-backed): {what} needs storage under the file system; give \
             --dir a directory on a disk",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Whether the device counter can check this directory's reads (not a network file system, whose
/// reads never touch a local device).
pub fn counter_checks(facts: &Map<String, Value>) -> Result<(), String> {
    if !crate::platform::storage::DEVICE_COUNTER_PROVES_STORAGE {
        return Err(format!(
            "not verifiable: {}",
            crate::platform::storage::DEVICE_READ_COUNTER
        ));
    }
    if facts.get("network_fs") == Some(&Value::Bool(true)) {
        return Err(
            "not verifiable: a network file system's reads reach the server, not a \
                    local device the counter sees"
                .into(),
        );
    }
    Ok(())
}

/// A fresh work directory in `parent` for a measured run, the run's output seeded with the
/// storage facts of that directory, and whether the device counter can check its reads.
pub fn open_measured(
    parent: &Path,
) -> Result<(WorkDir, crate::bench::RunOutput, Result<(), String>), BenchError> {
    let wd = WorkDir::create(parent).map_err(|e| super::io_err("work directory in", parent, e))?;
    let facts = super::storage_facts(wd.path());
    let check = counter_checks(&facts);
    let out = crate::bench::RunOutput {
        facts,
        ..Default::default()
    };
    Ok((wd, out, check))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("osgauge-wd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_work_dir_is_removed_when_dropped_and_kept_while_held() {
        let parent = tmp("drop");
        let wd = WorkDir::create(&parent).unwrap();
        std::fs::write(wd.file("a"), b"x").unwrap();
        // Held: not stale.
        assert!(clean_stale(&parent).is_empty());
        assert!(wd.path().is_dir());
        let p = wd.path().to_path_buf();
        drop(wd);
        assert!(!p.exists());
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn an_unlocked_work_dir_is_stale_and_removed_at_the_next_start() {
        let parent = tmp("stale");
        // What a killed run leaves: a marked directory nobody locks.
        let dead = parent.join(format!("{PREFIX}999999-0"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(MARKER), b"old").unwrap();
        std::fs::write(dead.join("data"), vec![0u8; 4096]).unwrap();
        // Unrelated files stay.
        std::fs::write(parent.join("keep"), b"k").unwrap();
        let wd = WorkDir::create(&parent).unwrap();
        assert!(!dead.exists());
        assert!(parent.join("keep").exists());
        drop(wd);
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn concurrent_starts_never_remove_a_live_work_dir() {
        // Each start cleans stale directories while others are being made: a marker visible
        // but not yet locked would be taken for a killed run's and its directory removed.
        let parent = tmp("race");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..300 {
                        let wd = WorkDir::create(&parent).unwrap();
                        std::fs::write(wd.file("data"), b"x").unwrap_or_else(|e| {
                            panic!("{} removed while held: {e}", wd.path().display())
                        });
                        assert!(wd.file(MARKER).exists());
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..2000 {
                    clean_stale(&parent);
                }
            });
        });
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn bad_dirs_are_refused_with_the_reason() {
        let e = check_dir(Path::new("/nonexistent-osgauge-dir")).unwrap_err();
        assert!(e.starts_with("--dir /nonexistent-osgauge-dir"), "{e}");
        let parent = tmp("file");
        let f = parent.join("f");
        std::fs::write(&f, b"x").unwrap();
        assert!(check_dir(&f).unwrap_err().contains("not a directory"));
        check_dir(&parent).unwrap();
        // check_dir leaves nothing behind.
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 1);
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn the_budget_never_exceeds_the_request_or_half_the_free_space() {
        let d = std::env::temp_dir();
        // Other processes change the free space meanwhile: the budget may have seen any value
        // between the readings before and after it, so it is held to the larger.
        let free_now = || crate::platform::fs::free_bytes(&d).unwrap();
        let before = free_now();
        let small = budget(&d, 1 << 20);
        let all = budget(&d, u64::MAX);
        let free = before.max(free_now());
        match small {
            Ok(b) => assert!(b <= 1 << 20 && b <= free / 2),
            Err(e) => assert!(e.message.contains("not enough free space"), "{e:?}"),
        }
        if let Ok(b) = all {
            assert!(b <= HARD_CAP && b <= free.saturating_sub(MARGIN) / 2);
        }
    }
}
