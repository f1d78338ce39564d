//! Comparison of runs: verdicts, corrections, summaries, exports and the CI exit code.

mod common;

use assert_cmd::Command;
use common::{fixture, fixture_path, slowed, truncated};
use osgauge::compare::{self, Options, Verdict, min_p, runs_needed};

fn named(v: Vec<(&str, osgauge::model::RunRecord)>) -> Vec<(String, osgauge::model::RunRecord)> {
    v.into_iter().map(|(n, r)| (n.to_string(), r)).collect()
}

#[test]
fn a_run_compared_with_itself_is_the_same_everywhere() {
    for f in ["cpu-a.json", "cpu-10runs.json"] {
        let a = fixture(f);
        let c = compare::compare(
            &named(vec![("a", a.clone()), ("a2", a)]),
            Options::default(),
        );
        assert!(!c.rows.is_empty());
        for r in &c.rows {
            let d = r.cells[1].vs_base.as_ref().expect("compared");
            assert_eq!(d.ratio, 1.0, "{}", r.benchmark);
            assert_eq!(d.verdict, Verdict::Same, "{} {:?}", r.benchmark, d);
            assert!(d.p > 0.5);
        }
        for s in &c.suites {
            assert_eq!(s.geomean, vec![Some(1.0)]);
        }
        assert!(c.differences.is_empty(), "{:?}", c.differences);
        assert!(c.regressions(0.0).is_empty());
    }
}

#[test]
fn exactly_the_slowed_benchmark_is_flagged_worse() {
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 1.3);
    let c = compare::compare(
        &named(vec![("base", a.clone()), ("new", b.clone())]),
        Options::default(),
    );
    let worse: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.cells[1].vs_base.as_ref().unwrap().verdict == Verdict::Worse)
        .map(|r| r.benchmark.as_str())
        .collect();
    assert_eq!(worse, vec!["cpu/timer_read"]);
    let row = c
        .rows
        .iter()
        .find(|r| r.benchmark == "cpu/timer_read")
        .unwrap();
    let d = row.cells[1].vs_base.as_ref().unwrap();
    assert!((d.ratio - 1.3).abs() < 1e-9, "{}", d.ratio);
    assert!(d.ci95[0] > 1.02 && d.q < 0.05);
    assert!(c.rows.iter().all(|r| r.benchmark == "cpu/timer_read"
        || r.cells[1].vs_base.as_ref().unwrap().verdict == Verdict::Same));
    // The regression threshold is respected.
    assert_eq!(c.regressions(0.05).len(), 1);
    assert_eq!(c.regressions(0.5).len(), 0);
    // Reversed: the same benchmark is better, nothing else.
    let c = compare::compare(&named(vec![("new", b), ("base", a)]), Options::default());
    let better: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.cells[1].vs_base.as_ref().unwrap().verdict == Verdict::Better)
        .map(|r| r.benchmark.as_str())
        .collect();
    assert_eq!(better, vec!["cpu/timer_read"]);
    assert!(c.regressions(0.0).is_empty());
}

#[test]
fn three_runs_per_side_cannot_detect_anything_and_say_so() {
    assert!(min_p(3, 3) >= 0.05, "{}", min_p(3, 3));
    assert!(min_p(4, 4) < 0.05);
    assert_eq!(runs_needed(), 4);
    let a = truncated(&fixture("cpu-10runs.json"), 3);
    let b = slowed(&a, "cpu/timer_read", 2.0);
    let c = compare::compare(&named(vec![("a", a), ("b", b)]), Options::default());
    let row = c
        .rows
        .iter()
        .find(|r| r.benchmark == "cpu/timer_read")
        .unwrap();
    assert_eq!(
        row.cells[1].vs_base.as_ref().unwrap().verdict,
        Verdict::TooFewRuns
    );
    assert!(
        c.footnotes
            .iter()
            .any(|f| f.contains("need >= 4 runs per side")),
        "{:?}",
        c.footnotes
    );
    let text = compare::render::text(&c);
    assert!(text.contains("~ (a)") && text.contains("need >= 4 runs per side"));
}

#[test]
fn noise_band_hides_small_significant_differences() {
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 1.01);
    let c = compare::compare(
        &named(vec![("a", a.clone()), ("b", b.clone())]),
        Options::default(),
    );
    let row = c
        .rows
        .iter()
        .find(|r| r.benchmark == "cpu/timer_read")
        .unwrap();
    let d = row.cells[1].vs_base.as_ref().unwrap();
    assert!(d.q < 0.05, "the shift is significant: {d:?}");
    assert_eq!(d.verdict, Verdict::Same, "but inside ±2 %");
    let c = compare::compare(&named(vec![("a", a), ("b", b)]), Options { noise: 0.001 });
    let row = c
        .rows
        .iter()
        .find(|r| r.benchmark == "cpu/timer_read")
        .unwrap();
    assert_eq!(
        row.cells[1].vs_base.as_ref().unwrap().verdict,
        Verdict::Worse
    );
}

#[test]
fn n_runs_geomean_and_missing_benchmarks() {
    let a = fixture("cpu-10runs.json");
    let mut b = slowed(&a, "cpu/io_syscall", 1.5);
    b.benchmarks.retain(|x| x.id != "cpu/null_syscall");
    let c2 = slowed(&a, "cpu/timer_read", 1.2);
    let c = compare::compare(
        &named(vec![("a", a.clone()), ("b", b), ("c", c2)]),
        Options::default(),
    );
    assert_eq!(c.columns.len(), 3);
    let row = c
        .rows
        .iter()
        .find(|r| r.benchmark == "cpu/null_syscall")
        .unwrap();
    assert!(row.cells[1].center.is_none() && row.cells[1].vs_base.is_none());
    assert_eq!(row.cells[1].note.as_deref(), Some("not in this run"));
    let s = &c.suites[0];
    // null_syscall is missing from b, so it is left out of every geomean.
    let metrics = a.benchmarks.iter().map(|b| b.metrics.len()).sum::<usize>();
    assert_eq!(s.metrics, metrics - 1);
    let g_b = s.geomean[0].unwrap();
    let g_c = s.geomean[1].unwrap();
    let k = s.metrics as f64;
    assert!((g_b - 1.5f64.powf(1.0 / k)).abs() < 1e-9, "{g_b}");
    assert!((g_c - 1.2f64.powf(1.0 / k)).abs() < 1e-9, "{g_c}");
}

#[test]
fn differing_machine_fields_are_listed() {
    let a = fixture("cpu-a.json");
    let mut b = fixture("cpu-b.json");
    b.machine.os = "windows".into();
    b.machine.kernel_release = Some("10.0.26100".into());
    b.tool.profile = "debug".into();
    let c = compare::compare(&named(vec![("a", a), ("b", b)]), Options::default());
    let fields: Vec<&str> = c.differences.iter().map(|d| d.field.as_str()).collect();
    for f in ["machine.os", "machine.kernel_release", "tool.profile"] {
        assert!(fields.contains(&f), "{f} not in {fields:?}");
    }
    // Volatile fields (load, timestamps) are not "differences of the machine".
    assert!(
        !fields
            .iter()
            .any(|f| f.contains("load_avg") || f.contains("taken_at"))
    );
    let text = compare::render::text(&c);
    let diff_at = text.find("fields that differ").unwrap();
    let table_at = text.find("cpu/timer_read").unwrap();
    assert!(diff_at < table_at, "differences come first");
}

fn osgauge() -> Command {
    let mut c = Command::cargo_bin("osgauge").unwrap();
    c.env(
        "OSGAUGE_STORE",
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compare-tests.sqlite"),
    );
    c.env(
        "OSGAUGE_CACHE_DIR",
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compare-tests-cache"),
    );
    c
}

#[test]
fn cli_fail_on_regression_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 1.3);
    let base = fixture_path("cpu-10runs.json");
    let new = dir.path().join("new.json");
    std::fs::write(&new, serde_json::to_string_pretty(&b).unwrap()).unwrap();
    let (md, csv, js) = (
        dir.path().join("c.md"),
        dir.path().join("c.csv"),
        dir.path().join("c.json"),
    );
    let out = osgauge()
        .arg("compare")
        .arg(&base)
        .arg(&new)
        .args(["--fail-on-regression", "5%", "--export-markdown"])
        .arg(&md)
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-json")
        .arg(&js)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cpu/timer_read") && err.contains("+30.0 % worse"),
        "{err}"
    );
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("| cpu/timer_read |") && md.contains("worse"));
    let csv = std::fs::read_to_string(csv).unwrap();
    assert_eq!(csv.lines().next().unwrap().split(',').count(), 16);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("cpu/timer_read,") && l.ends_with(",worse,"))
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(js).unwrap()).unwrap();
    assert_eq!(v["columns"].as_array().unwrap().len(), 2);
    // Threshold above the change: exit 0. Self-comparison: exit 0.
    osgauge()
        .arg("compare")
        .arg(&base)
        .arg(&new)
        .args(["--fail-on-regression", "40%"])
        .assert()
        .code(0);
    osgauge()
        .arg("compare")
        .arg(&base)
        .arg(&base)
        .args(["--fail-on-regression", "0%"])
        .assert()
        .code(0);
    // Usage errors stay 2.
    osgauge()
        .args(["compare", "--noise", "abc", "x", "y"])
        .assert()
        .code(2);
    osgauge().arg("compare").arg(&base).assert().code(2);
    osgauge()
        .args(["compare", "no-such-run-label"])
        .arg(&base)
        .assert()
        .code(2);
}
