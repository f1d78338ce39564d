//! Linux: O_DIRECT with its alignment (statx, sysfs), posix_fadvise, mincore, mountinfo and
//! sysfs facts, the page cache figures and the writeback threshold.

use super::*;
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

pub use super::unix::{
    create_secret_file, free_bytes, permissions_from_mode, read_at, secret_open_to_others, write_at,
};

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

/// (memory alignment, offset alignment) from statx STATX_DIOALIGN, if the kernel reports it.
/// Some((0, 0)) means the file does not support direct I/O.
fn dio_align(path: &Path) -> Option<(u32, u32)> {
    let c = cpath(path).ok()?;
    // SAFETY: zeroed statx is valid output space; the path is NUL-terminated.
    let mut s: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `s` is valid output space and `c` a NUL-terminated path.
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, libc::STATX_DIOALIGN, &mut s) };
    if rc != 0 || s.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((s.stx_dio_mem_align, s.stx_dio_offset_align))
}

fn sysfs_dev(dev: u64) -> String {
    format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev))
}

/// A queue attribute of the block device `dev` (or of its parent disk for a partition).
fn queue_attr(dev: u64, name: &str) -> Option<String> {
    let base = sysfs_dev(dev);
    for p in [
        format!("{base}/queue/{name}"),
        format!("{base}/../queue/{name}"),
    ] {
        if let Ok(s) = std::fs::read_to_string(&p) {
            return Some(s.trim().to_string());
        }
    }
    None
}

pub fn open_uncached(path: &Path, write: bool) -> io::Result<Uncached> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(write);
    match o.clone().custom_flags(libc::O_DIRECT).open(path) {
        Ok(file) => {
            let (align, align_source) = match dio_align(path) {
                Some((m, off)) if m > 0 && off > 0 => (
                    m.max(off) as usize,
                    format!("statx STATX_DIOALIGN (memory {m} B, offset {off} B)"),
                ),
                _ => {
                    let dev = file.metadata()?.dev();
                    match queue_attr(dev, "logical_block_size").and_then(|s| s.parse().ok()) {
                        Some(b) => (
                            b,
                            format!(
                                "logical block size of {} (no STATX_DIOALIGN)",
                                sysfs_dev(dev)
                            ),
                        ),
                        None => (
                            4096,
                            "4096 B assumed: neither STATX_DIOALIGN nor a sysfs logical block \
                             size was available"
                                .to_string(),
                        ),
                    }
                }
            };
            Ok(Uncached {
                file,
                method: "O_DIRECT (page cache bypassed)",
                align,
                align_source,
                drop_before_pass: false,
                not_bypassed: None,
            })
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(Uncached {
            file: o.open(path)?,
            method: "posix_fadvise(POSIX_FADV_DONTNEED) before each pass (O_DIRECT refused \
                     by the file system; read-ahead within a pass may still be served from \
                     memory)",
            align: 4096,
            align_source: "page size (buffered fallback)".into(),
            drop_before_pass: true,
            not_bypassed: None,
        }),
        Err(e) => Err(e),
    }
}

pub fn drop_cache(f: &File) -> io::Result<()> {
    // SAFETY: valid fd; whole-file range.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

pub fn resident_pages(f: &File, len: u64) -> io::Result<(u64, u64)> {
    super::unix::mincore_pages(f, len)
}

/// (mount point, fs type, source) of the mount holding `dir` (on device `dev` where given),
/// from mountinfo text: the one mountinfo parser, `system::parse`.
pub(super) fn mount_of(
    mountinfo: &str,
    dir: &Path,
    dev: Option<(u32, u32)>,
) -> Option<(String, String, String)> {
    use crate::system::parse;
    let mounts = parse::parse_mountinfo(mountinfo);
    let m = parse::mount_for(&mounts, &dir.to_string_lossy(), dev)?;
    Some((m.mount_point.clone(), m.fs_type.clone(), m.source.clone()))
}

pub fn fs_info(dir: &Path) -> io::Result<FsInfo> {
    let canon = std::fs::canonicalize(dir)?;
    let md = std::fs::metadata(&canon)?;
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let dev = md.dev();
    let majmin = crate::system::parse::dev_major_minor(dev);
    let (mp, t, src) = mount_of(&mi, &canon, Some(majmin)).unwrap_or_default();
    let device = std::fs::read_link(sysfs_dev(dev))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let rotational = queue_attr(dev, "rotational").map(|s| s == "1");
    let virtual_disk = device.as_ref().map(|d| {
        d.starts_with("vd") || d.starts_with("xvd") || {
            // virtio-scsi/Hyper-V disks: the driver path names it.
            std::fs::canonicalize(format!("{}/device", sysfs_dev(dev)))
                .or_else(|_| std::fs::canonicalize(format!("{}/../device", sysfs_dev(dev))))
                .map(|p| {
                    let s = p.to_string_lossy();
                    s.contains("virtio") || s.contains("vmbus")
                })
                .unwrap_or(false)
        }
    });
    Ok(FsInfo {
        network: network_type(&t),
        network_rule: "mountinfo file-system type is a network one (nfs*, cifs, smb3, 9p, \
                       ceph, fuse.sshfs …)",
        fs_type: t,
        mount_source: (!src.is_empty()).then_some(src),
        mount_point: (!mp.is_empty()).then_some(mp),
        memory_backed: None,
        device,
        rotational,
        virtual_disk,
    })
}

pub fn os_cache_figure() -> io::Result<(String, u64)> {
    let m = crate::system::parse::parse_meminfo(&std::fs::read_to_string("/proc/meminfo")?);
    match (m.get("Cached"), m.get("MemAvailable")) {
        (Some(&c), Some(&a)) => Ok((
            format!(
                "/proc/meminfo Cached {} MiB + MemAvailable {} MiB",
                c >> 20,
                a >> 20
            ),
            c + a,
        )),
        _ => Err(super::super::unsupported(
            "/proc/meminfo lacks Cached or MemAvailable",
        )),
    }
}

pub fn writeback_threshold() -> Result<(u64, String), String> {
    let read = |p: &str| -> Result<u64, String> {
        std::fs::read_to_string(p)
            .map_err(|e| format!("{p}: {e}"))?
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("{p}: {e}"))
    };
    let bytes = read("/proc/sys/vm/dirty_background_bytes")?;
    if bytes > 0 {
        return Ok((bytes, "vm.dirty_background_bytes".into()));
    }
    let ratio = read("/proc/sys/vm/dirty_background_ratio")?;
    let avail =
        crate::platform::memory::available_bytes().ok_or("/proc/meminfo has no MemAvailable")?;
    Ok((
        avail / 100 * ratio,
        format!(
            "vm.dirty_background_ratio {ratio} % of MemAvailable {} MiB (an estimate of the \
             kernel's dirtyable memory)",
            avail >> 20
        ),
    ))
}

/// Network file-system type names (Linux mountinfo).
pub(super) fn network_type(t: &str) -> bool {
    const NET: &[&str] = &[
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "afpfs",
        "webdav",
        "9p",
        "ceph",
        "glusterfs",
        "afs",
        "lustre",
        "fuse.sshfs",
        "fuse.s3fs",
        "fuse.rclone",
        "fuse.gcsfuse",
        "davfs",
        "fuse.davfs2",
    ];
    NET.contains(&t) || t.starts_with("nfs")
}
