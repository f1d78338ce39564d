//! Body of a study child (`osgauge __policy_child <json>`): apply the policy and read it back,
//! wait for the release (end of standard input), do the work, stamp start and finish, read its own
//! context-switch counters, and write one short JSON line (shorter than PIPE_BUF, so lines of many children never interleave).

use std::io::{Read, Write};
use std::path::PathBuf;

use serde::Deserialize;

use super::work::{self, WorkSize};
use crate::platform::clock::now_ns;
use crate::platform::process as pp;
use crate::platform::sched::{self, SchedRequest};

#[derive(Deserialize)]
struct Spec {
    work: WorkSize,
    dir: PathBuf,
    policy: SchedRequest,
    parent: u32,
}

fn say(v: serde_json::Value) {
    let line = format!("{v}\n");
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

fn fail(msg: String) -> i32 {
    say(serde_json::json!({ "pid": std::process::id(), "error": msg }));
    3
}

pub fn child_main(spec_json: &str) -> i32 {
    let spec: Spec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => return fail(format!("bad child spec: {e}")),
    };
    // Linux: SIGTERM when the parent dies (elsewhere the closed pipe ends the wait).
    let _ = crate::platform::terminate_with_parent(spec.parent);
    let applied = match sched::apply_process(&spec.policy) {
        Ok(a) => a,
        Err(e) => {
            return fail(format!(
                "setting policy {}: {e}",
                spec.policy.effective_policy().name()
            ));
        }
    };
    let dir = spec.dir.join(std::process::id().to_string());
    if spec.work.io_units > 0
        && let Err(e) = std::fs::create_dir(&dir)
    {
        return fail(format!("creating {}: {e}", dir.display()));
    }
    say(serde_json::json!({ "pid": std::process::id(), "ready": true }));
    // Wait for the release: the parent closes the pipe (or dies).
    let mut sink = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut sink);
    if !crate::platform::process_alive(spec.parent) {
        let _ = std::fs::remove_dir_all(&dir);
        return 4;
    }
    let before = pp::own_usage().ok();
    let before_sw = pp::own_switches();
    let start = now_ns();
    let r = work::run(&spec.work, &dir);
    let end = now_ns();
    let _ = std::fs::remove_dir(&dir);
    if let Err(e) = r {
        return fail(format!("{} work: {e}", spec.work.kind.name()));
    }
    // The last thing before the result line: the own counters, for the parent to set beside
    // the reaped ones (the difference is the exit path's few switches).
    let switches = pp::own_switches();
    say(serde_json::json!({
        "pid": std::process::id(),
        "start": start,
        "end": end,
        "applied": applied,
        "before": before.map(|u| serde_json::json!({
            "user": u.user_ns, "sys": u.sys_ns, "vol": u.voluntary, "invol": u.involuntary,
            "csw": before_sw.total,
        })),
        "switches": switches,
    }));
    0
}
