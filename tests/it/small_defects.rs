//! Small defects of the fleet and results commands (issue 41, item 9), each on the real binary in
//! the test's own sandbox: short ids that tell apart runs of one millisecond, `compare` naming a
//! record file by its label and pointing a SQLite store at --store, an escape character in an
//! imported hostname never raw in the HTML, `results list --json` documented.

use crate::common;

use common::{fixture, fixture_path, with_test_sandbox};

fn short_ids_tell_apart_runs_started_in_one_millisecond() {
    let dir = with_test_sandbox(|s| s.path().to_path_buf());
    let store = dir.join("s.sqlite");
    // Two runs whose UUIDv7 timestamps are the same millisecond, a third of another.
    let ids = [
        "019ac1e2-3f4a-7b10-8c2d-aaaaaaaaaaaa",
        "019ac1e2-3f4a-7b10-9d3e-bbbbbbbbbbbb",
        "019ac1e2-3f4b-7000-8000-cccccccccccc",
    ];
    let recs: Vec<osgauge::record::RunRecord> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut r = fixture("cpu-a.json");
            r.run_id = id.parse().unwrap();
            r.label = Some(format!("run-{i}"));
            r
        })
        .collect();
    let file = dir.join("runs.json");
    std::fs::write(&file, serde_json::to_string(&recs).unwrap()).unwrap();
    common::osgauge_on(&store)
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
    let out = common::osgauge_on(&store)
        .args(["results", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let shown: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("019ac1e2"))
        .collect();
    assert_eq!(
        shown,
        [
            "019ac1e2-3f4a-7b10-8",
            "019ac1e2-3f4a-7b10-9",
            "019ac1e2-3f4b"
        ],
        "{text}"
    );
    // Each short id names its run.
    for (short, id) in shown.iter().zip(ids) {
        let out = common::osgauge_on(&store)
            .args(["results", "export", short])
            .output()
            .unwrap();
        assert!(out.status.success(), "{short}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(id), "{short}");
    }
}
crate::register!(short_ids_tell_apart_runs_started_in_one_millisecond);

fn compare_names_a_record_file_by_its_label_and_points_a_store_at_store() {
    let dir = with_test_sandbox(|s| s.path().to_path_buf());
    let out = common::osgauge()
        .arg("compare")
        .arg(fixture_path("cpu-a.json"))
        .arg(fixture_path("cpu-b.json"))
        .arg("--export-json")
        .arg(dir.join("c.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let c = common::read_json(dir.join("c.json"));
    let names: Vec<&str> = c["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fixture-a", "fixture-b"]);
    // A SQLite store given as a run: pointed at --store, not "not UTF-8 text".
    let store = dir.join("results.sqlite");
    common::osgauge_on(&store)
        .args(["results", "import"])
        .arg(fixture_path("cpu-a.json"))
        .assert()
        .success();
    let out = common::osgauge()
        .arg("compare")
        .arg(&store)
        .arg(fixture_path("cpu-b.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is a result store") && err.contains("--store"),
        "{err}"
    );
    assert!(!err.contains("UTF-8"), "{err}");
}
crate::register!(compare_names_a_record_file_by_its_label_and_points_a_store_at_store);

fn an_escape_character_in_a_hostname_is_never_raw_in_html() {
    let dir = with_test_sandbox(|s| s.path().to_path_buf());
    let store = dir.join("s.sqlite");
    let mut r = fixture("cpu-a.json");
    r.machine.hostname = Some("evil\u{1b}[31mhost\u{7}".into());
    let file = dir.join("r.json");
    std::fs::write(&file, serde_json::to_string(&r).unwrap()).unwrap();
    common::osgauge_on(&store)
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
    let report = dir.join("report.html");
    common::osgauge_on(&store)
        .args(["report", "fixture-a", "-o"])
        .arg(&report)
        .assert()
        .success();
    let fleet = dir.join("fleet.html");
    common::osgauge_on(&store)
        .args(["fleet", "--export-html"])
        .arg(&fleet)
        .assert()
        .success();
    for page in [&report, &fleet] {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(
            !html.chars().any(|c| c == '\u{1b}' || c == '\u{7}'),
            "{}",
            page.display()
        );
        assert!(html.contains("evil␛[31mhost␇"), "{}", page.display());
    }
    // The report's embedded record still holds the hostname as it was.
    let back = dir.join("back.sqlite");
    common::osgauge_on(&back)
        .args(["results", "import"])
        .arg(&report)
        .assert()
        .success();
    let out = common::osgauge_on(&back)
        .args(["results", "export", "fixture-a"])
        .output()
        .unwrap();
    let rec: osgauge::record::RunRecord = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        rec.machine.hostname.as_deref(),
        Some("evil\u{1b}[31mhost\u{7}")
    );
}
crate::register!(an_escape_character_in_a_hostname_is_never_raw_in_html);

fn results_list_json_is_documented() {
    let out = common::osgauge()
        .args(["results", "list", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--json") && text.contains("Print the list as JSON"),
        "{text}"
    );
}
crate::register!(results_list_json_is_documented);
