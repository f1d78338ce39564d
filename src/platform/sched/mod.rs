//! Scheduling: one policy vocabulary for the whole tool, mapped per OS. A [`SchedRequest`] is
//! applied to the calling thread ([`apply_thread`]: the interactivity task, the latency threads,
//! load threads) or to the calling single-threaded process ([`apply_process`]: the policy study's
//! children), and always read back ([`read_thread`], [`SchedReadback`]). Also CPU affinity of the
//! calling thread, the watchdog's priority, and the real-time throttling settings the study's
//! safety check reads.
//!
//! Names: `other batch idle fifo rr deadline` (Linux policies; `nice`, EEVDF `slice`, RT
//! `priority` and deadline runtime/deadline/period apply where they make sense), Windows priority
//! classes `below-normal above-normal high realtime` (`other` = NORMAL, `idle` = IDLE; a thread
//! priority −15…15 through `priority`), macOS `qos-interactive qos-initiated qos-utility
//! qos-background` and `time-constraint` (the Mach time-constraint policy; `other` = QoS default).
//! A thread of the interactivity or latency suites asks with the Linux names, which Windows maps to
//! thread priorities and macOS to QoS classes. A name an OS has no mapping for is
//! "unsupported on <OS>: <reason>".

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Every scheduling policy osgauge knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
    BelowNormal,
    AboveNormal,
    High,
    Realtime,
    QosInteractive,
    QosInitiated,
    QosUtility,
    QosBackground,
    TimeConstraint,
}

impl Policy {
    pub const ALL: [Policy; 15] = [
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Fifo,
        Policy::Rr,
        Policy::Deadline,
        Policy::BelowNormal,
        Policy::AboveNormal,
        Policy::High,
        Policy::Realtime,
        Policy::QosInteractive,
        Policy::QosInitiated,
        Policy::QosUtility,
        Policy::QosBackground,
        Policy::TimeConstraint,
    ];

    /// The names a thread of the interactivity and latency suites is asked for with (`--policy`
    /// there): the Linux policies, mapped per OS by [`apply_thread`].
    pub const THREAD: [Policy; 6] = [
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Fifo,
        Policy::Rr,
        Policy::Deadline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
            Policy::BelowNormal => "below-normal",
            Policy::AboveNormal => "above-normal",
            Policy::High => "high",
            Policy::Realtime => "realtime",
            Policy::QosInteractive => "qos-interactive",
            Policy::QosInitiated => "qos-initiated",
            Policy::QosUtility => "qos-utility",
            Policy::QosBackground => "qos-background",
            Policy::TimeConstraint => "time-constraint",
        }
    }

    pub fn parse(s: &str) -> Result<Policy, String> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let all: Vec<_> = Self::ALL.iter().map(|p| p.name()).collect();
                format!("unknown policy '{s}' (known: {})", all.join(", "))
            })
    }

    /// Policies that can starve everything else: the safety checks and permission messages apply
    /// to these.
    pub fn is_realtime(self) -> bool {
        matches!(
            self,
            Policy::Fifo
                | Policy::Rr
                | Policy::Deadline
                | Policy::Realtime
                | Policy::TimeConstraint
        )
    }
}

/// A policy and its parameters, as asked for. Serialized as the policy study records it
/// (`{"name": "fifo", "priority": 50}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedRequest {
    /// None: no policy asked for (the thread keeps the default one, `other`).
    #[serde(rename = "name", default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Linux FIFO/RR priority 1..99; Windows thread priority −15..15.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Nice −20..19 (Linux other/batch/idle; macOS whole process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Linux EEVDF custom slice, ns (other/batch, Linux ≥ 6.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_ns: Option<u64>,
    /// Deadline runtime / relative deadline / period, ns (Linux SCHED_DEADLINE; macOS
    /// time-constraint computation / constraint / period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ns: Option<u64>,
}

impl SchedRequest {
    /// `policy` with no parameters.
    pub fn new(policy: Policy) -> SchedRequest {
        SchedRequest {
            policy: Some(policy),
            ..Default::default()
        }
    }

    /// The policy that applying this request sets: the one asked for, else `other`.
    pub fn effective_policy(&self) -> Policy {
        self.policy.unwrap_or(Policy::Other)
    }
}

/// What the OS really applied, read back after setting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedReadback {
    /// The policy read back, in the common vocabulary where it has a name there ("high" when
    /// Windows turned a REALTIME request into HIGH; "windows-thread-priority" for a thread there).
    pub policy: String,
    pub priority: Option<i32>,
    pub nice: Option<i32>,
    /// Linux: `sched_runtime` of sched_getattr (the EEVDF slice for fair policies, the runtime for
    /// SCHED_DEADLINE).
    pub runtime_ns: Option<u64>,
    pub deadline_ns: Option<u64>,
    pub period_ns: Option<u64>,
    /// Linux RR timeslice (sched_rr_get_interval), ns; read by [`apply_process`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr_interval_ns: Option<u64>,
    /// Set when the OS silently gave less than asked (Windows REALTIME → HIGH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downgraded: Option<String>,
}

impl SchedReadback {
    /// As facts for a result (`policy_applied`, `rr_interval_ns`, …).
    pub fn facts(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("policy_applied".into(), self.policy.clone().into());
        let opt = |m: &mut Map<String, Value>, k: &str, v: Option<i64>| {
            if let Some(v) = v {
                m.insert(k.into(), v.into());
            }
        };
        opt(&mut m, "priority_applied", self.priority.map(i64::from));
        opt(&mut m, "nice_applied", self.nice.map(i64::from));
        opt(
            &mut m,
            "rr_interval_ns",
            self.rr_interval_ns.map(|v| v as i64),
        );
        opt(
            &mut m,
            "sched_runtime_ns",
            self.runtime_ns.map(|v| v as i64),
        );
        opt(
            &mut m,
            "sched_deadline_ns",
            self.deadline_ns.map(|v| v as i64),
        );
        opt(&mut m, "sched_period_ns", self.period_ns.map(|v| v as i64));
        if let Some(d) = &self.downgraded {
            m.insert("policy_downgraded".into(), d.clone().into());
        }
        m
    }
}

pub use imp::{
    apply_process, apply_thread, deadline_server, read_thread, rt_throttle_settings,
    set_thread_affinity, set_watchdog_priority,
};

/// Is a thread's policy read back in the request's own names (Linux: SCHED_FIFO reads back as
/// "fifo")? Elsewhere the read-back is the OS's own vocabulary (a Windows priority class, a macOS
/// QoS) and is recorded as it is.
pub const READ_BACK_IN_REQUEST_NAMES: bool = cfg!(target_os = "linux");

/// Does a priority apply only to the real-time policies (Linux: FIFO and RR, 1..99), or to every
/// policy (Windows priority classes, macOS)?
pub const PRIORITY_ONLY_FOR_REALTIME: bool = cfg!(target_os = "linux");

/// Linux: the RT throttling decision; Windows / macOS: what keeps the machine alive instead.
pub fn rt_safety() -> Result<String, String> {
    if cfg!(target_os = "linux") {
        let (r, p) = rt_throttle_settings();
        rt_throttle_decision(r, p, deadline_server())
    } else if cfg!(windows) {
        Ok("Windows: REALTIME needs the increase-base-priority privilege (else HIGH is granted, read back); the watchdog ends the run at its time bound".into())
    } else {
        Ok(
            "macOS: the scheduler demotes time-constraint threads that exceed their computation"
                .into(),
        )
    }
}

/// Is it safe to start real-time hogs? Pure decision over the kernel's RT throttling settings
/// (`/proc/sys/kernel/sched_rt_runtime_us`, `sched_rt_period_us`: [`rt_throttle_settings`]) and
/// whether the fair deadline server exists ([`deadline_server`]). Ok(how normal tasks keep CPU
/// time) or Err(why the study refuses).
pub fn rt_throttle_decision(
    runtime_us: Option<i64>,
    period_us: Option<i64>,
    deadline_server: bool,
) -> Result<String, String> {
    if deadline_server {
        return Ok("the fair deadline server reserves CPU time for normal tasks".into());
    }
    match (runtime_us, period_us) {
        (Some(r), Some(p)) if r >= 0 && p > 0 && r < p => Ok(format!(
            "RT throttling: real-time tasks get at most {r} µs of every {p} µs ({:.1} % left to normal tasks)",
            100.0 * (p - r) as f64 / p as f64
        )),
        (Some(-1), _) => Err(
            "RT throttling is off (sched_rt_runtime_us = -1) and there is no deadline server: real-time \
             hogs could freeze this machine; refusing (re-enable with `sysctl kernel.sched_rt_runtime_us=950000`)"
                .into(),
        ),
        (Some(r), Some(p)) => Err(format!(
            "RT throttling leaves normal tasks no time (sched_rt_runtime_us {r} ≥ sched_rt_period_us {p}); refusing"
        )),
        _ => Err("cannot read the RT throttling settings (sched_rt_runtime_us / sched_rt_period_us); refusing to start real-time hogs".into()),
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "linux")]
mod imp {
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
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "macos")]
mod imp {
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
        (ns as u128 * tb.denom.max(1) as u128 / tb.numer.max(1) as u128).min(u32::MAX as u128)
            as u32
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
}

// ------------------------------------------------------------------------------------------------
#[cfg(windows)]
mod imp {
    use super::*;
    use windows_sys::Win32::System::Threading::{
        ABOVE_NORMAL_PRIORITY_CLASS, BELOW_NORMAL_PRIORITY_CLASS, GetCurrentProcess,
        GetCurrentThread, GetPriorityClass, GetThreadPriority, HIGH_PRIORITY_CLASS,
        IDLE_PRIORITY_CLASS, NORMAL_PRIORITY_CLASS, REALTIME_PRIORITY_CLASS, SetPriorityClass,
        SetThreadAffinityMask, SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL,
        THREAD_PRIORITY_IDLE, THREAD_PRIORITY_NORMAL, THREAD_PRIORITY_TIME_CRITICAL,
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
}

// ------------------------------------------------------------------------------------------------
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.name()).unwrap(), p);
            // The serialized name is the name.
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
        assert!(Policy::parse("cfs").is_err());
        assert!(Policy::THREAD.iter().all(|p| Policy::ALL.contains(p)));
    }

    /// A request is recorded as the policy study records it: `name`, then only what was asked.
    #[test]
    fn request_serializes_as_recorded() {
        let r = SchedRequest {
            priority: Some(50),
            ..SchedRequest::new(Policy::Fifo)
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"name":"fifo","priority":50}"#
        );
        let back: SchedRequest = serde_json::from_str(r#"{"name":"qos-utility"}"#).unwrap();
        assert_eq!(back, SchedRequest::new(Policy::QosUtility));
        assert_eq!(SchedRequest::default().effective_policy(), Policy::Other);
    }

    /// A thread's read-back is recorded with every field (unknown = null); the process-only
    /// fields only when set.
    #[test]
    fn readback_serializes_as_recorded() {
        let r = SchedReadback {
            policy: "other".into(),
            nice: Some(0),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"policy":"other","priority":null,"nice":0,"runtime_ns":null,"deadline_ns":null,"period_ns":null}"#
        );
        let f = SchedReadback {
            rr_interval_ns: Some(100_000_000),
            ..r
        }
        .facts();
        assert_eq!(f["policy_applied"], "other");
        assert_eq!(f["rr_interval_ns"], 100_000_000);
        assert!(!f.contains_key("priority_applied"));
    }

    #[test]
    fn rt_throttle_decision_refuses_without_throttling() {
        assert!(rt_throttle_decision(Some(950_000), Some(1_000_000), false).is_ok());
        assert!(rt_throttle_decision(Some(-1), Some(1_000_000), false).is_err());
        assert!(rt_throttle_decision(Some(1_000_000), Some(1_000_000), false).is_err());
        assert!(rt_throttle_decision(None, None, false).is_err());
        // The deadline server keeps normal tasks alive whatever the RT settings.
        assert!(rt_throttle_decision(Some(-1), Some(1_000_000), true).is_ok());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn linux_thread_policy_and_affinity_read_back() {
        std::thread::spawn(|| {
            apply_thread(&SchedRequest {
                nice: Some(5),
                ..SchedRequest::new(Policy::Batch)
            })
            .unwrap();
            let r = read_thread().unwrap();
            assert_eq!(r.policy, "batch");
            assert_eq!(r.nice, Some(5));
            let cpus = crate::platform::allowed_cpus().unwrap();
            set_thread_affinity(&cpus[..1]).unwrap();
            assert_eq!(
                crate::platform::current_thread_affinity().unwrap(),
                cpus[..1]
            );
        })
        .join()
        .unwrap();
    }

    /// Applies `req` on a thread of its own (Linux applies to the calling thread) and checks it
    /// reads back as requested.
    #[cfg(target_os = "linux")]
    fn reads_back_as_requested(req: SchedRequest) {
        let p = req.effective_policy();
        let r = req.clone();
        let a = std::thread::spawn(move || apply_process(&r))
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{}: {e}", p.name()));
        assert_eq!(a.policy, p.name());
        if let Some(n) = req.nice {
            assert_eq!(a.nice, Some(n));
        }
        match p {
            Policy::Fifo => assert_eq!(a.priority, Some(10)),
            Policy::Rr => assert!(a.rr_interval_ns.unwrap() > 0, "{a:?}"),
            _ => assert_eq!(a.rr_interval_ns, None),
        }
    }

    /// Each non-real-time policy read back as requested (no privilege needed).
    #[cfg(target_os = "linux")]
    #[test]
    fn linux_policies_read_back() {
        for req in [
            SchedRequest::new(Policy::Batch),
            SchedRequest::new(Policy::Idle),
            SchedRequest {
                nice: Some(7),
                ..SchedRequest::new(Policy::Other)
            },
        ] {
            assert!(!req.effective_policy().is_realtime());
            reads_back_as_requested(req);
        }
        // A Windows class has no Linux mapping: unsupported, with the reason.
        let e = apply_process(&SchedRequest::new(Policy::High)).unwrap_err();
        assert!(e.to_string().starts_with("unsupported on Linux: "), "{e}");
        let e = apply_thread(&SchedRequest::new(Policy::QosUtility)).unwrap_err();
        assert!(e.to_string().starts_with("unsupported on Linux: "), "{e}");
    }

    /// FIFO and RR read back as requested; they need root (CAP_SYS_NICE), so without it the test
    /// is ignored with that reason.
    #[cfg(target_os = "linux")]
    #[test_with::root()]
    #[test]
    fn linux_realtime_policies_read_back() {
        for policy in [Policy::Fifo, Policy::Rr] {
            let req = SchedRequest {
                priority: Some(10),
                ..SchedRequest::new(policy)
            };
            assert!(req.effective_policy().is_realtime());
            reads_back_as_requested(req);
        }
    }

    /// Priority classes read back (run under Wine in CI); REALTIME may come back as HIGH, marked.
    #[cfg(windows)]
    #[test]
    fn windows_priority_classes_read_back() {
        for p in [
            Policy::Idle,
            Policy::BelowNormal,
            Policy::AboveNormal,
            Policy::High,
            Policy::Realtime,
        ] {
            let a = apply_process(&SchedRequest::new(p)).unwrap();
            if p == Policy::Realtime && a.policy == "high" {
                assert!(a.downgraded.is_some(), "{a:?}");
            } else {
                assert_eq!(a.policy, p.name());
            }
        }
        assert_eq!(
            apply_process(&SchedRequest::new(Policy::Other))
                .unwrap()
                .policy,
            "other"
        );
        let e = apply_process(&SchedRequest::new(Policy::Fifo)).unwrap_err();
        assert!(e.to_string().starts_with("unsupported on Windows: "), "{e}");
    }
}
