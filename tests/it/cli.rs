//! End-to-end tests of the command line, as a user runs it.

use crate::common;

use common::osgauge;
use predicates::prelude::*;
use serde_json::Value;

const UNITS: [&str; 12] = [
    "ns",
    "%",
    "B/s",
    "B",
    "count",
    "op/s",
    "µs",
    "MB/s",
    "Gbit/s",
    "GB/s",
    "µs/KiB",
    "CPU·s/GB",
];

fn list_names_every_suite_with_units_and_direction() {
    let out = osgauge().arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for s in ["cpu —", "proc —", "cpu/null_syscall", "lower is better"] {
        assert!(text.contains(s), "missing {s} in:\n{text}");
    }
    let out = osgauge().args(["list", "--json"]).output().unwrap();
    let v: Value = common::parse_json(&out.stdout);
    let list = v.as_array().unwrap();
    assert!(list.len() >= 5);
    for b in list {
        for m in b["metrics"].as_array().unwrap() {
            assert!(UNITS.contains(&m["unit"].as_str().unwrap()), "{m}");
            assert!(["lower", "higher", "neutral"].contains(&m["better"].as_str().unwrap()));
        }
    }
    let long = osgauge().args(["list", "--long"]).output().unwrap();
    assert!(String::from_utf8(long.stdout).unwrap().contains("Harness"));
}
crate::register!(list_names_every_suite_with_units_and_direction);

fn micro_run_exports_a_valid_record_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let md = dir.path().join("r.md");
    osgauge()
        .args([
            "micro",
            "cpu",
            "--runs",
            "3",
            "--run-time",
            "5ms",
            "--quiet",
            "--label",
            "itest",
        ])
        .arg("--export-json")
        .arg(&json)
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-markdown")
        .arg(&md)
        .assert()
        .success()
        .stdout(predicate::str::contains("null_syscall"));

    let v: Value = common::read_json(&json);
    // Typed check: the document deserialises into the record model.
    let rec: osgauge::record::RunRecord = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(rec.schema, "osgauge.run/1");
    assert_eq!(rec.label.as_deref(), Some("itest"));
    assert_eq!(rec.config.runs, 3);
    assert!(rec.complete);
    assert!(rec.environment.end.is_some());
    assert!(rec.timing.timer_overhead_ns > 0.0);
    // Shape check on the raw JSON: every metric has a unit and a direction.
    let benches = v["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 5);
    for b in benches {
        assert!(b["id"].as_str().unwrap().starts_with("cpu/"));
        for m in b["metrics"].as_array().unwrap() {
            assert!(UNITS.contains(&m["unit"].as_str().unwrap()), "{m}");
            assert!(["lower", "higher"].contains(&m["better"].as_str().unwrap()));
            if b["error"].is_null() {
                assert_eq!(m["runs"].as_array().unwrap().len(), 3);
                let s = &m["summary"];
                assert!(s["ci95"][0].as_f64().unwrap() <= s["center"].as_f64().unwrap());
                assert!(s["center"].as_f64().unwrap() <= s["ci95"][1].as_f64().unwrap());
            }
        }
    }
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv_text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("run_id,label,benchmark,metric,unit,better")
    );
    // proc_call has 8 metrics, the other four 1 each.
    assert_eq!(lines.count(), 12);
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(md_text.starts_with("# itest"));
    assert!(md_text.contains("| benchmark | median |"));
}
crate::register!(micro_run_exports_a_valid_record_in_every_format);

fn assert_usage_error(args: &[&str], message: &str) {
    let out = osgauge().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "args {args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(message), "args {args:?}: stderr was {err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn bad_input_is_one_clear_error_with_exit_2() {
    assert_usage_error(&["micro", "nosuch"], "unknown suite or benchmark 'nosuch'");
    assert_usage_error(&["micro", "cpu", "--runs", "0"], "--runs");
    assert_usage_error(&["micro", "cpu", "--runs", "many"], "--runs");
    assert_usage_error(
        &["micro", "cpu", "--run-time", "5parsecs"],
        "invalid duration unit",
    );
    assert_usage_error(&["frobnicate"], "unrecognized subcommand");
    let out = osgauge().args(["micro", "nosuch"]).output().unwrap();
    // One line, not a wall of text.
    assert_eq!(
        String::from_utf8(out.stderr)
            .unwrap()
            .trim()
            .lines()
            .count(),
        1
    );
}
crate::register!(bad_input_is_one_clear_error_with_exit_2);

fn unwritable_export_fails_before_running_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    let bad = dir.path().join("missing-dir/r.csv");
    let out = osgauge()
        .args(["micro", "cpu", "--runs", "1"])
        .arg("--export-json")
        .arg(&good)
        .arg("--export-csv")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--export-csv") && err.contains("does not exist"),
        "{err}"
    );
    assert!(
        !good.exists(),
        "nothing may be written when the input is bad"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
crate::register!(unwritable_export_fails_before_running_and_writes_nothing);

fn system_show_and_check() {
    let out = osgauge()
        .args(["system", "show", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = common::parse_json(&out.stdout);
    assert!(v["machine"].is_object() && v["environment"].is_object());
    let out = osgauge().args(["system", "check"]).output().unwrap();
    // The exit status is what the printed findings say: 0 and "Ready" with no warning, 1 and
    // "<n> warning(s)" with n warnings (either may be right on a shared machine).
    let text = String::from_utf8(out.stdout).unwrap();
    let warnings = text.lines().filter(|l| l.starts_with("[WARNING]")).count();
    let last = text.trim_end().lines().last().unwrap_or_default();
    // The idle-exit cost is measured briefly and shown (or said why not).
    assert!(
        [
            "[info] idle_wakeup:",
            "[WARNING] idle_wakeup:",
            "[not checked] idle_wakeup:"
        ]
        .iter()
        .any(|p| text.contains(p)),
        "{text}"
    );
    if warnings == 0 {
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(last.starts_with("Ready"), "{text}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            last.starts_with(&format!("{warnings} warning(s)")),
            "{text}"
        );
    }
}
crate::register!(system_show_and_check);

fn completions_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        osgauge()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("osgauge"));
    }
}
crate::register!(completions_are_generated);

fn time_bound_stops_a_benchmark_cleanly_and_keeps_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    // 1 warm-up + 5 runs × 300 ms cannot fit in 1 s: the bound must cut it short.
    let window = osgauge::testing::BusyWindow::start();
    osgauge()
        .args([
            "micro",
            "cpu/null_syscall",
            "--runs",
            "5",
            "--run-time",
            "300ms",
        ])
        .args(["--timeout", "1s", "--quiet", "--export-json"])
        .arg(&json)
        .assert()
        .success()
        .stdout(predicate::str::contains("timeout"));
    let rec: osgauge::record::RunRecord = serde_json::from_value(common::read_json(&json)).unwrap();
    let b = &rec.benchmarks[0];
    let e = b.error.as_ref().expect("a timeout is recorded");
    assert_eq!(e.kind, osgauge::record::ErrorKind::Timeout);
    assert!(
        e.message.contains("finished runs are kept"),
        "{}",
        e.message
    );
    let kept = b.metrics[0].runs.len();
    assert!((1..5).contains(&kept), "kept {kept} runs");
    // Within 6 s however busy the machine; within 3 s where nothing else competed.
    assert!(b.wall_s < 6.0, "bound not honoured: {} s", b.wall_s);
    let what = format!("the 1 s bound within 3 s ({} s)", b.wall_s);
    if !osgauge::testing::skip_timing(window.busy(), &what) {
        assert!(b.wall_s < 3.0, "bound not honoured: {} s", b.wall_s);
    }
    assert_eq!(rec.config.timeout_ms, 1000);
}
crate::register!(
    time_bound_stops_a_benchmark_cleanly_and_keeps_finished_runs
        .serial(crate::harness::group::TIMING)
);

fn hidden_echo_peer_copies_input_and_exits_at_eof() {
    osgauge()
        .arg("__echo")
        .write_stdin(vec![1u8, 2, 3])
        .assert()
        .success()
        .stdout(predicate::eq(&[1u8, 2, 3][..]));
    osgauge()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("__echo").not());
}
crate::register!(hidden_echo_peer_copies_input_and_exits_at_eof);

fn completions_offer_suite_names_and_benchmark_ids() {
    for shell in ["bash", "zsh"] {
        let out = osgauge().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        for id in [
            "cpu/null_syscall",
            "mem/page_fault",
            "net/tcp_rtt_64b",
            "interactivity",
        ] {
            assert!(text.contains(id), "{shell}: no {id} to complete");
        }
    }
    // Parsing keeps its own message for an unknown id (the completion values do not validate).
    osgauge()
        .args(["micro", "cpu/nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown suite or benchmark 'cpu/nosuch'",
        ));
}
crate::register!(completions_offer_suite_names_and_benchmark_ids);

fn run_picks_suites_with_suite_and_refuses_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    osgauge()
        .args(["run", "--suite", "cpu", "--runs", "2", "--run-time", "5ms"])
        .args(["--quiet", "--no-store", "--export-json"])
        .arg(&json)
        .assert()
        .success();
    let rec: Value = common::read_json(&json);
    let suites: Vec<&str> = rec["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["suite"].as_str().unwrap())
        .collect();
    assert!(!suites.is_empty());
    assert!(suites.iter().all(|s| *s == "cpu"), "{suites:?}");
    assert_eq!(rec["config"]["selection"], serde_json::json!(["cpu"]));
    osgauge()
        .args(["run", "--suite", "cpu,nosuch", "--no-store"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--suite: unknown suite 'nosuch'"));
}
crate::register!(run_picks_suites_with_suite_and_refuses_unknown_ones);

fn duration_flags_accept_hours_up_to_a_day() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    osgauge()
        .args(["micro", "cpu/timer_read", "--runs", "1", "--warmup", "0"])
        .args([
            "--run-time",
            "5ms",
            "--timeout",
            "2h",
            "--quiet",
            "--no-store",
        ])
        .arg("--export-json")
        .arg(&json)
        .assert()
        .success();
    let rec: Value = common::read_json(&json);
    assert_eq!(rec["config"]["timeout_ms"], 7_200_000);
    osgauge()
        .args(["micro", "cpu/timer_read", "--timeout", "25h"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("24 h"));
}
crate::register!(duration_flags_accept_hours_up_to_a_day);

fn fail_on_error_exits_5_when_a_benchmark_failed() {
    // A peer address nothing listens on: every net benchmark fails to connect.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let peer = format!("127.0.0.1:{port}");
    let args = [
        "micro",
        "net/tcp_rtt_64b",
        "--peer",
        &peer,
        "--runs",
        "1",
        "--warmup",
        "0",
        "--run-time",
        "10ms",
        "--no-store",
    ];
    // Without the flag the failure is in the record and the exit code is 0, as documented.
    let out = osgauge().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("failed"));
    let out = osgauge()
        .args(args)
        .arg("--fail-on-error")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("--fail-on-error: 1 benchmark(s) not measured: net/tcp_rtt_64b (failed)"),
        "{err}"
    );
    // A run that measured everything passes with the flag.
    osgauge()
        .args(["micro", "cpu/timer_read", "--runs", "1", "--warmup", "0"])
        .args([
            "--run-time",
            "5ms",
            "--quiet",
            "--no-store",
            "--fail-on-error",
        ])
        .assert()
        .success();
}
crate::register!(fail_on_error_exits_5_when_a_benchmark_failed);

fn ci_width_runs_adaptively_and_records_how_each_benchmark_ended() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    osgauge()
        .args([
            "micro",
            "cpu/timer_read",
            "cpu/loop_overhead",
            "--ci-width",
            "50%",
        ])
        .args([
            "--max-runs",
            "6",
            "--run-time",
            "5ms",
            "--quiet",
            "--no-store",
        ])
        .arg("--export-json")
        .arg(&json)
        .assert()
        .success();
    let rec: Value = common::read_json(&json);
    assert_eq!(rec["config"]["adaptive"]["ci_width"], 0.5);
    assert_eq!(rec["config"]["adaptive"]["max_runs"], 6);
    // --runs not given: the minimum is the fewest runs that can reach significance.
    assert_eq!(rec["config"]["runs"], 4);
    for b in rec["benchmarks"].as_array().unwrap() {
        let a = &b["adaptive"];
        let runs = a["runs"].as_u64().unwrap();
        assert!((4..=6).contains(&runs), "{a}");
        assert_eq!(
            b["metrics"][0]["runs"].as_array().unwrap().len() as u64,
            runs
        );
        // Reached means within the target; not reached means the cap (no error here) and a warning.
        if a["reached"] == true {
            assert!(a["half_width_pct"].as_f64().unwrap() <= 50.0, "{a}");
        } else {
            assert_eq!(runs, 6, "{a}");
            let w = b["warnings"].to_string();
            assert!(w.contains("stopped at the cap of 6 runs"), "{w}");
        }
    }
    for (args, msg) in [
        (&["--ci-width", "0%"][..], "above 0%"),
        (&["--ci-width", "5%", "--max-runs", "3"], "--max-runs"),
        (&["--max-runs", "10"], "--ci-width"),
        (
            &["--ci-width", "5%", "--runs", "20", "--max-runs", "10"],
            "below the minimum",
        ),
    ] {
        osgauge()
            .args(["micro", "cpu/timer_read", "--no-store"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(msg));
    }
}
crate::register!(ci_width_runs_adaptively_and_records_how_each_benchmark_ended);

fn progress_on_a_non_terminal_is_one_line_per_round_with_estimate_and_actual_time() {
    let out = osgauge()
        .args(["micro", "cpu/timer_read", "cpu/null_syscall", "--runs", "2"])
        .args(["--run-time", "5ms", "--no-store"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with(
            "osgauge: 2 benchmark(s) and the drift reference, in rounds of random order, 2 run(s) each, about "
        ),
        "{err}"
    );
    // One line per round: the warm-up round, then each round of one run per benchmark.
    let progress: Vec<&&str> = lines.iter().filter(|l| l.contains(" done (")).collect();
    assert_eq!(progress.len(), 3, "{err}");
    assert!(
        progress[0].starts_with("osgauge: warm-up done (3 run(s))"),
        "{err}"
    );
    assert!(
        progress[1].starts_with("osgauge: round 1/2 done (3 run(s))"),
        "{err}"
    );
    assert!(
        progress[2].starts_with("osgauge: round 2/2 done (3 run(s))"),
        "{err}"
    );
    assert!(progress[2].contains("elapsed, about 0 s left"), "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("osgauge: took ") && l.contains("(estimated ")),
        "{err}"
    );
    // --quiet: none of it.
    let out = osgauge()
        .args([
            "micro",
            "cpu/timer_read",
            "--runs",
            "2",
            "--run-time",
            "5ms",
        ])
        .args(["--no-store", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
crate::register!(progress_on_a_non_terminal_is_one_line_per_round_with_estimate_and_actual_time);

fn a_second_run_is_estimated_from_the_first_runs_times() {
    let sb = common::Sandbox::new();
    let args = [
        "micro",
        "cpu/timer_read",
        "--runs",
        "2",
        "--run-time",
        "5ms",
    ];
    sb.osgauge().args(args).assert().success();
    let out = sb.osgauge().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .next()
            .unwrap()
            .contains("(2 of 2 benchmark(s) timed by earlier runs on this store)"),
        "{err}"
    );
    // Another run time is other work: the benchmark's own estimate.
    let out = sb
        .osgauge()
        .args([
            "micro",
            "cpu/timer_read",
            "--runs",
            "2",
            "--run-time",
            "6ms",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.lines()
            .next()
            .unwrap()
            .contains("timed by earlier runs"),
        "{err}"
    );
}
crate::register!(a_second_run_is_estimated_from_the_first_runs_times);

fn a_duration_without_a_unit_is_refused() {
    // `--run-time 100` silently meant 100 s; now the unit is asked for, naming the units.
    for flag in ["--run-time", "--timeout"] {
        let out = osgauge()
            .args(["micro", "cpu/null_syscall", flag, "100"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains("no unit") && err.contains("100ms"),
            "{flag}: {err}"
        );
    }
}
crate::register!(a_duration_without_a_unit_is_refused);
