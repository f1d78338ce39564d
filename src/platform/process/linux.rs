//! Linux: children and own usage from the shared Unix code, the user's process count from /proc.

pub use super::unix::{ChildSet, kill_group, own_usage, process_limit};

pub const USAGE_METHOD: &str = "wait4 rusage of each child (user, system time, voluntary and involuntary context switches of all its threads)";

pub fn user_process_count() -> Option<u64> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut n = 0;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        use std::os::unix::fs::MetadataExt;
        if e.metadata().map(|m| m.uid() == uid).unwrap_or(false) {
            n += 1;
        }
    }
    Some(n)
}
