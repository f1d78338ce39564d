//! Every temporary folder osgauge makes in the temp dir is named `osgauge-<kind>-<pid>-<random>`
//! (the owner's process id in the name), so that any later osgauge command — not only the one
//! that made it — removes it once its owner is dead ([`remove_stale`], run at the start of every
//! command). A process killed with SIGKILL, or by a second Ctrl-C, cannot clean up after itself;
//! its successor does.

use std::path::{Path, PathBuf};

/// The kinds of temp folders osgauge makes in the temp dir (`osgauge-<kind>-<pid>-…`).
pub const KINDS: &[&str] = &["policy", "validate", "pagefault", "check", "checkinputs"];

/// A new temp folder `osgauge-<kind>-<pid>-<random>` in `base`, removed when dropped.
pub fn dir_in(kind: &str, base: &Path) -> std::io::Result<tempfile::TempDir> {
    debug_assert!(KINDS.contains(&kind) && !kind.contains('-'));
    tempfile::Builder::new()
        .prefix(&format!("osgauge-{kind}-{}-", std::process::id()))
        .tempdir_in(base)
}

/// [`dir_in`] the temp dir.
pub fn dir(kind: &str) -> std::io::Result<tempfile::TempDir> {
    dir_in(kind, &std::env::temp_dir())
}

/// The owner's process id of a temp folder named by [`dir_in`] of one of `kinds`.
pub fn owner(name: &str, kinds: &[&str]) -> Option<u32> {
    let rest = name.strip_prefix("osgauge-")?;
    let (kind, rest) = rest.split_once('-')?;
    if !kinds.contains(&kind) {
        return None;
    }
    rest.split('-').next()?.parse().ok()
}

/// Remove the temp folders of `kinds` in `base` whose owner process no longer exists. Returns
/// what was removed.
pub fn remove_stale_in(base: &Path, kinds: &[&str]) -> Vec<PathBuf> {
    let mut gone = Vec::new();
    let Ok(rd) = std::fs::read_dir(base) else {
        return gone;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name, kinds) else {
            continue;
        };
        if pid != std::process::id()
            && !crate::platform::process_alive(pid)
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            gone.push(e.path());
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner_and_only_dead_owners_folders_go() {
        let base = tempfile::tempdir().unwrap();
        let mine = dir_in("pagefault", base.path()).unwrap();
        let name = mine
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert_eq!(owner(&name, KINDS), Some(std::process::id()));
        // A pid above the kernel's maximum (4194304) is never alive.
        let dead = base.path().join("osgauge-policy-4294967-abc");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("f"), b"x").unwrap();
        let foreign = base.path().join("osgauge-other-4294967-abc");
        std::fs::create_dir(&foreign).unwrap();
        let gone = remove_stale_in(base.path(), KINDS);
        assert_eq!(gone, vec![dead.clone()]);
        assert!(!dead.exists() && foreign.exists() && mine.path().exists());
        assert_eq!(owner("osgauge-policy-notapid-x", KINDS), None);
        assert_eq!(owner(".tmpAbc", KINDS), None);
    }
}
