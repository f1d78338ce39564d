//! The HTML report: structure, self-containment, re-import, and a look at it in headless Chromium.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{CURVE_ID, LOADS, TASKS, fixture, slowed, with_synthetic};
use osgauge::compare::Options;
use osgauge::record::RunRecord;

/// Three "systems": real cpu fixtures plus SYNTHETIC interactivity / memory-curve results.
fn systems() -> Vec<(String, RunRecord)> {
    let linux = with_synthetic("cpu-10runs.json", "linux-6.18", 1, 1.0);
    let mut win = slowed(
        &with_synthetic("cpu-10runs.json", "win11", 2, 1.6),
        "cpu/null_syscall",
        1.4,
    );
    win.label = Some("win11".into());
    win.machine.os = "windows".into();
    win.machine.os_name = Some("Windows 11 Pro".into());
    win.machine.kernel_release = Some("10.0.26100".into());
    let mut mac = with_synthetic("cpu-a.json", "macos-15", 3, 1.3);
    mac.machine.os = "macos".into();
    mac.machine.os_name = Some("macOS 15.1".into());
    mac.complete = false;
    vec![
        ("linux-6.18".into(), linux),
        ("win11".into(), win),
        ("macos-15".into(), mac),
    ]
}

fn expected_titles() -> Vec<String> {
    let mut t = vec![
        "cpu: Ratio to the baseline per metric".to_string(),
        "mem: Ratio to the baseline per metric".to_string(),
        format!("{CURVE_ID}: latency vs working-set size"),
    ];
    for task in TASKS {
        for stat in ["mean", "p99", "max"] {
            t.push(format!("interactivity {task}: latency {stat} ("));
        }
        t.push(format!("interactivity {task}: deadlines_met (%)"));
    }
    t
}

fn render() -> (Vec<(String, RunRecord)>, String) {
    let runs = systems();
    let html = osgauge::report::render(&runs, Options::default()).unwrap();
    (runs, html)
}

fn report_has_the_expected_sections_and_charts() {
    let (runs, html) = render();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for t in expected_titles() {
        assert!(
            html.contains(&format!("<figcaption>{t}")),
            "missing chart {t}"
        );
    }
    // 3 tasks × (3 latency statistics + deadlines) + a forest per micro suite (cpu, mem) + curve.
    assert_eq!(html.matches("<svg").count(), TASKS.len() * 4 + 3);
    for s in [
        "<h2>Summary</h2>",
        "Systems",
        "Results",
        "Warnings",
        "Windows 11 Pro",
        "macOS 15.1",
        "(incomplete)",
    ] {
        assert!(html.contains(s), "missing {s}");
    }
    // Every load appears as an x label of the grouped charts.
    for l in LOADS {
        assert!(html.contains(&format!(">\n{l}\n</text>")), "x label {l}");
    }
    // The slowed benchmark is flagged, in the run it was slowed in.
    assert!(html.contains("class=\"worse\""));
    // The differing system fields are highlighted.
    assert!(html.contains("<tr class=\"diff\"><th>OS</th>"));
    assert_eq!(runs.len(), 3);
}
crate::register!(report_has_the_expected_sections_and_charts);

/// The synthetic results stand for real benchmarks: every id and metric name is one osgauge
/// produces (`osgauge list` for mem; the full interactivity matrix for interactivity).
fn synthetic_results_use_real_ids_and_metrics() {
    let listed: Vec<serde_json::Value> = serde_json::from_slice(
        &common::osgauge()
            .args(["list", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let metrics_of = |id: &str| -> Option<Vec<String>> {
        let b = listed.iter().find(|b| b["id"] == id)?;
        Some(
            b["metrics"]
                .as_array()?
                .iter()
                .map(|m| m["name"].as_str().unwrap().to_string())
                .collect(),
        )
    };
    let audio_burn = metrics_of("interactivity/audio/burn").expect("listed");
    for b in common::synthetic_benchmarks(1, 1.0) {
        let real = if b.suite == "interactivity" {
            let parts: Vec<&str> = b.id.split('/').collect();
            assert!(
                osgauge::bench::interactivity::TASKS.contains(&parts[1])
                    && osgauge::workload::load::LoadKind::ALL
                        .iter()
                        .any(|l| l.name() == parts[2]),
                "{}",
                b.id
            );
            audio_burn.clone()
        } else {
            metrics_of(&b.id).unwrap_or_else(|| panic!("{} is not listed", b.id))
        };
        for m in &b.metrics {
            assert!(real.contains(&m.name), "{}: no metric {}", b.id, m.name);
        }
    }
}
crate::register!(synthetic_results_use_real_ids_and_metrics);

fn report_is_self_contained() {
    let (_, html) = render();
    let lower = html.to_ascii_lowercase();
    for bad in ["src=", "href=", "url(", "<link", "@import", "<img"] {
        assert!(!lower.contains(bad), "external reference pattern {bad}");
    }
    // The only script is the embedded data block.
    assert_eq!(lower.matches("<script").count(), 1);
    assert!(lower.contains("<script type=\"application/json\""));
    // Any URL in the file is an XML namespace, never fetched.
    for (i, _) in lower.match_indices("http") {
        let s = &lower[i..(i + 40).min(lower.len())];
        assert!(s.starts_with("http://www.w3.org/"), "unexpected URL {s}");
    }
}
crate::register!(report_is_self_contained);

fn embedded_records_round_trip_and_import() {
    let (runs, html) = render();
    let back = osgauge::store::parse_records(&html).unwrap();
    let orig: Vec<RunRecord> = runs.into_iter().map(|(_, r)| r).collect();
    assert_eq!(back, orig);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("report.html");
    std::fs::write(&f, &html).unwrap();
    let db = dir.path().join("s.db");
    common::osgauge()
        .args(["results", "import"])
        .arg(&f)
        .arg("--store")
        .arg(&db)
        .assert()
        .success();
    let s = osgauge::store::Store::open(&db).unwrap();
    assert_eq!(s.list().unwrap().len(), 3);
    // A report is also accepted directly by compare and report.
    let out = dir.path().join("again.html");
    common::osgauge()
        .arg("report")
        .arg(&f)
        .arg("--export-html")
        .arg(&out)
        .arg("--store")
        .arg(&db)
        .assert()
        .success();
    assert!(std::fs::read_to_string(out).unwrap().contains("win11"));
}
crate::register!(embedded_records_round_trip_and_import);

/// A label stored several times is one column, as in `compare`: its verdicts use every
/// invocation, the page says so, and every invocation's record is embedded.
fn a_label_with_several_invocations_is_one_column_of_all_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let s = osgauge::store::Store::open(&db).unwrap();
    for (label, seed) in [("lin", 1), ("lin", 2), ("win", 3)] {
        let r = with_synthetic("cpu-10runs.json", label, seed, 1.0);
        s.save(&r, osgauge::store::Origin::Measured).unwrap();
    }
    let out = dir.path().join("r.html");
    let o = common::osgauge()
        .args(["report", "lin", "win", "--export-html"])
        .arg(&out)
        .arg("--store")
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("3 run(s)"), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("lin: 2 invocations"), "no invocation note");
    assert_eq!(osgauge::store::parse_records(&html).unwrap().len(), 3);
}
crate::register!(a_label_with_several_invocations_is_one_column_of_all_of_them);

fn a_single_run_report_has_no_comparison() {
    let r = fixture("cpu-a.json");
    let html = osgauge::report::render(&[("only".into(), r)], Options::default()).unwrap();
    assert!(!html.contains("Ratio to the baseline"));
    assert!(html.contains("cpu/null_syscall"));
}
crate::register!(a_single_run_report_has_no_comparison);

// ---- headless Chromium: does a person see the report? ----

fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Run headless Chromium on `page` with `extra` arguments; (stdout, stderr).
fn chromium(bin: &Path, profile: &Path, page: &Path, extra: &[&str]) -> (String, String) {
    let url = format!("file://{}", page.display());
    let out = assert_cmd::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Console messages Chromium logged (`...:CONSOLE...] "message", source: ...`).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (be(16), be(20))
}

fn report_renders_in_headless_chromium() {
    let Some(bin) = find_chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed; CI must install it (.ci/run does)");
        }
        osgauge::testing::not_run(
            "report_renders_in_headless_chromium",
            "chromium not installed and CI unset",
        );
        return;
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-chromium");
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let (_, html) = render();
    let page = out_dir.join("report.html");
    std::fs::write(&page, &html).unwrap();

    // The console check must be able to fail: a page with a script error is caught.
    let bad = out_dir.join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>throw new Error('boom')</script></body></html>",
    )
    .unwrap();
    let (_, err) = chromium(&bin, &out_dir.join("profile-bad"), &bad, &["--dump-dom"]);
    assert!(
        console_lines(&err)
            .iter()
            .any(|l| l.contains("Uncaught Error: boom")),
        "console errors are not detected; stderr:\n{err}"
    );

    // The report: the DOM Chromium built shows every chart title, and nothing was logged.
    let (dom, err) = chromium(&bin, &out_dir.join("profile-dom"), &page, &["--dump-dom"]);
    assert!(
        console_lines(&err).is_empty(),
        "console messages: {:?}",
        console_lines(&err)
    );
    for t in expected_titles() {
        assert!(
            dom.contains(&format!("<figcaption>{t}")),
            "chart {t} not in the rendered DOM"
        );
    }
    assert_eq!(dom.matches("<svg").count(), TASKS.len() * 4 + 3);

    // The picture at a laptop's size.
    let shot = out_dir.join("report.png");
    let (_, err) = chromium(
        &bin,
        &out_dir.join("profile-shot"),
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1366,900",
        ],
    );
    assert!(
        console_lines(&err).is_empty(),
        "console messages: {:?}",
        console_lines(&err)
    );
    assert_eq!(png_size(&shot), (1366, 900));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "screenshot looks empty"
    );
    eprintln!("screenshot: {}", shot.display());
}
crate::register!(report_renders_in_headless_chromium.ignore_if(cfg!(windows), "the HTML report is checked in headless Chromium on the Linux host; the Windows test executables run under Wine in CI, where no Windows Chromium exists"));

fn a_single_run_report_opens_with_its_summary_and_charts_and_folds_the_long_tables() {
    // A cpu run with synthetic interactivity cells and a memory curve: tables and charts.
    let mut r = with_synthetic("cpu-10runs.json", "one", 1, 1.0);
    // One neutral figure (as task_cpu or a switch count is).
    r.benchmarks[0].metrics[0].better = osgauge::units::Better::Neutral;
    let html = osgauge::report::render(&[("one".into(), r.clone())], Options::default()).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s}"));
    let summary = at("<section id=\"summary\">");
    let first_chart = at("<svg");
    let tables = at("<section id=\"tables\">");
    assert!(summary < first_chart && first_chart < tables, "order");
    // The summary: a headline figure with its CI, before any chart.
    let s = &html[summary..first_chart];
    assert!(s.contains("null system call") && s.contains(" … "), "{s}");
    // The results and system tables are folded, after the charts.
    let t = &html[tables..];
    assert!(
        t.starts_with("<section id=\"tables\">\n<h2>Tables</h2>\n<details><summary>Results: all ")
    );
    assert!(t.contains("<details><summary>System and environment</summary>"));
    assert!(!html[..tables].contains("<h2>Results</h2>"));
    // Neutral figures say what they are compared against.
    assert!(html.contains("(neutral: not judged)"));
    assert!(html.contains("neutral (≈): informational figures"));
    // A comparison keeps its order (results before the charts).
    let two = osgauge::report::render(
        &[("a".into(), r.clone()), ("b".into(), r)],
        Options::default(),
    )
    .unwrap();
    assert!(!two.contains("<section id=\"tables\">"));
    assert!(two.find("<h2>Results</h2>").unwrap() < two.find("<svg").unwrap());
}
crate::register!(a_single_run_report_opens_with_its_summary_and_charts_and_folds_the_long_tables);

/// The ratio chart reads on a log axis, one chart per suite, and an outlier (180×) is drawn at the
/// edge with its value instead of stretching the axis to 180.
fn the_ratio_chart_is_logarithmic_per_suite_and_clips_outliers_visibly() {
    let a = common::fixture("cpu-10runs.json");
    let b = common::slowed(&a, "cpu/io_syscall", 180.0);
    let runs = vec![("a".to_string(), a), ("b".to_string(), b)];
    let html = osgauge::report::render(&runs, Options::default()).unwrap();
    assert!(
        html.contains("<figcaption>cpu: Ratio to the baseline per metric"),
        "per suite"
    );
    assert!(html.contains("log scale"), "log axis");
    assert!(
        html.contains("▶ 180"),
        "the outlier is marked at the edge with its value"
    );
    // The axis stops at the clip (8), not at 180.
    assert!(!html.contains(">\n180\n</text>") && !html.contains(">180<"));
}
crate::register!(the_ratio_chart_is_logarithmic_per_suite_and_clips_outliers_visibly);

/// Every free-text field of a record (labels, names, OS and CPU strings, titles, methods,
/// warnings, notes, settings and facts — values and the keys of its open maps) set to markup, as
/// an imported record may hold: the report shows it as text, never as markup, and the embedded
/// data block cannot be closed early.
fn hostile_text_in_every_field_of_an_imported_record_stays_text() {
    use serde_json::Value;
    const PAYLOAD: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&";
    // Values that are vocabulary, not text: a record with markup there does not parse.
    const VOCABULARY: &[&str] = &[
        "schema",
        "run_id",
        "started",
        "finished",
        "unit",
        "better",
        "kind",
        "profile",
        "origin",
        "status",
        "bound",
        "arch",
        "os",
        "finished",
        "taken_at",
        "histogram",
        "preset",
    ];
    fn poison(v: &mut Value, key: &str) {
        match v {
            Value::String(s) if !VOCABULARY.contains(&key) => {
                *s = format!("{s}{PAYLOAD}");
            }
            Value::Array(a) => a.iter_mut().for_each(|x| poison(x, key)),
            Value::Object(o) => {
                let open = matches!(key, "params" | "measured" | "notes" | "facts");
                let entries: Vec<(String, Value)> = std::mem::take(o).into_iter().collect();
                for (k, mut x) in entries {
                    poison(&mut x, &k);
                    let k = if open { format!("{k}{PAYLOAD}") } else { k };
                    o.insert(k, x);
                }
            }
            _ => {}
        }
    }
    let runs: Vec<(String, RunRecord)> = systems()
        .into_iter()
        .map(|(name, r)| {
            let mut v = serde_json::to_value(&r).unwrap();
            poison(&mut v, "");
            let r: RunRecord = serde_json::from_value(v).expect("a poisoned record still parses");
            (format!("{name}{PAYLOAD}"), r)
        })
        .collect();
    assert!(
        runs[0].1.label.as_deref().unwrap().contains("<script>"),
        "the payload is in the records"
    );
    let html = osgauge::report::render(&runs, Options::default()).unwrap();
    let lower = html.to_ascii_lowercase();
    // Only the data block opens and closes a script; no payload tag survives as markup.
    assert_eq!(lower.matches("<script").count(), 1, "a second <script");
    assert_eq!(
        lower.matches("</script").count(),
        1,
        "the data block closed early"
    );
    assert!(!lower.contains("<img"), "an <img> tag from the payload");
    // Every copy of the payload's tag is escaped: as HTML text (&lt;) or, in the JSON data
    // block, with its `<` written as a \\u escape.
    let all = html.matches("onerror=alert(2)").count();
    let escaped = html.matches("&lt;img src=x onerror=alert(2)&gt;").count()
        + html.matches("\\u003cimg src=x onerror=alert(2)>").count();
    assert!(all > 0 && all == escaped, "{all} copies, {escaped} escaped");
    // The text is still there, escaped, and the records still round-trip out of the report.
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let back = osgauge::store::parse_records(&html).unwrap();
    let orig: Vec<RunRecord> = runs.into_iter().map(|(_, r)| r).collect();
    assert_eq!(back, orig);
}
crate::register!(hostile_text_in_every_field_of_an_imported_record_stays_text);
