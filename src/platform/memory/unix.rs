//! Unix (Linux, macOS): page size (sysconf), rusage fault counters, anonymous and file
//! mappings (mmap), madvise and page residency (mincore).

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
