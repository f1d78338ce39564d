//! Windows: priority classes (SetPriorityClass) and thread priorities (SetThreadPriority), the
//! thread affinity mask; no RT throttling settings.

use super::*;
use windows_sys::Win32::System::Threading::{
    ABOVE_NORMAL_PRIORITY_CLASS, BELOW_NORMAL_PRIORITY_CLASS, GetCurrentProcess, GetCurrentThread,
    GetPriorityClass, GetThreadPriority, HIGH_PRIORITY_CLASS, IDLE_PRIORITY_CLASS,
    NORMAL_PRIORITY_CLASS, REALTIME_PRIORITY_CLASS, SetPriorityClass, SetThreadAffinityMask,
    SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL, THREAD_PRIORITY_IDLE, THREAD_PRIORITY_NORMAL,
    THREAD_PRIORITY_TIME_CRITICAL,
};

pub fn rt_throttle_settings() -> (Option<i64>, Option<i64>) {
    (None, None)
}
pub fn deadline_server() -> bool {
    false
}

fn class_name(c: u32) -> String {
    match c {
        IDLE_PRIORITY_CLASS => "idle".into(),
        BELOW_NORMAL_PRIORITY_CLASS => "below-normal".into(),
        NORMAL_PRIORITY_CLASS => "other".into(),
        ABOVE_NORMAL_PRIORITY_CLASS => "above-normal".into(),
        HIGH_PRIORITY_CLASS => "high".into(),
        REALTIME_PRIORITY_CLASS => "realtime".into(),
        c => format!("priority class 0x{c:x}"),
    }
}

/// SetPriorityClass on this process (+ SetThreadPriority on the calling thread), read back
/// with GetPriorityClass / GetThreadPriority.
pub fn apply_process(req: &SchedRequest) -> io::Result<SchedReadback> {
    let class = match req.effective_policy() {
        Policy::Other => NORMAL_PRIORITY_CLASS,
        Policy::Idle => IDLE_PRIORITY_CLASS,
        Policy::BelowNormal => BELOW_NORMAL_PRIORITY_CLASS,
        Policy::AboveNormal => ABOVE_NORMAL_PRIORITY_CLASS,
        Policy::High => HIGH_PRIORITY_CLASS,
        Policy::Realtime => REALTIME_PRIORITY_CLASS,
        n => {
            return Err(crate::platform::unsupported(&format!(
                "no '{}' policy on Windows (it has priority classes: idle, below-normal, other, above-normal, high, realtime)",
                n.name()
            )));
        }
    };
    if req.nice.is_some() || req.slice_ns.is_some() {
        return Err(crate::platform::unsupported(
            "no nice levels or EEVDF slices (use priority classes and --priority)",
        ));
    }
    // SAFETY: pseudo handles of the current process and thread.
    unsafe {
        if SetPriorityClass(GetCurrentProcess(), class) == 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(p) = req.priority
            && SetThreadPriority(GetCurrentThread(), p) == 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: pseudo handles.
    let (got, tp) = unsafe {
        (
            GetPriorityClass(GetCurrentProcess()),
            GetThreadPriority(GetCurrentThread()),
        )
    };
    if got == 0 {
        return Err(io::Error::last_os_error());
    }
    let downgraded = (class == REALTIME_PRIORITY_CLASS && got != REALTIME_PRIORITY_CLASS)
        .then(|| {
            format!(
                "REALTIME_PRIORITY_CLASS requested, {} granted (no increase-base-priority privilege)",
                class_name(got)
            )
        });
    Ok(SchedReadback {
        policy: class_name(got),
        priority: Some(tp),
        downgraded,
        ..Default::default()
    })
}

/// The Linux names mapped to thread priorities (other → NORMAL, batch → BELOW_NORMAL, idle →
/// IDLE, fifo/rr → `priority` or TIME_CRITICAL), set and read back.
pub fn apply_thread(req: &SchedRequest) -> io::Result<()> {
    let prio = match req.effective_policy() {
        Policy::Other if req.nice.is_none() && req.slice_ns.is_none() => THREAD_PRIORITY_NORMAL,
        Policy::Batch if req.nice.is_none() && req.slice_ns.is_none() => {
            THREAD_PRIORITY_BELOW_NORMAL
        }
        Policy::Idle if req.nice.is_none() => THREAD_PRIORITY_IDLE,
        Policy::Fifo | Policy::Rr => req.priority.unwrap_or(THREAD_PRIORITY_TIME_CRITICAL),
        p => {
            return Err(crate::platform::unsupported(&format!(
                "policy {} with nice/slice/deadline parameters has no Windows mapping (thread priorities only)",
                p.name()
            )));
        }
    };
    // SAFETY: pseudo handle of the calling thread.
    if unsafe { SetThreadPriority(GetCurrentThread(), prio) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    let back = unsafe { GetThreadPriority(GetCurrentThread()) };
    if back != prio {
        return Err(io::Error::other(format!(
            "thread priority {prio} requested, {back} read back"
        )));
    }
    Ok(())
}

/// The calling thread's priority (GetThreadPriority).
pub fn read_thread() -> io::Result<SchedReadback> {
    // SAFETY: pseudo handle of the current thread.
    let p = unsafe { GetThreadPriority(GetCurrentThread()) };
    Ok(SchedReadback {
        policy: "windows-thread-priority".into(),
        priority: Some(p),
        ..Default::default()
    })
}

pub fn set_watchdog_priority(_priority: i32) -> io::Result<()> {
    // SAFETY: pseudo handle.
    if unsafe { SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_TIME_CRITICAL) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn set_thread_affinity(cpus: &[usize]) -> io::Result<()> {
    let mut mask = 0usize;
    for &c in cpus {
        if c >= usize::BITS as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} out of range (processor groups not implemented yet)"),
            ));
        }
        mask |= 1 << c;
    }
    // SAFETY: pseudo handle of the current thread.
    if unsafe { SetThreadAffinityMask(GetCurrentThread(), mask) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
