//! macOS: whole-process fault counters, minherit, madvise for read-ahead; no transparent huge
//! pages, no way to evict one file's pages.

use super::unix as u;
use std::fs::File;
use std::io;

pub use u::{map_anon, map_file, page_size, resident_pages, unmap};

pub const FAULT_SCOPE: &str = "getrusage(RUSAGE_SELF) ru_minflt / ru_majflt (whole process: macOS has no per-thread counters)";

pub fn fault_counts() -> io::Result<super::FaultCounts> {
    u::rusage(libc::RUSAGE_SELF)
}

pub fn thp_mode() -> Result<String, String> {
    Err("macOS has no transparent huge pages for ordinary anonymous memory".into())
}

pub fn available_bytes() -> Option<u64> {
    None
}

pub fn core_cycle_counter() -> Result<(), String> {
    Err(
        "no core-clock cycle counter is read on macOS (kperf needs root and is private), so \
         latency is reported in ns only"
            .into(),
    )
}

pub fn no_huge_pages(_ptr: *mut u8, _len: usize) -> io::Result<&'static str> {
    Ok("none needed (macOS maps anonymous memory with base pages)")
}

pub fn not_inherited(ptr: *mut u8, len: usize) -> io::Result<&'static str> {
    // SAFETY: the range is a live mapping of ours.
    if unsafe { libc::minherit(ptr.cast(), len, libc::VM_INHERIT_NONE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok("minherit(VM_INHERIT_NONE)")
}

pub fn advise_random(ptr: *mut u8, len: usize) -> io::Result<&'static str> {
    u::advise(ptr, len, libc::MADV_RANDOM)?;
    Ok("madvise(MADV_RANDOM)")
}

pub fn huge_pages(_ptr: *mut u8, _len: usize) -> io::Result<&'static str> {
    Err(crate::platform::unsupported(
        "no transparent huge pages for anonymous memory (superpages need VM_FLAGS_SUPERPAGE_SIZE_2MB on x86 only)",
    ))
}

pub fn anon_huge_bytes() -> Option<u64> {
    None
}

pub fn evict_file_pages(_file: &File) -> io::Result<&'static str> {
    Err(crate::platform::unsupported(
        "no call drops one clean file's pages from the unified buffer cache (only purge(8), \
         which is system-wide and needs root)",
    ))
}
