//! The parent side of a load: start the child, wait until it is ready, stop it and read its
//! report; the guard kills and reaps it and deletes its files on every exit path.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{LoadKind, LoadReport, LoadSpec};
use crate::record::BenchError;
use crate::timing::RunContext;

/// A running load child. Dropping it kills and reaps the child and deletes its files.
pub struct LoadProcess {
    child: Option<Child>,
    pid: u32,
    kind: LoadKind,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    files: Vec<PathBuf>,
    pub ready_notes: Vec<String>,
}

/// Poll interval of the parent's bounded waits.
const POLL: Duration = Duration::from_millis(20);

impl LoadProcess {
    /// Start the child and wait until every load thread runs. The wait ends at the cell's deadline
    /// or on Ctrl-C (checked every 20 ms), or when the child ends; every failure is one line.
    pub fn start(exe: &Path, spec: &LoadSpec, ctx: &RunContext) -> Result<LoadProcess, BenchError> {
        let name = spec.kind.name();
        let json = serde_json::to_string(spec).map_err(|e| BenchError::failed(e.to_string()))?;
        let mut child = Command::new(exe)
            .arg("__load")
            .arg(&json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| BenchError::failed(format!("starting load child {exe:?}: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut p = LoadProcess {
            pid: child.id(),
            child: Some(child),
            kind: spec.kind,
            stdin,
            lines: rx,
            files: spec.files(),
            ready_notes: Vec::new(),
        };
        let line = loop {
            match p.lines.recv_timeout(POLL) {
                Ok(line) => break line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(status) = p.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
                    {
                        // It ended; its last words (an error line) may still be in the pipe.
                        if let Ok(line) = p.lines.recv_timeout(Duration::from_millis(500)) {
                            break line;
                        }
                        return Err(BenchError::failed(format!(
                            "load '{name}': its process {} while preparing",
                            crate::platform::process::describe_exit(status)
                        )));
                    }
                    if let Err(e) = ctx.check() {
                        if crate::platform::child_stopped(p.pid) {
                            return Err(BenchError::failed(format!(
                                "load '{name}' did not become ready before the cell's time bound: \
                                 its process {} is stopped (SIGSTOP/SIGTSTP)",
                                p.pid
                            )));
                        }
                        return Err(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = p.wait_until(Instant::now() + Duration::from_secs(2));
                    return Err(BenchError::failed(match status {
                        Some(s) => format!(
                            "load '{name}': its process {} while preparing",
                            crate::platform::process::describe_exit(s)
                        ),
                        None => {
                            format!("load '{name}': its process closed its output while preparing")
                        }
                    }));
                }
            }
        };
        let v: serde_json::Value = serde_json::from_str(&line).map_err(|_| {
            BenchError::failed(format!(
                "load '{name}': unexpected output from its process: {line}"
            ))
        })?;
        if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
            return Err(BenchError::failed(format!(
                "load '{name}' failed to start: {err}"
            )));
        }
        p.ready_notes = v
            .get("ready")
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .unwrap_or_default();
        Ok(p)
    }

    /// Poll the child until it exits or `until`; its status if it exited (the child is reaped).
    fn wait_until(&mut self, until: Instant) -> Option<std::process::ExitStatus> {
        let c = self.child.as_mut()?;
        loop {
            match c.try_wait() {
                Ok(Some(s)) => {
                    self.child = None;
                    return Some(s);
                }
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => return None,
            }
        }
    }

    /// Kill and reap the child (SIGKILL ends a stopped process too).
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Ask the child to stop and collect its report. Every wait ends at `deadline` (at least 2 s
    /// from now, so a load that ends with the cell still gets to stop politely); past it the child
    /// is killed and reaped and an error says why.
    pub fn stop(mut self, deadline: Instant) -> Result<LoadReport, String> {
        let name = self.kind.name();
        let until = deadline.max(Instant::now() + Duration::from_secs(2));
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
        let line = loop {
            let now = Instant::now();
            if now >= until {
                break None;
            }
            match self.lines.recv_timeout((until - now).min(POLL * 5)) {
                Ok(l) => break Some(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            }
        };
        let stopped = crate::platform::child_stopped(self.pid);
        let status = self.wait_until(until);
        if status.is_none() {
            self.kill();
        }
        let Some(line) = line else {
            return Err(match status {
                Some(s) => format!(
                    "load '{name}': its process {} before it reported",
                    crate::platform::process::describe_exit(s)
                ),
                None if stopped => format!(
                    "load '{name}': its process {} is stopped (SIGSTOP/SIGTSTP) and sent no report \
                     before the cell's time bound; it was killed",
                    self.pid
                ),
                None => format!(
                    "load '{name}': its process sent no report before the cell's time bound; it was killed"
                ),
            });
        };
        serde_json::from_str(&line)
            .map_err(|_| format!("load '{name}': unexpected report from its process: {line}"))
    }
}

impl Drop for LoadProcess {
    fn drop(&mut self) {
        // Ask politely (the child deletes its own files), then kill after 3 s — at once if stopped.
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
        if self.child.is_some() && !crate::platform::child_stopped(self.pid) {
            self.wait_until(Instant::now() + Duration::from_secs(3));
        }
        self.kill();
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}
