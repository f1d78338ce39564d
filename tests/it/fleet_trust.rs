//! A shared PostgreSQL store a team can trust, on a real server of each test's own (NOT RUN
//! where PostgreSQL is not installed): no password in any output, row or export; a mistyped URL
//! refused; a write the database refuses keeps the run locally and it uploads itself; errors
//! named for what they are; reader and writer roles.
#![cfg(unix)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::{PG_PASSWORD, PG_USER, PgServer};
use osgauge::store::Store;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The database name of a test server URL (`…@/NAME?host=…`).
fn db_name(url: &str) -> &str {
    let tail = url.split("@/").nth(1).unwrap();
    tail.split('?').next().unwrap()
}

/// `url` with another user and password.
fn url_as(pg: &PgServer, db: &str, user: &str, pw: &str) -> String {
    format!(
        "postgres://{user}:{pw}@/{db}?host={}",
        pg.socket_dir().display()
    )
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A server of the test's own with a database that holds an osgauge store (one tiny run in it,
/// labelled `label`): the server, the database's URL and its name.
fn server_with_a_store(test: &str, label: &str) -> Option<(PgServer, String, String)> {
    let pg = PgServer::start(test)?;
    let url = pg.new_db();
    let db = db_name(&url).to_string();
    let r = common::osgauge()
        .args(common::TINY_MICRO)
        .args(["--label", label, "--store", &url])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r).1);
    Some((pg, url, db))
}

/// Make database `db` take no writes (new sessions), or take them again.
fn set_read_only(c: &mut postgres::Client, db: &str, on: bool) {
    c.batch_execute(&format!(
        "ALTER DATABASE {db} SET default_transaction_read_only = {}",
        if on { "on" } else { "off" }
    ))
    .unwrap();
}

fn the_password_is_in_no_output_row_or_export_and_a_mistyped_url_is_refused() {
    let Some(pg) = PgServer::start("password-grep") else {
        return;
    };
    let url = pg.new_db();
    let empty = pg.new_db();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = |name: &str| out.join(name);
    let mut outputs: Vec<(String, Output)> = Vec::new();
    let run = |outputs: &mut Vec<(String, Output)>, what: &str, args: &[&str]| {
        let r = common::osgauge().args(args).output().unwrap();
        outputs.push((what.to_string(), r));
    };
    // An empty database and one that does not exist: the commands that said "no result store
    // at postgres://osg:PASSWORD@…".
    for u in [&empty, &url_as(&pg, "absent", PG_USER, PG_PASSWORD)] {
        run(&mut outputs, "fleet (empty)", &["fleet", "--store", u]);
        run(
            &mut outputs,
            "fleet history (empty)",
            &["fleet", "history", "all", "cpu/timer_read", "--store", u],
        );
        run(
            &mut outputs,
            "fleet check (empty)",
            &["fleet", "check", "--store", u],
        );
        run(
            &mut outputs,
            "results list (empty)",
            &["results", "list", "--store", u],
        );
    }
    for label in ["pa", "pb"] {
        let mut args: Vec<String> = common::TINY_MICRO.iter().map(|s| s.to_string()).collect();
        for (flag, file) in [
            ("--export-json", format!("{label}.json")),
            ("--export-csv", format!("{label}.csv")),
            ("--export-markdown", format!("{label}.md")),
            ("--export-html", format!("{label}.html")),
        ] {
            args.push(flag.into());
            args.push(o(&file).display().to_string());
        }
        args.extend([
            "--label".into(),
            label.into(),
            "--store".into(),
            url.clone(),
        ]);
        let r = common::osgauge().args(&args).output().unwrap();
        assert!(r.status.success(), "{}", text(&r).1);
        outputs.push((format!("micro {label}"), r));
    }
    let (oj, oc, om) = (
        o("c.json").display().to_string(),
        o("c.csv").display().to_string(),
        o("c.md").display().to_string(),
    );
    let local = o("pulled.sqlite").display().to_string();
    let report = o("report.html").display().to_string();
    let fleet_html = o("fleet.html").display().to_string();
    let fleet_json = o("fleet.json").display().to_string();
    let hist_html = o("hist.html").display().to_string();
    for (what, args) in [
        ("results list", vec!["results", "list", "--store", &url]),
        (
            "results list --json",
            vec!["results", "list", "--json", "--store", &url],
        ),
        (
            "results show",
            vec!["results", "show", "pa", "--store", &url],
        ),
        (
            "results export",
            vec!["results", "export", "pa", "--store", &url],
        ),
        (
            "compare",
            vec![
                "compare",
                "pa",
                "pb",
                "--store",
                &url,
                "--export-json",
                &oj,
                "--export-csv",
                &oc,
                "--export-markdown",
                &om,
            ],
        ),
        (
            "report",
            vec!["report", "pa", "pb", "--store", &url, "-o", &report],
        ),
        (
            "fleet",
            vec![
                "fleet",
                "--store",
                &url,
                "--export-html",
                &fleet_html,
                "--export-json",
                &fleet_json,
            ],
        ),
        (
            "fleet history",
            vec![
                "fleet",
                "history",
                "all",
                "cpu/timer_read",
                "--store",
                &url,
                "--export-html",
                &hist_html,
            ],
        ),
        ("fleet check", vec!["fleet", "check", "--store", &url]),
        (
            "results pull",
            vec!["results", "pull", "--store", &local, "--from", &url],
        ),
    ] {
        run(&mut outputs, what, &args);
    }
    for (what, r) in &outputs {
        let (so, se) = text(r);
        assert!(
            !so.contains(PG_PASSWORD) && !se.contains(PG_PASSWORD),
            "{what} shows the password:\n{so}{se}"
        );
    }
    // The commands meant to work did (a grep of empty outputs proves nothing).
    for (what, r) in &outputs[8..] {
        assert!(r.status.success(), "{what}: {}", text(r).1);
    }
    let files = files_under(dir.path());
    assert!(files.len() >= 13, "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !contains_bytes(&bytes, PG_PASSWORD.as_bytes()),
            "{} holds the password",
            f.display()
        );
    }
    // Every stored row, every column.
    let mut c = pg.client(db_name(&url));
    for table in ["runs", "run_benchmarks", "osgauge_schema"] {
        let n: i64 = c
            .query_one(
                &format!("SELECT count(*) FROM {table} t WHERE t::text LIKE '%' || $1 || '%'"),
                &[&PG_PASSWORD],
            )
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{table} holds the password");
    }
    // A mistyped scheme: refused with a hint, nothing created where it would have gone.
    let cwd = tempfile::tempdir().unwrap();
    for bad in [
        format!("postgre://{PG_USER}:{PG_PASSWORD}@/x"),
        format!("postgres:/{PG_USER}:{PG_PASSWORD}@/x"),
        format!("postgres//{PG_USER}:{PG_PASSWORD}@/x"),
        format!(" {url}"),
    ] {
        let r = common::osgauge()
            .current_dir(cwd.path())
            .args(common::TINY_MICRO)
            .args(["--store", &bad])
            .output()
            .unwrap();
        let (so, se) = text(&r);
        assert_eq!(r.status.code(), Some(2), "{bad}: {se}");
        assert!(
            se.contains("did you mean") || se.contains("white space"),
            "{se}"
        );
        assert!(
            !so.contains(PG_PASSWORD) && !se.contains(PG_PASSWORD),
            "{se}"
        );
        assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "{bad}");
    }
}
crate::register!(
    the_password_is_in_no_output_row_or_export_and_a_mistyped_url_is_refused
        .path("/usr/lib/postgresql")
);

/// The runs of the store at `url`, by label.
fn labels(url: &str) -> Vec<String> {
    let s = Store::open_read_only(Path::new(url)).unwrap().unwrap();
    s.list()
        .unwrap()
        .into_iter()
        .filter_map(|r| r.label)
        .collect()
}

fn a_write_the_database_refuses_keeps_the_run_locally_and_the_next_command_uploads_it() {
    let Some((pg, url, db)) = server_with_a_store("refused-write", "first") else {
        return;
    };
    let local: PathBuf = common::with_test_sandbox(|s| s.store());
    let micro = |label: &str| {
        common::osgauge()
            .args(common::TINY_MICRO)
            .args(["--label", label, "--store", &url])
            .output()
            .unwrap()
    };
    let mut c = pg.client("postgres");
    // 1. A read-only database.
    set_read_only(&mut c, &db, true);
    let r = micro("ro");
    let (_, err) = text(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("takes no writes"), "{err}");
    assert!(!err.contains("database's owner"), "{err}");
    assert!(err.contains("kept in the local store"), "{err}");
    assert!(err.contains("the next osgauge command that opens"), "{err}");
    assert!(err.contains("osgauge results push --store"), "{err}");
    assert!(!err.contains("keeps nothing"), "{err}");
    let l = Store::open_read_only(&local).unwrap().unwrap();
    let kept = l.list().unwrap();
    let ro = kept
        .iter()
        .find(|r| r.label.as_deref() == Some("ro"))
        .expect("kept locally");
    assert!(ro.complete);
    assert_eq!(labels(&url), ["first"]);
    // 2. Writable again: the next command that opens the store uploads it and says so.
    set_read_only(&mut c, &db, false);
    let r = common::osgauge()
        .args(["results", "list", "--store", &url])
        .output()
        .unwrap();
    let (so, se) = text(&r);
    assert!(r.status.success(), "{se}");
    assert!(se.contains(&format!("uploaded run {}", ro.run_id)), "{se}");
    assert!(so.contains("ro"), "{so}");
    let exported = |store: &str| {
        common::osgauge()
            .args(["results", "export", "ro", "--store", store])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(exported(&url), exported(&local.display().to_string()));
    // Once: the next command has nothing to upload.
    let r = common::osgauge()
        .args(["results", "list", "--store", &url])
        .output()
        .unwrap();
    assert!(!text(&r).1.contains("uploaded"), "{}", text(&r).1);
    // 3. A table changed by hand (a column renamed): the same, with that named.
    let mut t = pg.client(&db);
    t.batch_execute("ALTER TABLE runs RENAME COLUMN hostname TO host")
        .unwrap();
    let r = micro("altered");
    let (_, err) = text(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("changed by hand"), "{err}");
    assert!(err.contains("kept in the local store"), "{err}");
    t.batch_execute("ALTER TABLE runs RENAME COLUMN host TO hostname")
        .unwrap();
    let r = common::osgauge()
        .args(["fleet", "--store", &url])
        .output()
        .unwrap();
    assert!(text(&r).1.contains("uploaded run"), "{}", text(&r).1);
    let mut have = labels(&url);
    have.sort();
    assert_eq!(have, ["altered", "first", "ro"]);
    common::assert_consistent(Path::new(&url));
    // 4. --store-required: the first refused write stops the measuring; what ran is kept.
    set_read_only(&mut c, &db, true);
    let r = common::osgauge()
        .args(["micro", "cpu/timer_read", "cpu/null_syscall", "--runs", "5"])
        .args([
            "--run-time",
            "10ms",
            "--label",
            "strict",
            "--store-required",
        ])
        .args(["--store", &url])
        .output()
        .unwrap();
    let (_, err) = text(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("stopped by --store-required"), "{err}");
    let l = Store::open_read_only(&local).unwrap().unwrap();
    let strict = l
        .list()
        .unwrap()
        .into_iter()
        .find(|r| r.label.as_deref() == Some("strict"))
        .expect("kept locally");
    assert!(!strict.complete, "a stopped run is incomplete");
    set_read_only(&mut c, &db, false);
}
crate::register!(
    a_write_the_database_refuses_keeps_the_run_locally_and_the_next_command_uploads_it
        .path("/usr/lib/postgresql")
);

fn a_run_the_database_refused_uploads_itself_before_exit_once_it_takes_writes() {
    let Some((pg, url, db)) = server_with_a_store("upload-before-exit", "first") else {
        return;
    };
    let mut c = pg.client("postgres");
    set_read_only(&mut c, &db, true);
    let dir = tempfile::tempdir().unwrap();
    let err_file = dir.path().join("stderr.txt");
    let mut child = common::osgauge_std()
        .args([
            "micro",
            "cpu/timer_read",
            "--runs",
            "3",
            "--run-time",
            "100ms",
            "--label",
            "late",
            "--store",
            &url,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    // As soon as the run says it went to the local store, the database takes writes again.
    let t0 = Instant::now();
    loop {
        let err = std::fs::read_to_string(&err_file).unwrap_or_default();
        if err.contains("kept in the local store") {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run never fell back to the local store: {err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    set_read_only(&mut c, &db, false);
    let st = child.wait().unwrap();
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(err.contains("is now uploaded"), "{err}");
    assert!(labels(&url).contains(&"late".to_string()));
    let s = Store::open_read_only(Path::new(&url)).unwrap().unwrap();
    let row = s
        .list()
        .unwrap()
        .into_iter()
        .find(|r| r.label.as_deref() == Some("late"))
        .unwrap();
    assert!(row.complete);
    // Nothing left waiting.
    let r = common::osgauge()
        .args(["results", "list", "--store", &url])
        .output()
        .unwrap();
    assert!(!text(&r).1.contains("uploaded"), "{}", text(&r).1);
}
crate::register!(
    a_run_the_database_refused_uploads_itself_before_exit_once_it_takes_writes
        .path("/usr/lib/postgresql")
);

fn errors_say_what_they_are_a_role_without_rights_an_ignored_pgpass_and_a_raw_at() {
    let Some((pg, _url, db)) = server_with_a_store("named-errors", "first") else {
        return;
    };
    // A role that may log in but read nothing.
    pg.client(&db)
        .batch_execute("CREATE ROLE nobody LOGIN PASSWORD 'nobody-pw'")
        .unwrap();
    let r = common::osgauge()
        .args(["results", "list", "--store"])
        .arg(url_as(&pg, &db, "nobody", "nobody-pw"))
        .output()
        .unwrap();
    let (so, se) = text(&r);
    assert!(!r.status.success(), "{so}{se}");
    assert!(!se.contains("not an osgauge result store"), "{se}");
    assert!(!so.contains("No runs stored"), "{so}");
    assert!(se.contains("permission denied"), "{se}");
    assert!(se.contains("osgauge_reader"), "{se}");
    // A password file others may read: named as the reason no password was found.
    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(&pgpass, format!("*:*:*:{PG_USER}:{PG_PASSWORD}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let bare = format!(
        "postgres://{PG_USER}@/{db}?host={}",
        pg.socket_dir().display()
    );
    let r = common::osgauge()
        .env("PGPASSFILE", &pgpass)
        .env_remove("PGPASSWORD")
        .args(["results", "list", "--store", &bare])
        .output()
        .unwrap();
    let (_, se) = text(&r);
    assert_eq!(r.status.code(), Some(2), "{se}");
    assert!(se.contains("was ignored") && se.contains("pgpass"), "{se}");
    // A raw '@' in the password: about the URL, not a host lookup.
    let r = common::osgauge()
        .args(["results", "list", "--store"])
        .arg(format!(
            "postgres://{PG_USER}:p@ss@/{db}?host={}",
            pg.socket_dir().display()
        ))
        .output()
        .unwrap();
    let (_, se) = text(&r);
    assert_eq!(r.status.code(), Some(2), "{se}");
    assert!(se.contains("%40"), "{se}");
    assert!(!se.contains("p@ss"), "{se}");
}
crate::register!(
    errors_say_what_they_are_a_role_without_rights_an_ignored_pgpass_and_a_raw_at
        .path("/usr/lib/postgresql")
);

fn a_writer_adds_runs_but_cannot_replace_or_delete_anothers_and_a_reader_only_reads() {
    let Some((pg, url, db)) = server_with_a_store("roles", "owners") else {
        return;
    };
    // The script osgauge prints, run as the owner, then one login role per person.
    let sql = common::osgauge().args(["fleet", "roles"]).output().unwrap();
    assert!(sql.status.success());
    let sql = String::from_utf8(sql.stdout).unwrap();
    let mut owner = pg.client(&db);
    owner.batch_execute(&sql).unwrap();
    // Twice: it is idempotent.
    owner.batch_execute(&sql).unwrap();
    owner
        .batch_execute(
            "CREATE ROLE alice LOGIN PASSWORD 'alice-pw' IN ROLE osgauge_writer;
             CREATE ROLE bob LOGIN PASSWORD 'bob-pw' IN ROLE osgauge_writer;
             CREATE ROLE dash LOGIN PASSWORD 'dash-pw' IN ROLE osgauge_reader;",
        )
        .unwrap();
    let alice = url_as(&pg, &db, "alice", "alice-pw");
    let bob = url_as(&pg, &db, "bob", "bob-pw");
    let dash = url_as(&pg, &db, "dash", "dash-pw");
    let r = common::osgauge()
        .args(common::TINY_MICRO)
        .args(["--label", "alices", "--store", &alice])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r).1);
    assert!(text(&r).1.contains("stored as run"), "{}", text(&r).1);
    // Bob can't delete Alice's run or the owner's, and is told why.
    for victim in ["alices", "owners"] {
        let r = common::osgauge()
            .args(["results", "delete", victim, "--yes", "--store", &bob])
            .output()
            .unwrap();
        let (_, se) = text(&r);
        assert!(!r.status.success(), "{se}");
        assert!(se.contains("may delete only the runs it stored"), "{se}");
    }
    // Nor replace Alice's run with a changed copy.
    let exported = common::osgauge()
        .args(["results", "export", "alices", "--store", &bob])
        .output()
        .unwrap();
    assert!(exported.status.success());
    let mut rec: serde_json::Value = serde_json::from_slice(&exported.stdout).unwrap();
    rec["label"] = "bobs-now".into();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("changed.json");
    std::fs::write(&f, serde_json::to_string(&rec).unwrap()).unwrap();
    let r = common::osgauge()
        .args(["results", "import", "--replace", "--store", &bob])
        .arg(&f)
        .output()
        .unwrap();
    let (_, se) = text(&r);
    assert!(!r.status.success(), "{se}");
    assert!(se.contains("another role stored"), "{se}");
    let mut have = labels(&url);
    have.sort();
    assert_eq!(have, ["alices", "owners"]);
    // The reader reads everything and writes nothing: its run stays local, with the reason.
    for args in [
        vec!["results", "list", "--store", &dash],
        vec!["fleet", "--store", &dash],
    ] {
        let r = common::osgauge().args(&args).output().unwrap();
        assert!(r.status.success(), "{args:?}: {}", text(&r).1);
    }
    let r = common::osgauge()
        .args(common::TINY_MICRO)
        .args(["--label", "dashs", "--store", &dash])
        .output()
        .unwrap();
    let (_, se) = text(&r);
    assert_eq!(r.status.code(), Some(1), "{se}");
    assert!(se.contains("osgauge_writer"), "{se}");
    assert!(se.contains("kept in the local store"), "{se}");
    // Alice deletes her own run.
    let r = common::osgauge()
        .args(["results", "delete", "alices", "--yes", "--store", &alice])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r).1);
    assert_eq!(labels(&url), ["owners"]);
}
crate::register!(
    a_writer_adds_runs_but_cannot_replace_or_delete_anothers_and_a_reader_only_reads
        .path("/usr/lib/postgresql")
);
