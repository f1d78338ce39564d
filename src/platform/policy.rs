//! One scheduling-policy vocabulary for the whole tool, mapped per OS: applied to the calling
//! process (the policy study's children, which are single-threaded) or thread (the interactivity
//! task), and always read back. Also the safety checks real-time hogs need (RT throttling, process
//! limit), and a set of child processes reaped with their resource usage (Unix `wait4` rusage,
//! Windows `GetProcessTimes`), killed together (one process group on Unix).
//!
//! Names: `other batch idle fifo rr deadline` (Linux policies; `nice`, EEVDF `slice`, RT
//! `priority` and deadline runtime/deadline/period apply where they make sense), Windows priority
//! classes `below-normal above-normal high realtime` (`other` = NORMAL, `idle` = IDLE; a thread
//! priority −15…15 through `priority`), macOS `qos-interactive qos-initiated qos-utility
//! qos-background` and `time-constraint` (the Mach time-constraint policy; `other` = QoS default).
//! A name an OS has no mapping for is "unsupported on <OS>: <reason>".

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Every policy name osgauge knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyName {
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

impl PolicyName {
    pub const ALL: [PolicyName; 15] = [
        PolicyName::Other,
        PolicyName::Batch,
        PolicyName::Idle,
        PolicyName::Fifo,
        PolicyName::Rr,
        PolicyName::Deadline,
        PolicyName::BelowNormal,
        PolicyName::AboveNormal,
        PolicyName::High,
        PolicyName::Realtime,
        PolicyName::QosInteractive,
        PolicyName::QosInitiated,
        PolicyName::QosUtility,
        PolicyName::QosBackground,
        PolicyName::TimeConstraint,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PolicyName::Other => "other",
            PolicyName::Batch => "batch",
            PolicyName::Idle => "idle",
            PolicyName::Fifo => "fifo",
            PolicyName::Rr => "rr",
            PolicyName::Deadline => "deadline",
            PolicyName::BelowNormal => "below-normal",
            PolicyName::AboveNormal => "above-normal",
            PolicyName::High => "high",
            PolicyName::Realtime => "realtime",
            PolicyName::QosInteractive => "qos-interactive",
            PolicyName::QosInitiated => "qos-initiated",
            PolicyName::QosUtility => "qos-utility",
            PolicyName::QosBackground => "qos-background",
            PolicyName::TimeConstraint => "time-constraint",
        }
    }

    pub fn parse(s: &str) -> Result<PolicyName, String> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let all: Vec<_> = Self::ALL.iter().map(|p| p.name()).collect();
                format!("unknown policy '{s}' (known: {})", all.join(", "))
            })
    }

    /// Policies that can starve everything else: the study's safety checks apply to these.
    pub fn is_realtime(self) -> bool {
        matches!(
            self,
            PolicyName::Fifo
                | PolicyName::Rr
                | PolicyName::Deadline
                | PolicyName::Realtime
                | PolicyName::TimeConstraint
        )
    }
}

/// A policy and its parameters, as asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySpec {
    pub name: PolicyName,
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

impl PolicySpec {
    pub fn new(name: PolicyName) -> PolicySpec {
        PolicySpec {
            name,
            priority: None,
            nice: None,
            slice_ns: None,
            runtime_ns: None,
            deadline_ns: None,
            period_ns: None,
        }
    }
}

/// What the OS really applied, read back after setting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// The policy name in the common vocabulary that was read back ("high" when Windows turned
    /// a REALTIME request into HIGH).
    pub policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// Linux RR timeslice (sched_rr_get_interval), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr_interval_ns: Option<u64>,
    /// Linux sched_runtime (EEVDF slice for fair policies, runtime for deadline), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ns: Option<u64>,
    /// Set when the OS silently gave less than asked (Windows REALTIME → HIGH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downgraded: Option<String>,
}

impl Applied {
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

/// Is it safe to start real-time hogs? Pure decision over the kernel's RT throttling settings
/// (`/proc/sys/kernel/sched_rt_runtime_us`, `sched_rt_period_us`) and whether the fair deadline
/// server exists. Ok(how normal tasks keep CPU time) or Err(why the study refuses).
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

/// Is `n` more processes within the per-user process limit (soft RLIMIT_NPROC minus those the user
/// already runs, with a margin) and memory (`per_child_bytes` each, at most half of what is
/// available)? Pure: the inputs come from [`process_limit`], [`user_process_count`] and
/// `memory::available_bytes`.
pub fn capacity_decision(
    n: u64,
    nproc_limit: Option<u64>,
    user_procs: Option<u64>,
    available_bytes: Option<u64>,
    per_child_bytes: u64,
) -> Result<(), String> {
    const MARGIN: u64 = 32;
    if let Some(lim) = nproc_limit {
        let used = user_procs.unwrap_or(0);
        if used + n + MARGIN > lim {
            return Err(format!(
                "{n} processes do not fit the per-user process limit (ulimit -u = {lim}, {used} already running, {MARGIN} kept spare): raise it with `ulimit -u` or use fewer --procs"
            ));
        }
    }
    if let Some(avail) = available_bytes {
        let need = n.saturating_mul(per_child_bytes);
        if need > avail / 2 {
            return Err(format!(
                "{n} processes need about {} MiB ({} MiB each) but only {} MiB are available (at most half is used): use fewer --procs",
                need >> 20,
                per_child_bytes >> 20,
                avail >> 20
            ));
        }
    }
    Ok(())
}

/// Resource usage of one reaped child.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildUsage {
    pub pid: u32,
    /// Exit code (None: killed by a signal).
    pub code: Option<i32>,
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Voluntary / involuntary context switches (None where the OS gives no such split).
    pub voluntary: Option<u64>,
    pub involuntary: Option<u64>,
    pub max_rss_bytes: Option<u64>,
}

/// How the per-process figures are obtained, for `Info::method`.
pub fn usage_method() -> &'static str {
    imp::USAGE_METHOD
}

/// The calling process's own usage so far (a child reports it at its release, so that start-up
/// before the release is left out of its figures).
pub fn own_usage() -> io::Result<ChildUsage> {
    imp::own_usage()
}

#[path = "policy_switches.rs"]
mod switches;
pub use switches::{
    OWN_SWITCHES_METHOD, OwnSwitches, command_switches, own_switches, parse_status,
    split_unsupported, under_wine,
};

pub use imp::{
    ChildSet, apply_process, apply_thread_for_interactivity, deadline_server, kill_group,
    process_limit, rt_throttle_settings, set_watchdog_priority, user_process_count,
};

// ------------------------------------------------------------------------------------------------
#[cfg(unix)]
mod unix_children {
    use super::ChildUsage;
    use std::io;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// rusage carries voluntary/involuntary switch counts (not on macOS).
    const SPLIT: bool = !cfg!(target_os = "macos");

    /// Children in one process group: killed together, reaped with `wait4` (rusage).
    pub struct ChildSet {
        pgid: Option<i32>,
        running: usize,
    }

    impl Default for ChildSet {
        fn default() -> Self {
            Self::new()
        }
    }

    impl ChildSet {
        pub fn new() -> ChildSet {
            ChildSet {
                pgid: None,
                running: 0,
            }
        }
        /// The process group (kill it with [`super::kill_group`]); None before the first child.
        pub fn group(&self) -> Option<i32> {
            self.pgid
        }
        pub fn running(&self) -> usize {
            self.running
        }
        pub fn spawn(&mut self, mut cmd: Command) -> io::Result<u32> {
            cmd.process_group(self.pgid.unwrap_or(0));
            let child = cmd.spawn()?;
            let pid = child.id();
            // The child is reaped with wait4 below, not through `child` (dropping a Child neither
            // kills nor waits).
            drop(child);
            if self.pgid.is_none() {
                self.pgid = Some(pid as i32);
            }
            self.running += 1;
            Ok(pid)
        }
        /// Reap every child that has ended (no waiting).
        pub fn reap(&mut self) -> io::Result<Vec<ChildUsage>> {
            let mut out = Vec::new();
            let Some(g) = self.pgid else { return Ok(out) };
            while self.running > 0 {
                let mut status = 0;
                // SAFETY: zeroed rusage is valid; out pointers are valid.
                let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
                let pid = unsafe { libc::wait4(-g, &mut status, libc::WNOHANG, &mut ru) };
                if pid == 0 {
                    break;
                }
                if pid < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    if e.raw_os_error() == Some(libc::ECHILD) {
                        self.running = 0;
                        break;
                    }
                    return Err(e);
                }
                self.running -= 1;
                let tv =
                    |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
                out.push(ChildUsage {
                    pid: pid as u32,
                    code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
                    user_ns: tv(ru.ru_utime),
                    sys_ns: tv(ru.ru_stime),
                    // macOS fills no switch counts in rusage: no split there (never a 0).
                    voluntary: SPLIT.then_some(ru.ru_nvcsw as u64),
                    involuntary: SPLIT.then_some(ru.ru_nivcsw as u64),
                    // Linux: KiB; macOS: bytes.
                    max_rss_bytes: Some(if cfg!(target_os = "macos") {
                        ru.ru_maxrss as u64
                    } else {
                        ru.ru_maxrss as u64 * 1024
                    }),
                });
            }
            Ok(out)
        }
        /// Kill the whole group (SIGKILL) and reap everything.
        pub fn kill_and_reap(&mut self) {
            if let Some(g) = self.pgid {
                super::kill_group(g);
                while self.running > 0 {
                    let mut status = 0;
                    // SAFETY: valid out pointer; null rusage allowed.
                    let pid = unsafe { libc::wait4(-g, &mut status, 0, std::ptr::null_mut()) };
                    if pid < 0 {
                        if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                            continue;
                        }
                        break;
                    }
                    self.running -= 1;
                }
                self.running = 0;
            }
        }
    }

    impl Drop for ChildSet {
        fn drop(&mut self) {
            if self.running > 0 {
                self.kill_and_reap();
            }
        }
    }

    pub fn own_usage() -> io::Result<ChildUsage> {
        // SAFETY: zeroed rusage is valid; valid out pointer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Ok(ChildUsage {
            pid: std::process::id(),
            code: None,
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            voluntary: SPLIT.then_some(ru.ru_nvcsw as u64),
            involuntary: SPLIT.then_some(ru.ru_nivcsw as u64),
            max_rss_bytes: None,
        })
    }

    pub fn kill_group(pgid: i32) {
        if pgid > 0 {
            // SAFETY: plain signal to a process group we created.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }

    pub fn process_limit() -> Option<u64> {
        // SAFETY: valid out pointer.
        let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut r) } != 0 {
            return None;
        }
        (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "linux")]
mod imp {
    pub use super::unix_children::{ChildSet, kill_group, own_usage, process_limit};
    use super::*;
    use crate::platform::realtime::{Policy, SchedRequest, apply_sched, read_sched};

    pub const USAGE_METHOD: &str = "wait4 rusage of each child (user, system time, voluntary and involuntary context switches of all its threads)";

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

    fn request(spec: &PolicySpec) -> io::Result<SchedRequest> {
        let policy = match spec.name {
            PolicyName::Other => Policy::Other,
            PolicyName::Batch => Policy::Batch,
            PolicyName::Idle => Policy::Idle,
            PolicyName::Fifo => Policy::Fifo,
            PolicyName::Rr => Policy::Rr,
            PolicyName::Deadline => Policy::Deadline,
            n => {
                return Err(crate::platform::unsupported(&format!(
                    "no '{}' policy on Linux (a Windows priority class or a macOS QoS class)",
                    n.name()
                )));
            }
        };
        Ok(SchedRequest {
            policy: Some(policy),
            priority: spec.priority,
            nice: spec.nice,
            slice_ns: spec.slice_ns,
            dl_runtime_ns: spec.runtime_ns,
            dl_deadline_ns: spec.deadline_ns,
            dl_period_ns: spec.period_ns,
        })
    }

    /// Apply to the calling (single-threaded) process: sched_setattr, then read back with
    /// sched_getattr / sched_getscheduler and sched_rr_get_interval.
    pub fn apply_process(spec: &PolicySpec) -> io::Result<Applied> {
        let req = request(spec)?;
        apply_sched(&req).map_err(|e| {
            if spec.name == PolicyName::Deadline && e.raw_os_error() == Some(libc::EBUSY) {
                io::Error::other(format!(
                    "SCHED_DEADLINE admission control refused runtime {} ns / period {} ns (EBUSY: \
                     the total bandwidth would exceed the limit)",
                    spec.runtime_ns.unwrap_or(0),
                    spec.period_ns.unwrap_or(0)
                ))
            } else {
                e
            }
        })?;
        let r = read_sched()?;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out pointer; pid 0 = caller.
        let rr = (unsafe { libc::sched_rr_get_interval(0, &mut ts) } == 0)
            .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        Ok(Applied {
            rr_interval_ns: if r.policy == "rr" { rr } else { None },
            policy: r.policy,
            priority: r.priority,
            nice: r.nice,
            runtime_ns: r.runtime_ns.filter(|&v| v > 0),
            deadline_ns: r.deadline_ns,
            period_ns: r.period_ns,
            downgraded: None,
        })
    }

    pub fn apply_thread_for_interactivity(req: &SchedRequest) -> io::Result<()> {
        apply_sched(req)
    }

    /// Put the calling thread (the study's watchdog) at SCHED_FIFO `priority`.
    pub fn set_watchdog_priority(priority: i32) -> io::Result<()> {
        apply_sched(&SchedRequest {
            policy: Some(Policy::Fifo),
            priority: Some(priority),
            ..Default::default()
        })
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(target_os = "macos")]
mod imp {
    pub use super::unix_children::{ChildSet, kill_group, own_usage, process_limit};
    use super::*;
    use crate::platform::realtime::{Policy, SchedRequest};

    pub const USAGE_METHOD: &str = "wait4 rusage of each child (user, system time; its switch counts are 0 on macOS, so not used: the total comes from the child's own proc_pidinfo)";

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
    pub fn user_process_count() -> Option<u64> {
        None
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

    fn set_time_constraint(spec: &PolicySpec) -> io::Result<()> {
        let period = spec.period_ns.unwrap_or(10_000_000);
        let comp = spec.runtime_ns.unwrap_or(period / 2);
        let constraint = spec.deadline_ns.unwrap_or(period);
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

    fn read_back() -> Applied {
        let (mut q, mut rel) = (0u32, 0);
        // SAFETY: valid out pointers.
        unsafe { pthread_get_qos_class_np(libc::pthread_self(), &mut q, &mut rel) };
        // SAFETY: plain call.
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        Applied {
            policy: if time_constraint_active() {
                "time-constraint".into()
            } else {
                qos_name(q)
            },
            nice: Some(nice),
            ..Default::default()
        }
    }

    pub fn apply_process(spec: &PolicySpec) -> io::Result<Applied> {
        let qos = match spec.name {
            PolicyName::Other => Some(QOS_DEFAULT),
            PolicyName::QosInteractive => Some(QOS_USER_INTERACTIVE),
            PolicyName::QosInitiated => Some(QOS_USER_INITIATED),
            PolicyName::QosUtility => Some(QOS_UTILITY),
            PolicyName::QosBackground => Some(QOS_BACKGROUND),
            PolicyName::TimeConstraint => None,
            n => {
                return Err(crate::platform::unsupported(&format!(
                    "no '{}' policy on macOS (threads get QoS classes or the Mach time-constraint policy)",
                    n.name()
                )));
            }
        };
        if let Some(n) = spec.nice {
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
            None => set_time_constraint(spec)?,
        }
        Ok(read_back())
    }

    pub fn apply_thread_for_interactivity(req: &SchedRequest) -> io::Result<()> {
        let name = match req.policy.unwrap_or(Policy::Other) {
            Policy::Other => PolicyName::Other,
            Policy::Batch => PolicyName::QosUtility,
            Policy::Idle => PolicyName::QosBackground,
            Policy::Deadline => PolicyName::TimeConstraint,
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
        let mut s = PolicySpec::new(name);
        s.runtime_ns = req.dl_runtime_ns;
        s.deadline_ns = req.dl_deadline_ns;
        s.period_ns = req.dl_period_ns;
        apply_process(&s).map(|_| ())
    }

    pub fn set_watchdog_priority(_priority: i32) -> io::Result<()> {
        set_time_constraint(&PolicySpec {
            period_ns: Some(10_000_000),
            runtime_ns: Some(1_000_000),
            deadline_ns: Some(10_000_000),
            ..PolicySpec::new(PolicyName::TimeConstraint)
        })
    }
}

// ------------------------------------------------------------------------------------------------
#[cfg(windows)]
mod imp {
    use super::*;
    use crate::platform::realtime::{Policy, SchedRequest};
    use std::os::windows::io::AsRawHandle;
    use std::process::{Child, Command};
    use windows_sys::Win32::Foundation::{FILETIME, HANDLE};
    use windows_sys::Win32::System::Threading::{
        ABOVE_NORMAL_PRIORITY_CLASS, BELOW_NORMAL_PRIORITY_CLASS, GetCurrentProcess,
        GetCurrentThread, GetPriorityClass, GetProcessTimes, GetThreadPriority,
        HIGH_PRIORITY_CLASS, IDLE_PRIORITY_CLASS, NORMAL_PRIORITY_CLASS, REALTIME_PRIORITY_CLASS,
        SetPriorityClass, SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL, THREAD_PRIORITY_IDLE,
        THREAD_PRIORITY_NORMAL, THREAD_PRIORITY_TIME_CRITICAL,
    };

    pub const USAGE_METHOD: &str = "GetProcessTimes of each child (user, kernel time); the total context switches from the child's own reading, no voluntary/involuntary split";

    pub fn rt_throttle_settings() -> (Option<i64>, Option<i64>) {
        (None, None)
    }
    pub fn deadline_server() -> bool {
        false
    }
    pub fn user_process_count() -> Option<u64> {
        None
    }
    pub fn process_limit() -> Option<u64> {
        None
    }
    pub fn kill_group(_pgid: i32) {}

    fn times(h: HANDLE) -> io::Result<(u64, u64)> {
        let z = FILETIME {
            dwLowDateTime: 0,
            dwHighDateTime: 0,
        };
        let (mut a, mut b, mut k, mut u) = (z, z, z, z);
        // SAFETY: h is an open process handle; out pointers are valid.
        if unsafe { GetProcessTimes(h, &mut a, &mut b, &mut k, &mut u) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let f = |t: FILETIME| ((t.dwHighDateTime as u64) << 32 | t.dwLowDateTime as u64) * 100;
        Ok((f(u), f(k)))
    }

    pub fn own_usage() -> io::Result<ChildUsage> {
        // SAFETY: pseudo handle of the current process.
        let (user_ns, sys_ns) = times(unsafe { GetCurrentProcess() })?;
        Ok(ChildUsage {
            pid: std::process::id(),
            user_ns,
            sys_ns,
            ..Default::default()
        })
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
    pub fn apply_process(spec: &PolicySpec) -> io::Result<Applied> {
        let class = match spec.name {
            PolicyName::Other => NORMAL_PRIORITY_CLASS,
            PolicyName::Idle => IDLE_PRIORITY_CLASS,
            PolicyName::BelowNormal => BELOW_NORMAL_PRIORITY_CLASS,
            PolicyName::AboveNormal => ABOVE_NORMAL_PRIORITY_CLASS,
            PolicyName::High => HIGH_PRIORITY_CLASS,
            PolicyName::Realtime => REALTIME_PRIORITY_CLASS,
            n => {
                return Err(crate::platform::unsupported(&format!(
                    "no '{}' policy on Windows (it has priority classes: idle, below-normal, other, above-normal, high, realtime)",
                    n.name()
                )));
            }
        };
        if spec.nice.is_some() || spec.slice_ns.is_some() {
            return Err(crate::platform::unsupported(
                "no nice levels or EEVDF slices (use priority classes and --priority)",
            ));
        }
        // SAFETY: pseudo handles of the current process and thread.
        unsafe {
            if SetPriorityClass(GetCurrentProcess(), class) == 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(p) = spec.priority
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
        Ok(Applied {
            policy: class_name(got),
            priority: Some(tp),
            downgraded,
            ..Default::default()
        })
    }

    pub fn apply_thread_for_interactivity(req: &SchedRequest) -> io::Result<()> {
        let prio = match req.policy.unwrap_or(Policy::Other) {
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

    pub fn set_watchdog_priority(_priority: i32) -> io::Result<()> {
        // SAFETY: pseudo handle.
        if unsafe { SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_TIME_CRITICAL) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// A job object that kills its processes when its last handle closes (this process
    /// ending in any way, killed included): the Windows counterpart of PR_SET_PDEATHSIG.
    struct Job(HANDLE);

    impl Job {
        fn kill_on_close() -> io::Result<Job> {
            use windows_sys::Win32::System::JobObjects::{
                CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
                JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
                SetInformationJobObject,
            };
            // SAFETY: no name, default (non-inheritable) security.
            let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
            if h.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = Job(h);
            // SAFETY: zeroed is a valid "no limits" structure; size is its size.
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let ok = unsafe {
                SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                    std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                )
            };
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: our own handle, closed once.
            unsafe { windows_sys::Win32::Foundation::CloseHandle(self.0) };
        }
    }

    // SAFETY: a job handle may be used from any thread.
    unsafe impl Send for Job {}

    /// Children kept as handles, all in one kill-on-close job object (a killed parent takes
    /// them along); killed one by one (TerminateProcess through `Child::kill`).
    #[derive(Default)]
    pub struct ChildSet {
        children: Vec<Child>,
        job: Option<Job>,
    }

    impl ChildSet {
        pub fn new() -> ChildSet {
            ChildSet::default()
        }
        /// Close the job handle without killing anything first: what the system does when this
        /// process ends (the job then kills the children). For tests.
        #[doc(hidden)]
        pub fn close_job(&mut self) {
            self.job = None;
        }
        pub fn group(&self) -> Option<i32> {
            None
        }
        pub fn running(&self) -> usize {
            self.children.len()
        }
        pub fn spawn(&mut self, mut cmd: Command) -> io::Result<u32> {
            use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
            if self.job.is_none() {
                self.job = Some(Job::kill_on_close().map_err(|e| {
                    io::Error::other(format!("creating a kill-on-close job object: {e}"))
                })?);
            }
            let mut c = cmd.spawn()?;
            let pid = c.id();
            let job = self.job.as_ref().map_or(std::ptr::null_mut(), |j| j.0);
            // SAFETY: both handles are open (c owns the process handle).
            if unsafe { AssignProcessToJobObject(job, c.as_raw_handle() as HANDLE) } == 0 {
                let e = io::Error::last_os_error();
                let _ = c.kill();
                let _ = c.wait();
                return Err(io::Error::other(format!(
                    "putting child {pid} in the job object: {e}"
                )));
            }
            self.children.push(c);
            Ok(pid)
        }
        pub fn reap(&mut self) -> io::Result<Vec<ChildUsage>> {
            let mut out = Vec::new();
            let mut i = 0;
            while i < self.children.len() {
                match self.children[i].try_wait()? {
                    Some(status) => {
                        let c = self.children.swap_remove(i);
                        // The handle is still open (c owns it).
                        let (user_ns, sys_ns) = times(c.as_raw_handle() as HANDLE)?;
                        out.push(ChildUsage {
                            pid: c.id(),
                            code: status.code(),
                            user_ns,
                            sys_ns,
                            ..Default::default()
                        });
                    }
                    None => i += 1,
                }
            }
            Ok(out)
        }
        pub fn kill_and_reap(&mut self) {
            for mut c in self.children.drain(..) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    impl Drop for ChildSet {
        fn drop(&mut self) {
            self.kill_and_reap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in PolicyName::ALL {
            assert_eq!(PolicyName::parse(p.name()).unwrap(), p);
        }
        assert!(PolicyName::parse("cfs").is_err());
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
    fn capacity_decision_checks_nproc_and_memory() {
        assert!(capacity_decision(1000, Some(4096), Some(100), Some(16 << 30), 4 << 20).is_ok());
        let e = capacity_decision(1000, Some(1024), Some(100), None, 4 << 20).unwrap_err();
        assert!(e.contains("ulimit -u"), "{e}");
        let e = capacity_decision(1000, None, None, Some(1 << 30), 4 << 20).unwrap_err();
        assert!(e.contains("MiB"), "{e}");
    }

    /// Each policy read back as requested, on a thread of its own (Linux applies to the calling
    /// thread); FIFO/RR need root (CAP_SYS_NICE).
    #[cfg(target_os = "linux")]
    #[test]
    fn linux_policies_read_back() {
        let root = unsafe { libc::geteuid() } == 0;
        let cases: Vec<PolicySpec> = vec![
            PolicySpec::new(PolicyName::Batch),
            PolicySpec::new(PolicyName::Idle),
            PolicySpec {
                nice: Some(7),
                ..PolicySpec::new(PolicyName::Other)
            },
            PolicySpec {
                priority: Some(10),
                ..PolicySpec::new(PolicyName::Fifo)
            },
            PolicySpec {
                priority: Some(10),
                ..PolicySpec::new(PolicyName::Rr)
            },
        ];
        for spec in cases {
            if spec.name.is_realtime() && !root {
                crate::testing::not_run(
                    "linux_policies_read_back (fifo/rr)",
                    "real-time policies need root (CAP_SYS_NICE)",
                );
                continue;
            }
            let s = spec.clone();
            let a = std::thread::spawn(move || apply_process(&s))
                .join()
                .unwrap()
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name.name()));
            assert_eq!(a.policy, spec.name.name());
            if let Some(n) = spec.nice {
                assert_eq!(a.nice, Some(n));
            }
            match spec.name {
                PolicyName::Fifo => assert_eq!(a.priority, Some(10)),
                PolicyName::Rr => assert!(a.rr_interval_ns.unwrap() > 0, "{a:?}"),
                _ => assert_eq!(a.rr_interval_ns, None),
            }
        }
        // A Windows class has no Linux mapping: unsupported, with the reason.
        let e = apply_process(&PolicySpec::new(PolicyName::High)).unwrap_err();
        assert!(e.to_string().starts_with("unsupported on Linux: "), "{e}");
    }

    /// Priority classes read back (run under Wine in CI); REALTIME may come back as HIGH, marked.
    #[cfg(windows)]
    #[test]
    fn windows_priority_classes_read_back() {
        for p in [
            PolicyName::Idle,
            PolicyName::BelowNormal,
            PolicyName::AboveNormal,
            PolicyName::High,
            PolicyName::Realtime,
        ] {
            let a = apply_process(&PolicySpec::new(p)).unwrap();
            if p == PolicyName::Realtime && a.policy == "high" {
                assert!(a.downgraded.is_some(), "{a:?}");
            } else {
                assert_eq!(a.policy, p.name());
            }
        }
        assert_eq!(
            apply_process(&PolicySpec::new(PolicyName::Other))
                .unwrap()
                .policy,
            "other"
        );
        let e = apply_process(&PolicySpec::new(PolicyName::Fifo)).unwrap_err();
        assert!(e.to_string().starts_with("unsupported on Windows: "), "{e}");
    }
}
