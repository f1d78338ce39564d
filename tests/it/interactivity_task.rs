//! The interactivity task side end to end: option bounds (exit 2, one line), the calibration
//! cache's sanity check, the duration a cell records, and a prompt stop in calibration. Short
//! runs only; behaviour and invariants, never speed.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

fn osgauge(dir: &Path) -> Command {
    let mut c = common::osgauge();
    // Never the user's calibration cache or result store.
    c.env("OSGAUGE_CACHE_DIR", dir);
    c.env("OSGAUGE_STORE", dir.join("results.sqlite"));
    c
}

fn usage_error(args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = osgauge(dir.path())
        .arg("interactivity")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    // Refused before anything ran: nothing measured, nothing stored.
    assert!(out.stdout.is_empty(), "{args:?}");
    assert!(!dir.path().join("results.sqlite").exists(), "{args:?}");
}

fn absurd_interactivity_options_are_refused_when_parsed() {
    // --duration is a measuring time like --run-time: the same 1ms..60m range.
    usage_error(&["--duration", "61m"], "1ms to 60m");
    // One period per nanosecond would push a frame per elapsed period (~800 MB/s before).
    usage_error(
        &["--task", "custom", "--custom-interval", "1ns"],
        "between 50µs and 10s",
    );
    usage_error(
        &["--task", "custom", "--custom-interval", "11s"],
        "between 50µs and 10s",
    );
    // 2000 Hz for 10 minutes: 1.2 M periods in a run, more than a run may keep. (--duration is
    // a cell's total, split into its runs; --run-time is one run's.)
    usage_error(
        &["--task", "video", "--video-hz", "2000", "--run-time", "10m"],
        "more than the 1000000 a run may keep",
    );
    usage_error(&["--video-hz", "0"], "between 1 and 2000 Hz");
    usage_error(&["--custom-cpu", "0"], "(0, 100]");
    usage_error(&["--custom-cpu", "101"], "(0, 100]");
    usage_error(&["--load", "write", "--io-rate", "0"], "MB/s");
    usage_error(&["--load", "write", "--io-rate", "inf"], "MB/s");
    usage_error(&["--slice", "1ns"], "between 100µs and 100ms");
    #[cfg(target_os = "linux")]
    usage_error(
        &["--cpus", "4095"],
        "CPU 4095 not available: this process may use CPUs",
    );
}
crate::register!(absurd_interactivity_options_are_refused_when_parsed);

fn bench(v: &Value) -> &Value {
    &v["benchmarks"][0]
}

fn run_audio(dir: &Path, json: &Path) -> (Value, Duration) {
    let t = Instant::now();
    let out = osgauge(dir)
        .args([
            "interactivity",
            "--task",
            "audio",
            "--load",
            "none",
            "--runs",
            "1",
            "--duration",
            "300ms",
            "--timeout",
            "30s",
            "--quiet",
        ])
        .arg("--export-json")
        .arg(json)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = common::read_json(json);
    (v, t.elapsed())
}

fn a_poisoned_calibration_cache_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cache = dir.path().join("interactivity-calibration.json");
    // A first run writes the cache (a noisy calibration is used but not cached: try again).
    for _ in 0..3 {
        if cache.exists() {
            break;
        }
        run_audio(dir.path(), &json);
    }
    if !cache.exists() {
        eprintln!("skipped: the machine is too busy for a calibration to be cached");
        return;
    }
    // 10^12 loops per µs once made a 1 s cell run for 11 minutes at 100 % CPU.
    let mut c: Value = common::read_json(&cache);
    c["loops_per_us"] = serde_json::json!(1e12);
    std::fs::write(&cache, c.to_string()).unwrap();
    let (v, took) = run_audio(dir.path(), &json);
    let b = bench(&v);
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert_eq!(b["measured"]["work_calibration_cached"], false);
    let lpu = b["measured"]["work_loops_per_us"].as_f64().unwrap();
    assert!(lpu > 0.0 && lpu < 1e6, "{lpu}");
    let w = b["warnings"].to_string();
    assert!(w.contains("rejected and measured again"), "{w}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}
crate::register!(a_poisoned_calibration_cache_is_rejected.serial(crate::harness::group::TIMING));

fn a_cell_records_its_duration_and_how_desired_cpu_was_measured() {
    // Under `micro`/`run` the duration follows the run time (5 × 100 ms here).
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    osgauge(dir.path())
        .args([
            "micro",
            "interactivity/audio/none",
            "--runs",
            "1",
            "--run-time",
            "100ms",
            "--quiet",
        ])
        .arg("--export-json")
        .arg(&json)
        .assert()
        .code(predicates::ord::lt(2));
    let v: Value = common::read_json(&json);
    let b = bench(&v);
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert_eq!(b["params"]["duration_s"].as_f64(), Some(0.5));
    let from = b["params"]["desired_cpu_from"].as_str().unwrap();
    assert!(
        from.starts_with("thread CPU clock") || from.starts_with("work done by the deadline"),
        "{from}"
    );
}
crate::register!(a_cell_records_its_duration_and_how_desired_cpu_was_measured);

/// Whether process `pid` has a thread named `name` (Linux: /proc/<pid>/task/*/comm).
#[cfg(target_os = "linux")]
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
        })
        .unwrap_or(false)
}

#[cfg(target_os = "linux")]
fn a_first_sigint_during_calibration_stops_within_a_second() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = common::osgauge_std()
        .args([
            "interactivity",
            "--task",
            "audio",
            "--load",
            "none",
            "--recalibrate",
            "--runs",
            "1",
            "--duration",
            "10s",
            "--quiet",
        ])
        .env("OSGAUGE_CACHE_DIR", dir.path())
        .env("OSGAUGE_STORE", dir.path().join("results.sqlite"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait for the calibration thread (it lives ≈ 0.3 s or more), then interrupt it.
    let t = Instant::now();
    while !has_thread(child.id(), "osgauge-calib") {
        if t.elapsed() > Duration::from_secs(20) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            osgauge::testing::not_run(
                "a_first_sigint_during_calibration_stops_within_a_second",
                "never saw the calibration thread (it ran too fast to catch)",
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let t = Instant::now();
    let window = osgauge::testing::BusyWindow::start();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("still running 15 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Within a second (the bound), with the interrupted run stored before exit — a
    // timing assertion, so only on a machine that other work left alone (15 s always holds).
    let took = t.elapsed();
    if !osgauge::testing::skip_timing(
        window.busy(),
        &format!("stop within 1 s of SIGINT ({took:?})"),
    ) {
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    assert_eq!(status.code(), Some(130));
}
#[cfg(target_os = "linux")]
crate::register!(
    a_first_sigint_during_calibration_stops_within_a_second.serial(crate::harness::group::TIMING)
);

/// A task lighter than its name is marked: with a calibration cache that makes the video task's
/// work loop 0.45 of the work (what a core running faster than at calibration does; within the
/// cache's 2× quick check, so it is normally used), the cell's task CPU is about 18 % against its
/// 40 % target while it got all the CPU it asked for — warned and recorded.
fn a_task_lighter_than_its_name_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let run = |json: &Path| {
        osgauge(dir.path())
            .args(["interactivity", "--task", "video", "--load", "none"])
            .args([
                "--runs",
                "2",
                "--warmup",
                "0",
                "--duration",
                "1s",
                "--quiet",
            ])
            .arg("--export-json")
            .arg(json)
            .output()
            .unwrap()
    };
    let first = dir.path().join("a.json");
    assert!(run(&first).status.success());
    let cal = dir.path().join("interactivity-calibration.json");
    // A calibration measured on a busy machine is not cached (its spread is too wide).
    let Ok(text) = std::fs::read_to_string(&cal) else {
        osgauge::testing::not_run(
            "a_task_lighter_than_its_name_is_marked",
            "the first run cached no work calibration (a busy machine: its spread was too wide)",
        );
        return;
    };
    let mut c: serde_json::Value = serde_json::from_str(&text).unwrap();
    let loops = c["loops_per_us"].as_f64().unwrap();
    c["loops_per_us"] = serde_json::json!(loops * 0.45);
    std::fs::write(&cal, c.to_string()).unwrap();
    let window = osgauge::testing::BusyWindow::start();
    let second = dir.path().join("b.json");
    let out = run(&second);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = common::read_json(&second);
    let b = &v["benchmarks"][0];
    if b["measured"]["work_calibration_cached"] != true {
        osgauge::testing::not_run(
            "a_task_lighter_than_its_name_is_marked",
            "the shortened cached calibration was rejected by its quick check and measured again",
        );
        return;
    }
    if osgauge::testing::skip_timing(window.busy(), "a shortened work loop is marked lighter") {
        return;
    }
    // The shortened loop (45 % of the calibration) is lighter only against the speed the
    // machine runs at now: the quick check measured it as the run began (it reads low: 86.6
    // loops/µs on a quiet machine against 118 calibrated, so the work share it gives is an upper
    // bound). A host that slowed by as much as the loop was shortened leaves the task on target
    // (CI beside another test run, at 55 %: 68.4 loops/µs now against 64.9 cached, 95 % of its
    // work). Judged only when the task does at most 70 % of its work, clear of the 75 % the
    // off-target rule allows.
    let cached = b["measured"]["work_loops_per_us"].as_f64().unwrap();
    let now = b["measured"]["work_calibration_quick_check"]
        .as_f64()
        .unwrap();
    if cached / now > 0.7 {
        osgauge::testing::not_run(
            "a_task_lighter_than_its_name_is_marked",
            &format!(
                "the machine ran at {now:.1} loops/µs as the run began, so the shortened \
                 calibration ({cached:.1}) left the task {:.0} % of its work: not lighter by \
                 enough to judge",
                100.0 * cached / now
            ),
        );
        return;
    }
    assert_eq!(
        b["measured"]["task_cpu_off_target"], true,
        "{}",
        b["measured"]
    );
    assert!(
        b["warnings"]
            .to_string()
            .contains("lighter task than 'video'"),
        "{}",
        b["warnings"]
    );
}
crate::register!(a_task_lighter_than_its_name_is_marked.serial(crate::harness::group::TIMING));
