//! Linux back end of the machine / environment record (`crate::system`): reads procfs and sysfs
//! and calls libc. All parsing is done by the pure functions in `crate::system::parse`.
//!
//! Nothing here changes the system, except that the real-time probe briefly gives a throw-away
//! thread SCHED_FIFO priority 1 (the calling thread is untouched).

#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::system::parse::{self, CpuInfo, MountEntry, VulnState};
use crate::system::{
    Cache, CacheKind, Cgroup, Cpu, CpuTime, Environment, Governor, Machine, Mitigations, Notes,
    Realtime, Tsc, Virtualization, Workdir,
};

/// Length of the window over which steal and busy time are sampled.
const CPU_WINDOW: Duration = Duration::from_millis(200);

const CPU_SYS: &str = "/sys/devices/system/cpu";

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// The file's content, trimmed; None when unreadable or empty.
fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    read(path)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn read_num<T: FromStr>(path: impl AsRef<Path>) -> Option<T> {
    read_trim(path)?.parse().ok()
}

fn note(notes: &mut Notes, key: &str, text: impl Into<String>) {
    notes.insert(key.to_string(), text.into());
}

use crate::platform::unix::uname;

fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(name) };
    (v > 0).then_some(v as u64)
}

fn mounts() -> Vec<MountEntry> {
    read("/proc/self/mountinfo")
        .map(|t| parse::parse_mountinfo(&t))
        .unwrap_or_default()
}

/// This machine's id ([`crate::system::machine_id_of`] of `/etc/machine-id`, else D-Bus's copy
/// `/var/lib/dbus/machine-id`), or why there is none (noted as `machine_id`).
fn machine_id(notes: &mut Notes) -> Option<String> {
    let mut why = Vec::new();
    for p in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
        match fs::read_to_string(p) {
            Ok(t) => match crate::system::machine_id_of(&t) {
                Some(id) => {
                    note(notes, "machine_id", format!("keyed hash of {p}"));
                    return Some(id);
                }
                None => why.push(format!("{p} holds no id ('{}')", t.trim())),
            },
            Err(e) => why.push(format!("{p}: {e}")),
        }
    }
    note(
        notes,
        "machine_id",
        format!(
            "unsupported: {}; runs of this machine are known by hostname only",
            why.join("; ")
        ),
    );
    None
}

/// Static facts about this machine.
pub fn machine() -> Machine {
    let mut notes = Notes::new();
    let x86 = cfg!(any(target_arch = "x86_64", target_arch = "x86"));
    let cpuinfo = read("/proc/cpuinfo")
        .map(|t| parse::parse_cpuinfo(&t))
        .unwrap_or_default();
    let uts = uname();
    let os_release = read("/etc/os-release")
        .or_else(|| read("/usr/lib/os-release"))
        .map(|t| parse::parse_os_release(&t));
    if os_release.is_none() {
        note(&mut notes, "os_name", "no /etc/os-release");
    }
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    let mounts = mounts();

    let (preemption, preemption_source) = preemption(
        uts.as_ref().and_then(|u| u.version.as_deref()),
        uts.as_ref().and_then(|u| u.release.as_deref()),
        &cmdline,
        &mut notes,
    );

    let memory_total_bytes = read("/proc/meminfo")
        .and_then(|t| parse::parse_meminfo(&t).get("MemTotal").copied())
        .or_else(|| Some(sysconf(libc::_SC_PHYS_PAGES)? * sysconf(libc::_SC_PAGESIZE)?));
    let system_vendor = read_trim("/sys/class/dmi/id/sys_vendor");
    let system_product = read_trim("/sys/class/dmi/id/product_name");
    if system_vendor.is_none() && system_product.is_none() {
        note(
            &mut notes,
            "system",
            "no DMI information (/sys/class/dmi/id)",
        );
    }
    let virtualization = virtualization(
        &cpuinfo,
        x86,
        system_vendor.as_deref(),
        system_product.as_deref(),
        &mut notes,
    );
    let flag = |f: &str| x86.then(|| cpuinfo.has_flag(f));
    let clocksource = read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    let clocksources_available =
        read_trim("/sys/devices/system/clocksource/clocksource0/available_clocksource")
            .map(|t| t.split_whitespace().map(str::to_string).collect());

    Machine {
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        os_name: os_release
            .as_ref()
            .and_then(|o| o.get("PRETTY_NAME").or_else(|| o.get("NAME")).cloned()),
        os_version: os_release
            .as_ref()
            .and_then(|o| o.get("VERSION_ID").cloned()),
        kernel_release: uts.as_ref().and_then(|u| u.release.clone()),
        kernel_version: uts.as_ref().and_then(|u| u.version.clone()),
        hostname: uts.as_ref().and_then(|u| u.nodename.clone()),
        machine_id: machine_id(&mut notes),
        cpu: cpu(&cpuinfo, &mut notes),
        caches: caches(&mut notes),
        memory_total_bytes,
        page_size_bytes: sysconf(libc::_SC_PAGESIZE),
        system_vendor,
        system_product,
        virtualization,
        clocksource,
        clocksources_available,
        tsc: Tsc {
            constant: flag("constant_tsc"),
            nonstop: flag("nonstop_tsc"),
            known_freq: flag("tsc_known_freq"),
        },
        preemption,
        preemption_source,
        mitigations: mitigations(&cmdline, &mut notes),
        workdir: workdir(&mounts, &mut notes),
        cgroup: cgroup(&mounts, &mut notes),
        notes,
    }
}

fn cpu(ci: &CpuInfo, notes: &mut Notes) -> Cpu {
    let online = read(format!("{CPU_SYS}/online")).and_then(|t| parse::parse_cpu_list(&t));
    let logical_cpus = online
        .as_ref()
        .map(|v| v.len() as u32)
        .filter(|&n| n > 0)
        .or((ci.processors > 0).then_some(ci.processors))
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32)
        });

    let (physical_cores, sockets) = match (ci.physical_cores, ci.sockets) {
        (Some(c), Some(s)) => (Some(c), Some(s)),
        _ => match online.as_deref().and_then(topology_from_sysfs) {
            Some((c, s)) => (Some(c), Some(s)),
            None => {
                note(
                    notes,
                    "cpu.topology",
                    "no core/package ids in /proc/cpuinfo or sysfs",
                );
                (None, None)
            }
        },
    };

    let smt_control = read_trim(format!("{CPU_SYS}/smt/control"));
    let smt_active = match read_trim(format!("{CPU_SYS}/smt/active")).as_deref() {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => match (logical_cpus, physical_cores) {
            (Some(l), Some(c)) => {
                note(notes, "cpu.smt", "derived from logical CPUs vs cores");
                Some(l > c)
            }
            _ => None,
        },
    };

    let (vendor, model_name) = if ci.vendor.is_some() || ci.model_name.is_some() {
        (ci.vendor.clone(), ci.model_name.clone())
    } else {
        // ARM: no vendor_id / model name; name the implementer, keep the part number in a note.
        let vendor = ci.arm_implementer.as_deref().map(|code| {
            parse::arm_implementer_name(code)
                .map(str::to_string)
                .unwrap_or_else(|| format!("implementer {code}"))
        });
        if let Some(part) = &ci.arm_part {
            note(
                notes,
                "cpu.model_name",
                format!("no model name in /proc/cpuinfo (CPU part {part})"),
            );
        }
        (vendor, None)
    };

    let cpufreq0 = format!("{CPU_SYS}/cpu0/cpufreq");
    let khz = |f: &str| read_num::<f64>(format!("{cpufreq0}/{f}")).map(|k| k / 1000.0);
    let nominal_mhz = khz("base_frequency").or_else(|| {
        ci.model_name
            .as_deref()
            .and_then(parse::mhz_from_model_name)
    });
    if nominal_mhz.is_none() {
        note(
            notes,
            "cpu.nominal_mhz",
            "no cpufreq base_frequency and no '@ GHz' in the model name",
        );
    }

    Cpu {
        model_name,
        vendor,
        family: ci.family,
        model: ci.model,
        stepping: ci.stepping,
        microcode: ci.microcode.clone(),
        logical_cpus,
        physical_cores,
        sockets,
        smt_active,
        smt_control,
        nominal_mhz,
        max_mhz: khz("cpuinfo_max_freq"),
        reported_mhz: ci.mhz,
    }
}

/// (cores, packages) from /sys/devices/system/cpu/cpuN/topology.
fn topology_from_sysfs(cpus: &[u32]) -> Option<(u32, u32)> {
    let mut cores = BTreeSet::new();
    let mut packages = BTreeSet::new();
    for c in cpus {
        let base = format!("{CPU_SYS}/cpu{c}/topology");
        let pkg: i64 = read_num(format!("{base}/physical_package_id"))?;
        let core: i64 = read_num(format!("{base}/core_id"))?;
        cores.insert((pkg, core));
        packages.insert(pkg);
    }
    (!cores.is_empty()).then_some((cores.len() as u32, packages.len() as u32))
}

fn caches(notes: &mut Notes) -> Vec<Cache> {
    let dir = format!("{CPU_SYS}/cpu0/cache");
    let Ok(entries) = fs::read_dir(&dir) else {
        note(notes, "caches", format!("no {dir}"));
        return Vec::new();
    };
    let mut indexed: Vec<(u32, Cache)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let idx: u32 = name.strip_prefix("index")?.parse().ok()?;
            let p = e.path();
            let level: u8 = read_num(p.join("level"))?;
            let kind = match read_trim(p.join("type")).as_deref() {
                Some("Data") => CacheKind::Data,
                Some("Instruction") => CacheKind::Instruction,
                _ => CacheKind::Unified,
            };
            Some((
                idx,
                Cache {
                    level,
                    kind,
                    size_bytes: read(p.join("size")).and_then(|t| parse::parse_size(&t)),
                    shared_by_cpus: read(p.join("shared_cpu_list"))
                        .and_then(|t| parse::parse_cpu_list(&t))
                        .map(|v| v.len() as u32)
                        .filter(|&n| n > 0),
                    line_size_bytes: read_num(p.join("coherency_line_size")),
                },
            ))
        })
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    if indexed.is_empty() {
        note(notes, "caches", format!("no cache entries in {dir}"));
    }
    indexed.into_iter().map(|(_, c)| c).collect()
}

fn virtualization(
    ci: &CpuInfo,
    x86: bool,
    dmi_vendor: Option<&str>,
    dmi_product: Option<&str>,
    notes: &mut Notes,
) -> Virtualization {
    let hypervisor_flag = x86.then(|| ci.has_flag("hypervisor"));
    let hv_type = read_trim("/sys/hypervisor/type");
    let dmi_vm = parse::vm_from_dmi(dmi_vendor.unwrap_or(""), dmi_product.unwrap_or(""));
    let mut vendor = None;
    let mut vendor_source = None;
    if hypervisor_flag == Some(true)
        && let Some(v) = crate::platform::cpuid::cpuid().hypervisor
    {
        vendor = Some(v);
        vendor_source = Some("cpuid 0x40000000".to_string());
    }
    if vendor.is_none()
        && let Some(t) = &hv_type
    {
        vendor = Some(t.clone());
        vendor_source = Some("/sys/hypervisor/type".to_string());
    }
    if vendor.is_none()
        && let Some(v) = dmi_vm
    {
        vendor = Some(v.to_string());
        vendor_source = Some("dmi".to_string());
    }
    let virtualized = if hypervisor_flag == Some(true) || hv_type.is_some() || dmi_vm.is_some() {
        Some(true)
    } else if hypervisor_flag == Some(false) {
        Some(false)
    } else {
        note(
            notes,
            "virtualization",
            "no hypervisor CPU flag on this architecture and no known VM in DMI",
        );
        None
    };
    Virtualization {
        virtualized,
        hypervisor_flag,
        vendor,
        vendor_source,
        free_page_reporting: crate::platform::memory::free_page_reporting().ok(),
    }
}

fn preemption(
    uname_version: Option<&str>,
    release: Option<&str>,
    cmdline: &str,
    notes: &mut Notes,
) -> (Option<String>, Option<String>) {
    let found = |p: &str, src: &str| (Some(p.to_string()), Some(src.to_string()));
    if let Some(t) = read("/sys/kernel/debug/sched/preempt")
        && let Some(sel) = parse::parse_selected(&t)
    {
        return found(&sel, "/sys/kernel/debug/sched/preempt");
    }
    if read_trim("/sys/kernel/realtime").as_deref() == Some("1") {
        return found("rt", "/sys/kernel/realtime");
    }
    let from_uname = uname_version.and_then(parse::preemption_from_uname);
    let kconfig = || {
        release
            .and_then(|r| read(format!("/boot/config-{r}")))
            .and_then(|c| parse::preemption_from_kconfig(&c))
    };
    match from_uname {
        Some("dynamic") => {
            if let Some(p) = parse::cmdline_param(cmdline, "preempt") {
                return found(&p, "preempt= kernel parameter (PREEMPT_DYNAMIC)");
            }
            if let Some(p) = kconfig() {
                return found(
                    p,
                    "kernel config default (PREEMPT_DYNAMIC; can be changed at run time)",
                );
            }
            note(
                notes,
                "preemption",
                "PREEMPT_DYNAMIC kernel; the active mode is in /sys/kernel/debug/sched/preempt \
                 (needs root and debugfs)",
            );
            found("dynamic", "uname -v")
        }
        Some(p) => found(p, "uname -v"),
        None => {
            if let Some(p) = kconfig() {
                return found(p, "kernel config");
            }
            note(
                notes,
                "preemption",
                "uname -v names no PREEMPT flag: 'none' or 'voluntary', the kernel config is \
                 not readable",
            );
            (None, None)
        }
    }
}

fn mitigations(cmdline: &str, notes: &mut Notes) -> Option<Mitigations> {
    let dir = format!("{CPU_SYS}/vulnerabilities");
    let Ok(entries) = fs::read_dir(&dir) else {
        note(notes, "mitigations", format!("no {dir}"));
        return None;
    };
    let mut files: Vec<(String, String)> = entries
        .flatten()
        .filter_map(|e| {
            Some((
                e.file_name().to_string_lossy().into_owned(),
                read(e.path())?,
            ))
        })
        .collect();
    files.sort();
    let mut m = Mitigations {
        cmdline: parse::cmdline_param(cmdline, "mitigations"),
        ..Default::default()
    };
    for (name, text) in files {
        match parse::classify_vulnerability(&text) {
            VulnState::NotAffected => m.not_affected += 1,
            VulnState::Mitigated => m.mitigated += 1,
            VulnState::Vulnerable => {
                m.vulnerable += 1;
                m.vulnerable_names.push(name);
            }
            VulnState::Other => m.other += 1,
        }
    }
    Some(m)
}

/// (major, minor) of a block device → whether it is rotational.
fn rotational(major: u32, minor: u32) -> Option<bool> {
    let base = format!("/sys/dev/block/{major}:{minor}");
    let v = read_trim(format!("{base}/queue/rotational")).or_else(|| {
        // A partition: the queue belongs to the parent disk.
        let real = fs::canonicalize(&base).ok()?;
        read_trim(real.parent()?.join("queue/rotational"))
    })?;
    match v.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

fn workdir(mounts: &[MountEntry], notes: &mut Notes) -> Option<Workdir> {
    let Ok(cwd) = std::env::current_dir() else {
        note(notes, "workdir", "current directory unavailable");
        return None;
    };
    let path = cwd.to_string_lossy().into_owned();
    let dev = fs::metadata(&cwd)
        .ok()
        .map(|m| parse::dev_major_minor(m.dev()));
    let magic = statfs_magic(&cwd);
    let mount = parse::mount_for(mounts, &path, dev);
    let fs_type = mount
        .map(|m| m.fs_type.clone())
        .or_else(|| magic.and_then(parse::fs_type_name).map(str::to_string));
    let mut rot = dev.and_then(|(ma, mi)| if ma != 0 { rotational(ma, mi) } else { None });
    if rot.is_none()
        && let Some(m) = mount
        && m.source.starts_with("/dev/")
        && let Ok(meta) = fs::metadata(&m.source)
    {
        // Anonymous device numbers (btrfs subvolumes, ...): ask the mount's source device.
        let (ma, mi) = parse::dev_major_minor(meta.rdev());
        rot = rotational(ma, mi);
    }
    if rot.is_none() {
        note(
            notes,
            "workdir.rotational",
            "no block device behind the working directory (virtual, network or overlay fs)",
        );
    }
    Some(Workdir {
        path,
        fs_type,
        fs_magic: magic.map(|m| format!("{m:#x}")),
        mount_point: mount.map(|m| m.mount_point.clone()),
        device: mount.map(|m| m.source.clone()),
        rotational: rot,
    })
}

fn statfs_magic(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain old data; `c` is a valid NUL-terminated path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `s` is valid output space and `c` a NUL-terminated path.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    // f_type's C type varies by target; magics are 32-bit.
    #[allow(clippy::unnecessary_cast)]
    let magic = (s.f_type as i64 as u64) & 0xFFFF_FFFF;
    Some(magic)
}

/// Where our cgroup's files are.
struct CgroupDirs {
    hierarchy: Option<String>,
    path: Option<String>,
    v2: Option<String>,
    cpu_v1: Option<String>,
    memory_v1: Option<String>,
}

fn cgroup_dirs(mounts: &[MountEntry]) -> Option<CgroupDirs> {
    let entries = parse::parse_proc_cgroup(&read("/proc/self/cgroup")?);
    let v2_entry = entries
        .iter()
        .find(|e| e.hierarchy == 0 && e.controllers.is_empty());
    let has_v1 = entries.iter().any(|e| e.hierarchy != 0);
    let hierarchy = match (v2_entry.is_some(), has_v1) {
        (true, false) => Some("v2".to_string()),
        (false, true) => Some("v1".to_string()),
        (true, true) => Some("hybrid".to_string()),
        (false, false) => None,
    };
    let v2 = v2_entry.and_then(|e| {
        let m = mounts.iter().find(|m| m.fs_type == "cgroup2")?;
        Some(parse::cgroup_dir(m, &e.path))
    });
    let v1 = |ctrl: &str| {
        let e = entries
            .iter()
            .find(|e| e.hierarchy != 0 && e.controllers.iter().any(|c| c == ctrl))?;
        let m = mounts
            .iter()
            .find(|m| m.fs_type == "cgroup" && m.super_options.iter().any(|o| o == ctrl))?;
        Some((parse::cgroup_dir(m, &e.path), e.path.clone()))
    };
    let cpu_v1 = v1("cpu");
    let path = cpu_v1
        .as_ref()
        .map(|(_, p)| p.clone())
        .or_else(|| v2_entry.map(|e| e.path.clone()));
    Some(CgroupDirs {
        hierarchy,
        path,
        v2,
        cpu_v1: cpu_v1.map(|(d, _)| d),
        memory_v1: v1("memory").map(|(d, _)| d),
    })
}

fn cgroup(mounts: &[MountEntry], notes: &mut Notes) -> Option<Cgroup> {
    let Some(d) = cgroup_dirs(mounts) else {
        note(notes, "cgroup", "no /proc/self/cgroup");
        return None;
    };
    let cpu_max = d
        .cpu_v1
        .as_ref()
        .and_then(|dir| {
            parse::cpu_max_from_v1(
                &read(format!("{dir}/cpu.cfs_quota_us"))?,
                &read(format!("{dir}/cpu.cfs_period_us"))?,
            )
        })
        .or_else(|| read_trim(format!("{}/cpu.max", d.v2.as_ref()?)));
    let memory = d
        .memory_v1
        .as_ref()
        .and_then(|dir| read(format!("{dir}/memory.limit_in_bytes")))
        .or_else(|| read(format!("{}/memory.max", d.v2.as_ref()?)))
        .and_then(|t| parse::memory_max(&t));
    if cpu_max.is_none() || memory.is_none() {
        note(
            notes,
            "cgroup",
            "limit files not readable (root cgroup, or controller not enabled)",
        );
    }
    Some(Cgroup {
        hierarchy: d.hierarchy,
        path: d.path,
        cpu_limit_cpus: cpu_max.as_deref().and_then(parse::cpu_max_cpus),
        cpu_max,
        memory_max_bytes: memory.as_ref().and_then(|m| m.1),
        memory_max: memory.map(|m| m.0),
    })
}

// ---------------------------------------------------------------------------------------------
// Environment

/// A snapshot of the environment; takes about `CPU_WINDOW` (200 ms).
pub fn environment() -> Environment {
    let taken_at = Utc::now();
    let t0 = Instant::now();
    let stat0 = read("/proc/stat").and_then(|t| parse::parse_proc_stat(&t));
    // The RT probe runs while the window elapses.
    let probe = std::thread::Builder::new()
        .name("osgauge-rt-probe".into())
        .spawn(try_realtime);

    let mut notes = Notes::new();
    let mounts = mounts();
    let meminfo = read("/proc/meminfo")
        .map(|t| parse::parse_meminfo(&t))
        .unwrap_or_default();
    let governors = governors(&mut notes);
    let (boost, boost_source, pstate_status) = boost(&mut notes);
    let nohz_full_cpus = nohz_full_cpus(&mut notes);
    let cpu_pressure = cpu_pressure(&mut notes);
    // SAFETY: geteuid takes no arguments and cannot fail.
    let geteuid = unsafe { libc::geteuid() };
    let mut realtime = rt_limits(&mounts);
    let is_root = Some(geteuid == 0);
    rt_probed(&mut realtime, probe, is_root, &mut notes);

    // Close the window.
    let elapsed = t0.elapsed();
    if elapsed < CPU_WINDOW {
        std::thread::sleep(CPU_WINDOW - elapsed);
    }
    let stat1 = read("/proc/stat").and_then(|t| parse::parse_proc_stat(&t));
    let window_ms = t0.elapsed().as_secs_f64() * 1e3;
    let cpu_time = stat1.map(|s1| cpu_time(stat0.as_ref(), &s1, window_ms));
    if cpu_time.is_none() {
        note(&mut notes, "cpu_time", "/proc/stat not readable");
    }

    Environment {
        taken_at,
        governors,
        boost,
        boost_source,
        pstate_status,
        isolated_cpus: read(format!("{CPU_SYS}/isolated")).and_then(|t| parse::parse_cpu_list(&t)),
        nohz_full_cpus,
        aslr: read_num("/proc/sys/kernel/randomize_va_space"),
        load_avg: read("/proc/loadavg").and_then(|t| parse::parse_loadavg(&t)),
        cpu_pressure,
        cpu_time,
        procs_running: stat1.and_then(|s| s.procs_running),
        procs_blocked: stat1.and_then(|s| s.procs_blocked),
        mem_available_bytes: meminfo.get("MemAvailable").copied(),
        swap_total_bytes: meminfo.get("SwapTotal").copied(),
        swap_free_bytes: meminfo.get("SwapFree").copied(),
        thp: read("/sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|t| parse::parse_selected(&t)),
        thp_defrag: read("/sys/kernel/mm/transparent_hugepage/defrag")
            .and_then(|t| parse::parse_selected(&t)),
        timer_slack_ns: timer_slack(),
        affinity: affinity(),
        realtime,
        // SAFETY: getuid takes no arguments and cannot fail.
        uid: Some(unsafe { libc::getuid() }),
        is_root,
        notes,
    }
}

/// The CPUs in nohz_full mode (a note when the kernel has no NO_HZ_FULL).
fn nohz_full_cpus(notes: &mut Notes) -> Option<Vec<u32>> {
    match read(format!("{CPU_SYS}/nohz_full")) {
        Some(t) => parse::parse_cpu_list(&t),
        None => {
            note(notes, "nohz_full_cpus", "kernel without NO_HZ_FULL");
            None
        }
    }
}

/// The CPU's pressure stall information (a note when the kernel gives none).
fn cpu_pressure(notes: &mut Notes) -> Option<crate::system::Psi> {
    match fs::read_to_string("/proc/pressure/cpu") {
        Ok(t) => parse::parse_psi(&t),
        Err(err) => {
            note(
                notes,
                "cpu_pressure",
                format!("no PSI (/proc/pressure/cpu: {err}); kernel without CONFIG_PSI or psi=0"),
            );
            None
        }
    }
}

/// The real-time probe's answer into `realtime` (permitted, or the errno it was refused with),
/// then the reason for a refusal; a note when the probe thread could not start.
fn rt_probed(
    realtime: &mut Realtime,
    probe: std::io::Result<std::thread::JoinHandle<Result<(), i32>>>,
    is_root: Option<bool>,
    notes: &mut Notes,
) {
    let probe_result = match probe {
        Ok(h) => h.join().ok(),
        Err(_) => None,
    };
    match probe_result {
        Some(Ok(())) => realtime.permitted = Some(true),
        Some(Err(errno)) => {
            realtime.permitted = Some(false);
            realtime.errno = Some(errno);
            realtime.error = Some(errno_name(errno));
        }
        None => note(notes, "realtime", "could not start the probe thread"),
    }
    realtime.reason = crate::system::explain_rt_denial(realtime, is_root).map(|r| r.0);
}

/// The CPU time figures from `/proc/stat` at the window's end (`s1`) and, when it was read, at
/// its start (`s0`): steal since boot, and steal, busy and iowait over the `window_ms` window.
fn cpu_time(s0: Option<&parse::ProcStat>, s1: &parse::ProcStat, window_ms: f64) -> CpuTime {
    let total = s1.cpu.total();
    let w = s0.and_then(|s0| parse::cpu_window(&s0.cpu, &s1.cpu));
    CpuTime {
        steal_ticks_total: Some(s1.cpu.steal),
        steal_pct_since_boot: (total > 0).then(|| s1.cpu.steal as f64 * 100.0 / total as f64),
        window_ms: w.map(|_| window_ms),
        window_ticks: w.map(|w| w.ticks),
        window_steal_pct: w.map(|w| w.steal_pct),
        window_busy_pct: w.map(|w| w.busy_pct),
        window_iowait_pct: w.map(|w| w.iowait_pct),
    }
}

fn governors(notes: &mut Notes) -> Option<Vec<Governor>> {
    let dir = format!("{CPU_SYS}/cpufreq");
    let mut policies: Vec<(u32, String)> = fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n = name.strip_prefix("policy")?.parse().ok()?;
                    Some((n, name))
                })
                .collect()
        })
        .unwrap_or_default();
    if policies.is_empty() {
        note(notes, "governors", "no cpufreq (VM?)");
        return None;
    }
    policies.sort();
    Some(
        policies
            .into_iter()
            .map(|(_, policy)| {
                let p = format!("{dir}/{policy}");
                Governor {
                    cpus: read(format!("{p}/affected_cpus"))
                        .and_then(|t| parse::parse_cpu_list(&t))
                        .unwrap_or_default(),
                    governor: read_trim(format!("{p}/scaling_governor")),
                    driver: read_trim(format!("{p}/scaling_driver")),
                    policy,
                }
            })
            .collect(),
    )
}

/// (boost on?, source, pstate status).
fn boost(notes: &mut Notes) -> (Option<bool>, Option<String>, Option<String>) {
    let pstate_status = read_trim(format!("{CPU_SYS}/intel_pstate/status"))
        .map(|s| format!("intel_pstate {s}"))
        .or_else(|| {
            read_trim(format!("{CPU_SYS}/amd_pstate/status")).map(|s| format!("amd_pstate {s}"))
        });
    if let Some(v) = read_trim(format!("{CPU_SYS}/intel_pstate/no_turbo")) {
        return (
            Some(v == "0"),
            Some("intel_pstate/no_turbo".into()),
            pstate_status,
        );
    }
    if let Some(v) = read_trim(format!("{CPU_SYS}/cpufreq/boost")) {
        return (Some(v == "1"), Some("cpufreq/boost".into()), pstate_status);
    }
    // amd-pstate (6.11+) exposes boost per policy.
    let per_policy: Vec<String> = fs::read_dir(format!("{CPU_SYS}/cpufreq"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| read_trim(e.path().join("boost")))
                .collect()
        })
        .unwrap_or_default();
    if !per_policy.is_empty() {
        return (
            Some(per_policy.iter().any(|v| v == "1")),
            Some("cpufreq/policy*/boost".into()),
            pstate_status,
        );
    }
    note(
        notes,
        "boost",
        "no boost control exposed (no cpufreq, or the driver has none)",
    );
    (None, None, pstate_status)
}

fn timer_slack() -> Option<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointers; it returns the calling thread's slack.
    let v = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    (v >= 0).then_some(v as u64)
}

fn affinity() -> Option<Vec<u32>> {
    // SAFETY: cpu_set_t is a plain bit set; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a local cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return None;
    }
    Some(
        (0..size * 8)
            // SAFETY: `i` < CPU_SETSIZE and `set` is initialised.
            .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
            .map(|i| i as u32)
            .collect(),
    )
}

/// Tries SCHED_FIFO priority 1 on the calling thread (a fresh, throw-away thread) and restores
/// SCHED_OTHER. Ok or the errno.
fn try_realtime() -> Result<(), i32> {
    // SAFETY: sched_param is plain old data; pid 0 means the calling thread on Linux.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = 1;
    // SAFETY: `param` is a valid sched_param; pid 0 is this thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    param.sched_priority = 0;
    // SAFETY: as above; restores this thread's normal policy.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    Ok(())
}

fn errno_name(errno: i32) -> String {
    match errno {
        libc::EPERM => "EPERM".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::ESRCH => "ESRCH".into(),
        libc::EBUSY => "EBUSY".into(),
        libc::EAGAIN => "EAGAIN".into(),
        libc::EACCES => "EACCES".into(),
        libc::ENOSYS => "ENOSYS".into(),
        n => format!("errno {n}"),
    }
}

/// Everything that decides whether RT scheduling is allowed, except the trial itself.
fn rt_limits(mounts: &[MountEntry]) -> Realtime {
    // SAFETY: rlimit is plain old data.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `rl` is a local, valid output space for getrlimit.
    let have_rl = unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut rl) } == 0;
    let cap_eff = read("/proc/self/status").and_then(|t| parse::parse_status_hex(&t, "CapEff"));
    let cgroup_rt_runtime_us = cgroup_dirs(mounts)
        .and_then(|d| d.cpu_v1)
        .and_then(|dir| read_num(format!("{dir}/cpu.rt_runtime_us")));
    Realtime {
        rlimit_rtprio_soft: have_rl.then_some(rl.rlim_cur),
        rlimit_rtprio_hard: have_rl.then_some(rl.rlim_max),
        cap_sys_nice: cap_eff.map(|c| c & (1 << parse::CAP_SYS_NICE) != 0),
        sched_rt_runtime_us: read_num("/proc/sys/kernel/sched_rt_runtime_us"),
        sched_rt_period_us: read_num("/proc/sys/kernel/sched_rt_period_us"),
        cgroup_rt_runtime_us,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::parse::{CpuTicks, ProcStat};

    fn stat(user: u64, idle: u64, steal: u64) -> ProcStat {
        ProcStat {
            cpu: CpuTicks {
                user,
                idle,
                steal,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Steal since boot from the end sample alone; the window's shares only with both samples.
    #[test]
    fn cpu_time_over_the_window() {
        let end = stat(300, 600, 100);
        let t = cpu_time(Some(&stat(200, 500, 100)), &end, 201.5);
        assert_eq!(t.steal_ticks_total, Some(100));
        assert_eq!(t.steal_pct_since_boot, Some(10.0));
        assert_eq!(t.window_ms, Some(201.5));
        assert_eq!(t.window_ticks, Some(200));
        assert_eq!(
            (t.window_busy_pct, t.window_steal_pct, t.window_iowait_pct),
            (Some(50.0), Some(0.0), Some(0.0))
        );
        let t = cpu_time(None, &end, 201.5);
        assert_eq!(t.steal_pct_since_boot, Some(10.0));
        assert_eq!((t.window_ms, t.window_ticks), (None, None));
    }
}
