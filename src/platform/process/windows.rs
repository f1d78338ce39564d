//! Windows: children in a kill-on-close job object, usage from `GetProcessTimes`.

use super::*;
use std::os::windows::io::AsRawHandle;
use std::process::{Child, Command};
use windows_sys::Win32::Foundation::{FILETIME, HANDLE};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetProcessTimes};

pub const USAGE_METHOD: &str = "GetProcessTimes of each child (user, kernel time); the total context switches from the child's own reading, no voluntary/involuntary split";

pub fn user_process_count() -> Option<u64> {
    None
}
pub fn process_limit() -> Option<u64> {
    None
}
pub fn kill_group(_pgid: i32) {}

fn times(h: HANDLE) -> io::Result<(u64, u64)> {
    let z = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut a, mut b, mut k, mut u) = (z, z, z, z);
    // SAFETY: h is an open process handle; out pointers are valid.
    if unsafe { GetProcessTimes(h, &mut a, &mut b, &mut k, &mut u) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let f = |t: FILETIME| ((t.dwHighDateTime as u64) << 32 | t.dwLowDateTime as u64) * 100;
    Ok((f(u), f(k)))
}

pub fn own_usage() -> io::Result<ChildUsage> {
    // SAFETY: pseudo handle of the current process.
    let (user_ns, sys_ns) = times(unsafe { GetCurrentProcess() })?;
    Ok(ChildUsage {
        pid: std::process::id(),
        user_ns,
        sys_ns,
        ..Default::default()
    })
}

/// A job object that kills its processes when its last handle closes (this process
/// ending in any way, killed included): the Windows counterpart of PR_SET_PDEATHSIG.
struct Job(HANDLE);

impl Job {
    fn kill_on_close() -> io::Result<Job> {
        use windows_sys::Win32::System::JobObjects::{
            CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
            JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
            SetInformationJobObject,
        };
        // SAFETY: no name, default (non-inheritable) security.
        let h = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if h.is_null() {
            return Err(io::Error::last_os_error());
        }
        let job = Job(h);
        // SAFETY: zeroed is a valid "no limits" structure; size is its size.
        let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let ok = unsafe {
            SetInformationJobObject(
                job.0,
                JobObjectExtendedLimitInformation,
                (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: our own handle, closed once.
        unsafe { windows_sys::Win32::Foundation::CloseHandle(self.0) };
    }
}

// SAFETY: a job handle may be used from any thread.
unsafe impl Send for Job {}

/// Children kept as handles, all in one kill-on-close job object (a killed parent takes
/// them along); killed one by one (TerminateProcess through `Child::kill`).
#[derive(Default)]
pub struct ChildSet {
    children: Vec<Child>,
    job: Option<Job>,
}

impl ChildSet {
    pub fn new() -> ChildSet {
        ChildSet::default()
    }
    /// Close the job handle without killing anything first: what the system does when this
    /// process ends (the job then kills the children). For tests.
    #[doc(hidden)]
    pub fn close_job(&mut self) {
        self.job = None;
    }
    pub fn group(&self) -> Option<i32> {
        None
    }
    pub fn running(&self) -> usize {
        self.children.len()
    }
    pub fn spawn(&mut self, mut cmd: Command) -> io::Result<u32> {
        use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
        if self.job.is_none() {
            self.job = Some(Job::kill_on_close().map_err(|e| {
                io::Error::other(format!("creating a kill-on-close job object: {e}"))
            })?);
        }
        let mut c = cmd.spawn()?;
        let pid = c.id();
        let job = self.job.as_ref().map_or(std::ptr::null_mut(), |j| j.0);
        // SAFETY: both handles are open (c owns the process handle).
        if unsafe { AssignProcessToJobObject(job, c.as_raw_handle() as HANDLE) } == 0 {
            let e = io::Error::last_os_error();
            let _ = c.kill();
            let _ = c.wait();
            return Err(io::Error::other(format!(
                "putting child {pid} in the job object: {e}"
            )));
        }
        self.children.push(c);
        Ok(pid)
    }
    pub fn reap(&mut self) -> io::Result<Vec<ChildUsage>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.children.len() {
            match self.children[i].try_wait()? {
                Some(status) => {
                    let c = self.children.swap_remove(i);
                    // The handle is still open (c owns it).
                    let (user_ns, sys_ns) = times(c.as_raw_handle() as HANDLE)?;
                    out.push(ChildUsage {
                        pid: c.id(),
                        code: status.code(),
                        user_ns,
                        sys_ns,
                        ..Default::default()
                    });
                }
                None => i += 1,
            }
        }
        Ok(out)
    }
    pub fn kill_and_reap(&mut self) {
        for mut c in self.children.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for ChildSet {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}
