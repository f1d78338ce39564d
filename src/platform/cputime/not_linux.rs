//! macOS and Windows: no per-CPU steal and no scheduler events to split a task's time by, the
//! same on both.

pub fn cpu_steal_ns(_cpus: &[usize]) -> Result<(Vec<u64>, u64), String> {
    Err(format!(
        "not measurable on {}: the OS reports no per-CPU steal",
        crate::platform::OS_NAME
    ))
}

pub fn read_task_clock_excludes_steal() -> Result<(), String> {
    Err(format!(
        "unsupported on {}: the split reads Linux scheduler events",
        crate::platform::OS_NAME
    ))
}
