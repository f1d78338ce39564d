//! The ONE cache-bypass mechanism (used by the file-system suite and the interactivity `read`
//! load), its alignment asked from the OS, page residency, and file-system facts (type, mount
//! source, network-backed, rotational) for the record.
//!
//! - Linux: `O_DIRECT`, alignment from `statx(STATX_DIOALIGN)` (Linux ≥ 6.1) else the device's
//!   logical block size from sysfs; a file system that refuses `O_DIRECT` (EINVAL) falls back to
//!   `posix_fadvise(DONTNEED)` before each pass, and says so.
//! - macOS: `fcntl(F_NOCACHE)` on a freshly written file; it cannot evict pages that are already
//!   cached, which are still served from memory (said in the method text).
//! - Windows: `FILE_FLAG_NO_BUFFERING`, alignment = the volume's sector size (`GetDiskFreeSpaceW`).
//!
//! A memory-backed file system (tmpfs, ramfs, RAM disk) is refused: a "bypassed" read there
//! cannot reach storage.

use std::fs::File;
use std::io;
use std::path::Path;

use super::storage;

// Each OS's bypass, residency, writeback and file-system facts in its own file (`os` is this OS's);
// Linux and macOS share the Unix positioned I/O, statvfs, mode bits and mincore.
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

/// A file opened with the OS cache bypassed (or, where the file system refuses that, with the
/// fallback named in `method`).
#[derive(Debug)]
pub struct Uncached {
    pub file: File,
    /// How the cache is bypassed, in words, with what it cannot guarantee.
    pub method: &'static str,
    /// Buffer address, offset and length must be multiples of this.
    pub align: usize,
    /// Where `align` came from.
    pub align_source: String,
    /// The cache is dropped (not bypassed): call [`drop_cache`] before each pass.
    pub drop_before_pass: bool,
    /// Why the flag is known not to bypass the cache here (Wine), if so.
    pub not_bypassed: Option<String>,
}

/// Why a cache-bypassed read in `dir` cannot reach storage (memory-backed file system), if so.
pub fn bypass_refusal(dir: &Path) -> Option<String> {
    match storage::memory_backed_fs(dir) {
        Ok(Some(fs)) => Some(format!(
            "{} is on {fs} (memory-backed): its data lives in RAM, so a cache-bypassed read \
             cannot reach storage; choose a directory on a disk with --dir",
            dir.display()
        )),
        _ => None,
    }
}

/// Open `path` for reading (and writing when `write`) with the cache bypassed. Refuses
/// (unsupported, with the reason) a file on a memory-backed file system, and where the flag is
/// known not to be honoured (Wine).
pub fn open_uncached(path: &Path, write: bool) -> io::Result<Uncached> {
    let u = open_uncached_lenient(path, write)?;
    if let Some(why) = &u.not_bypassed {
        return Err(super::unsupported(why));
    }
    Ok(u)
}

/// [`open_uncached`] that still returns the file where the flag is known not to be honoured
/// (Wine), its `method` saying so: for loads that only need I/O traffic, not a measurement.
pub fn open_uncached_lenient(path: &Path, write: bool) -> io::Result<Uncached> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if let Some(why) = bypass_refusal(dir) {
        return Err(super::unsupported(&why));
    }
    os::open_uncached(path, write)
}

/// Can this OS drop one file's cached pages ([`drop_cache`] does something)? Linux only
/// (`posix_fadvise(DONTNEED)`); elsewhere a buffered re-read of a just-written file comes from
/// memory.
pub const CAN_DROP_FILE_CACHE: bool = cfg!(target_os = "linux");

/// Drop the file's clean cached pages (write it back first: `sync_all`). A no-op where the OS
/// has no per-file eviction (macOS, Windows: the unbuffered open itself flushes there).
pub fn drop_cache(f: &File) -> io::Result<()> {
    os::drop_cache(f)
}

/// Resident pages of the first `len` bytes of `f` (mapped read-only and asked with `mincore`),
/// as (resident, total) pages. Unsupported on Windows.
pub fn resident_pages(f: &File, len: u64) -> io::Result<(u64, u64)> {
    os::resident_pages(f, len)
}

/// Read into `buf` at byte `off` of `f` without moving a shared cursor (pread / overlapped
/// offset), so threads can share nothing but the file.
pub fn read_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    os::read_at(f, buf, off)
}

/// Write `buf` at byte `off` of `f` (pwrite / overlapped offset).
pub fn write_at(f: &File, buf: &[u8], off: u64) -> io::Result<usize> {
    os::write_at(f, buf, off)
}

/// How many bytes of dirty (written, not yet written back) file data the OS lets build up before
/// its background writeback starts, with how it was read; Err(why) where it is not read.
/// Linux: `vm.dirty_background_bytes`, else `vm.dirty_background_ratio` % of MemAvailable (the
/// kernel's base is its dirtyable memory, close to MemAvailable: an estimate, said).
pub fn writeback_threshold() -> Result<(u64, String), String> {
    os::writeback_threshold()
}

/// Bytes free for this user on the file system of `dir` (statvfs; GetDiskFreeSpaceExW).
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    os::free_bytes(dir)
}

/// Permissions with the Unix mode bits `mode` (the umask still applies where a file is created
/// with them), or None where the OS keeps no mode bits (Windows: access is by ACL).
pub fn permissions_from_mode(mode: u32) -> Option<std::fs::Permissions> {
    os::permissions_from_mode(mode)
}

/// Whether an absolute path is a POSIX path (`/a/b`), written as it is after `file:` in a URI
/// (a Windows path, `C:\a\b`, is not).
pub const POSIX_PATHS: bool = cfg!(unix);

/// Why a secret file (a token) is open to other users, or None when it is not (or the OS keeps
/// no such mode bits: on Windows access is by ACL, which this does not read).
pub fn secret_open_to_others(path: &Path) -> io::Result<Option<String>> {
    os::secret_open_to_others(path)
}

/// Create `path` for a secret (it must not exist yet) readable and writable by its owner only
/// (mode 0600 from its creation, whatever the umask; on Windows the file inherits its directory's
/// ACL, as a file in the user's profile is private) and write `contents` to it.
pub fn create_secret_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    os::create_secret_file(path, contents)
}

/// What a directory's storage is, for the record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FsInfo {
    /// File-system type (ext4, xfs, nfs4, fuse.sshfs, apfs, NTFS …).
    pub fs_type: String,
    /// What is mounted (device, server:path, volume root), where known.
    pub mount_source: Option<String>,
    pub mount_point: Option<String>,
    /// Served over the network.
    pub network: bool,
    /// How `network` was decided.
    pub network_rule: &'static str,
    /// Memory-backed file system, if so.
    pub memory_backed: Option<&'static str>,
    /// Storage device (e.g. "vda"), where known.
    pub device: Option<String>,
    /// Whether the device says it is rotational (Linux sysfs), where known.
    pub rotational: Option<bool>,
    /// A virtual disk (virtio/Xen/Hyper-V): direct I/O reaches the host, whose cache may serve it.
    pub virtual_disk: Option<bool>,
}

/// File-system facts of `dir`.
pub fn fs_info(dir: &Path) -> io::Result<FsInfo> {
    let mut i = os::fs_info(dir)?;
    i.memory_backed = storage::memory_backed_fs(dir).ok().flatten();
    Ok(i)
}

/// The OS's own view of how much memory the file cache can use, in words and bytes (Linux
/// `Cached` and `MemAvailable`, Windows SystemCache); unsupported where not read.
pub fn os_cache_figure() -> io::Result<(String, u64)> {
    os::os_cache_figure()
}

/// A heap buffer for I/O whose address is a multiple of `align` (a power of two) *and* starts a
/// memory page: a buffer that straddles a page boundary makes every cache-bypassed request one
/// segment longer. Measured here (ext4 on a virtio disk, O_DIRECT 4 KiB reads alternated read by
/// read between a page-aligned buffer and one at page + 0x600, where a 512-byte-aligned heap
/// allocation had landed): +5–7 % per read, the part of `fs/read_latency`'s excess over fio
/// (which page-aligns its buffers) that came from the buffer.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is uniquely owned.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize, align: usize, fill: u8) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(1), io_buf_align(align))
            .expect("valid aligned layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: freshly allocated, `len` bytes.
        unsafe { std::ptr::write_bytes(ptr, fill, layout.size()) };
        AlignedBuf { ptr, layout }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: owned allocation of layout.size() initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

/// The alignment an I/O buffer gets: the larger of what the bypass needs and the memory page.
pub fn io_buf_align(align: usize) -> usize {
    let page = super::memory::page_size().unwrap_or(4096).max(1);
    align.max(1).max(page).next_power_of_two()
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_secret_readable_by_others_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t");
        std::fs::write(&f, b"x").unwrap();
        for (mode, want) in [
            (0o600, None),
            (0o640, Some("its group")),
            (0o644, Some("every user")),
        ] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let got = secret_open_to_others(&f).unwrap();
            match want {
                None => assert_eq!(got, None, "{mode:o}"),
                Some(w) => assert!(
                    got.as_deref()
                        .is_some_and(|g| g.contains(w) && g.contains("chmod 600")),
                    "{mode:o}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for a in [1usize, 512, 4096, 65536] {
            let mut b = AlignedBuf::new(3 * a, a, 7);
            assert_eq!(b.bytes_mut().as_ptr() as usize % a, 0);
            let page = crate::platform::memory::page_size().unwrap();
            assert_eq!(b.bytes().as_ptr() as usize % page, 0, "not page-aligned");
            assert_eq!(b.bytes().len(), 3 * a);
            assert!(b.bytes().iter().all(|&x| x == 7));
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn mount_of_picks_the_longest_prefix_and_unescapes() {
        let mi = "22 1 8:1 / / rw - ext4 /dev/vda rw\n\
                  30 22 0:40 / /mnt/my\\040share rw - fuse.sshfs u@h:/srv rw\n\
                  31 22 0:41 / /mnt rw - tmpfs tmpfs rw\n";
        let m = os::mount_of(mi, Path::new("/mnt/my share/x"), None).unwrap();
        assert_eq!(m.0, "/mnt/my share");
        assert_eq!(m.1, "fuse.sshfs");
        assert_eq!(m.2, "u@h:/srv");
        assert!(os::network_type(&m.1));
        let m = os::mount_of(mi, Path::new("/home"), None).unwrap();
        assert_eq!((m.1.as_str(), m.2.as_str()), ("ext4", "/dev/vda"));
        assert!(!os::network_type("ext4"));
    }

    #[test_with::path(/dev/shm)]
    #[test]
    #[cfg(target_os = "linux")]
    fn tmpfs_bypass_is_refused_with_the_reason() {
        // The gate above ignores this test, with the reason, where there is no /dev/shm.
        let d = Path::new("/dev/shm");
        let e = open_uncached(&d.join("osgauge-never-created"), false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("tmpfs"), "{e}");
    }
}
