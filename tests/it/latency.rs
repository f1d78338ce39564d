//! The latency suite through the command line: `osgauge latency` and `osgauge noise` measure every
//! CPU and say what they applied; `--histogram` writes cyclictest's layout; `--attribute` names a
//! known hog and leaves tracefs as it found it, even after a SIGKILL; `--load` runs the
//! interactivity loads beside, one verified cell each.

use crate::common;

use std::time::{Duration, Instant};

use common::{json_bench, json_metric, osgauge};
use serde_json::Value;

fn allowed_cpus() -> Vec<usize> {
    osgauge::platform::allowed_cpus().unwrap()
}

/// The options every measuring command here ends with: no warm-up, no store, the record on stdout.
const JSON_ONLY: [&str; 5] = ["--warmup", "0", "--no-store", "--export-json", "-"];

fn record(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::parse_json(&out.stdout)
}

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
            "--interval",
            "500us",
            "--histogram-limit",
            "200",
            "--histogram",
        ])
        .arg(&hist)
        .args(JSON_ONLY)
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
crate::register!(
    latency_measures_every_cpu_reads_its_placement_back_and_writes_cyclictests_histogram
);

fn noise_adds_up_per_cpu_and_bad_options_are_usage_errors() {
    let out = osgauge()
        .args(["noise", "--duration", "300ms", "--runs", "2"])
        .args(JSON_ONLY)
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
crate::register!(noise_adds_up_per_cpu_and_bad_options_are_usage_errors);

/// The tracing settings a session changes, as they are now (None without root/tracefs).
fn tracefs_settings() -> Option<Vec<(String, String)>> {
    let root = std::path::Path::new("/sys/kernel/tracing");
    if !root.join("trace").exists() {
        return None;
    }
    let mut v = Vec::new();
    for f in [
        "tracing_on",
        "current_tracer",
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

fn attribution_names_a_pinned_fifo_hog_and_leaves_tracefs_as_it_was() {
    if let Err(why) = can_trace() {
        osgauge::testing::not_run("attribution", &why.to_string());
        return;
    }
    // tracefs may be unmounted: osgauge mounts it and unmounts it again; compare when mounted.
    let before = tracefs_settings();
    let cpu = *allowed_cpus().last().unwrap();
    // Other work (and the host's steal) over the whole window, for the one timing assertion below.
    let window = osgauge::testing::BusyWindow::start();
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
        ])
        .args(JSON_ONLY)
        .output()
        .unwrap();
    let hog_result = hog.join().unwrap();
    if let Err(why) = hog_result {
        osgauge::testing::not_run("attribution", &why.to_string());
        return;
    }
    let v = record(&out);
    let b = json_bench(&v, "latency/wakeup");
    if b["error"]["kind"] == "unsupported" {
        osgauge::testing::not_run("attribution", &format!("{}", b["error"]["message"]));
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
    // A spike holds at most one burst of the hog (3 ms; µs trace resolution) — a timing
    // assumption: it holds while the measuring thread (SCHED_OTHER) is woken within the hog's
    // 47 ms pause and the vCPU runs the whole burst. Other work delaying the measuring thread past
    // the next burst, or the host stealing the vCPU inside a burst (which a guest without steal
    // accounting charges to the hog), makes one spike hold more: seen as "5648975 ns in one
    // spike" beside other work. So a larger figure fails the test only in a quiet window.
    let most = *named.iter().max().unwrap();
    let what = format!("a spike holds at most one 3 ms burst of the hog (most: {most} ns)");
    if most > 3_300_000 && osgauge::testing::skip_timing(window.busy(), &what) {
        eprintln!("hog named in {} spike(s); {what} not judged", named.len());
    } else {
        assert!(most <= 3_300_000, "hog time {most} ns in one spike");
        eprintln!("hog named in {} spike(s), at most {most} ns", named.len());
    }
    assert_eq!(tracefs_settings(), before, "tracefs settings restored");
}
crate::register!(
    attribution_names_a_pinned_fifo_hog_and_leaves_tracefs_as_it_was
        .serial(crate::harness::group::TRACEFS)
        .root()
        .path("/sys/kernel/tracing")
        .ignore_if(cfg!(not(target_os = "linux")), "tracefs is Linux's")
);

/// Every part of every kept spike and every culprit of the runs of `b`'s attribution, as
/// (kind, name).
fn attributed(b: &Value) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for f in b["run_facts"].as_array().unwrap() {
        let a = &f["attribution"];
        let spikes = a["top"].as_array().unwrap();
        let parts = spikes
            .iter()
            .flat_map(|s| s["parts"].as_array().unwrap())
            .chain(a["culprits"].as_array().unwrap());
        for p in parts {
            v.push((
                p["kind"].as_str().unwrap().to_string(),
                p["name"].as_str().unwrap().to_string(),
            ));
        }
    }
    v
}

/// `osgauge latency --attribute THRESHOLD` on `cpu` for one run of `duration` at `policy`, keeping
/// 100 spikes; the wakeup result, or None (said) where tracing is refused. (A flood's trace holds
/// about a million events a second: one short run keeps a debug build's reading well within the
/// time bound.)
fn attribute_on(
    cpu: usize,
    policy: &[&str],
    threshold: &str,
    duration: &str,
    what: &str,
) -> Option<Value> {
    let cpu = cpu.to_string();
    let mut args = vec!["latency", "--cpus", &cpu];
    args.extend_from_slice(policy);
    args.extend([
        "--attribute",
        threshold,
        "--attribute-top",
        "100",
        "--duration",
        duration,
        "--runs",
        "1",
    ]);
    let out = osgauge().args(&args).args(JSON_ONLY).output().unwrap();
    let v = record(&out);
    let b = json_bench(&v, "latency/wakeup").clone();
    if b["error"]["kind"] == "unsupported" {
        osgauge::testing::not_run(what, &format!("{}", b["error"]["message"]));
        return None;
    }
    assert!(b["error"].is_null(), "{}", b["error"]);
    Some(b)
}

fn a_loopback_udp_flood_on_the_measured_cpu_shows_as_net_rx_softirq_time() {
    if let Err(why) = can_trace() {
        osgauge::testing::not_run("UDP flood attribution", &why.to_string());
        return;
    }
    let before = tracefs_settings();
    let cpu = *allowed_cpus().last().unwrap();
    // A sender pinned on the measured CPU: loopback delivers its datagrams in the NET_RX softirq
    // of the sending CPU. The receiver drains them wherever it runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let to = rx.local_addr().unwrap();
    let (s1, s2) = (stop.clone(), stop.clone());
    let receiver = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n = 0u64;
        while !s1.load(std::sync::atomic::Ordering::Relaxed) {
            if rx.recv(&mut buf).is_ok() {
                n += 1;
            }
        }
        n
    });
    let sender = std::thread::spawn(move || {
        osgauge::platform::sched::set_thread_affinity(&[cpu]).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut n = 0u64;
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            if tx.send_to(&[0u8; 64], to).is_ok() {
                n += 1;
            }
        }
        n
    });
    std::thread::sleep(Duration::from_millis(100));
    // A SCHED_FIFO measuring thread preempts the sender at once: what delays it is the softirq.
    let b = attribute_on(
        cpu,
        &["--policy", "fifo", "--priority", "90"],
        "20us",
        "1s",
        "UDP flood attribution",
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (sent, received) = (sender.join().unwrap(), receiver.join().unwrap());
    let Some(b) = b else { return };
    assert!(sent > 0 && received > 0, "sent {sent}, received {received}");
    let parts = attributed(&b);
    assert!(
        parts.iter().any(|(k, n)| k == "softirq" && n == "NET_RX"),
        "no NET_RX softirq time among {parts:?} (sent {sent} datagrams)"
    );
    eprintln!("UDP flood: {sent} datagrams sent, NET_RX named");
    assert_eq!(tracefs_settings(), before, "tracefs settings restored");
}
crate::register!(
    a_loopback_udp_flood_on_the_measured_cpu_shows_as_net_rx_softirq_time
        .serial(crate::harness::group::TRACEFS)
        .root()
        .path("/sys/kernel/tracing")
        .ignore_if(cfg!(not(target_os = "linux")), "tracefs is Linux's")
);

fn a_spinner_at_the_measuring_threads_priority_shows_as_run_queue_wait() {
    if let Err(why) = can_trace() {
        osgauge::testing::not_run("run-queue attribution", &why.to_string());
        return;
    }
    let before = tracefs_settings();
    let cpu = *allowed_cpus().last().unwrap();
    // A SCHED_OTHER spinner (as `stress-ng --cpu 1 --taskset N`) on the measured CPU: the
    // SCHED_OTHER measuring thread, woken, waits in the run queue while it runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let spinner = std::thread::Builder::new()
        .name("osg-spin".into())
        .spawn(move || {
            osgauge::platform::sched::set_thread_affinity(&[cpu]).unwrap();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let b = attribute_on(
        cpu,
        &["--policy", "other"],
        "100us",
        "2s",
        "run-queue attribution",
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    let Some(b) = b else { return };
    let parts = attributed(&b);
    if parts.is_empty() {
        // The fair scheduler let the woken measuring thread preempt the spinner at every
        // wake-up (it may: a woken task with lag runs first): no wake-up was 100 µs late, so
        // there was nothing to attribute. Seen once in ~10 runs here.
        osgauge::testing::not_run(
            "run-queue attribution",
            "no wake-up was 100 µs late beside the spinner \
             (the scheduler let the measuring thread preempt it every time)",
        );
        assert_eq!(tracefs_settings(), before, "tracefs settings restored");
        return;
    }
    assert!(
        parts.iter().any(|(k, n)| k == "task" && n == "osg-spin"),
        "the spinner is never named among {parts:?}"
    );
    eprintln!("run-queue wait: the spinner named");
    assert_eq!(tracefs_settings(), before, "tracefs settings restored");
}
crate::register!(
    a_spinner_at_the_measuring_threads_priority_shows_as_run_queue_wait
        .serial(crate::harness::group::TRACEFS)
        .root()
        .path("/sys/kernel/tracing")
        .ignore_if(cfg!(not(target_os = "linux")), "tracefs is Linux's")
);

/// Why tracefs cannot be lent to a test now: it is already tracing some of the events a session
/// uses — a session of a run killed elsewhere (its state file was in that run's own temp dir, so
/// no start here can undo it) or another tool. osgauge refuses such a session, so a signal test
/// would find nothing to signal.
fn tracefs_busy() -> Option<String> {
    let root = std::path::Path::new("/sys/kernel/tracing");
    let on = std::fs::read_to_string(root.join("tracing_on")).ok()?;
    let enabled: Vec<&str> = osgauge::platform::tracefs::EVENTS
        .iter()
        .copied()
        .filter(|e| {
            std::fs::read_to_string(root.join("events").join(e).join("enable"))
                .is_ok_and(|v| v.trim() != "0")
        })
        .collect();
    (on.trim() == "1" && !enabled.is_empty()).then(|| {
        format!(
            "tracefs was already tracing {} before the test began (a killed run's session or \
             another tool); osgauge rightly refuses to share it",
            enabled.join(", ")
        )
    })
}

/// Start `osgauge latency --attribute` for 20 s, wait until *its* tracing session runs (its own
/// session state file exists and tracing is on — never another process's session), send `sig`
/// and wait for the process to end (at most 15 s). None: the session never started.
#[cfg(unix)]
fn signal_a_tracing_session(sig: i32) -> Option<std::process::ExitStatus> {
    let mut child = common::osgauge_std()
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
    // The child's state file lives in this test's TMPDIR, named by its pid; it is written after
    // the interrupt handler is installed and before tracing is switched on.
    let state = common::with_test_sandbox(|s| s.tmp()).join(format!(
        "{}{}.json",
        osgauge::platform::tracefs::STATE_PREFIX,
        child.id()
    ));
    let t0 = Instant::now();
    let tracing = || {
        state.exists()
            && std::fs::read_to_string("/sys/kernel/tracing/tracing_on")
                .is_ok_and(|t| t.trim() == "1")
            && std::fs::read_to_string("/sys/kernel/tracing/trace_clock")
                .is_ok_and(|t| t.contains("[mono]"))
    };
    while !tracing() && t0.elapsed() < Duration::from_secs(10) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = tracing();
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t1.elapsed() > Duration::from_secs(15) {
            child.kill().unwrap();
            panic!("signal {sig}: osgauge did not end within 15 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    started.then_some(status)
}

fn ctrl_c_and_sigterm_end_a_tracing_session_with_tracefs_as_it_was() {
    if let Err(why) = can_trace() {
        osgauge::testing::not_run("signalled tracing session", &why.to_string());
        return;
    }
    if let Some(why) = tracefs_busy() {
        osgauge::testing::not_run("signalled tracing session", &why);
        return;
    }
    #[cfg(unix)]
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let before = tracefs_settings();
        let Some(status) = signal_a_tracing_session(sig) else {
            osgauge::testing::not_run(name, "the tracing session never started");
            continue;
        };
        // Handled: the process ends by itself (interrupted), not killed by the signal.
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), None, "{name}: {status}");
        // Restored by the process itself: no next start in between.
        assert_eq!(
            tracefs_settings(),
            before,
            "tracefs settings restored after {name}"
        );
        let tmp = common::with_test_sandbox(|s| s.tmp());
        let left: Vec<String> = std::fs::read_dir(&tmp)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(osgauge::platform::tracefs::STATE_PREFIX))
            .collect();
        assert!(left.is_empty(), "{name}: session state left: {left:?}");
    }
}
crate::register!(
    ctrl_c_and_sigterm_end_a_tracing_session_with_tracefs_as_it_was
        .serial(crate::harness::group::TRACEFS)
        .root()
        .path("/sys/kernel/tracing")
        .ignore_if(cfg!(not(target_os = "linux")), "tracefs is Linux's")
);

fn a_killed_tracing_session_is_undone_by_the_next_start() {
    if let Err(why) = can_trace() {
        osgauge::testing::not_run("killed tracing session", &why.to_string());
        return;
    }
    if let Some(why) = tracefs_busy() {
        osgauge::testing::not_run("killed tracing session", &why);
        return;
    }
    #[cfg(unix)]
    {
        let before = tracefs_settings();
        if signal_a_tracing_session(libc::SIGKILL).is_none() {
            osgauge::testing::not_run("killed tracing session", "the session never started");
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
}
crate::register!(
    a_killed_tracing_session_is_undone_by_the_next_start
        .serial(crate::harness::group::TRACEFS)
        .root()
        .path("/sys/kernel/tracing")
        .ignore_if(cfg!(not(target_os = "linux")), "tracefs is Linux's")
);

fn interactivity_attribution_explains_late_periods_under_a_burn_load() {
    if let Err(why) = can_trace() {
        osgauge::testing::not_run("interactivity attribution", &why.to_string());
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
        ])
        .args(JSON_ONLY)
        .output()
        .unwrap();
    let v = record(&out);
    let b = json_bench(&v, "interactivity/audio/burn");
    if b["error"]["kind"] == "unsupported" {
        osgauge::testing::not_run(
            "interactivity attribution",
            &format!("{}", b["error"]["message"]),
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
crate::register!(
    interactivity_attribution_explains_late_periods_under_a_burn_load
        .serial(crate::harness::group::TRACEFS)
        .root()
        .path("/sys/kernel/tracing")
        .ignore_if(cfg!(not(target_os = "linux")), "tracefs is Linux's")
);

fn a_cpu_dma_latency_request_is_held_while_measuring_and_read_back() {
    if !std::path::Path::new("/dev/cpu_dma_latency").exists() {
        osgauge::testing::not_run("--cpu-dma-latency", "no /dev/cpu_dma_latency here");
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
        ])
        .args(JSON_ONLY)
        .output()
        .unwrap();
    let v = record(&out);
    let b = json_bench(&v, "latency/wakeup");
    if b["error"]["kind"] == "unsupported" {
        osgauge::testing::not_run("--cpu-dma-latency", &format!("{}", b["error"]["message"]));
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
crate::register!(
    a_cpu_dma_latency_request_is_held_while_measuring_and_read_back
        .serial(crate::harness::group::PM_QOS)
        .path("/dev/cpu_dma_latency")
);

/// Every sub-folder of `dir` (recursively), as paths.
fn entries_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        v.push(e.path());
        if e.path().is_dir() {
            v.extend(entries_under(&e.path()));
        }
    }
    v
}

fn a_load_beside_latency_and_noise_is_recorded_per_cell_verified_and_leaves_no_folder() {
    let sb = common::Sandbox::new();
    let out = sb
        .command()
        .args([
            "latency",
            "--load",
            "none,burn",
            "--duration",
            "800ms",
            "--runs",
            "2",
        ])
        .args(JSON_ONLY)
        .output()
        .unwrap();
    let v = record(&out);
    let cpus = allowed_cpus();
    // No load: the old id, the load named, no load figure.
    let quiet = json_bench(&v, "latency/wakeup");
    assert!(quiet["error"].is_null(), "{}", quiet["error"]);
    assert_eq!(quiet["params"]["load"], "none");
    assert!(
        quiet["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["name"] != "load_cpu")
    );
    // The burn cell: the load in its params, and per run what it achieved against its target.
    let b = json_bench(&v, "latency/wakeup/burn");
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert_eq!(b["params"]["load"], "burn");
    let runs = b["run_facts"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for f in runs {
        assert_eq!(f["load_target_pct"], 100.0, "{f}");
        let achieved = f["load_achieved_cpu_pct"].as_f64().unwrap();
        // Verified: a burn load under its floor would have failed the cell.
        assert!(achieved >= 2.0, "{f}");
        let threads = f["load_threads"].as_u64().unwrap() as usize;
        let roles = f["load_achieved"].as_object().unwrap();
        assert_eq!(roles.len(), threads, "{f}");
        assert!(roles.keys().all(|r| r.starts_with("burn")), "{f}");
        // The measuring threads are still one per CPU, read back.
        assert_eq!(f["threads"].as_array().unwrap().len(), cpus.len());
    }
    let load_cpu = json_metric(b, "load_cpu");
    assert_eq!(load_cpu["runs"].as_array().unwrap().len(), 2);
    for c in &cpus {
        let m = json_metric(b, &format!("cpu{c}"));
        assert_eq!(m["runs"].as_array().unwrap().len(), 2, "cpu{c}");
    }

    // noise beside a file load in a folder the user named: the per-process folder goes.
    let base = sb.path().join("loads-here");
    std::fs::create_dir(&base).unwrap();
    let out = sb
        .command()
        .args([
            "noise",
            "--load",
            "write",
            "--duration",
            "400ms",
            "--runs",
            "1",
        ])
        .arg("--load-dir")
        .arg(&base)
        .args(JSON_ONLY)
        .output()
        .unwrap();
    let v = record(&out);
    let n = json_bench(&v, "latency/noise/write");
    assert!(n["error"].is_null(), "{}", n["error"]);
    assert_eq!(n["params"]["load"], "write");
    let f = &n["run_facts"][0];
    assert!(f["load_write_bytes"].as_u64().unwrap() >= 1 << 20, "{f}");
    assert!(
        f["load_dir"]
            .as_str()
            .unwrap()
            .starts_with(base.to_str().unwrap()),
        "{f}"
    );
    assert_eq!(entries_under(&base), Vec::<std::path::PathBuf>::new());
    // Nor anything under the default base (`<cache dir>/loads`), which the burn cells had.
    assert_eq!(
        entries_under(&sb.cache().join("loads")),
        Vec::<std::path::PathBuf>::new()
    );
}
crate::register!(
    a_load_beside_latency_and_noise_is_recorded_per_cell_verified_and_leaves_no_folder
        .serial(crate::harness::group::LOAD)
);

fn a_bad_load_is_a_usage_error() {
    let sb = common::Sandbox::new();
    for args in [
        &["latency", "--load", "bogus"][..],
        &["noise", "--load", "burn,nope"][..],
        // One histogram file, two cells.
        &["latency", "--load", "none,burn", "--histogram", "h.txt"][..],
        // A folder the user named must exist for a file load.
        &[
            "noise",
            "--load",
            "write",
            "--load-dir",
            "/nonexistent/osgauge",
        ][..],
    ] {
        let out = sb.command().args(args).arg("--no-store").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).trim().is_empty());
    }
}
crate::register!(a_bad_load_is_a_usage_error);
