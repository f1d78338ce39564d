//! Machine identity and tags in the fleet view, on a SQLite store and on a PostgreSQL database of
//! a server of its own (`on_both_stores!`; NOT RUN where PostgreSQL is not installed): machines
//! known by their recorded machine id (two containers sharing a hostname stay apart, a renamed
//! host stays one machine, runs from before machine ids join the machine of their hostname),
//! `--where` and `--order-by tag:KEY`, and a store of schema version 1 read as it is and
//! upgraded with its machine ids and tags filled from the records.
//!
//! The runs are EDITED COPIES of a recorded run in tests/fixtures (a real `micro cpu` run).

use crate::common;

use chrono::{DateTime, Duration, Utc};
use osgauge::record::RunRecord;
use serde_json::Value;
use std::path::Path;

crate::on_both_stores!(
    machines_are_known_by_their_id_not_their_hostname,
    runs_are_filtered_and_ordered_by_tags,
    a_version_1_store_is_read_and_upgraded_with_ids_and_tags,
);

const ID_A: &str = "aaaaaaaa11111111aaaaaaaa11111111";
const ID_B: &str = "bbbbbbbb22222222bbbbbbbb22222222";
const ID_R: &str = "cccccccc33333333cccccccc33333333";

/// A copy of the fixture run as a run of `host` (machine id `id`), label `label`, `hours` after
/// 2026-11-01, with `tags`.
fn run(host: &str, id: Option<&str>, label: &str, hours: i64, tags: &[(&str, &str)]) -> RunRecord {
    let mut r = common::fixture("cpu-a.json");
    r.run_id = uuid::Uuid::now_v7();
    r.machine.hostname = Some(host.into());
    r.machine.machine_id = id.map(str::to_string);
    r.label = Some(label.into());
    let t0: DateTime<Utc> = "2026-11-01T00:00:00Z".parse().unwrap();
    r.started = t0 + Duration::hours(hours);
    r.finished = Some(r.started + Duration::seconds(30));
    r.tags = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    r
}

fn import(store: &Path, dir: &Path, records: &[RunRecord]) {
    let file = dir.join(format!("import-{}.json", records[0].run_id));
    std::fs::write(&file, serde_json::to_string(records).unwrap()).unwrap();
    common::osgauge_on(store)
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
}

fn list(store: &Path, args: &[&str]) -> Vec<Value> {
    let out = common::osgauge_on(store)
        .args(["results", "list", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::parse_json(&out.stdout).as_array().unwrap().clone()
}

fn ids(v: &[Value]) -> Vec<String> {
    v.iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

fn machines_are_known_by_their_id_not_their_hostname(store: &Path, dir: &Path) {
    let runs = vec![
        // Two containers that share the hostname "ci".
        run("ci", Some(ID_A), "nightly", 1, &[]),
        run("ci", Some(ID_B), "nightly", 2, &[]),
        // A host renamed from "old-name" to "new-name", and a run of it from before machine ids.
        run("old-name", None, "nightly", 0, &[]),
        run("old-name", Some(ID_R), "nightly", 3, &[]),
        run("new-name", Some(ID_R), "nightly", 4, &[]),
        // A host whose OS id could not be read: known by hostname, and said so.
        run("solo", None, "nightly", 5, &[]),
    ];
    import(store, dir, &runs);
    let id = |i: usize| runs[i].run_id.to_string();
    // The list carries the ids; --machine takes any hostname a machine had, or its id's start.
    let all = list(store, &[]);
    assert_eq!(all.len(), 6);
    assert!(all.iter().any(|r| r["machine_id"] == ID_A));
    assert_eq!(
        ids(&list(store, &["--machine", "new-name"])),
        [id(2), id(3), id(4)]
    );
    assert_eq!(
        ids(&list(store, &["--machine", "old-name"])),
        [id(2), id(3), id(4)]
    );
    assert_eq!(ids(&list(store, &["--machine", "bbbbbbbb"])), [id(1)]);
    assert_eq!(ids(&list(store, &["--machine", "ci"])), [id(0), id(1)]);
    // The fleet table: one column per machine — the containers apart, the renamed host once
    // (its newest run, under its newest name).
    let json = dir.join("fleet.json");
    let out = common::osgauge_on(store)
        .args(["fleet", "--export-json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = common::read_json(&json);
    let titles: Vec<&str> = f["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["ci [aaaaaaaa]", "ci [bbbbbbbb]", "new-name", "solo"]
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no machine id recorded for solo ("), "{err}");
    assert_eq!(f["columns"][2]["members"][0]["run_id"], id(4));
    assert_eq!(f["columns"][2]["members"][0]["machine_id"], ID_R);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ci [aaaaaaaa]"), "{text}");
    // The history of the renamed machine is one series of its three runs.
    let h = dir.join("h.json");
    common::osgauge_on(store)
        .args([
            "fleet",
            "history",
            "new-name",
            "cpu/null_syscall",
            "--export-json",
        ])
        .arg(&h)
        .assert()
        .success();
    let h = common::read_json(&h);
    assert_eq!(h["series"].as_array().unwrap().len(), 1);
    assert_eq!(h["series"][0]["machine"], "new-name");
    assert_eq!(h["series"][0]["points"].as_array().unwrap().len(), 3);
    // Three runs: too few for a change point, and it says so.
    assert_eq!(
        h["series"][0]["no_more_changes"],
        "only 3 run(s); a change point needs at least 6 (3 on either side)"
    );
}

fn runs_are_filtered_and_ordered_by_tags(store: &Path, dir: &Path) {
    // Builds tested out of time order: by start time 100, 99, 101; by build 99, 100, 101.
    let runs = vec![
        run(
            "host-a",
            Some(ID_A),
            "ci",
            1,
            &[("build", "100"), ("rev", "6.18-rc3")],
        ),
        run(
            "host-a",
            Some(ID_A),
            "ci",
            2,
            &[("build", "99"), ("rev", "6.18-rc2")],
        ),
        run(
            "host-a",
            Some(ID_A),
            "ci",
            3,
            &[("build", "101"), ("rev", "6.18-rc3")],
        ),
        run("host-a", Some(ID_A), "ci", 4, &[]),
    ];
    import(store, dir, &runs);
    let id = |i: usize| runs[i].run_id.to_string();
    assert_eq!(
        list(store, &["--where", "build=99"])[0]["tags"]["rev"],
        "6.18-rc2"
    );
    assert_eq!(
        ids(&list(store, &["--where", "rev=6.18-rc3"])),
        [id(0), id(2)]
    );
    assert_eq!(
        ids(&list(
            store,
            &["--where", "rev=6.18-rc3", "--where", "build=101"]
        )),
        [id(2)]
    );
    // Natural order of the tag's values; the run without the tag left out.
    assert_eq!(
        ids(&list(store, &["--order-by", "tag:build"])),
        [id(1), id(0), id(2)]
    );
    // The fleet column is the last run in that order (build 101), not the newest by time.
    let json = dir.join("fleet.json");
    common::osgauge_on(store)
        .args(["fleet", "--order-by", "tag:build", "--export-json"])
        .arg(&json)
        .assert()
        .success();
    let f = common::read_json(&json);
    assert_eq!(f["columns"][0]["members"][0]["run_id"], id(2));
    assert_eq!(f["columns"][0]["members"][0]["tags"]["build"], "101");
    assert!(
        f["selection"]
            .as_str()
            .unwrap()
            .contains("highest tag build")
    );
    // And by time, the newest (the run without tags).
    common::osgauge_on(store)
        .args(["fleet", "--export-json"])
        .arg(&json)
        .assert()
        .success();
    assert_eq!(
        common::read_json(&json)["columns"][0]["members"][0]["run_id"],
        id(3)
    );
    // History in tag order, the tag shown.
    let h = dir.join("h.json");
    let out = common::osgauge_on(store)
        .args(["fleet", "history", "host-a", "cpu/null_syscall"])
        .args(["--order-by", "tag:build", "--export-json"])
        .arg(&h)
        .output()
        .unwrap();
    assert!(out.status.success());
    let h = common::read_json(&h);
    assert_eq!(h["order"], "tag:build");
    let pts: Vec<&str> = h["series"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tags"]["build"].as_str().unwrap())
        .collect();
    assert_eq!(pts, ["99", "100", "101"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("build=101"));
    // Malformed filters and orders are refused before anything is read.
    for bad in [
        ["--where", "build"],
        ["--where", "bad key=1"],
        ["--order-by", "tag:"],
    ] {
        common::osgauge_on(store)
            .args(["fleet"])
            .args(bad)
            .assert()
            .code(2);
    }
}

/// Make a store of schema version 2 look as version 1 made it: the machine id and tag columns
/// (and their indexes) gone, the version set back.
fn downgrade_to_v1(store: &Path) {
    if common::is_pg(store) {
        let mut c = postgres::Client::connect(store.to_str().unwrap(), postgres::NoTls).unwrap();
        c.batch_execute(
            "DROP INDEX runs_machine_id; DROP INDEX runs_tags;
             ALTER TABLE runs DROP COLUMN machine_id, DROP COLUMN tags;
             DROP POLICY osgauge_read ON runs; DROP POLICY osgauge_add ON runs;
             DROP POLICY osgauge_own ON runs; DROP POLICY osgauge_own_delete ON runs;
             DROP POLICY osgauge_read ON run_benchmarks; DROP POLICY osgauge_add ON run_benchmarks;
             DROP POLICY osgauge_own ON run_benchmarks;
             DROP POLICY osgauge_own_delete ON run_benchmarks;
             ALTER TABLE runs DISABLE ROW LEVEL SECURITY, DROP COLUMN stored_by;
             ALTER TABLE run_benchmarks DISABLE ROW LEVEL SECURITY, DROP COLUMN stored_by;
             UPDATE osgauge_schema SET version = 1;",
        )
        .unwrap();
    } else {
        let c = rusqlite::Connection::open(store).unwrap();
        c.execute_batch(
            "DROP INDEX runs_machine_id;
             ALTER TABLE runs DROP COLUMN machine_id;
             ALTER TABLE runs DROP COLUMN tags;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
}

fn a_version_1_store_is_read_and_upgraded_with_ids_and_tags(store: &Path, dir: &Path) {
    // Records with ids and tags (e.g. imported verbatim by an older osgauge) in a v1 store.
    let runs = vec![
        run("ci", Some(ID_A), "x", 1, &[("build", "7")]),
        run("ci", Some(ID_B), "x", 2, &[]),
    ];
    import(store, dir, &runs);
    downgrade_to_v1(store);
    // Read as it is (a reader changes nothing): ids and tags from the records.
    let v = list(store, &["--where", "build=7"]);
    assert_eq!(ids(&v), [runs[0].run_id.to_string()]);
    assert_eq!(v[0]["machine_id"], ID_A);
    assert_eq!(
        osgauge::store::Store::open_read_only(store)
            .unwrap()
            .unwrap()
            .schema_version()
            .unwrap(),
        1
    );
    // The first writer upgrades it; the columns are filled from the records already stored.
    import(
        store,
        dir,
        &[run("ci", Some(ID_A), "x", 3, &[("build", "8")])],
    );
    let s = osgauge::store::Store::open_read_only(store)
        .unwrap()
        .unwrap();
    let latest = if common::is_pg(store) {
        osgauge::store::postgres::SCHEMA_VERSION
    } else {
        osgauge::store::sqlite::SCHEMA_VERSION
    };
    assert_eq!(s.schema_version().unwrap(), latest);
    let rows = s.list().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].machine_id.as_deref(), Some(ID_A));
    assert_eq!(rows[0].tags.get("build").map(String::as_str), Some("7"));
    assert_eq!(rows[1].machine_id.as_deref(), Some(ID_B));
    assert!(rows[1].tags.is_empty());
    assert_eq!(rows[2].tags.get("build").map(String::as_str), Some("8"));
    common::assert_consistent(store);
}

/// A measured run keeps its `--tag`s and its machine id (when this machine has one), in the
/// record and in the store's columns; a malformed tag is refused before anything is measured.
fn a_measured_run_keeps_its_tags_and_machine_id() {
    let dir = common::with_test_sandbox(|s| s.path().to_path_buf());
    let store = dir.join("m.sqlite");
    let rec = dir.join("r.json");
    common::osgauge_on(&store)
        .args(common::TINY_MICRO)
        .args([
            "--quiet",
            "--tag",
            "build=1042",
            "--tag",
            "kernel_rev=v6.18-rc3-7-gabc",
        ])
        .arg("--export-json")
        .arg(&rec)
        .assert()
        .success();
    let r = common::read_json(&rec);
    assert_eq!(r["tags"]["build"], "1042");
    assert_eq!(r["tags"]["kernel_rev"], "v6.18-rc3-7-gabc");
    let id = r["machine"]["machine_id"].as_str();
    match id {
        Some(id) => assert!(id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit())),
        // No OS machine id here: the record says why.
        None => assert!(
            r["machine"]["notes"]["machine_id"]
                .as_str()
                .unwrap()
                .starts_with("unsupported: "),
            "{}",
            r["machine"]["notes"]
        ),
    }
    let rows = list(&store, &["--where", "build=1042"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["machine_id"].as_str(), id);
    assert_eq!(rows[0]["tags"]["kernel_rev"], "v6.18-rc3-7-gabc");
    for bad in ["build", "=1", "a b=1", "build=1\u{1b}"] {
        let out = common::osgauge_on(&store)
            .args(common::TINY_MICRO)
            .args(["--tag", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--tag"),
            "{bad:?}"
        );
    }
    let out = common::osgauge_on(&store)
        .args(common::TINY_MICRO)
        .args(["--tag", "a=1", "--tag", "a=2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(list(&store, &[]).len(), 1, "nothing measured or stored");
}
crate::register!(a_measured_run_keeps_its_tags_and_machine_id);
