//! Linux tracefs, for spike attribution: a tracing session that records the scheduler, IRQ,
//! softirq and local-timer events of chosen CPUs on the monotonic clock (the clock the latency
//! suite measures with), and puts every setting back as it found it — on drop, and, after a
//! SIGKILL, at the next osgauge start (the saved settings are kept in a state file in the temp
//! dir, named with the owner's pid). Other OSes: unsupported, with the reason.

use std::path::PathBuf;

/// The events a session enables (relative to `events/`).
pub const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    // Each stretch of a task's run time as the scheduler's task clock counts it: with
    // CONFIG_PARAVIRT_TIME_ACCOUNTING that clock leaves out the time the host stole, so wall time
    // on the CPU minus these runtimes is host steal (see `attribution`).
    "sched/sched_stat_runtime",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
];

/// Ring buffer per CPU while a session runs, KiB.
pub const BUFFER_KB: u64 = 32 * 1024;

/// Name prefix of the state files a session leaves while it runs.
pub const STATE_PREFIX: &str = "osgauge-tracefs-";

/// The calling thread's id as tracefs names it (its `pid` field); 0 where there is no tracefs.
pub fn current_tid() -> u32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The state file of the session of process `pid`.
pub fn state_file(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("{STATE_PREFIX}{pid}.json"))
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{BUFFER_KB, EVENTS, STATE_PREFIX, state_file};
    use serde::{Deserialize, Serialize};
    use std::path::{Path, PathBuf};

    const ROOT: &str = "/sys/kernel/tracing";

    /// What a session changed, as it was before (restored on drop or by the next start).
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Saved {
        pub mounted_by_us: bool,
        pub tracing_on: String,
        pub trace_clock: String,
        pub buffer_size_kb: String,
        pub tracing_cpumask: String,
        /// (event, its `enable` content before).
        pub events: Vec<(String, String)>,
    }

    /// A running tracing session; dropping it stops tracing and restores every setting.
    #[derive(Debug)]
    pub struct Session {
        saved: Saved,
        root: PathBuf,
        state: PathBuf,
        restored: bool,
    }

    fn read(p: &Path) -> std::io::Result<String> {
        Ok(std::fs::read_to_string(p)?.trim().to_string())
    }

    fn write(p: &Path, v: &str) -> Result<(), String> {
        std::fs::write(p, v).map_err(|e| format!("writing {} to {}: {e}", v, p.display()))
    }

    /// The selected clock of `trace_clock` ("[mono] local …" → "mono").
    pub fn selected_clock(text: &str) -> Option<&str> {
        let s = text.find('[')?;
        let e = text[s..].find(']')? + s;
        Some(&text[s + 1..e])
    }

    /// A hex CPU mask for `cpus` (tracing_cpumask's format).
    pub fn cpumask(cpus: &[usize]) -> String {
        let mut words: Vec<u32> = vec![0; cpus.iter().max().map_or(1, |m| m / 32 + 1)];
        for &c in cpus {
            words[c / 32] |= 1 << (c % 32);
        }
        words
            .iter()
            .rev()
            .map(|w| format!("{w:08x}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn mounted() -> bool {
        Path::new(ROOT).join("trace").exists()
    }

    /// Why tracing is not possible here, or None.
    pub fn unavailable() -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Some("tracefs needs root (run as root, or without --attribute)".into());
        }
        None
    }

    impl Session {
        /// Mount tracefs if needed, save the settings, and trace `cpus` on the monotonic clock.
        pub fn start(cpus: &[usize]) -> Result<Session, String> {
            if let Some(why) = unavailable() {
                return Err(why);
            }
            restore_stale();
            if let Some(other) = live_owner() {
                return Err(format!(
                    "tracefs is in use by another osgauge (pid {other}): one tracing session at a time"
                ));
            }
            let root = PathBuf::from(ROOT);
            let mut mounted_by_us = false;
            if !mounted() {
                let st = std::process::Command::new("mount")
                    .args(["-t", "tracefs", "nodev", ROOT])
                    .status()
                    .map_err(|e| format!("mounting tracefs: {e}"))?;
                if !st.success() || !mounted() {
                    return Err(format!("tracefs could not be mounted at {ROOT} ({st})"));
                }
                mounted_by_us = true;
            }
            let r = |f: &str| read(&root.join(f)).map_err(|e| format!("reading {ROOT}/{f}: {e}"));
            let mut events = Vec::new();
            for e in EVENTS {
                let p = root.join("events").join(e).join("enable");
                let v = read(&p).map_err(|err| {
                    format!("this kernel has no {e} event ({err}): attribution needs it")
                })?;
                events.push((e.to_string(), v));
            }
            let tracing_on = r("tracing_on")?;
            let busy = tracing_on == "1" && events.iter().any(|(_, v)| v != "0");
            if busy {
                return Err(
                    "tracefs is already tracing some of these events (another tool?): not touched"
                        .into(),
                );
            }
            let clock_text = r("trace_clock")?;
            let saved = Saved {
                mounted_by_us,
                tracing_on,
                trace_clock: selected_clock(&clock_text).unwrap_or("local").to_string(),
                buffer_size_kb: r("buffer_size_kb")?,
                tracing_cpumask: r("tracing_cpumask")?,
                events,
            };
            let state = state_file(std::process::id());
            std::fs::write(
                &state,
                serde_json::to_string(&saved).map_err(|e| e.to_string())?,
            )
            .map_err(|e| format!("writing {}: {e}", state.display()))?;
            let mut s = Session {
                saved,
                root,
                state,
                restored: false,
            };
            if let Err(e) = s.configure(cpus) {
                s.restore();
                return Err(e);
            }
            Ok(s)
        }

        fn configure(&self, cpus: &[usize]) -> Result<(), String> {
            let p = |f: &str| self.root.join(f);
            write(&p("tracing_on"), "0")?;
            write(&p("trace_clock"), "mono")?;
            write(&p("buffer_size_kb"), &BUFFER_KB.to_string())?;
            write(&p("tracing_cpumask"), &cpumask(cpus))?;
            for (e, _) in &self.saved.events {
                write(&self.root.join("events").join(e).join("enable"), "1")?;
            }
            write(&p("trace"), "")?;
            write(&p("tracing_on"), "1")
        }

        /// Stop tracing and return the recorded text, and the events the ring lost (overruns).
        pub fn stop_and_read(&mut self) -> Result<(String, u64), String> {
            write(&self.root.join("tracing_on"), "0")?;
            let text = std::fs::read_to_string(self.root.join("trace"))
                .map_err(|e| format!("reading the trace: {e}"))?;
            let mut lost = 0;
            if let Ok(rd) = std::fs::read_dir(self.root.join("per_cpu")) {
                for d in rd.flatten() {
                    if let Ok(st) = std::fs::read_to_string(d.path().join("stats")) {
                        lost += st
                            .lines()
                            .find_map(|l| l.strip_prefix("overrun:"))
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .unwrap_or(0);
                    }
                }
            }
            Ok((text, lost))
        }

        /// Clear the ring and trace again (the next run).
        pub fn restart(&mut self) -> Result<(), String> {
            write(&self.root.join("trace"), "")?;
            write(&self.root.join("tracing_on"), "1")
        }

        fn restore(&mut self) {
            if !self.restored {
                restore(&self.root, &self.saved);
                let _ = std::fs::remove_file(&self.state);
                self.restored = true;
            }
        }
    }

    impl Drop for Session {
        fn drop(&mut self) {
            self.restore();
        }
    }

    /// Put every saved setting back (best effort: each write on its own).
    fn restore(root: &Path, s: &Saved) {
        let _ = std::fs::write(root.join("tracing_on"), "0");
        for (e, v) in &s.events {
            let _ = std::fs::write(root.join("events").join(e).join("enable"), v);
        }
        let _ = std::fs::write(root.join("trace"), "");
        let _ = std::fs::write(root.join("trace_clock"), &s.trace_clock);
        let _ = std::fs::write(root.join("buffer_size_kb"), &s.buffer_size_kb);
        let _ = std::fs::write(root.join("tracing_cpumask"), &s.tracing_cpumask);
        let _ = std::fs::write(root.join("tracing_on"), &s.tracing_on);
        if s.mounted_by_us {
            let _ = std::process::Command::new("umount").arg(ROOT).status();
        }
    }

    /// State files of sessions: (owner pid, path).
    fn state_files() -> Vec<(u32, PathBuf)> {
        let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
            return Vec::new();
        };
        rd.flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let pid = name
                    .strip_prefix(STATE_PREFIX)?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()?;
                Some((pid, e.path()))
            })
            .collect()
    }

    fn alive(pid: u32) -> bool {
        pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
    }

    fn live_owner() -> Option<u32> {
        state_files()
            .into_iter()
            .map(|(p, _)| p)
            .find(|&p| alive(p) && p != std::process::id())
    }

    /// Restore what sessions of dead osgauge processes (killed) changed; returns the state files
    /// handled.
    pub fn restore_stale() -> Vec<PathBuf> {
        let mut done = Vec::new();
        for (pid, path) in state_files() {
            if alive(pid) {
                continue;
            }
            if let Some(saved) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<Saved>(&t).ok())
                && mounted()
            {
                restore(Path::new(ROOT), &saved);
            }
            let _ = std::fs::remove_file(&path);
            done.push(path);
        }
        done
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::PathBuf;

    /// Not built here: see [`unavailable`].
    #[derive(Debug)]
    pub struct Session;

    pub fn unavailable() -> Option<String> {
        Some(format!(
            "unsupported on {}: spike attribution reads Linux tracefs; ETW (Windows) and kdebug \
             (macOS) are not built",
            crate::platform::OS_NAME
        ))
    }

    impl Session {
        pub fn start(_cpus: &[usize]) -> Result<Session, String> {
            Err(unavailable().unwrap_or_default())
        }
        pub fn stop_and_read(&mut self) -> Result<(String, u64), String> {
            Err(unavailable().unwrap_or_default())
        }
        pub fn restart(&mut self) -> Result<(), String> {
            Err(unavailable().unwrap_or_default())
        }
    }

    pub fn restore_stale() -> Vec<PathBuf> {
        Vec::new()
    }
}

pub use imp::*;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn clock_and_mask_texts() {
        assert_eq!(selected_clock("[local] global mono"), Some("local"));
        assert_eq!(selected_clock("local global [mono] x86-tsc"), Some("mono"));
        assert_eq!(selected_clock("local"), None);
        assert_eq!(cpumask(&[0, 1]), "00000003");
        assert_eq!(cpumask(&[1]), "00000002");
        assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
    }
}
