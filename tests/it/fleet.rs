//! The fleet view (`osgauge fleet`, `fleet history`) and the run filters of `results list`, each
//! on a SQLite store in the test's own sandbox and on a PostgreSQL database of a server of its
//! own (`on_both_stores!`; NOT RUN where PostgreSQL is not installed).
//!
//! The machines are EDITED COPIES of the recorded runs in tests/fixtures (real `micro cpu` runs
//! of this machine): their hostname, kernel, label, run id and start time are changed so one
//! store holds "several machines". Histories scale one benchmark's per-run values (`slowed`) to
//! make a series with a known step.

use crate::common;

use chrono::{DateTime, Duration, Utc};
use common::{Lcg, fixture, osgauge, slowed, with_test_sandbox};
use osgauge::record::RunRecord;
use serde_json::Value;
use std::path::Path;

// The same fleet tests on a SQLite file and on a PostgreSQL server of each test's own.
crate::on_both_stores!(
    results_list_filters_by_machine_label_time_and_status,
    fleet_has_a_column_per_machine_and_label_and_marks_the_best,
    fleet_groups_by_kernel_with_a_median_of_medians,
    fleet_status_any_takes_the_newest_run_even_if_interrupted,
    fleet_refuses_what_it_cannot_show,
    history_finds_the_step_and_compares_the_runs_around_it,
);

/// An edited copy of fixture `name` that looks like a run of `host`.
fn on_machine(name: &str, host: &str, kernel: &str, label: &str, started: &str) -> RunRecord {
    let mut r = fixture(name);
    r.run_id = uuid::Uuid::now_v7();
    r.machine.hostname = Some(host.into());
    r.machine.kernel_release = Some(kernel.into());
    r.label = Some(label.into());
    let t: DateTime<Utc> = started.parse().unwrap();
    let took = r.finished.map(|f| f - r.started);
    r.started = t;
    r.finished = took.map(|d| t + d);
    r
}

/// Import `records` into `store` (through `results import`).
fn import(store: &Path, records: &[RunRecord]) {
    let file = with_test_sandbox(|s| s.path().join("import.json"));
    std::fs::write(&file, serde_json::to_string(records).unwrap()).unwrap();
    common::osgauge_on(store)
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
}

fn out_path(name: &str) -> std::path::PathBuf {
    with_test_sandbox(|s| s.path().join(name))
}

fn read_json(p: &std::path::Path) -> Value {
    common::read_json(p)
}

/// Three machines (one with a hostname full of markup), one of them with two labels and an
/// older run, and an interrupted run.
fn fleet_store(store: &Path) -> Vec<RunRecord> {
    let a_old = on_machine(
        "cpu-b.json",
        "host-a",
        "6.12.9",
        "linux-6.18",
        "2026-11-01T10:00:00Z",
    );
    let a = on_machine(
        "cpu-a.json",
        "host-a",
        "6.18.44",
        "linux-6.18",
        "2026-11-20T10:00:00Z",
    );
    let a612 = on_machine(
        "cpu-b.json",
        "host-a",
        "6.12.9",
        "linux-6.12",
        "2026-11-19T10:00:00Z",
    );
    let b = on_machine(
        "cpu-b.json",
        "host-b",
        "6.12.9",
        "linux-6.18",
        "2026-11-20T11:00:00Z",
    );
    let c = on_machine(
        "cpu-10runs.json",
        "<b>host-c</b>&\"x\"",
        "6.12.9",
        "linux-6.18",
        "2026-11-21T10:00:00Z",
    );
    let mut broken = on_machine(
        "cpu-a.json",
        "host-b",
        "6.12.9",
        "linux-6.18",
        "2026-11-22T10:00:00Z",
    );
    broken.complete = false;
    broken.benchmarks.truncate(2);
    let all = vec![a_old, a, a612, b, c, broken];
    import(store, &all);
    all
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

fn results_list_filters_by_machine_label_time_and_status(store: &Path, _dir: &Path) {
    let all = fleet_store(store);
    let id = |i: usize| all[i].run_id.to_string();
    let list = |args: &[&str]| -> Vec<String> {
        let out = common::osgauge_on(store)
            .args(["results", "list", "--json"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        ids(&common::parse_json(&out.stdout))
    };
    assert_eq!(list(&[]).len(), 6);
    assert_eq!(list(&["--machine", "host-a"]), [id(0), id(2), id(1)]);
    assert_eq!(
        list(&["--machine", "host-a", "--machine", "host-b"]).len(),
        5
    );
    assert_eq!(list(&["--label", "linux-6.12"]), [id(2)]);
    assert_eq!(
        list(&["--since", "2026-11-20", "--until", "2026-11-21T10:00:00Z"]),
        [id(1), id(3)]
    );
    assert_eq!(list(&["--status", "incomplete"]), [id(5)]);
    assert_eq!(
        list(&["--status", "complete", "--machine", "host-b"]),
        [id(3)]
    );
    // An age counts back from now: every fixture run is older than a minute.
    assert!(list(&["--since", "1m"]).is_empty());
    // The terminal says how many matched; a bad time is a usage error naming the forms.
    common::osgauge_on(store)
        .args(["results", "list", "--machine", "host-a"])
        .assert()
        .success()
        .stdout(predicates::str::contains("3 of 6 run(s)"));
    common::osgauge_on(store)
        .args(["results", "list", "--since", "yesterday"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("30d"));
}

fn fleet_has_a_column_per_machine_and_label_and_marks_the_best(store: &Path, _dir: &Path) {
    let all = fleet_store(store);
    let (json, csv, md, html) = (
        out_path("f.json"),
        out_path("f.csv"),
        out_path("f.md"),
        out_path("f.html"),
    );
    let out = common::osgauge_on(store)
        .args(["fleet", "--export-json"])
        .arg(&json)
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-md")
        .arg(&md)
        .arg("--export-html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = read_json(&json);
    assert_eq!(f["schema"], "osgauge.fleet/1");
    // The newest complete run of each (machine, label): not host-a's older 6.18 run, not
    // host-b's interrupted one.
    let cols: Vec<(String, String)> = f["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["title"].as_str().unwrap().to_string(),
                c["members"][0]["run_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("<b>host-c</b>&\"x\" · linux-6.18", &all[4]),
        ("host-a · linux-6.12", &all[2]),
        ("host-a · linux-6.18", &all[1]),
        ("host-b · linux-6.18", &all[3]),
    ];
    assert_eq!(
        cols,
        want.iter()
            .map(|(t, r)| (t.to_string(), r.run_id.to_string()))
            .collect::<Vec<_>>()
    );
    assert_eq!(f["columns"][2]["members"][0]["kernel"], "6.18.44");
    // Each figure is the run's own summary; the best is the lowest median (lower is better),
    // marked only when no other column has the same median.
    let recs = [&all[4], &all[2], &all[1], &all[3]];
    let rows = f["suites"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    for row in rows {
        let (bench, metric) = (
            row["benchmark"].as_str().unwrap(),
            row["metric"].as_str().unwrap(),
        );
        let centers: Vec<f64> = recs
            .iter()
            .map(|r| {
                r.benchmark(bench)
                    .unwrap()
                    .metrics
                    .iter()
                    .find(|m| m.name == metric)
                    .unwrap()
                    .summary
                    .as_ref()
                    .unwrap()
                    .center
            })
            .collect();
        for (j, c) in centers.iter().enumerate() {
            assert_eq!(row["cells"][j]["center"].as_f64().unwrap(), *c);
            assert_eq!(
                row["cells"][j]["n"].as_u64().unwrap(),
                recs[j].config.runs as u64
            );
        }
        let min = centers.iter().copied().fold(f64::INFINITY, f64::min);
        let unique = centers.iter().filter(|c| **c == min).count() == 1;
        match row["best"].as_u64() {
            Some(j) => assert!(unique && centers[j as usize] == min, "{bench} {metric}"),
            None => assert!(
                !unique,
                "{bench} {metric}: no best although {min} is unique"
            ),
        }
    }
    // CSV: one line per row and column.
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + 12 * 4);
    // The hostname is record text: escaped in Markdown and HTML, never raw markup.
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("\\<b>host-c\\</b>"), "{md}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("<b>host-c"));
    assert!(page.contains("&lt;b&gt;host-c&lt;/b&gt;&amp;&quot;x&quot;"));
    assert!(page.contains("<svg"), "the grouped bar charts");
    assert_eq!(page.matches("<script").count(), 1, "only the embedded JSON");
}

fn fleet_groups_by_kernel_with_a_median_of_medians(store: &Path, _dir: &Path) {
    let all = fleet_store(store);
    let json = out_path("g.json");
    common::osgauge_on(store)
        .args([
            "fleet",
            "--label",
            "linux-6.18",
            "--group-by",
            "kernel",
            "--export-json",
        ])
        .arg(&json)
        .assert()
        .success()
        .stdout(predicates::str::contains("kernel 6.12.9"));
    let f = read_json(&json);
    let cols = f["columns"].as_array().unwrap();
    let titles: Vec<&str> = cols.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["kernel 6.12.9", "kernel 6.18.44"]);
    // 6.12.9 holds host-c and host-b (label linux-6.18; host-a's 6.12 run is another label).
    assert_eq!(cols[0]["members"].as_array().unwrap().len(), 2);
    let row = f["suites"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["benchmark"] == "cpu/null_syscall")
        .unwrap();
    let center = |r: &RunRecord| {
        r.benchmark("cpu/null_syscall").unwrap().metrics[0]
            .summary
            .as_ref()
            .unwrap()
            .center
    };
    let (b, c) = (center(&all[3]), center(&all[4]));
    let cell = &row["cells"][0];
    assert_eq!(cell["n"], 2);
    assert_eq!(cell["center"].as_f64().unwrap(), (b + c) / 2.0);
    assert_eq!(cell["range"][0].as_f64().unwrap(), b.min(c));
    assert_eq!(cell["range"][1].as_f64().unwrap(), b.max(c));
    assert!(cell["ci95"].is_null());
    assert_eq!(row["cells"][1]["n"], 1);
    // By OS, every label: host-a has a run of two labels in the one group — three machines,
    // four runs, not "4 machines".
    let out = common::osgauge_on(store)
        .args(["fleet", "--group-by", "os"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("3 (4 runs): "), "{text}");
    assert!(!text.contains(" 4: "), "{text}");
}

fn fleet_reads_a_store_and_never_creates_or_changes_one() {
    let missing = out_path("none.sqlite");
    for args in [
        &["fleet"][..],
        &["fleet", "history", "all", "cpu/null_syscall"],
    ] {
        osgauge()
            .env("OSGAUGE_STORE", &missing)
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("no result store"));
        assert!(!missing.exists(), "{args:?} created a store");
    }
    let text = out_path("notes.txt");
    std::fs::write(&text, "not a database\n").unwrap();
    osgauge()
        .env("OSGAUGE_STORE", &text)
        .arg("fleet")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is not an osgauge result store"));
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "not a database\n");
}
crate::register!(fleet_reads_a_store_and_never_creates_or_changes_one);

fn fleet_status_any_takes_the_newest_run_even_if_interrupted(store: &Path, _dir: &Path) {
    let all = fleet_store(store);
    let json = out_path("any.json");
    common::osgauge_on(store)
        .args([
            "fleet",
            "--machine",
            "host-b",
            "--machine",
            "host-a",
            "--label",
            "linux-6.18",
            "--status",
            "any",
            "--export-json",
        ])
        .arg(&json)
        .assert()
        .success();
    let f = read_json(&json);
    assert_eq!(f["columns"].as_array().unwrap().len(), 2);
    let m = &f["columns"][1]["members"][0];
    assert_eq!(m["machine"], "host-b");
    assert_eq!(m["run_id"], all[5].run_id.to_string().as_str());
    assert_eq!(m["complete"], false);
    assert!(
        f["selection"]
            .as_str()
            .unwrap()
            .contains("machine host-b or host-a")
    );
    // Its missing benchmarks are said to be missing, not left blank.
    let rows = f["suites"][0]["rows"].as_array().unwrap();
    let absent = rows.iter().find(|r| r["cells"][1].is_null()).unwrap();
    assert!(!absent["cells"][0].is_null());
    assert_eq!(absent["notes"][1], "not in this run");
}

fn fleet_refuses_what_it_cannot_show(store: &Path, _dir: &Path) {
    fleet_store(store);
    common::osgauge_on(store)
        .args(["fleet", "--machine", "nobody"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no stored run matches"));
    common::osgauge_on(store)
        .args(["fleet", "--group-by", "colour"])
        .assert()
        .code(2);
    common::osgauge_on(store)
        .args(["fleet", "history", "host-a", "cpu/no_such_thing"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cpu/no_such_thing"));
}

/// `n` runs of `host` an hour apart from `start`, benchmark cpu/null_syscall scaled by `level(i)`
/// times ±`noise` (seeded).
fn series(
    host: &str,
    n: usize,
    noise: f64,
    seed: u64,
    level: impl Fn(usize) -> f64,
) -> Vec<RunRecord> {
    let mut rng = Lcg(seed);
    let t0: DateTime<Utc> = "2026-11-01T00:00:00Z".parse().unwrap();
    (0..n)
        .map(|i| {
            let f = level(i) * (1.0 + noise * (2.0 * rng.next() - 1.0));
            let mut r = slowed(&fixture("cpu-10runs.json"), "cpu/null_syscall", f);
            r.machine.hostname = Some(host.into());
            r.label = Some(format!("nightly-{i:02}"));
            r.started = t0 + Duration::hours(i as i64);
            r.finished = Some(r.started + Duration::seconds(30));
            r
        })
        .collect()
}

fn history_finds_the_step_and_compares_the_runs_around_it(store: &Path, _dir: &Path) {
    // host-a: 14 runs, +40 % from the 8th on, ±5 % noise; host-b: 12 flat runs, ±10 % noise.
    let a = series("host-a", 14, 0.05, 7, |i| if i < 8 { 1.0 } else { 1.4 });
    let b = series("host-b", 12, 0.10, 8, |_| 1.0);
    let mut all = a.clone();
    all.extend(b.clone());
    import(store, &all);
    let json = out_path("h.json");
    let html = out_path("h.html");
    let out = common::osgauge_on(store)
        .args([
            "fleet",
            "history",
            "all",
            "cpu/null_syscall",
            "--export-json",
        ])
        .arg(&json)
        .arg("--export-html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let h = read_json(&json);
    assert_eq!(h["schema"], "osgauge.history/1");
    assert_eq!(h["metric"], "call");
    let s = h["series"].as_array().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0]["machine"], "host-a");
    assert_eq!(s[0]["points"].as_array().unwrap().len(), 14);
    let ch = s[0]["changes"].as_array().unwrap();
    assert_eq!(ch.len(), 1, "{ch:?}");
    assert_eq!(ch[0]["index"], 8);
    assert_eq!(ch[0]["before"], a[7].run_id.to_string());
    assert_eq!(ch[0]["after"], a[8].run_id.to_string());
    // The compare verdict between the two runs: 10 runs each, +40 % ± noise — worse.
    assert_eq!(ch[0]["verdict"], "worse");
    assert!(ch[0]["ratio"].as_f64().unwrap() > 1.2);
    let seg = ch[0]["segment_ratio"].as_f64().unwrap();
    assert!((1.25..1.55).contains(&seg), "{seg}");
    // The flat noisy machine: no change point.
    assert_eq!(s[1]["machine"], "host-b");
    assert_eq!(s[1]["changes"].as_array().unwrap().len(), 0);
    // One machine by name gives that machine's series only; the terminal shows the change.
    common::osgauge_on(store)
        .args(["fleet", "history", "host-a", "cpu/null_syscall/call"])
        .assert()
        .success()
        .stdout(predicates::str::contains("change point").and(predicates::str::contains("worse")));
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<svg").count(), 2, "one chart per machine");
}

use predicates::prelude::PredicateBooleanExt;
