//! Windows: VirtualAlloc mappings, the process's page-fault count, GetSystemInfo's page size;
//! no huge pages, file mappings, residency or eviction.

use std::fs::File;
use std::io;

use windows_sys::Win32::System::Memory::{
    MEM_COMMIT, MEM_RELEASE, MEM_RESERVE, PAGE_READWRITE, VirtualAlloc, VirtualFree,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::SystemInformation::{GetSystemInfo, SYSTEM_INFO};
use windows_sys::Win32::System::Threading::GetCurrentProcess;

use crate::platform::unsupported;

pub const FAULT_SCOPE: &str = "GetProcessMemoryInfo PageFaultCount (whole process; Windows \
                               counts soft and hard faults together, reported as minor)";

pub fn page_size() -> io::Result<usize> {
    // SAFETY: SYSTEM_INFO is plain old data filled by the call.
    let mut si: SYSTEM_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { GetSystemInfo(&mut si) };
    Ok(si.dwPageSize as usize)
}
pub fn fault_counts() -> io::Result<super::FaultCounts> {
    // SAFETY: plain old data; cb set as the call requires.
    let mut c: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
    c.cb = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    // SAFETY: the pseudo-handle of this process and a valid, sized buffer.
    if unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), &mut c, c.cb) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // A running process has always faulted (its image and stacks were paged in): a zero
    // count means this Windows does not keep the counter (Wine leaves it at 0).
    if c.PageFaultCount == 0 {
        return Err(unsupported(
            "GetProcessMemoryInfo reports PageFaultCount 0 for a running process: this \
             Windows (or compatibility layer, e.g. Wine) does not count page faults",
        ));
    }
    Ok(super::FaultCounts {
        minor: u64::from(c.PageFaultCount),
        major: 0,
    })
}
pub fn thp_mode() -> Result<String, String> {
    Err("Windows has no transparent huge pages (large pages need SeLockMemoryPrivilege)".into())
}
pub fn available_bytes() -> Option<u64> {
    crate::platform::sysinfo::memory_status().map(|m| m.ullAvailPhys)
}
pub fn core_cycle_counter() -> Result<(), String> {
    Err("no core-clock cycle counter is read on Windows, so latency is reported in ns only".into())
}
pub fn map_anon(len: usize) -> io::Result<*mut u8> {
    // SAFETY: a fresh committed region chosen by the OS; released in unmap().
    let p = unsafe {
        VirtualAlloc(
            std::ptr::null(),
            len,
            MEM_COMMIT | MEM_RESERVE,
            PAGE_READWRITE,
        )
    };
    if p.is_null() {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}
pub fn map_file(_file: &File, _len: usize) -> io::Result<*mut u8> {
    // Only the major-fault measurement maps files, and it stops earlier at
    // evict_file_pages on Windows.
    Err(unsupported(
        "file mappings are only used to force major faults, which Windows cannot (see the \
         eviction reason)",
    ))
}
pub fn unmap(ptr: *mut u8, _len: usize) {
    // SAFETY: ptr came from VirtualAlloc in map_anon (map_file never maps on Windows).
    unsafe { VirtualFree(ptr.cast(), 0, MEM_RELEASE) };
}
pub fn no_huge_pages(_ptr: *mut u8, _len: usize) -> io::Result<&'static str> {
    Ok(
        "VirtualAlloc without MEM_LARGE_PAGES (Windows maps base pages unless large pages are \
        asked for at allocation)",
    )
}
pub fn not_inherited(_ptr: *mut u8, _len: usize) -> io::Result<&'static str> {
    Ok("none needed (Windows creates processes without the parent's memory)")
}
pub fn advise_random(_ptr: *mut u8, _len: usize) -> io::Result<&'static str> {
    Err(unsupported("no read-ahead advice for mapped files"))
}
pub fn huge_pages(_ptr: *mut u8, _len: usize) -> io::Result<&'static str> {
    Err(unsupported(
        "large pages need the 'Lock pages in memory' privilege (SeLockMemoryPrivilege, off \
         by default even for administrators) and VirtualAlloc(MEM_LARGE_PAGES); osgauge does \
         not ask for that privilege",
    ))
}
pub fn anon_huge_bytes() -> Option<u64> {
    None
}
pub fn resident_pages(_ptr: *mut u8, _len: usize) -> io::Result<usize> {
    Err(unsupported(
        "page residency of mapped files is not read on Windows",
    ))
}
pub fn evict_file_pages(_file: &File) -> io::Result<&'static str> {
    Err(unsupported(
        "Windows has no call to drop one file's pages from the standby cache \
         (FILE_FLAG_NO_BUFFERING bypasses it for reads, not for mapped pages), and its fault \
         counter does not tell hard faults from soft ones",
    ))
}
