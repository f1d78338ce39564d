//! macOS back end of the machine / environment record, from the OS's own sources: sysctl
//! (`hw.*`, `machdep.cpu.*`, `kern.*`, `vm.swapusage`), host_statistics64 (available memory),
//! getloadavg, getuid/geteuid. Type-checked in CI; no macOS machine runs it here.

use std::ffi::{CString, c_void};

use chrono::Utc;

use crate::system::{
    Cache, CacheKind, Cpu, Environment, LoadAvg, Machine, Notes, Tsc, Virtualization,
};

fn note(notes: &mut Notes, keys: &[&str], why: &str) {
    for k in keys {
        notes.insert((*k).to_string(), why.to_string());
    }
}

/// Raw sysctlbyname bytes.
fn sysctl_raw(name: &str) -> Option<Vec<u8>> {
    let c = CString::new(name).ok()?;
    let mut len: libc::size_t = 0;
    // SAFETY: a size query: null buffer, valid length pointer.
    if unsafe {
        libc::sysctlbyname(
            c.as_ptr(),
            std::ptr::null_mut(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    } != 0
        || len == 0
    {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: the buffer holds `len` bytes.
    if unsafe {
        libc::sysctlbyname(
            c.as_ptr(),
            buf.as_mut_ptr().cast::<c_void>(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    } != 0
    {
        return None;
    }
    buf.truncate(len);
    Some(buf)
}

fn sysctl_string(name: &str) -> Option<String> {
    let b = sysctl_raw(name)?;
    let s = String::from_utf8_lossy(&b)
        .trim_end_matches('\0')
        .trim()
        .to_string();
    (!s.is_empty()).then_some(s)
}

/// An integer sysctl (4 or 8 bytes, as the kernel returns it).
fn sysctl_u64(name: &str) -> Option<u64> {
    let b = sysctl_raw(name)?;
    match b.len() {
        4 => Some(u64::from(u32::from_ne_bytes(b[..4].try_into().ok()?))),
        8 => Some(u64::from_ne_bytes(b[..8].try_into().ok()?)),
        _ => None,
    }
}

/// `hw.cacheconfig`: CPUs sharing each level (index 0 = memory, 1 = L1, 2 = L2 ...).
fn cache_sharing() -> Vec<u64> {
    sysctl_raw("hw.cacheconfig")
        .map(|b| {
            b.chunks_exact(8)
                .filter_map(|c| c.try_into().ok().map(u64::from_ne_bytes))
                .collect()
        })
        .unwrap_or_default()
}

/// This machine's id: [`crate::system::machine_id_of`] the hardware UUID (IOPlatformUUID, as
/// `gethostuuid` returns it), or None with the reason noted as `machine_id`.
fn machine_id(notes: &mut Notes) -> Option<String> {
    let mut uuid = [0u8; 16];
    let wait = libc::timespec {
        tv_sec: 5,
        tv_nsec: 0,
    };
    // SAFETY: a 16-byte buffer, as uuid_t is; a valid timespec.
    let rc = unsafe { libc::gethostuuid(uuid.as_mut_ptr(), &wait) };
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    match (rc, crate::system::machine_id_of(&hex)) {
        (0, Some(id)) => {
            note(
                notes,
                &["machine_id"],
                "keyed hash of IOPlatformUUID (gethostuuid)",
            );
            Some(id)
        }
        _ => {
            let why = format!(
                "unsupported: gethostuuid failed ({}); runs of this machine are known by hostname only",
                std::io::Error::last_os_error()
            );
            note(notes, &["machine_id"], &why);
            None
        }
    }
}

/// A sysctl count or size, None when absent or 0.
fn nz(v: Option<u64>) -> Option<u64> {
    v.filter(|&v| v > 0)
}

/// Static facts about this machine.
pub fn machine() -> Machine {
    let mut notes = Notes::new();
    let caches = caches(&mut notes);
    let (cpu, virtualization) = cpu(&mut notes);
    let tsc = tsc();
    note(
        &mut notes,
        &["clocksource", "preemption", "cgroup", "mitigations"],
        "not applicable on macos",
    );
    note(&mut notes, &["workdir"], "not yet implemented on macos");
    Machine {
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        os_name: Some("macOS".to_string()),
        os_version: sysctl_string("kern.osproductversion"),
        kernel_release: sysctl_string("kern.osrelease"),
        kernel_version: sysctl_string("kern.version"),
        hostname: sysctl_string("kern.hostname"),
        machine_id: machine_id(&mut notes),
        cpu,
        caches,
        memory_total_bytes: nz(sysctl_u64("hw.memsize")),
        page_size_bytes: nz(sysctl_u64("hw.pagesize")),
        system_vendor: Some("Apple".to_string()),
        system_product: sysctl_string("hw.model"),
        virtualization,
        tsc,
        notes,
        ..Default::default()
    }
}

/// The caches (`hw.l*cachesize`, shared as `hw.cacheconfig` says, lines of
/// `hw.cachelinesize`); on Apple silicon a note that they describe one core type.
fn caches(notes: &mut Notes) -> Vec<Cache> {
    let line = nz(sysctl_u64("hw.cachelinesize")).map(|v| v as u32);
    let sharing = cache_sharing();
    let sizes = [
        ("hw.l1dcachesize", 1u8, CacheKind::Data),
        ("hw.l1icachesize", 1, CacheKind::Instruction),
        ("hw.l2cachesize", 2, CacheKind::Unified),
        ("hw.l3cachesize", 3, CacheKind::Unified),
    ]
    .map(|(name, level, kind)| (level, kind, nz(sysctl_u64(name))));
    if cfg!(target_arch = "aarch64") {
        notes.insert(
            "caches".into(),
            "hw.l*cachesize: on Apple silicon these describe one core type; per-type sizes are \
             under hw.perflevel*"
                .into(),
        );
    }
    caches_of(&sizes, &sharing, line)
}

/// The caches of known size among `sizes` (level, kind, size), each shared by the CPUs
/// `sharing` gives for its level (`hw.cacheconfig`: index = level; 0 = unknown), with lines of
/// `line` bytes.
fn caches_of(
    sizes: &[(u8, CacheKind, Option<u64>)],
    sharing: &[u64],
    line: Option<u32>,
) -> Vec<Cache> {
    let shared = |level: usize| {
        sharing
            .get(level)
            .copied()
            .filter(|&n| n > 0)
            .map(|n| n as u32)
    };
    sizes
        .iter()
        .filter_map(|&(level, kind, size)| {
            Some(Cache {
                level,
                kind,
                size_bytes: Some(size?),
                shared_by_cpus: shared(level as usize),
                line_size_bytes: line,
            })
        })
        .collect()
}

/// The CPU (`machdep.cpu.*`, `hw.*cpu*`, with a note where no nominal frequency is exposed)
/// and whether this is a virtual machine (`kern.hv_vmm_present`, else the CPUID VMM feature on
/// x86_64).
fn cpu(notes: &mut Notes) -> (Cpu, Virtualization) {
    let logical = nz(sysctl_u64("hw.logicalcpu_max").or_else(|| sysctl_u64("hw.logicalcpu")));
    let physical = nz(sysctl_u64("hw.physicalcpu_max").or_else(|| sysctl_u64("hw.physicalcpu")));
    let features = sysctl_string("machdep.cpu.features").unwrap_or_default();
    let hypervisor_flag =
        cfg!(target_arch = "x86_64").then(|| features.split_whitespace().any(|f| f == "VMM"));
    let vmm = sysctl_u64("kern.hv_vmm_present").map(|v| v != 0);
    let cpu = Cpu {
        model_name: sysctl_string("machdep.cpu.brand_string"),
        vendor: sysctl_string("machdep.cpu.vendor")
            .or_else(|| cfg!(target_arch = "aarch64").then(|| "Apple".to_string())),
        family: sysctl_u64("machdep.cpu.family").map(|v| v as u32),
        model: sysctl_u64("machdep.cpu.model").map(|v| v as u32),
        stepping: sysctl_u64("machdep.cpu.stepping").map(|v| v as u32),
        microcode: sysctl_u64("machdep.cpu.microcode_version").map(|v| format!("{v:#x}")),
        logical_cpus: logical.map(|v| v as u32),
        physical_cores: physical.map(|v| v as u32),
        sockets: nz(sysctl_u64("hw.packages")).map(|v| v as u32),
        smt_active: logical.zip(physical).map(|(l, p)| l > p),
        smt_control: None,
        nominal_mhz: nz(sysctl_u64("hw.cpufrequency")).map(|hz| hz as f64 / 1e6),
        max_mhz: nz(sysctl_u64("hw.cpufrequency_max")).map(|hz| hz as f64 / 1e6),
        reported_mhz: None,
    };
    if cpu.nominal_mhz.is_none() {
        notes.insert(
            "cpu.nominal_mhz".into(),
            "not exposed on macos (hw.cpufrequency is absent on Apple silicon)".into(),
        );
    }
    let virtualization = Virtualization {
        virtualized: vmm.or(hypervisor_flag),
        hypervisor_flag,
        vendor: None,
        vendor_source: vmm.map(|_| "sysctl kern.hv_vmm_present".to_string()),
        free_page_reporting: None,
    };
    (cpu, virtualization)
}

/// The TSC: on x86_64 constant and nonstop when CPUID's extended features list TSCI (invariant
/// TSC); nothing known on Apple silicon.
fn tsc() -> Tsc {
    if cfg!(target_arch = "x86_64") {
        let leaf7 = sysctl_string("machdep.cpu.extfeatures").unwrap_or_default();
        let inv = leaf7.split_whitespace().any(|f| f == "TSCI");
        Tsc {
            constant: Some(inv),
            nonstop: Some(inv),
            known_freq: None,
        }
    } else {
        Tsc::default()
    }
}

/// Free + inactive + speculative pages (what the VM can hand out without paging), from
/// host_statistics64(HOST_VM_INFO64).
#[allow(deprecated)] // libc's mach_host_self: the mach2 crate is not worth a dependency here
fn mem_available() -> Option<u64> {
    // SAFETY: vm_statistics64 is plain old data; the count is its size in integers, as the call
    // requires; mach_host_self returns a send right to the host port.
    unsafe {
        let mut stats: libc::vm_statistics64 = std::mem::zeroed();
        let mut count = libc::HOST_VM_INFO64_COUNT;
        let rc = libc::host_statistics64(
            libc::mach_host_self(),
            libc::HOST_VM_INFO64,
            (&mut stats as *mut libc::vm_statistics64).cast(),
            &mut count,
        );
        if rc != 0 {
            return None;
        }
        let page = sysctl_u64("hw.pagesize")?;
        let pages = u64::from(stats.free_count)
            + u64::from(stats.inactive_count)
            + u64::from(stats.speculative_count);
        Some(pages * page)
    }
}

/// A snapshot of the environment (returns at once).
pub fn environment() -> Environment {
    let mut notes = Notes::new();
    let mut l = [0f64; 3];
    // SAFETY: the buffer holds 3 doubles.
    let load_avg = (unsafe { libc::getloadavg(l.as_mut_ptr(), 3) } == 3).then_some(LoadAvg {
        one: l[0],
        five: l[1],
        fifteen: l[2],
        runnable: None,
        total: None,
    });
    let swap = sysctl_raw("vm.swapusage")
        .filter(|b| b.len() >= std::mem::size_of::<libc::xsw_usage>())
        // SAFETY: the buffer holds an xsw_usage (checked length); read unaligned.
        .map(|b| unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<libc::xsw_usage>()) });
    notes.insert(
        "mem_available_bytes".into(),
        "free + inactive + speculative pages (host_statistics64)".into(),
    );
    // SAFETY: no preconditions.
    let (uid, euid) = unsafe { (libc::getuid(), libc::geteuid()) };
    note(&mut notes, &["governors", "boost"], "not exposed on macos");
    note(
        &mut notes,
        &["affinity"],
        "not supported on macos (affinity tags are only hints)",
    );
    note(
        &mut notes,
        &[
            "isolated_cpus",
            "nohz_full_cpus",
            "cpu_pressure",
            "thp",
            "timer_slack_ns",
        ],
        "not applicable on macos",
    );
    note(
        &mut notes,
        &["aslr", "cpu_time", "procs_running", "realtime"],
        "not yet implemented on macos",
    );
    Environment {
        taken_at: Utc::now(),
        load_avg,
        mem_available_bytes: mem_available(),
        swap_total_bytes: swap.map(|s| s.xsu_total),
        swap_free_bytes: swap.map(|s| s.xsu_avail),
        uid: Some(uid),
        is_root: Some(euid == 0),
        notes,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the caches of known size, each shared as `hw.cacheconfig` says for its level (0 or
    /// no entry: unknown), all with the one line size.
    #[test]
    fn caches_of_known_size_with_their_sharing() {
        let sizes = [
            (1, CacheKind::Data, Some(64 << 10)),
            (1, CacheKind::Instruction, Some(128 << 10)),
            (2, CacheKind::Unified, Some(4 << 20)),
            (3, CacheKind::Unified, None),
        ];
        let c = caches_of(&sizes, &[8, 1, 0], Some(128));
        let got: Vec<(u8, CacheKind, Option<u64>, Option<u32>, Option<u32>)> = c
            .iter()
            .map(|c| {
                (
                    c.level,
                    c.kind,
                    c.size_bytes,
                    c.shared_by_cpus,
                    c.line_size_bytes,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (1, CacheKind::Data, Some(64 << 10), Some(1), Some(128)),
                (
                    1,
                    CacheKind::Instruction,
                    Some(128 << 10),
                    Some(1),
                    Some(128)
                ),
                (2, CacheKind::Unified, Some(4 << 20), None, Some(128)),
            ]
        );
    }
}
