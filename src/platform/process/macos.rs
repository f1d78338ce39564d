//! macOS: children and own usage from the shared Unix code (rusage has no switch counts here).

pub use super::unix::{ChildSet, kill_group, own_usage, process_limit};

pub const USAGE_METHOD: &str = "wait4 rusage of each child (user, system time; its switch counts are 0 on macOS, so not used: the total comes from the child's own proc_pidinfo)";

pub fn user_process_count() -> Option<u64> {
    None
}
