//! Timing relations between real measurements, judged only in a quiet window. They were runtime
//! skips inside lib unit tests (reported as passed there when the machine was busy); the lib
//! tests keep the invariants that always hold (every metric present, positive, finite), and the
//! relations live here, where a busy window is reported as ignored with its reason.
//!
//! Each test runs `osgauge micro … --runs 1 --warmup 0 --no-store --export-json F` in its own
//! sandbox, inside one `BusyWindow` (the osgauge process and the children it waits for are the
//! test's own work), and reads the figures from F. No test checks an absolute speed, except the
//! frame pacer holding its nominal rate, which is what its figure means.

use crate::common;
use osgauge::testing::{BusyWindow, not_run, skip_timing};

/// One measured run (no warm-up) of each benchmark in `ids`, `run_time` long, read back from the
/// exported record.
fn micro_once(ids: &[&str], run_time: &str) -> serde_json::Value {
    let sb = common::Sandbox::new();
    let json = sb.path().join("run.json");
    sb.osgauge()
        .arg("micro")
        .args(ids)
        .args(["--runs", "1", "--warmup", "0", "--run-time", run_time])
        .args(["--no-store", "--export-json"])
        .arg(&json)
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    common::read_json(&json)
}

/// The median of `metric` in the only run of benchmark `id`; Err(why) when it was not measured.
fn run_median(rec: &serde_json::Value, id: &str, metric: &str) -> Result<f64, String> {
    let b = common::json_bench(rec, id);
    if !b["error"].is_null() {
        return Err(format!("{id}: {}", b["error"]));
    }
    let m = common::json_metric(b, metric);
    match m["runs"].as_array().map(|r| r.as_slice()) {
        Some([run]) => {
            let v = run["summary"]["p50"].as_f64();
            v.ok_or_else(|| format!("{id}/{metric}: no median in {run}"))
        }
        _ => Err(format!(
            "{id}/{metric}: not measured: {}",
            m["not_measured"].as_str().unwrap_or("no reason given")
        )),
    }
}

fn is_linux() -> bool {
    osgauge::platform::OS_NAME == "Linux"
}

/// Where a relation between two timings of one process is not judged at all: under Wine, pipe
/// I/O goes through wineserver and its cost swings widely.
fn compatibility_layer() -> Option<String> {
    osgauge::platform::compatibility_layer().map(|l| {
        format!("running under {l}: pipe I/O goes through its server and its cost swings widely")
    })
}

/// A round trip (two writes, two reads, two switches) costs more than the same pipe traffic
/// without a switch, for every peer and pinning.
fn ctx_switch_round_trip_costs_more_than_the_pipe_pair() {
    if let Some(why) = compatibility_layer() {
        not_run("ctx_switch_round_trip_costs_more_than_the_pipe_pair", &why);
        return;
    }
    let ids = [
        "proc/ctx_switch_process_pinned",
        "proc/ctx_switch_process_unpinned",
        "proc/ctx_switch_thread_pinned",
        "proc/ctx_switch_thread_unpinned",
    ];
    let window = BusyWindow::start();
    let rec = micro_once(&ids, "100ms");
    let busy = window.busy();
    let mut pairs = Vec::new();
    for id in ids {
        match (
            run_median(&rec, id, "round_trip"),
            run_median(&rec, id, "pipe_pair"),
        ) {
            (Ok(rt), Ok(pair)) => pairs.push((id, rt, pair)),
            // Unsupported variants (no fork on Windows) are checked by the lib test; on Linux
            // every variant measures.
            (rt, pair) => assert!(!is_linux(), "{rt:?} {pair:?}"),
        }
    }
    assert!(!pairs.is_empty(), "no variant measured");
    if skip_timing(busy, &format!("{} round trip > pipe pair", pairs.len())) {
        return;
    }
    for (id, rt, pair) in pairs {
        assert!(rt > pair, "{id}: round trip {rt} ns vs pipe pair {pair} ns");
    }
}
crate::register!(
    ctx_switch_round_trip_costs_more_than_the_pipe_pair.serial(crate::harness::group::TIMING)
);

/// An operation that contains another costs more than it (a benchmark timing the wrong thing,
/// or a broken overhead subtraction, breaks an order).
fn containing_operations_cost_more_than_what_they_contain() {
    let wanted = osgauge::testing::CONTAINMENT;
    // (cheaper, dearer, why): the dearer operation contains the cheaper one.
    let order = [
        (
            "cpu/null_syscall",
            "proc/thread_create",
            "clone + exit + join are several system calls",
        ),
        (
            "proc/thread_create",
            "proc/fork_exit",
            "a process copies the address space a thread shares",
        ),
        (
            "proc/fork_exit",
            "proc/fork_exec",
            "fork+exec is fork plus loading a program",
        ),
        (
            "cpu/null_syscall",
            "proc/posix_spawn",
            "posix_spawn creates a process and loads /bin/true",
        ),
        (
            "cpu/null_syscall",
            "proc/spawn",
            "spawning a program is many system calls",
        ),
        (
            "cpu/null_syscall",
            "proc/ctx_switch_thread_unpinned",
            "a round trip is two writes, two reads and two switches",
        ),
        (
            "cpu/null_syscall",
            "proc/ctx_switch_process_unpinned",
            "a round trip is two writes, two reads and two switches",
        ),
    ];
    let ids: Vec<&str> = wanted.iter().map(|w| w.0).collect();
    let window = BusyWindow::start();
    let rec = micro_once(&ids, "100ms");
    let busy = window.busy();
    let mut m = std::collections::BTreeMap::new();
    for (id, metric) in wanted {
        match run_median(&rec, id, metric) {
            Ok(v) => {
                assert!(v > 0.0, "{id}: median {v} ns");
                m.insert(id, v);
            }
            // Which may be missing where is the lib test's invariant; on Linux all measure.
            Err(why) => assert!(!is_linux(), "{why}"),
        }
    }
    eprintln!("medians (ns): {m:?}");
    let pairs: Vec<_> = order
        .iter()
        .filter_map(|&(cheap, dear, why)| Some((cheap, *m.get(cheap)?, dear, *m.get(dear)?, why)))
        .collect();
    assert!(!pairs.is_empty(), "no pair measured: {m:?}");
    let what = format!("{} cost orders such as fork_exit < fork_exec", pairs.len());
    if skip_timing(busy, &what) {
        return;
    }
    for (cheap, a, dear, b, why) in pairs {
        assert!(a < b, "{cheap} {a:.0} ns ≥ {dear} {b:.0} ns, yet {why}");
    }
}
crate::register!(
    containing_operations_cost_more_than_what_they_contain.serial(crate::harness::group::TIMING)
);

/// The 60 fps pacer delivers close to 60 frames a second in a quiet window (within 10 %).
fn frame_pacer_holds_its_nominal_rate() {
    let id = "frame/pacing_60fps_1mp";
    let window = BusyWindow::start();
    let rec = micro_once(&[id], "100ms");
    let busy = window.busy();
    let fps = run_median(&rec, id, "effective_fps").unwrap();
    assert!(fps > 0.0, "effective fps {fps}");
    if skip_timing(busy, "effective fps near 60") {
        return;
    }
    assert!((fps - 60.0).abs() < 6.0, "effective fps {fps}");
}
crate::register!(frame_pacer_holds_its_nominal_rate.serial(crate::harness::group::TIMING));

/// A clean calibration is stored in the given cache file (directories created) under its key
/// and read back from it; another key is not taken from it. A noisy calibration is not cached,
/// and a busy machine can make the cached value fail its quick check: then the round trip is not
/// judged, and the test is ignored with that reason.
fn work_calibration_cache_round_trip_uses_the_file_and_key() {
    use osgauge::workload::work::calibrate;
    let name = "work_calibration_cache_round_trip_uses_the_file_and_key";
    let dir = common::Sandbox::new();
    let file = dir.path().join("sub").join("cal.json");
    let a = calibrate(true, Some(&file), "key A", &|| false).unwrap();
    assert!(!a.cached);
    if let Some(w) = &a.warning {
        assert!(!file.exists(), "a noisy calibration was cached");
        not_run(
            name,
            &format!("the calibration was noisy here, so not cached: {w}"),
        );
        return;
    }
    assert!(file.exists());
    let b = calibrate(false, Some(&file), "key A", &|| false).unwrap();
    if b.cached {
        assert_eq!(a.loops_per_us, b.loops_per_us);
        assert!(b.quick_check.unwrap() > 0.0);
    } else {
        // Not read back for any other reason than its quick check (that would be a bug).
        let w = b.warning.as_deref().unwrap_or("no warning given");
        assert!(w.contains("is off by more than"), "{w}");
        not_run(
            name,
            &format!("the cached value failed its quick check here: {w}"),
        );
    }
    // Another placement (CPUs, policy) is another key: not taken from the cache.
    let c = calibrate(false, Some(&file), "key B", &|| false).unwrap();
    assert!(!c.cached);
}
crate::register!(
    work_calibration_cache_round_trip_uses_the_file_and_key.serial(crate::harness::group::TIMING)
);
