//! Memory facts and calls used by the `mem` suite: page size, transparent-huge-page mode, memory
//! available, page-fault counters, fresh anonymous mappings, file mappings, dropping a file's pages
//! from the page cache and checking their residency. The portable functions are at the top; the
//! per-OS implementations are the cfg-gated `imp` modules below.

use std::fs::File;
use std::io;

/// Page faults counted by the OS for the calling thread (or process, see [`fault_counter_scope`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FaultCounts {
    /// Faults served without I/O (fresh anonymous page, page already in the page cache).
    pub minor: u64,
    /// Faults that needed I/O (page read from storage).
    pub major: u64,
}

impl FaultCounts {
    pub fn since(self, earlier: FaultCounts) -> FaultCounts {
        FaultCounts {
            minor: self.minor.saturating_sub(earlier.minor),
            major: self.major.saturating_sub(earlier.major),
        }
    }
}

/// Whether this machine returns free memory to its hypervisor (Linux: a virtio-balloon device
/// offering VIRTIO_BALLOON_F_REPORTING, feature bit 5 in its sysfs `features`, and the kernel's
/// `page_reporting_order` no larger than its largest free-block order — above it no free block
/// is ever reported: on the reference VM `echo 11 > …/page_reporting_order` held reporting off,
/// 0 KiB reported in 15 s after 19 GiB were freed): Ok(false) with no balloon, a balloon without
/// it, or reporting held off so; Err(why) where it is not read.
pub fn free_page_reporting() -> Result<bool, String> {
    #[cfg(target_os = "linux")]
    {
        let order =
            std::fs::read_to_string("/sys/module/page_reporting/parameters/page_reporting_order")
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok());
        let largest = std::fs::read_to_string("/proc/buddyinfo")
            .ok()
            .and_then(|s| largest_free_order(&s));
        if let (Some(o), Some(l)) = (order, largest)
            && o > l
        {
            return Ok(false);
        }
        let dir = std::fs::read_dir("/sys/bus/virtio/devices")
            .map_err(|e| format!("/sys/bus/virtio/devices: {e}"))?;
        for d in dir.flatten() {
            let read = |f: &str| std::fs::read_to_string(d.path().join(f)).unwrap_or_default();
            // Device id 5: the memory balloon.
            if read("device").trim() == "0x0005"
                && read("features").as_bytes().get(5) == Some(&b'1')
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("free page reporting is read on Linux guests only (virtio-balloon in sysfs)".into())
    }
}

/// The largest free-block order in Linux's `/proc/buddyinfo` ("Node 0, zone Normal" then one
/// count per order, 0 to the largest).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn largest_free_order(buddyinfo: &str) -> Option<usize> {
    buddyinfo
        .lines()
        .map(|l| l.split_whitespace().count())
        .max()?
        .checked_sub(5)
}

/// The base page size the OS maps memory with, bytes.
pub fn page_size() -> io::Result<usize> {
    imp::page_size()
}

/// Transparent-huge-page mode for anonymous memory ("always", "madvise", "never"), or why there is
/// none to report.
pub fn thp_mode() -> Result<String, String> {
    imp::thp_mode()
}

/// Memory the OS says can be allocated without swapping, bytes (None where it does not say).
pub fn available_bytes() -> Option<u64> {
    imp::available_bytes()
}

/// Page-fault counters of the calling thread where the OS keeps them per thread, else the process.
pub fn fault_counts() -> io::Result<FaultCounts> {
    imp::fault_counts()
}

/// What [`fault_counts`] counts, for the record.
pub fn fault_counter_scope() -> &'static str {
    imp::FAULT_SCOPE
}

/// Whether the core clock can be counted (a real cycle counter, not the fixed-rate TSC), and if
/// not, why. osgauge reports memory latency in cycles only when this says yes; no back end reads a
/// core cycle counter yet, so every OS answers with its reason.
pub fn core_cycle_counter() -> Result<(), String> {
    imp::core_cycle_counter()
}

/// A fresh private anonymous mapping straight from the OS (never recycled by the allocator), so
/// that its first touch page-faults. Unmapped on drop.
pub struct AnonMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned memory like a Box<[u8]>.
unsafe impl Send for AnonMap {}

impl AnonMap {
    pub fn new(len: usize) -> io::Result<AnonMap> {
        let ptr = imp::map_anon(len)?;
        Ok(AnonMap { ptr, len })
    }
    /// Ask for base pages only (no transparent huge pages). Ok(description) when applied.
    pub fn no_huge_pages(&self) -> io::Result<&'static str> {
        imp::no_huge_pages(self.ptr, self.len)
    }
    /// Ask for transparent huge pages (Linux THP in 'always' or 'madvise' mode). Ok(description)
    /// when the OS accepted the request; whether pages really are huge shows in
    /// [`anon_huge_bytes`].
    pub fn huge_pages(&self) -> io::Result<&'static str> {
        imp::huge_pages(self.ptr, self.len)
    }
    /// Keep the mapping out of child processes: a fork then neither copies its page tables nor
    /// shares its pages, so a large mapping held for long does not slow the process's forks.
    /// Ok(description) when applied. A child must not touch it.
    pub fn not_inherited(&self) -> io::Result<&'static str> {
        imp::not_inherited(self.ptr, self.len)
    }
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Bytes of this process's anonymous memory backed by huge pages right now (None where the OS
/// does not say).
pub fn anon_huge_bytes() -> Option<u64> {
    imp::anon_huge_bytes()
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        imp::unmap(self.ptr, self.len);
    }
}

/// A read-only shared mapping of a file. Unmapped on drop.
pub struct FileMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: read-only mapping, owned.
unsafe impl Send for FileMap {}

impl FileMap {
    pub fn new(file: &File, len: usize) -> io::Result<FileMap> {
        let ptr = imp::map_file(file, len)?;
        Ok(FileMap { ptr, len })
    }
    /// Turn off read-ahead for this mapping so each fault reads one page. Ok(description).
    pub fn advise_random(&self) -> io::Result<&'static str> {
        imp::advise_random(self.ptr, self.len)
    }
    /// How many of the mapping's pages are resident in memory (in the page cache), per the OS.
    pub fn resident_pages(&self) -> io::Result<usize> {
        imp::resident_pages(self.ptr, self.len)
    }
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        imp::unmap(self.ptr, self.len);
    }
}

/// Write the file's dirty pages to storage and drop its pages from the page cache, so the next
/// access must read them back (a major fault). Returns what was done, for the record. The caller
/// verifies with [`FileMap::resident_pages`]: the OS may keep pages anyway (e.g. on tmpfs).
pub fn evict_file_pages(file: &File) -> io::Result<&'static str> {
    file.sync_all()?;
    imp::evict_file_pages(file)
}

#[cfg(unix)]
mod unix_common {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;

    pub fn page_size() -> io::Result<usize> {
        // SAFETY: sysconf has no memory effects.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v <= 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(v as usize)
    }

    pub fn rusage(who: libc::c_int) -> io::Result<super::FaultCounts> {
        // SAFETY: zeroed rusage is valid; the pointer is to a local.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a local, valid output space for getrusage.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(super::FaultCounts {
            minor: ru.ru_minflt as u64,
            major: ru.ru_majflt as u64,
        })
    }

    pub fn map_anon(len: usize) -> io::Result<*mut u8> {
        // SAFETY: a fresh private anonymous mapping; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANON,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(p.cast())
    }

    pub fn map_file(file: &File, len: usize) -> io::Result<*mut u8> {
        // SAFETY: read-only shared mapping of an open file; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(p.cast())
    }

    pub fn unmap(ptr: *mut u8, len: usize) {
        // SAFETY: ptr/len come from a successful mmap above and are unmapped once (on drop).
        unsafe {
            libc::munmap(ptr.cast(), len.max(1));
        }
    }

    pub fn advise(ptr: *mut u8, len: usize, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is a live mapping of ours.
        if unsafe { libc::madvise(ptr.cast(), len, advice) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn resident_pages(ptr: *mut u8, len: usize) -> io::Result<usize> {
        let page = page_size()?;
        let pages = len.div_ceil(page);
        let mut vec = vec![0u8; pages];
        // SAFETY: vec has one byte per page of the live mapping.
        let rc = unsafe { libc::mincore(ptr.cast(), len, vec.as_mut_ptr().cast()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vec.iter().filter(|&&b| b & 1 != 0).count())
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::unix_common as u;
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
}

#[cfg(target_os = "macos")]
mod imp {
    use super::unix_common as u;
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
}

#[cfg(windows)]
mod imp {
    use std::fs::File;
    use std::io;

    use windows_sys::Win32::System::Memory::{
        MEM_COMMIT, MEM_RELEASE, MEM_RESERVE, PAGE_READWRITE, VirtualAlloc, VirtualFree,
    };
    use windows_sys::Win32::System::ProcessStatus::{
        K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
    };
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
        Err(
            "no core-clock cycle counter is read on Windows, so latency is reported in ns only"
                .into(),
        )
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
}

/// On every OS: what the portable calls give, or that they are unsupported with the OS's name.
#[cfg(test)]
mod portable_tests {
    use super::*;

    #[test]
    fn the_largest_free_order_is_the_last_buddyinfo_column() {
        let b = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
                 Node 0, zone   Normal  21388  70947  39112  20730   8531   4184   4198   2293   1657    549   2097 \n";
        assert_eq!(largest_free_order(b), Some(10));
        assert_eq!(largest_free_order(""), None);
    }

    #[test]
    fn page_size_anonymous_maps_and_fault_counters() {
        let page = page_size().unwrap();
        assert!(page >= 4096 && page.is_power_of_two(), "{page}");
        let n = 32;
        let mut m = AnonMap::new(n * page).unwrap();
        assert_eq!(m.len(), n * page);
        m.no_huge_pages().unwrap();
        let before = fault_counts();
        for i in 0..n {
            // SAFETY: inside the mapping.
            unsafe { m.as_mut_ptr().add(i * page).write_volatile(1) };
        }
        match (before, fault_counts()) {
            (Ok(b), Ok(a)) => assert!(a.since(b).minor >= 1, "no fault counted"),
            (Err(e), _) | (_, Err(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
                assert!(e.to_string().starts_with("unsupported on "), "{e}");
            }
        }
        // SAFETY: inside the mapping, written above.
        assert_eq!(unsafe { m.as_mut_ptr().add(5 * page).read_volatile() }, 1);
        if let Err(e) = m.huge_pages() {
            assert!(e.to_string().starts_with("unsupported on "), "{e}");
        }
        assert!(available_bytes().is_none_or(|b| b > 0));
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn anonymous_first_touch_faults_and_file_pages_can_be_evicted() {
        use std::io::Write;
        let page = page_size().unwrap();
        assert!(page >= 4096 && page.is_power_of_two());
        let n = 64;
        let mut m = AnonMap::new(n * page).unwrap();
        m.no_huge_pages().unwrap();
        let before = fault_counts().unwrap();
        for i in 0..n {
            // SAFETY: inside the mapping.
            unsafe { m.as_mut_ptr().add(i * page).write_volatile(1) };
        }
        let d = fault_counts().unwrap().since(before);
        assert!(d.minor >= 1, "{d:?}");
        // File: write, evict, check residency dropped (unless the temp dir is memory-backed).
        let dir = tempfile::tempdir_in(".").unwrap();
        let path = dir.path().join("f");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![7u8; 16 * page]).unwrap();
        drop(f);
        let f = File::open(&path).unwrap();
        evict_file_pages(&f).unwrap();
        let fm = FileMap::new(&f, 16 * page).unwrap();
        assert_eq!(
            fm.resident_pages().unwrap(),
            0,
            "pages still cached after eviction"
        );
        // SAFETY: inside the mapping.
        let b = unsafe { fm.as_ptr().add(3 * page).read_volatile() };
        assert_eq!(b, 7);
        assert!(fm.resident_pages().unwrap() >= 1);
    }
}
