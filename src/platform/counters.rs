//! System counters `osgauge model check` reads around a real application's run: bytes the
//! storage devices read and wrote (all whole disks), bytes over the loopback interface, and the
//! CPU time of this process's waited-for children (the application's processes, which it starts
//! and reaps per step). Each is a cumulative counter: take the difference of two readings.
//! Unsupported (with the reason) where the OS does not expose it.

use std::io;

/// Bytes read and written by the machine's storage devices since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskBytes {
    pub read: u64,
    pub written: u64,
}

/// What [`disk_bytes`] counts (for the record).
pub const DISK_COUNTER: &str = imp::DISK_COUNTER;
/// What [`loopback_bytes`] counts (for the record).
pub const LOOPBACK_COUNTER: &str = imp::LOOPBACK_COUNTER;

/// Bytes the whole disks (not partitions, loop or RAM devices) read and wrote.
pub fn disk_bytes() -> io::Result<DiskBytes> {
    imp::disk_bytes()
}

/// Bytes received on the loopback interface (each byte sent over loopback is received once).
pub fn loopback_bytes() -> io::Result<u64> {
    imp::loopback_bytes()
}

/// User + system CPU nanoseconds of this process's children that have been waited for
/// (including their own waited-for descendants).
pub fn children_cpu_ns() -> io::Result<u64> {
    imp::children_cpu_ns()
}

/// Whether this process runs as the superuser (an nginx started by root must be told to keep
/// its workers as root to read files in a private temp folder).
pub fn is_superuser() -> bool {
    imp::is_superuser()
}

/// Ask process `pid` to stop (SIGTERM; a server then stops its own workers before it exits).
pub fn terminate(pid: u32) -> io::Result<()> {
    imp::terminate(pid)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::DiskBytes;
    use std::io;

    pub const DISK_COUNTER: &str =
        "/proc/diskstats sectors read/written × 512, whole disks (virtio, SCSI, NVMe …)";
    pub const LOOPBACK_COUNTER: &str = "/proc/net/dev lo receive bytes";

    pub fn disk_bytes() -> io::Result<DiskBytes> {
        let text = std::fs::read_to_string("/proc/diskstats")?;
        Ok(parse_diskstats(&text, |name| {
            std::path::Path::new("/sys/block").join(name).exists()
        }))
    }

    /// Sum over the devices `whole_disk` accepts, loop/ram/zram/dm devices excluded.
    pub(super) fn parse_diskstats(text: &str, whole_disk: impl Fn(&str) -> bool) -> DiskBytes {
        let mut d = DiskBytes {
            read: 0,
            written: 0,
        };
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 10 {
                continue;
            }
            let name = f[2];
            if ["loop", "ram", "zram", "dm-", "md", "sr"]
                .iter()
                .any(|p| name.starts_with(p))
                || !whole_disk(name)
            {
                continue;
            }
            let sectors = |i: usize| f[i].parse::<u64>().unwrap_or(0);
            d.read += sectors(5) * 512;
            d.written += sectors(9) * 512;
        }
        d
    }

    pub fn loopback_bytes() -> io::Result<u64> {
        let text = std::fs::read_to_string("/proc/net/dev")?;
        parse_net_dev_lo(&text)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "/proc/net/dev has no lo line"))
    }

    pub(super) fn parse_net_dev_lo(text: &str) -> Option<u64> {
        text.lines().find_map(|l| {
            let (name, rest) = l.split_once(':')?;
            (name.trim() == "lo")
                .then(|| rest.split_whitespace().next()?.parse().ok())
                .flatten()
        })
    }

    pub fn children_cpu_ns() -> io::Result<u64> {
        // SAFETY: a zeroed rusage is valid output space.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a local, valid output space for getrusage.
        if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Ok(tv(ru.ru_utime) + tv(ru.ru_stime))
    }

    pub fn is_superuser() -> bool {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    pub fn terminate(pid: u32) -> io::Result<()> {
        // SAFETY: kill with a valid signal number has no memory effects.
        if unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::DiskBytes;
    use std::io;

    pub const DISK_COUNTER: &str = "none on this OS";
    pub const LOOPBACK_COUNTER: &str = "none on this OS";

    pub fn disk_bytes() -> io::Result<DiskBytes> {
        Err(super::super::unsupported(
            "no whole-machine disk byte counter is read here",
        ))
    }
    pub fn loopback_bytes() -> io::Result<u64> {
        Err(super::super::unsupported(
            "no loopback byte counter is read here",
        ))
    }
    pub fn children_cpu_ns() -> io::Result<u64> {
        Err(super::super::unsupported(
            "the children's CPU time is not read here",
        ))
    }
    pub fn is_superuser() -> bool {
        false
    }
    pub fn terminate(_pid: u32) -> io::Result<()> {
        Err(super::super::unsupported(
            "servers are not stopped by signal here",
        ))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::imp::*;

    #[test]
    fn diskstats_sum_whole_disks_only() {
        let t = "   7       0 loop0 5 0 80 0 0 0 0 0 0 0 0\n \
                 254       0 vda 100 0 2000 10 50 0 4000 20 0 30 30\n \
                 254       1 vda1 90 0 1800 10 40 0 3000 20 0 30 30\n";
        let d = parse_diskstats(t, |n| n == "vda");
        assert_eq!((d.read, d.written), (2000 * 512, 4000 * 512));
    }

    #[test]
    fn net_dev_reads_the_loopback_receive_bytes() {
        let t = "Inter-|   Receive\n face |bytes packets\n    lo: 12345 10 0 0 0 0 0 0 12345 10 0 0\n  eth0: 99 1 0 0 0 0 0 0 5 1 0 0\n";
        assert_eq!(parse_net_dev_lo(t), Some(12345));
    }
}
