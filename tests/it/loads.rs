//! Interactivity background loads end to end: a load that fails fails its cell, bad load options
//! are refused at parse time, the x load delivers its target, and signals (SIGHUP, a stopped load
//! child) leave no process, no file and no hang.

use crate::common;

use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::process::Stdio;
#[cfg(target_os = "linux")]
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

fn osgauge(cache: &Path) -> Command {
    let mut c = common::osgauge();
    c.env("OSGAUGE_CACHE_DIR", cache);
    c.env("OSGAUGE_STORE", cache.join("results.sqlite"));
    c
}

const SHORT: [&str; 7] = [
    "--runs",
    "1",
    "--warmup",
    "0",
    "--quiet",
    "--duration",
    "300ms",
];

fn record(path: &Path) -> Value {
    common::read_json(path)
}

/// Every file under `dir` (recursively).
#[cfg(target_os = "linux")]
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                v.extend(files_under(&p));
            } else {
                v.push(p);
            }
        }
    }
    v
}

/// The documented contract: load files live in `<cache dir>/loads/<pid>/`.
fn loads_base(cache: &Path) -> PathBuf {
    cache.join("loads")
}

fn a_missing_load_dir_is_refused_up_front_and_stale_load_folders_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    // What a killed osgauge (a pid that cannot be alive: above Linux's 2^22 limit) left behind.
    let stale = loads_base(dir.path()).join("4194399");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("osgauge-load-4194399-0-read.tmp"), b"x").unwrap();
    let json = dir.path().join("r.json");
    let missing = dir.path().join("missing");
    let out = osgauge(dir.path())
        .args(["interactivity", "--task", "audio", "--load", "write"])
        .args(SHORT)
        .arg("--load-dir")
        .arg(&missing)
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    // A bad --load-dir is bad input: exit 2 and one line before any cell runs (it used to be a
    // failed cell in a run that exited 0).
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--load-dir") && err.contains("no such directory"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!json.exists(), "a refused run wrote an export");
    assert!(!missing.exists(), "the load dir the user named was created");
    assert!(
        !stale.exists(),
        "the dead process's load folder is still there"
    );
}
crate::register!(a_missing_load_dir_is_refused_up_front_and_stale_load_folders_are_removed);

/// A load that fails while the cell runs (its file system is full) fails its cell: the error is
/// recorded, nothing is measured under a load that did not run, and the exit code stays 0 (as
/// for any failed benchmark).
#[cfg(target_os = "linux")]
fn a_load_that_fails_fails_its_cell() {
    let dir = tempfile::tempdir().unwrap();
    let Some((mnt, _fs)) =
        common::Tmpfs::mnt_in(dir.path(), "64k", "a_load_that_fails_fails_its_cell")
    else {
        return;
    };
    // Fill it, so the write load's first write fails.
    let _ = std::fs::write(mnt.join("fill"), vec![1u8; 1 << 20]);
    let json = dir.path().join("r.json");
    let out = osgauge(dir.path())
        .args(["interactivity", "--task", "audio", "--load", "write"])
        .args(SHORT)
        .arg("--load-dir")
        .arg(&mnt)
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = record(&json);
    let b = &v["benchmarks"][0];
    assert_eq!(b["error"]["kind"], "failed", "{}", b["error"]);
    for m in b["metrics"].as_array().unwrap() {
        assert!(
            m["runs"].as_array().is_none_or(|r| r.is_empty()),
            "{} has runs",
            m["name"]
        );
    }
}
#[cfg(target_os = "linux")]
crate::register!(a_load_that_fails_fails_its_cell);

fn bad_io_rates_and_a_read_load_in_memory_are_refused_at_parse_time() {
    let dir = tempfile::tempdir().unwrap();
    for rate in ["0", "-1", "inf", "NaN", "x"] {
        let out = osgauge(dir.path())
            .args(["interactivity", "--task", "audio", "--load", "write"])
            .args(SHORT)
            .arg(format!("--io-rate={rate}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--io-rate {rate}: {err}");
        assert!(err.contains("--io-rate"), "{err}");
    }
    let shm = Path::new("/dev/shm");
    let on_tmpfs = cfg!(target_os = "linux") && shm.is_dir();
    if !on_tmpfs {
        osgauge::testing::not_run("the tmpfs refusal", "no /dev/shm on this machine");
        return;
    }
    for load in ["read", "compile"] {
        let out = osgauge(dir.path())
            .args(["interactivity", "--task", "audio", "--load", load])
            .args(SHORT)
            .args(["--load-dir", "/dev/shm"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{load}: {err}");
        assert!(err.contains("tmpfs") && err.contains("storage"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
crate::register!(bad_io_rates_and_a_read_load_in_memory_are_refused_at_parse_time);

fn a_load_without_files_never_touches_the_users_load_dir() {
    // A burn load has no folder of its own: the --load-dir the user named (empty here) must be
    // left exactly as it was, for the next file load to use.
    let dir = tempfile::tempdir().unwrap();
    let user_dir = dir.path().join("mine");
    std::fs::create_dir(&user_dir).unwrap();
    let out = osgauge(dir.path())
        .args(["interactivity", "--task", "audio", "--load", "burn"])
        .args(SHORT)
        .arg("--load-dir")
        .arg(&user_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(user_dir.is_dir(), "the user's --load-dir was removed");
    assert_eq!(std::fs::read_dir(&user_dir).unwrap().count(), 0);
}
crate::register!(a_load_without_files_never_touches_the_users_load_dir);

fn the_x_load_records_and_delivers_its_target_in_a_1s_cell() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("x.json");
    // Other work on the machine over this test's own window (not a load average, which lags
    // by a minute): the x load's own CPU is this test's (its child's child, reaped).
    let window = osgauge::testing::BusyWindow::start();
    let out = osgauge(dir.path())
        .args([
            "interactivity",
            "--task",
            "audio",
            "--load",
            "x",
            "--duration",
            "1s",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--export-json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = record(&json);
    let b = &v["benchmarks"][0];
    assert!(b["error"].is_null(), "{}", b["error"]);
    let p = &b["measured"];
    assert_eq!(b["params"]["load_target_pct"], 50.0);
    let achieved = p["load_achieved_cpu_pct"]
        .as_f64()
        .unwrap_or_else(|| panic!("no achieved CPU in {p}"));
    // Recorded per thread too (ops = steps worked; a 1 s cell has 10 steps of 100 ms).
    let steps = p["load_achieved"]["x"]["ops"].as_u64().unwrap();
    assert!(steps >= 1, "{p}");
    let what = format!("the x load's 50 ± 10 % (achieved {achieved} % in {steps} step(s))");
    if !osgauge::testing::skip_timing(window.busy(), &what) {
        assert!((achieved - 50.0).abs() <= 10.0, "achieved {achieved} %");
        assert!(
            !b["warnings"].to_string().contains("against its target"),
            "{}",
            b["warnings"]
        );
    }
}
crate::register!(
    the_x_load_records_and_delivers_its_target_in_a_1s_cell.serial(crate::harness::group::TIMING)
);

/// Load children of `cache` (Linux /proc scan: their command line names the load folder).
#[cfg(target_os = "linux")]
fn load_children(cache: &Path) -> Vec<u32> {
    let needle = cache.to_string_lossy().to_string();
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let s = String::from_utf8_lossy(&c).replace('\0', " ");
            if s.contains(&needle)
                && s.contains("__load")
                && let Ok(pid) = e.file_name().to_string_lossy().parse()
            {
                v.push(pid);
            }
        }
    }
    v
}

/// osgauge in its own process group (so a signal can go to the group, as a terminal sends it).
#[cfg(target_os = "linux")]
fn start(cache: &Path, load: &str, extra: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    common::osgauge_std()
        .process_group(0)
        .env("OSGAUGE_CACHE_DIR", cache)
        .env("OSGAUGE_STORE", cache.join("results.sqlite"))
        .args(["interactivity", "--task", "audio", "--load", load])
        .args(["--runs", "1", "--warmup", "0", "--quiet", "--file-mb", "16"])
        .args(["--load-threads", "1"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[cfg(target_os = "linux")]
fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < Duration::from_secs(60), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
fn sighup_finishes_gracefully_with_129_and_leaves_no_load_file_or_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start(dir.path(), "compile", &["--duration", "20s"]);
    let folder = loads_base(dir.path()).join(child.id().to_string());
    wait_for("load files never appeared", || {
        files_under(&folder)
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "tmp"))
            .count()
            == 2
    });
    // To the whole group, as a closing terminal does: the load child ignores it and the parent
    // stops it and cleans up. SAFETY: plain kill(2) of our own child's process group.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGHUP) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(129));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // The parent stopped and reaped its load and removed the folder before exiting.
    assert!(!folder.exists(), "{:?}", files_under(&folder));
    assert!(load_children(dir.path()).is_empty());
}
#[cfg(target_os = "linux")]
crate::register!(
    sighup_finishes_gracefully_with_129_and_leaves_no_load_file_or_process
        .serial(crate::harness::group::TIMING)
);

#[cfg(target_os = "linux")]
fn a_stopped_load_child_does_not_hang_the_parent_past_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = start(
        dir.path(),
        "write",
        &[
            "--duration",
            "1s",
            "--timeout",
            "4s",
            "--export-json",
            json.to_str().unwrap(),
        ],
    );
    let folder = loads_base(dir.path()).join(child.id().to_string());
    let mut load = 0;
    wait_for("the load child never started", || {
        load = load_children(dir.path()).first().copied().unwrap_or(0);
        load != 0 && !files_under(&folder).is_empty()
    });
    let t = Instant::now();
    // SAFETY: plain kill(2) of our child's child.
    unsafe { libc::kill(load as i32, libc::SIGSTOP) };
    let status = child.wait().unwrap();
    // Bounded by the 4 s time bound (+ 2 s grace to stop a load, + slack for a busy machine).
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    assert_eq!(status.code(), Some(0));
    let v = record(&json);
    let e = &v["benchmarks"][0]["error"];
    assert!(e["message"].as_str().unwrap().contains("stopped"), "{e}");
    assert!(
        load_children(dir.path()).is_empty(),
        "the stopped child was not killed"
    );
    assert!(!folder.exists(), "{:?}", files_under(&folder));
}
#[cfg(target_os = "linux")]
crate::register!(
    a_stopped_load_child_does_not_hang_the_parent_past_the_deadline
        .serial(crate::harness::group::TIMING)
);
