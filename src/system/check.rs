//! Hygiene check: plain advice about what makes measurements on this machine noisy or
//! unrepresentative (pyperf's `system show` in spirit). Never changes the system.

use super::{Environment, Finding, Level, Machine, Realtime};

/// Load average above this many times the CPU count means a noisy machine.
const LOAD_PER_CPU: f64 = 0.1;
/// Busy % of the whole machine (over the sampling window) above which it is noisy.
const BUSY_PCT: f64 = 10.0;
/// PSI cpu "some" avg10 above this (%) means tasks are waiting for a CPU.
const PSI_SOME_PCT: f64 = 5.0;
/// Steal above this (%) means a shared VM.
const STEAL_PCT: f64 = 2.0;
/// The kernel's default timer slack.
const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

fn finding(level: Level, topic: &str, message: String, fix: Option<&str>) -> Finding {
    Finding {
        level,
        topic: topic.to_string(),
        message,
        fix: fix.map(str::to_string),
    }
}

/// Advice for the machine/environment pair, warnings first. A pure function of the two records.
/// What every rule reads: the two records and a few facts derived from them.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    m: &'a Machine,
    e: &'a Environment,
    linux: bool,
    x86: bool,
    cpus: u32,
}

/// The hygiene rules, each a small function of the records; [`check`] runs them all.
const RULES: &[fn(&Ctx, &mut Vec<Finding>)] = &[
    compatibility_layer,
    frequency,
    topology,
    activity,
    privileges,
    virtualization,
    cgroup,
];

/// Advice for the machine/environment pair, warnings first. A pure function of the two records.
pub fn check(m: &Machine, e: &Environment) -> Vec<Finding> {
    let c = Ctx {
        m,
        e,
        linux: m.os == "linux",
        x86: matches!(m.arch.as_str(), "x86_64" | "x86"),
        cpus: m.cpu.logical_cpus.unwrap_or(1).max(1),
    };
    let mut out = Vec::new();
    for rule in RULES {
        rule(&c, &mut out);
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.level));
    out
}

/// A compatibility layer (Wine) runs another OS's code with this one's scheduler and timers.
fn compatibility_layer(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::Warning;
    let Ctx { m, .. } = *c;
    // A compatibility layer (Wine) runs Windows code with another OS's scheduler and timers.
    if let Some(layer) = m.notes.get("compatibility_layer") {
        out.push(finding(
            Warning,
            "compatibility_layer",
            layer.clone(),
            Some("measure Windows on Windows; use the native build on this OS"),
        ));
    }
}

/// Frequency scaling: governors and boost.
fn frequency(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::{Info, Warning};
    let Ctx { e, linux, .. } = *c;
    // Frequency scaling.
    match &e.governors {
        Some(govs) if !govs.is_empty() => {
            let bad: Vec<String> = govs
                .iter()
                .filter(|g| g.governor.as_deref() != Some("performance"))
                .map(|g| format!("{}={}", g.policy, g.governor.as_deref().unwrap_or("?")))
                .collect();
            if !bad.is_empty() {
                out.push(finding(
                    Warning,
                    "governor",
                    format!(
                        "CPU frequency governor is not 'performance' ({}): the clock follows the \
                         load, which adds noise and slows short benchmarks",
                        bad.join(", ")
                    ),
                    Some("sudo cpupower frequency-set -g performance"),
                ));
            }
        }
        _ if linux => out.push(finding(
            Info,
            "governor",
            "no cpufreq interface (VM?): CPU frequency is controlled elsewhere (host or firmware) \
             and cannot be checked"
                .into(),
            None,
        )),
        _ => {}
    }
    if e.boost == Some(true) {
        let fix = match e.boost_source.as_deref() {
            Some(s) if s.contains("intel_pstate") => {
                "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
            }
            Some(s) if s.contains("policy") => {
                "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/policy*/boost"
            }
            _ => "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost",
        };
        out.push(finding(
            Warning,
            "turbo",
            "turbo/boost is on: the clock depends on temperature and on how many cores are \
             busy, so results vary between runs"
                .into(),
            Some(fix),
        ));
    }
}

/// Topology and isolation: SMT, isolated CPUs, affinity, ASLR.
fn topology(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::Info;
    let Ctx { m, e, cpus, .. } = *c;
    // Topology and isolation.
    if m.cpu.smt_active == Some(true) {
        out.push(finding(
            Info,
            "smt",
            "SMT (Hyper-Threading) is on: sibling threads share a core, so work on one slows \
             the other; pinned benchmarks should use one thread per core"
                .into(),
            Some("echo off | sudo tee /sys/devices/system/cpu/smt/control"),
        ));
    }
    match &e.isolated_cpus {
        Some(iso) if iso.is_empty() && cpus > 1 => out.push(finding(
            Info,
            "isolcpus",
            "no isolated CPUs: benchmarks share every CPU with the rest of the system".into(),
            Some(
                "for the lowest noise boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> \
                 and run osgauge with taskset -c <cpus>",
            ),
        )),
        Some(iso) if !iso.is_empty() => {
            if let Some(aff) = &e.affinity
                && !aff.iter().any(|c| iso.contains(c))
            {
                out.push(finding(
                    Info,
                    "isolcpus",
                    format!(
                        "CPUs {} are isolated but osgauge is not allowed to run on them",
                        super::format_cpu_list(iso)
                    ),
                    Some("run osgauge with taskset -c <isolated cpus>"),
                ));
            }
        }
        _ => {}
    }
    if let Some(aff) = &e.affinity
        && !aff.is_empty()
        && (aff.len() as u32) < cpus
    {
        out.push(finding(
            Info,
            "affinity",
            format!(
                "osgauge may run on {} of {} CPUs ({}), limited by affinity or cpuset",
                aff.len(),
                cpus,
                super::format_cpu_list(aff)
            ),
            None,
        ));
    }

    match e.aslr {
        Some(0) => out.push(finding(
            Info,
            "aslr",
            "ASLR is off: memory layout is the same in every process, which is not how \
             systems normally run"
                .into(),
            Some("echo 2 | sudo tee /proc/sys/kernel/randomize_va_space"),
        )),
        Some(_) => out.push(finding(
            Info,
            "aslr",
            "ASLR is on: memory layout differs between processes; osgauge compares independent \
             runs, which averages this out"
                .into(),
            None,
        )),
        None => {}
    }
}

/// Other work using the CPUs as a run starts, in words ("100 % busy over 200 ms, load average
/// 4.31 on 2 CPUs"), or None when the machine was quiet: the CPUs busier than [`BUSY_PCT`] over
/// the environment's sampling window, or — where the OS gives no window — a load average above
/// half the CPUs. (A load average alone is not enough where the window was quiet: it decays for
/// minutes after a previous run ended.)
pub fn busy_now(m: &Machine, e: &Environment) -> Option<String> {
    let cpus = m.cpu.logical_cpus.unwrap_or(1).max(1);
    let load = e.load_avg.as_ref().map(|l| l.one);
    let window = e
        .cpu_time
        .as_ref()
        .and_then(|c| Some((c.window_busy_pct?, c.window_ms?)));
    let busy = match window {
        Some((b, _)) => b > BUSY_PCT,
        None => load.is_some_and(|l| l > 0.5 * cpus as f64),
    };
    if !busy {
        return None;
    }
    let mut parts = Vec::new();
    if let Some((b, ms)) = window {
        parts.push(format!("{b:.0} % busy over {ms:.0} ms"));
    }
    if let Some(l) = load {
        parts.push(format!("load average {l:.2} on {cpus} CPUs"));
    }
    Some(parts.join(", "))
}

/// The share of the CPUs other work kept busy as a run starts (0..=1), when [`busy_now`] says
/// the machine was busy: the sampling window's busy share, or — without a window — the load
/// average over the CPUs, at most 1.
pub fn busy_share(m: &Machine, e: &Environment) -> Option<f64> {
    busy_now(m, e)?;
    let cpus = m.cpu.logical_cpus.unwrap_or(1).max(1) as f64;
    let window = e.cpu_time.as_ref().and_then(|c| c.window_busy_pct);
    let share = match window {
        Some(b) => b / 100.0,
        None => e.load_avg.as_ref()?.one / cpus,
    };
    Some(share.clamp(0.0, 1.0))
}

/// Other activity on the machine: load, busy time, CPU pressure, steal, free memory.
fn activity(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::{Info, Warning};
    let Ctx { m, e, cpus, .. } = *c;
    // Other activity on the machine.
    let load = e.load_avg.as_ref().map(|l| l.one);
    let busy = e.cpu_time.as_ref().and_then(|c| c.window_busy_pct);
    let load_high = load.is_some_and(|l| l > LOAD_PER_CPU * cpus as f64);
    let busy_high = busy.is_some_and(|b| b > BUSY_PCT);
    if load_high || busy_high {
        let mut parts = Vec::new();
        if let Some(l) = load {
            parts.push(format!(
                "load average {l:.2} (threshold {:.2} for {cpus} CPUs)",
                LOAD_PER_CPU * cpus as f64
            ));
        }
        if let (Some(b), Some(ms)) = (busy, e.cpu_time.as_ref().and_then(|c| c.window_ms)) {
            parts.push(format!("{b:.1}% busy over {ms:.0} ms"));
        }
        out.push(finding(
            Warning,
            "load",
            format!(
                "noisy machine: {}; other work competes with the benchmarks",
                parts.join(", ")
            ),
            Some("stop other workloads and wait for the load to settle"),
        ));
    }
    if let Some(p) = &e.cpu_pressure
        && p.some_avg10 > PSI_SOME_PCT
    {
        out.push(finding(
            Warning,
            "cpu_pressure",
            format!(
                "CPU pressure: runnable tasks waited for a CPU {:.1}% of the last 10 s",
                p.some_avg10
            ),
            Some("stop other workloads"),
        ));
    }
    if let Some(ct) = &e.cpu_time {
        match (ct.window_steal_pct, ct.steal_pct_since_boot) {
            (Some(w), _) if w > STEAL_PCT => out.push(finding(
                Warning,
                "steal",
                format!(
                    "shared VM: the hypervisor took {w:.1}% of CPU time over {:.0} ms (steal)",
                    ct.window_ms.unwrap_or(0.0)
                ),
                Some("use a dedicated host or an instance type with dedicated cores"),
            )),
            (_, Some(b)) if b > STEAL_PCT => out.push(finding(
                Info,
                "steal",
                format!("the hypervisor has taken {b:.1}% of CPU time since boot (steal)"),
                None,
            )),
            _ => {}
        }
    }
    if let (Some(avail), Some(total)) = (e.mem_available_bytes, m.memory_total_bytes)
        && total > 0
        && (avail as f64) < 0.1 * total as f64
    {
        out.push(finding(
            Warning,
            "memory",
            format!(
                "only {} of {} memory available: reclaim or swapping will distort results",
                super::format_bytes(avail),
                super::format_bytes(total)
            ),
            Some("stop memory-hungry programs"),
        ));
    }
}

/// Privileges and timers: real-time denial, timer slack, preemption model.
fn privileges(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::{Info, Warning};
    let Ctx { m, e, .. } = *c;
    // Privileges and timers.
    if let Some((reason, fix)) = explain_rt_denial(&e.realtime, e.is_root) {
        out.push(finding(
            Warning,
            "realtime",
            format!("real-time scheduling is not permitted: {reason}; RT latency tests will be skipped or run at normal priority"),
            fix.as_deref(),
        ));
    }
    if e.timer_slack_ns == Some(DEFAULT_TIMER_SLACK_NS) {
        out.push(finding(
            Info,
            "timer_slack",
            "timer slack is the default 50000 ns, so sleeps may overshoot by up to 50 µs; \
             osgauge lowers it for its latency tests"
                .into(),
            None,
        ));
    }
    if let Some(p @ ("none" | "voluntary")) = m.preemption.as_deref() {
        out.push(finding(
            Info,
            "preemption",
            format!(
                "kernel preemption model is '{p}': expect higher wake-up latency than with \
                 'full' or PREEMPT_RT"
            ),
            None,
        ));
    }
}

/// Virtualization and clocks: hypervisor, clocksource, TSC.
fn virtualization(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::{Info, Warning};
    let Ctx { m, x86, .. } = *c;
    // Virtualization and clocks.
    if m.virtualization.virtualized == Some(true) {
        let who = m
            .virtualization
            .vendor
            .as_deref()
            .map(|v| format!(" ({v})"))
            .unwrap_or_default();
        out.push(finding(
            Info,
            "virtualization",
            format!(
                "running in a virtual machine{who}: timings include hypervisor effects and \
                 depend on the host's load"
            ),
            None,
        ));
    }
    if m.virtualization.free_page_reporting == Some(true) {
        out.push(finding(
            Warning,
            "free_page_reporting",
            crate::system::FREE_PAGE_REPORTING_EFFECT.to_string(),
            Some(
                "run on a host without free page reporting (QEMU: -device \
                 virtio-balloon,free-page-reporting=off); or hold it off in this guest for the \
                 run, as root, where the kernel accepts an order above its largest \
                 (/proc/buddyinfo): echo 11 > /sys/module/page_reporting/parameters/\
                 page_reporting_order, and write back the value it had afterwards; or compare \
                 runs whose memory was in the same state",
            ),
        ));
    }
    if x86 && let Some(cs) = m.clocksource.as_deref() {
        let tsc_available = m
            .clocksources_available
            .as_ref()
            .is_some_and(|v| v.iter().any(|c| c == "tsc"));
        let fix = if tsc_available {
            "echo tsc | sudo tee /sys/devices/system/clocksource/clocksource0/current_clocksource"
        } else {
            "the kernel does not offer tsc (marked unstable?); check `dmesg | grep -i clocksource`"
        };
        match cs {
            "tsc" => {}
            "kvm-clock" | "hyperv_clocksource_tsc_page" => out.push(finding(
                Info,
                "clocksource",
                format!(
                    "clock source is '{cs}', a paravirtual clock: clock reads are fast (vDSO) \
                     but slightly slower than tsc"
                ),
                Some(fix),
            )),
            other => out.push(finding(
                Warning,
                "clocksource",
                format!(
                    "clock source is '{other}', not tsc: each clock read may cost a system call \
                     (microseconds), inflating short timings"
                ),
                Some(fix),
            )),
        }
    }
    if x86 && (m.tsc.constant == Some(false) || m.tsc.nonstop == Some(false)) {
        out.push(finding(
            Info,
            "tsc",
            "the TSC is not invariant (constant_tsc/nonstop_tsc missing): cycle-based timing \
             is unreliable; osgauge reports ns from the OS clock"
                .into(),
            None,
        ));
    }
}

/// Control-group limits on CPU and memory.
fn cgroup(c: &Ctx, out: &mut Vec<Finding>) {
    use Level::{Info, Warning};
    let Ctx { m, .. } = *c;
    if let Some(cg) = &m.cgroup {
        if let Some(c) = cg.cpu_limit_cpus {
            out.push(finding(
                Warning,
                "cgroup",
                format!(
                    "our cgroup has a CPU quota of {c:.2} CPUs (cpu.max {}): exceeding it throttles \
                     the whole group, which shows up as latency spikes",
                    cg.cpu_max.as_deref().unwrap_or("?")
                ),
                Some("run osgauge outside the limited cgroup or raise its cpu.max"),
            ));
        }
        if let Some(b) = cg.memory_max_bytes {
            out.push(finding(
                Info,
                "cgroup",
                format!(
                    "our cgroup has a memory limit of {}",
                    super::format_bytes(b)
                ),
                None,
            ));
        }
    }
}

/// The checks [`check`] could not make because this OS's record lacks what they read (the
/// platform back end does not read it yet, or reading it failed): (topic, why). Checks whose
/// subject does not exist on the OS (e.g. a load average on Windows, isolated CPUs outside
/// Linux) are not listed: there is nothing to check. Empty: every check ran.
pub fn unchecked(e: &Environment) -> Vec<(String, String)> {
    let why = |field: &str| -> Option<String> {
        let n = e.notes.get(field)?;
        [
            "not yet implemented",
            "not read",
            "not exposed",
            "could not",
        ]
        .iter()
        .any(|k| n.contains(k))
        .then(|| n.clone())
    };
    let mut out = Vec::new();
    let mut add = |topic: &str, missing: bool, field: &str| {
        if missing && let Some(w) = why(field) {
            out.push((topic.to_string(), w));
        }
    };
    add("governor / power plan", e.governors.is_none(), "governors");
    add(
        "realtime permission",
        e.realtime.permitted.is_none(),
        "realtime",
    );
    add("busy / steal", e.cpu_time.is_none(), "cpu_time");
    add("load", e.load_avg.is_none(), "load_avg");
    add(
        "memory",
        e.mem_available_bytes.is_none(),
        "mem_available_bytes",
    );
    add("aslr", e.aslr.is_none(), "aslr");
    out
}

/// Why real-time scheduling was refused, and what would fix it; None unless the attempt failed.
/// Uses only the fields of the record, so it works on stored records too.
pub fn explain_rt_denial(rt: &Realtime, is_root: Option<bool>) -> Option<(String, Option<String>)> {
    if rt.permitted != Some(false) {
        return None;
    }
    let error = rt.error.as_deref().unwrap_or("unknown error");
    if error != "EPERM" {
        return Some((
            format!("sched_setscheduler(SCHED_FIFO) failed with {error}"),
            None,
        ));
    }
    let privileged = is_root == Some(true)
        || rt.cap_sys_nice == Some(true)
        || rt.rlimit_rtprio_soft.is_some_and(|v| v >= 1);
    Some(if rt.cgroup_rt_runtime_us == Some(0) {
        (
            "cgroup with no RT budget (cpu.rt_runtime_us is 0 for our cgroup)".into(),
            Some(
                "give the cgroup an RT budget (write e.g. 950000 to its cpu.rt_runtime_us, \
                 parents first) or run osgauge from a cgroup that has one"
                    .into(),
            ),
        )
    } else if rt.sched_rt_runtime_us == Some(0) {
        (
            "kernel.sched_rt_runtime_us is 0 (no RT budget system-wide)".into(),
            Some("sudo sysctl kernel.sched_rt_runtime_us=950000".into()),
        )
    } else if !privileged {
        (
            format!(
                "not root, no CAP_SYS_NICE, and RLIMIT_RTPRIO is {}",
                rt.rlimit_rtprio_soft
                    .map_or("unknown".to_string(), |v| v.to_string())
            ),
            Some(
                "allow RT priorities: add '<user> - rtprio 99' to /etc/security/limits.conf and \
                 log in again, or run with sudo, or grant CAP_SYS_NICE \
                 (sudo setcap cap_sys_nice+ep $(which osgauge))"
                    .into(),
            ),
        )
    } else {
        (
            "EPERM although privileged: probably a container or security policy \
             (seccomp, SELinux/AppArmor) forbids it"
                .into(),
            None,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    fn linux_machine() -> Machine {
        Machine {
            os: "linux".into(),
            arch: "x86_64".into(),
            cpu: Cpu {
                logical_cpus: Some(8),
                physical_cores: Some(8),
                smt_active: Some(false),
                ..Default::default()
            },
            memory_total_bytes: Some(16 << 30),
            clocksource: Some("tsc".into()),
            clocksources_available: Some(vec!["tsc".into(), "hpet".into()]),
            tsc: Tsc {
                constant: Some(true),
                nonstop: Some(true),
                known_freq: Some(true),
            },
            preemption: Some("full".into()),
            virtualization: Virtualization {
                virtualized: Some(false),
                hypervisor_flag: Some(false),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// A quiet, tuned environment: should give no warnings.
    fn quiet_env() -> Environment {
        Environment {
            governors: Some(
                (0..8)
                    .map(|i| Governor {
                        policy: format!("policy{i}"),
                        cpus: vec![i],
                        governor: Some("performance".into()),
                        driver: Some("acpi-cpufreq".into()),
                    })
                    .collect(),
            ),
            boost: Some(false),
            boost_source: Some("cpufreq/boost".into()),
            isolated_cpus: Some(vec![4, 5, 6, 7]),
            aslr: Some(2),
            load_avg: Some(LoadAvg {
                one: 0.05,
                five: 0.1,
                fifteen: 0.1,
                runnable: Some(1),
                total: Some(300),
            }),
            cpu_pressure: Some(Psi {
                some_avg10: 0.0,
                ..Default::default()
            }),
            cpu_time: Some(CpuTime {
                steal_ticks_total: Some(0),
                steal_pct_since_boot: Some(0.0),
                window_ms: Some(200.0),
                window_ticks: Some(160),
                window_steal_pct: Some(0.0),
                window_busy_pct: Some(1.0),
                window_iowait_pct: Some(0.0),
            }),
            mem_available_bytes: Some(12 << 30),
            timer_slack_ns: Some(1),
            affinity: Some((0..8).collect()),
            realtime: Realtime {
                permitted: Some(true),
                ..Default::default()
            },
            uid: Some(1000),
            is_root: Some(false),
            ..Default::default()
        }
    }

    fn topics(f: &[Finding], level: Level) -> Vec<&str> {
        f.iter()
            .filter(|x| x.level == level)
            .map(|x| x.topic.as_str())
            .collect()
    }

    #[test]
    fn checks_an_os_record_cannot_support_are_listed_not_passed() {
        // A complete Linux record: every check ran.
        assert!(unchecked(&quiet_env()).is_empty());
        // A Windows-like record: no load average (none exists: not listed), realtime and power
        // plan not read (listed, with the record's reason).
        let mut e = quiet_env();
        e.load_avg = None;
        e.governors = None;
        e.realtime = Realtime::default();
        e.notes
            .insert("load_avg".into(), "Windows keeps no load average".into());
        e.notes.insert(
            "governors".into(),
            "not read on windows (the power plan is set with powercfg)".into(),
        );
        e.notes
            .insert("realtime".into(), "not yet implemented on windows".into());
        let u = unchecked(&e);
        let topics: Vec<&str> = u.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(topics, vec!["governor / power plan", "realtime permission"]);
        assert!(u[1].1.contains("not yet implemented"));
        // No "not yet implemented" finding pretends to be a check any more.
        let mut m = linux_machine();
        m.os = "windows".into();
        assert!(
            check(&m, &e)
                .iter()
                .all(|f| !f.message.contains("not yet implemented"))
        );
    }

    #[test]
    fn a_compatibility_layer_is_a_warning() {
        let mut m = linux_machine();
        m.os = "windows".into();
        m.notes.insert(
            "compatibility_layer".into(),
            "running under Wine 9.0: behaviour is Windows', timings are not".into(),
        );
        let f = check(&m, &quiet_env());
        assert!(topics(&f, Level::Warning).contains(&"compatibility_layer"));
    }

    #[test]
    fn quiet_machine_has_no_warnings() {
        let f = check(&linux_machine(), &quiet_env());
        assert!(topics(&f, Level::Warning).is_empty(), "{f:#?}");
        // ASLR info is always given on Linux.
        assert!(topics(&f, Level::Info).contains(&"aslr"));
        assert!(!topics(&f, Level::Info).contains(&"governor"));
    }

    #[test]
    fn powersave_governor_and_turbo_warn() {
        let mut e = quiet_env();
        e.governors.as_mut().unwrap()[3].governor = Some("powersave".into());
        e.boost = Some(true);
        e.boost_source = Some("intel_pstate/no_turbo".into());
        let f = check(&linux_machine(), &e);
        let g = f.iter().find(|x| x.topic == "governor").unwrap();
        assert_eq!(g.level, Level::Warning);
        assert!(g.message.contains("policy3=powersave"));
        assert_eq!(
            g.fix.as_deref(),
            Some("sudo cpupower frequency-set -g performance")
        );
        let t = f.iter().find(|x| x.topic == "turbo").unwrap();
        assert!(t.fix.as_deref().unwrap().contains("no_turbo"));
    }

    #[test]
    fn no_cpufreq_is_info() {
        let mut e = quiet_env();
        e.governors = None;
        let f = check(&linux_machine(), &e);
        let g = f.iter().find(|x| x.topic == "governor").unwrap();
        assert_eq!(g.level, Level::Info);
        assert!(g.message.contains("VM?"));
    }

    #[test]
    fn steal_warns() {
        let mut e = quiet_env();
        e.cpu_time.as_mut().unwrap().window_steal_pct = Some(5.0);
        let f = check(&linux_machine(), &e);
        let s = f.iter().find(|x| x.topic == "steal").unwrap();
        assert_eq!(s.level, Level::Warning);
        assert!(s.message.contains("5.0%"));
        // Since-boot steal alone is only info.
        let mut e = quiet_env();
        e.cpu_time.as_mut().unwrap().steal_pct_since_boot = Some(3.0);
        let f = check(&linux_machine(), &e);
        assert_eq!(
            f.iter().find(|x| x.topic == "steal").unwrap().level,
            Level::Info
        );
    }

    #[test]
    fn noisy_machine_warns() {
        let mut e = quiet_env();
        e.load_avg.as_mut().unwrap().one = 1.2; // > 0.8 for 8 CPUs
        let f = check(&linux_machine(), &e);
        assert!(topics(&f, Level::Warning).contains(&"load"));
        let mut e = quiet_env();
        e.cpu_time.as_mut().unwrap().window_busy_pct = Some(25.0);
        let f = check(&linux_machine(), &e);
        let l = f.iter().find(|x| x.topic == "load").unwrap();
        assert!(l.message.contains("25.0% busy over 200 ms"));
        let mut e = quiet_env();
        e.cpu_pressure.as_mut().unwrap().some_avg10 = 12.0;
        assert!(topics(&check(&linux_machine(), &e), Level::Warning).contains(&"cpu_pressure"));
    }

    /// The start-of-run note that the run will take longer: said when other work kept the CPUs
    /// busy in the sampling window, not for a load average a previous run left behind.
    #[test]
    fn busy_now_is_the_window_not_a_decaying_load_average() {
        let m = linux_machine();
        assert_eq!(busy_now(&m, &quiet_env()), None);
        let mut e = quiet_env();
        e.load_avg.as_mut().unwrap().one = 1.2; // left by the run before; the window is idle
        assert_eq!(busy_now(&m, &e), None);
        e.cpu_time.as_mut().unwrap().window_busy_pct = Some(100.0);
        let said = busy_now(&m, &e).unwrap();
        assert!(said.contains("100 % busy over 200 ms"), "{said}");
        assert!(said.contains("load average 1.20 on 8 CPUs"), "{said}");
        // No window (an OS without one): a load average above half the CPUs.
        let mut e = quiet_env();
        e.cpu_time = None;
        e.load_avg.as_mut().unwrap().one = 4.5;
        assert_eq!(busy_now(&m, &e).unwrap(), "load average 4.50 on 8 CPUs");
        assert_eq!(busy_share(&m, &e), Some(4.5 / 8.0));
        e.load_avg.as_mut().unwrap().one = 3.5;
        assert_eq!(busy_now(&m, &e), None);
    }

    #[test]
    fn realtime_denials_explained() {
        let mut e = quiet_env();
        e.realtime = Realtime {
            permitted: Some(false),
            errno: Some(1),
            error: Some("EPERM".into()),
            rlimit_rtprio_soft: Some(0),
            rlimit_rtprio_hard: Some(0),
            cap_sys_nice: Some(false),
            sched_rt_runtime_us: Some(950_000),
            sched_rt_period_us: Some(1_000_000),
            ..Default::default()
        };
        let f = check(&linux_machine(), &e);
        let r = f.iter().find(|x| x.topic == "realtime").unwrap();
        assert_eq!(r.level, Level::Warning);
        assert!(r.message.contains("RLIMIT_RTPRIO is 0"), "{}", r.message);
        assert!(r.fix.as_deref().unwrap().contains("rtprio"));

        // Root, but the cgroup has no RT budget.
        e.is_root = Some(true);
        e.realtime.cap_sys_nice = Some(true);
        e.realtime.cgroup_rt_runtime_us = Some(0);
        let (reason, _) = explain_rt_denial(&e.realtime, e.is_root).unwrap();
        assert!(reason.contains("cgroup with no RT budget"));

        e.realtime.cgroup_rt_runtime_us = None;
        let (reason, fix) = explain_rt_denial(&e.realtime, e.is_root).unwrap();
        assert!(reason.contains("although privileged"));
        assert!(fix.is_none());

        e.realtime.permitted = Some(true);
        assert!(explain_rt_denial(&e.realtime, e.is_root).is_none());
    }

    #[test]
    fn a_vm_returning_free_memory_to_its_host_is_a_warning_with_a_fix() {
        let e = quiet_env();
        let mut m = linux_machine();
        let topic = |m: &Machine| {
            check(m, &e)
                .into_iter()
                .find(|x| x.topic == "free_page_reporting")
        };
        assert!(topic(&m).is_none());
        m.virtualization.free_page_reporting = Some(false);
        assert!(topic(&m).is_none());
        m.virtualization.free_page_reporting = Some(true);
        let f = topic(&m).expect("a finding");
        assert_eq!(f.level, Level::Warning);
        assert!(f.message.contains("free page reporting"), "{}", f.message);
        assert!(f.fix.unwrap().contains("free-page-reporting=off"));
    }

    #[test]
    fn clocksource_levels() {
        let e = quiet_env();
        let mut m = linux_machine();
        m.clocksource = Some("hpet".into());
        let f = check(&m, &e);
        let c = f.iter().find(|x| x.topic == "clocksource").unwrap();
        assert_eq!(c.level, Level::Warning);
        assert!(c.fix.as_deref().unwrap().contains("echo tsc"));
        m.clocksource = Some("kvm-clock".into());
        let f = check(&m, &e);
        assert_eq!(
            f.iter().find(|x| x.topic == "clocksource").unwrap().level,
            Level::Info
        );
        // ARM's arch_sys_counter is the normal choice there.
        m.arch = "aarch64".into();
        m.clocksource = Some("arch_sys_counter".into());
        assert!(!check(&m, &e).iter().any(|x| x.topic == "clocksource"));
    }

    #[test]
    fn infos_for_smt_vm_slack_isolcpus_and_order() {
        let mut m = linux_machine();
        m.cpu.smt_active = Some(true);
        m.virtualization.virtualized = Some(true);
        m.virtualization.vendor = Some("KVM".into());
        let mut e = quiet_env();
        e.timer_slack_ns = Some(50_000);
        e.isolated_cpus = Some(vec![]);
        e.cpu_time.as_mut().unwrap().window_steal_pct = Some(10.0);
        let f = check(&m, &e);
        let infos = topics(&f, Level::Info);
        for t in ["smt", "virtualization", "timer_slack", "isolcpus", "aslr"] {
            assert!(infos.contains(&t), "{t} missing in {f:#?}");
        }
        assert!(f.iter().any(|x| x.message.contains("(KVM)")));
        // Warnings come first.
        assert_eq!(f[0].level, Level::Warning);
        assert!(f.windows(2).all(|w| w[0].level >= w[1].level));
    }

    #[test]
    fn cgroup_quota_warns() {
        let mut m = linux_machine();
        m.cgroup = Some(Cgroup {
            cpu_max: Some("150000 100000".into()),
            cpu_limit_cpus: Some(1.5),
            ..Default::default()
        });
        let f = check(&m, &quiet_env());
        let c = f.iter().find(|x| x.topic == "cgroup").unwrap();
        assert_eq!(c.level, Level::Warning);
        assert!(c.message.contains("1.50 CPUs"));
    }

    #[test]
    fn an_empty_macos_record_is_reported_as_unchecked_not_ready() {
        let m = Machine {
            os: "macos".into(),
            arch: "aarch64".into(),
            cpu: Cpu {
                logical_cpus: Some(8),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut e = Environment::default();
        e.notes
            .insert("realtime".into(), "not yet implemented on macos".into());
        e.notes
            .insert("governors".into(), "not exposed on macos".into());
        // Nothing was found, but that is not "ready": the two checks are listed as not made.
        assert!(check(&m, &e).is_empty());
        assert_eq!(unchecked(&e).len(), 2);
    }
}
