//! Pure parsers for the text the platform back ends read (procfs, sysfs, os-release, ...).
//! No I/O here: every function takes the file's text, so each is tested with fixture strings.

use std::collections::{BTreeMap, BTreeSet};

use super::{LoadAvg, Psi};

/// Summary of `/proc/cpuinfo`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuInfo {
    /// Number of `processor` entries.
    pub processors: u32,
    pub vendor: Option<String>,
    pub model_name: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    pub microcode: Option<String>,
    /// "cpu MHz" of the first processor.
    pub mhz: Option<f64>,
    /// Flags ("flags" on x86, "Features" on ARM) of the first processor.
    pub flags: Vec<String>,
    /// Distinct (physical id, core id) pairs, when every processor lists both.
    pub physical_cores: Option<u32>,
    /// Distinct physical ids, when every processor lists one.
    pub sockets: Option<u32>,
    /// ARM "CPU implementer" / "CPU part" (hex strings) of the first processor.
    pub arm_implementer: Option<String>,
    pub arm_part: Option<String>,
}

impl CpuInfo {
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// Parses `/proc/cpuinfo` (x86 and ARM layouts).
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    // (physical id, core id) per processor entry.
    let mut topo: Vec<(Option<String>, Option<String>)> = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        if key == "processor" {
            info.processors += 1;
            topo.push((None, None));
            continue;
        }
        let first = info.processors <= 1;
        match key {
            "physical id" => {
                if let Some(t) = topo.last_mut() {
                    t.0 = Some(value.to_string());
                }
            }
            "core id" => {
                if let Some(t) = topo.last_mut() {
                    t.1 = Some(value.to_string());
                }
            }
            _ if !first => {}
            "vendor_id" => set_once(&mut info.vendor, value),
            "model name" => set_once(&mut info.model_name, value),
            "cpu family" => set_once_num(&mut info.family, value),
            "model" => set_once_num(&mut info.model, value),
            "stepping" => set_once_num(&mut info.stepping, value),
            "microcode" => set_once(&mut info.microcode, value),
            "cpu MHz" if info.mhz.is_none() => info.mhz = value.parse().ok(),
            "flags" | "Features" if info.flags.is_empty() => {
                info.flags = value.split_whitespace().map(str::to_string).collect();
            }
            "CPU implementer" => set_once(&mut info.arm_implementer, value),
            "CPU part" => set_once(&mut info.arm_part, value),
            _ => {}
        }
    }
    if !topo.is_empty() && topo.iter().all(|(p, c)| p.is_some() && c.is_some()) {
        let cores: BTreeSet<_> = topo.iter().collect();
        let sockets: BTreeSet<_> = topo.iter().map(|(p, _)| p).collect();
        info.physical_cores = Some(cores.len() as u32);
        info.sockets = Some(sockets.len() as u32);
    }
    info
}

fn set_once(slot: &mut Option<String>, value: &str) {
    if slot.is_none() && !value.is_empty() {
        *slot = Some(value.to_string());
    }
}

fn set_once_num(slot: &mut Option<u32>, value: &str) {
    if slot.is_none() {
        *slot = value.parse().ok();
    }
}

/// Name of an ARM "CPU implementer" code ("0x41" → "ARM").
pub fn arm_implementer_name(code: &str) -> Option<&'static str> {
    let code = u32::from_str_radix(code.trim().trim_start_matches("0x"), 16).ok()?;
    Some(match code {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x53 => "Samsung",
        0x56 => "Marvell",
        0x61 => "Apple",
        0x69 => "Intel",
        0x6d => "Microsoft",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// Frequency in MHz from a model name such as "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz".
pub fn mhz_from_model_name(name: &str) -> Option<f64> {
    let (_, tail) = name.rsplit_once('@')?;
    let tail = tail.trim();
    let lower = tail.to_ascii_lowercase();
    let (number, factor) = if let Some(n) = lower.strip_suffix("ghz") {
        (n, 1000.0)
    } else if let Some(n) = lower.strip_suffix("mhz") {
        (n, 1.0)
    } else {
        return None;
    };
    let v: f64 = number.trim().parse().ok()?;
    (v > 0.0).then_some(v * factor)
}

/// Parses `/proc/meminfo` into bytes per key ("kB" values are multiplied by 1024; values without a
/// unit, such as `HugePages_Total`, are kept as they are).
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let Some(Ok(n)) = parts.next().map(str::parse::<u64>) else {
            continue;
        };
        let v = match parts.next() {
            Some("kB") => n.saturating_mul(1024),
            _ => n,
        };
        out.insert(key.trim().to_string(), v);
    }
    out
}

/// Parses `/proc/loadavg`: "0.63 0.38 0.15 1/85 5814".
pub fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut it = text.split_whitespace();
    let one = it.next()?.parse().ok()?;
    let five = it.next()?.parse().ok()?;
    let fifteen = it.next()?.parse().ok()?;
    let (runnable, total) = match it.next().and_then(|s| s.split_once('/')) {
        Some((r, t)) => (r.parse().ok(), t.parse().ok()),
        None => (None, None),
    };
    Some(LoadAvg {
        one,
        five,
        fifteen,
        runnable,
        total,
    })
}

/// Parses a PSI file (`/proc/pressure/cpu`):
/// "some avg10=0.44 avg60=4.91 avg300=3.10 total=14879843\nfull avg10=0.00 ...".
pub fn parse_psi(text: &str) -> Option<Psi> {
    let mut some: Option<(f64, f64, f64)> = None;
    let mut full: Option<(f64, f64)> = None;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let kind = it.next();
        let mut vals: BTreeMap<&str, f64> = BTreeMap::new();
        for kv in it {
            if let Some((k, v)) = kv.split_once('=')
                && let Ok(v) = v.parse()
            {
                vals.insert(k, v);
            }
        }
        let (Some(a10), Some(a60)) = (vals.get("avg10"), vals.get("avg60")) else {
            continue;
        };
        match kind {
            Some("some") => {
                some = Some((*a10, *a60, vals.get("avg300").copied().unwrap_or(f64::NAN)));
            }
            Some("full") => full = Some((*a10, *a60)),
            _ => {}
        }
    }
    let (some_avg10, some_avg60, some_avg300) = some?;
    Some(Psi {
        some_avg10,
        some_avg60,
        some_avg300: if some_avg300.is_nan() {
            0.0
        } else {
            some_avg300
        },
        full_avg10: full.map(|f| f.0),
        full_avg60: full.map(|f| f.1),
    })
}

/// The `total=` of the `some` line of a PSI file: µs some task was stalled since boot.
pub fn psi_some_total_us(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some"))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The aggregate "cpu" line of `/proc/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// All time (guest time is already included in user/nice, so it is not added again).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// Time spent running something: user + nice + system + irq + softirq.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
}

/// What `/proc/stat` says that we use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    pub cpu: CpuTicks,
    /// The `cpuN` lines: the online CPUs.
    pub cpus: u64,
    pub procs_running: Option<u32>,
    pub procs_blocked: Option<u32>,
}

/// Parses `/proc/stat` (the aggregate "cpu" line and procs_running / procs_blocked).
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let mut cpu = None;
    let mut out = ProcStat::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("cpu") => {
                let v: Vec<u64> = it.map_while(|s| s.parse().ok()).collect();
                if v.len() < 4 {
                    return None;
                }
                let g = |i: usize| v.get(i).copied().unwrap_or(0);
                cpu = Some(CpuTicks {
                    user: g(0),
                    nice: g(1),
                    system: g(2),
                    idle: g(3),
                    iowait: g(4),
                    irq: g(5),
                    softirq: g(6),
                    steal: g(7),
                });
            }
            Some(c)
                if c.strip_prefix("cpu")
                    .is_some_and(|n| n.starts_with(|d: char| d.is_ascii_digit())) =>
            {
                out.cpus += 1
            }
            Some("procs_running") => out.procs_running = it.next().and_then(|s| s.parse().ok()),
            Some("procs_blocked") => out.procs_blocked = it.next().and_then(|s| s.parse().ok()),
            _ => {}
        }
    }
    out.cpu = cpu?;
    Some(out)
}

/// The steal column of each `cpuN` line of `/proc/stat` (USER_HZ ticks), by CPU number.
pub fn per_cpu_steal_ticks(text: &str) -> std::collections::BTreeMap<usize, u64> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            let cpu = it.next()?.strip_prefix("cpu")?.parse().ok()?;
            // user nice system idle iowait irq softirq steal
            Some((cpu, it.nth(7)?.parse().ok()?))
        })
        .collect()
}

/// A kernel config option's value in a kernel config text (`CONFIG_X=y`); None where it is
/// absent or `# CONFIG_X is not set`.
pub fn kernel_config_value<'a>(text: &'a str, option: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(option)?.strip_prefix('='))
        .map(str::trim)
}

/// Percentages of CPU time between two `/proc/stat` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuWindow {
    pub ticks: u64,
    pub busy_pct: f64,
    pub steal_pct: f64,
    pub iowait_pct: f64,
}

/// Busy / steal / iowait share between two samples; None when no time elapsed.
pub fn cpu_window(before: &CpuTicks, after: &CpuTicks) -> Option<CpuWindow> {
    let total = after.total().saturating_sub(before.total());
    if total == 0 {
        return None;
    }
    let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 * 100.0 / total as f64;
    Some(CpuWindow {
        ticks: total,
        busy_pct: pct(after.busy(), before.busy()),
        steal_pct: pct(after.steal, before.steal),
        iowait_pct: pct(after.iowait, before.iowait),
    })
}

/// Parses os-release (`KEY=value`, values optionally quoted with " or ', backslash escapes).
pub fn parse_os_release(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim();
        let value = if v.len() >= 2
            && ((v.starts_with('"') && v.ends_with('"'))
                || (v.starts_with('\'') && v.ends_with('\'')))
        {
            let inner = &v[1..v.len() - 1];
            let mut s = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        s.push(n);
                    }
                } else {
                    s.push(c);
                }
            }
            s
        } else {
            v.to_string()
        };
        out.insert(k.trim().to_string(), value);
    }
    out
}

/// Parses a size such as sysfs cache sizes: "32K", "1024K", "32M", "1G", "512" (bytes).
/// K/M/G are binary (1024-based), as the kernel uses them.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return None;
    }
    let n: u64 = t[..digits_end].parse().ok()?;
    let factor = crate::units::size_unit(&t[digits_end..])?;
    n.checked_mul(factor)
}

/// Parses a kernel CPU list: "0-3,8,10-11" (or the space-separated "0 1 2" of cpufreq's
/// `affected_cpus`). An empty list, or "(null)", gives `Some(vec![])`; malformed input gives None.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let t = text.trim();
    if t.is_empty() || t == "(null)" {
        return Some(Vec::new());
    }
    let mut out = BTreeSet::new();
    for part in t.split(|c: char| c == ',' || c.is_whitespace()) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.trim().parse().ok()?;
                let b: u32 = b.trim().parse().ok()?;
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => {
                out.insert(part.parse().ok()?);
            }
        }
    }
    Some(out.into_iter().collect())
}

/// The selected entry of a sysfs choice file: "always [madvise] never" → "madvise";
/// also the debugfs style "none voluntary (full) lazy" → "full".
pub fn parse_selected(text: &str) -> Option<String> {
    for (open, close) in [('[', ']'), ('(', ')')] {
        if let Some(start) = text.find(open)
            && let Some(len) = text[start + 1..].find(close)
        {
            let v = text[start + 1..start + 1 + len].trim();
            if !v.is_empty() {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// One line of `/proc/self/cgroup`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupEntry {
    pub hierarchy: u32,
    /// Controllers of a v1 hierarchy ("cpu", "cpuacct", "name=systemd"); empty for v2.
    pub controllers: Vec<String>,
    pub path: String,
}

/// Parses `/proc/self/cgroup` ("hierarchy-ID:controller-list:cgroup-path").
pub fn parse_proc_cgroup(text: &str) -> Vec<CgroupEntry> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.splitn(3, ':');
            let hierarchy = it.next()?.trim().parse().ok()?;
            let controllers = it
                .next()?
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let path = it.next()?.to_string();
            Some(CgroupEntry {
                hierarchy,
                controllers,
                path,
            })
        })
        .collect()
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    pub major: u32,
    pub minor: u32,
    /// Root of the mount within its file system.
    pub root: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: Vec<String>,
}

/// Parses `/proc/self/mountinfo` (octal escapes such as `\040` are decoded).
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split_whitespace().collect();
            if l.len() < 5 {
                return None;
            }
            let (major, minor) = l[2].split_once(':')?;
            let mut r = right.split_whitespace();
            let fs_type = unescape_octal(r.next()?);
            let source = unescape_octal(r.next().unwrap_or(""));
            let super_options = r
                .next()
                .unwrap_or("")
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            Some(MountEntry {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
                root: unescape_octal(l[3]),
                mount_point: unescape_octal(l[4]),
                fs_type,
                source,
                super_options,
            })
        })
        .collect()
}

fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..=i + 3].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Finds the mount holding `path` on device `major:minor`: the entry with that device whose mount
/// point is the longest prefix of `path`. Falls back to the longest prefix regardless of device.
pub fn mount_for<'a>(
    mounts: &'a [MountEntry],
    path: &str,
    dev: Option<(u32, u32)>,
) -> Option<&'a MountEntry> {
    let is_prefix = |m: &MountEntry| {
        let mp = m.mount_point.as_str();
        mp == "/"
            || path == mp
            || (path.starts_with(mp) && path.as_bytes().get(mp.len()) == Some(&b'/'))
    };
    let best = |same_dev: bool| {
        mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| is_prefix(m))
            .filter(|(_, m)| !same_dev || dev == Some((m.major, m.minor)))
            // Longest mount point wins; among equals the later (over-mounting) one.
            .max_by_key(|(i, m)| (m.mount_point.len(), *i))
            .map(|(_, m)| m)
    };
    best(true).or_else(|| best(false))
}

/// The directory of a cgroup given the hierarchy's mount: the cgroup path made relative to the
/// mount's root (which differs from "/" inside containers), joined to the mount point.
pub fn cgroup_dir(mount: &MountEntry, cgroup_path: &str) -> String {
    let rel = if mount.root == "/" {
        cgroup_path
    } else {
        cgroup_path
            .strip_prefix(mount.root.as_str())
            .unwrap_or(cgroup_path)
    };
    let rel = rel.trim_matches('/');
    if rel.is_empty() {
        mount.mount_point.clone()
    } else {
        format!("{}/{}", mount.mount_point.trim_end_matches('/'), rel)
    }
}

/// CPUs allowed by a cgroup v2 `cpu.max` value ("200000 100000" → 2.0; "max 100000" → None).
pub fn cpu_max_cpus(cpu_max: &str) -> Option<f64> {
    let mut it = cpu_max.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
    (quota > 0.0 && period > 0.0).then_some(quota / period)
}

/// Converts cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us` to v2 `cpu.max` syntax.
pub fn cpu_max_from_v1(quota: &str, period: &str) -> Option<String> {
    let q: i64 = quota.trim().parse().ok()?;
    let p: u64 = period.trim().parse().ok()?;
    Some(if q < 0 {
        format!("max {p}")
    } else {
        format!("{q} {p}")
    })
}

/// Memory limit: "max" stays "max"; v1 values at or above 2^62 (the "unlimited" page-rounded
/// 2^63-1) are shown as "max". Returns (raw, bytes).
pub fn memory_max(text: &str) -> Option<(String, Option<u64>)> {
    let t = text.trim();
    if t == "max" {
        return Some(("max".into(), None));
    }
    let v: u64 = t.parse().ok()?;
    if v >= 1 << 62 {
        Some(("max".into(), None))
    } else {
        Some((v.to_string(), Some(v)))
    }
}

/// A hex field of `/proc/self/status` ("CapEff:\t000001ffffffffff").
pub fn parse_status_hex(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key)
            .then(|| u64::from_str_radix(v.trim(), 16).ok())
            .flatten()
    })
}

/// CAP_SYS_NICE is capability bit 23.
pub const CAP_SYS_NICE: u32 = 23;

/// Preemption model from `uname -v` ("#1 SMP PREEMPT_DYNAMIC ..."): "rt", "dynamic", "lazy",
/// "full"; None when the string names none (the kernel is then "none" or "voluntary").
pub fn preemption_from_uname(version: &str) -> Option<&'static str> {
    let tokens: Vec<&str> = version.split_whitespace().collect();
    if tokens.iter().any(|t| t.starts_with("PREEMPT_RT")) {
        Some("rt")
    } else if tokens.contains(&"PREEMPT_DYNAMIC") {
        Some("dynamic")
    } else if tokens.contains(&"PREEMPT_LAZY") {
        Some("lazy")
    } else if tokens.contains(&"PREEMPT") {
        Some("full")
    } else {
        None
    }
}

/// Preemption model from a kernel config (`/boot/config-<release>`): "rt", "lazy", "full",
/// "voluntary" or "none". For a PREEMPT_DYNAMIC kernel this is the default boot-time mode.
pub fn preemption_from_kconfig(config: &str) -> Option<&'static str> {
    let set = |opt: &str| config.lines().any(|l| l.trim() == format!("{opt}=y"));
    if set("CONFIG_PREEMPT_RT") {
        Some("rt")
    } else if set("CONFIG_PREEMPT_LAZY") {
        Some("lazy")
    } else if set("CONFIG_PREEMPT") {
        Some("full")
    } else if set("CONFIG_PREEMPT_VOLUNTARY") {
        Some("voluntary")
    } else if set("CONFIG_PREEMPT_NONE") {
        Some("none")
    } else {
        None
    }
}

/// Hypervisor named by DMI system vendor / product strings of well-known virtual machines;
/// None for anything else (including bare-metal cloud instances such as EC2 "*.metal").
pub fn vm_from_dmi(vendor: &str, product: &str) -> Option<&'static str> {
    let v = vendor.trim();
    let p = product.trim();
    Some(match (v, p) {
        ("QEMU", _) => "QEMU",
        (_, "KVM") => "KVM",
        (v, _) if v.starts_with("VMware") => "VMware",
        ("innotek GmbH", _) | (_, "VirtualBox") => "VirtualBox",
        ("Xen", _) => "Xen",
        ("Microsoft Corporation", "Virtual Machine") => "Hyper-V",
        (v, _) if v.starts_with("Parallels") => "Parallels",
        ("BHYVE", _) => "bhyve",
        ("Google", "Google Compute Engine") => "Google Compute Engine",
        ("Amazon EC2", p) if !p.ends_with(".metal") => "Amazon EC2",
        ("OpenStack Foundation", _) | (_, "OpenStack Nova") => "OpenStack",
        _ => return None,
    })
}

/// A `key=value` kernel parameter from `/proc/cmdline` (arguments after "--" go to init and are
/// ignored). The last occurrence wins, as in the kernel.
pub fn cmdline_param(cmdline: &str, key: &str) -> Option<String> {
    let mut found = None;
    for tok in cmdline.split_whitespace() {
        if tok == "--" {
            break;
        }
        if let Some((k, v)) = tok.split_once('=')
            && k == key
        {
            found = Some(v.trim_matches('"').to_string());
        }
    }
    found
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VulnState {
    NotAffected,
    Mitigated,
    Vulnerable,
    Other,
}

/// Classifies one file of /sys/devices/system/cpu/vulnerabilities.
pub fn classify_vulnerability(text: &str) -> VulnState {
    let t = text.trim();
    if t.starts_with("Not affected") {
        VulnState::NotAffected
    } else if t.starts_with("Vulnerable") {
        VulnState::Vulnerable
    } else if t.starts_with("Mitigation") {
        VulnState::Mitigated
    } else {
        VulnState::Other
    }
}

/// File system name for a statfs `f_type` magic number.
pub fn fs_type_name(magic: u64) -> Option<&'static str> {
    Some(match magic & 0xFFFF_FFFF {
        0xEF53 => "ext2/ext3/ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlay",
        0x6969 => "nfs",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0xCA45_1A4E => "bcachefs",
        0x7371_7368 => "squashfs",
        0xE0F5_E1E2 => "erofs",
        0x6573_5546 => "fuse",
        0xFF53_4D42 => "cifs",
        0xFE53_4D42 => "smb2",
        0x0102_1997 => "9p",
        0x4d44 => "vfat",
        0x2011_BAB0 => "exfat",
        0x5346_544e => "ntfs",
        0x7366_746e => "ntfs3",
        0x9660 => "iso9660",
        0x482b => "hfsplus",
        0x3153_464a => "jfs",
        0x5265_4973 => "reiserfs",
        0x00C3_6400 => "ceph",
        0x0116_1970 => "gfs2",
        0x3434 => "nilfs2",
        0x1501_3346 => "udf",
        0x8584_58f6 => "ramfs",
        0x9fa0 => "proc",
        0x6265_6572 => "sysfs",
        _ => return None,
    })
}

/// Linux `dev_t` → (major, minor), glibc's encoding.
pub fn dev_major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x00ff);
    (major as u32, minor as u32)
}

/// Hypervisor name from the 12-byte CPUID leaf 0x40000000 signature (EBX, ECX, EDX).
/// Unknown signatures are returned verbatim (printable characters only).
pub fn hypervisor_from_signature(sig: &[u8; 12]) -> Option<String> {
    let known = match sig {
        b"KVMKVMKVM\0\0\0" => Some("KVM"),
        b"Linux KVM Hv" => Some("KVM (Hyper-V enlightenments)"),
        b"Microsoft Hv" => Some("Hyper-V"),
        b"VMwareVMware" => Some("VMware"),
        b"XenVMMXenVMM" => Some("Xen"),
        b"TCGTCGTCGTCG" => Some("QEMU (TCG)"),
        b" lrpepyh  vr" => Some("Parallels"),
        b"VBoxVBoxVBox" => Some("VirtualBox"),
        b"bhyve bhyve " => Some("bhyve"),
        b"ACRNACRNACRN" => Some("ACRN"),
        b"QNXQVMBSQG\0\0" => Some("QNX"),
        b"Jailhouse\0\0\0" => Some("Jailhouse"),
        b"EVMMEVMMEVMM" => Some("Intel EVMM"),
        b"HAXMHAXMHAXM" => Some("Intel HAXM"),
        b"UnisysSpar64" => Some("Unisys s-Par"),
        b"SRESRESRESRE" => Some("Lockheed Martin LMHS"),
        _ => None,
    };
    if let Some(k) = known {
        return Some(k.to_string());
    }
    let raw: String = sig
        .iter()
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .map(|&b| b as char)
        .collect();
    let raw = raw.trim();
    (!raw.is_empty()).then(|| format!("unknown ({raw})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO_X86: &str = "processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
cpu MHz\t\t: 2596.130
physical id\t: 0
siblings\t: 2
core id\t\t: 0
cpu cores\t: 2
flags\t\t: fpu tsc constant_tsc nonstop_tsc hypervisor tsc_known_freq

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2000.000
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu tsc

";

    const CPUINFO_SMT: &str = "processor : 0\nphysical id : 0\ncore id : 0\n\n\
processor : 1\nphysical id : 0\ncore id : 0\n\n\
processor : 2\nphysical id : 1\ncore id : 0\n\n\
processor : 3\nphysical id : 1\ncore id : 0\n";

    const CPUINFO_ARM: &str = "processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

processor\t: 1
BogoMIPS\t: 50.00
CPU implementer\t: 0x41
CPU part\t: 0xd0c
";

    #[test]
    fn cpuinfo_x86() {
        let c = parse_cpuinfo(CPUINFO_X86);
        assert_eq!(c.processors, 2);
        assert_eq!(c.vendor.as_deref(), Some("AuthenticAMD"));
        assert_eq!(c.model_name.as_deref(), Some("AMD EPYC"));
        assert_eq!(
            (c.family, c.model, c.stepping),
            (Some(25), Some(17), Some(1))
        );
        assert_eq!(c.microcode.as_deref(), Some("0x1000065"));
        assert_eq!(c.mhz, Some(2596.13));
        assert!(c.has_flag("constant_tsc") && c.has_flag("hypervisor"));
        assert!(!c.has_flag("ht"));
        assert_eq!(c.physical_cores, Some(2));
        assert_eq!(c.sockets, Some(1));
    }

    #[test]
    fn cpuinfo_smt_two_sockets() {
        let c = parse_cpuinfo(CPUINFO_SMT);
        assert_eq!(c.processors, 4);
        assert_eq!(c.physical_cores, Some(2));
        assert_eq!(c.sockets, Some(2));
    }

    #[test]
    fn cpuinfo_arm() {
        let c = parse_cpuinfo(CPUINFO_ARM);
        assert_eq!(c.processors, 2);
        assert_eq!(c.vendor, None);
        assert_eq!(c.model_name, None);
        assert_eq!(c.arm_implementer.as_deref(), Some("0x41"));
        assert_eq!(c.arm_part.as_deref(), Some("0xd0c"));
        assert_eq!(arm_implementer_name("0x41"), Some("ARM"));
        assert_eq!(arm_implementer_name("0xff"), None);
        assert!(c.has_flag("asimd"));
        assert_eq!(c.physical_cores, None);
        assert_eq!(c.sockets, None);
    }

    #[test]
    fn model_name_mhz() {
        assert_eq!(
            mhz_from_model_name("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"),
            Some(2400.0)
        );
        assert_eq!(mhz_from_model_name("Foo @ 800MHz"), Some(800.0));
        assert_eq!(mhz_from_model_name("AMD EPYC 7B13"), None);
    }

    #[test]
    fn meminfo() {
        let m = parse_meminfo(
            "MemTotal:       24684084 kB\nMemAvailable:   24272848 kB\n\
             SwapTotal:             0 kB\nHugePages_Total:       0\nbad line\n",
        );
        assert_eq!(m["MemTotal"], 24_684_084 * 1024);
        assert_eq!(m["MemAvailable"], 24_272_848 * 1024);
        assert_eq!(m["SwapTotal"], 0);
        assert_eq!(m["HugePages_Total"], 0);
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn loadavg() {
        let l = parse_loadavg("0.63 0.38 0.15 1/85 5814\n").unwrap();
        assert_eq!((l.one, l.five, l.fifteen), (0.63, 0.38, 0.15));
        assert_eq!((l.runnable, l.total), (Some(1), Some(85)));
        assert!(parse_loadavg("").is_none());
        assert!(parse_loadavg("x y z").is_none());
    }

    #[test]
    fn psi() {
        let p = parse_psi(
            "some avg10=0.44 avg60=4.91 avg300=3.10 total=14879843\n\
             full avg10=0.01 avg60=0.02 avg300=0.00 total=0\n",
        )
        .unwrap();
        assert_eq!(
            (p.some_avg10, p.some_avg60, p.some_avg300),
            (0.44, 4.91, 3.10)
        );
        assert_eq!((p.full_avg10, p.full_avg60), (Some(0.01), Some(0.02)));
        // Older kernels: no "full" line for cpu.
        let p = parse_psi("some avg10=7.00 avg60=1.00 avg300=0.50 total=1\n").unwrap();
        assert_eq!(p.some_avg10, 7.0);
        assert_eq!(p.full_avg10, None);
        assert!(parse_psi("").is_none());
    }

    const STAT_A: &str = "cpu  8087 0 4552 95789 731 0 121 45 0 0
cpu0 3569 0 1601 49417 47 0 7 19 0 0
intr 1 2 3
ctxt 12345
procs_running 3
procs_blocked 1
";
    const STAT_B: &str = "cpu  8097 0 4557 95819 735 0 123 55 0 0\nprocs_running 1\n";

    #[test]
    fn proc_stat_and_window() {
        let a = parse_proc_stat(STAT_A).unwrap();
        assert_eq!(a.cpu.user, 8087);
        assert_eq!(a.cpu.steal, 45);
        assert_eq!(a.cpu.total(), 8087 + 4552 + 95789 + 731 + 121 + 45);
        assert_eq!((a.procs_running, a.procs_blocked), (Some(3), Some(1)));
        assert_eq!(a.cpus, 1, "one cpuN line");
        assert_eq!(
            parse_proc_stat("cpu  1 2 3 4\ncpu0 1\ncpu1 2\ncpufreq 3\nintr 5\n")
                .unwrap()
                .cpus,
            2
        );
        assert_eq!(
            psi_some_total_us("some avg10=0.44 avg60=4.91 avg300=3.10 total=14879843\n"),
            Some(14879843)
        );
        assert_eq!(psi_some_total_us("full avg10=0 total=5\n"), None);
        let b = parse_proc_stat(STAT_B).unwrap();
        let w = cpu_window(&a.cpu, &b.cpu).unwrap();
        // deltas: user 10, system 5, idle 30, iowait 4, softirq 2, steal 10 → total 61
        assert_eq!(w.ticks, 61);
        assert!((w.busy_pct - 17.0 * 100.0 / 61.0).abs() < 1e-9);
        assert!((w.steal_pct - 10.0 * 100.0 / 61.0).abs() < 1e-9);
        assert!((w.iowait_pct - 4.0 * 100.0 / 61.0).abs() < 1e-9);
        assert!(cpu_window(&a.cpu, &a.cpu).is_none());
        // Old kernels with only 4 fields.
        let old = parse_proc_stat("cpu 1 2 3 4\n").unwrap();
        assert_eq!(old.cpu.total(), 10);
        assert!(parse_proc_stat("cpu 1 2\n").is_none());
        assert!(parse_proc_stat("intr 1\n").is_none());
    }

    #[test]
    fn per_cpu_steal_and_kernel_config() {
        let m = per_cpu_steal_ticks(STAT_A);
        assert_eq!(m.len(), 1, "the aggregate line is not a CPU: {m:?}");
        assert_eq!(m[&0], 19);
        let m = per_cpu_steal_ticks("cpu 1 2 3 4 5 6 7 8\ncpu3 1 2 3 4 5 6 7 80 0 0\ncpu4 1 2\n");
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            vec![(3, 80)],
            "short lines skipped"
        );
        let cfg = "# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\n\
                   CONFIG_PARAVIRT=y\n";
        assert_eq!(
            kernel_config_value(cfg, "CONFIG_PARAVIRT_TIME_ACCOUNTING"),
            Some("y")
        );
        assert_eq!(kernel_config_value(cfg, "CONFIG_PARAVIRT"), Some("y"));
        assert_eq!(kernel_config_value(cfg, "CONFIG_IRQ_TIME_ACCOUNTING"), None);
    }

    #[test]
    fn os_release() {
        let o = parse_os_release(
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME='Debian'\nVERSION_ID=\"12\"\n\
             # comment\nID=debian\nQUOTE=\"a \\\"b\\\"\"\n",
        );
        assert_eq!(o["PRETTY_NAME"], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(o["NAME"], "Debian");
        assert_eq!(o["VERSION_ID"], "12");
        assert_eq!(o["ID"], "debian");
        assert_eq!(o["QUOTE"], "a \"b\"");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32K"), Some(32 * 1024));
        assert_eq!(parse_size("1024K\n"), Some(1024 * 1024));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("12X"), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8\n"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("8,0-1"), Some(vec![0, 1, 8]));
        assert_eq!(parse_cpu_list("\n"), Some(vec![]));
        assert_eq!(parse_cpu_list("(null)\n"), Some(vec![]));
        assert_eq!(parse_cpu_list("0 1 2 3\n"), Some(vec![0, 1, 2, 3]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
    }

    #[test]
    fn selected() {
        assert_eq!(
            parse_selected("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            parse_selected("none voluntary (full) lazy").as_deref(),
            Some("full")
        );
        assert_eq!(parse_selected("performance"), None);
    }

    #[test]
    fn proc_cgroup() {
        let v = parse_proc_cgroup("4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/user.slice/x\n");
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].controllers, vec!["memory"]);
        assert_eq!(v[0].path, "/process_api/abc");
        assert_eq!(v[1].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(v[2].hierarchy, 0);
        assert!(v[2].controllers.is_empty());
        assert_eq!(v[2].path, "/user.slice/x");
    }

    const MOUNTINFO: &str = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 27 0:40 /docker/abc /sys/fs/cgroup rw shared:5 - cgroup2 cgroup2 rw,nsdelegate
60 27 259:3 / /home/my\\040dir rw,relatime shared:1 - xfs /dev/nvme0n1p3 rw
";

    #[test]
    fn mountinfo() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(m.len(), 5);
        assert_eq!((m[0].major, m[0].minor), (254, 0));
        assert_eq!(m[0].fs_type, "ext4");
        assert_eq!(m[0].source, "/dev/vda");
        assert_eq!(m[1].super_options, vec!["rw", "cpu"]);
        assert_eq!(m[3].root, "/docker/abc");
        assert_eq!(m[3].fs_type, "cgroup2");
        assert_eq!(m[4].mount_point, "/home/my dir");
        let found = mount_for(&m, "/home/my dir/src", Some((259, 3))).unwrap();
        assert_eq!(found.fs_type, "xfs");
        let found = mount_for(&m, "/work/main", Some((254, 0))).unwrap();
        assert_eq!(found.mount_point, "/");
        // Unknown device: longest prefix.
        let found = mount_for(&m, "/home/my dir", Some((1, 1))).unwrap();
        assert_eq!(found.fs_type, "xfs");
        // "/home/my dirx" is not under "/home/my dir".
        let found = mount_for(&m, "/home/my dirx", None).unwrap();
        assert_eq!(found.mount_point, "/");
    }

    #[test]
    fn cgroup_dirs() {
        let m = parse_mountinfo(MOUNTINFO);
        assert_eq!(cgroup_dir(&m[1], "/"), "/sys/fs/cgroup/cpu");
        assert_eq!(cgroup_dir(&m[1], "/a/b"), "/sys/fs/cgroup/cpu/a/b");
        // Container: mount root is our own cgroup.
        assert_eq!(cgroup_dir(&m[3], "/docker/abc"), "/sys/fs/cgroup");
        assert_eq!(cgroup_dir(&m[3], "/docker/abc/sub"), "/sys/fs/cgroup/sub");
    }

    #[test]
    fn cgroup_limits() {
        assert_eq!(cpu_max_cpus("200000 100000\n"), Some(2.0));
        assert_eq!(cpu_max_cpus("max 100000"), None);
        assert_eq!(
            cpu_max_from_v1("-1", "100000").as_deref(),
            Some("max 100000")
        );
        assert_eq!(
            cpu_max_from_v1("50000\n", "100000\n").as_deref(),
            Some("50000 100000")
        );
        assert_eq!(memory_max("max\n"), Some(("max".into(), None)));
        assert_eq!(
            memory_max("9223372036854771712"),
            Some(("max".into(), None))
        );
        assert_eq!(
            memory_max("1073741824"),
            Some(("1073741824".into(), Some(1 << 30)))
        );
        assert_eq!(memory_max("x"), None);
    }

    #[test]
    fn status_caps() {
        let s = "Name:\tx\nCapPrm:\t000001fffeffffff\nCapEff:\t000001fffeffffff\n";
        let eff = parse_status_hex(s, "CapEff").unwrap();
        assert_eq!(eff, 0x1fffeffffff);
        assert!(eff & (1 << CAP_SYS_NICE) != 0);
        let none = parse_status_hex("CapEff:\t0000000000000000\n", "CapEff").unwrap();
        assert!(none & (1 << CAP_SYS_NICE) == 0);
        assert_eq!(parse_status_hex(s, "CapAmb"), None);
    }

    #[test]
    fn uname_preemption() {
        assert_eq!(
            preemption_from_uname("#1 SMP PREEMPT_DYNAMIC @0"),
            Some("dynamic")
        );
        assert_eq!(
            preemption_from_uname("#1 SMP PREEMPT_RT Debian 6.1.0"),
            Some("rt")
        );
        assert_eq!(
            preemption_from_uname("#1 SMP PREEMPT Mon Jan 1"),
            Some("full")
        );
        assert_eq!(preemption_from_uname("#1 SMP Debian 5.10.0-1"), None);
    }

    #[test]
    fn kconfig_preemption() {
        let c = "# comment\nCONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n";
        assert_eq!(preemption_from_kconfig(c), Some("voluntary"));
        assert_eq!(preemption_from_kconfig("CONFIG_PREEMPT=y\n"), Some("full"));
        assert_eq!(
            preemption_from_kconfig("CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n"),
            Some("rt")
        );
        assert_eq!(
            preemption_from_kconfig("CONFIG_PREEMPT_NONE=y\n"),
            Some("none")
        );
        assert_eq!(preemption_from_kconfig(""), None);
    }

    #[test]
    fn dmi_vms() {
        assert_eq!(
            vm_from_dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)"),
            Some("QEMU")
        );
        assert_eq!(
            vm_from_dmi("Microsoft Corporation", "Virtual Machine"),
            Some("Hyper-V")
        );
        assert_eq!(vm_from_dmi("Microsoft Corporation", "Surface Pro"), None);
        assert_eq!(vm_from_dmi("Amazon EC2", "c5.large"), Some("Amazon EC2"));
        assert_eq!(vm_from_dmi("Amazon EC2", "c5.metal"), None);
        assert_eq!(vm_from_dmi("Dell Inc.", "PowerEdge R640"), None);
    }

    #[test]
    fn cmdline() {
        let c = "BOOT_IMAGE=/vmlinuz mitigations=auto,nosmt isolcpus=2-3 quiet -- --x=1 isolcpus=9";
        assert_eq!(
            cmdline_param(c, "mitigations").as_deref(),
            Some("auto,nosmt")
        );
        assert_eq!(cmdline_param(c, "isolcpus").as_deref(), Some("2-3"));
        assert_eq!(cmdline_param(c, "preempt"), None);
    }

    #[test]
    fn vulnerabilities() {
        assert_eq!(
            classify_vulnerability("Not affected\n"),
            VulnState::NotAffected
        );
        assert_eq!(
            classify_vulnerability("Vulnerable: Safe RET, no microcode"),
            VulnState::Vulnerable
        );
        assert_eq!(
            classify_vulnerability("Mitigation: Retpolines; STIBP: disabled"),
            VulnState::Mitigated
        );
        assert_eq!(classify_vulnerability("Unknown: x"), VulnState::Other);
    }

    #[test]
    fn fs_magic_and_dev() {
        assert_eq!(fs_type_name(0xEF53), Some("ext2/ext3/ext4"));
        assert_eq!(fs_type_name(0xFFFF_FFFF_9123_683E), Some("btrfs"));
        assert_eq!(fs_type_name(0x1234), None);
        // makedev(254, 0) and makedev(259, 3) and a large minor.
        assert_eq!(dev_major_minor(0xfe00), (254, 0));
        assert_eq!(dev_major_minor(0x10303), (259, 3));
        assert_eq!(
            dev_major_minor((8 << 8) | 0x100000 | 0x10),
            (8, 0x100 + 0x10)
        );
    }

    #[test]
    fn hypervisor_signatures() {
        assert_eq!(
            hypervisor_from_signature(b"KVMKVMKVM\0\0\0").as_deref(),
            Some("KVM")
        );
        assert_eq!(
            hypervisor_from_signature(b"Microsoft Hv").as_deref(),
            Some("Hyper-V")
        );
        assert_eq!(
            hypervisor_from_signature(b"NewVisor\0\0\0\0").as_deref(),
            Some("unknown (NewVisor)")
        );
        assert_eq!(hypervisor_from_signature(&[0; 12]), None);
    }
}
