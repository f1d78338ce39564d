//! The result store: round trips, lookup, migrations, concurrency, and runs cut short.

use crate::common;

use std::path::Path;
#[cfg(unix)]
use std::time::{Duration, Instant};

use common::{TINY_MICRO, fixture, fixture_path, osgauge_on as osgauge};
use osgauge::store::{self, ImportOutcome, Origin, Resolved, Store};

fn records_round_trip_exactly(db: &Path, _dir: &Path) {
    let s = Store::open(db).unwrap();
    let latest = if common::is_pg(db) {
        store::postgres::SCHEMA_VERSION
    } else {
        store::sqlite::SCHEMA_VERSION
    };
    assert_eq!(s.schema_version().unwrap(), latest);
    let a = fixture("cpu-a.json");
    s.save(&a, Origin::Measured).unwrap();
    let back = s.get(&a.run_id.to_string()).unwrap().unwrap();
    assert_eq!(back, a);
    // The exported JSON is byte-identical to the file `--export-json` wrote.
    let text = osgauge::export::json::render(&back).unwrap();
    assert_eq!(
        text,
        std::fs::read_to_string(fixture_path("cpu-a.json")).unwrap()
    );
}

fn resolve_by_id_label_and_prefix_and_delete(db: &Path, _dir: &Path) {
    let s = Store::open(db).unwrap();
    let a = fixture("cpu-a.json");
    let b = fixture("cpu-b.json");
    let mut a2 = a.clone();
    a2.run_id = uuid::Uuid::now_v7();
    a2.started = b.started + chrono::Duration::seconds(5);
    for r in [&a, &b, &a2] {
        s.save(r, Origin::Measured).unwrap();
    }
    let ida = a.run_id.to_string();
    assert_eq!(s.resolve(&ida).unwrap(), Resolved::One(ida.clone(), None));
    assert_eq!(
        s.resolve("fixture-b").unwrap(),
        Resolved::One(b.run_id.to_string(), None)
    );
    // A label used twice: the most recent run, with a note.
    match s.resolve("fixture-a").unwrap() {
        Resolved::One(id, Some(note)) => {
            assert_eq!(id, a2.run_id.to_string());
            assert!(note.contains("2 runs"));
        }
        x => panic!("{x:?}"),
    }
    assert_eq!(
        s.resolve(&b.run_id.to_string()[..20]).unwrap(),
        Resolved::One(b.run_id.to_string(), None)
    );
    // The two fixtures were made a second apart: their common id prefix is ambiguous.
    let (ia, ib) = (a.run_id.to_string(), b.run_id.to_string());
    let common: String = ia
        .chars()
        .zip(ib.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(common.len() >= 4, "{common}");
    assert!(matches!(s.resolve(&common).unwrap(), Resolved::Ambiguous(v) if v.len() >= 2));
    assert_eq!(s.resolve("nothing-like-it").unwrap(), Resolved::NotFound);
    assert!(s.delete(&ida).unwrap());
    assert!(!s.delete(&ida).unwrap());
    assert_eq!(s.list().unwrap().len(), 2);
}

fn delete_refuses_a_label_of_several_runs_and_asks_for_yes_off_a_terminal(db: &Path, _dir: &Path) {
    let s = Store::open(db).unwrap();
    let a = fixture("cpu-a.json");
    // Two runs with one label and the same start time: "the most recent" would be arbitrary.
    let mut a2 = a.clone();
    a2.run_id = uuid::Uuid::now_v7();
    for r in [&a, &a2] {
        s.save(r, Origin::Measured).unwrap();
    }
    drop(s);
    let out = osgauge(db)
        .args(["results", "delete", "--yes", "fixture-a"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("label of 2 runs")
            && err.contains(&a.run_id.to_string())
            && err.contains(&a2.run_id.to_string()),
        "{err}"
    );
    // Not on a terminal and no --yes: refused, exit 2, nothing deleted.
    let id = a.run_id.to_string();
    let out = osgauge(db)
        .args(["results", "delete", &id])
        .write_stdin("y\n")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("add --yes"), "{err}");
    let s = Store::open_read_only(db).unwrap().unwrap();
    assert_eq!(s.list().unwrap().len(), 2, "nothing was deleted");
    drop(s);
    // By id with --yes: that one run.
    osgauge(db)
        .args(["results", "delete", "--yes", &id])
        .assert()
        .success()
        .stdout(predicates::str::contains(format!("deleted run {id}")));
    let s = Store::open_read_only(db).unwrap().unwrap();
    assert_eq!(s.list().unwrap().len(), 1);
}

fn import_is_idempotent_and_refuses_silent_overwrites(db: &Path, _dir: &Path) {
    let s = Store::open(db).unwrap();
    let a = fixture("cpu-a.json");
    assert_eq!(s.import(&a, false).unwrap(), ImportOutcome::Added);
    assert_eq!(s.import(&a, false).unwrap(), ImportOutcome::AlreadyStored);
    let mut changed = a.clone();
    changed.label = Some("renamed".into());
    assert!(s.import(&changed, false).is_err());
    assert_eq!(s.import(&changed, true).unwrap(), ImportOutcome::Replaced);
    assert_eq!(s.list().unwrap()[0].origin, "imported");
    let mut bad = a.clone();
    bad.schema = "osgauge.run/999".into();
    assert!(s.import(&bad, false).is_err());
}

fn a_newer_schema_is_refused_and_migrations_are_kept(db: &Path, _dir: &Path) {
    let p = db.to_path_buf();
    drop(Store::open(&p).unwrap());
    drop(Store::open(&p).unwrap()); // re-opening does not re-run migrations
    common::set_schema_version(&p, 99);
    let e = Store::open(&p).err().expect("must refuse");
    assert!(format!("{e:#}").contains("newer"), "{e:#}");
}

fn concurrent_writers_do_not_lose_or_corrupt_runs(db: &Path, _dir: &Path) {
    let p = db.to_path_buf();
    let base = fixture("cpu-a.json");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let p = p.clone();
            let base = base.clone();
            std::thread::spawn(move || {
                let s = Store::open(&p).unwrap();
                for i in 0..10 {
                    let mut r = base.clone();
                    r.run_id = uuid::Uuid::now_v7();
                    r.label = Some(format!("t{t}-{i}"));
                    s.save(&r, Origin::Measured).unwrap();
                    // Rewrites of the same run, as during a run.
                    s.save(&r, Origin::Measured).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = Store::open(&p).unwrap();
    let rows = s.list().unwrap();
    assert_eq!(rows.len(), 40);
    for r in rows {
        let rec = s.get(&r.run_id).unwrap().unwrap();
        assert_eq!(rec.benchmarks, base.benchmarks);
    }
    common::assert_consistent(&p);
}

fn cli_results_commands(db: &Path, dir: &Path) {
    osgauge(db)
        .args(["results", "import"])
        .arg(fixture_path("cpu-a.json"))
        .arg(fixture_path("cpu-b.json"))
        .assert()
        .success();
    let out = osgauge(db).args(["results", "list"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("fixture-a") && text.contains("fixture-b") && text.contains("imported"),
        "{text}"
    );
    let out = osgauge(db)
        .args(["results", "show", "fixture-b"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("null_syscall")
    );
    let exported = dir.join("a.json");
    osgauge(db)
        .args(["results", "export", "fixture-a", "-o"])
        .arg(&exported)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&exported).unwrap(),
        std::fs::read(fixture_path("cpu-a.json")).unwrap()
    );
    // --store wins over OSGAUGE_STORE.
    let other = dir.join("other.db");
    osgauge(db)
        .args(["results", "list", "--store"])
        .arg(&other)
        .assert()
        .success()
        .stdout(predicates::str::contains("No runs stored"));
    osgauge(db)
        .args(["results", "delete", "--yes", "fixture-a"])
        .assert()
        .success();
    osgauge(db)
        .args(["results", "show", "fixture-a"])
        .assert()
        .code(2);
    // A file that is not a record imports nothing and is a usage error.
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{\"schema\": \"something-else\"}").unwrap();
    osgauge(db)
        .args(["results", "import"])
        .arg(&junk)
        .assert()
        .code(2);
}

fn a_run_is_stored_and_no_store_skips_it(db: &Path, dir: &Path) {
    osgauge(db)
        .args(TINY_MICRO)
        .args(["--quiet", "--label", "tiny"])
        .assert()
        .success();
    osgauge(db)
        .args(TINY_MICRO)
        .args(["--quiet", "--no-store", "--export-html"])
        .arg(dir.join("r.html"))
        .assert()
        .success();
    let s = Store::open(db).unwrap();
    let rows = s.list().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].complete && rows[0].label.as_deref() == Some("tiny"));
    let rec = s.get(&rows[0].run_id).unwrap().unwrap();
    assert!(rec.finished.is_some() && rec.environment.end.is_some());
    assert_eq!(rec.benchmarks.len(), 1);
    // The --no-store run still wrote its HTML report, with its record embedded.
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    let recs = store::parse_records(&html).unwrap();
    assert_eq!(recs.len(), 1);
    assert_ne!(recs[0].run_id, rec.run_id);
    assert!(html.contains("cpu/timer_read"));
}

/// Start a long `micro cpu` run writing to `db`, wait until at least one benchmark is stored.
#[cfg(unix)]
#[allow(clippy::zombie_processes)] // the caller kills and waits for the child it gets back
fn start_and_wait_for_first_benchmark(db: &Path, dir: &Path) -> (std::process::Child, String) {
    let err_file = dir.join("child-stderr.txt");
    let mut child = common::osgauge_std()
        .args([
            "micro",
            "cpu",
            "--runs",
            "3",
            "--run-time",
            "150ms",
            "--quiet",
            "--store",
        ])
        .arg(db)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no benchmark stored in time: {}",
                std::fs::read_to_string(&err_file).unwrap_or_default()
            );
        }
        // Runs are taken in rounds: wait until a round of measured runs is stored.
        if common::store_exists(db)
            && let Ok(s) = Store::open(db)
            && let Ok(rows) = s.list()
            && let Some(r) = rows.first()
            && let Ok(Some(rec)) = s.get(&r.run_id)
            && rec
                .benchmarks
                .iter()
                .any(|b| b.metrics.iter().any(|m| !m.runs.is_empty()))
        {
            return (child, r.run_id.clone());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(unix)]
fn sigkill_mid_run_leaves_a_readable_store_with_finished_benchmarks(db: &Path, dir: &Path) {
    let (mut child, id) = start_and_wait_for_first_benchmark(db, dir);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let s = Store::open(db).unwrap();
    let rows = s.list().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].complete, "a killed run shows as incomplete");
    let rec = s.get(&id).unwrap().unwrap();
    assert!(!rec.complete && rec.finished.is_none());
    // Every benchmark began in the warm-up round; the store holds each with the runs of the
    // rounds finished before the kill (fewer than its 3), every run with its summary.
    let total = osgauge::cli::select(&["cpu".into()]).unwrap().len();
    assert_eq!(rec.benchmarks.len(), total);
    let rounds = rec.config.schedule.as_ref().unwrap().rounds.len();
    assert!(
        rounds >= 2,
        "the warm-up round and a measured one: {rounds}"
    );
    for b in &rec.benchmarks {
        for m in &b.metrics {
            assert!(
                m.runs.len() < 3 && m.runs.len() < rounds,
                "{} {}",
                b.id,
                m.name
            );
            assert!(m.runs.iter().all(|r| r.round.is_some()));
        }
    }
    assert!(rec.benchmarks.iter().any(|b| {
        b.metrics
            .iter()
            .any(|m| !m.runs.is_empty() && m.summary.is_some())
    }));
    common::assert_consistent(db);
    // And it can be shown and compared like any other run.
    osgauge(db)
        .args(["results", "show", &id[..13]])
        .assert()
        .success();
}

#[cfg(unix)]
fn sigint_mid_run_stores_the_interrupted_run(db: &Path, dir: &Path) {
    let (mut child, id) = start_and_wait_for_first_benchmark(db, dir);
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let s = Store::open(db).unwrap();
    let rec = s.get(&id).unwrap().unwrap();
    assert!(!rec.complete);
    assert!(rec.finished.is_some(), "the final record was written");
    assert!(!rec.benchmarks.is_empty());
    let list = store::short_id(&id).to_string();
    let out = osgauge(db).args(["results", "list"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&list) && text.contains("incomplete"),
        "{text}"
    );
}

/// Deleting a run while it is measured (issue 22.10): the delete says the run was unfinished,
/// the measuring osgauge does not bring it back, says why it no longer stores it and exits 1.
#[cfg(unix)]
fn deleting_a_run_being_measured_is_not_silently_undone(db: &Path, dir: &Path) {
    let err_file = dir.join("stderr.txt");
    let json = dir.join("run.json");
    let mut child = common::osgauge_std()
        .args([
            "micro",
            "cpu",
            "--runs",
            "3",
            "--run-time",
            "150ms",
            "--store",
        ])
        .arg(db)
        .arg("--export-json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let id = loop {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no benchmark stored in time");
        }
        if common::store_exists(db)
            && let Ok(Some(s)) = Store::open_read_only(db)
            && let Ok(rows) = s.list()
            && let Some(r) = rows.first()
            && r.benchmarks >= 1
        {
            break r.run_id.clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = osgauge(db)
        .args(["results", "delete", "--yes", &id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("was unfinished"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = child.wait().unwrap();
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(
        err.contains("was deleted from the store") && err.contains("while it was being measured"),
        "{err}"
    );
    // Not brought back; its results are still exported.
    let s = Store::open_read_only(db).unwrap().unwrap();
    assert!(
        s.get_json(&id).unwrap().is_none(),
        "the deleted run came back"
    );
    let rec: serde_json::Value = common::read_json(&json);
    assert_eq!(rec["run_id"], id.as_str());
}

/// A NUL character (U+0000) in a run: PostgreSQL's text and JSONB cannot hold it, so both
/// stores refuse the run alike, with the place of the character, before any of it is written —
/// an import of several runs stores none of them.
fn a_nul_character_is_refused_before_anything_is_written(db: &Path, dir: &Path) {
    let good = fixture("cpu-a.json");
    let mut bad = fixture("cpu-b.json");
    // (A label with one is already refused as a control character; the hostname is free text.)
    bad.machine.hostname = Some("host\u{0}b".into());
    assert_ne!(good.run_id, bad.run_id);
    let file = dir.join("two.json");
    std::fs::write(&file, serde_json::to_string(&[&good, &bad]).unwrap()).unwrap();
    let out = osgauge(db)
        .args(["results", "import"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("its machine.hostname holds a NUL character"),
        "{err}"
    );
    assert!(err.contains(&bad.run_id.to_string()), "{err}");
    let listed = osgauge(db)
        .args(["results", "list", "--json"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    assert_eq!(common::parse_json(&listed.stdout), serde_json::json!([]));
    // Deeper in the record (a benchmark's error text), through the store itself: refused alike.
    let s = Store::open(db).unwrap();
    let mut deep = fixture("cpu-a.json");
    deep.benchmarks[1].error = Some(osgauge::record::BenchError {
        kind: osgauge::record::ErrorKind::Failed,
        message: "child said \u{0}".into(),
    });
    let e = format!("{:#}", s.save(&deep, Origin::Measured).unwrap_err());
    assert!(
        e.contains("benchmarks[1].error.message holds a NUL character"),
        "{e}"
    );
    assert!(s.list().unwrap().is_empty());
    // An escaped backslash before "u0000" is no NUL: stored, and read back exactly.
    let mut lookalike = fixture("cpu-a.json");
    lookalike.label = Some("\\u0000".into());
    s.save(&lookalike, Origin::Measured).unwrap();
    assert_eq!(
        s.get_json(&lookalike.run_id.to_string()).unwrap().unwrap(),
        serde_json::to_string(&lookalike).unwrap()
    );
    common::assert_consistent(db);
}

crate::on_both_stores!(
    a_nul_character_is_refused_before_anything_is_written,
    records_round_trip_exactly,
    resolve_by_id_label_and_prefix_and_delete,
    delete_refuses_a_label_of_several_runs_and_asks_for_yes_off_a_terminal,
    import_is_idempotent_and_refuses_silent_overwrites,
    a_newer_schema_is_refused_and_migrations_are_kept,
    concurrent_writers_do_not_lose_or_corrupt_runs,
    cli_results_commands,
    a_run_is_stored_and_no_store_skips_it,
);

#[cfg(unix)]
crate::on_both_stores!(
    sigkill_mid_run_leaves_a_readable_store_with_finished_benchmarks,
    sigint_mid_run_stores_the_interrupted_run,
    deleting_a_run_being_measured_is_not_silently_undone,
);
