//! Ctrl-C during a run: the run stops cleanly, keeps and exports what was measured, exits 130, and
//! leaves no child process behind.
#![cfg(unix)]

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

/// True while any process of the process group `pgid` exists.
fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

fn sigint_keeps_finished_benchmarks_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("partial.json");
    let mut child = common::osgauge_std()
        .args(["micro", "cpu", "proc", "--runs", "3", "--run-time", "200ms"])
        .arg("--export-json")
        .arg(&json)
        // Never the user's real result store.
        .env("OSGAUGE_STORE", dir.path().join("store.sqlite"))
        .env("OSGAUGE_CACHE_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    // Its standard error, read as it comes: off a terminal, one progress line per finished
    // round (`osgauge: round 1/3 done (15 run(s)) · …`).
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Interrupt once the first measured round is finished (kept), with the run far from its end.
    let t0 = Instant::now();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120).saturating_sub(t0.elapsed()))
            .expect("no round finished within 120 s");
        if line.starts_with("osgauge: round 1/") {
            break;
        }
    }
    // Like a terminal's Ctrl-C: SIGINT to the whole process group (osgauge and its children).
    // SAFETY: signalling our own child's process group.
    assert_eq!(unsafe { libc::kill(-(pid as i32), libc::SIGINT) }, 0);
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = reader.join().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "did not stop promptly"
    );
    assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    // No process of osgauge's group (forked peers, spawned programs) outlives it.
    std::thread::sleep(Duration::from_millis(100));
    assert!(!group_alive(pid as i32), "a child of osgauge outlived it");
    let rec: osgauge::record::RunRecord = serde_json::from_value(common::read_json(&json)).unwrap();
    assert!(!rec.complete);
    assert!(rec.warnings.iter().any(|w| w.contains("interrupted")));
    // What finished before the signal is kept with its summaries.
    let measured = rec.benchmarks.iter().filter(|b| b.error.is_none()).count();
    assert!(
        measured >= 1,
        "nothing kept: {:?}",
        rec.benchmarks.iter().map(|b| &b.id).collect::<Vec<_>>()
    );
    // Runs are taken in rounds: every benchmark began, and the cut left them short of 3 runs,
    // each saying so.
    let short: Vec<&osgauge::record::BenchmarkResult> = rec
        .benchmarks
        .iter()
        .filter(|b| b.metrics.iter().map(|m| m.runs.len()).max().unwrap_or(0) < 3)
        .collect();
    assert!(!short.is_empty(), "the run should have been cut short");
    assert!(
        short
            .iter()
            .all(|b| b.error.is_some() || b.warnings.iter().any(|w| w.contains("interrupted"))),
        "a benchmark cut short does not say so"
    );
}
crate::register!(sigint_keeps_finished_benchmarks_and_exits_130);
