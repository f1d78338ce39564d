//! Fallback back end of the machine / environment record for operating systems without a
//! dedicated one (BSDs and others; Linux, macOS and Windows have their own). It fills what portable std (and, on Unix, POSIX
//! `uname`/`sysconf`/`getloadavg`) can give and leaves the rest None with a note saying
//! "not yet implemented on <os>" (or "not applicable on <os>" for Linux-only ideas such as cgroups,
//! nohz_full or transparent huge pages).

#![cfg(not(target_os = "linux"))]

use chrono::Utc;

use crate::system::{Cpu, Environment, Machine, Notes};

fn todo_note(notes: &mut Notes, keys: &[&str]) {
    let os = std::env::consts::OS;
    for k in keys {
        notes.insert((*k).to_string(), format!("not yet implemented on {os}"));
    }
}

/// Fields whose concept does not exist on this OS.
fn na_note(notes: &mut Notes, keys: &[&str]) {
    let os = std::env::consts::OS;
    for k in keys {
        notes.insert((*k).to_string(), format!("not applicable on {os}"));
    }
}

/// Static facts about this machine (partial on this OS).
pub fn machine() -> Machine {
    let mut notes = Notes::new();
    todo_note(
        &mut notes,
        &[
            "os_name",
            "cpu.model_name",
            "cpu.vendor",
            "cpu.topology",
            "cpu.smt",
            "cpu.nominal_mhz",
            "caches",
            "memory_total_bytes",
            "system",
            "virtualization",
            "mitigations",
            "workdir",
        ],
    );
    na_note(&mut notes, &["clocksource", "preemption", "cgroup"]);
    notes.insert(
        "cpu.logical_cpus".into(),
        "from std::thread::available_parallelism (may be limited by affinity or quotas)".into(),
    );
    let uts = unix::uname();
    if uts.is_none() {
        todo_note(&mut notes, &["kernel", "page_size_bytes"]);
    }
    let hostname = uts
        .as_ref()
        .and_then(|u| u.nodename.clone())
        .or_else(|| std::env::var("COMPUTERNAME").ok());
    if hostname.is_none() {
        todo_note(&mut notes, &["hostname"]);
    }
    Machine {
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        kernel_release: uts.as_ref().and_then(|u| u.release.clone()),
        kernel_version: uts.as_ref().and_then(|u| u.version.clone()),
        hostname,
        cpu: Cpu {
            logical_cpus: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32),
            ..Default::default()
        },
        page_size_bytes: unix::page_size(),
        notes,
        ..Default::default()
    }
}

/// A snapshot of the environment (partial on this OS; returns at once).
pub fn environment() -> Environment {
    let mut notes = Notes::new();
    todo_note(
        &mut notes,
        &[
            "aslr",
            "cpu_time",
            "procs_running",
            "mem_available_bytes",
            "swap_total_bytes",
            "realtime",
        ],
    );
    na_note(
        &mut notes,
        &[
            "isolated_cpus",
            "nohz_full_cpus",
            "cpu_pressure",
            "thp",
            "timer_slack_ns",
        ],
    );
    let os = std::env::consts::OS;
    let (freq, affinity) = match os {
        "macos" => (
            "not exposed on macos".to_string(),
            "not supported on macos (affinity tags are only hints)".to_string(),
        ),
        "windows" => (
            "not yet implemented on windows (power plan via powercfg)".to_string(),
            format!("not yet implemented on {os}"),
        ),
        _ => (
            format!("not yet implemented on {os}"),
            format!("not yet implemented on {os}"),
        ),
    };
    notes.insert("governors".into(), freq.clone());
    notes.insert("boost".into(), freq);
    notes.insert("affinity".into(), affinity);
    let load_avg = unix::loadavg();
    if load_avg.is_none() {
        todo_note(&mut notes, &["load_avg"]);
    }
    let uid = unix::uid();
    if uid.is_none() {
        todo_note(&mut notes, &["uid"]);
    }
    Environment {
        taken_at: Utc::now(),
        load_avg,
        uid: uid.map(|u| u.0),
        is_root: uid.map(|u| u.1 == 0),
        notes,
        ..Default::default()
    }
}

#[cfg(unix)]
mod unix {
    use crate::system::LoadAvg;

    pub use crate::platform::unix::uname;

    pub fn page_size() -> Option<u64> {
        // SAFETY: no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        (v > 0).then_some(v as u64)
    }

    pub fn loadavg() -> Option<LoadAvg> {
        let mut l = [0f64; 3];
        // SAFETY: the buffer holds 3 doubles.
        (unsafe { libc::getloadavg(l.as_mut_ptr(), 3) } == 3).then_some(LoadAvg {
            one: l[0],
            five: l[1],
            fifteen: l[2],
            runnable: None,
            total: None,
        })
    }

    /// (uid, euid).
    pub fn uid() -> Option<(u32, u32)> {
        // SAFETY: no preconditions.
        Some(unsafe { (libc::getuid(), libc::geteuid()) })
    }
}

#[cfg(not(unix))]
mod unix {
    use crate::system::LoadAvg;

    #[allow(dead_code)] // never constructed here: there is no uname
    pub struct Uname {
        pub nodename: Option<String>,
        pub release: Option<String>,
        pub version: Option<String>,
    }

    pub fn uname() -> Option<Uname> {
        None
    }

    pub fn page_size() -> Option<u64> {
        None
    }

    pub fn loadavg() -> Option<LoadAvg> {
        None
    }

    pub fn uid() -> Option<(u32, u32)> {
        None
    }
}
