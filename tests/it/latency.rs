//! The latency suite through the command line: `osgauge latency` and `osgauge noise` measure every
//! CPU and say what they applied; `--histogram` writes cyclictest's layout; `--attribute` names a
//! known hog and leaves tracefs as it found it, even after a SIGKILL.

use crate::common;

use std::time::{Duration, Instant};

use common::{json_bench, json_metric, osgauge, osgauge_std};
use serde_json::Value;

fn allowed_cpus() -> Vec<usize> {
    osgauge::platform::allowed_cpus().unwrap()
}

fn record(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn latency_measures_every_cpu_reads_its_placement_back_and_writes_cyclictests_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("h.txt");
    let out = osgauge()
        .args([
            "latency",
            "--duration",
            "400ms",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--interval",
            "500us",
            "--histogram-limit",
            "200",
            "--no-store",
            "--export-json",
            "-",
            "--histogram",
        ])
        .arg(&hist)
        .output()
        .unwrap();
    let v = record(&out);
    let b = json_bench(&v, "latency/wakeup");
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert_eq!(b["params"]["interval_ns"], 500_000);
    let cpus = allowed_cpus();
    for c in &cpus {
        let m = json_metric(b, &format!("cpu{c}"));
        assert_eq!(m["runs"].as_array().unwrap().len(), 2, "cpu{c}");
    }
    // Each run's threads, one per CPU, pinned where asked and with their policy read back.
    for f in b["run_facts"].as_array().unwrap() {
        let threads = f["threads"].as_array().unwrap();
        let pinned: Vec<u64> = threads.iter().map(|t| t["cpu"].as_u64().unwrap()).collect();
        assert_eq!(pinned, cpus.iter().map(|&c| c as u64).collect::<Vec<_>>());
        assert!(threads.iter().all(|t| t["sched"]["policy"].is_string()));
        if cfg!(target_os = "linux") {
            assert_eq!(f["timer_slack_applied_ns"], 1, "{f}");
        }
    }
    // The merged figure holds every CPU's wake-ups: its count is the sum of theirs, per run.
    let count = |m: &Value, r: usize| m["runs"][r]["summary"]["count"].as_u64().unwrap();
    for r in 0..2 {
        let per_cpu: u64 = cpus
            .iter()
            .map(|c| count(json_metric(b, &format!("cpu{c}")), r))
            .sum();
        assert_eq!(count(json_metric(b, "latency"), r), per_cpu);
    }
    // cyclictest's -h layout: a header, 200 one-µs buckets with a column per CPU, 5 summary lines.
    let h = std::fs::read_to_string(&hist).unwrap();
    let lines: Vec<&str> = h.lines().collect();
    assert_eq!(lines.len(), 1 + 200 + 5, "{h}");
    assert!(lines[1].starts_with("000000 "));
    assert_eq!(lines[1].split_whitespace().count(), 1 + cpus.len());
    assert!(lines[201].starts_with("# Total:"));
    let total: u64 = lines[201]
        .split_whitespace()
        .skip(2)
        .map(|x| x.parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total,
        count(json_metric(b, "latency"), 0) + count(json_metric(b, "latency"), 1)
    );
}

#[test]
fn noise_adds_up_per_cpu_and_bad_options_are_usage_errors() {
    let out = osgauge()
        .args([
            "noise",
            "--duration",
            "300ms",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-store",
            "--export-json",
            "-",
        ])
        .output()
        .unwrap();
    let v = record(&out);
    let b = json_bench(&v, "latency/noise");
    assert!(b["error"].is_null(), "{}", b["error"]);
    let p50 = |m: &str| -> Vec<f64> {
        json_metric(b, m)["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["summary"]["p50"].as_f64().unwrap())
            .collect()
    };
    for (n, a) in p50("noise_pct").iter().zip(p50("availability_pct")) {
        assert!((0.0..=100.0).contains(n), "{n}");
        assert!((n + a - 100.0).abs() < 1e-9);
    }
    for t in b["run_facts"][0]["threads"].as_array().unwrap() {
        let (read, thr) = (
            t["read_ns"].as_u64().unwrap(),
            t["threshold_ns"].as_u64().unwrap(),
        );
        assert!(thr >= 1000 && thr >= 5 * read, "{t}");
    }
    // A priority without a real-time policy, an unknown CPU: refused before anything runs.
    for args in [
        &["latency", "--priority", "50"][..],
        &["noise", "--cpus", "4095"][..],
        &["latency", "--interval", "10us"][..],
    ] {
        osgauge().args(args).arg("--no-store").assert().code(2);
    }
}

/// The tracing settings a session changes, as they are now (None without root/tracefs).
fn tracefs_settings() -> Option<Vec<(String, String)>> {
    let root = std::path::Path::new("/sys/kernel/tracing");
    if !root.join("trace").exists() {
        return None;
    }
    let mut v = Vec::new();
    for f in [
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "tracing_cpumask",
    ] {
        v.push((f.to_string(), std::fs::read_to_string(root.join(f)).ok()?));
    }
    for e in osgauge::platform::tracefs::EVENTS {
        let p = root.join("events").join(e).join("enable");
        v.push((e.to_string(), std::fs::read_to_string(p).ok()?));
    }
    Some(v)
}

fn can_trace() -> Result<(), String> {
    if cfg!(not(target_os = "linux")) {
        return Err("tracefs is Linux's".into());
    }
    // SAFETY: geteuid has no preconditions.
    #[cfg(unix)]
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root".into());
    }
    if allowed_cpus().len() < 2 {
        return Err("needs two CPUs (the hog's and the test's)".into());
    }
    Ok(())
}

#[test]
fn attribution_names_a_pinned_fifo_hog_and_leaves_tracefs_as_it_was() {
    if let Err(why) = can_trace() {
        eprintln!("NOT RUN: attribution: {why}");
        return;
    }
    // tracefs may be unmounted: osgauge mounts it and unmounts it again; compare when mounted.
    let before = tracefs_settings();
    let cpu = *allowed_cpus().last().unwrap();
    // A SCHED_FIFO hog on the measured CPU: 3 ms bursts every 50 ms for 3 s.
    let hog = std::thread::Builder::new()
        .name("osg-hog".into())
        .spawn(move || {
            use osgauge::platform::sched::{
                Policy, SchedRequest, apply_thread, set_thread_affinity,
            };
            set_thread_affinity(&[cpu]).unwrap();
            let fifo = SchedRequest {
                policy: Some(Policy::Fifo),
                priority: Some(50),
                ..Default::default()
            };
            if let Err(e) = apply_thread(&fifo) {
                return Err(format!("SCHED_FIFO refused: {e}"));
            }
            let end = Instant::now() + Duration::from_secs(3);
            while Instant::now() < end {
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(3) {
                    std::hint::spin_loop();
                }
                std::thread::sleep(Duration::from_millis(47));
            }
            Ok(())
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let out = osgauge()
        .args([
            "latency",
            "--cpus",
            &cpu.to_string(),
            "--policy",
            "other",
            "--attribute",
            "1ms",
            "--duration",
            "2s",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-store",
            "--export-json",
            "-",
        ])
        .output()
        .unwrap();
    let hog_result = hog.join().unwrap();
    if let Err(why) = hog_result {
        eprintln!("NOT RUN: attribution: {why}");
        return;
    }
    let v = record(&out);
    let b = json_bench(&v, "latency/wakeup");
    if b["error"]["kind"] == "unsupported" {
        eprintln!("NOT RUN: attribution: {}", b["error"]["message"]);
        return;
    }
    assert!(b["error"].is_null(), "{}", b["error"]);
    // The hog is named, by its thread name and this process's thread, in some spike of a run.
    let mut named = Vec::new();
    for f in b["run_facts"].as_array().unwrap() {
        let a = &f["attribution"];
        assert!(a["events"].as_u64().unwrap() > 0, "{a}");
        for s in a["top"].as_array().unwrap() {
            let parts = s["parts"].as_array().unwrap();
            // The parts add up to the latency.
            let sum: u64 = parts.iter().map(|p| p["ns"].as_u64().unwrap()).sum();
            assert_eq!(sum, s["latency_ns"].as_u64().unwrap());
            for p in parts {
                if p["kind"] == "task" && p["name"] == "osg-hog" {
                    named.push(p["ns"].as_u64().unwrap());
                }
            }
        }
    }
    assert!(
        !named.is_empty(),
        "the hog is never named: {}",
        b["run_facts"]
    );
    // A spike holds at most one burst of the hog (3 ms; µs trace resolution).
    let most = *named.iter().max().unwrap();
    assert!(most <= 3_300_000, "hog time {most} ns in one spike");
    eprintln!("hog named in {} spike(s), at most {most} ns", named.len());
    assert_eq!(tracefs_settings(), before, "tracefs settings restored");
}

#[test]
fn a_killed_tracing_session_is_undone_by_the_next_start() {
    if let Err(why) = can_trace() {
        eprintln!("NOT RUN: killed tracing session: {why}");
        return;
    }
    let before = tracefs_settings();
    let mut child = osgauge_std()
        .args([
            "latency",
            "--attribute",
            "1ms",
            "--duration",
            "20s",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-store",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the session runs (tracing on), at most 10 s.
    let t0 = Instant::now();
    let tracing = || {
        std::fs::read_to_string("/sys/kernel/tracing/tracing_on").is_ok_and(|t| t.trim() == "1")
            && std::fs::read_to_string("/sys/kernel/tracing/trace_clock")
                .is_ok_and(|t| t.contains("[mono]"))
    };
    while !tracing() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = tracing();
    child.kill().unwrap();
    child.wait().unwrap();
    if !started {
        eprintln!("NOT RUN: killed tracing session: the session never started");
        return;
    }
    // Any next osgauge command in the same temp dir puts tracefs back.
    osgauge().args(["list"]).assert().success();
    assert_eq!(
        tracefs_settings(),
        before,
        "tracefs settings restored after SIGKILL"
    );
}

#[test]
fn interactivity_attribution_explains_late_periods_under_a_burn_load() {
    if let Err(why) = can_trace() {
        eprintln!("NOT RUN: interactivity attribution: {why}");
        return;
    }
    let before = tracefs_settings();
    let out = osgauge()
        .args([
            "interactivity",
            "--task",
            "audio",
            "--load",
            "burn",
            "--uniprocessor",
            "--attribute",
            "50us",
            "--duration",
            "2s",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--no-store",
            "--export-json",
            "-",
        ])
        .output()
        .unwrap();
    let v = record(&out);
    let b = json_bench(&v, "interactivity/audio/burn");
    if b["error"]["kind"] == "unsupported" {
        eprintln!(
            "NOT RUN: interactivity attribution: {}",
            b["error"]["message"]
        );
        return;
    }
    assert!(b["error"].is_null(), "{}", b["error"]);
    let a = &b["run_facts"][0]["attribution"];
    assert!(a.is_object(), "no attribution in {}", b["run_facts"][0]);
    assert_eq!(a["threshold_ns"], 50_000);
    let spikes = a["top"].as_array().unwrap();
    for s in spikes {
        let sum: u64 = s["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ns"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, s["latency_ns"].as_u64().unwrap(), "{s}");
    }
    // Every late period is either explained or counted as not located; none vanish.
    let late = a["spikes"].as_u64().unwrap() + a["not_located"].as_u64().unwrap();
    assert!(late as usize >= spikes.len());
    eprintln!(
        "interactivity: {} late period(s) explained, culprits {}",
        a["spikes"], a["culprits"]
    );
    assert_eq!(tracefs_settings(), before, "tracefs settings restored");
}

#[test]
fn a_cpu_dma_latency_request_is_held_while_measuring_and_read_back() {
    if !std::path::Path::new("/dev/cpu_dma_latency").exists() {
        eprintln!("NOT RUN: --cpu-dma-latency: no /dev/cpu_dma_latency here");
        return;
    }
    let in_force = || {
        use std::io::Read;
        let mut buf = [0u8; 4];
        std::fs::File::open("/dev/cpu_dma_latency")
            .and_then(|mut f| f.read_exact(&mut buf))
            .map(|_| i32::from_ne_bytes(buf))
    };
    let before = in_force();
    let out = osgauge()
        .args([
            "latency",
            "--cpu-dma-latency",
            "0",
            "--duration",
            "200ms",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-store",
            "--export-json",
            "-",
        ])
        .output()
        .unwrap();
    let v = record(&out);
    let b = json_bench(&v, "latency/wakeup");
    if b["error"]["kind"] == "unsupported" {
        eprintln!("NOT RUN: --cpu-dma-latency: {}", b["error"]["message"]);
        return;
    }
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert_eq!(b["params"]["cpu_dma_latency_us"], 0);
    for f in b["run_facts"].as_array().unwrap() {
        assert_eq!(f["cpu_dma_latency_in_force_us"], 0, "{f}");
    }
    // Released afterwards: the request in force is what it was before.
    assert_eq!(in_force().ok(), before.ok(), "the request outlived the run");
}
