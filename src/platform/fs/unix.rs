//! Unix (Linux, macOS): positioned I/O, free space (statvfs), mode bits for secrets, page
//! residency (mincore).

use std::fs::File;
use std::io;
use std::path::Path;

pub fn read_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, off)
}

pub fn write_at(f: &File, buf: &[u8], off: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(f, buf, off)
}

pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: zeroed statvfs is valid; c is NUL-terminated.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut s) != 0 {
            return Err(io::Error::last_os_error());
        }
        #[allow(clippy::unnecessary_cast)]
        Ok(s.f_bavail as u64 * s.f_frsize as u64)
    }
}

pub fn permissions_from_mode(mode: u32) -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(std::fs::Permissions::from_mode(mode))
}

pub fn secret_open_to_others(path: &Path) -> io::Result<Option<String>> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    Ok((mode & 0o077 != 0).then(|| {
        format!(
            "mode {mode:04o}: readable by {} (chmod 600 {})",
            if mode & 0o007 != 0 {
                "every user"
            } else {
                "its group"
            },
            path.display()
        )
    }))
}

pub fn create_secret_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    o.mode(0o600);
    let mut f = o.open(path)?;
    // The umask can only clear bits: set them exactly anyway.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(contents)?;
    f.sync_all()
}

/// Resident pages of the first `len` bytes of `f` (see [`super::resident_pages`]).
pub fn mincore_pages(f: &File, len: u64) -> io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: sysconf is always safe.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let pages = len.div_ceil(page);
    // SAFETY: a read-only shared mapping of an open file; unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut v = vec![0u8; pages as usize];
    // SAFETY: `v` holds one byte per page of the mapping.
    let rc = unsafe { libc::mincore(p, len as usize, v.as_mut_ptr().cast()) };
    let err = io::Error::last_os_error();
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, len as usize) };
    if rc != 0 {
        return Err(err);
    }
    Ok((v.iter().filter(|&&b| b & 1 != 0).count() as u64, pages))
}
