//! Suite `proc`: process and thread creation, spawn+exec, context switches.
//!
//! Every benchmark here creates OS objects (processes, threads, pipes); each is owned by a guard
//! (the platform's `EchoChild`, `OwnedFd`s, scoped threads) so that it is killed/reaped, joined or
//! closed on every exit path: normal end, error, time bound and Ctrl-C.

/// What the suite measures, as `osgauge list` shows it.
pub const DESCRIPTION: &str = "Process and thread services: creation, spawn+exec, context switch";

/// The figures the summary of a run shows first for this suite, in this order.
pub const HEADLINES: Headlines = Headlines::Listed(&[
    Headline::new("proc/fork_exit", "", "fork + exit"),
    Headline::new("proc/thread_create", "", "thread create + join"),
    Headline::new(
        "proc/ctx_switch_thread_pinned",
        "switch",
        "context switch (threads, pinned)",
    ),
]);

mod ctx_switch;
mod fork_exit;
mod program_start;
mod spawn;
mod thread_create;

use std::io;
use std::path::Path;

use super::{Benchmark, os_err};
use super::{Headline, Headlines};
use crate::platform;
use crate::record::{BenchError, ErrorKind};
use crate::timing::RunContext;

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    use ctx_switch::{ContextSwitch, Peer};
    use program_start::{Mechanism, ProgramStart};
    vec![
        Box::new(thread_create::ThreadCreate::new()),
        Box::new(fork_exit::ForkExit::new()),
        Box::new(ProgramStart::new(Mechanism::ForkExec)),
        Box::new(ProgramStart::new(Mechanism::PosixSpawn)),
        Box::new(spawn::Spawn::new()),
        Box::new(ContextSwitch::new(Peer::Process, true)),
        Box::new(ContextSwitch::new(Peer::Process, false)),
        Box::new(ContextSwitch::new(Peer::Thread, true)),
        Box::new(ContextSwitch::new(Peer::Thread, false)),
    ]
}

/// Map an OS error from a measured operation: TimedOut (a bounded wait expired) becomes a timeout,
/// Unsupported stays unsupported, anything else is a failure naming the call (see
/// [`interrupted_or`]).
fn op_err(ctx: &RunContext, call: &str, e: io::Error) -> BenchError {
    if e.kind() == io::ErrorKind::TimedOut {
        BenchError::timeout(format!("{call}: {e}"))
    } else {
        interrupted_or(ctx, os_err(call, e))
    }
}

/// A failed operation may be the effect of Ctrl-C: the terminal's SIGINT also reaches our
/// children, which then do not exit with 0, and the cancel flag is set by another thread a moment
/// later. So on this (error-only) path wait up to 50 ms for the flag, and report the interruption
/// rather than the failure it caused.
fn interrupted_or(ctx: &RunContext, e: BenchError) -> BenchError {
    for _ in 0..5 {
        if let Err(c) = ctx.check()
            && c.kind == ErrorKind::Interrupted
        {
            return c;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    e
}

/// The platform's tiny program (exits 0 at once), checked to exist: Failed naming the path if not.
fn tiny_program() -> Result<&'static Path, BenchError> {
    let p = platform::tiny_program().map_err(|e| os_err("choose tiny program", e))?;
    if !p.is_file() {
        return Err(BenchError::failed(format!(
            "{} not found (it is the tiny program this benchmark starts)",
            p.display()
        )));
    }
    Ok(p)
}

/// Run `f` on a fresh thread pinned to `cpu` (so the caller's own affinity never changes), or on
/// the calling thread when `cpu` is None. The thread is joined before this returns.
fn on_cpu<T: Send>(
    cpu: Option<usize>,
    f: impl FnOnce() -> Result<T, BenchError> + Send,
) -> Result<T, BenchError> {
    let Some(cpu) = cpu else {
        return f();
    };
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("osgauge-pinned".into())
            .spawn_scoped(s, move || {
                platform::pin_current_thread(cpu).map_err(|e| os_err("pin measuring thread", e))?;
                f()
            })
            .map_err(|e| os_err("spawn measuring thread", e))?;
        h.join()
            .unwrap_or_else(|_| Err(BenchError::failed("measuring thread panicked")))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn op_errors_are_classified() {
        let timing = crate::bench::testutil::timing();
        let run = |cancelled: bool, e: io::Error| {
            let cancel = AtomicBool::new(cancelled);
            let deadline = Instant::now() + Duration::from_secs(10);
            let ctx = RunContext::new(
                0,
                false,
                Duration::from_millis(20),
                deadline,
                &timing,
                &cancel,
            );
            op_err(&ctx, "waitpid", e)
        };
        let e = run(false, io::Error::other("child 1 killed by signal 2"));
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Failed, "waitpid: child 1 killed by signal 2")
        );
        // Ctrl-C also kills the children: report the interruption, not the failure.
        let e = run(true, io::Error::other("child 1 killed by signal 2"));
        assert_eq!(e.kind, ErrorKind::Interrupted);
        let e = run(false, io::Error::new(io::ErrorKind::TimedOut, "no reply"));
        assert_eq!(e.kind, ErrorKind::Timeout);
        let e = run(false, platform::unsupported("no such thing"));
        assert_eq!(e.kind, ErrorKind::Unsupported);
    }

    #[test]
    fn suite_ids_are_as_documented() {
        let ids: Vec<String> = benchmarks().iter().map(|b| b.info().id.clone()).collect();
        assert_eq!(
            ids,
            [
                "proc/thread_create",
                "proc/fork_exit",
                "proc/fork_exec",
                "proc/posix_spawn",
                "proc/spawn",
                "proc/ctx_switch_process_pinned",
                "proc/ctx_switch_process_unpinned",
                "proc/ctx_switch_thread_pinned",
                "proc/ctx_switch_thread_unpinned",
            ]
        );
    }

    #[test]
    #[cfg_attr(target_os = "macos", ignore = "macOS has no thread affinity mask")]
    fn on_cpu_leaves_the_callers_affinity_alone() {
        let before = platform::current_thread_affinity().unwrap();
        let cpu = platform::allowed_cpus().unwrap()[0];
        let r = on_cpu(Some(cpu), || {
            Ok(platform::current_thread_affinity().unwrap())
        });
        match r {
            Ok(inside) => assert_eq!(inside, vec![cpu]),
            Err(e) => assert_eq!(e.kind, ErrorKind::Unsupported, "{e}"),
        }
        assert_eq!(platform::current_thread_affinity().unwrap(), before);
    }

    /// Every benchmark once at 300 ms, serially, printing per-run medians. Run in release mode:
    /// `cargo test --release --lib bench::proc::tests::measure_all -- --ignored --nocapture
    /// --test-threads=1`. `OSGAUGE_PROC_ONLY=<substring>` runs only the matching ids.
    #[test]
    #[ignore]
    fn measure_all() {
        let only = std::env::var("OSGAUGE_PROC_ONLY").unwrap_or_default();
        for b in benchmarks() {
            let id = b.info().id.clone();
            if !id.contains(&only) {
                continue;
            }
            let r = crate::bench::testutil::with_ctx(
                Duration::from_millis(300),
                Duration::from_secs(30),
                |ctx| b.run(ctx),
            );
            match r {
                Ok(out) => {
                    let line: Vec<String> = out
                        .samples
                        .iter()
                        .map(|(name, s)| {
                            format!("{name} {:.1} ns (n={})", crate::stats::median(s), s.len())
                        })
                        .collect();
                    println!("{id}: {}  facts {:?}", line.join(", "), out.facts);
                    for w in out.warnings {
                        println!("  warning: {w}");
                    }
                }
                Err(e) => println!("{id}: {e}"),
            }
        }
    }
}
