//! Linux: per-thread fault counters (RUSAGE_THREAD), the THP mode and MemAvailable from sysfs and
//! /proc, madvise for huge pages, fork inheritance and read-ahead, posix_fadvise to evict a file.

use super::unix as u;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

pub use u::{map_anon, map_file, page_size, resident_pages, unmap};

/// Linux's RUSAGE_THREAD (not exported by the libc crate for glibc targets).
const RUSAGE_THREAD: libc::c_int = 1;
pub const FAULT_SCOPE: &str = "getrusage(RUSAGE_THREAD) ru_minflt / ru_majflt (calling thread)";

pub fn fault_counts() -> io::Result<super::FaultCounts> {
    u::rusage(RUSAGE_THREAD)
}

pub fn thp_mode() -> Result<String, String> {
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    bracketed(&text).ok_or_else(|| format!("{path}: no [selected] mode in '{}'", text.trim()))
}

fn bracketed(text: &str) -> Option<String> {
    let a = text.find('[')?;
    let b = text[a..].find(']')? + a;
    Some(text[a + 1..b].to_string())
}

pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    crate::system::parse::parse_meminfo(&text)
        .get("MemAvailable")
        .copied()
}

pub fn core_cycle_counter() -> Result<(), String> {
    Err(
        "no core-clock cycle counter is read (perf_event cycles are not used; the TSC ticks \
         at a fixed rate, not the core clock), so latency is reported in ns only"
            .into(),
    )
}

pub fn no_huge_pages(ptr: *mut u8, len: usize) -> io::Result<&'static str> {
    u::advise(ptr, len, libc::MADV_NOHUGEPAGE)?;
    Ok("madvise(MADV_NOHUGEPAGE)")
}

pub fn not_inherited(ptr: *mut u8, len: usize) -> io::Result<&'static str> {
    u::advise(ptr, len, libc::MADV_DONTFORK)?;
    Ok("madvise(MADV_DONTFORK)")
}

pub fn advise_random(ptr: *mut u8, len: usize) -> io::Result<&'static str> {
    u::advise(ptr, len, libc::MADV_RANDOM)?;
    Ok("madvise(MADV_RANDOM): no read-ahead, no fault-around")
}

pub fn huge_pages(ptr: *mut u8, len: usize) -> io::Result<&'static str> {
    if thp_mode().is_ok_and(|m| m == "never") {
        return Err(crate::platform::unsupported(
            "transparent huge pages are disabled (/sys/kernel/mm/transparent_hugepage/enabled = never)",
        ));
    }
    u::advise(ptr, len, libc::MADV_HUGEPAGE)?;
    Ok("madvise(MADV_HUGEPAGE)")
}

pub fn anon_huge_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = text.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

pub fn evict_file_pages(file: &File) -> io::Result<&'static str> {
    // SAFETY: valid fd; offset 0 / len 0 = the whole file.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok("fsync + posix_fadvise(POSIX_FADV_DONTNEED)")
}
