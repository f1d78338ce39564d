//! A process's own context-switch counters, read by the process itself (the policy study's
//! children report them on their result line), and this process's whole-command totals for
//! setting beside `perf stat -e context-switches`:
//! - Linux: `/proc/self/status` `voluntary_ctxt_switches` / `nonvoluntary_ctxt_switches` (per
//!   task: only meaningful for a single-threaded process, so `Threads:` is read too);
//! - macOS: `proc_pidinfo(getpid(), PROC_PIDTASKINFO)` `pti_csw` (a total, no split);
//! - Windows: `NtQuerySystemInformation(SystemProcessInformation)`, the sum of
//!   `SYSTEM_THREAD_INFORMATION.ContextSwitches` over the process's own threads (a total, no
//!   split); Wine leaves the field 0, which is reported as unsupported, never as a measurement.

use serde::{Deserialize, Serialize};

/// Own context-switch counters since the process started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnSwitches {
    /// Voluntary / involuntary switches (Linux only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vol: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invol: Option<u64>,
    /// All switches (vol + invol where split; the OS's own total elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Threads of the process when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    /// Why the counters are missing ("unsupported on …: …" or a read error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl OwnSwitches {
    fn missing(why: String) -> OwnSwitches {
        OwnSwitches {
            why: Some(why),
            ..Default::default()
        }
    }
}

/// Parse `/proc/<pid>/status`: (threads, voluntary, nonvoluntary switches).
pub fn parse_status(text: &str) -> Result<(u64, u64, u64), String> {
    let field = |name: &str| -> Result<u64, String> {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .ok_or_else(|| format!("no {name} line in /proc/self/status"))?;
        line.trim()
            .parse::<u64>()
            .map_err(|e| format!("{name} in /proc/self/status: {e}"))
    };
    Ok((
        field("Threads")?,
        field("voluntary_ctxt_switches")?,
        field("nonvoluntary_ctxt_switches")?,
    ))
}

/// How the own counters are read, for `Info::method`.
pub const OWN_SWITCHES_METHOD: &str = imp::METHOD;

/// Why the voluntary/involuntary split is missing on this OS (None: the split exists).
pub fn split_unsupported() -> Option<String> {
    imp::SPLIT_MISSING.map(|r| format!("unsupported on {}: {r}", crate::platform::OS_NAME))
}

/// The calling process's own counters.
pub fn own_switches() -> OwnSwitches {
    imp::own_switches()
}

/// Running under Wine (ntdll exports `wine_get_version`); false off Windows.
pub fn under_wine() -> bool {
    #[cfg(windows)]
    return imp::under_wine();
    #[cfg(not(windows))]
    false
}

/// This process's switches (all its threads, live and ended) and those of all its reaped
/// children, since it started: (self, children), each vol + invol. Linux only (getrusage
/// RUSAGE_SELF / RUSAGE_CHILDREN); elsewhere the reason.
pub fn command_switches() -> Result<(u64, u64), String> {
    imp::command_switches()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    pub const METHOD: &str = "/proc/self/status voluntary_ctxt_switches and nonvoluntary_ctxt_switches, read by the single-threaded child itself (Threads: 1 checked)";
    pub const SPLIT_MISSING: Option<&str> = None;

    pub fn own_switches() -> OwnSwitches {
        let text = match std::fs::read_to_string("/proc/self/status") {
            Ok(t) => t,
            Err(e) => return OwnSwitches::missing(format!("reading /proc/self/status: {e}")),
        };
        match parse_status(&text) {
            Ok((threads, vol, invol)) => OwnSwitches {
                vol: Some(vol),
                invol: Some(invol),
                total: Some(vol + invol),
                threads: Some(threads),
                why: None,
            },
            Err(e) => OwnSwitches::missing(e),
        }
    }

    fn rusage(who: libc::c_int) -> Result<u64, String> {
        // SAFETY: zeroed rusage is valid; valid out pointer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a local, valid output space for getrusage.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return Err(format!("getrusage: {}", std::io::Error::last_os_error()));
        }
        Ok(ru.ru_nvcsw as u64 + ru.ru_nivcsw as u64)
    }

    pub fn command_switches() -> Result<(u64, u64), String> {
        Ok((rusage(libc::RUSAGE_SELF)?, rusage(libc::RUSAGE_CHILDREN)?))
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use super::*;
    pub const METHOD: &str =
        "proc_pidinfo(getpid(), PROC_PIDTASKINFO) pti_csw, read by the child itself (a total)";
    pub const SPLIT_MISSING: Option<&str> = Some("proc_pidinfo gives only a total");

    pub fn own_switches() -> OwnSwitches {
        // SAFETY: zeroed proc_taskinfo is valid; the size passed is its size.
        let mut ti: libc::proc_taskinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::proc_taskinfo>() as libc::c_int;
        let n = unsafe {
            libc::proc_pidinfo(
                libc::getpid(),
                libc::PROC_PIDTASKINFO,
                0,
                (&mut ti as *mut libc::proc_taskinfo).cast(),
                size,
            )
        };
        if n != size {
            return OwnSwitches::missing(format!(
                "proc_pidinfo(PROC_PIDTASKINFO) returned {n} bytes: {}",
                std::io::Error::last_os_error()
            ));
        }
        OwnSwitches {
            total: Some(ti.pti_csw.max(0) as u64),
            threads: Some(ti.pti_threadnum.max(0) as u64),
            ..Default::default()
        }
    }

    pub fn command_switches() -> Result<(u64, u64), String> {
        Err(crate::platform::unsupported("getrusage gives no context switches").to_string())
    }
}

#[cfg(windows)]
mod imp {
    use super::*;
    use windows_sys::Wdk::System::SystemInformation::{
        NtQuerySystemInformation, SystemProcessInformation,
    };
    pub const METHOD: &str = "NtQuerySystemInformation(SystemProcessInformation): the sum of ContextSwitches over the child's own threads, read by the child itself (a total)";
    pub const SPLIT_MISSING: Option<&str> = Some(
        "the system gives only a total per thread (SYSTEM_THREAD_INFORMATION.ContextSwitches)",
    );

    /// SYSTEM_PROCESS_INFORMATION up to the thread array (64-bit layout, 0x100 bytes).
    #[repr(C)]
    struct ProcInfo {
        next_entry_offset: u32,
        number_of_threads: u32,
        _working_set_private: i64,
        _hard_faults: u32,
        _threads_high: u32,
        _cycle_time: u64,
        _create_time: i64,
        _user_time: i64,
        _kernel_time: i64,
        _image_name: [usize; 2],
        _base_priority: i32,
        unique_process_id: usize,
        _rest: [u8; 256 - 88],
    }
    /// SYSTEM_THREAD_INFORMATION (64-bit layout, 0x50 bytes).
    #[repr(C)]
    struct ThreadInfo {
        _kernel_time: i64,
        _user_time: i64,
        _create_time: i64,
        _wait_time: u32,
        _start_address: usize,
        _client_id: [usize; 2],
        _priority: i32,
        _base_priority: i32,
        context_switches: u32,
        _state: u32,
        _wait_reason: u32,
    }
    const _: () = assert!(std::mem::size_of::<ProcInfo>() == 0x100);
    const _: () = assert!(std::mem::offset_of!(ProcInfo, unique_process_id) == 80);
    const _: () = assert!(std::mem::size_of::<ThreadInfo>() == 0x50);
    const _: () = assert!(std::mem::offset_of!(ThreadInfo, context_switches) == 64);

    pub fn under_wine() -> bool {
        use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
        // SAFETY: NUL-terminated names; ntdll is always loaded.
        unsafe {
            let m = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
            !m.is_null() && GetProcAddress(m, c"wine_get_version".as_ptr().cast()).is_some()
        }
    }

    /// (threads, total switches) of process `pid` from one system snapshot.
    fn read(pid: u32) -> Result<(u64, u64), String> {
        let mut buf: Vec<u64> = vec![0; 1 << 15];
        for _ in 0..8 {
            let bytes = (buf.len() * 8) as u32;
            let mut need = 0u32;
            // SAFETY: buf is writable for `bytes` bytes and 8-aligned.
            let st = unsafe {
                NtQuerySystemInformation(
                    SystemProcessInformation,
                    buf.as_mut_ptr().cast(),
                    bytes,
                    &mut need,
                )
            };
            // STATUS_INFO_LENGTH_MISMATCH
            if st == 0xC000_0004_u32 as i32 {
                buf = vec![0; (need.max(bytes) as usize * 2).div_ceil(8)];
                continue;
            }
            if st < 0 {
                return Err(format!(
                    "NtQuerySystemInformation failed (0x{:08x})",
                    st as u32
                ));
            }
            let base = buf.as_ptr().cast::<u8>();
            let end = bytes as usize;
            let mut off = 0usize;
            loop {
                if off + std::mem::size_of::<ProcInfo>() > end {
                    break;
                }
                // SAFETY: in bounds (checked above). Entries need not be aligned (Wine packs
                // them after odd-length image names): copied out unaligned.
                let p = unsafe { base.add(off).cast::<ProcInfo>().read_unaligned() };
                if p.unique_process_id == pid as usize {
                    let n = p.number_of_threads as usize;
                    let first = off + std::mem::size_of::<ProcInfo>();
                    if first + n * std::mem::size_of::<ThreadInfo>() > end {
                        return Err("thread array past the buffer".into());
                    }
                    let total: u64 = (0..n)
                        .map(|i| {
                            // SAFETY: in bounds (checked above).
                            let t = unsafe {
                                base.add(first + i * std::mem::size_of::<ThreadInfo>())
                                    .cast::<ThreadInfo>()
                                    .read_unaligned()
                            };
                            u64::from(t.context_switches)
                        })
                        .sum();
                    return Ok((n as u64, total));
                }
                if p.next_entry_offset == 0 {
                    break;
                }
                off += p.next_entry_offset as usize;
            }
            return Err(format!("process {pid} not in the system process list"));
        }
        Err("the system process list kept growing".into())
    }

    pub fn own_switches() -> OwnSwitches {
        match read(std::process::id()) {
            Ok((_, 0)) if under_wine() => OwnSwitches::missing(
                "unsupported under Wine: the counter reads 0 (SYSTEM_THREAD_INFORMATION.ContextSwitches)".into(),
            ),
            Ok((threads, total)) => OwnSwitches {
                total: Some(total),
                threads: Some(threads),
                ..Default::default()
            },
            Err(e) => OwnSwitches::missing(e),
        }
    }

    pub fn command_switches() -> Result<(u64, u64), String> {
        Err(crate::platform::unsupported(
            "no total over reaped children (there is no RUSAGE_CHILDREN)",
        )
        .to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_parser_reads_threads_and_switches() {
        let text = "Name:\tosgauge\nState:\tR (running)\nThreads:\t1\nSigQ:\t0/62811\n\
                    voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t  3\n";
        assert_eq!(parse_status(text), Ok((1, 12, 3)));
        // A missing field or garbage is an error, never 0.
        let e = parse_status("Threads:\t1\nvoluntary_ctxt_switches:\t12\n").unwrap_err();
        assert!(e.contains("nonvoluntary_ctxt_switches"), "{e}");
        let e = parse_status(
            "Threads:\t1\nvoluntary_ctxt_switches:\tx\nnonvoluntary_ctxt_switches:\t1\n",
        )
        .unwrap_err();
        assert!(e.contains("voluntary_ctxt_switches"), "{e}");
        // "voluntary_ctxt_switches" must not match the nonvoluntary line.
        assert_eq!(
            parse_status(
                "nonvoluntary_ctxt_switches:\t7\nThreads:\t2\nvoluntary_ctxt_switches:\t5\n"
            ),
            Ok((2, 5, 7))
        );
    }

    #[test]
    fn own_switches_are_read_or_explained() {
        let s = own_switches();
        match s.total {
            Some(t) => {
                assert!(s.why.is_none());
                assert!(s.threads.unwrap_or(0) >= 1);
                if let (Some(v), Some(i)) = (s.vol, s.invol) {
                    assert_eq!(v + i, t);
                }
                // Sleeping is a switch: the counter must move. On Linux the counters are the
                // main task's, so only when this test runs on it alone.
                if !cfg!(target_os = "linux") || s.threads == Some(1) {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    let after = own_switches().total.unwrap();
                    assert!(after > t, "{t} → {after}");
                }
            }
            None => {
                let why = s.why.expect("a missing counter says why");
                assert!(why.starts_with("unsupported "), "{why}");
            }
        }
        assert_eq!(split_unsupported().is_none(), cfg!(target_os = "linux"));
    }
}
