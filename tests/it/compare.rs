//! Comparison of runs: verdicts, corrections, summaries, exports and the CI exit code.

use crate::common;

use common::{fixture, fixture_path, osgauge, slowed};
use osgauge::compare::{self, Basis, Options, Verdict, min_p, runs_needed};
use osgauge::record::{BenchmarkResult, MetricResult, RunMetric, RunRecord};
use osgauge::stats;
use osgauge::units::{Better, Unit};

fn named(v: Vec<(&str, osgauge::record::RunRecord)>) -> Vec<(String, osgauge::record::RunRecord)> {
    v.into_iter().map(|(n, r)| (n.to_string(), r)).collect()
}

/// This machine's history as `osgauge calibrate` would leave it: three invocations of the
/// baseline's benchmarks under one label, every figure 1 % apart between them (σ ≈ 1 % between
/// invocations).
fn history_of(base: &RunRecord) -> compare::NoiseHistory {
    compare::NoiseHistory::learn(&calibration(base, 0.01))
}

/// Three invocations of `base` under the label "calibration", every figure `spread` apart.
fn calibration(base: &RunRecord, spread: f64) -> Vec<RunRecord> {
    [1.0 - spread, 1.0, 1.0 + spread]
        .iter()
        .map(|&f| {
            let mut r = base.clone();
            r.run_id = uuid::Uuid::now_v7();
            r.label = Some("calibration".into());
            r.complete = true;
            for b in &mut r.benchmarks {
                for m in &mut b.metrics {
                    for run in &mut m.runs {
                        run.summary.p50 *= f;
                    }
                }
            }
            r
        })
        .collect()
}

/// Store `osgauge calibrate`'s invocations of `base` in the running test's store (a JSON array
/// imported with `osgauge results import`).
fn import_calibration(dir: &std::path::Path, base: &RunRecord) {
    let p = dir.join("calibration.json");
    std::fs::write(&p, serde_json::to_string(&calibration(base, 0.01)).unwrap()).unwrap();
    let out = osgauge()
        .args(["results", "import"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The default options with the baseline's machine calibrated ([`history_of`]).
fn calibrated(base: &RunRecord) -> Options {
    Options {
        history: history_of(base),
        ..Default::default()
    }
}

/// The runs `v` (first = baseline) compared with the default options, on a calibrated machine.
fn compared(v: Vec<(&str, RunRecord)>) -> compare::Comparison {
    let opts = calibrated(&v[0].1);
    compare::compare(&named(v), opts)
}

/// The row of benchmark `id` (its first metric).
fn bench_row<'a>(c: &'a compare::Comparison, id: &str) -> &'a compare::Row {
    c.rows
        .iter()
        .find(|r| r.benchmark == id)
        .unwrap_or_else(|| panic!("no row of {id}"))
}

/// The second column's comparison with the baseline.
fn vs_base(r: &compare::Row) -> &compare::Delta {
    r.cells[1].vs_base.as_ref().expect("compared")
}

fn a_run_compared_with_itself_is_the_same_everywhere() {
    for f in ["cpu-a.json", "cpu-10runs.json"] {
        let a = fixture(f);
        let c = compared(vec![("a", a.clone()), ("a2", a)]);
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
        assert!(c.settings.is_empty(), "{:?}", c.settings);
        assert!(c.rows.iter().all(|r| !r.cells[1].settings_differ));
        assert!(compare::render::text(&c).contains("Settings: no differences"));
        assert!(c.regressions(0.0).is_empty());
    }
}
crate::register!(a_run_compared_with_itself_is_the_same_everywhere);

fn exactly_the_slowed_benchmark_is_flagged_worse() {
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 1.3);
    let c = compared(vec![("base", a.clone()), ("new", b.clone())]);
    let worse: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| vs_base(r).verdict == Verdict::Worse)
        .map(|r| r.benchmark.as_str())
        .collect();
    assert_eq!(worse, vec!["cpu/timer_read"]);
    let row = bench_row(&c, "cpu/timer_read");
    let d = vs_base(row);
    assert!((d.ratio - 1.3).abs() < 1e-9, "{}", d.ratio);
    assert!(d.ci95[0] > 1.02 && d.q < 0.05);
    assert!(
        c.rows
            .iter()
            .all(|r| r.benchmark == "cpu/timer_read" || vs_base(r).verdict == Verdict::Same)
    );
    // The regression threshold is respected.
    assert_eq!(c.regressions(0.05).len(), 1);
    assert_eq!(c.regressions(0.5).len(), 0);
    // Reversed: the same benchmark is better, nothing else.
    let c = compared(vec![("new", b), ("base", a)]);
    let better: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| vs_base(r).verdict == Verdict::Better)
        .map(|r| r.benchmark.as_str())
        .collect();
    assert_eq!(better, vec!["cpu/timer_read"]);
    assert!(c.regressions(0.0).is_empty());
}
crate::register!(exactly_the_slowed_benchmark_is_flagged_worse);

fn one_invocation_each_without_history_has_no_verdict_and_says_how_to_learn_it() {
    // Twice as slow, 10 runs each agreeing closely: the runs of one invocation cannot say
    // whether that is the system or the machine's drift between invocations.
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 2.0);
    let c = compare::compare(
        &named(vec![("a", a.clone()), ("b", b.clone())]),
        Options::default(),
    );
    let d = vs_base(bench_row(&c, "cpu/timer_read"));
    assert_eq!(d.verdict, Verdict::NoiseUnknown, "{d:?}");
    assert_eq!(d.noise, compare::Noise::Unknown);
    assert!((d.ratio - 2.0).abs() < 1e-9);
    assert!(d.detectable.is_none());
    assert!(c.regressions(0.0).is_empty());
    let note = c.power.as_deref().expect("a note at the top");
    assert!(note.contains("osgauge calibrate"), "{note}");
    let text = compare::render::text(&c);
    let at = text.find("NOTE: ").expect(&text);
    assert!(at < text.find("cpu/timer_read").unwrap(), "{text}");
    assert!(
        text.contains("~ (u)") && text.contains("(u) no verdict"),
        "{text}"
    );
    // The same machine calibrated: the change is found.
    let c = compared(vec![("a", a), ("b", b)]);
    assert_eq!(
        vs_base(bench_row(&c, "cpu/timer_read")).verdict,
        Verdict::Worse
    );
    assert!(c.power.is_none());
}
crate::register!(one_invocation_each_without_history_has_no_verdict_and_says_how_to_learn_it);

fn noise_band_hides_small_significant_differences() {
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 1.01);
    // A quiet machine: invocations 0.02 % apart.
    let quiet = Options {
        history: compare::NoiseHistory::learn(&calibration(&a, 0.0002)),
        ..Default::default()
    };
    let c = compare::compare(
        &named(vec![("a", a.clone()), ("b", b.clone())]),
        quiet.clone(),
    );
    let row = bench_row(&c, "cpu/timer_read");
    let d = vs_base(row);
    assert!(d.q < 0.05, "the shift is significant: {d:?}");
    assert_eq!(d.verdict, Verdict::Same, "but inside ±2 %");
    assert_eq!(
        d.detectable,
        Some(0.02),
        "what ~ excludes is at least the band"
    );
    let opts = Options {
        noise: 0.001,
        ..quiet
    };
    let c = compare::compare(&named(vec![("a", a.clone()), ("b", b.clone())]), opts);
    let row = bench_row(&c, "cpu/timer_read");
    assert_eq!(vs_base(row).verdict, Verdict::Worse);
    // On a machine whose invocations are 1 % apart the same 1 % is not significant, and `~`
    // says how large a change it could have missed.
    let c = compared(vec![("a", a), ("b", b)]);
    let d = vs_base(bench_row(&c, "cpu/timer_read"));
    assert!(d.q >= 0.05 && d.detectable.unwrap() > 0.02, "{d:?}");
    assert!(compare::render::text(&c).contains("~ within ±"));
}
crate::register!(noise_band_hides_small_significant_differences);

fn n_runs_geomean_and_missing_benchmarks() {
    let a = fixture("cpu-10runs.json");
    let mut b = slowed(&a, "cpu/io_syscall", 1.5);
    b.benchmarks.retain(|x| x.id != "cpu/null_syscall");
    let c2 = slowed(&a, "cpu/timer_read", 1.2);
    let c = compared(vec![("a", a.clone()), ("b", b), ("c", c2)]);
    assert_eq!(c.columns.len(), 3);
    let row = bench_row(&c, "cpu/null_syscall");
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
crate::register!(n_runs_geomean_and_missing_benchmarks);

fn a_figure_not_measured_carries_its_reason_not_no_finished_runs() {
    let a = fixture("cpu-10runs.json");
    let mut b = slowed(&a, "cpu/io_syscall", 1.0);
    let bench = b
        .benchmarks
        .iter_mut()
        .find(|x| x.id == "cpu/io_syscall")
        .unwrap();
    let m = &mut bench.metrics[0];
    m.runs.clear();
    m.not_measured = Some("machine busy: the idle baseline moved".into());
    let c = compared(vec![("a", a), ("b", b)]);
    let row = bench_row(&c, "cpu/io_syscall");
    assert_eq!(
        row.cells[1].note.as_deref(),
        Some("not measured: machine busy: the idle baseline moved")
    );
}
crate::register!(a_figure_not_measured_carries_its_reason_not_no_finished_runs);

fn the_mann_whitney_floor_is_still_known_for_run_level_tests() {
    // The policy study still tests runs within one invocation with Mann-Whitney.
    assert!(min_p(3, 3) >= 0.05, "{}", min_p(3, 3));
    assert!(min_p(4, 4) < 0.05);
    assert_eq!(runs_needed(), 4);
}
crate::register!(the_mann_whitney_floor_is_still_known_for_run_level_tests);

fn verdicts_of_a_run_on_a_busier_machine_are_marked() {
    let a = fixture("cpu-10runs.json");
    let mut b = slowed(&a, "cpu/io_syscall", 2.0);
    let ct = b
        .environment
        .start
        .cpu_time
        .get_or_insert_with(Default::default);
    ct.window_busy_pct = Some(95.0);
    let base_busy = a
        .environment
        .start
        .cpu_time
        .as_ref()
        .and_then(|c| c.window_busy_pct)
        .unwrap_or(0.0);
    let mut a = a;
    a.environment
        .start
        .cpu_time
        .get_or_insert_with(Default::default)
        .window_busy_pct = Some(base_busy.min(10.0));
    let c = compared(vec![("quiet", a.clone()), ("busy", b)]);
    let d = c.columns[1].environment_differs.as_deref().expect("marked");
    assert!(d.contains("CPUs busy 95 %"), "{d}");
    let row = bench_row(&c, "cpu/io_syscall");
    assert_eq!(vs_base(row).verdict, compare::Verdict::Worse);
    assert!(compare::render::verdict_text(&row.cells[1]).ends_with("(e)"));
    let text = compare::render::text(&c);
    assert!(
        text.contains("NOTE: [1] ran on a machine in another state"),
        "{text}"
    );
    // The same machine state: nothing marked.
    let c = compared(vec![
        ("a", a.clone()),
        ("b", slowed(&a, "cpu/io_syscall", 2.0)),
    ]);
    assert!(c.columns[1].environment_differs.is_none());
    assert!(
        !compare::render::verdict_text(&bench_row(&c, "cpu/io_syscall").cells[1]).contains("(e)")
    );
}
crate::register!(verdicts_of_a_run_on_a_busier_machine_are_marked);

fn differing_machine_fields_are_listed() {
    let a = fixture("cpu-a.json");
    let mut b = fixture("cpu-b.json");
    b.machine.os = "windows".into();
    b.machine.kernel_release = Some("10.0.26100".into());
    b.tool.profile = "debug".into();
    let c = compared(vec![("a", a), ("b", b)]);
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
crate::register!(differing_machine_fields_are_listed);

fn cli_fail_on_regression_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("cpu-10runs.json");
    let b = slowed(&a, "cpu/timer_read", 1.3);
    let base = fixture_path("cpu-10runs.json");
    let new = dir.path().join("new.json");
    std::fs::write(&new, serde_json::to_string_pretty(&b).unwrap()).unwrap();
    import_calibration(dir.path(), &a);
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
    assert_eq!(csv.lines().next().unwrap().split(',').count(), 23);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("cpu/timer_read,") && l.ends_with(",worse,,"))
    );
    let v: serde_json::Value = common::read_json(js);
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
crate::register!(cli_fail_on_regression_and_exports);

// ---- SYNTHETIC interactivity records (machine, environment and config of the real cpu-a
// fixture; one value per run for each metric), to check verdicts on the values interactivity
// cells produce: counts with a baseline of 0, neutral verification figures, applied settings.

/// A metric with one value per run.
fn per_run_metric(name: &str, unit: Unit, better: Better, values: &[f64]) -> MetricResult {
    let runs: Vec<RunMetric> = values
        .iter()
        .map(|&v| RunMetric {
            summary: stats::summarize(&[v]).unwrap(),
            histogram: None,
            histogram_scale: None,
            histogram_offset: None,
            round: None,
        })
        .collect();
    let per: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
    MetricResult {
        name: name.into(),
        unit,
        better,
        description: "synthetic test data".into(),
        summary: stats::across_runs(&per),
        runs,
        not_measured: None,
        bound: None,
    }
}

/// Settings of the synthetic cell as asked and as applied (read back), plus observations that
/// differ from run to run and are not settings.
fn audio_params(applied_policy: &str, loadavg: f64) -> serde_json::Map<String, serde_json::Value> {
    let v = serde_json::json!({
        "task": "audio", "load": "burn", "policy": "fifo", "priority": 50, "nice": null,
        "cpus": [0], "work_mode": "fixed", "duration_s": 1.0,
        "task_sched": {"policy": applied_policy, "priority": 50, "nice": null},
        "task_affinity": [0],
        "loadavg1_before": loadavg, "periods": 1000, "steal_pct": 0.1,
    });
    v.as_object().unwrap().clone()
}

/// `interactivity/audio/burn` with `dropped` dropped frames and `task_cpu` % task CPU per run;
/// latency, deadlines met, desired CPU and load CPU the same in every record.
fn audio_record(label: &str, dropped: &[f64], task_cpu: &[f64]) -> RunRecord {
    let n = dropped.len();
    let mut r = fixture("cpu-a.json");
    r.run_id = uuid::Uuid::now_v7();
    r.label = Some(label.into());
    r.config.runs = n as u32;
    r.config.command_line = vec!["osgauge".into(), "interactivity".into()];
    let lat = [52_000.0, 51_000.0, 53_000.0, 52_500.0, 51_500.0, 52_200.0];
    r.benchmarks = vec![BenchmarkResult {
        id: "interactivity/audio/burn".into(),
        suite: "interactivity".into(),
        title: "audio task under burn load".into(),
        params: audio_params("SCHED_FIFO", 0.5),
        measured: Default::default(),
        run_facts: Vec::new(),
        adaptive: None,
        metrics: vec![
            per_run_metric("latency", Unit::Nanoseconds, Better::Lower, &lat[..n]),
            per_run_metric(
                "deadlines_met",
                Unit::Percent,
                Better::Higher,
                &vec![99.0; n],
            ),
            per_run_metric(
                "desired_cpu",
                Unit::Percent,
                Better::Higher,
                &vec![100.0; n],
            ),
            per_run_metric("dropped_frames", Unit::Count, Better::Lower, dropped),
            per_run_metric("task_cpu", Unit::Percent, Better::Neutral, task_cpu),
            per_run_metric("load_cpu", Unit::Percent, Better::Neutral, &vec![97.0; n]),
        ],
        warnings: vec![],
        error: None,
        wall_s: 1.0,
    }];
    r
}

fn row<'a>(c: &'a compare::Comparison, metric: &str) -> &'a compare::Row {
    c.rows
        .iter()
        .find(|r| r.metric == metric)
        .unwrap_or_else(|| panic!("no row {metric}"))
}

fn delta<'a>(c: &'a compare::Comparison, metric: &str) -> &'a compare::Delta {
    row(c, metric).cells[1].vs_base.as_ref().expect("compared")
}

fn zero_dropped_frames_to_five_is_worse_and_a_regression() {
    let a = audio_record("zero", &[0.0; 5], &[10.0; 5]);
    let b = audio_record("five", &[5.0, 4.0, 5.0, 6.0, 5.0], &[10.0; 5]);
    let c = compared(vec![("a", a.clone()), ("b", b.clone())]);
    let d = delta(&c, "dropped_frames");
    // No ratio from 0: judged by the difference, in the metric's unit.
    assert_eq!(d.basis, Basis::Difference);
    assert!(d.ratio.is_nan());
    assert_eq!(d.difference, 5.0);
    assert!(d.difference_ci95[0] > 0.0, "{d:?}");
    // The calibration saw 0 dropped frames in every invocation: only the runs' own spread
    // is left, and 5 ± 0.7 is far from 0.
    assert!(d.p < 0.01 && d.q < 0.05, "{d:?}");
    assert_eq!(d.verdict, Verdict::Worse);
    // Everything else is unchanged.
    for m in ["latency", "deadlines_met", "desired_cpu"] {
        assert_eq!(delta(&c, m).verdict, Verdict::Same, "{m}");
    }
    // A regression at any threshold (no relative size from a baseline of 0).
    for t in [0.0, 0.05, 10.0] {
        let regs = c.regressions(t);
        assert_eq!(regs.len(), 1, "threshold {t}");
        assert_eq!(regs[0].0.metric, "dropped_frames");
        assert_eq!(regs[0].2, f64::INFINITY);
    }
    let line = compare::render::regression_text(&c, regs_row(&c), 1);
    assert!(line.contains("0 → 5.000 (Δ +5.000) worse"), "{line}");
    // The geomean leaves out the count compared by difference (and the neutral metrics).
    assert_eq!(c.suites[0].metrics, 3);
    assert_eq!(c.suites[0].geomean, vec![Some(1.0)]);
    let text = compare::render::text(&c);
    assert!(text.contains("Δ +5.000 [+"), "{text}");
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    // Reversed: 5 → 0 is better, no regression.
    let c = compared(vec![("b", b), ("a", a)]);
    assert_eq!(delta(&c, "dropped_frames").verdict, Verdict::Better);
    assert_eq!(delta(&c, "dropped_frames").difference, -5.0);
    assert!(c.regressions(0.0).is_empty());
}
crate::register!(zero_dropped_frames_to_five_is_worse_and_a_regression);

fn regs_row(c: &compare::Comparison) -> &compare::Row {
    row(c, "dropped_frames")
}

fn an_unknown_noise_is_no_verdict_in_every_export() {
    let a = audio_record("zero", &[0.0; 3], &[10.0; 3]);
    let b = audio_record("five", &[5.0; 3], &[10.0; 3]);
    let c = compare::compare(&named(vec![("a", a), ("b", b)]), Options::default());
    let d = delta(&c, "dropped_frames");
    assert!(d.p.is_nan());
    assert_eq!(d.verdict, Verdict::NoiseUnknown);
    assert!(c.regressions(0.0).is_empty());
    let text = compare::render::text(&c);
    let line = text
        .lines()
        .find(|l| l.starts_with("interactivity/audio/burn.dropped_frames"))
        .unwrap();
    assert!(line.contains("p=— ~ (u)"), "{line}");
    let v: serde_json::Value = serde_json::from_str(&compare::render::json(&c).unwrap()).unwrap();
    let cell = &v["rows"][3]["cells"][1]["vs_base"];
    assert_eq!(v["rows"][3]["metric"], "dropped_frames");
    assert!(cell["p"].is_null());
    assert_eq!(cell["noise"], "unknown");
    assert_eq!(cell["basis"], "difference");
    assert!(cell["ratio"].is_null());
    assert_eq!(cell["verdict"], "noise_unknown");
    let csv = compare::render::csv(&c).unwrap();
    assert!(csv.contains("noise_unknown"), "{csv}");
    assert!(compare::render::markdown(&c).contains("~ (u)"));
}
crate::register!(an_unknown_noise_is_no_verdict_in_every_export);

/// A copy of `r` whose `bench` per-run medians are `values` (one value per run).
fn with_values(r: &RunRecord, bench: &str, better: Better, values: &[f64]) -> RunRecord {
    let mut out = r.clone();
    out.run_id = uuid::Uuid::now_v7();
    let b = out.benchmarks.iter_mut().find(|b| b.id == bench).unwrap();
    let name = b.metrics[0].name.clone();
    b.metrics = vec![per_run_metric(&name, Unit::Nanoseconds, better, values)];
    out
}

fn negative_values_get_the_right_direction() {
    let base = fixture("cpu-10runs.json");
    let neg: Vec<f64> = (0..10).map(|i| -5.45 + 0.01 * i as f64).collect();
    let pos: Vec<f64> = (0..10).map(|i| 10.45 + 0.01 * i as f64).collect();
    for (better, up) in [
        (Better::Lower, Verdict::Worse),
        (Better::Higher, Verdict::Better),
    ] {
        let down = if up == Verdict::Worse {
            Verdict::Better
        } else {
            Verdict::Worse
        };
        let a = with_values(&base, "cpu/timer_read", better, &neg);
        let b = with_values(&base, "cpu/timer_read", better, &pos);
        let c = compared(vec![("a", a.clone()), ("b", b.clone())]);
        let r = bench_row(&c, "cpu/timer_read");
        let d = vs_base(r);
        assert_eq!(d.basis, Basis::Difference);
        assert!((d.difference - 15.9).abs() < 1e-9, "{}", d.difference);
        assert_eq!(d.verdict, up, "{better:?} −5.45 → +10.45");
        // Left out of the geomean, which stays 1 over the unchanged metrics.
        assert_eq!(c.suites[0].geomean, vec![Some(1.0)]);
        if better == Better::Lower {
            let regs = c.regressions(0.05);
            assert_eq!(regs.len(), 1);
            assert!((regs[0].2 - 15.9 / (neg[4] + neg[5]).abs() * 2.0).abs() < 1e-9);
        } else {
            assert!(c.regressions(0.0).is_empty());
        }
        let c = compared(vec![("b", b), ("a", a)]);
        let r = bench_row(&c, "cpu/timer_read");
        assert_eq!(vs_base(r).verdict, down);
    }
}
crate::register!(negative_values_get_the_right_direction);

fn neutral_metrics_are_shown_but_never_judged() {
    // task_cpu doubles (significant: 5 vs 5 fully separated) — it is a verification figure.
    let a = audio_record("a", &[0.0; 5], &[10.0, 10.1, 10.2, 10.3, 10.4]);
    let b = audio_record("b", &[0.0; 5], &[20.0, 20.2, 20.4, 20.6, 20.8]);
    let c = compared(vec![("a", a.clone()), ("b", b)]);
    let r = row(&c, "task_cpu");
    assert_eq!(r.better, Better::Neutral);
    let d = vs_base(r);
    assert!((d.ratio - 2.0).abs() < 1e-12 && d.p < 0.01);
    assert_eq!(d.verdict, Verdict::Neutral);
    assert_eq!(d.q, d.p, "not in the BH family");
    assert!(c.regressions(0.0).is_empty());
    // The geomean counts latency, deadlines_met and desired_cpu only: still exactly 1.
    assert_eq!(c.suites[0].metrics, 3);
    assert_eq!(c.suites[0].geomean, vec![Some(1.0)]);
    let text = compare::render::text(&c);
    let line = text
        .lines()
        .find(|l| l.starts_with("interactivity/audio/burn.task_cpu"))
        .unwrap();
    assert!(
        line.starts_with("interactivity/audio/burn.task_cpu ≈"),
        "{line}"
    );
    assert!(
        line.contains("+100.0 %") && line.ends_with("neutral"),
        "{line}"
    );
    assert!(
        !line.contains("better") && !line.contains("worse"),
        "{line}"
    );
    let md = compare::render::markdown(&c);
    assert!(
        md.contains("| interactivity/audio/burn.task_cpu ≈ |"),
        "{md}"
    );
    let csv = compare::render::csv(&c).unwrap();
    assert!(
        csv.lines().any(
            |l| l.starts_with("interactivity/audio/burn,task_cpu,%,neutral,1,")
                && l.ends_with(",neutral,,")
        ),
        "{csv}"
    );
    let html = osgauge::report::render(
        &named(vec![
            ("a", a.clone()),
            ("b", audio_record("b", &[0.0; 5], &[20.0; 5])),
        ]),
        Options::default(),
    )
    .unwrap();
    assert!(html.contains("(neutral: not judged)"));
    assert!(html.contains("2 neutral, not judged"));
    // A record written before `neutral` existed (task_cpu stored as higher-is-better) is read
    // the same way.
    let mut old = audio_record("old", &[0.0; 5], &[20.0, 20.1, 20.2, 20.3, 20.4]);
    for m in &mut old.benchmarks[0].metrics {
        if m.better == Better::Neutral {
            m.better = Better::Higher;
        }
    }
    let c = compared(vec![("a", a), ("old", old)]);
    assert_eq!(row(&c, "task_cpu").better, Better::Neutral);
    assert_eq!(delta(&c, "task_cpu").verdict, Verdict::Neutral);
}
crate::register!(neutral_metrics_are_shown_but_never_judged);

fn settings_differences_are_listed_and_the_cells_marked() {
    let a = audio_record("fifo", &[0.0; 5], &[10.0; 5]);
    let mut b = audio_record("refused", &[0.0; 5], &[10.0; 5]);
    // The real-time policy was refused in b: same id, same policy asked, another one applied.
    b.benchmarks[0].params = audio_params("SCHED_OTHER", 1.7);
    b.benchmarks[0]
        .params
        .insert("realtime_denied".into(), "no CAP_SYS_NICE".into());
    b.config.command_line.push("--policy=fifo".into());
    let c = compared(vec![("a", a.clone()), ("b", b.clone())]);
    let fields: Vec<(&str, &[String])> = c
        .settings
        .iter()
        .map(|d| (d.field.as_str(), d.benchmarks.as_slice()))
        .collect();
    let cell = ["interactivity/audio/burn".to_string()];
    assert_eq!(
        fields,
        vec![
            ("config.command_line", &[][..]),
            ("realtime_denied", &cell[..]),
            ("task_sched.policy", &cell[..]),
        ],
        "observations (loadavg1_before) are not settings"
    );
    assert_eq!(c.settings[2].values, ["SCHED_FIFO", "SCHED_OTHER"]);
    assert!(
        c.rows
            .iter()
            .all(|r| r.cells[1].settings_differ && !r.cells[0].settings_differ)
    );
    let text = compare::render::text(&c);
    let at = text.find("Settings that differ").unwrap();
    assert!(at < text.find("interactivity/audio/burn.latency").unwrap());
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("task_sched.policy"))
        .unwrap();
    assert!(
        line.ends_with("SCHED_FIFO  |  SCHED_OTHER   in interactivity/audio/burn"),
        "{line}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("interactivity/audio/burn.latency"))
        .unwrap();
    assert!(
        line.contains("~ within ±") && line.ends_with(" (s)"),
        "{line}"
    );
    assert!(text.contains("(s) this benchmark ran with settings"));
    let md = compare::render::markdown(&c);
    assert!(md.contains("## Settings that differ"));
    assert!(
        md.contains("| task_sched.policy | interactivity/audio/burn | SCHED_FIFO | SCHED_OTHER |"),
        "{md}"
    );
    assert!(md.contains(" (s) |"), "{md}");
    let v: serde_json::Value = serde_json::from_str(&compare::render::json(&c).unwrap()).unwrap();
    assert_eq!(v["settings"][2]["field"], "task_sched.policy");
    assert_eq!(v["rows"][0]["cells"][1]["settings_differ"], true);
    assert_eq!(v["rows"][0]["cells"][0]["settings_differ"], false);
    let csv = compare::render::csv(&c).unwrap();
    assert!(csv.lines().any(|l| l.ends_with(",true,same,,")), "{csv}");
    let html =
        osgauge::report::render(&named(vec![("a", a), ("b", b)]), Options::default()).unwrap();
    assert!(html.contains("<h3>Settings that differ</h3>"));
    assert!(html.contains("<th>task_sched.policy</th>"));
    assert!(html.contains(" (s)"));
}
crate::register!(settings_differences_are_listed_and_the_cells_marked);

fn cli_zero_baseline_regression_exits_3_once_the_machine_is_calibrated() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, r: &RunRecord| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_string_pretty(r).unwrap()).unwrap();
        p
    };
    let a5 = write(
        "dropped-0.json",
        &audio_record("zero", &[0.0; 5], &[10.0; 5]),
    );
    let b5 = write(
        "dropped-5.json",
        &audio_record("five", &[5.0, 4.0, 5.0, 6.0, 5.0], &[10.0; 5]),
    );
    let js = dir.path().join("c.json");
    // Without this machine's noise: no verdict, no regression, and the way to learn it.
    let out = osgauge()
        .arg("compare")
        .arg(&a5)
        .arg(&b5)
        .args(["--fail-on-regression", "5%"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("~ (u)") && stdout.contains("osgauge calibrate"),
        "{stdout}"
    );
    import_calibration(dir.path(), &audio_record("zero", &[0.0; 5], &[10.0; 5]));
    let out = osgauge()
        .arg("compare")
        .arg(&a5)
        .arg(&b5)
        .args(["--fail-on-regression", "5%", "--export-json"])
        .arg(&js)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    eprintln!(
        "$ osgauge compare dropped-0.json dropped-5.json --fail-on-regression 5%\n{stdout}{stderr}exit {:?}",
        out.status.code()
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stderr.contains("interactivity/audio/burn.dropped_frames [")
            && stderr.contains("0 → 5.000 (Δ +5.000) worse"),
        "{stderr}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("interactivity/audio/burn.dropped_frames"))
        .unwrap();
    assert!(
        line.contains("Δ +5.000") && line.ends_with("worse"),
        "{line}"
    );
    let v: serde_json::Value = common::read_json(&js);
    assert_eq!(v["rows"][3]["cells"][1]["vs_base"]["verdict"], "worse");
    assert_eq!(v["rows"][3]["cells"][1]["vs_base"]["difference"], 5.0);
}
crate::register!(cli_zero_baseline_regression_exits_3_once_the_machine_is_calibrated);

fn measured_facts_in_params_are_not_settings() {
    let a = fixture("cpu-a.json");
    let mut b = a.clone();
    let mut a = a;
    let id = a.benchmarks[0].id.clone();
    for (r, ns, lvl, q) in [(&mut a, 1.5, 32768, 0.98), (&mut b, 1.7, 49152, 1.02)] {
        let p = &mut r.benchmarks[0].params;
        p.insert(
            "curve".into(),
            serde_json::json!([{"size": 4096, "ns_per_load": ns}]),
        );
        p.insert(
            "levels".into(),
            serde_json::json!([{"level": 1, "ends_at": lvl}]),
        );
        p.insert("work_calibration_quick_check".into(), serde_json::json!(q));
        p.insert("time_wait_before".into(), serde_json::json!(lvl));
    }
    let c = compared(vec![("a", a.clone()), ("b", b.clone())]);
    assert!(
        c.settings.is_empty(),
        "measured facts listed as settings: {:?}",
        c.settings
    );
    assert!(c.rows.iter().all(|r| !r.cells[1].settings_differ));
    // A real setting that differs is still listed, and only it.
    b.benchmarks[0]
        .params
        .insert("pinned_cpu".into(), serde_json::json!(1));
    a.benchmarks[0]
        .params
        .insert("pinned_cpu".into(), serde_json::json!(0));
    let c = compared(vec![("a", a), ("b", b)]);
    let fields: Vec<&str> = c.settings.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(fields, vec!["pinned_cpu"], "{:?}", c.settings);
    assert_eq!(c.settings[0].benchmarks, vec![id]);
    assert_eq!(compare::param_kind("curve"), compare::ParamKind::Measured);
    assert_eq!(
        compare::param_kind("pinned_cpu"),
        compare::ParamKind::Setting
    );
}
crate::register!(measured_facts_in_params_are_not_settings);

/// `r` with `bench`'s first metric marked as a bound in every run.
fn bounded(r: &RunRecord, bench: &str, kind: osgauge::record::BoundKind) -> RunRecord {
    let mut out = r.clone();
    let b = out.benchmarks.iter_mut().find(|b| b.id == bench).unwrap();
    let m = &mut b.metrics[0];
    m.bound = Some(osgauge::record::MetricBound {
        kind,
        reason: "the ramp ran out of steps".into(),
        runs: m.runs.len() as u32,
    });
    out
}

fn a_change_involving_a_bound_is_never_judged_nor_in_the_geomean() {
    use osgauge::record::BoundKind;
    let base = fixture("cpu-10runs.json");
    let low: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
    let high: Vec<f64> = (0..10).map(|i| 400.0 + i as f64).collect();
    let a = with_values(&base, "cpu/timer_read", Better::Higher, &low);
    let b = with_values(&base, "cpu/timer_read", Better::Higher, &high);
    // Measured vs measured: a 4× difference, 10 vs 10 fully separated, is judged.
    let c = compared(vec![("a", a.clone()), ("b", b.clone())]);
    assert_eq!(
        vs_base(bench_row(&c, "cpu/timer_read")).verdict,
        Verdict::Better
    );
    // Either side, or both, a bound: not judged, out of the geomean and the correction, said.
    for (x, y) in [
        (bounded(&a, "cpu/timer_read", BoundKind::AtLeast), b.clone()),
        (a.clone(), bounded(&b, "cpu/timer_read", BoundKind::AtLeast)),
        (
            bounded(&a, "cpu/timer_read", BoundKind::AtLeast),
            bounded(&b, "cpu/timer_read", BoundKind::AtLeast),
        ),
    ] {
        let c = compared(vec![("a", x), ("b", y)]);
        let r = bench_row(&c, "cpu/timer_read");
        assert_eq!(vs_base(r).verdict, Verdict::Bound);
        assert!(c.regressions(0.0).is_empty());
        assert_eq!(
            c.suites[0].geomean,
            vec![Some(1.0)],
            "the others are unchanged"
        );
        assert!(
            c.footnotes.iter().any(|f| f.starts_with("bound:")),
            "{:?}",
            c.footnotes
        );
        let t = compare::render::value_text(r, &r.cells[1]);
        let t0 = compare::render::value_text(r, &r.cells[0]);
        assert!(t.starts_with("≥ ") || t0.starts_with("≥ "), "{t0} / {t}");
        let text = compare::render::text(&c);
        assert!(text.contains("bound"), "{text}");
    }
}
crate::register!(a_change_involving_a_bound_is_never_judged_nor_in_the_geomean);
