//! Calls shared by the Unix-like targets (Linux, macOS).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

pub fn clock_resolution_ns() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64)
}

/// 1-byte reads of /dev/zero through read(2) directly (no std buffering).
pub struct DevZero {
    file: File,
}

impl DevZero {
    pub fn open() -> io::Result<(DevZero, &'static str)> {
        let file = File::open("/dev/zero")?;
        Ok((DevZero { file }, "read(2) of 1 byte from /dev/zero"))
    }

    #[inline(always)]
    pub fn read_one(&mut self) -> io::Result<()> {
        let mut b = 0u8;
        // SAFETY: reading 1 byte into a valid 1-byte buffer from an open fd.
        let n = unsafe { libc::read(self.file.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
        match n {
            1 => Ok(()),
            -1 => Err(io::Error::last_os_error()),
            n => Err(io::Error::other(format!(
                "read of /dev/zero returned {n} bytes, expected 1"
            ))),
        }
    }
}

/// 0666 minus the process umask, as `open(O_CREAT, 0666)` would create.
pub fn user_file_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // umask can only be read by setting it; restore it at once (single-threaded callers only
    // race with file creation in other threads, which osgauge does not do while exporting).
    // SAFETY: umask cannot fail.
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    Some(std::fs::Permissions::from_mode(0o666 & !(mask as u32)))
}

static INTERRUPT: std::sync::OnceLock<(&'static std::sync::atomic::AtomicBool, i32)> =
    std::sync::OnceLock::new();

extern "C" fn on_interrupt(_sig: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap, write(2) and _exit(2).
    if let Some((flag, code)) = INTERRUPT.get() {
        if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(*code) };
        }
        let msg = super::INTERRUPT_MESSAGE.as_bytes();
        // SAFETY: writing a static buffer to stderr; the result does not matter.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    }
}

/// Ignore SIGINT in this process (SIGTERM keeps its default action).
pub fn ignore_interrupt() -> io::Result<()> {
    // SAFETY: a zeroed sigaction with SIG_IGN and an empty mask.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

pub fn install_interrupt_handler(
    flag: &'static std::sync::atomic::AtomicBool,
    exit_code: i32,
) -> io::Result<()> {
    if INTERRUPT.set((flag, exit_code)).is_err() {
        return Ok(());
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask; SA_RESTART so that
        // interrupted system calls in benchmarks resume instead of failing with EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_interrupt as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// What `uname(2)` says (empty fields as None). Not on macOS: its record reads the same facts
/// with sysctl (kern.hostname, kern.osrelease, kern.version).
#[cfg(not(target_os = "macos"))]
pub struct Uname {
    pub nodename: Option<String>,
    pub release: Option<String>,
    pub version: Option<String>,
}

#[cfg(not(target_os = "macos"))]
pub fn uname() -> Option<Uname> {
    // SAFETY: utsname is plain old data; uname fills it and returns 0 on success.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |a: &[libc::c_char]| {
        let bytes: Vec<u8> = a.iter().map(|&c| c as u8).collect();
        std::ffi::CStr::from_bytes_until_nul(&bytes)
            .ok()
            .map(|c| c.to_string_lossy().trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Some(Uname {
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
    })
}
