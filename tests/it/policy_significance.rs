//! "Which policy differences are significant" end to end: a tiny policy study (2 processes, 1 ms
//! of work, 3 runs) writes the section into its HTML and Markdown exports and the
//! `--export-significance` file, and `osgauge report` of the stored run shows it too.

use crate::common;

use std::path::Path;
use std::process::Output;

fn osgauge(dir: &Path, args: &[&str]) -> Output {
    common::osgauge_std()
        .args(args)
        .env("OSGAUGE_STORE", dir.join("store.sqlite"))
        .env("OSGAUGE_CACHE_DIR", dir)
        .env("TMPDIR", dir)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const STUDY: &[&str] = &[
    "policy",
    "--work",
    "cpu",
    "--procs",
    "2",
    "--runs",
    "3",
    "--warmup",
    "0",
    "--work-time",
    "1ms",
    "--quiet",
];

/// Two policies every OS has (Linux batch, Windows below-normal, macOS QoS utility) and how the
/// tables name their pair.
const POLICIES: (&str, &str) = if cfg!(windows) {
    ("other,below-normal", "other vs below-normal")
} else if cfg!(target_os = "macos") {
    ("other,qos-utility", "other vs qos-utility")
} else {
    ("other,batch", "other vs batch")
};

/// The HTML section: heading, method, the note that 3 runs cannot reach significance, one table
/// row per metric for the pair, and a grid chart.
fn check_html(html: &str, pair: &str) {
    let i = html
        .find("<section id=\"policy-significance\">")
        .unwrap_or_else(|| panic!("no significance section"));
    let sec = &html[i..i + html[i..].find("</section>").unwrap()];
    assert!(sec.contains("<h2>Which policy differences are significant</h2>"));
    assert!(sec.contains("Mann-Whitney") && sec.contains("Benjamini-Hochberg"));
    assert!(sec.contains("no difference can be significant"), "{sec}");
    for metric in ["makespan", "turnaround"] {
        assert!(
            sec.contains(&format!(
                "<tr><td>cpu/2</td><td>{metric}</td><td>{pair}</td>"
            )),
            "{metric}: {sec}"
        );
    }
    assert!(sec.contains("<svg") && sec.contains("<title>cpu/2 · makespan: "));
}

fn a_study_exports_the_significance_table_everywhere() {
    let d = tempfile::tempdir().unwrap();
    let (html, md, js, csv) = (
        d.path().join("r.html"),
        d.path().join("r.md"),
        d.path().join("sig.json"),
        d.path().join("sig.csv"),
    );
    let mut args = STUDY.to_vec();
    args.extend([
        "--policy",
        POLICIES.0,
        "--export-html",
        html.to_str().unwrap(),
        "--export-markdown",
        md.to_str().unwrap(),
        "--export-significance",
        js.to_str().unwrap(),
        "--label",
        "sigtest",
    ]);
    let o = osgauge(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(POLICIES.1), "{stdout}");

    check_html(&std::fs::read_to_string(&html).unwrap(), POLICIES.1);

    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("## Which policy differences are significant"),
        "{md}"
    );
    assert!(md.contains("| work/procs | metric | a vs b | median a | median b | b / a | p | q |"));
    assert!(
        md.contains(&format!("| cpu/2 | makespan | {} | ", POLICIES.1)),
        "{md}"
    );

    let v: serde_json::Value = common::read_json(&js);
    assert_eq!(v["schema"], "osgauge.policy-significance/1");
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() >= 2, "{v}");
    for r in rows {
        assert_eq!(
            (r["runs_a"].as_u64(), r["runs_b"].as_u64()),
            (Some(3), Some(3))
        );
        // 3 vs 3 runs: p ≥ 0.1, so nothing can be significant.
        assert!(r["p"].as_f64().unwrap() >= 0.1 - 1e-12, "{r}");
        assert_eq!(r["significant"], false);
    }

    // The stored run: `osgauge report` gives the same section.
    let rep = d.path().join("rep.html");
    let o = osgauge(
        d.path(),
        &["report", "sigtest", "--export-html", rep.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    check_html(&std::fs::read_to_string(&rep).unwrap(), POLICIES.1);

    // CSV by extension, from a one-policy study: a header and the note on stdout, no rows.
    let mut args = STUDY.to_vec();
    args.extend([
        "--policy",
        "other",
        "--no-store",
        "--export-significance",
        csv.to_str().unwrap(),
    ]);
    let o = osgauge(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("note: One policy only, nothing to compare: cpu/2 (other)"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 1, "{csv}");
    assert!(csv.starts_with("run_id,group,metric,unit,a,b,median_a,median_b,ratio_b_a,"));
}
crate::register!(a_study_exports_the_significance_table_everywhere);

fn the_significance_file_is_checked_before_the_study() {
    let d = tempfile::tempdir().unwrap();
    let same = d.path().join("x.json");
    let mut args = STUDY.to_vec();
    args.extend([
        "--policy",
        POLICIES.0,
        "--export-json",
        same.to_str().unwrap(),
        "--export-significance",
        same.to_str().unwrap(),
    ]);
    let o = osgauge(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--export-json and --export-significance both write"),
        "{}",
        text(&o)
    );
    let missing = d.path().join("no/such/dir/s.json");
    let mut args = STUDY.to_vec();
    args.extend(["--export-significance", missing.to_str().unwrap()]);
    let o = osgauge(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--export-significance: directory"),
        "{}",
        text(&o)
    );
    assert!(!same.exists() && !d.path().join("store.sqlite").exists());
}
crate::register!(the_significance_file_is_checked_before_the_study);
