//! Human-readable `system show` output: aligned `key: value` lines with units.

use super::{Environment, Finding, Level, Machine, Notes};

/// Bytes with binary units: "512 B", "32 KiB", "23.5 GiB" (integral values print without decimals).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    if unit == 0 {
        return format!("{bytes} B");
    }
    let div = 1u64 << (10 * unit);
    if bytes.is_multiple_of(div) {
        format!("{} {}", bytes / div, UNITS[unit])
    } else {
        format!("{:.1} {}", bytes as f64 / div as f64, UNITS[unit])
    }
}

/// A CPU list in kernel syntax: [0, 1, 2, 3, 8] → "0-3,8"; empty → "none".
pub fn format_cpu_list(cpus: &[u32]) -> String {
    if cpus.is_empty() {
        return "none".into();
    }
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut start = sorted[0];
    let mut prev = start;
    for &c in &sorted[1..] {
        if c == prev + 1 {
            prev = c;
            continue;
        }
        parts.push(range(start, prev));
        start = c;
        prev = c;
    }
    parts.push(range(start, prev));
    parts.join(",")
}

fn range(a: u32, b: u32) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

fn mhz(v: f64) -> String {
    format!("{v:.0} MHz")
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

struct Section<'a> {
    title: &'static str,
    notes: &'a Notes,
    rows: Vec<(String, String)>,
}

impl<'a> Section<'a> {
    fn new(title: &'static str, notes: &'a Notes) -> Self {
        Section {
            title,
            notes,
            rows: Vec::new(),
        }
    }

    fn row(&mut self, key: &str, value: impl Into<String>) {
        self.rows.push((key.to_string(), value.into()));
    }

    /// A value, or "unknown" plus the note filed under `note_key`.
    fn opt(&mut self, key: &str, value: Option<String>, note_key: &str) {
        let v = value.unwrap_or_else(|| self.unknown(note_key));
        self.row(key, v);
    }

    fn unknown(&self, note_key: &str) -> String {
        match self.notes.get(note_key) {
            // "not applicable on macos", "not supported on macos (...)", "not exposed on macos"
            Some(n) if n.starts_with("not ") && !n.starts_with("not yet") => n.clone(),
            Some(n) => format!("unknown ({n})"),
            None => "unknown".into(),
        }
    }
}

fn write_sections(sections: &[Section]) -> String {
    let width = sections
        .iter()
        .flat_map(|s| s.rows.iter().map(|(k, _)| crate::units::width(k)))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for s in sections {
        out.push_str(s.title);
        out.push('\n');
        for (k, v) in &s.rows {
            let pad = width - crate::units::width(k);
            out.push_str(&format!("  {k}:{:pad$} {v}\n", ""));
        }
    }
    out
}

/// The two records as text: a "Machine" and an "Environment" block of aligned `key: value` lines.
pub fn render_text(m: &Machine, e: &Environment) -> String {
    let mut s = Section::new("Machine", &m.notes);
    machine_rows(&mut s, m);
    let mut t = Section::new("Environment", &e.notes);
    environment_rows(&mut t, e, m.cpu.logical_cpus);
    write_sections(&[s, t])
}

fn machine_rows(s: &mut Section, m: &Machine) {
    identity_rows(s, m);
    cpu_rows(s, &m.cpu);
    cache_rows(s, m);
    memory_and_system_rows(s, m);
    kernel_rows(s, m);
    s.opt("workdir", m.workdir.as_ref().map(workdir_text), "workdir");
    s.opt("cgroup", m.cgroup.as_ref().map(cgroup_text), "cgroup");
}

/// os, kernel, arch, hostname.
fn identity_rows(s: &mut Section, m: &Machine) {
    let os = match (&m.os_name, &m.os_version) {
        (Some(n), _) => n.clone(),
        (None, Some(v)) => format!("{} {v}", m.os),
        (None, None) => m.os.clone(),
    };
    s.row("os", os);
    let kernel = match (&m.kernel_release, &m.kernel_version) {
        (Some(r), Some(v)) => Some(format!("{r} ({v})")),
        (Some(r), None) => Some(r.clone()),
        (None, Some(v)) => Some(v.clone()),
        (None, None) => None,
    };
    s.opt("kernel", kernel, "kernel");
    s.row("arch", m.arch.clone());
    s.opt("hostname", m.hostname.clone(), "hostname");
    s.opt("machine id", m.machine_id.clone(), "machine_id");
}

/// `parts` joined with ", ", or None when there are none.
fn joined(parts: Vec<String>) -> Option<String> {
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// cpu, cpu id, cpus, smt, frequency.
fn cpu_rows(s: &mut Section, c: &super::Cpu) {
    s.opt("cpu", c.model_name.clone(), "cpu.model_name");
    let id = [
        c.vendor.clone(),
        c.family.map(|f| format!("family {f}")),
        c.model.map(|x| format!("model {x}")),
        c.stepping.map(|x| format!("stepping {x}")),
        c.microcode.as_ref().map(|x| format!("microcode {x}")),
    ];
    s.opt(
        "cpu id",
        joined(id.into_iter().flatten().collect()),
        "cpu.vendor",
    );
    let cpus = [
        c.logical_cpus.map(|n| format!("{n} logical")),
        c.physical_cores.map(|n| format!("{n} cores")),
        c.sockets
            .map(|n| format!("{n} socket{}", if n == 1 { "" } else { "s" })),
    ];
    s.opt(
        "cpus",
        joined(cpus.into_iter().flatten().collect()),
        "cpu.topology",
    );
    let smt = match (c.smt_active, &c.smt_control) {
        (Some(a), Some(ctl)) => Some(format!("{} (control: {ctl})", if a { "on" } else { "off" })),
        (Some(a), None) => Some(if a { "on" } else { "off" }.to_string()),
        (None, Some(ctl)) => Some(format!("control: {ctl}")),
        (None, None) => None,
    };
    s.opt("smt", smt, "cpu.smt");
    let freq = [
        c.nominal_mhz.map(|v| format!("nominal {}", mhz(v))),
        c.max_mhz.map(|v| format!("max {}", mhz(v))),
        c.reported_mhz.map(|v| format!("reported {}", mhz(v))),
    ];
    s.opt(
        "frequency",
        joined(freq.into_iter().flatten().collect()),
        "cpu.nominal_mhz",
    );
}

/// One row per cache level and kind ("unknown" when none was read).
fn cache_rows(s: &mut Section, m: &Machine) {
    if m.caches.is_empty() {
        s.row("caches", s.unknown("caches"));
    }
    for cache in &m.caches {
        let kind = match cache.kind {
            super::CacheKind::Data => "d",
            super::CacheKind::Instruction => "i",
            super::CacheKind::Unified => "",
        };
        let size = cache.size_bytes.map_or("unknown size".into(), format_bytes);
        let shared = match cache.shared_by_cpus {
            Some(1) => ", per CPU".to_string(),
            Some(n) => format!(", shared by {n} CPUs"),
            None => String::new(),
        };
        let line = cache
            .line_size_bytes
            .map(|l| format!(", {l} B lines"))
            .unwrap_or_default();
        s.row(
            &format!("cache L{}{kind}", cache.level),
            format!("{size}{shared}{line}"),
        );
    }
}

/// memory, page size, system, virtualization.
fn memory_and_system_rows(s: &mut Section, m: &Machine) {
    s.opt(
        "memory",
        m.memory_total_bytes.map(format_bytes),
        "memory_total_bytes",
    );
    s.opt(
        "page size",
        m.page_size_bytes.map(format_bytes),
        "page_size_bytes",
    );
    let system = match (&m.system_vendor, &m.system_product) {
        (Some(v), Some(p)) => Some(format!("{v} {p}")),
        (Some(v), None) => Some(v.clone()),
        (None, Some(p)) => Some(p.clone()),
        (None, None) => None,
    };
    if system.is_some() || m.notes.contains_key("system") {
        s.opt("system", system, "system");
    }
    let v = &m.virtualization;
    let virt = match (v.virtualized, &v.vendor) {
        (Some(true), Some(name)) => Some(format!(
            "{name}{}",
            v.vendor_source
                .as_deref()
                .map(|src| format!(" (from {src})"))
                .unwrap_or_default()
        )),
        (Some(true), None) => Some("yes (hypervisor unknown)".into()),
        (Some(false), _) => Some("none detected".into()),
        (None, _) => None,
    };
    let virt = match (virt, v.free_page_reporting) {
        (Some(t), Some(true)) => Some(format!(
            "{t}; returns free memory to its host (virtio-balloon free page reporting)"
        )),
        (t, _) => t,
    };
    s.opt("virtualization", virt, "virtualization");
}

/// clocksource, tsc, preemption, mitigations.
fn kernel_rows(s: &mut Section, m: &Machine) {
    let cs = m
        .clocksource
        .as_ref()
        .map(|c| match &m.clocksources_available {
            Some(av) if !av.is_empty() => format!("{c} (available: {})", av.join(" ")),
            _ => c.clone(),
        });
    s.opt("clocksource", cs, "clocksource");
    let t = &m.tsc;
    if t.constant.is_some() || t.nonstop.is_some() || t.known_freq.is_some() {
        let f = |name: &str, v: Option<bool>| v.map(|b| format!("{name} {}", yes_no(b)));
        let parts: Vec<String> = [
            f("constant", t.constant),
            f("nonstop", t.nonstop),
            f("known freq", t.known_freq),
        ]
        .into_iter()
        .flatten()
        .collect();
        s.row("tsc", parts.join(", "));
    }
    let pre = m.preemption.as_ref().map(|p| match &m.preemption_source {
        Some(src) => format!("{p} (from {src})"),
        None => p.clone(),
    });
    s.opt("preemption", pre, "preemption");
    s.opt(
        "mitigations",
        m.mitigations.as_ref().map(mitigations_text),
        "mitigations",
    );
}

fn mitigations_text(x: &super::Mitigations) -> String {
    let mut v = format!("{} vulnerable", x.vulnerable);
    if !x.vulnerable_names.is_empty() {
        v.push_str(&format!(" ({})", x.vulnerable_names.join(", ")));
    }
    v.push_str(&format!(
        ", {} mitigated, {} not affected",
        x.mitigated, x.not_affected
    ));
    if x.other > 0 {
        v.push_str(&format!(", {} unknown", x.other));
    }
    if let Some(c) = &x.cmdline {
        v.push_str(&format!("; mitigations={c}"));
    }
    v
}

fn workdir_text(w: &super::Workdir) -> String {
    let mut v = format!(
        "{}: {}",
        w.path,
        w.fs_type.as_deref().unwrap_or("unknown fs")
    );
    if let Some(d) = &w.device {
        v.push_str(&format!(" on {d}"));
    }
    if let Some(mp) = &w.mount_point {
        v.push_str(&format!(" at {mp}"));
    }
    match w.rotational {
        Some(true) => v.push_str(", rotational"),
        Some(false) => v.push_str(", non-rotational"),
        None => {}
    }
    v
}

fn cgroup_text(g: &super::Cgroup) -> String {
    let mut parts = Vec::new();
    if let Some(h) = &g.hierarchy {
        parts.push(h.clone());
    }
    if let Some(p) = &g.path {
        parts.push(p.clone());
    }
    let cpu = match (&g.cpu_max, g.cpu_limit_cpus) {
        (Some(raw), Some(n)) => format!("cpu.max {raw} ({n:.2} CPUs)"),
        (Some(raw), None) => format!("cpu.max {raw}"),
        _ => "cpu.max unknown".into(),
    };
    let mem = match (&g.memory_max, g.memory_max_bytes) {
        (_, Some(b)) => format!("memory.max {}", format_bytes(b)),
        (Some(raw), None) => format!("memory.max {raw}"),
        _ => "memory.max unknown".into(),
    };
    format!("{}; {cpu}; {mem}", parts.join(" "))
}

fn environment_rows(s: &mut Section, e: &Environment, logical: Option<u32>) {
    s.row(
        "taken at",
        e.taken_at
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    );
    cpu_setting_rows(s, e);
    load_rows(s, e, logical);
    memory_setting_rows(s, e);
    privilege_rows(s, e);
}

/// governor, turbo/boost, pstate, isolated and nohz_full CPUs, aslr.
fn cpu_setting_rows(s: &mut Section, e: &Environment) {
    s.opt(
        "governor",
        e.governors.as_deref().map(governors_text),
        "governors",
    );
    let boost = e.boost.map(|b| {
        let mut v = if b { "on" } else { "off" }.to_string();
        if let Some(src) = &e.boost_source {
            v.push_str(&format!(" (from {src})"));
        }
        v
    });
    s.opt("turbo/boost", boost, "boost");
    if let Some(p) = &e.pstate_status {
        s.row("pstate", p.clone());
    }
    s.opt(
        "isolated cpus",
        e.isolated_cpus.as_deref().map(format_cpu_list),
        "isolated_cpus",
    );
    s.opt(
        "nohz_full cpus",
        e.nohz_full_cpus.as_deref().map(format_cpu_list),
        "nohz_full_cpus",
    );
    let aslr = e.aslr.map(|a| match a {
        0 => "0 (off)".to_string(),
        1 => "1 (partial)".to_string(),
        2 => "2 (full)".to_string(),
        x => x.to_string(),
    });
    s.opt("aslr", aslr, "aslr");
}

/// One governor for all policies, or each policy's.
fn governors_text(g: &[super::Governor]) -> String {
    let first = g.first().and_then(|x| x.governor.clone());
    let driver = g
        .first()
        .and_then(|x| x.driver.clone())
        .map(|d| format!(", driver {d}"))
        .unwrap_or_default();
    if g.iter().all(|x| x.governor == first) {
        format!(
            "{} (all {} policies{driver})",
            first.as_deref().unwrap_or("unknown"),
            g.len()
        )
    } else {
        g.iter()
            .map(|x| format!("{}={}", x.policy, x.governor.as_deref().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// load average, cpu pressure, cpu busy, steal, processes.
fn load_rows(s: &mut Section, e: &Environment, logical: Option<u32>) {
    let load = e.load_avg.as_ref().map(|l| {
        let mut v = format!("{:.2} {:.2} {:.2} (1/5/15 min)", l.one, l.five, l.fifteen);
        if let Some(n) = logical {
            v.push_str(&format!(" on {n} CPUs"));
        }
        v
    });
    s.opt("load average", load, "load_avg");
    let psi = e.cpu_pressure.as_ref().map(|p| {
        let mut v = format!(
            "some {:.2}% avg10, {:.2}% avg60",
            p.some_avg10, p.some_avg60
        );
        if let (Some(a), Some(b)) = (p.full_avg10, p.full_avg60) {
            v.push_str(&format!("; full {a:.2}% avg10, {b:.2}% avg60"));
        }
        v
    });
    s.opt("cpu pressure", psi, "cpu_pressure");
    cpu_time_rows(s, e.cpu_time.as_ref());
    let procs = e.procs_running.map(|r| match e.procs_blocked {
        Some(b) => format!("{r} running, {b} blocked"),
        None => format!("{r} running"),
    });
    s.opt("processes", procs, "procs_running");
}

/// cpu busy and steal, over the sampling window and since boot.
fn cpu_time_rows(s: &mut Section, ct: Option<&super::CpuTime>) {
    let window = ct.and_then(|c| {
        let ms = c.window_ms?;
        let ticks = c
            .window_ticks
            .map(|t| format!(", {t} ticks"))
            .unwrap_or_default();
        Some(format!("over {ms:.0} ms{ticks}"))
    });
    let busy = ct.and_then(|c| c.window_busy_pct).map(|b| {
        let mut v = format!("{b:.1}%");
        if let Some(w) = &window {
            v.push_str(&format!(" {w}"));
        }
        if let Some(io) = ct.and_then(|c| c.window_iowait_pct) {
            v.push_str(&format!("; iowait {io:.1}%"));
        }
        v
    });
    s.opt("cpu busy", busy, "cpu_time");
    let steal = ct.and_then(|c| {
        let mut parts = Vec::new();
        if let Some(w) = c.window_steal_pct {
            parts.push(format!(
                "{w:.1}% {}",
                window.as_deref().unwrap_or("in window")
            ));
        }
        if let Some(b) = c.steal_pct_since_boot {
            parts.push(format!("{b:.2}% since boot"));
        }
        if let Some(t) = c.steal_ticks_total {
            parts.push(format!("{t} ticks total"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    });
    s.opt("steal", steal, "cpu_time");
}

/// memory available, swap, transparent hugepages, timer slack, affinity.
fn memory_setting_rows(s: &mut Section, e: &Environment) {
    s.opt(
        "memory available",
        e.mem_available_bytes.map(format_bytes),
        "mem_available_bytes",
    );
    let swap = e.swap_total_bytes.map(|t| match e.swap_free_bytes {
        Some(f) if t > 0 => format!("{} total, {} free", format_bytes(t), format_bytes(f)),
        _ if t == 0 => "none".to_string(),
        _ => format!("{} total", format_bytes(t)),
    });
    s.opt("swap", swap, "swap_total_bytes");
    let thp = e.thp.as_ref().map(|t| match &e.thp_defrag {
        Some(d) => format!("{t} (defrag {d})"),
        None => t.clone(),
    });
    s.opt("transparent hugepages", thp, "thp");
    s.opt(
        "timer slack",
        e.timer_slack_ns.map(|n| format!("{n} ns")),
        "timer_slack_ns",
    );
    let aff = e
        .affinity
        .as_ref()
        .map(|a| format!("{} ({} CPUs)", format_cpu_list(a), a.len()));
    s.opt("affinity", aff, "affinity");
}

/// realtime, rt limits, user.
fn privilege_rows(s: &mut Section, e: &Environment) {
    let rt = &e.realtime;
    let rt_line = rt.permitted.map(|p| {
        if p {
            "permitted (SCHED_FIFO 1 succeeded)".to_string()
        } else {
            let err = rt.error.as_deref().unwrap_or("error");
            match super::explain_rt_denial(rt, e.is_root) {
                Some((reason, _)) => format!("denied ({err}): {reason}"),
                None => format!("denied ({err})"),
            }
        }
    });
    s.opt("realtime", rt_line, "realtime");
    if let Some(lim) = joined(rt_limits(rt)) {
        s.row("rt limits", lim);
    }
    let user = e.uid.map(|u| match e.is_root {
        Some(true) => format!("uid {u} (root)"),
        _ => format!("uid {u}"),
    });
    s.opt("user", user, "uid");
}

/// The limits on real-time scheduling that were read.
fn rt_limits(rt: &super::Realtime) -> Vec<String> {
    let mut lim = Vec::new();
    if let (Some(a), Some(b)) = (rt.rlimit_rtprio_soft, rt.rlimit_rtprio_hard) {
        let f = |v: u64| {
            if v == u64::MAX {
                "unlimited".to_string()
            } else {
                v.to_string()
            }
        };
        lim.push(format!("RLIMIT_RTPRIO {}/{}", f(a), f(b)));
    }
    if let Some(c) = rt.cap_sys_nice {
        lim.push(format!("CAP_SYS_NICE {}", yes_no(c)));
    }
    if let Some(r) = rt.sched_rt_runtime_us {
        let period = rt
            .sched_rt_period_us
            .map(|p| format!(" of {p} µs"))
            .unwrap_or_default();
        lim.push(format!("sched_rt_runtime {r} µs{period}"));
    }
    if let Some(r) = rt.cgroup_rt_runtime_us {
        lim.push(format!("cgroup cpu.rt_runtime {r} µs"));
    }
    lim
}

/// Findings as text, one block per finding: "warning  governor: ...\n  fix: ...".
pub fn render_findings(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let level = match f.level {
            Level::Warning => "warning",
            Level::Info => "info",
        };
        out.push_str(&format!("{level:<7} [{}] {}\n", f.topic, f.message));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("        fix: {fix}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    #[test]
    fn bytes() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(32 * 1024), "32 KiB");
        assert_eq!(format_bytes(32 << 20), "32 MiB");
        assert_eq!(format_bytes(24_684_084 * 1024), "23.5 GiB");
        assert_eq!(format_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[3, 1, 2, 7, 9, 10]), "1-3,7,9-10");
        assert_eq!(format_cpu_list(&[]), "none");
    }

    #[test]
    fn text_is_aligned_and_has_units() {
        let mut notes = Notes::new();
        notes.insert("governors".into(), "no cpufreq (VM?)".into());
        notes.insert("thp".into(), "not applicable on macos".into());
        let m = Machine {
            os: "linux".into(),
            arch: "x86_64".into(),
            os_name: Some("Debian GNU/Linux 12 (bookworm)".into()),
            cpu: Cpu {
                model_name: Some("AMD EPYC".into()),
                logical_cpus: Some(2),
                ..Default::default()
            },
            caches: vec![Cache {
                level: 1,
                kind: CacheKind::Data,
                size_bytes: Some(32 * 1024),
                shared_by_cpus: Some(1),
                line_size_bytes: Some(64),
            }],
            memory_total_bytes: Some(16 << 30),
            ..Default::default()
        };
        let e = Environment {
            timer_slack_ns: Some(50_000),
            affinity: Some(vec![0, 1]),
            cpu_time: Some(CpuTime {
                window_ms: Some(200.0),
                window_steal_pct: Some(2.5),
                window_busy_pct: Some(12.0),
                ..Default::default()
            }),
            notes,
            ..Default::default()
        };
        let text = render_text(&m, &e);
        assert!(text.starts_with("Machine\n"));
        assert!(text.contains("\nEnvironment\n"));
        assert!(text.contains("32 KiB, per CPU, 64 B lines"), "{text}");
        assert!(text.contains("16 GiB"));
        assert!(text.contains("50000 ns"));
        assert!(text.contains("2.5% over 200 ms"));
        assert!(text.contains("unknown (no cpufreq (VM?))"));
        assert!(text.contains("transparent hugepages: not applicable on macos"));
        assert!(text.contains("0-1 (2 CPUs)"));
        // Every value starts in the same column.
        let cols: Vec<usize> = text
            .lines()
            .filter(|l| l.starts_with("  "))
            .map(|l| {
                let colon = l.find(':').unwrap();
                colon + l[colon + 1..].find(|c: char| c != ' ').unwrap() + 1
            })
            .collect();
        assert!(cols.windows(2).all(|w| w[0] == w[1]), "{text}");
    }

    #[test]
    fn findings_text() {
        let f = vec![Finding {
            level: Level::Warning,
            topic: "governor".into(),
            message: "not performance".into(),
            fix: Some("sudo cpupower frequency-set -g performance".into()),
        }];
        let t = render_findings(&f);
        assert!(t.starts_with("warning [governor] not performance\n"));
        assert!(t.contains("fix: sudo cpupower"));
    }
}
