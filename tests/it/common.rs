//! Shared helpers of the integration tests: fixtures, records derived from them, and lookups in a
//! run record read as JSON.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use osgauge::record::{BenchmarkResult, MetricResult, RunMetric, RunRecord};
use osgauge::stats;
use osgauge::units::{Better, Unit};

/// A test's own directories: everything an `osgauge` process would otherwise share with the
/// machine (temp dir, result store, calibration cache, XDG data/cache/config/state) points inside
/// one fresh folder, removed when the sandbox is dropped. So no test sees what a killed run,
/// another test or another program left in `/tmp` or in the user's folders, and none leaves
/// anything there. The folder is under the target directory (on disk: `/tmp` may be tmpfs, and
/// some benchmarks need a disk-backed temp dir).
pub struct Sandbox {
    root: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let root = tempfile::Builder::new()
            .prefix("sandbox-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        for d in ["tmp", "cache", "data", "config", "state"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        Sandbox { root }
    }

    /// The sandbox's root (free for the test's own files).
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The result store every command of this sandbox uses unless told otherwise.
    pub fn store(&self) -> PathBuf {
        self.path().join("store.sqlite")
    }

    /// The temp dir (`TMPDIR`) of the processes this sandbox starts.
    pub fn tmp(&self) -> PathBuf {
        self.path().join("tmp")
    }

    /// The calibration cache (`OSGAUGE_CACHE_DIR`).
    pub fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }

    /// The environment that confines a process to this sandbox.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let p = |d: &str| self.path().join(d);
        vec![
            ("TMPDIR", self.tmp()),
            // Windows' temp dir (GetTempPath), for the test executables CI runs under Wine.
            ("TMP", self.tmp()),
            ("TEMP", self.tmp()),
            ("OSGAUGE_STORE", self.store()),
            ("OSGAUGE_CACHE_DIR", self.cache()),
            ("XDG_CACHE_HOME", p("cache")),
            ("XDG_DATA_HOME", p("data")),
            ("XDG_CONFIG_HOME", p("config")),
            ("XDG_STATE_HOME", p("state")),
        ]
    }

    /// Confine `cmd` (any program) to this sandbox.
    pub fn confine<'a>(&self, cmd: &'a mut std::process::Command) -> &'a mut std::process::Command {
        cmd.envs(self.env())
    }

    /// The `osgauge` binary, confined to this sandbox.
    pub fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_osgauge"));
        self.confine(&mut c);
        c
    }

    /// The `osgauge` binary for assertions (assert_cmd), confined to this sandbox.
    pub fn osgauge(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_osgauge"));
        c.envs(self.env());
        c
    }
}

thread_local! {
    /// The sandbox of the running test: libtest runs every test on a thread of its own, so this
    /// is one sandbox per test, removed when the test's thread ends.
    static TEST_SANDBOX: Sandbox = Sandbox::new();
}

/// Runs `f` with the running test's own sandbox (see [`TEST_SANDBOX`]).
pub fn with_test_sandbox<T>(f: impl FnOnce(&Sandbox) -> T) -> T {
    TEST_SANDBOX.with(f)
}

/// `osgauge` confined to the running test's own sandbox.
pub fn osgauge() -> assert_cmd::Command {
    with_test_sandbox(Sandbox::osgauge)
}

/// `osgauge` as a plain process (to spawn, signal, wait on), confined to the running test's own
/// sandbox.
pub fn osgauge_std() -> std::process::Command {
    with_test_sandbox(Sandbox::command)
}

/// Confine any program `cmd` starts (a shell running osgauge, `ip netns exec …`) to the running
/// test's own sandbox.
pub fn confine(cmd: &mut std::process::Command) -> &mut std::process::Command {
    with_test_sandbox(|s| s.confine(cmd))
}

/// `osgauge` on the result store `store`, otherwise confined to the running test's sandbox.
pub fn osgauge_on(store: &Path) -> assert_cmd::Command {
    let mut c = osgauge();
    c.env("OSGAUGE_STORE", store);
    c
}

/// The arguments of a tiny real measurement (two 10 ms runs of the clock read).
pub const TINY_MICRO: [&str; 6] = [
    "micro",
    "cpu/timer_read",
    "--runs",
    "2",
    "--run-time",
    "10ms",
];

/// The benchmark `id` of a run record read as JSON.
pub fn json_bench<'a>(rec: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    rec["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in the record"))
}

/// The metric `name` of a benchmark read as JSON.
pub fn json_metric<'a>(b: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{}: no metric {name}", b["id"]))
}

pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A real record measured by `osgauge micro cpu --runs N --run-time 20ms --export-json`.
pub fn fixture(name: &str) -> RunRecord {
    let text = std::fs::read_to_string(fixture_path(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A copy of `r` (new run id and label) in which every per-run value of benchmark `id` is
/// multiplied by `factor` (its histograms dropped, its across-run summary recomputed).
pub fn slowed(r: &RunRecord, id: &str, factor: f64) -> RunRecord {
    let mut out = r.clone();
    out.run_id = uuid::Uuid::now_v7();
    out.label = Some(format!("{}-slowed", r.label.clone().unwrap_or_default()));
    let b = out
        .benchmarks
        .iter_mut()
        .find(|b| b.id == id)
        .unwrap_or_else(|| panic!("no benchmark {id}"));
    for m in &mut b.metrics {
        for run in &mut m.runs {
            let s = &mut run.summary;
            for v in [
                &mut s.mean,
                &mut s.sd,
                &mut s.min,
                &mut s.p50,
                &mut s.p90,
                &mut s.p99,
                &mut s.p999,
                &mut s.max,
            ] {
                *v *= factor;
            }
            run.histogram = None;
            run.histogram_scale = None;
        }
        let per: Vec<_> = m.runs.iter().map(|r| r.summary.clone()).collect();
        m.summary = stats::across_runs(&per);
    }
    out
}

/// Keep only the first `n` runs of every metric.
pub fn truncated(r: &RunRecord, n: usize) -> RunRecord {
    let mut out = r.clone();
    out.run_id = uuid::Uuid::now_v7();
    for b in &mut out.benchmarks {
        for m in &mut b.metrics {
            m.runs.truncate(n);
            let per: Vec<_> = m.runs.iter().map(|r| r.summary.clone()).collect();
            m.summary = stats::across_runs(&per);
        }
    }
    out.config.runs = n as u32;
    out
}

/// Deterministic pseudo-random numbers in [0, 1) (a 64-bit LCG), for synthetic samples.
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn metric(name: &str, unit: Unit, better: Better, runs: Vec<Vec<f64>>) -> MetricResult {
    let rm: Vec<RunMetric> = runs
        .iter()
        .map(|s| RunMetric {
            summary: stats::summarize(s).unwrap(),
            histogram: None,
            histogram_scale: None,
            histogram_offset: None,
            round: None,
        })
        .collect();
    let per: Vec<_> = rm.iter().map(|r| r.summary.clone()).collect();
    MetricResult {
        name: name.into(),
        unit,
        better,
        description: "synthetic test data".into(),
        summary: stats::across_runs(&per),
        runs: rm,
        not_measured: None,
        bound: None,
    }
}

pub const TASKS: [&str; 3] = ["audio", "video", "x"];
pub const LOADS: [&str; 3] = ["none", "burn", "write"];

/// The memory-latency benchmark the synthetic curve stands for (a real id of `osgauge list`).
pub const CURVE_ID: &str = "mem/latency_random";

/// SYNTHETIC benchmark results under real ids and metric names of the interactivity and memory
/// suites (`interactivity/<task>/<load>` with a per-wake-up latency distribution and a %
/// deadlines met per run; [`CURVE_ID`] with its `curve` parameter and cache-level metrics), for
/// rendering tests only (`tests/it/report.rs` checks the ids are real). `scale` stretches
/// latencies so two systems differ.
pub fn synthetic_benchmarks(seed: u64, scale: f64) -> Vec<BenchmarkResult> {
    let mut rng = Lcg(seed);
    let mut out = Vec::new();
    for (ti, task) in TASKS.iter().enumerate() {
        for (li, load) in LOADS.iter().enumerate() {
            let base = 20_000.0 * (1.0 + ti as f64) * (1.0 + 2.0 * li as f64) * scale;
            let lat: Vec<Vec<f64>> = (0..5)
                .map(|_| {
                    (0..200)
                        .map(|_| base * (0.5 + rng.next() + 8.0 * rng.next().powi(12)))
                        .collect()
                })
                .collect();
            let met: Vec<Vec<f64>> = (0..5)
                .map(|_| vec![(100.0 - 6.0 * li as f64 * scale - rng.next()).clamp(0.0, 100.0)])
                .collect();
            out.push(BenchmarkResult {
                id: format!("interactivity/{task}/{load}"),
                suite: "interactivity".into(),
                title: format!("{task} under {load} load"),
                params: serde_json::Map::new(),
                measured: Default::default(),
                metrics: vec![
                    metric("latency", Unit::Nanoseconds, Better::Lower, lat),
                    metric("deadlines_met", Unit::Percent, Better::Higher, met),
                ],
                warnings: vec![],
                error: None,
                wall_s: 1.0,
                run_facts: Vec::new(),
                adaptive: None,
            });
        }
    }
    let curve: Vec<serde_json::Value> = (10..=28)
        .map(|k| {
            let size = (1u64 << k) as f64;
            let ns = if k < 15 {
                1.2
            } else if k < 20 {
                4.0
            } else if k < 24 {
                12.0
            } else {
                80.0
            } * scale
                * (1.0 + 0.05 * rng.next());
            serde_json::json!({"size_bytes": size, "ns_per_load": ns})
        })
        .collect();
    let mut params = serde_json::Map::new();
    params.insert("curve".into(), serde_json::Value::Array(curve));
    let level = |rng: &mut Lcg, name: &str, ns: f64| {
        metric(
            name,
            Unit::Nanoseconds,
            Better::Lower,
            (0..5)
                .map(|_| vec![ns * scale * (1.0 + 0.01 * rng.next())])
                .collect(),
        )
    };
    out.push(BenchmarkResult {
        id: CURVE_ID.into(),
        suite: "mem".into(),
        title: "memory load latency, random chain".into(),
        params,
        measured: Default::default(),
        metrics: vec![
            level(&mut rng, "l1", 1.2),
            level(&mut rng, "l2", 4.0),
            level(&mut rng, "l3", 12.0),
            level(&mut rng, "ram", 80.0),
        ],
        warnings: vec![],
        error: None,
        wall_s: 1.0,
        run_facts: Vec::new(),
        adaptive: None,
    });
    out
}

/// A real cpu fixture plus the synthetic interactivity and memory results.
pub fn with_synthetic(base: &str, label: &str, seed: u64, scale: f64) -> RunRecord {
    let mut r = fixture(base);
    r.run_id = uuid::Uuid::now_v7();
    r.label = Some(label.into());
    r.benchmarks.extend(synthetic_benchmarks(seed, scale));
    r
}

#[cfg(target_os = "linux")]
/// A tmpfs mounted by a test (root on Linux), unmounted when dropped.
pub struct Tmpfs(std::path::PathBuf);

#[cfg(target_os = "linux")]
impl Tmpfs {
    /// A `size` tmpfs on a new folder `mnt` in `dir`, or None after saying `test` could not run.
    pub fn mnt_in(dir: &Path, size: &str, test: &str) -> Option<(std::path::PathBuf, Tmpfs)> {
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        match Tmpfs::mount(&mnt, size) {
            Ok(m) => Some((mnt, m)),
            Err(e) => {
                osgauge::testing::not_run(
                    test,
                    &format!("cannot mount a {size} tmpfs ({e}); needs root on Linux"),
                );
                None
            }
        }
    }

    pub fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }
}

#[cfg(target_os = "linux")]
impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A PostgreSQL server of the test's own: `initdb` into a fresh temporary directory, listening
/// only on a Unix socket in that directory (`listen_addresses=''`), password authentication
/// (SCRAM) for its one user. Stopped (`pg_ctl stop -m immediate`) and removed when dropped —
/// also when the test panics; a server left by a test process that was killed is stopped and
/// removed by the next [`PgServer::start`]. As root, the server runs as the `postgres` user
/// (PostgreSQL refuses to run as root).
#[cfg(unix)]
pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    databases: std::cell::Cell<u32>,
    /// Listening on 127.0.0.1 at this port too, with TLS on ([`PgServer::enable_tls`]).
    tcp: std::cell::Cell<Option<u16>>,
}

#[cfg(unix)]
pub const PG_USER: &str = "osg";
#[cfg(unix)]
pub const PG_PASSWORD: &str = "pw-Secret1";

#[cfg(unix)]
impl PgServer {
    /// The server's binaries: the newest `/usr/lib/postgresql/<version>/bin` with `initdb`.
    fn bin_dir() -> Option<PathBuf> {
        let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .filter_map(|e| {
                let n: u32 = e.file_name().to_str()?.parse().ok()?;
                let b = e.path().join("bin");
                b.join("initdb").exists().then_some((n, b))
            })
            .collect();
        v.sort();
        v.pop().map(|(_, b)| b)
    }

    /// `cmd` as the user that runs the server: `postgres` when we are root, else ourselves.
    fn as_owner(program: &Path) -> std::process::Command {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            std::process::Command::new(program)
        }
    }

    /// Start a server, or say `NOT RUN <test>: <reason>` (the test is then reported as ignored)
    /// and return None where PostgreSQL is not installed or cannot be started here.
    pub fn start(test: &str) -> Option<PgServer> {
        let Some(bin) = Self::bin_dir() else {
            osgauge::testing::not_run(
                test,
                "PostgreSQL is not installed (no /usr/lib/postgresql/<version>/bin/initdb; `apt-get install postgresql`)",
            );
            return None;
        };
        Self::reap_leftovers(&bin);
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root
            && !std::process::Command::new("id")
                .arg("postgres")
                .output()
                .is_ok_and(|o| o.status.success())
        {
            osgauge::testing::not_run(
                test,
                "running as root and there is no `postgres` user to run the server as",
            );
            return None;
        }
        // Short path: the socket path must stay under 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix(&format!("osgauge_pgtest-{}-", std::process::id()))
            .tempdir_in("/tmp")
            .unwrap();
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PG_PASSWORD).unwrap();
        if root {
            let chown = |p: &Path| {
                std::process::Command::new("chown")
                    .arg("postgres")
                    .arg(p)
                    .status()
                    .unwrap()
            };
            chown(dir.path());
            chown(&pwfile);
        }
        let server = PgServer {
            dir,
            bin,
            databases: std::cell::Cell::new(0),
            tcp: std::cell::Cell::new(None),
        };
        let out = Self::as_owner(&server.bin.join("initdb"))
            .arg("-D")
            .arg(server.data())
            .args([
                "-U",
                PG_USER,
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
                "--pwfile",
            ])
            .arg(&pwfile)
            .output()
            .unwrap();
        if !out.status.success() {
            osgauge::testing::not_run(
                test,
                &format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)),
            );
            return None;
        }
        if let Err(e) = server.start_again() {
            osgauge::testing::not_run(test, &format!("the server did not start: {e}"));
            return None;
        }
        Some(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket directory.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Start the (stopped) server.
    pub fn start_again(&self) -> Result<(), String> {
        let mut opts = format!(
            "-c fsync=off -c max_connections=60 -k {}",
            self.socket_dir().display()
        );
        match self.tcp.get() {
            None => opts.push_str(" -c listen_addresses=''"),
            Some(port) => opts.push_str(&format!(
                " -c listen_addresses=127.0.0.1 -p {port} -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key"
            )),
        }
        let out = Self::as_owner(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-o", &opts, "-l"])
            .arg(self.dir.path().join("log"))
            .args(["-w", "-t", "60", "start"])
            .output()
            .unwrap();
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
            ))
        }
    }

    /// Stop the server at once (`-m immediate`: as if it crashed).
    pub fn stop(&self) {
        Self::stop_at(&self.bin, &self.data());
    }

    fn stop_at(bin: &Path, data: &Path) {
        let _ = Self::as_owner(&bin.join("pg_ctl"))
            .arg("-D")
            .arg(data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }

    /// Servers of test processes that are gone (killed before their Drop ran).
    fn reap_leftovers(bin: &Path) {
        let Ok(rd) = std::fs::read_dir("/tmp") else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("osgauge_pgtest-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: kill with signal 0 only checks that the process exists.
            if unsafe { libc::kill(pid, 0) } == 0 {
                continue;
            }
            Self::stop_at(bin, &e.path().join("data"));
            let _ = std::fs::remove_dir_all(e.path());
        }
    }

    /// Restart the server listening on 127.0.0.1 (a free port, returned) too, with TLS on:
    /// `cert_pem` and `key_pem` are its certificate (chain) and key. With `hostssl_only`, its
    /// pg_hba.conf lets TCP clients in only over TLS (the Unix socket stays as it was).
    pub fn enable_tls(&self, cert_pem: &str, key_pem: &str, hostssl_only: bool) -> u16 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let data = self.data();
        let crt = data.join("server.crt");
        let key = data.join("server.key");
        std::fs::write(&crt, cert_pem).unwrap();
        std::fs::write(&key, key_pem).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        if hostssl_only {
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
            )
            .unwrap();
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            for f in [&crt, &key, &data.join("pg_hba.conf")] {
                std::process::Command::new("chown")
                    .arg("postgres")
                    .arg(f)
                    .status()
                    .unwrap();
            }
        }
        self.stop();
        self.tcp.set(Some(port));
        self.start_again().unwrap();
        port
    }

    /// The URL of database `db` (with the password in it, as a user may write it).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{PG_USER}:{PG_PASSWORD}@/{db}?host={}",
            self.socket_dir().display()
        )
    }

    /// A connection to database `db` for checks the store does not offer.
    pub fn client(&self, db: &str) -> postgres::Client {
        postgres::Config::new()
            .host_path(self.socket_dir())
            .user(PG_USER)
            .password(PG_PASSWORD)
            .dbname(db)
            .connect(postgres::NoTls)
            .unwrap()
    }

    /// A new, empty database: its URL.
    pub fn new_db(&self) -> String {
        let n = self.databases.get() + 1;
        self.databases.set(n);
        let name = format!("t{n}");
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        self.url(&name)
    }
}

#[cfg(unix)]
impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A store of each kind for a test run on both backends: a SQLite file in `dir`, or a fresh
/// database on `pg`.
pub fn sqlite_store(dir: &Path) -> PathBuf {
    dir.join("s.db")
}

/// Whether a store path is a PostgreSQL URL.
pub fn is_pg(store: &Path) -> bool {
    store.to_str().is_some_and(|s| s.starts_with("postgres"))
}

/// Whether the store exists yet (a SQLite file; a PostgreSQL database is there from the start).
pub fn store_exists(store: &Path) -> bool {
    is_pg(store) || store.exists()
}

/// Define `<test>::sqlite` and `<test>::postgres` for each `fn test(store: &Path, dir: &Path)`:
/// the same test on a SQLite file and on a database of a PostgreSQL server of its own (NOT RUN
/// where PostgreSQL is not installed).
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                fn sqlite() {
                    let dir = tempfile::tempdir().unwrap();
                    super::$name(&super::common::sqlite_store(dir.path()), dir.path());
                }
                $crate::register!(sqlite);

                #[cfg(unix)]
                fn postgres() {
                    let dir = tempfile::tempdir().unwrap();
                    let Some(pg) = super::common::PgServer::start(stringify!($name)) else {
                        return;
                    };
                    let url = pg.new_db();
                    super::$name(std::path::Path::new(&url), dir.path());
                }
                #[cfg(unix)]
                $crate::register!(postgres.path("/usr/lib/postgresql"));
            }
        )*
    };
}

/// Set the schema version of a store (to test the refusal of a newer one).
pub fn set_schema_version(store: &Path, v: u32) {
    if is_pg(store) {
        let mut c = postgres::Client::connect(store.to_str().unwrap(), postgres::NoTls).unwrap();
        c.execute("UPDATE osgauge_schema SET version = $1", &[&(v as i32)])
            .unwrap();
    } else {
        let c = rusqlite::Connection::open(store).unwrap();
        c.pragma_update(None, "user_version", v).unwrap();
    }
}

/// Check a store is consistent: SQLite's integrity check; on PostgreSQL every run's benchmark
/// rows are exactly its record's benchmarks, in order, and none belongs to no run.
pub fn assert_consistent(store: &Path) {
    if is_pg(store) {
        let mut c = postgres::Client::connect(store.to_str().unwrap(), postgres::NoTls).unwrap();
        let bad: i64 = c
            .query_one(
                "SELECT count(*) FROM runs r WHERE r.benchmarks <> jsonb_array_length(r.doc->'benchmarks')
                 OR r.benchmarks <> (SELECT count(*) FROM run_benchmarks b WHERE b.run_id = r.run_id)
                 OR EXISTS (SELECT 1 FROM run_benchmarks b WHERE b.run_id = r.run_id
                            AND b.result <> r.doc->'benchmarks'->b.position)",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(bad, 0, "runs whose benchmark rows differ from their record");
    } else {
        let c = rusqlite::Connection::open(store).unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
}

/// The run-record schema (schema/osgauge.run-1.schema.json), compiled once.
fn run_schema() -> &'static jsonschema::Validator {
    static V: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/osgauge.run-1.schema.json");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        jsonschema::validator_for(&v).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    })
}

/// Check every run record in `doc` (a record, or an array of them: what `--export-json` and
/// `results export` write) against the published run schema; other JSON is left alone.
pub fn check_records(doc: &serde_json::Value, what: &str) {
    let is_record =
        |v: &serde_json::Value| v.get("schema").and_then(|s| s.as_str()) == Some("osgauge.run/1");
    let records: Vec<&serde_json::Value> = match doc {
        serde_json::Value::Array(a) => a.iter().filter(|v| is_record(v)).collect(),
        v if is_record(v) => vec![v],
        _ => Vec::new(),
    };
    for r in records {
        let errors: Vec<String> = run_schema()
            .iter_errors(r)
            .map(|e| format!("  {}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what}: the run record does not match schema/osgauge.run-1.schema.json:\n{}",
            errors.join("\n")
        );
    }
}

/// Read a JSON file the tests get from osgauge (an exported run record, a fleet table, …); a run
/// record in it is checked against the run schema ([`check_records`]), so every test that reads
/// an exported record checks the schema too.
pub fn read_json(path: impl AsRef<Path>) -> serde_json::Value {
    let path = path.as_ref();
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    check_records(&v, &path.display().to_string());
    v
}

/// [`read_json`] for JSON osgauge printed (e.g. `results export` on stdout).
pub fn parse_json(text: &[u8]) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(text)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(text)));
    check_records(&v, "printed JSON");
    v
}
