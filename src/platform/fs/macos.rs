//! macOS: F_NOCACHE, mincore, statfs facts; no writeback threshold or cache figure.

use super::*;
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

pub use super::unix::{
    create_secret_file, free_bytes, permissions_from_mode, read_at, secret_open_to_others, write_at,
};

pub fn open_uncached(path: &Path, write: bool) -> io::Result<Uncached> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .open(path)?;
    // SAFETY: valid fd.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_NOCACHE, 1) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Uncached {
        file,
        method: "fcntl(F_NOCACHE) (new reads bypass the unified buffer cache; F_NOCACHE \
                 cannot evict pages of the file that are already cached, which are still \
                 served from memory, and reportedly does nothing for writes under 16 KB)",
        align: 4096,
        align_source: "page size (F_NOCACHE has no alignment rule; page-aligned I/O is what \
                       the kernel can serve uncached)"
            .into(),
        drop_before_pass: false,
        not_bypassed: None,
    })
}

pub fn drop_cache(_f: &File) -> io::Result<()> {
    Ok(())
}

pub fn resident_pages(f: &File, len: u64) -> io::Result<(u64, u64)> {
    super::unix::mincore_pages(f, len)
}

fn cstr(b: &[libc::c_char]) -> String {
    let v: Vec<u8> = b
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&v).into_owned()
}

pub fn fs_info(dir: &Path) -> io::Result<FsInfo> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: zeroed statfs is valid output space; the path is NUL-terminated.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let t = cstr(&s.f_fstypename);
    Ok(FsInfo {
        network: s.f_flags & libc::MNT_LOCAL as u32 == 0,
        network_rule: "statfs f_flags lacks MNT_LOCAL",
        fs_type: t,
        mount_source: Some(cstr(&s.f_mntfromname)),
        mount_point: Some(cstr(&s.f_mntonname)),
        ..Default::default()
    })
}

pub fn os_cache_figure() -> io::Result<(String, u64)> {
    Err(super::super::unsupported(
        "the OS's file-cache figure (vm_stat's file-backed pages) is not read on macOS yet",
    ))
}

pub fn writeback_threshold() -> Result<(u64, String), String> {
    Err("the OS's background-writeback threshold is not read on this OS".into())
}
