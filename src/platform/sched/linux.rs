//! Linux: sched_setattr / sched_getattr (policy, priority, nice, EEVDF slice and deadline
//! parameters in one call), sched_setaffinity, the RT throttling settings in /proc/sys/kernel
//! and the fair deadline server.

use super::*;

const SCHED_DEADLINE: u32 = 6;

#[repr(C)]
#[derive(Default, Debug)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

fn tid() -> libc::pid_t {
    // SAFETY: gettid cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

fn getattr() -> io::Result<SchedAttr> {
    let mut a = SchedAttr::default();
    // SAFETY: a is a valid sched_attr of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut a as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(a)
}

/// Apply a request to the calling thread with sched_setattr (policy, priority, nice, slice or
/// deadline parameters in one call).
pub fn apply_thread(req: &SchedRequest) -> io::Result<()> {
    let policy = req.effective_policy();
    let sched_policy = match policy {
        Policy::Other => libc::SCHED_OTHER as u32,
        Policy::Batch => libc::SCHED_BATCH as u32,
        Policy::Idle => libc::SCHED_IDLE as u32,
        Policy::Fifo => libc::SCHED_FIFO as u32,
        Policy::Rr => libc::SCHED_RR as u32,
        Policy::Deadline => SCHED_DEADLINE,
        n => {
            return Err(crate::platform::unsupported(&format!(
                "no '{}' policy on Linux (a Windows priority class or a macOS QoS class)",
                n.name()
            )));
        }
    };
    let cur = getattr()?;
    let mut a = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy,
        sched_nice: req.nice.unwrap_or(cur.sched_nice),
        ..Default::default()
    };
    match policy {
        Policy::Fifo | Policy::Rr => a.sched_priority = req.priority.unwrap_or(1).max(1) as u32,
        Policy::Deadline => {
            let (Some(r), Some(p)) = (req.runtime_ns, req.period_ns) else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "SCHED_DEADLINE needs a runtime and a period",
                ));
            };
            a.sched_runtime = r;
            a.sched_deadline = req.deadline_ns.unwrap_or(p);
            a.sched_period = p;
        }
        _ => {
            if let Some(s) = req.slice_ns {
                a.sched_runtime = s;
            }
        }
    }
    // SAFETY: a is a valid, fully initialised sched_attr; pid 0 = calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0u32) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // Older kernels accept but ignore the slice for fair policies: check it held.
    if let (Some(s), false) = (req.slice_ns, policy.is_realtime()) {
        let back = getattr()?;
        if back.sched_runtime != s {
            return Err(crate::platform::unsupported(&format!(
                "the kernel did not keep the custom slice ({s} ns requested, {} ns read back); \
                 EEVDF custom slices need Linux ≥ 6.12",
                back.sched_runtime
            )));
        }
    }
    Ok(())
}

/// The calling thread's policy and parameters (sched_getattr, cross-checked with
/// sched_getscheduler / sched_getparam, which tools like chrt show).
pub fn read_thread() -> io::Result<SchedReadback> {
    let a = getattr()?;
    let policy = match a.sched_policy as i32 {
        libc::SCHED_OTHER => "other".to_string(),
        libc::SCHED_BATCH => "batch".to_string(),
        libc::SCHED_IDLE => "idle".to_string(),
        libc::SCHED_FIFO => "fifo".to_string(),
        libc::SCHED_RR => "rr".to_string(),
        6 => "deadline".to_string(),
        7 => "ext".to_string(),
        p => format!("policy {p}"),
    };
    // SAFETY: tid is ours; param is a valid out pointer.
    let (classic, prio) = unsafe {
        let mut p: libc::sched_param = std::mem::zeroed();
        let pol = libc::sched_getscheduler(tid());
        libc::sched_getparam(tid(), &mut p);
        (pol, p.sched_priority)
    };
    debug_assert!(classic < 0 || classic as u32 & 0xff == a.sched_policy & 0xff);
    let rt = matches!(a.sched_policy as i32, libc::SCHED_FIFO | libc::SCHED_RR);
    let dl = a.sched_policy == SCHED_DEADLINE;
    Ok(SchedReadback {
        policy,
        priority: rt.then_some(prio),
        nice: (!rt && !dl).then_some(a.sched_nice),
        runtime_ns: Some(a.sched_runtime),
        deadline_ns: dl.then_some(a.sched_deadline),
        period_ns: dl.then_some(a.sched_period),
        ..Default::default()
    })
}

/// Apply to the calling (single-threaded) process: sched_setattr, then read back with
/// sched_getattr / sched_getscheduler and sched_rr_get_interval.
pub fn apply_process(req: &SchedRequest) -> io::Result<SchedReadback> {
    apply_thread(req).map_err(|e| {
        if req.policy == Some(Policy::Deadline) && e.raw_os_error() == Some(libc::EBUSY) {
            io::Error::other(format!(
                "SCHED_DEADLINE admission control refused runtime {} ns / period {} ns (EBUSY: \
                 the total bandwidth would exceed the limit)",
                req.runtime_ns.unwrap_or(0),
                req.period_ns.unwrap_or(0)
            ))
        } else {
            e
        }
    })?;
    let mut r = read_thread()?;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; pid 0 = caller.
    let rr = (unsafe { libc::sched_rr_get_interval(0, &mut ts) } == 0)
        .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
    r.rr_interval_ns = if r.policy == "rr" { rr } else { None };
    r.runtime_ns = r.runtime_ns.filter(|&v| v > 0);
    Ok(r)
}

/// Put the calling thread (the study's watchdog) at SCHED_FIFO `priority`.
pub fn set_watchdog_priority(priority: i32) -> io::Result<()> {
    apply_thread(&SchedRequest {
        priority: Some(priority),
        ..SchedRequest::new(Policy::Fifo)
    })
}

pub fn set_thread_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: zeroed cpu_set_t is empty; indices are checked.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} out of range"),
                ));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

pub fn rt_throttle_settings() -> (Option<i64>, Option<i64>) {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    };
    (read("sched_rt_runtime_us"), read("sched_rt_period_us"))
}

/// The fair deadline server (Linux ≥ 6.12) is visible in debugfs when it is mounted.
pub fn deadline_server() -> bool {
    std::path::Path::new("/sys/kernel/debug/sched/fair_server").is_dir()
}
