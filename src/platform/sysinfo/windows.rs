//! Windows back end of the machine / environment record, from the OS's own sources:
//! GetLogicalProcessorInformationEx (cores, packages, caches), GlobalMemoryStatusEx (memory),
//! RtlGetVersion and the registry (OS version, product name, nominal MHz, firmware vendor),
//! CPUID (model, vendor, family, hypervisor), GetSystemTimes (busy % over a short window),
//! GetProcessAffinityMask and the process token's elevation. Fields Windows has no notion of are
//! None with a note saying so.

use std::time::Duration;

use chrono::Utc;
use windows_sys::Wdk::System::SystemServices::RtlGetVersion;
use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, HANDLE};
use windows_sys::Win32::Security::{
    GetTokenInformation, TOKEN_ELEVATION, TOKEN_QUERY, TokenElevation,
};
use windows_sys::Win32::System::Registry::{
    HKEY_LOCAL_MACHINE, RRF_RT_REG_DWORD, RRF_RT_REG_SZ, RRF_SUBKEY_WOW6464KEY, RegGetValueW,
};
use windows_sys::Win32::System::SystemInformation::{
    ComputerNameDnsHostname, GetComputerNameExW, GetLogicalProcessorInformationEx, GetSystemInfo,
    GlobalMemoryStatusEx, MEMORYSTATUSEX, OSVERSIONINFOW, RelationAll, SYSTEM_INFO,
    SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetProcessAffinityMask, GetSystemTimes, OpenProcessToken,
};

use crate::platform::cpuid::CpuId;
use crate::system::{
    Cache, CacheKind, Cpu, CpuTime, Environment, Machine, Notes, Tsc, Virtualization,
};

fn note(notes: &mut Notes, keys: &[&str], why: &str) {
    for k in keys {
        notes.insert((*k).to_string(), why.to_string());
    }
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// A REG_SZ value under HKEY_LOCAL_MACHINE.
fn reg_string(subkey: &str, value: &str) -> Option<String> {
    reg_string_flags(subkey, value, RRF_RT_REG_SZ).ok()
}

/// A REG_SZ value under HKEY_LOCAL_MACHINE with RegGetValueW `flags`; Err(the error code).
fn reg_string_flags(subkey: &str, value: &str, flags: u32) -> Result<String, u32> {
    let (k, v) = (wide(subkey), wide(value));
    let mut buf = [0u16; 512];
    let mut size = std::mem::size_of_val(&buf) as u32;
    // SAFETY: NUL-terminated names; the buffer size is given in bytes.
    let rc = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            k.as_ptr(),
            v.as_ptr(),
            flags,
            std::ptr::null_mut(),
            buf.as_mut_ptr().cast(),
            &mut size,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    let n = (size as usize / 2).min(buf.len());
    let s = String::from_utf16_lossy(&buf[..n]);
    let s = s.trim_end_matches('\0').trim().to_string();
    if s.is_empty() { Err(0) } else { Ok(s) }
}

/// This machine's id: [`crate::system::machine_id_of`] the registry's MachineGuid (read from the
/// 64-bit view, which a 32-bit process would otherwise miss), or None with the reason noted as
/// `machine_id`.
fn machine_id(notes: &mut Notes) -> Option<String> {
    let key = "SOFTWARE\\Microsoft\\Cryptography";
    match reg_string_flags(key, "MachineGuid", RRF_RT_REG_SZ | RRF_SUBKEY_WOW6464KEY) {
        Ok(g) => match crate::system::machine_id_of(&g) {
            Some(id) => {
                note(
                    notes,
                    &["machine_id"],
                    "keyed hash of HKLM\\SOFTWARE\\Microsoft\\Cryptography MachineGuid",
                );
                Some(id)
            }
            None => {
                note(
                    notes,
                    &["machine_id"],
                    "unsupported: MachineGuid holds no id; runs of this machine are known by hostname only",
                );
                None
            }
        },
        Err(code) => {
            note(
                notes,
                &["machine_id"],
                &format!(
                    "unsupported: MachineGuid unreadable ({}); runs of this machine are known by hostname only",
                    std::io::Error::from_raw_os_error(code as i32)
                ),
            );
            None
        }
    }
}

/// A REG_DWORD value under HKEY_LOCAL_MACHINE.
fn reg_dword(subkey: &str, value: &str) -> Option<u32> {
    let (k, v) = (wide(subkey), wide(value));
    let mut d = 0u32;
    let mut size = 4u32;
    // SAFETY: NUL-terminated names; a 4-byte buffer.
    let rc = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            k.as_ptr(),
            v.as_ptr(),
            RRF_RT_REG_DWORD,
            std::ptr::null_mut(),
            (&mut d as *mut u32).cast(),
            &mut size,
        )
    };
    (rc == 0).then_some(d)
}

const CURRENT_VERSION: &str = "SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion";

/// (major, minor, build) from RtlGetVersion (GetVersionEx lies to unmanifested programs).
fn rtl_version() -> Option<(u32, u32, u32)> {
    // SAFETY: OSVERSIONINFOW is plain old data; its size field is set as the call requires.
    let mut v: OSVERSIONINFOW = unsafe { std::mem::zeroed() };
    v.dwOSVersionInfoSize = std::mem::size_of::<OSVERSIONINFOW>() as u32;
    // SAFETY: valid pointer to an initialised OSVERSIONINFOW.
    (unsafe { RtlGetVersion(&mut v) } == 0).then_some((
        v.dwMajorVersion,
        v.dwMinorVersion,
        v.dwBuildNumber,
    ))
}

fn hostname() -> Option<String> {
    let mut buf = [0u16; 256];
    let mut n = buf.len() as u32;
    // SAFETY: the size passed is the buffer's length in u16s.
    let ok = unsafe { GetComputerNameExW(ComputerNameDnsHostname, buf.as_mut_ptr(), &mut n) } != 0;
    (ok && n > 0).then(|| String::from_utf16_lossy(&buf[..(n as usize).min(buf.len())]))
}

pub(crate) fn memory_status() -> Option<MEMORYSTATUSEX> {
    // SAFETY: plain old data; dwLength set as the call requires.
    let mut m: MEMORYSTATUSEX = unsafe { std::mem::zeroed() };
    m.dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
    // SAFETY: valid pointer.
    (unsafe { GlobalMemoryStatusEx(&mut m) } != 0).then_some(m)
}

/// What GetLogicalProcessorInformationEx(RelationAll) says.
#[derive(Default, Debug)]
struct Topology {
    logical: u32,
    cores: u32,
    packages: u32,
    smt: bool,
    /// Caches whose mask includes CPU 0 of group 0.
    caches: Vec<Cache>,
}

fn topology() -> Option<Topology> {
    let mut len = 0u32;
    // SAFETY: a size query (null buffer); fails with ERROR_INSUFFICIENT_BUFFER and sets len.
    unsafe { GetLogicalProcessorInformationEx(RelationAll, std::ptr::null_mut(), &mut len) };
    if len == 0 {
        return None;
    }
    // u64 storage: the records contain pointer-sized fields and must be 8-byte aligned.
    let mut buf = vec![0u64; (len as usize).div_ceil(8)];
    // SAFETY: the buffer holds at least `len` bytes.
    let ok = unsafe {
        GetLogicalProcessorInformationEx(
            RelationAll,
            buf.as_mut_ptr()
                .cast::<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX>(),
            &mut len,
        )
    } != 0;
    if !ok {
        return None;
    }
    // SAFETY: reinterpreting the filled prefix of the buffer as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len as usize) };
    Some(parse_topology(bytes))
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// GROUP_AFFINITY array (16 bytes each: KAFFINITY mask, WORD group, 3 reserved WORDs):
/// (total CPUs, whether group 0's CPU 0 is included).
fn group_masks(rec: &[u8], at: usize, count: u16) -> (u32, bool) {
    let mut cpus = 0;
    let mut has_cpu0 = false;
    for i in 0..count.max(1) as usize {
        let o = at + 16 * i;
        let (Some(mask), Some(group)) = (u64_at(rec, o), u16_at(rec, o + 8)) else {
            break;
        };
        cpus += mask.count_ones();
        has_cpu0 |= group == 0 && mask & 1 == 1;
    }
    (cpus, has_cpu0)
}

/// Parses the variable-length SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX records (layout from
/// winnt.h: Relationship u32, Size u32, then the relationship's structure at offset 8).
fn parse_topology(b: &[u8]) -> Topology {
    let mut t = Topology::default();
    let mut off = 0usize;
    while let (Some(rel), Some(size)) = (u32_at(b, off), u32_at(b, off + 4)) {
        let size = size as usize;
        let Some(rec) = b.get(off..off + size).filter(|_| size >= 8) else {
            break;
        };
        match rel {
            // RelationProcessorCore: Flags u8 @8 (LTP_PC_SMT = 1), GroupCount u16 @30, masks @32.
            0 => {
                t.cores += 1;
                t.smt |= rec.get(8).is_some_and(|f| f & 1 == 1);
                let (cpus, _) = group_masks(rec, 32, u16_at(rec, 30).unwrap_or(1));
                t.logical += cpus;
            }
            // RelationCache: Level u8 @8, LineSize u16 @10, CacheSize u32 @12, Type u32 @16,
            // GroupCount u16 @38 (0 before Windows 11 / Server 2022: one mask), masks @40.
            2 => {
                let (cpus, has_cpu0) = group_masks(rec, 40, u16_at(rec, 38).unwrap_or(1));
                if has_cpu0 {
                    let kind = match u32_at(rec, 16) {
                        Some(1) => CacheKind::Instruction,
                        Some(2) => CacheKind::Data,
                        _ => CacheKind::Unified,
                    };
                    t.caches.push(Cache {
                        level: rec.get(8).copied().unwrap_or(0),
                        kind,
                        size_bytes: u32_at(rec, 12).map(u64::from),
                        shared_by_cpus: Some(cpus),
                        line_size_bytes: u16_at(rec, 10).map(u32::from),
                    });
                }
            }
            // RelationProcessorPackage.
            3 => t.packages += 1,
            _ => {}
        }
        off += size;
    }
    // L1d, L1i, L2, L3 order, as on Linux.
    t.caches.sort_by_key(|c| {
        (
            c.level,
            match c.kind {
                CacheKind::Data => 0,
                CacheKind::Instruction => 1,
                CacheKind::Unified => 2,
            },
        )
    });
    t
}

/// Static facts about this machine.
pub fn machine() -> Machine {
    let mut notes = Notes::new();
    let os = std::env::consts::OS.to_string();
    let product = reg_string(CURRENT_VERSION, "ProductName");
    let display = reg_string(CURRENT_VERSION, "DisplayVersion")
        .or_else(|| reg_string(CURRENT_VERSION, "ReleaseId"));
    let version = rtl_version();
    if version.is_none() {
        note(&mut notes, &["kernel"], "RtlGetVersion failed");
    }
    let ubr = reg_dword(CURRENT_VERSION, "UBR");
    let kernel_version = version.map(|(_, _, b)| kernel_build(b, ubr));
    notes.insert(
        "os_name".into(),
        "registry HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion ProductName / \
         DisplayVersion; kernel from RtlGetVersion"
            .into(),
    );

    let id = crate::platform::cpuid::cpuid();
    let (cpu, caches) = cpu(&id, &mut notes);
    let bios = "HARDWARE\\DESCRIPTION\\System\\BIOS";
    let (virtualization, tsc) = virtualization_and_tsc(&id, &mut notes);
    // SAFETY: SYSTEM_INFO is plain old data filled by the call.
    let mut si: SYSTEM_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { GetSystemInfo(&mut si) };
    not_read_notes(&mut notes);
    Machine {
        os,
        arch: std::env::consts::ARCH.to_string(),
        os_name: product,
        os_version: display,
        kernel_release: version.map(|(a, b, c)| format!("{a}.{b}.{c}")),
        kernel_version,
        hostname: hostname().or_else(|| std::env::var("COMPUTERNAME").ok()),
        machine_id: machine_id(&mut notes),
        cpu,
        caches,
        memory_total_bytes: memory_status().map(|m| m.ullTotalPhys),
        page_size_bytes: (si.dwPageSize > 0).then_some(u64::from(si.dwPageSize)),
        system_vendor: reg_string(bios, "SystemManufacturer"),
        system_product: reg_string(bios, "SystemProductName"),
        virtualization,
        tsc,
        notes,
        ..Default::default()
    }
}

/// The kernel version as shown: build `build`, with the update build revision where known.
fn kernel_build(build: u32, ubr: Option<u32>) -> String {
    match ubr {
        Some(u) => format!("build {build}.{u}"),
        None => format!("build {build}"),
    }
}

/// The CPU (CPUID first, the registry's CentralProcessor\0 where CPUID says nothing; counts
/// from GetLogicalProcessorInformationEx) and the caches of CPU 0.
fn cpu(id: &CpuId, notes: &mut Notes) -> (Cpu, Vec<Cache>) {
    let topo = topology();
    if topo.is_none() {
        note(
            notes,
            &["cpu.topology", "caches"],
            "GetLogicalProcessorInformationEx failed",
        );
    }
    let topo = topo.unwrap_or_default();
    let nz = |v: u32| (v > 0).then_some(v);
    let processor0 = "HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0";
    let cpu = Cpu {
        model_name: id
            .brand
            .clone()
            .or_else(|| reg_string(processor0, "ProcessorNameString")),
        vendor: id
            .vendor
            .clone()
            .or_else(|| reg_string(processor0, "VendorIdentifier")),
        family: id.family,
        model: id.model,
        stepping: id.stepping,
        microcode: None,
        logical_cpus: nz(topo.logical).or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32)
        }),
        physical_cores: nz(topo.cores),
        sockets: nz(topo.packages),
        smt_active: (topo.cores > 0).then_some(topo.smt),
        smt_control: None,
        nominal_mhz: reg_dword(processor0, "~MHz").map(f64::from),
        max_mhz: None,
        reported_mhz: None,
    };
    notes.insert(
        "cpu.nominal_mhz".into(),
        "registry CentralProcessor\\0 ~MHz".into(),
    );
    note(
        notes,
        &["cpu.microcode", "cpu.smt_control", "cpu.max_mhz"],
        "not read on windows",
    );
    (cpu, topo.caches)
}

/// Virtualization and the TSC, from CPUID alone (the hypervisor bit and signature, the
/// invariant TSC bit).
fn virtualization_and_tsc(id: &CpuId, notes: &mut Notes) -> (Virtualization, Tsc) {
    let virtualization = Virtualization {
        virtualized: id.hypervisor_flag,
        hypervisor_flag: id.hypervisor_flag,
        vendor: id.hypervisor.clone(),
        vendor_source: id
            .hypervisor
            .as_ref()
            .map(|_| "cpuid 0x40000000".to_string()),
        free_page_reporting: None,
    };
    let tsc = Tsc {
        constant: id.invariant_tsc,
        nonstop: id.invariant_tsc,
        known_freq: None,
    };
    if id.invariant_tsc.is_some() {
        notes.insert(
            "tsc".into(),
            "constant/nonstop from CPUID 0x80000007 EDX bit 8 (invariant TSC)".into(),
        );
    }
    (virtualization, tsc)
}

/// The notes for what Windows has no notion of, what is not read yet, and the compatibility
/// layer (Wine) the process runs under.
fn not_read_notes(notes: &mut Notes) {
    note(
        notes,
        &["clocksource", "preemption", "cgroup"],
        "not applicable on windows",
    );
    note(
        notes,
        &["mitigations", "workdir"],
        "not yet implemented on windows",
    );
    if let Some(layer) = crate::platform::compatibility_layer() {
        notes.insert(
            "compatibility_layer".into(),
            format!("running under {layer}: behaviour is Windows', timings are not"),
        );
    }
}

fn filetime(f: &FILETIME) -> u64 {
    (u64::from(f.dwHighDateTime) << 32) | u64::from(f.dwLowDateTime)
}

/// (idle, kernel including idle, user) in 100 ns units, all CPUs.
fn system_times() -> Option<(u64, u64, u64)> {
    let z = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut i, mut k, mut u) = (z, z, z);
    // SAFETY: valid pointers.
    (unsafe { GetSystemTimes(&mut i, &mut k, &mut u) } != 0)
        .then(|| (filetime(&i), filetime(&k), filetime(&u)))
}

/// Whether the process token is elevated (administrator).
fn elevated() -> Option<bool> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: pseudo-handle of this process; token handle closed below.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return None;
    }
    let mut e = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut len = 0u32;
    // SAFETY: a valid token handle and a TOKEN_ELEVATION-sized buffer.
    let ok = unsafe {
        GetTokenInformation(
            token,
            TokenElevation,
            (&mut e as *mut TOKEN_ELEVATION).cast(),
            std::mem::size_of::<TOKEN_ELEVATION>() as u32,
            &mut len,
        )
    } != 0;
    // SAFETY: we own the handle.
    unsafe { CloseHandle(token) };
    ok.then_some(e.TokenIsElevated != 0)
}

/// A snapshot of the environment (takes about 200 ms: the busy-time window).
pub fn environment() -> Environment {
    let mut notes = Notes::new();
    let before = system_times();
    let t0 = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(200));
    let after = system_times();
    let window_ms = t0.elapsed().as_secs_f64() * 1e3;
    let cpu_time = match (before, after) {
        (Some((i0, k0, u0)), Some((i1, k1, u1))) => {
            let idle = i1.saturating_sub(i0);
            // Kernel time includes idle time (documented; Wine does the same).
            let total = k1.saturating_sub(k0) + u1.saturating_sub(u0);
            Some(CpuTime {
                window_ms: Some(window_ms),
                window_busy_pct: (total > 0)
                    .then(|| 100.0 * total.saturating_sub(idle) as f64 / total as f64),
                ..Default::default()
            })
        }
        _ => None,
    };
    notes.insert(
        "cpu_time".into(),
        "busy % from GetSystemTimes over the window; Windows does not report steal or iowait"
            .into(),
    );
    let mem = memory_status();
    notes.insert(
        "swap_total_bytes".into(),
        "not reported: Windows gives a commit limit (RAM + page files), not a swap size".into(),
    );
    let mut proc_mask = 0usize;
    let mut sys_mask = 0usize;
    // SAFETY: pseudo-handle and valid pointers.
    let affinity =
        (unsafe { GetProcessAffinityMask(GetCurrentProcess(), &mut proc_mask, &mut sys_mask) }
            != 0)
            .then(|| {
                (0..usize::BITS)
                    .filter(|c| proc_mask & (1 << c) != 0)
                    .collect()
            });
    notes.insert(
        "affinity".into(),
        "GetProcessAffinityMask (this processor group only)".into(),
    );
    let is_root = elevated();
    notes.insert(
        "is_root".into(),
        "the process token is elevated (administrator)".into(),
    );
    note(&mut notes, &["load_avg"], "Windows keeps no load average");
    note(
        &mut notes,
        &["procs_running"],
        "not read on windows (no run-queue count without performance counters)",
    );
    note(
        &mut notes,
        &["uid"],
        "not applicable on windows (accounts are SIDs)",
    );
    note(
        &mut notes,
        &["governors", "boost"],
        "not read on windows (the power plan is set with powercfg)",
    );
    note(
        &mut notes,
        &[
            "aslr",
            "isolated_cpus",
            "nohz_full_cpus",
            "cpu_pressure",
            "thp",
            "timer_slack_ns",
        ],
        "not applicable on windows",
    );
    note(&mut notes, &["realtime"], "not yet implemented on windows");
    Environment {
        taken_at: Utc::now(),
        cpu_time,
        mem_available_bytes: mem.map(|m| m.ullAvailPhys),
        affinity,
        is_root,
        notes,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds one record: Relationship, Size, then `body` placed at offset 8.
    fn record(rel: u32, body: &[(usize, &[u8])], size: usize) -> Vec<u8> {
        let mut r = vec![0u8; size];
        r[0..4].copy_from_slice(&rel.to_le_bytes());
        r[4..8].copy_from_slice(&(size as u32).to_le_bytes());
        for (at, bytes) in body {
            r[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        r
    }

    /// The kernel version names the build, with the update revision where the registry has it.
    #[test]
    fn the_kernel_build_has_its_revision_where_known() {
        assert_eq!(kernel_build(22631, Some(4317)), "build 22631.4317");
        assert_eq!(kernel_build(22631, None), "build 22631");
    }

    /// Virtualization and the TSC from CPUID alone; the TSC's note only where CPUID said.
    #[test]
    fn virtualization_and_tsc_come_from_cpuid() {
        let id = CpuId {
            hypervisor_flag: Some(true),
            hypervisor: Some("KVMKVMKVM".into()),
            invariant_tsc: Some(true),
            ..Default::default()
        };
        let mut notes = Notes::new();
        let (v, t) = virtualization_and_tsc(&id, &mut notes);
        assert_eq!(v.virtualized, Some(true));
        assert_eq!(v.vendor.as_deref(), Some("KVMKVMKVM"));
        assert_eq!(v.vendor_source.as_deref(), Some("cpuid 0x40000000"));
        assert_eq!((t.constant, t.nonstop), (Some(true), Some(true)));
        assert!(notes.contains_key("tsc"));
        let mut notes = Notes::new();
        let (v, t) = virtualization_and_tsc(&CpuId::default(), &mut notes);
        assert_eq!((v.vendor_source, t.constant), (None, None));
        assert!(notes.is_empty());
    }

    #[test]
    fn topology_records_are_parsed() {
        let mut b = Vec::new();
        // Two SMT cores with CPUs {0,1} and {2,3}.
        for mask in [0b0011u64, 0b1100] {
            b.extend(record(
                0,
                &[
                    (8, &[1]),
                    (30, &1u16.to_le_bytes()),
                    (32, &mask.to_le_bytes()),
                ],
                48,
            ));
        }
        // L1d 32 KiB shared by CPUs 0,1; L2 1 MiB on CPUs 2,3 (not CPU 0: skipped); L3 on all.
        let cache = |level: u8, typ: u32, size: u32, mask: u64| {
            record(
                2,
                &[
                    (8, &[level]),
                    (10, &64u16.to_le_bytes()),
                    (12, &size.to_le_bytes()),
                    (16, &typ.to_le_bytes()),
                    (38, &1u16.to_le_bytes()),
                    (40, &mask.to_le_bytes()),
                ],
                56,
            )
        };
        b.extend(cache(3, 0, 8 << 20, 0b1111));
        b.extend(cache(1, 2, 32 << 10, 0b0011));
        b.extend(cache(2, 0, 1 << 20, 0b1100));
        b.extend(record(3, &[], 48));
        let t = parse_topology(&b);
        assert_eq!((t.logical, t.cores, t.packages, t.smt), (4, 2, 1, true));
        let got: Vec<(u8, CacheKind, Option<u64>, Option<u32>)> = t
            .caches
            .iter()
            .map(|c| (c.level, c.kind, c.size_bytes, c.shared_by_cpus))
            .collect();
        assert_eq!(
            got,
            [
                (1, CacheKind::Data, Some(32 << 10), Some(2)),
                (3, CacheKind::Unified, Some(8 << 20), Some(4)),
            ]
        );
        // A truncated record ends the walk instead of reading past the buffer.
        let t = parse_topology(&b[..b.len() - 10]);
        assert_eq!(t.packages, 0);
    }

    #[test]
    fn this_machine_is_described() {
        let m = machine();
        assert_eq!(m.os, "windows");
        assert!(m.cpu.logical_cpus.unwrap() >= 1);
        assert!(m.memory_total_bytes.unwrap() > 0);
        assert!(m.kernel_release.is_some(), "{m:?}");
        let e = environment();
        let avail = e.mem_available_bytes.unwrap();
        assert!(avail > 0 && avail <= m.memory_total_bytes.unwrap());
        assert!(!e.affinity.unwrap().is_empty());
    }
}
