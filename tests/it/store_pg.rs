//! The PostgreSQL store on a real server of each test's own (NOT RUN where PostgreSQL is not
//! installed): clear refusals with exit 2, credentials, the password kept out of every output,
//! many writer processes at once, a server lost mid-run, and `results push/pull`.
#![cfg(unix)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::{PG_PASSWORD, PgServer, fixture_path};
use osgauge::store::Store;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `osgauge` in the test's sandbox (its own local store, temp dir, XDG dirs).
fn osgauge() -> assert_cmd::Command {
    common::osgauge()
}

/// The refusal is one line on stderr, exit 2, nothing on stdout, and no password in it.
fn assert_one_line_exit_2(o: &Output, says: &str) {
    let (out, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(says), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        !err.contains(PG_PASSWORD) && !err.contains("wrong-pw"),
        "{err}"
    );
}

fn wrong_password_foreign_database_bad_url_and_no_server_each_give_one_line_and_exit_2() {
    let Some(pg) = PgServer::start("refusals") else {
        return;
    };
    let url = pg.new_db();
    let sock = pg.socket_dir().display().to_string();
    let cases = [
        (
            format!("postgres://osg:wrong-pw@/postgres?host={sock}"),
            "authentication failed",
        ),
        (
            format!("{url}&sslmod=disable"),
            "unknown parameter 'sslmod'",
        ),
        (format!("{url}&sslmode=verify-all"), "is not one of"),
        (
            format!("postgres://osg:{PG_PASSWORD}@/postgres?host={sock}/nowhere"),
            "cannot be reached",
        ),
        (
            format!("postgres://osg:{PG_PASSWORD}@/absent?host={sock}"),
            "does not exist",
        ),
    ];
    for (u, says) in &cases {
        for args in [&["results", "list"][..], &common::TINY_MICRO[..]] {
            let o = osgauge().args(args).arg("--store").arg(u).output().unwrap();
            assert_one_line_exit_2(&o, says);
        }
    }
    // Another application's database: refused by readers and writers, left as it was.
    let mut c = pg.client("t1");
    c.batch_execute("CREATE TABLE customers (id int); INSERT INTO customers VALUES (1)")
        .unwrap();
    for args in [&["results", "list"][..], &common::TINY_MICRO[..]] {
        let o = osgauge()
            .args(args)
            .arg("--store")
            .arg(&url)
            .output()
            .unwrap();
        assert_one_line_exit_2(&o, "is not an osgauge result store");
    }
    let tables: i64 = c
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "only the foreign table is there");
}
crate::register!(
    wrong_password_foreign_database_bad_url_and_no_server_each_give_one_line_and_exit_2
        .path("/usr/lib/postgresql")
);

fn the_password_never_appears_in_output_or_the_record() {
    let Some(pg) = PgServer::start("password") else {
        return;
    };
    let url = pg.new_db();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let o = osgauge()
        .args(common::TINY_MICRO)
        .args(["--label", "pw"])
        .arg("--store")
        .arg(&url)
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("stored as run"), "{err}");
    let exported = std::fs::read_to_string(&json).unwrap();
    for o in [
        osgauge()
            .args(["results", "list", "--store", &url])
            .output()
            .unwrap(),
        osgauge()
            .args(["results", "show", "pw", "--store", &url])
            .output()
            .unwrap(),
        osgauge()
            .args(["results", "export", "pw", "--store", &url])
            .output()
            .unwrap(),
    ] {
        let (o2, e2) = text(&o);
        assert!(o.status.success(), "{e2}");
        assert!(
            !o2.contains(PG_PASSWORD) && !e2.contains(PG_PASSWORD),
            "{o2}{e2}"
        );
    }
    assert!(!out.contains(PG_PASSWORD) && !err.contains(PG_PASSWORD));
    assert!(
        !exported.contains(PG_PASSWORD),
        "the record holds the password"
    );
    let rec: serde_json::Value = serde_json::from_str(&exported).unwrap();
    let cl = rec["config"]["command_line"].to_string();
    assert!(cl.contains("postgres://osg@/t1"), "{cl}");
    let stored: i64 = pg
        .client("t1")
        .query_one(
            "SELECT count(*) FROM runs WHERE record LIKE '%' || $1 || '%'",
            &[&PG_PASSWORD],
        )
        .unwrap()
        .get(0);
    assert_eq!(stored, 0);
}
crate::register!(the_password_never_appears_in_output_or_the_record.path("/usr/lib/postgresql"));

fn credentials_come_from_pgpassword_or_a_private_password_file() {
    let Some(pg) = PgServer::start("credentials") else {
        return;
    };
    pg.new_db();
    let dir = tempfile::tempdir().unwrap();
    let bare = format!("postgres://osg@/t1?host={}", pg.socket_dir().display());
    let list = || {
        let mut c = osgauge();
        c.args(["results", "list", "--store", &bare])
            .env_remove("PGPASSWORD")
            .env("PGPASSFILE", dir.path().join("none"));
        c
    };
    assert_one_line_exit_2(&list().output().unwrap(), "none was given");
    list().env("PGPASSWORD", PG_PASSWORD).assert().success();
    let pass = dir.path().join("pgpass");
    std::fs::write(
        &pass,
        format!("# test\nelsewhere:5432:*:*:nope\nlocalhost:5432:t1:osg:{PG_PASSWORD}\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    list().env("PGPASSFILE", &pass).assert().success();
    // As libpq: a password file others may read is ignored.
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_one_line_exit_2(
        &list().env("PGPASSFILE", &pass).output().unwrap(),
        "none was given",
    );
}
crate::register!(
    credentials_come_from_pgpassword_or_a_private_password_file.path("/usr/lib/postgresql")
);

fn read_only_commands_leave_an_empty_database_empty() {
    let Some(pg) = PgServer::start("read-only") else {
        return;
    };
    let url = pg.new_db();
    let o = osgauge()
        .args(["results", "list", "--store", &url])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("No runs stored in postgres://osg@/t1"),
        "{out}"
    );
    osgauge()
        .args(["results", "show", "x", "--store", &url])
        .assert()
        .code(2);
    let tables: i64 = pg
        .client("t1")
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
}
crate::register!(read_only_commands_leave_an_empty_database_empty.path("/usr/lib/postgresql"));

/// N writer processes × M runs each at once on one server (a small version of the 8 × 25 load
/// check): every run stored once, complete, reading back as its writer exported it.
fn many_writer_processes_store_every_run_once_and_complete() {
    let Some(pg) = PgServer::start("writers") else {
        return;
    };
    let url = pg.new_db();
    let dir = tempfile::tempdir().unwrap();
    let (writers, runs) = (4, 3);
    let t0 = Instant::now();
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let url = url.clone();
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || {
                for r in 0..runs {
                    let json = dir.join(format!("w{w}-r{r}.json"));
                    let o = common::osgauge_std()
                        .args(common::TINY_MICRO)
                        .args(["--quiet", "--label", &format!("w{w}")])
                        .arg("--store")
                        .arg(&url)
                        .arg("--export-json")
                        .arg(&json)
                        .output()
                        .unwrap();
                    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    println!(
        "{writers} writers x {runs} runs: {:.2} s per stored run (wall time / runs)",
        t0.elapsed().as_secs_f64() / f64::from(writers * runs)
    );
    let s = Store::open_read_only(Path::new(&url)).unwrap().unwrap();
    let rows = s.list().unwrap();
    assert_eq!(rows.len(), (writers * runs) as usize);
    let mut ids: Vec<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), rows.len(), "duplicates");
    assert!(rows.iter().all(|r| r.complete), "incomplete runs");
    for w in 0..writers {
        for r in 0..runs {
            let file = std::fs::read_to_string(dir.path().join(format!("w{w}-r{r}.json"))).unwrap();
            let rec: serde_json::Value = serde_json::from_str(&file).unwrap();
            let id = rec["run_id"].as_str().unwrap();
            assert_eq!(s.export_json(id).unwrap().unwrap(), file);
        }
    }
    common::assert_consistent(Path::new(&url));
}
crate::register!(
    many_writer_processes_store_every_run_once_and_complete.path("/usr/lib/postgresql")
);

/// Wait until the store at `url` holds a run with at least one benchmark.
fn wait_for_a_benchmark(url: &str, child: &mut std::process::Child, err: &Path) -> String {
    let t0 = Instant::now();
    loop {
        if t0.elapsed() > Duration::from_secs(120) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no benchmark stored in time: {}",
                std::fs::read_to_string(err).unwrap_or_default()
            );
        }
        if let Ok(Some(s)) = Store::open_read_only(Path::new(url))
            && let Ok(rows) = s.list()
            && let Some(r) = rows.first()
            && r.benchmarks >= 1
        {
            return r.run_id.clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn a_server_stopped_mid_run_keeps_the_run_locally_and_push_uploads_it_byte_identical() {
    let Some(pg) = PgServer::start("server-stopped") else {
        return;
    };
    let url = pg.new_db();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let err_file = dir.path().join("stderr.txt");
    let local: PathBuf = common::with_test_sandbox(|s| s.store());
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
        .arg(&url)
        .arg("--export-json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    let id = wait_for_a_benchmark(&url, &mut child, &err_file);
    pg.stop();
    let st = child.wait().unwrap();
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(!err.contains(PG_PASSWORD), "{err}");
    assert!(
        err.contains("is kept in the local store") && err.contains("osgauge results push --store"),
        "{err}"
    );
    let exported = std::fs::read_to_string(&json).unwrap();
    let l = Store::open_read_only(&local).unwrap().unwrap();
    assert_eq!(l.export_json(&id).unwrap().unwrap(), exported);
    assert!(l.get(&id).unwrap().unwrap().complete);
    // The server back: what it kept of the run is consistent and marked incomplete.
    pg.start_again().unwrap();
    let s = Store::open_read_only(Path::new(&url)).unwrap().unwrap();
    let rows = s.list().unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].complete && rows[0].benchmarks >= 1);
    common::assert_consistent(Path::new(&url));
    // Pushed: the server's copy is the complete run, byte for byte as exported; again: nothing.
    let o = osgauge()
        .args(["results", "push", "--store"])
        .arg(&local)
        .args(["--to", &url])
        .output()
        .unwrap();
    let (out, e) = text(&o);
    assert!(o.status.success(), "{e}");
    assert!(out.contains("0 copied, 1 updated"), "{out}");
    assert!(!out.contains(PG_PASSWORD));
    let o = osgauge()
        .args(["results", "export", &id, "--store", &url])
        .output()
        .unwrap();
    assert_eq!(text(&o).0, exported);
    let o = osgauge()
        .args(["results", "push", "--store"])
        .arg(&local)
        .args(["--to", &url])
        .output()
        .unwrap();
    assert!(
        text(&o)
            .0
            .contains("0 copied, 0 updated (incomplete there), 1 already there")
    );
    common::assert_consistent(Path::new(&url));
}
crate::register!(
    a_server_stopped_mid_run_keeps_the_run_locally_and_push_uploads_it_byte_identical
        .path("/usr/lib/postgresql")
);

fn push_and_pull_between_any_two_stores_are_idempotent() {
    let Some(pg) = PgServer::start("push-pull") else {
        return;
    };
    let (a, b) = (pg.new_db(), pg.new_db());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("local.sqlite");
    let f = file.display().to_string();
    osgauge()
        .args(["results", "import", "--store", &a])
        .arg(fixture_path("cpu-a.json"))
        .arg(fixture_path("cpu-b.json"))
        .assert()
        .success();
    let run = |args: &[&str]| {
        let o = osgauge().args(args).output().unwrap();
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    // PG → SQLite, twice.
    let (c, out, err) = run(&["results", "pull", "--from", &a, "--store", &f]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("2 copied"), "{out}");
    let (_, out, _) = run(&["results", "pull", "--from", &a, "--store", &f]);
    assert!(
        out.contains("0 copied, 0 updated (incomplete there), 2 already there"),
        "{out}"
    );
    // SQLite → PG (another database), one run by label; PG → PG for the rest.
    let (c, out, err) = run(&["results", "push", "--store", &f, "--to", &b, "fixture-b"]);
    assert_eq!(c, Some(0), "{err}");
    assert!(
        out.starts_with("1 run(s)") && out.contains("1 copied"),
        "{out}"
    );
    let (_, out, _) = run(&["results", "push", "--store", &a, "--to", &b]);
    assert!(
        out.contains("1 copied, 0 updated (incomplete there), 1 already there"),
        "{out}"
    );
    for s in [&a, &b, &f] {
        for (label, fx) in [("fixture-a", "cpu-a.json"), ("fixture-b", "cpu-b.json")] {
            let (_, out, _) = run(&["results", "export", label, "--store", s]);
            assert_eq!(
                out,
                std::fs::read_to_string(fixture_path(fx)).unwrap(),
                "{s}"
            );
        }
    }
    // A different run under the same id is a conflict: reported, exit 1, unless --replace.
    let id = osgauge::store::parse_records(
        &std::fs::read_to_string(fixture_path("cpu-a.json")).unwrap(),
    )
    .unwrap()[0]
        .run_id
        .to_string();
    pg.client("t2")
        .execute(
            "UPDATE runs SET record = replace(record, '\"fixture-a\"', '\"changed\"'), label = 'changed' WHERE run_id = $1::text::uuid",
            &[&id],
        )
        .unwrap();
    let (c, _, err) = run(&["results", "push", "--store", &a, "--to", &b]);
    assert_eq!(c, Some(1), "{err}");
    assert!(err.contains("stored differently"), "{err}");
    let (c, out, _) = run(&["results", "push", "--store", &a, "--to", &b, "--replace"]);
    assert_eq!(c, Some(0));
    // A complete run replaced is said to be replaced, not "updated (incomplete there)".
    assert!(
        out.contains("0 updated (incomplete there), 1 replaced (different there, --replace)"),
        "{out}"
    );
    // A store is not copied onto itself.
    let (c, _, err) = run(&["results", "push", "--store", &a, "--to", &a]);
    assert_eq!(c, Some(2), "{err}");
}
crate::register!(push_and_pull_between_any_two_stores_are_idempotent.path("/usr/lib/postgresql"));

/// TLS as libpq's sslmode says, against the test's own server with a CA and server certificate
/// made here (rcgen; it needs ring, which does not type-check for macOS without a C
/// cross-compiler, so these tests are not built there).
#[cfg(not(target_os = "macos"))]
mod tls {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

    /// A CA: its certificate (PEM) and the issuer that signs with it.
    fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, name.to_string());
        CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
    }

    /// A server certificate for `localhost` signed by `ca`: (certificate, key), PEM.
    fn server_cert(ca: &CertifiedIssuer<'static, KeyPair>) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, ca)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// `osgauge` with a home of its own (no ~/.postgresql/root.crt) and no libpq TLS variables.
    fn cmd(home: &Path) -> assert_cmd::Command {
        let mut c = osgauge();
        c.env("HOME", home)
            .env_remove("PGSSLMODE")
            .env_remove("PGSSLROOTCERT");
        c
    }

    /// What `results list` says of the connection to `url` (it must succeed).
    fn connection(home: &Path, url: &str) -> String {
        let o = cmd(home)
            .args(["results", "list", "--store", url])
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{url}: {out}{err}");
        out.lines()
            .find_map(|l| {
                l.strip_prefix("Connection to the store: ")?
                    .strip_suffix(" (as the server reports it).")
            })
            .unwrap_or_else(|| panic!("no connection line: {out}"))
            .to_string()
    }

    fn sslmodes_connect_encrypted_as_libpq_and_bad_certificates_are_refused_naming_the_cause() {
        let Some(pg) = PgServer::start("tls") else {
            return;
        };
        pg.new_db();
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let ca = ca("osgauge test CA");
        let (cert, key) = server_cert(&ca);
        let port = pg.enable_tls(&cert, &key, false);
        let right = home.join("ca.pem");
        let wrong = home.join("other-ca.pem");
        std::fs::write(&right, ca.pem()).unwrap();
        std::fs::write(&wrong, self::ca("another CA").pem()).unwrap();
        let at = |host: &str, q: &str| format!("postgres://osg:{PG_PASSWORD}@{host}:{port}/t1?{q}");

        // require: encrypted (read back from the server), the certificate not checked.
        let o = cmd(home)
            .args(common::TINY_MICRO)
            .arg("--store")
            .arg(at("localhost", "sslmode=require"))
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        assert!(err.contains("stored as run"), "{err}");
        assert!(err.contains("(connection encrypted, TLSv1."), "{err}");
        let enc = connection(home, &at("localhost", "sslmode=require"));
        assert!(enc.starts_with("encrypted, TLSv1."), "{enc}");
        // The default (prefer) uses TLS when offered; disable does not.
        assert!(connection(home, &at("localhost", "connect_timeout=5")).starts_with("encrypted"));
        assert_eq!(
            connection(home, &at("localhost", "sslmode=disable")),
            "not encrypted"
        );
        // The right CA: verify-full to the name in the certificate, verify-ca to any name.
        let root = |f: &Path| format!("sslrootcert={}", f.display());
        for url in [
            at(
                "localhost",
                &format!("sslmode=verify-full&{}", root(&right)),
            ),
            at("127.0.0.1", &format!("sslmode=verify-ca&{}", root(&right))),
        ] {
            assert!(connection(home, &url).starts_with("encrypted"), "{url}");
        }
        // ~/.postgresql/root.crt is the default root CA file.
        std::fs::create_dir_all(home.join(".postgresql")).unwrap();
        std::fs::copy(&right, home.join(".postgresql/root.crt")).unwrap();
        assert!(connection(home, &at("localhost", "sslmode=verify-full")).starts_with("encrypted"));
        // ... and with it there, require checks the chain too (as libpq).
        std::fs::copy(&wrong, home.join(".postgresql/root.crt")).unwrap();
        let o = cmd(home)
            .args([
                "results",
                "list",
                "--store",
                &at("localhost", "sslmode=require"),
            ])
            .output()
            .unwrap();
        assert_one_line_exit_2(&o, "is not signed by a CA in");
        std::fs::remove_dir_all(home.join(".postgresql")).unwrap();

        // Refusals: one line, exit 2, naming the cause; readers and writers alike.
        let cases = [
            (
                at(
                    "localhost",
                    &format!("sslmode=verify-full&{}", root(&wrong)),
                ),
                "is not signed by a CA in",
            ),
            (
                at("localhost", &format!("sslmode=verify-ca&{}", root(&wrong))),
                "is not signed by a CA in",
            ),
            (
                at(
                    "127.0.0.1",
                    &format!("sslmode=verify-full&{}", root(&right)),
                ),
                "is not valid for the host name \"127.0.0.1\"",
            ),
            (
                at("localhost", "sslmode=verify-full"),
                "root.crt does not exist",
            ),
            (
                at(
                    "localhost",
                    &format!("sslmode=verify-ca&{}", root(&home.join("absent.pem"))),
                ),
                "absent.pem does not exist",
            ),
        ];
        for (url, says) in &cases {
            for args in [&["results", "list"][..], &common::TINY_MICRO[..]] {
                let o = cmd(home)
                    .args(args)
                    .arg("--store")
                    .arg(url)
                    .output()
                    .unwrap();
                assert_one_line_exit_2(&o, says);
            }
        }
    }
    crate::register!(
        sslmodes_connect_encrypted_as_libpq_and_bad_certificates_are_refused_naming_the_cause
    );

    fn a_hostssl_only_server_refuses_sslmode_disable_clearly_and_takes_tls() {
        let Some(pg) = PgServer::start("tls-hostssl") else {
            return;
        };
        pg.new_db();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = server_cert(&ca("osgauge test CA"));
        let port = pg.enable_tls(&cert, &key, true);
        let url = |q: &str| format!("postgres://osg:{PG_PASSWORD}@localhost:{port}/t1?sslmode={q}");
        for args in [&["results", "list"][..], &common::TINY_MICRO[..]] {
            let o = cmd(dir.path())
                .args(args)
                .arg("--store")
                .arg(url("disable"))
                .output()
                .unwrap();
            assert_one_line_exit_2(&o, "accepts this connection only with TLS");
        }
        let o = cmd(dir.path())
            .args(common::TINY_MICRO)
            .arg("--store")
            .arg(url("require"))
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        assert!(connection(dir.path(), &url("require")).starts_with("encrypted"));
    }
    crate::register!(a_hostssl_only_server_refuses_sslmode_disable_clearly_and_takes_tls);
}
