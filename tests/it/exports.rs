//! Exports and output, end to end: special files as export targets, one file named twice, a
//! stdout that breaks or is closed, labels, and footers that count what was kept.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The binary with a store and cache of this test's own (under `dir`).
fn osgauge(dir: &Path) -> Command {
    let mut c = common::osgauge_std();
    c.env("OSGAUGE_STORE", dir.join("store.sqlite"))
        .env("OSGAUGE_CACHE_DIR", dir.join("cache"));
    c
}

const MICRO: [&str; 6] = [
    "micro",
    "cpu/timer_read",
    "--runs",
    "1",
    "--run-time",
    "5ms",
];

fn assert_no_panic(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "stderr: {err}"
    );
}

/// Run with stdout a pipe whose read end is closed before the program writes.
fn with_broken_stdout(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

fn stored_runs(dir: &Path) -> Vec<Value> {
    let out = osgauge(dir)
        .args(["results", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn a_closed_pipe_ends_printing_quietly_and_the_run_is_still_stored() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut micro = osgauge(dir.path());
    micro.args(MICRO).arg("--export-json").arg(&json);
    let out = with_broken_stdout(micro);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let runs = stored_runs(dir.path());
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["complete"], Value::Bool(true), "{runs:?}");
    assert!(json.is_file(), "the export is written");

    let id = runs[0]["run_id"].as_str().unwrap().to_string();
    for args in [
        vec!["list"],
        vec!["results", "list"],
        vec!["results", "show", &id],
        vec!["results", "export", &id],
        vec!["system", "show"],
        vec!["completions", "bash"],
    ] {
        let mut c = osgauge(dir.path());
        c.args(&args);
        let out = with_broken_stdout(c);
        assert_no_panic(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    }
}
crate::register!(a_closed_pipe_ends_printing_quietly_and_the_run_is_still_stored);

fn a_run_whose_stdout_and_stderr_pipe_broke_is_still_stored() {
    // `osgauge micro … 2>&1 | head -0`: both streams on one pipe with no reader.
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = osgauge(dir.path())
        .args(MICRO)
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let runs = stored_runs(dir.path());
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["complete"], Value::Bool(true), "{runs:?}");
}
crate::register!(a_run_whose_stdout_and_stderr_pipe_broke_is_still_stored);

#[cfg(unix)]
fn a_closed_or_full_stdout_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = osgauge(dir.path())
        .args(MICRO)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let id = stored_runs(dir.path())[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // `>&-`: stdout closed when the program starts.
    let out = common::confine(&mut Command::new("sh"))
        .args(["-c", "exec \"$0\" results export \"$1\" >&-"])
        .arg(env!("CARGO_BIN_EXE_osgauge"))
        .arg(&id)
        .env("OSGAUGE_STORE", dir.path().join("store.sqlite"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("standard output is closed"), "{err}");
    if Path::new("/dev/full").exists() {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = osgauge(dir.path())
            .args(["results", "list"])
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    } else {
        eprintln!("skipped the /dev/full part: no /dev/full here");
    }
}
#[cfg(unix)]
crate::register!(a_closed_or_full_stdout_is_an_error);

#[cfg(unix)]
fn special_export_targets_are_written_through_and_kept() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A symlink: the target gets the contents, the link stays a link.
    std::os::unix::fs::symlink("target.json", d.join("link.json")).unwrap();
    // A FIFO, read by a thread.
    let fifo = d.join("pipe.csv");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    // A device node made with mknod (the null device), when root.
    let node = d.join("null.md");
    let made_node = Command::new("mknod")
        .arg(&node)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !made_node {
        eprintln!("device node part skipped: mknod failed (needs root)");
    }
    let md_target: std::path::PathBuf = if made_node {
        node.clone()
    } else {
        d.join("r.md")
    };
    let out = osgauge(d)
        .args(MICRO)
        .args(["--quiet", "--no-store", "--export-json"])
        .arg(d.join("link.json"))
        .arg("--export-csv")
        .arg(&fifo)
        .arg("--export-markdown")
        .arg(&md_target)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let meta = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
    assert!(meta(&d.join("link.json")).is_symlink());
    let v: Value = common::read_json(d.join("target.json"));
    assert_eq!(v["schema"], "osgauge.run/1");
    assert!(meta(&fifo).is_fifo());
    assert!(reader.join().unwrap().starts_with("run_id,"));
    if made_node {
        assert!(meta(&node).is_char_device());
    }
    // /dev/full: an error naming the path, exit 1, the device untouched.
    if Path::new("/dev/full").exists() {
        let out = osgauge(d)
            .args(MICRO)
            .args(["--quiet", "--no-store", "--export-json", "/dev/full"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("/dev/full") && err.contains("No space left"),
            "{err}"
        );
        assert!(meta(Path::new("/dev/full")).is_char_device());
    }
}
#[cfg(unix)]
crate::register!(special_export_targets_are_written_through_and_kept);

fn one_file_named_by_two_exports_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("sub")).unwrap();
    let out = osgauge(d)
        .args(MICRO)
        .arg("--export-json")
        .arg(d.join("a"))
        .arg("--export-csv")
        .arg(d.join("sub/../a"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--export-json and --export-csv"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!d.join("a").exists());
    // Nor may an export overwrite the result store.
    let out = osgauge(d)
        .args(MICRO)
        .arg("--export-json")
        .arg(d.join("store.sqlite"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the result store"), "{err}");
}
crate::register!(one_file_named_by_two_exports_is_a_usage_error);

fn bad_labels_are_refused_and_stored_labels_are_printed_safely() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = "x".repeat(65);
    for bad in ["", " ", "red\u{1b}[31m", "two\nlines", long.as_str()] {
        let out = osgauge(d)
            .args(MICRO)
            .args(["--no-store", "--label", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "label {bad:?} accepted");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("osgauge: error: --label: ") && !err.contains('\u{1b}'),
            "{err}"
        );
    }
    // An imported record can still carry anything: printed escaped and cut.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cpu-a.json");
    let mut rec: Value = common::read_json(fixture);
    let evil = format!("evil\u{1b}[31m|`\n{}", "y".repeat(5000));
    rec["label"] = Value::String(evil.clone());
    let file = d.join("evil.json");
    std::fs::write(&file, rec.to_string()).unwrap();
    // `results import` refuses it (exit 2, one line, escaped) …
    let out = osgauge(d)
        .args(["results", "import"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("label") && !err.contains('\u{1b}'), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // … but a store an earlier osgauge wrote may hold it, and files are read directly.
    let stored: osgauge::record::RunRecord = serde_json::from_value(rec.clone()).unwrap();
    osgauge::store::Store::open(&d.join("store.sqlite"))
        .unwrap()
        .import(&stored, false)
        .unwrap();
    // A file of two records: compare names its columns by their labels.
    let mut other = rec.clone();
    other["run_id"] = Value::String("01a20000-0000-7000-8000-000000000001".into());
    other["label"] = Value::String("plain".into());
    let pair = d.join("pair.json");
    std::fs::write(&pair, Value::Array(vec![rec.clone(), other]).to_string()).unwrap();
    let md = d.join("cmp.md");
    let id = stored_runs(d)[0]["run_id"].as_str().unwrap().to_string();
    let (md_arg, pair_arg) = (md.to_str().unwrap(), pair.to_str().unwrap());
    for args in [
        vec!["results", "list"],
        vec!["results", "show", &id],
        vec!["compare", pair_arg, "--export-markdown", md_arg],
    ] {
        let mut c = osgauge(d);
        c.args(&args);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains('\u{1b}'), "{args:?}: raw escape in {text}");
        assert!(text.contains("evil\\u{1b}[31m"), "{args:?}: {text}");
        assert!(
            text.lines().all(|l| l.chars().count() < 400),
            "{args:?}: a line is not bounded:\n{text}"
        );
    }
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(md_text.contains("evil\\\\u{1b}[31m\\|\\`"), "{md_text}");
}
crate::register!(bad_labels_are_refused_and_stored_labels_are_printed_safely);

fn the_footer_counts_the_runs_kept() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // A time bound far below 1000 runs × 5 ms stops the benchmark early, keeping what finished.
    let out = osgauge(dir.path())
        .args([
            "micro",
            "cpu/timer_read",
            "--runs",
            "1000",
            "--run-time",
            "5ms",
        ])
        .args([
            "--timeout",
            "300ms",
            "--no-store",
            "--quiet",
            "--export-json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = common::read_json(&json);
    let kept = v["benchmarks"][0]["metrics"][0]["runs"]
        .as_array()
        .unwrap()
        .len();
    assert!(kept < 1000, "the bound did not cut the runs short");
    let text = String::from_utf8(out.stdout).unwrap();
    let want = if kept == 1 {
        "median of 1 run (of 1000 planned)".to_string()
    } else {
        format!("median of {kept} runs (of 1000 planned)")
    };
    assert!(text.contains(&want), "want {want:?} in:\n{text}");
}
crate::register!(the_footer_counts_the_runs_kept);

#[cfg(target_os = "linux")]
fn dev_stdout_is_written_through_after_the_table() {
    // `--export-csv /dev/stdout > out.txt`: the file keeps the table and gets the CSV after it.
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.txt");
    let file = std::fs::File::create(&out_path).unwrap();
    let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = ino(&out_path);
    let status = osgauge(dir.path())
        .args(MICRO)
        .args(["--quiet", "--no-store", "--export-csv", "/dev/stdout"])
        .stdout(file)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(ino(&out_path), before, "the file was replaced, not written");
    let text = std::fs::read_to_string(&out_path).unwrap();
    let (table, csv) = text.split_once("run_id,").expect("CSV after the table");
    assert!(table.contains("median of 1 run"), "{text}");
    assert!(csv.contains("cpu/timer_read"), "{text}");
}
#[cfg(target_os = "linux")]
crate::register!(dev_stdout_is_written_through_after_the_table);
