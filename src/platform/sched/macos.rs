//! macOS: QoS classes (pthread_set_qos_class_self_np) and the Mach time-constraint policy on the
//! calling thread, nice on the process; no CPU binding, no RT throttling settings.

use super::*;

const QOS_USER_INTERACTIVE: u32 = 0x21;
const QOS_USER_INITIATED: u32 = 0x19;
const QOS_DEFAULT: u32 = 0x15;
const QOS_UTILITY: u32 = 0x11;
const QOS_BACKGROUND: u32 = 0x09;
const THREAD_TIME_CONSTRAINT_POLICY: u32 = 2;
const THREAD_TIME_CONSTRAINT_POLICY_COUNT: u32 = 4;

#[repr(C)]
struct TimeConstraint {
    period: u32,
    computation: u32,
    constraint: u32,
    preemptible: i32,
}
#[repr(C)]
struct MachTimebaseInfo {
    numer: u32,
    denom: u32,
}

unsafe extern "C" {
    fn pthread_set_qos_class_self_np(qos: u32, rel: libc::c_int) -> libc::c_int;
    fn pthread_get_qos_class_np(
        t: libc::pthread_t,
        qos: *mut u32,
        rel: *mut libc::c_int,
    ) -> libc::c_int;
    fn mach_thread_self() -> u32;
    fn thread_policy_set(thread: u32, flavor: u32, info: *mut i32, count: u32) -> i32;
    fn thread_policy_get(
        thread: u32,
        flavor: u32,
        info: *mut i32,
        count: *mut u32,
        get_default: *mut i32,
    ) -> i32;
    fn mach_timebase_info(info: *mut MachTimebaseInfo) -> i32;
}

pub fn rt_throttle_settings() -> (Option<i64>, Option<i64>) {
    (None, None)
}
pub fn deadline_server() -> bool {
    false
}

fn ns_to_abs(ns: u64) -> u32 {
    let mut tb = MachTimebaseInfo { numer: 1, denom: 1 };
    // SAFETY: valid out pointer.
    unsafe { mach_timebase_info(&mut tb) };
    (ns as u128 * tb.denom.max(1) as u128 / tb.numer.max(1) as u128).min(u32::MAX as u128) as u32
}

fn qos_name(q: u32) -> String {
    match q {
        QOS_USER_INTERACTIVE => "qos-interactive".into(),
        QOS_USER_INITIATED => "qos-initiated".into(),
        QOS_DEFAULT => "other".into(),
        QOS_UTILITY => "qos-utility".into(),
        QOS_BACKGROUND => "qos-background".into(),
        q => format!("qos 0x{q:x}"),
    }
}

fn set_time_constraint(req: &SchedRequest) -> io::Result<()> {
    let period = req.period_ns.unwrap_or(10_000_000);
    let comp = req.runtime_ns.unwrap_or(period / 2);
    let constraint = req.deadline_ns.unwrap_or(period);
    let mut tc = TimeConstraint {
        period: ns_to_abs(period),
        computation: ns_to_abs(comp),
        constraint: ns_to_abs(constraint),
        preemptible: 1,
    };
    // SAFETY: tc is the documented 4-word policy structure.
    let kr = unsafe {
        thread_policy_set(
            mach_thread_self(),
            THREAD_TIME_CONSTRAINT_POLICY,
            &mut tc as *mut TimeConstraint as *mut i32,
            THREAD_TIME_CONSTRAINT_POLICY_COUNT,
        )
    };
    if kr != 0 {
        return Err(io::Error::other(format!(
            "thread_policy_set(THREAD_TIME_CONSTRAINT_POLICY) returned {kr}"
        )));
    }
    Ok(())
}

fn time_constraint_active() -> bool {
    let mut tc = TimeConstraint {
        period: 0,
        computation: 0,
        constraint: 0,
        preemptible: 0,
    };
    let mut count = THREAD_TIME_CONSTRAINT_POLICY_COUNT;
    let mut default = 0;
    // SAFETY: valid out pointers of the documented sizes.
    let kr = unsafe {
        thread_policy_get(
            mach_thread_self(),
            THREAD_TIME_CONSTRAINT_POLICY,
            &mut tc as *mut TimeConstraint as *mut i32,
            &mut count,
            &mut default,
        )
    };
    kr == 0 && default == 0
}

/// The QoS class (or time-constraint policy) of the calling thread and the process's nice.
fn read_qos() -> SchedReadback {
    let (mut q, mut rel) = (0u32, 0);
    // SAFETY: valid out pointers.
    unsafe { pthread_get_qos_class_np(libc::pthread_self(), &mut q, &mut rel) };
    // SAFETY: plain call.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    SchedReadback {
        policy: if time_constraint_active() {
            "time-constraint".into()
        } else {
            qos_name(q)
        },
        nice: Some(nice),
        ..Default::default()
    }
}

/// A QoS class (pthread_set_qos_class_self_np) or the Mach time-constraint policy on the
/// calling thread, nice on the process; read back as QoS class and nice.
pub fn apply_process(req: &SchedRequest) -> io::Result<SchedReadback> {
    let qos = match req.effective_policy() {
        Policy::Other => Some(QOS_DEFAULT),
        Policy::QosInteractive => Some(QOS_USER_INTERACTIVE),
        Policy::QosInitiated => Some(QOS_USER_INITIATED),
        Policy::QosUtility => Some(QOS_UTILITY),
        Policy::QosBackground => Some(QOS_BACKGROUND),
        Policy::TimeConstraint => None,
        n => {
            return Err(crate::platform::unsupported(&format!(
                "no '{}' policy on macOS (threads get QoS classes or the Mach time-constraint policy)",
                n.name()
            )));
        }
    };
    if let Some(n) = req.nice {
        // SAFETY: plain call.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    match qos {
        // SAFETY: plain call on the calling thread.
        Some(q) => {
            let rc = unsafe { pthread_set_qos_class_self_np(q, 0) };
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
        }
        None => set_time_constraint(req)?,
    }
    Ok(read_qos())
}

/// The Linux names mapped to QoS classes (batch → utility, idle → background, deadline → the
/// time-constraint policy); macOS's own names as they are.
pub fn apply_thread(req: &SchedRequest) -> io::Result<()> {
    let policy = match req.effective_policy() {
        Policy::Batch => Policy::QosUtility,
        Policy::Idle => Policy::QosBackground,
        Policy::Deadline => Policy::TimeConstraint,
        p @ (Policy::Other
        | Policy::QosInteractive
        | Policy::QosInitiated
        | Policy::QosUtility
        | Policy::QosBackground
        | Policy::TimeConstraint) => p,
        p => {
            return Err(crate::platform::unsupported(&format!(
                "no POSIX '{}' for threads here; use --policy deadline (the Mach time-constraint policy)",
                p.name()
            )));
        }
    };
    if req.nice.is_some() || req.slice_ns.is_some() {
        return Err(crate::platform::unsupported(
            "nice applies to the whole process and there is no EEVDF slice",
        ));
    }
    apply_process(&SchedRequest {
        runtime_ns: req.runtime_ns,
        deadline_ns: req.deadline_ns,
        period_ns: req.period_ns,
        ..SchedRequest::new(policy)
    })
    .map(|_| ())
}

/// The calling thread's POSIX policy and priority (pthread_getschedparam).
pub fn read_thread() -> io::Result<SchedReadback> {
    // SAFETY: out pointers are valid.
    let (pol, prio) = unsafe {
        let mut pol = 0;
        let mut p: libc::sched_param = std::mem::zeroed();
        libc::pthread_getschedparam(libc::pthread_self(), &mut pol, &mut p);
        (pol, p.sched_priority)
    };
    Ok(SchedReadback {
        policy: match pol {
            libc::SCHED_OTHER => "other".into(),
            libc::SCHED_FIFO => "fifo".into(),
            libc::SCHED_RR => "rr".into(),
            p => format!("policy {p}"),
        },
        priority: Some(prio),
        ..Default::default()
    })
}

pub fn set_watchdog_priority(_priority: i32) -> io::Result<()> {
    set_time_constraint(&SchedRequest {
        period_ns: Some(10_000_000),
        runtime_ns: Some(1_000_000),
        deadline_ns: Some(10_000_000),
        ..SchedRequest::new(Policy::TimeConstraint)
    })
}

pub fn set_thread_affinity(_cpus: &[usize]) -> io::Result<()> {
    Err(crate::platform::unsupported(
        "threads cannot be bound to CPUs (only affinity tags exist)",
    ))
}
