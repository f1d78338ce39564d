//! Concurrent `results push` of the same runs into one store: every run copied exactly once,
//! and the copied counts the pushes report add up to the runs (each run is either copied by one
//! push or found already there by the others) — into a PostgreSQL database of a server of the
//! test's own (NOT RUN where PostgreSQL is not installed) and into a SQLite file.

use crate::common;

use common::fixture;
use std::path::Path;

/// `copied` and `already there` from a push's summary line.
fn counts(out: &str) -> (usize, usize) {
    let num = |what: &str| -> usize {
        let at = out
            .find(what)
            .unwrap_or_else(|| panic!("no '{what}' in {out}"));
        out[..at]
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap()
    };
    (num(" copied"), num(" already there"))
}

/// 6 pushes at once of the same 40 runs from one SQLite file into `target`.
fn pushes_add_up(target: &str, dir: &Path) {
    let src = dir.join("src.sqlite");
    let recs: Vec<osgauge::record::RunRecord> = (0..40)
        .map(|i| {
            let mut r = fixture("cpu-a.json");
            r.run_id = uuid::Uuid::now_v7();
            r.label = Some(format!("r{i}"));
            r
        })
        .collect();
    let file = dir.join("runs.json");
    std::fs::write(&file, serde_json::to_string(&recs).unwrap()).unwrap();
    common::osgauge_on(&src)
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
    let children: Vec<std::process::Child> = (0..6)
        .map(|_| {
            common::osgauge_std()
                .args(["results", "push", "--store"])
                .arg(&src)
                .args(["--to", target])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut copied, mut there) = (0, 0);
    for c in children {
        let o = c.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (c, t) = counts(&out);
        copied += c;
        there += t;
    }
    assert_eq!(copied, 40, "copied counts add up to the runs");
    assert_eq!(copied + there, 6 * 40);
    let rows = osgauge::store::Store::open_read_only(Path::new(target))
        .unwrap()
        .unwrap()
        .list()
        .unwrap();
    assert_eq!(rows.len(), 40);
}

#[cfg(unix)]
fn concurrent_pushes_into_postgres_count_each_run_once() {
    let Some(pg) = common::PgServer::start("push-counts") else {
        return;
    };
    let db = pg.new_db();
    let dir = tempfile::tempdir().unwrap();
    pushes_add_up(&db, dir.path());
    common::assert_consistent(Path::new(&db));
}
#[cfg(unix)]
crate::register!(concurrent_pushes_into_postgres_count_each_run_once.path("/usr/lib/postgresql"));

fn concurrent_pushes_into_sqlite_count_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.sqlite");
    pushes_add_up(target.to_str().unwrap(), dir.path());
}
crate::register!(concurrent_pushes_into_sqlite_count_each_run_once);
