//! The scheduling-policy study end to end (tiny work sizes, 2–10 processes): the per-process
//! accounting adds up, policies read back as requested (where this user may set them), Ctrl-C and
//! SIGTERM mid-study leave no child and no temp file, the process-limit check refuses clearly.

use crate::common;
use common::json_metric as metric;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn osgauge(dir: &Path, args: &[&str]) -> Output {
    common::osgauge_std()
        .args(args)
        .env("OSGAUGE_STORE", dir.join("store.sqlite"))
        .env("OSGAUGE_CACHE_DIR", dir)
        // The study's temp folders go here, so the test can see they are gone.
        .env("TMPDIR", dir.join("tmp"))
        .output()
        .unwrap()
}

fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("tmp")).unwrap();
    d
}

/// No `osgauge-policy-*` folder is left in the test's temp dir.
fn no_study_folders(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir.join("tmp"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("osgauge-policy-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn run_json(dir: &Path, extra: &[&str]) -> (Output, Value) {
    let json = dir.join("r.json");
    let mut args = vec![
        "policy",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--work-time",
        "2ms",
        "--quiet",
        "--export-json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = osgauge(dir, &args);
    let v = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out, v)
}

fn per_run(b: &Value, name: &str, field: &str) -> Vec<f64> {
    metric(b, name)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"][field].as_f64().unwrap())
        .collect()
}

fn every_work_kind_measures_and_adds_up() {
    let d = setup();
    let (out, v) = run_json(
        d.path(),
        &[
            "--work",
            "cpu,io,mixed,sleepy",
            "--policy",
            "other",
            "--procs",
            "4",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let benches = v["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 4);
    for b in benches {
        assert!(b["error"].is_null(), "{}: {}", b["id"], b["error"]);
        assert!(b["id"].as_str().unwrap().ends_with("/other/4"));
        // Every process's turnaround is a sample; the makespan is the largest of them.
        let counts = per_run(b, "turnaround", "count");
        assert_eq!(counts, vec![4.0, 4.0], "{}", b["id"]);
        let max_t = per_run(b, "turnaround", "max");
        let makespan = per_run(b, "makespan", "p50");
        for (m, t) in makespan.iter().zip(&max_t) {
            assert_eq!(m, t, "{}: makespan is the last finish", b["id"]);
        }
        // User and system time: a run's value is at least one step of the user/system split
        // (read back); a run below it is not measured, and says so. Fairness is Jain's index in
        // (0, 100] %.
        let step = b["run_facts"][0]["user_sys_resolution_ns"]
            .as_f64()
            .unwrap();
        assert!(step > 0.0, "{}", b["id"]);
        for name in ["user", "sys"] {
            let vals = per_run(b, name, "p50");
            assert!(
                vals.iter().all(|&v| v >= step),
                "{} {name}: {vals:?} < {step}",
                b["id"]
            );
            if vals.len() < 2 {
                let why = metric(b, name)["not_measured"].as_str().unwrap_or_default();
                assert!(
                    why.contains("below the counters' resolution"),
                    "{} {name}: {} of 2 runs and no reason: {why:?}",
                    b["id"],
                    vals.len()
                );
            }
        }
        for f in per_run(b, "fairness", "p50") {
            assert!(f > 0.0 && f <= 100.0 + 1e-9, "{}: fairness {f}", b["id"]);
        }
        let facts = &b["run_facts"][0];
        assert_eq!(facts["policy_applied"], "other");
        assert!(facts["work_alone_ns"].as_u64().unwrap() > 0);
        if cfg!(target_os = "linux") {
            assert!(per_run(b, "voluntary", "p50").iter().all(|&x| x >= 0.0));
        }
    }
    // io work waits on the file system: it switches voluntarily more than pure cpu work, in
    // every run. Switch counts are exact counters (getrusage), not tick-sampled like the
    // user/system split of a 2 ms job (which is often 0 for one side), so no margin is needed;
    // here io's median process made ~43 voluntary switches per run against cpu's 4.
    let id = |s: &str| benches.iter().find(|b| b["id"] == s).unwrap();
    if cfg!(target_os = "linux") {
        let io = per_run(id("policy/io/other/4"), "voluntary", "p50");
        let cpu = per_run(id("policy/cpu/other/4"), "voluntary", "p50");
        assert_eq!(io.len(), cpu.len());
        assert!(
            io.iter().zip(&cpu).all(|(i, c)| i > c),
            "voluntary switches per process, median per run: io {io:?} vs cpu {cpu:?}"
        );
    }
    no_study_folders(d.path());
}
crate::register!(every_work_kind_measures_and_adds_up);

#[cfg(target_os = "linux")]
fn policies_read_back_as_requested() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        osgauge::testing::not_run(
            "policies_read_back_as_requested",
            "setting fifo/rr/nice<0 needs root (CAP_SYS_NICE)",
        );
        return;
    }
    let d = setup();
    let (out, v) = run_json(
        d.path(),
        &[
            "--work",
            "cpu",
            "--policy",
            "batch,idle,fifo,rr",
            "--procs",
            "2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for b in v["benchmarks"].as_array().unwrap() {
        let pol = b["id"].as_str().unwrap().split('/').nth(2).unwrap();
        if !b["error"].is_null() && b["error"].to_string().contains("RT throttling") {
            osgauge::testing::not_run(
                "policies_read_back_as_requested",
                "RT throttling is off here",
            );
            continue;
        }
        assert!(b["error"].is_null(), "{}: {}", b["id"], b["error"]);
        let f = &b["run_facts"][0];
        assert_eq!(f["policy_applied"], pol, "{}", b["id"]);
        match pol {
            "fifo" => assert_eq!(f["priority_applied"], 50),
            "rr" => assert!(f["rr_interval_ns"].as_u64().unwrap() > 0),
            _ => {}
        }
    }
    let (out, v) = run_json(
        d.path(),
        &[
            "--work", "cpu", "--policy", "other", "--nice", "-5,10", "--procs", "2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<&str> = v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec!["policy/cpu/other-nice-5/2", "policy/cpu/other-nice10/2"]
    );
    for (b, n) in v["benchmarks"].as_array().unwrap().iter().zip([-5, 10]) {
        assert_eq!(b["run_facts"][0]["nice_applied"], n);
    }
    no_study_folders(d.path());
}
#[cfg(target_os = "linux")]
crate::register!(
    policies_read_back_as_requested
        .serial(crate::harness::group::RT)
        .root()
);

#[cfg(unix)]
fn too_many_processes_for_the_limit_is_a_clear_error() {
    use std::os::unix::process::CommandExt;
    let d = setup();
    let mut cmd = common::osgauge_std();
    cmd.args([
        "policy", "--procs", "1000", "--work", "cpu", "--policy", "other", "--runs", "1",
    ])
    .env("OSGAUGE_STORE", d.path().join("store.sqlite"))
    .env("OSGAUGE_CACHE_DIR", d.path());
    // SAFETY: only setrlimit (async-signal-safe) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let r = libc::rlimit {
                rlim_cur: 300,
                rlim_max: 300,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ulimit -u = 300"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}
#[cfg(unix)]
crate::register!(too_many_processes_for_the_limit_is_a_clear_error);

/// Processes whose command line names the study child and `marker` (the test's temp dir).
#[cfg(target_os = "linux")]
fn study_children(marker: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let c = String::from_utf8_lossy(&c);
            if c.contains("__policy_child") && c.contains(marker) {
                v.push(pid);
            }
        }
    }
    v
}

#[cfg(target_os = "linux")]
fn a_signal_mid_study_leaves_no_child_and_no_file() {
    use std::time::{Duration, Instant};
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let d = setup();
        let marker = d.path().join("tmp").to_string_lossy().to_string();
        let child = common::osgauge_std()
            .args([
                "policy",
                "--work",
                "io",
                "--policy",
                "other",
                "--procs",
                "10",
                "--runs",
                "50",
                "--work-time",
                "200ms",
                "--quiet",
            ])
            .env("OSGAUGE_STORE", d.path().join("store.sqlite"))
            .env("OSGAUGE_CACHE_DIR", d.path())
            .env("TMPDIR", d.path().join("tmp"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until its children are running.
        let t0 = Instant::now();
        while study_children(&marker).len() < 10 {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the study's children never appeared"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let left = study_children(&marker);
        assert!(
            left.is_empty(),
            "children left after signal {sig}: {left:?}"
        );
        no_study_folders(d.path());
    }
}
#[cfg(target_os = "linux")]
crate::register!(a_signal_mid_study_leaves_no_child_and_no_file);
