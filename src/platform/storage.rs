//! Storage facts shared by the suites that do I/O (the interactivity `read`/`write` loads, and the
//! file-system suite): whether a directory lives in memory rather than on a device, and how many
//! bytes this process has really read from storage devices.

use std::io;
use std::path::Path;

/// The memory-backed file system `dir` is on (e.g. "tmpfs"), or None when it is on a device (or
/// the OS cannot tell: see each OS's note). Reads from a memory-backed file system never touch
/// storage, whatever the open flags claim.
pub fn memory_backed_fs(dir: &Path) -> io::Result<Option<&'static str>> {
    imp::memory_backed_fs(dir)
}

/// Whether [`device_read_bytes`] can prove a read reached storage (Windows' counter also counts
/// cached reads, so it cannot).
pub const DEVICE_COUNTER_PROVES_STORAGE: bool = cfg!(any(target_os = "linux", target_os = "macos"));

/// What [`device_read_bytes`] counts on this OS (for the record).
pub const DEVICE_READ_COUNTER: &str = imp::DEVICE_READ_COUNTER;

/// Bytes this process has read from storage devices since it started (a cumulative counter: take
/// the difference of two readings). Unsupported (with the reason) where the OS does not count it.
pub fn device_read_bytes() -> io::Result<u64> {
    imp::device_read_bytes()
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    pub const DEVICE_READ_COUNTER: &str = "/proc/self/io read_bytes (bytes this process caused to \
        be fetched from the storage layer; page-cache hits are not counted)";

    pub fn memory_backed_fs(dir: &Path) -> io::Result<Option<&'static str>> {
        let c = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
        // SAFETY: a zeroed statfs is valid output space; the path is NUL-terminated.
        let mut s: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `s` is valid output space and `c` a NUL-terminated path.
        if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // f_type's width differs by architecture; the magic numbers are 32-bit.
        Ok(match s.f_type as u64 & 0xffff_ffff {
            0x0102_1994 => Some("tmpfs"),
            0x8584_58f6 => Some("ramfs"),
            0x9584_58f6 => Some("hugetlbfs"),
            _ => None,
        })
    }

    pub fn device_read_bytes() -> io::Result<u64> {
        let text = std::fs::read_to_string("/proc/self/io").map_err(|e| {
            super::super::unsupported(&format!(
                "/proc/self/io is not readable ({e}; the kernel needs CONFIG_TASK_IO_ACCOUNTING)"
            ))
        })?;
        parse_read_bytes(&text)
            .ok_or_else(|| super::super::unsupported("/proc/self/io has no read_bytes line"))
    }

    pub(super) fn parse_read_bytes(text: &str) -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix("read_bytes:"))
            .and_then(|v| v.trim().parse().ok())
    }
}

#[cfg(target_os = "macos")]
mod imp {
    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    pub const DEVICE_READ_COUNTER: &str =
        "proc_pid_rusage(RUSAGE_INFO_V2) ri_diskio_bytesread (bytes this process read from disk)";

    /// macOS has no tmpfs by default; a RAM disk made with `hdiutil attach ram://` is an ordinary
    /// volume on a /dev/disk device and cannot be told apart here.
    pub fn memory_backed_fs(dir: &Path) -> io::Result<Option<&'static str>> {
        let c = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
        // SAFETY: a zeroed statfs is valid output space; the path is NUL-terminated.
        let mut s: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let name: Vec<u8> = s
            .f_fstypename
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| b as u8)
            .collect();
        Ok(match name.as_slice() {
            b"tmpfs" => Some("tmpfs"),
            b"devfs" => Some("devfs"),
            _ => None,
        })
    }

    pub fn device_read_bytes() -> io::Result<u64> {
        // SAFETY: a zeroed rusage_info_v2 is valid output space of the flavor's size.
        let mut ri: libc::rusage_info_v2 = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::proc_pid_rusage(
                libc::getpid(),
                libc::RUSAGE_INFO_V2,
                (&mut ri as *mut libc::rusage_info_v2).cast(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ri.ri_diskio_bytesread)
    }
}

#[cfg(windows)]
mod imp {
    use std::io;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;

    use windows_sys::Win32::Storage::FileSystem::{GetDriveTypeW, GetVolumePathNameW};
    use windows_sys::Win32::System::Threading::{
        GetCurrentProcess, GetProcessIoCounters, IO_COUNTERS,
    };

    pub const DEVICE_READ_COUNTER: &str = "GetProcessIoCounters ReadTransferCount (counts every \
        read of the process — cached file reads, pipes and devices too — so it is an upper bound \
        of the bytes read from storage)";

    /// GetDriveTypeW's DRIVE_RAMDISK (WinBase.h).
    const DRIVE_RAMDISK: u32 = 6;

    pub fn memory_backed_fs(dir: &Path) -> io::Result<Option<&'static str>> {
        let w: Vec<u16> = dir.as_os_str().encode_wide().chain(Some(0)).collect();
        let mut root = vec![0u16; 1024];
        // SAFETY: NUL-terminated input; the output buffer's length is passed.
        if unsafe { GetVolumePathNameW(w.as_ptr(), root.as_mut_ptr(), root.len() as u32) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `root` is NUL-terminated by GetVolumePathNameW.
        let t = unsafe { GetDriveTypeW(root.as_ptr()) };
        Ok((t == DRIVE_RAMDISK).then_some("RAM disk"))
    }

    pub fn device_read_bytes() -> io::Result<u64> {
        // SAFETY: zeroed IO_COUNTERS is valid output space; the pseudo-handle is always valid.
        let mut c: IO_COUNTERS = unsafe { std::mem::zeroed() };
        if unsafe { GetProcessIoCounters(GetCurrentProcess(), &mut c) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(c.ReadTransferCount)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod imp {
    use std::io;
    use std::path::Path;

    pub const DEVICE_READ_COUNTER: &str = "none";

    pub fn memory_backed_fs(_dir: &Path) -> io::Result<Option<&'static str>> {
        Ok(None)
    }

    pub fn device_read_bytes() -> io::Result<u64> {
        Err(super::super::unsupported(
            "no per-process device read counter",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_reads_are_counted_or_unsupported_with_a_reason() {
        match device_read_bytes() {
            Ok(a) => {
                let b = device_read_bytes().unwrap();
                assert!(b >= a, "a cumulative counter went back: {a} → {b}");
            }
            Err(e) => {
                assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
                assert!(e.to_string().starts_with("unsupported on "), "{e}");
            }
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn read_bytes_are_parsed_and_a_missing_path_is_an_error() {
        assert_eq!(
            imp::parse_read_bytes("rchar: 1\nread_bytes: 4096\nwrite_bytes: 0\n"),
            Some(4096)
        );
        assert_eq!(imp::parse_read_bytes("rchar: 1\n"), None);
        assert!(memory_backed_fs(Path::new("/nonexistent-osgauge")).is_err());
    }

    /// Ignored, with the reason, where there is no /dev/shm.
    #[test_with::path(/dev/shm)]
    #[test]
    #[cfg(target_os = "linux")]
    fn tmpfs_is_memory_backed() {
        assert_eq!(
            memory_backed_fs(Path::new("/dev/shm")).unwrap(),
            Some("tmpfs")
        );
    }
}
