//! Memory facts and calls used by the `mem` suite: page size, transparent-huge-page mode, memory
//! available, page-fault counters, fresh anonymous mappings, file mappings, dropping a file's pages
//! from the page cache and checking their residency. The portable functions are here; each OS's
//! implementation is in its own file (linux.rs, macos.rs, windows.rs; unix.rs for what Linux and
//! macOS share).

use std::fs::File;
use std::io;

// Each OS's calls in its own file (`os` is this OS's).
#[cfg(unix)]
mod unix;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

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
    os::page_size()
}

/// Transparent-huge-page mode for anonymous memory ("always", "madvise", "never"), or why there is
/// none to report.
pub fn thp_mode() -> Result<String, String> {
    os::thp_mode()
}

/// Memory the OS says can be allocated without swapping, bytes (None where it does not say).
pub fn available_bytes() -> Option<u64> {
    os::available_bytes()
}

/// Page-fault counters of the calling thread where the OS keeps them per thread, else the process.
pub fn fault_counts() -> io::Result<FaultCounts> {
    os::fault_counts()
}

/// What [`fault_counts`] counts, for the record.
pub fn fault_counter_scope() -> &'static str {
    os::FAULT_SCOPE
}

/// Whether the core clock can be counted (a real cycle counter, not the fixed-rate TSC), and if
/// not, why. osgauge reports memory latency in cycles only when this says yes; no back end reads a
/// core cycle counter yet, so every OS answers with its reason.
pub fn core_cycle_counter() -> Result<(), String> {
    os::core_cycle_counter()
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
        let ptr = os::map_anon(len)?;
        Ok(AnonMap { ptr, len })
    }
    /// Ask for base pages only (no transparent huge pages). Ok(description) when applied.
    pub fn no_huge_pages(&self) -> io::Result<&'static str> {
        os::no_huge_pages(self.ptr, self.len)
    }
    /// Ask for transparent huge pages (Linux THP in 'always' or 'madvise' mode). Ok(description)
    /// when the OS accepted the request; whether pages really are huge shows in
    /// [`anon_huge_bytes`].
    pub fn huge_pages(&self) -> io::Result<&'static str> {
        os::huge_pages(self.ptr, self.len)
    }
    /// Keep the mapping out of child processes: a fork then neither copies its page tables nor
    /// shares its pages, so a large mapping held for long does not slow the process's forks.
    /// Ok(description) when applied. A child must not touch it.
    pub fn not_inherited(&self) -> io::Result<&'static str> {
        os::not_inherited(self.ptr, self.len)
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
    os::anon_huge_bytes()
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        os::unmap(self.ptr, self.len);
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
        let ptr = os::map_file(file, len)?;
        Ok(FileMap { ptr, len })
    }
    /// Turn off read-ahead for this mapping so each fault reads one page. Ok(description).
    pub fn advise_random(&self) -> io::Result<&'static str> {
        os::advise_random(self.ptr, self.len)
    }
    /// How many of the mapping's pages are resident in memory (in the page cache), per the OS.
    pub fn resident_pages(&self) -> io::Result<usize> {
        os::resident_pages(self.ptr, self.len)
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
        os::unmap(self.ptr, self.len);
    }
}

/// Write the file's dirty pages to storage and drop its pages from the page cache, so the next
/// access must read them back (a major fault). Returns what was done, for the record. The caller
/// verifies with [`FileMap::resident_pages`]: the OS may keep pages anyway (e.g. on tmpfs).
pub fn evict_file_pages(file: &File) -> io::Result<&'static str> {
    file.sync_all()?;
    os::evict_file_pages(file)
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
