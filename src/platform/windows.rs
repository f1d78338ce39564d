//! Windows implementations. Built and its tests run under Wine in CI (see README "Platforms");
//! timings under Wine mean nothing, behaviour does.

use std::ffi::c_void;
use std::io::{self, Read, Write};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use windows_sys::Wdk::System::Threading::{NtQueryInformationThread, ThreadBasicInformation};
use windows_sys::Win32::Foundation::{GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FILE_ATTRIBUTE_NORMAL, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING, WriteFile,
};
use windows_sys::Win32::System::Performance::QueryPerformanceFrequency;
use windows_sys::Win32::System::SystemInformation::GetSystemDirectoryW;
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetCurrentThread, GetProcessAffinityMask, SetProcessAffinityMask,
    SetThreadAffinityMask, TerminateProcess,
};

use super::NullSyscall;

pub const OS_NAME: &str = "Windows";
pub const CLOCK_DESCRIPTION: &str = "QueryPerformanceCounter, through std::time::Instant";

/// One tick of QueryPerformanceCounter: 1 s / QueryPerformanceFrequency.
pub fn clock_resolution_ns() -> Option<f64> {
    let mut f: i64 = 0;
    // SAFETY: valid pointer to an i64; the call cannot fail on Windows XP and later.
    let ok = unsafe { QueryPerformanceFrequency(&mut f) } != 0;
    (ok && f > 0).then(|| 1e9 / f as f64)
}

/// The Wine version when this Windows program runs under Wine (its ntdll exports
/// `wine_get_version`), else None. Under Wine, behaviour is Windows' but timings are not.
pub fn wine_version() -> Option<String> {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    let ntdll: Vec<u16> = "ntdll.dll\0".encode_utf16().collect();
    // SAFETY: NUL-terminated names; ntdll is loaded in every Windows process.
    let f = unsafe {
        let m = GetModuleHandleW(ntdll.as_ptr());
        if m.is_null() {
            return None;
        }
        GetProcAddress(m, c"wine_get_version".as_ptr().cast())
    }?;
    // SAFETY: Wine's `const char *wine_get_version(void)` returns a static NUL-terminated string.
    let get: extern "C" fn() -> *const std::ffi::c_char = unsafe { std::mem::transmute(f) };
    let p = get();
    if p.is_null() {
        return Some(String::new());
    }
    // SAFETY: as above.
    Some(
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned(),
    )
}

// ---------------------------------------------------------------------------------------------
// The null system call.

/// THREAD_BASIC_INFORMATION (winternl.h); not in windows-sys.
#[repr(C)]
#[derive(Default)]
struct ThreadBasicInfo {
    exit_status: i32,
    teb_base: usize,
    unique_process: usize,
    unique_thread: usize,
    affinity_mask: usize,
    priority: i32,
    base_priority: i32,
}

/// NtQueryInformationThread(current thread, ThreadBasicInformation).
fn thread_basic_info(thread: HANDLE) -> io::Result<ThreadBasicInfo> {
    let mut info = ThreadBasicInfo::default();
    // SAFETY: the buffer is a THREAD_BASIC_INFORMATION of the size passed; the handle is valid.
    let status = unsafe {
        NtQueryInformationThread(
            thread,
            ThreadBasicInformation,
            (&mut info as *mut ThreadBasicInfo).cast::<c_void>(),
            std::mem::size_of::<ThreadBasicInfo>() as u32,
            std::ptr::null_mut(),
        )
    };
    if status != 0 {
        return Err(io::Error::other(format!(
            "NtQueryInformationThread(ThreadBasicInformation) returned NTSTATUS {status:#x}"
        )));
    }
    Ok(info)
}

/// Why this call: the cheap-looking Win32 calls never enter the kernel (GetCurrentProcessId and
/// GetCurrentThreadId read the TEB, QueryPerformanceCounter reads the TSC in user mode);
/// NtYieldExecution may switch threads; NtClose of an invalid handle raises an exception under a
/// debugger or with strict handle checks. NtQueryInformationThread has no user-mode fast path:
/// ntdll's stub executes `syscall`, the kernel references the thread object through the
/// pseudo-handle and copies 48 bytes back — a minimal, side-effect-free kernel round trip.
pub fn null_syscall() -> io::Result<NullSyscall> {
    fn query() -> usize {
        // SAFETY: GetCurrentThread returns a pseudo-handle that is always valid.
        thread_basic_info(unsafe { GetCurrentThread() })
            .map(|i| i.unique_thread)
            .unwrap_or(0)
    }
    // Prove it works once before it is timed.
    if query() == 0 {
        // SAFETY: as above.
        thread_basic_info(unsafe { GetCurrentThread() })?;
        return Err(io::Error::other(
            "NtQueryInformationThread returned thread id 0",
        ));
    }
    Ok(NullSyscall {
        description: "NtQueryInformationThread(current thread, ThreadBasicInformation) (ntdll; \
                      always a kernel entry, no user-mode fast path)",
        call: query,
    })
}

// ---------------------------------------------------------------------------------------------
// The cheap I/O call.

/// 1-byte WriteFile calls on the NUL device. Reading NUL returns end-of-file (0 bytes), so the
/// byte-moving operation Windows offers on its null device is a write: NtWriteFile enters the
/// kernel, the I/O manager builds an IRP and the Null driver completes it with the full length.
pub struct CheapIo {
    handle: OwnedHandle,
}

impl CheapIo {
    pub fn open() -> io::Result<(CheapIo, &'static str)> {
        let name: Vec<u16> = "\\\\.\\NUL\0".encode_utf16().collect();
        // SAFETY: NUL-terminated UTF-16 name; no security attributes or template.
        let h = unsafe {
            CreateFileW(
                name.as_ptr(),
                GENERIC_WRITE,
                FILE_SHARE_READ | FILE_SHARE_WRITE,
                std::ptr::null(),
                OPEN_EXISTING,
                FILE_ATTRIBUTE_NORMAL,
                std::ptr::null_mut(),
            )
        };
        if h == INVALID_HANDLE_VALUE || h.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh handle that nothing else owns.
        let handle = unsafe { OwnedHandle::from_raw_handle(h) };
        Ok((
            CheapIo { handle },
            "WriteFile of 1 byte to the NUL device (reads of NUL return end-of-file)",
        ))
    }

    #[inline(always)]
    pub fn read_one(&mut self) -> io::Result<()> {
        let b = 0u8;
        let mut written = 0u32;
        // SAFETY: a valid handle, a 1-byte buffer, synchronous I/O (no OVERLAPPED).
        let ok = unsafe {
            WriteFile(
                self.handle.as_raw_handle(),
                &b,
                1,
                &mut written,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        if written != 1 {
            return Err(io::Error::other(format!(
                "WriteFile to NUL wrote {written} bytes, expected 1"
            )));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Affinity. SetThreadAffinityMask and the masks read back cover the calling process's processor
// group only (at most 64 CPUs).

fn mask_to_vec(mask: usize) -> Vec<usize> {
    (0..usize::BITS as usize)
        .filter(|&c| mask & (1 << c) != 0)
        .collect()
}

fn process_affinity(process: HANDLE) -> io::Result<usize> {
    let (mut proc_mask, mut sys_mask) = (0usize, 0usize);
    // SAFETY: valid process handle and pointers.
    if unsafe { GetProcessAffinityMask(process, &mut proc_mask, &mut sys_mask) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(proc_mask)
}

/// GetProcessAffinityMask of this process.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: GetCurrentProcess returns an always-valid pseudo-handle.
    process_affinity(unsafe { GetCurrentProcess() }).map(mask_to_vec)
}

/// The AffinityMask of NtQueryInformationThread(ThreadBasicInformation): Windows has no
/// GetThreadAffinityMask.
pub fn current_thread_affinity() -> io::Result<Vec<usize>> {
    // SAFETY: pseudo-handle, always valid.
    thread_basic_info(unsafe { GetCurrentThread() }).map(|i| mask_to_vec(i.affinity_mask))
}

pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= usize::BITS as usize {
        return Err(super::unsupported(&format!(
            "CPU {cpu} is outside the first processor group; SetThreadAffinityMask covers 64 CPUs"
        )));
    }
    // SAFETY: pseudo-handle; the mask is a plain integer.
    if unsafe { SetThreadAffinityMask(GetCurrentThread(), 1 << cpu) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Processes, threads and pipes (the `proc` suite). No fork and no posix_spawn; programs are
// started with CreateProcessW (through std::process::Command).

const FORK_REASON: &str = "no fork(); process creation is measured by proc/spawn (CreateProcessW)";

/// `rundll32.exe` from the system directory, run with no arguments: it finds no DLL to call and
/// exits 0 at once without output. Windows ships no /bin/true; this is the smallest program every
/// Windows (and Wine) has that exits 0 silently (it loads user32 & co., which a real Windows
/// program start pays too).
pub fn tiny_program() -> io::Result<&'static Path> {
    static PROGRAM: OnceLock<Option<PathBuf>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| system_directory().map(|d| d.join("rundll32.exe")))
        .as_deref()
        .ok_or_else(|| io::Error::other("GetSystemDirectoryW failed"))
}

fn system_directory() -> Option<PathBuf> {
    let mut buf = [0u16; 512];
    // SAFETY: the buffer size passed is the buffer's length in u16s.
    let n = unsafe { GetSystemDirectoryW(buf.as_mut_ptr(), buf.len() as u32) } as usize;
    (n > 0 && n < buf.len()).then(|| PathBuf::from(String::from_utf16_lossy(&buf[..n])))
}

pub fn fork_available() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn posix_spawn_available() -> io::Result<()> {
    Err(super::unsupported(
        "no posix_spawn(); process creation (CreateProcessW) is measured by proc/spawn",
    ))
}

/// Never constructed on Windows (fork/exec and posix_spawn do not exist).
pub struct ExecProgram {
    never: std::convert::Infallible,
}

impl ExecProgram {
    pub fn new(_path: &Path) -> io::Result<ExecProgram> {
        Err(super::unsupported(
            "no exec()/posix_spawn(); programs are started with CreateProcessW (proc/spawn)",
        ))
    }
    pub fn path(&self) -> &Path {
        match self.never {}
    }
}

pub fn fork_exit_wait() -> io::Result<()> {
    Err(super::unsupported(FORK_REASON))
}

pub fn fork_exec_wait(program: &ExecProgram) -> io::Result<()> {
    match program.never {}
}

pub fn posix_spawn_wait(program: &ExecProgram) -> io::Result<()> {
    match program.never {}
}

/// The process peer of the context-switch benchmark.
pub const ECHO_PEER: &str = "child process `osgauge __echo` started with CreateProcessW \
                             (std::process::Command), anonymous pipes as its stdin/stdout";
/// What each side does per token.
pub const ECHO_OPS: &str = "WriteFile(1 B) + ReadFile(1 B)";

/// The osgauge executable that serves as the echo peer: $OSGAUGE_EXE if set; else this program
/// itself — except in unit tests, whose executable is the test harness: there, the osgauge.exe
/// cargo built beside the `deps` folder, if any.
fn echo_program() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("OSGAUGE_EXE") {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe()?;
    if !cfg!(test) {
        return Ok(me);
    }
    let beside = me
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("osgauge.exe"));
    match beside {
        Some(p) if p.is_file() => Ok(p),
        _ => Err(super::unsupported(
            "the process peer is the osgauge binary run as `osgauge __echo`; this test \
             executable found no osgauge.exe beside its deps folder (set OSGAUGE_EXE)",
        )),
    }
}

pub fn echo_child_available() -> io::Result<()> {
    echo_program().map(|_| ())
}

/// Kills the child when the deadline of a round-trip batch passes (the pipe reads have no
/// timeout of their own); the killed child's pipe end closes, so the blocked read returns.
struct Watchdog {
    state: Arc<(Mutex<WatchState>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct WatchState {
    deadline: Option<Instant>,
    fired: bool,
    quit: bool,
}

impl Watchdog {
    /// `process`: the child's handle, valid until [`stop`](Self::stop) returns.
    fn start(process: HANDLE) -> io::Result<Watchdog> {
        let state = Arc::new((Mutex::new(WatchState::default()), Condvar::new()));
        let st = Arc::clone(&state);
        let process = process as usize;
        let thread = std::thread::Builder::new()
            .name("osgauge-echo-watchdog".into())
            .spawn(move || {
                let (m, cv) = &*st;
                let mut s = m.lock().unwrap_or_else(|p| p.into_inner());
                while !s.quit {
                    match s.deadline {
                        None => s = cv.wait(s).unwrap_or_else(|p| p.into_inner()),
                        Some(d) => {
                            let now = Instant::now();
                            if now >= d {
                                // SAFETY: the handle outlives this thread (see `start`).
                                unsafe { TerminateProcess(process as HANDLE, 1) };
                                s.fired = true;
                                s.deadline = None;
                            } else {
                                s = cv
                                    .wait_timeout(s, d - now)
                                    .unwrap_or_else(|p| p.into_inner())
                                    .0;
                            }
                        }
                    }
                }
            })?;
        Ok(Watchdog {
            state,
            thread: Some(thread),
        })
    }

    /// Kill the child at `deadline` unless disarmed. Wakes the watchdog only when the deadline
    /// moves earlier, so a batch normally costs one uncontended lock here.
    fn arm(&self, deadline: Instant) {
        let (m, cv) = &*self.state;
        let mut s = m.lock().unwrap_or_else(|p| p.into_inner());
        let earlier = s.deadline.is_none_or(|d| deadline < d);
        s.deadline = Some(deadline);
        if earlier {
            cv.notify_one();
        }
    }

    /// Disarm; true if it had already killed the child.
    fn disarm(&self) -> bool {
        let (m, cv) = &*self.state;
        let mut s = m.lock().unwrap_or_else(|p| p.into_inner());
        s.deadline = None;
        cv.notify_one();
        s.fired
    }

    fn fired(&self) -> bool {
        let (m, _) = &*self.state;
        m.lock().unwrap_or_else(|p| p.into_inner()).fired
    }

    fn stop(&mut self) {
        {
            let (m, cv) = &*self.state;
            m.lock().unwrap_or_else(|p| p.into_inner()).quit = true;
            cv.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A child process (`osgauge __echo`) that echoes 1-byte tokens from its stdin to its stdout.
/// Dropping this kills and waits for the child if [`finish`](Self::finish) did not.
pub struct EchoChild {
    child: Child,
    to_child: Option<ChildStdin>,
    from_child: ChildStdout,
    watchdog: Watchdog,
    done: bool,
}

impl EchoChild {
    /// Starts the child; when the calling thread is pinned (its affinity is narrower than the
    /// process's), the child process gets the same affinity (SetProcessAffinityMask), as a forked
    /// child would inherit it on Linux.
    pub fn start() -> io::Result<EchoChild> {
        let program = echo_program()?;
        let thread_mask = current_thread_affinity()?;
        let process_mask = allowed_cpus()?;
        let mut child = std::process::Command::new(&program)
            .arg(super::ECHO_SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
        let (to_child, from_child) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::other("the child's pipes were not created"));
            }
        };
        let watchdog = match Watchdog::start(child.as_raw_handle()) {
            Ok(w) => w,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        let me = EchoChild {
            child,
            to_child: Some(to_child),
            from_child,
            watchdog,
            done: false,
        };
        if thread_mask != process_mask {
            let mask = thread_mask.iter().fold(0usize, |m, &c| m | (1 << c));
            // SAFETY: a valid process handle we own (PROCESS_ALL_ACCESS from CreateProcessW).
            if unsafe { SetProcessAffinityMask(me.child.as_raw_handle(), mask) } == 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(me)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// GetProcessAffinityMask of the child.
    pub fn cpu_affinity(&self) -> io::Result<Vec<usize>> {
        process_affinity(self.child.as_raw_handle()).map(mask_to_vec)
    }

    /// `n` × (WriteFile 1 byte to the child's stdin, ReadFile 1 byte from its stdout). A
    /// watchdog kills the child when `timeout` passes, which ends a blocked read.
    pub fn round_trips(&mut self, n: u64, timeout: Duration) -> io::Result<()> {
        let to_child = self
            .to_child
            .as_mut()
            .ok_or_else(|| io::Error::other("echo child already finished"))?;
        self.watchdog.arm(Instant::now() + timeout);
        let mut b = [0u8; 1];
        for _ in 0..n {
            let r = to_child
                .write_all(&[1])
                .and_then(|()| self.from_child.read(&mut b));
            match r {
                Ok(1) => {}
                Ok(_) | Err(_) if self.watchdog.fired() => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no echo before the time bound (child killed)",
                    ));
                }
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the echo child closed its stdout (it ended)",
                    ));
                }
                Ok(k) => return Err(io::Error::other(format!("read returned {k}, expected 1"))),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Close the child's stdin, wait up to `grace` for it to exit, require exit status 0; past
    /// `grace` it is killed and TimedOut returned.
    pub fn finish(mut self, grace: Duration) -> io::Result<()> {
        if self.watchdog.disarm() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the echo child was killed at the time bound",
            ));
        }
        drop(self.to_child.take());
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.done = true;
                return if status.success() {
                    Ok(())
                } else {
                    Err(io::Error::other(format!(
                        "echo child {} {status} (expected exit code 0)",
                        self.child.id()
                    )))
                };
            }
            if t0.elapsed() >= grace {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("echo child did not exit within {grace:?} (killed)"),
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for EchoChild {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.watchdog.stop();
    }
}

/// One anonymous pipe used within one thread: WriteFile 1 byte, ReadFile it back — the operations
/// of one side of an [`EchoChild`] round trip, without blocking or switching. (Windows has no
/// poll() on pipes; no readiness wait is made on either path.)
pub struct PollPipe {
    r: io::PipeReader,
    w: io::PipeWriter,
}

impl PollPipe {
    pub fn new() -> io::Result<PollPipe> {
        let (r, w) = io::pipe()?;
        Ok(PollPipe { r, w })
    }

    pub fn pairs(&mut self, n: u64, _timeout: Duration) -> io::Result<()> {
        let mut b = [0u8; 1];
        for _ in 0..n {
            self.w.write_all(&[1])?;
            match self.r.read(&mut b)? {
                1 => {}
                k => return Err(io::Error::other(format!("read returned {k}, expected 1"))),
            }
        }
        Ok(())
    }
}

/// Test helper: true when no process with `pid` is still running.
#[cfg(test)]
pub fn process_gone(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::STILL_ACTIVE;
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: OpenProcess returns null on failure; the handle is owned and closed by OwnedHandle.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() {
        return true;
    }
    // SAFETY: fresh handle nothing else owns.
    let h = unsafe { OwnedHandle::from_raw_handle(h) };
    let mut code = 0u32;
    // SAFETY: valid handle and pointer.
    let ok = unsafe { GetExitCodeProcess(h.as_raw_handle(), &mut code) } != 0;
    !ok || code != STILL_ACTIVE as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_syscall_reads_this_threads_id_from_the_kernel() {
        use windows_sys::Win32::System::Threading::GetCurrentThreadId;
        let ns = null_syscall().unwrap();
        // SAFETY: no preconditions.
        assert_eq!((ns.call)(), unsafe { GetCurrentThreadId() } as usize);
    }

    #[test]
    fn affinity_masks_round_trip() {
        assert_eq!(mask_to_vec(0b1010), vec![1, 3]);
        assert!(mask_to_vec(0).is_empty());
        let e = pin_current_thread(64).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    }

    #[test]
    fn clock_resolution_is_one_qpc_tick() {
        let ns = clock_resolution_ns().unwrap();
        // QueryPerformanceFrequency is at least 1 kHz and at most a few GHz.
        assert!(ns > 0.0 && ns <= 1e6, "{ns}");
    }
}

static FIRST_INTERRUPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Helper children: Ctrl-C is ignored (a handler that does nothing); the parent decides when they
/// stop. Windows has no SIGTERM: `stop` is set by nothing here (the helper ends when its stdin
/// closes).
pub fn helper_child_signals(_stop: &'static std::sync::atomic::AtomicBool) -> io::Result<()> {
    ctrlc::set_handler(|| {}).map_err(io::Error::other)
}

pub fn terminate_with_parent(_parent: u32) -> io::Result<()> {
    Err(super::unsupported(
        "no parent-death signal; the helper ends when its stdin closes",
    ))
}

pub fn install_interrupt_handler(flag: &'static std::sync::atomic::AtomicBool) -> io::Result<()> {
    ctrlc::set_handler(move || {
        FIRST_INTERRUPT.store(true, std::sync::atomic::Ordering::SeqCst);
        if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprint!("{}", super::INTERRUPT_MESSAGE);
    })
    .map_err(io::Error::other)
}

/// 130 after Ctrl-C (the console's interrupt), None before.
pub fn interrupt_exit_code() -> Option<i32> {
    FIRST_INTERRUPT
        .load(std::sync::atomic::Ordering::SeqCst)
        .then_some(130)
}

/// True while a process with this id is running.
pub fn process_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::STILL_ACTIVE;
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: OpenProcess returns null on failure; the handle is owned and closed by OwnedHandle.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() {
        // Access denied means it exists (another user's process).
        return io::Error::last_os_error().raw_os_error() == Some(5);
    }
    // SAFETY: fresh handle nothing else owns.
    let h = unsafe { OwnedHandle::from_raw_handle(h) };
    let mut code = 0u32;
    // SAFETY: valid handle and pointer.
    let ok = unsafe { GetExitCodeProcess(h.as_raw_handle(), &mut code) } != 0;
    ok && code == STILL_ACTIVE as u32
}

/// Windows has no stopped state for processes (threads are suspended one by one).
pub fn child_stopped(_pid: u32) -> bool {
    false
}
