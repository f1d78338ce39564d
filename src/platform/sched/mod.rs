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

// Each OS's mapping in its own file (`os` is this OS's).
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

pub use os::{
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
