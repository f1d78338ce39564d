//! Records the git commit osgauge was built from (`tool.git` in every run record), when built
//! from a git checkout with git available; otherwise the field stays empty.
//!
//! Rebuild only when the commit or the tree changes: the script reruns when HEAD moves (the
//! HEAD file, the branch's ref, packed refs), when the index changes (a commit, `git add`), or
//! when a source file changes (the `-dirty` suffix). `git describe --dirty` would otherwise
//! refresh `.git/index` itself (even with `GIT_OPTIONAL_LOCKS=0`) and so trigger the next build:
//! the commit comes from `git describe` without `--dirty`, and the suffix from `git status`
//! with `--no-optional-locks`, which does not write the index.
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn rerun_if_changed(p: &Path) {
    println!("cargo:rerun-if-changed={}", p.display());
}

fn main() {
    // The tree: what `-dirty` depends on (a directory is scanned recursively by cargo).
    for p in ["src", "Cargo.toml", "Cargo.lock", "build.rs", "examples"] {
        rerun_if_changed(Path::new(p));
    }
    // The commit. `--git-dir` is the worktree's own folder (HEAD, index); `--git-common-dir`
    // holds the refs shared by every worktree. Paths that do not exist are not named: cargo
    // would rerun the script on every build.
    let dir = git(&["rev-parse", "--git-dir"]).map(PathBuf::from);
    let common = git(&["rev-parse", "--git-common-dir"]).map(PathBuf::from);
    let head_ref = git(&["symbolic-ref", "-q", "HEAD"]);
    let mut watch: Vec<PathBuf> = Vec::new();
    if let Some(d) = &dir {
        watch.push(d.join("HEAD"));
        watch.push(d.join("index"));
    }
    if let Some(c) = common.as_ref().or(dir.as_ref()) {
        watch.push(c.join("packed-refs"));
        if let Some(r) = &head_ref {
            watch.push(c.join(r));
        }
    }
    for p in watch.iter().filter(|p| p.exists()) {
        rerun_if_changed(p);
    }
    if let Some(v) = git(&["describe", "--always", "--abbrev=12"]).filter(|v| !v.is_empty()) {
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=OSGAUGE_GIT={v}{suffix}");
    }
}
