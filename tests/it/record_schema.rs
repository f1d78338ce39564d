//! The published JSON Schemas (schema/*.schema.json) hold for what osgauge writes: every run
//! record the tests export (a real quick run's `--export-json`, the same run through `results
//! export` and embedded in its HTML report, the recorded fixtures), the fleet table and a
//! history. The schemas close every object the record defines, so a field added to the record
//! without the schema fails here.

use crate::common;

use common::{TINY_MICRO, fixture, fixture_path, osgauge, slowed, with_test_sandbox};
use serde_json::Value;

fn schema(name: &str) -> jsonschema::Validator {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(name);
    let v: Value = common::read_json(&p);
    jsonschema::validator_for(&v).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every error of `doc` against `v`, with where it is.
fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let e = errors(v, doc);
    assert!(
        e.is_empty(),
        "{what} does not match the schema:\n{}",
        e.join("\n")
    );
}

fn read(p: &std::path::Path) -> Value {
    common::read_json(p)
}

fn recorded_fixtures_match_the_run_schema() {
    let v = schema("osgauge.run-1.schema.json");
    for f in ["cpu-a.json", "cpu-b.json", "cpu-10runs.json"] {
        assert_valid(&v, &read(&fixture_path(f)), f);
    }
}
crate::register!(recorded_fixtures_match_the_run_schema);

fn a_real_run_and_its_exports_match_the_run_schema() {
    let v = schema("osgauge.run-1.schema.json");
    let dir = with_test_sandbox(|s| s.path().to_path_buf());
    let (json, html) = (dir.join("run.json"), dir.join("run.html"));
    osgauge()
        .args(TINY_MICRO)
        .args(["--label", "schema-check", "--export-json"])
        .arg(&json)
        .arg("--export-html")
        .arg(&html)
        .assert()
        .success();
    let rec = read(&json);
    assert_valid(&v, &rec, "micro --export-json");
    // The stored run, as `results export` gives it back.
    let out = osgauge()
        .args(["results", "export", "schema-check"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_valid(&v, &common::parse_json(&out.stdout), "results export");
    // The records embedded in the HTML report.
    let page = std::fs::read_to_string(&html).unwrap();
    let embedded: Value =
        serde_json::from_str(osgauge::embedded::extract_embedded(&page).unwrap()).unwrap();
    for r in embedded.as_array().unwrap() {
        assert_valid(&v, r, "the record embedded in --export-html");
    }
}
crate::register!(a_real_run_and_its_exports_match_the_run_schema);

fn the_run_schema_is_closed_and_typed() {
    let v = schema("osgauge.run-1.schema.json");
    let good = read(&fixture_path("cpu-a.json"));
    // A field the record does not define, anywhere in a closed object.
    let mut extra = good.clone();
    extra["benchmarks"][0]["metrics"][0]["speed"] = 1.into();
    assert!(!errors(&v, &extra).is_empty());
    let mut extra = good.clone();
    extra["surprise"] = true.into();
    assert!(!errors(&v, &extra).is_empty());
    // A metric without its unit, a unit osgauge does not write, a wrong schema name.
    let mut bad = good.clone();
    bad["benchmarks"][0]["metrics"][0]
        .as_object_mut()
        .unwrap()
        .remove("unit");
    assert!(!errors(&v, &bad).is_empty());
    let mut bad = good.clone();
    bad["benchmarks"][0]["metrics"][0]["unit"] = "furlongs".into();
    assert!(!errors(&v, &bad).is_empty());
    let mut bad = good.clone();
    bad["schema"] = "osgauge.run/2".into();
    assert!(!errors(&v, &bad).is_empty());
    // Benchmark params and measured facts are open maps.
    let mut open = good;
    open["benchmarks"][0]["params"]["anything"] = serde_json::json!({"nested": [1, "x"]});
    assert_valid(&v, &open, "a record with a new benchmark parameter");
}
crate::register!(the_run_schema_is_closed_and_typed);

fn fleet_and_history_exports_match_their_schemas() {
    // Edited copies of the recorded fixtures as three machines' runs (see tests/fleet.rs).
    let mut recs = Vec::new();
    for (i, (f, host)) in [
        ("cpu-a.json", "host-a"),
        ("cpu-b.json", "host-b"),
        ("cpu-10runs.json", "host-c"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = fixture(f);
        r.run_id = uuid::Uuid::now_v7();
        r.machine.hostname = Some(host.into());
        r.started += chrono::Duration::minutes(i as i64);
        recs.push(r);
    }
    // A history with a step on host-c (12 runs before the last: with fewer, no split can reach α = 0.01 by
    // permutation — 9 runs have only C(9,4) = 126 ways to split 5 + 4).
    // And a 13th, twice as slow again: `fleet check` calls it a regression.
    for i in 0..13 {
        let mut r = slowed(
            &fixture("cpu-10runs.json"),
            "cpu/null_syscall",
            match i {
                0..6 => 1.0,
                12 => 3.0,
                _ => 1.5,
            },
        );
        r.machine.hostname = Some("host-c".into());
        r.started += chrono::Duration::hours(i + 1);
        recs.push(r);
    }
    let dir = with_test_sandbox(|s| s.path().to_path_buf());
    let file = dir.join("recs.json");
    std::fs::write(&file, serde_json::to_string(&recs).unwrap()).unwrap();
    osgauge()
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
    let run = schema("osgauge.run-1.schema.json");
    for r in &recs {
        assert_valid(&run, &serde_json::to_value(r).unwrap(), "an edited fixture");
    }
    let (fj, gj, hj) = (dir.join("f.json"), dir.join("g.json"), dir.join("h.json"));
    osgauge()
        .args(["fleet", "--export-json"])
        .arg(&fj)
        .assert()
        .success();
    osgauge()
        .args(["fleet", "--group-by", "os", "--export-json"])
        .arg(&gj)
        .assert()
        .success();
    osgauge()
        .args([
            "fleet",
            "history",
            "all",
            "cpu/null_syscall",
            "--export-json",
        ])
        .arg(&hj)
        .assert()
        .success();
    let fleet = schema("osgauge.fleet-1.schema.json");
    assert_valid(&fleet, &read(&fj), "fleet --export-json");
    assert_valid(&fleet, &read(&gj), "fleet --group-by os --export-json");
    let h = read(&hj);
    assert_valid(
        &schema("osgauge.history-1.schema.json"),
        &h,
        "fleet history --export-json",
    );
    assert!(
        !h["series"][2]["changes"].as_array().unwrap().is_empty(),
        "the history has a change point, so its shape is checked too"
    );
    // fleet check: host-c's newest run (twice as slow as the 5 before it) — a regression; the
    // other series too few runs: both outcomes' shapes.
    let cj = dir.join("c.json");
    osgauge()
        .args(["fleet", "check", "--history", "5", "--export-json"])
        .arg(&cj)
        .assert()
        .code(3);
    let c = read(&cj);
    assert_valid(
        &schema("osgauge.fleet-check-1.schema.json"),
        &c,
        "fleet check --export-json",
    );
    let states: Vec<&str> = c["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outcome"]["state"].as_str().unwrap())
        .collect();
    assert!(
        states.contains(&"checked") && states.contains(&"too_few_runs"),
        "{states:?}"
    );
}
crate::register!(fleet_and_history_exports_match_their_schemas);

/// The hook every test's record reader goes through refuses what the schema does not allow (so
/// a record that drifts from the schema fails whichever test exports it).
fn the_shared_record_reader_refuses_a_record_the_schema_does_not_allow() {
    let mut rec = read(&fixture_path("cpu-a.json"));
    rec["not_in_the_schema"] = Value::Bool(true);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.json");
    std::fs::write(&p, rec.to_string()).unwrap();
    common::read_json(&p);
}
crate::register!(
    the_shared_record_reader_refuses_a_record_the_schema_does_not_allow
        .should_panic("does not match schema/osgauge.run-1.schema.json")
);
