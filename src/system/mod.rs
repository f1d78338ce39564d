//! Machine and environment record, and the hygiene check behind `osgauge system show`.
//!
//! * [`Machine`]: the static facts of the computer.
//! * [`Environment`]: a snapshot of the tunable / transient state; a run samples it at its start
//!   and at its end.
//! * [`check`] turns the two records into plain advice ([`Finding`]s, pyperf style). It never
//!   changes the system and is a pure function of the records, so it is unit-tested with
//!   hand-built records.
//! * [`render_text`] prints both records as aligned `key: value` lines.
//!
//! Every value that may be unknown is an `Option`; unknown values are `None`, never guessed, and
//! where it helps the record's `notes` map (field name → reason) says why.
//!
//! This module reads nothing from the OS. The records are read by the platform layer,
//! `crate::platform::sysinfo::{machine, environment}` (`src/platform/sysinfo/linux.rs` on Linux,
//! `macos.rs`, `windows.rs` beside it; no other OS is built); the text parsers it uses are
//! pure functions in [`parse`].

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

mod check;
pub mod parse;
mod render;

pub use check::{busy_now, busy_share, check, explain_rt_denial, unchecked};
pub use render::{format_bytes, format_cpu_list, render_findings, render_text};

/// Why a field is unknown (or where a value came from), keyed by field name.
pub type Notes = BTreeMap<String, String>;

/// The machine id recorded for an OS machine id `raw` (any case, dashes ignored): HMAC-SHA-256
/// keyed by it over an application string, the first 16 bytes in hex — an application-specific
/// id as systemd recommends (`sd_id128_get_machine_app_specific`): stable, unique, and not the
/// OS's id (which may be used elsewhere as a secret). None when `raw` holds no hex digits or
/// only zeros (an unset id).
pub fn machine_id_of(raw: &str) -> Option<String> {
    use hmac::{Hmac, KeyInit, Mac};
    let norm: String = raw
        .trim()
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if norm.is_empty()
        || !norm.chars().all(|c| c.is_ascii_hexdigit())
        || norm.chars().all(|c| c == '0')
    {
        return None;
    }
    let mut m = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(norm.as_bytes())
        .expect("HMAC takes any key");
    m.update(b"osgauge machine identity v1");
    let out = m.finalize().into_bytes();
    Some(out[..16].iter().map(|b| format!("{b:02x}")).collect())
}

/// Static facts about the machine. Cheap to collect (< 50 ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Machine {
    /// `std::env::consts::OS` ("linux", "macos", "windows").
    pub os: String,
    /// `std::env::consts::ARCH` ("x86_64", "aarch64", ...).
    pub arch: String,
    /// Distribution / product name (Linux: `/etc/os-release` PRETTY_NAME).
    pub os_name: Option<String>,
    /// Distribution version (Linux: `/etc/os-release` VERSION_ID).
    pub os_version: Option<String>,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `uname -v`.
    pub kernel_version: Option<String>,
    pub hostname: Option<String>,
    /// This machine's stable identity: 32 hex digits, a keyed hash ([`machine_id_of`]) of the
    /// OS's own machine id (Linux `/etc/machine-id`, macOS IOPlatformUUID, Windows MachineGuid),
    /// so the OS's id itself is never recorded. Unlike the hostname it survives a rename, and
    /// containers or clones that share a hostname keep apart. None (with `notes.machine_id`
    /// saying why) where it cannot be read: the fleet view then names the machine by hostname.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    pub cpu: Cpu,
    /// Caches seen by CPU 0, in sysfs order (L1d, L1i, L2, L3 ...).
    pub caches: Vec<Cache>,
    pub memory_total_bytes: Option<u64>,
    pub page_size_bytes: Option<u64>,
    /// System vendor / product from DMI (e.g. "Dell Inc." / "PowerEdge R640", "QEMU" / "Standard PC").
    pub system_vendor: Option<String>,
    pub system_product: Option<String>,
    pub virtualization: Virtualization,
    /// Current kernel clock source ("tsc", "kvm-clock", "hpet", "arch_sys_counter" ...).
    pub clocksource: Option<String>,
    /// Clock sources the kernel offers.
    pub clocksources_available: Option<Vec<String>>,
    pub tsc: Tsc,
    /// Kernel preemption model: "none", "voluntary", "full", "lazy", "rt", or "dynamic" when the
    /// kernel is PREEMPT_DYNAMIC and the active mode is not readable.
    pub preemption: Option<String>,
    /// Where `preemption` was read from.
    pub preemption_source: Option<String>,
    pub mitigations: Option<Mitigations>,
    /// The file system of the working directory (where file benchmarks would run).
    pub workdir: Option<Workdir>,
    /// Limits of our own control group.
    pub cgroup: Option<Cgroup>,
    pub notes: Notes,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Cpu {
    /// Marketing name ("AMD EPYC 7B13", "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz").
    pub model_name: Option<String>,
    /// "GenuineIntel", "AuthenticAMD", or the ARM implementer name.
    pub vendor: Option<String>,
    /// x86 family / model / stepping (decimal, as in /proc/cpuinfo).
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    pub microcode: Option<String>,
    /// Online logical CPUs of the machine (not limited by our affinity).
    pub logical_cpus: Option<u32>,
    pub physical_cores: Option<u32>,
    pub sockets: Option<u32>,
    /// Whether simultaneous multithreading (Hyper-Threading) is active.
    pub smt_active: Option<bool>,
    /// SMT control state ("on", "off", "forceoff", "notsupported", "notimplemented").
    pub smt_control: Option<String>,
    /// Nominal (base) frequency, from cpufreq `base_frequency` or the "@ x.xxGHz" in the model name.
    pub nominal_mhz: Option<f64>,
    /// Highest frequency cpufreq allows (`cpuinfo_max_freq`), turbo included.
    pub max_mhz: Option<f64>,
    /// "cpu MHz" of CPU 0 in /proc/cpuinfo when sampled (in VMs usually the TSC rate).
    pub reported_mhz: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    #[default]
    Unified,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Cache {
    pub level: u8,
    pub kind: CacheKind,
    pub size_bytes: Option<u64>,
    /// How many logical CPUs share this cache instance.
    pub shared_by_cpus: Option<u32>,
    pub line_size_bytes: Option<u32>,
}

/// What free page reporting does, for warnings beside the figures it can move.
pub const FREE_PAGE_REPORTING_EFFECT: &str = "this VM returns free memory to its host \
    (virtio-balloon free page reporting): memory freed more than a few seconds earlier is faulted \
    in again by the host on its first touch, so work that takes fresh memory (a buffered file \
    write, a new mapping) can cost its thread several times more than the same work reusing \
    memory it has just freed — and a benchmark and an application may find memory in different \
    states";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Virtualization {
    /// True when the machine is known to run under a hypervisor.
    pub virtualized: Option<bool>,
    /// The `hypervisor` CPU flag (x86 only).
    pub hypervisor_flag: Option<bool>,
    /// Hypervisor vendor ("KVM", "Hyper-V", "VMware", "Xen", ...).
    pub vendor: Option<String>,
    /// Where `vendor` came from ("cpuid 0x40000000", "/sys/hypervisor/type", "dmi").
    pub vendor_source: Option<String>,
    /// The guest returns free memory to its host (virtio-balloon free page reporting), so fresh
    /// memory can cost a host fault on first touch ([`crate::platform::memory::free_page_reporting`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_page_reporting: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Tsc {
    /// `constant_tsc`: the TSC ticks at a fixed rate regardless of frequency changes.
    pub constant: Option<bool>,
    /// `nonstop_tsc`: the TSC keeps ticking in deep C-states.
    pub nonstop: Option<bool>,
    /// `tsc_known_freq`: the TSC rate was read from CPUID/hypervisor rather than calibrated.
    pub known_freq: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Mitigations {
    /// Files in /sys/devices/system/cpu/vulnerabilities reading "Vulnerable...".
    pub vulnerable: u32,
    /// ... reading "Mitigation: ...".
    pub mitigated: u32,
    /// ... reading "Not affected".
    pub not_affected: u32,
    /// ... anything else ("Unknown: ...").
    pub other: u32,
    /// Names of the vulnerable ones.
    pub vulnerable_names: Vec<String>,
    /// The `mitigations=` kernel parameter, when given.
    pub cmdline: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Workdir {
    pub path: String,
    /// File system type ("ext4", "xfs", "tmpfs", "overlay", ...).
    pub fs_type: Option<String>,
    /// statfs `f_type`, hex.
    pub fs_magic: Option<String>,
    pub mount_point: Option<String>,
    /// Mount source ("/dev/nvme0n1p2", "overlay", "tmpfs").
    pub device: Option<String>,
    /// Whether the backing block device is rotational (from sysfs `queue/rotational`; virtual disks
    /// often claim to be rotational).
    pub rotational: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Cgroup {
    /// "v1", "v2" or "hybrid".
    pub hierarchy: Option<String>,
    /// Our cgroup path (v2 path, or the v1 cpu controller's path).
    pub path: Option<String>,
    /// CPU quota in cgroup v2 `cpu.max` syntax ("max 100000", "200000 100000"); synthesised from
    /// `cpu.cfs_quota_us` / `cpu.cfs_period_us` on v1.
    pub cpu_max: Option<String>,
    /// The quota in CPUs (quota / period); None when unlimited or unknown.
    pub cpu_limit_cpus: Option<f64>,
    /// Memory limit, raw ("max" or bytes); v1 `memory.limit_in_bytes` near 2^63 is shown as "max".
    pub memory_max: Option<String>,
    /// The memory limit in bytes; None when unlimited or unknown.
    pub memory_max_bytes: Option<u64>,
}

/// A snapshot of the state that can change between runs. Sampled at run start and end.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Environment {
    pub taken_at: DateTime<Utc>,
    /// One entry per cpufreq policy; None when there is no cpufreq (typical in VMs).
    pub governors: Option<Vec<Governor>>,
    /// True when turbo / boost is enabled.
    pub boost: Option<bool>,
    /// Where `boost` came from ("intel_pstate/no_turbo", "cpufreq/boost", "cpufreq/policy*/boost").
    pub boost_source: Option<String>,
    /// intel_pstate / amd_pstate status ("active", "passive", "guided"), prefixed with the driver.
    pub pstate_status: Option<String>,
    /// CPUs isolated from the scheduler (isolcpus); empty when none.
    pub isolated_cpus: Option<Vec<u32>>,
    /// nohz_full CPUs; empty when none; None when the kernel lacks NO_HZ_FULL.
    pub nohz_full_cpus: Option<Vec<u32>>,
    /// /proc/sys/kernel/randomize_va_space: 0 off, 1 partial, 2 full.
    pub aslr: Option<u8>,
    pub load_avg: Option<LoadAvg>,
    /// CPU pressure stall information (/proc/pressure/cpu).
    pub cpu_pressure: Option<Psi>,
    /// Steal and busy time, cumulative and over a short window.
    pub cpu_time: Option<CpuTime>,
    /// Runnable tasks (procs_running in /proc/stat) at the end of the window.
    pub procs_running: Option<u32>,
    pub procs_blocked: Option<u32>,
    pub mem_available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_free_bytes: Option<u64>,
    /// Transparent huge pages mode ("always", "madvise", "never").
    pub thp: Option<String>,
    pub thp_defrag: Option<String>,
    /// Timer slack of the calling thread, ns (Linux default 50 000).
    pub timer_slack_ns: Option<u64>,
    /// CPUs this process may run on.
    pub affinity: Option<Vec<u32>>,
    pub realtime: Realtime,
    pub uid: Option<u32>,
    /// Effective uid is 0.
    pub is_root: Option<bool>,
    pub notes: Notes,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Governor {
    /// "policy0", ...
    pub policy: String,
    /// CPUs the policy covers.
    pub cpus: Vec<u32>,
    pub governor: Option<String>,
    /// "intel_pstate", "amd-pstate-epp", "acpi-cpufreq", ...
    pub driver: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    /// Currently runnable scheduling entities (4th field, before the slash).
    pub runnable: Option<u32>,
    /// Total scheduling entities (4th field, after the slash).
    pub total: Option<u32>,
}

/// Pressure stall information, percentages of wall time.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Psi {
    pub some_avg10: f64,
    pub some_avg60: f64,
    pub some_avg300: f64,
    pub full_avg10: Option<f64>,
    pub full_avg60: Option<f64>,
}

/// CPU time split of the whole machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CpuTime {
    /// Cumulative steal ticks since boot (USER_HZ, normally 100/s per CPU).
    pub steal_ticks_total: Option<u64>,
    /// Steal since boot as % of all CPU time since boot.
    pub steal_pct_since_boot: Option<f64>,
    /// Length of the sampling window, ms.
    pub window_ms: Option<f64>,
    /// CPU ticks (all CPUs) that elapsed in the window; a small number means coarse percentages.
    pub window_ticks: Option<u64>,
    /// Steal as % of all CPU time in the window.
    pub window_steal_pct: Option<f64>,
    /// user + nice + system + irq + softirq as % of all CPU time in the window.
    pub window_busy_pct: Option<f64>,
    pub window_iowait_pct: Option<f64>,
}

/// Whether real-time scheduling is available to us, found by trying it in a throw-away thread.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Realtime {
    /// Result of `sched_setscheduler(SCHED_FIFO, 1)` in a fresh thread; None when not tried.
    pub permitted: Option<bool>,
    /// The errno of a failed attempt.
    pub errno: Option<i32>,
    /// Symbolic errno ("EPERM", ...).
    pub error: Option<String>,
    /// Plain-language reason for a denial (see [`explain_rt_denial`]).
    pub reason: Option<String>,
    /// RLIMIT_RTPRIO soft / hard (u64::MAX = unlimited).
    pub rlimit_rtprio_soft: Option<u64>,
    pub rlimit_rtprio_hard: Option<u64>,
    /// CAP_SYS_NICE in the effective capability set.
    pub cap_sys_nice: Option<bool>,
    /// kernel.sched_rt_runtime_us (-1 = no limit) and kernel.sched_rt_period_us.
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
    /// `cpu.rt_runtime_us` of our cgroup (cgroup v1 with RT group scheduling only).
    pub cgroup_rt_runtime_us: Option<i64>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
}

/// One piece of advice from [`check`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub level: Level,
    /// Short stable key ("governor", "turbo", "steal", ...).
    pub topic: String,
    pub message: String,
    /// What the user could do about it (never done by osgauge).
    pub fix: Option<String>,
}

#[cfg(test)]
mod machine_id_tests {
    use super::machine_id_of;

    #[test]
    fn the_recorded_id_is_a_stable_keyed_hash_never_the_os_id() {
        let raw = "4c4c4544003a3910804bb2c04f4e4b32";
        let id = machine_id_of(raw).unwrap();
        assert_eq!(id.len(), 32);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(id, raw);
        // Case, dashes and surrounding white space do not matter (a UUID as macOS and Windows
        // write it, the bare hex of /etc/machine-id).
        assert_eq!(
            machine_id_of(" 4C4C4544-003A-3910-804B-B2C04F4E4B32\n").as_deref(),
            Some(id.as_str())
        );
        assert_ne!(machine_id_of("4c4c4544003a3910804bb2c04f4e4b33"), Some(id));
        for unset in [
            "",
            "uninitialized",
            "00000000-0000-0000-0000-000000000000",
            "xyz",
        ] {
            assert_eq!(machine_id_of(unset), None, "{unset:?}");
        }
    }
}
