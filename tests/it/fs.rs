//! The fs suite end to end: `--dir` refused before anything runs, a cache-bypassed read on tmpfs
//! refused with the reason, no file left after a run, after Ctrl-C and (at the next start) after a
//! kill, and the suite on a real network file system (sshfs to an sshd inside a network
//! namespace) with its type recorded.
// The kill, Ctrl-C and network tests are Unix/Linux only.
#![cfg_attr(not(unix), allow(unused_imports, dead_code))]

use crate::common;
use common::json_bench as bench;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PREFIX: &str = "osgauge-fs-";

/// A fresh directory under the target directory (on disk: /tmp may be tmpfs).
fn disk_tmp(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn osgauge(store: &Path) -> Command {
    let mut c = common::osgauge_std();
    c.env("OSGAUGE_STORE", store.join("store.sqlite"))
        .env("OSGAUGE_CACHE_DIR", store);
    c
}

fn run(store: &Path, args: &[&str]) -> Output {
    osgauge(store).args(args).output().unwrap()
}

/// `osgauge micro <args> --runs 1 --warmup 0 --quiet --export-json …` with store and cache in
/// `store`: it succeeds; its record.
fn micro_record(store: &Path, args: &[&str]) -> Value {
    let json = store.join("r.json");
    let mut all = vec!["micro"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--runs", "1", "--warmup", "0", "--quiet", "--export-json"]);
    all.push(json.to_str().unwrap());
    let o = run(store, &all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    common::read_json(&json)
}

fn entries(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Each metric of `b` is measured or says why not.
fn measured_or_reasoned(b: &Value) {
    assert!(b["error"].is_null(), "{}: {}", b["id"], b["error"]);
    for m in b["metrics"].as_array().unwrap() {
        let runs = m["runs"].as_array().map(|r| r.len()).unwrap_or(0);
        assert!(
            runs > 0 || m["not_measured"].is_string(),
            "{} {}: neither measured nor explained",
            b["id"],
            m["name"]
        );
    }
}

fn bad_dirs_and_misplaced_options_exit_2_before_anything_runs() {
    let store = tempfile::tempdir().unwrap();
    let o = run(
        store.path(),
        &["micro", "fs", "--dir", "/nonexistent-osgauge"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--dir /nonexistent-osgauge"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let o = run(store.path(), &["micro", "cpu", "--dir", "."]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("fs suite"));
    let o = run(store.path(), &["micro", "fs", "--sizes", "1000"]);
    assert_eq!(o.status.code(), Some(2));
}
crate::register!(bad_dirs_and_misplaced_options_exit_2_before_anything_runs);

#[cfg(target_os = "linux")]
fn a_bypassed_read_on_tmpfs_is_unsupported_with_the_reason() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        osgauge::testing::not_run("a_bypassed_read_on_tmpfs_is_unsupported", "no /dev/shm");
        return;
    }
    let store = tempfile::tempdir().unwrap();
    let rec = micro_record(
        store.path(),
        &[
            "fs/read_latency",
            "fs/contention",
            "--dir",
            "/dev/shm",
            "--sizes",
            "32KiB",
        ],
    );
    for id in ["fs/read_latency", "fs/contention"] {
        let e = &bench(&rec, id)["error"];
        assert_eq!(e["kind"], "unsupported", "{id}: {e}");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("tmpfs") && msg.contains("RAM"), "{msg}");
    }
}
#[cfg(target_os = "linux")]
crate::register!(a_bypassed_read_on_tmpfs_is_unsupported_with_the_reason.path("/dev/shm"));

fn a_run_leaves_no_file_and_records_where_it_ran() {
    let d = disk_tmp("clean");
    let store = tempfile::tempdir().unwrap();
    let rec = micro_record(
        store.path(),
        &[
            "fs/read_latency",
            "fs/seq_write_t1",
            "fs/seq_read_t2",
            "fs/stream_write",
            "fs/stream_from_tcp",
            "fs/create_delete",
            "fs/fsync",
            "--dir",
            d.to_str().unwrap(),
            "--sizes",
            "32KiB,256KiB",
            "--max-size",
            "8MiB",
            "--run-time",
            "20ms",
        ],
    );
    assert!(entries(&d).is_empty(), "left behind: {:?}", entries(&d));
    for id in [
        "fs/read_latency",
        "fs/seq_write_t1",
        "fs/seq_read_t2",
        "fs/stream_write",
        "fs/stream_from_tcp",
        "fs/create_delete",
        "fs/fsync",
    ] {
        let b = bench(&rec, id);
        if b["error"]["kind"] == "unsupported" {
            eprintln!("{id}: {}", b["error"]["message"]);
            continue;
        }
        measured_or_reasoned(b);
        assert!(b["params"]["fs_type"].is_string(), "{id}: {}", b["params"]);
    }
    // The bandwidth contract the application model reads.
    let w = bench(&rec, "fs/seq_write_t1");
    let names: Vec<_> = w["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mb_per_s") && names.contains(&"cpu_s_per_gb"));
    assert_eq!(w["params"]["bytes_total"], 8 << 20);
    // The I/O threads' own CPU (a serial stage's cost), over the timed pass: on Linux (a
    // nanosecond thread clock) measured and positive wherever its bandwidth is, and no more
    // CPU than the threads had wall time (CPU-s per GB × GB per s ≤ threads; a margin for the
    // meter's restart between the barrier and the wall clock's start).
    for (id, threads) in [("fs/seq_write_t1", 1.0), ("fs/seq_read_t2", 2.0)] {
        let b = bench(&rec, id);
        if b["error"]["kind"] == "unsupported" {
            continue;
        }
        for (thread, rate) in [
            ("thread_cpu_s_per_gb", "mb_per_s"),
            ("thread_cpu_s_per_gb_buffered", "mb_per_s_buffered"),
        ] {
            let r = common::json_metric(b, rate)["summary"]["center"].as_f64();
            let t = common::json_metric(b, thread);
            match (r, t["summary"]["center"].as_f64()) {
                (Some(r), Some(t)) => {
                    assert!(t > 0.0, "{id} {thread}: {t}");
                    assert!(
                        t * r / 1e3 <= threads * 1.25,
                        "{id}: {thread} {t} CPU-s/GB at {rate} {r} MB/s"
                    );
                }
                (Some(_), None) if cfg!(target_os = "linux") => {
                    panic!("{id}: {thread} not measured: {}", t["not_measured"])
                }
                _ => assert!(t["not_measured"].is_string(), "{id} {thread}: {t}"),
            }
        }
    }
    // The write calls are part of the writing thread's pass: their own CPU is at most the
    // pass's (the same clock, read before the fsync and close).
    if w["error"].is_null() {
        let calls = common::json_metric(w, "thread_cpu_s_per_gb_buffered_nosync");
        let all = common::json_metric(w, "thread_cpu_s_per_gb_buffered");
        match (
            calls["summary"]["center"].as_f64(),
            all["summary"]["center"].as_f64(),
        ) {
            (Some(c), Some(a)) => assert!(c > 0.0 && c <= a, "write calls {c} > pass {a}"),
            _ => assert!(
                calls["not_measured"].is_string() || all["not_measured"].is_string(),
                "{calls} {all}"
            ),
        }
    }
    // The streaming writer: --max-size 8MiB caps the whole stream (no lead past it), and its
    // thread used no more CPU than it had wall time.
    let s = bench(&rec, "fs/stream_write");
    if s["error"].is_null() {
        assert_eq!(s["params"]["measured_bytes"], 8 << 20, "{}", s["params"]);
        assert_eq!(s["params"]["lead_bytes"], 0, "{}", s["params"]);
        let r = common::json_metric(s, "mb_per_s")["summary"]["center"].as_f64();
        let t = common::json_metric(s, "thread_cpu_s_per_gb");
        match (r, t["summary"]["center"].as_f64()) {
            (Some(r), Some(t)) => assert!(t > 0.0 && t * r / 1e3 <= 1.25, "{t} at {r}"),
            _ => assert!(t["not_measured"].is_string(), "{t}"),
        }
    }
    // The relay (a TCP stream received and written by one thread): the same plan, its thread
    // at most one CPU, and its receive and write calls parts of that thread's CPU (the same
    // clock read around them; on a clock too coarse for one block, not measured, said).
    let s = bench(&rec, "fs/stream_from_tcp");
    if s["error"].is_null() {
        assert_eq!(s["params"]["measured_bytes"], 8 << 20, "{}", s["params"]);
        assert_eq!(s["params"]["lead_bytes"], 0, "{}", s["params"]);
        // It writes what each receive returned: at least one write per 128 KiB, every byte
        // measured (no lead), and with no lead a write can start mid-page only after a short
        // receive.
        for f in s["run_facts"].as_array().unwrap() {
            assert_eq!(f["measured_bytes_relayed"], 8 << 20, "{f}");
            let writes = f["writes"].as_u64().unwrap();
            assert!(writes >= (8 << 20) / (128 << 10), "{f}");
            let short = f["short_receive_share"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&short), "{f}");
            match f["mid_page_write_share"].as_f64() {
                Some(mid) => assert!(
                    (0.0..1.0).contains(&mid) && (short > 0.0 || mid == 0.0),
                    "{f}"
                ),
                None => assert!(
                    f["mid_page_write_share"]
                        .as_str()
                        .unwrap()
                        .starts_with("not measured"),
                    "{f}"
                ),
            }
        }
        let c = |m: &str| common::json_metric(s, m)["summary"]["center"].as_f64();
        match (c("mb_per_s"), c("thread_cpu_s_per_gb")) {
            (Some(r), Some(t)) => assert!(t > 0.0 && t * r / 1e3 <= 1.25, "{t} at {r}"),
            _ => assert!(
                common::json_metric(s, "thread_cpu_s_per_gb")["not_measured"].is_string(),
                "{s}"
            ),
        }
        match (
            c("thread_cpu_s_per_gb"),
            c("thread_recv_cpu_s_per_gb"),
            c("thread_write_cpu_s_per_gb"),
        ) {
            (Some(t), Some(r), Some(w)) => {
                assert!(r > 0.0 && w > 0.0 && r + w <= t * 1.001, "{r} + {w} > {t}")
            }
            _ => assert!(
                !cfg!(target_os = "linux")
                    && common::json_metric(s, "thread_recv_cpu_s_per_gb")["not_measured"]
                        .is_string(),
                "{s}"
            ),
        }
    }
    // The CPU cost's window spans whole passes of the same work: extended (micro's standard
    // preset) while below the counters' resolution, never a partial pass.
    let mut windows = 0;
    for f in w["run_facts"].as_array().unwrap() {
        for mode in ["direct", "buffered"] {
            let (Some(passes), Some(bytes)) = (
                f[format!("cpu_cost_passes_{mode}")].as_u64(),
                f[format!("cpu_cost_bytes_{mode}")].as_u64(),
            ) else {
                continue;
            };
            assert!(passes >= 1, "{f}");
            assert_eq!(bytes, passes * (8 << 20), "{mode}: {f}");
            windows += 1;
        }
    }
    assert!(
        windows > 0,
        "no CPU-cost window recorded: {}",
        w["run_facts"]
    );
    std::fs::remove_dir_all(&d).unwrap();
}
crate::register!(a_run_leaves_no_file_and_records_where_it_ran);

/// Wait until a run's work directory under `d` holds a file of the benchmark's (the run is
/// measuring). The first `osgauge-fs-*` directory to appear is not one: `--dir` is checked while
/// the options are parsed, by making and removing a work directory, before the run exists and
/// before osgauge takes over Ctrl-C — a SIGINT there ends the process as the signal's default
/// action does (or, where the parent ignored SIGINT, not at all: exit 0), which is not what the
/// test is about.
#[cfg(unix)]
fn wait_for_workdir(d: &Path, child: &mut std::process::Child) -> bool {
    let measuring = |w: &String| {
        w.starts_with(PREFIX)
            && std::fs::read_dir(d.join(w)).is_ok_and(|rd| {
                rd.flatten().any(|e| {
                    !e.file_name()
                        .to_string_lossy()
                        .starts_with(".osgauge-fs-owner")
                })
            })
    };
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if entries(d).iter().any(measuring) {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[cfg(unix)]
fn ctrl_c_removes_the_files_and_a_killed_runs_files_go_at_the_next_start() {
    let d = disk_tmp("kill");
    let store = tempfile::tempdir().unwrap();
    let args = [
        "micro",
        "fs/cache_size",
        "--dir",
        d.to_str().unwrap(),
        "--max-size",
        "256MiB",
        "--runs",
        "3",
        "--quiet",
    ];
    // Each run makes and removes its own work directory, so a signal may land between two runs
    // (seen once on a quiet machine: the SIGKILL found no directory). A kill is retried until it
    // lands while a directory exists (at most 5 times); Ctrl-C must clean up either way.
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let mut landed = false;
        for _ in 0..5 {
            let mut child = osgauge(store.path())
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            assert!(
                wait_for_workdir(&d, &mut child),
                "no work directory appeared"
            );
            // SAFETY: signalling our own child.
            assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
            let st = child.wait().unwrap();
            if sig == libc::SIGINT {
                assert_eq!(st.code(), Some(130));
                assert!(entries(&d).is_empty(), "after Ctrl-C: {:?}", entries(&d));
                landed = true;
                break;
            }
            // A kill cannot clean up: its directory stays (unless it fell between two runs).
            if entries(&d).iter().any(|e| e.starts_with(PREFIX)) {
                landed = true;
                break;
            }
        }
        assert!(landed, "no SIGKILL of 5 left its work directory behind");
    }
    // The next start removes the killed run's directory.
    let o = run(
        store.path(),
        &[
            "micro",
            "fs/fsync",
            "--dir",
            d.to_str().unwrap(),
            "--runs",
            "1",
            "--warmup",
            "0",
            "--run-time",
            "10ms",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(entries(&d).is_empty(), "stale: {:?}", entries(&d));
    std::fs::remove_dir_all(&d).unwrap();
}
#[cfg(unix)]
crate::register!(ctrl_c_removes_the_files_and_a_killed_runs_files_go_at_the_next_start);

/// A network namespace with an sshd, a veth pair to it and an sshfs mount of a directory it
/// serves; everything torn down on drop.
#[cfg(target_os = "linux")]
struct Remote {
    ns: String,
    veth: String,
    sshd: Option<std::process::Child>,
    mount: PathBuf,
    mounted: bool,
    _tmp: tempfile::TempDir,
}

#[cfg(target_os = "linux")]
impl Drop for Remote {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("fusermount")
                .arg("-u")
                .arg(&self.mount)
                .status();
        }
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .status();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

#[cfg(target_os = "linux")]
fn sh(args: &[&str]) -> Result<(), String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

#[cfg(target_os = "linux")]
fn make_remote(served: &Path) -> Result<Remote, String> {
    for tool in ["ip", "sshfs", "fusermount", "ssh-keygen", "/usr/sbin/sshd"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            return Err(format!("{tool} is not installed"));
        }
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("network namespaces need root".into());
    }
    let id = std::process::id() % 60000;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut r = Remote {
        ns: format!("osgfs{id}"),
        veth: format!("osgfh{id}"),
        sshd: None,
        mount: tmp.path().join("mnt"),
        mounted: false,
        _tmp: tempfile::tempdir().map_err(|e| e.to_string())?,
    };
    let peer = format!("osgfn{id}");
    let (a, b) = (
        format!("10.{}.{}.1", 200 + id / 256 % 50, id % 256),
        format!("10.{}.{}.2", 200 + id / 256 % 50, id % 256),
    );
    sh(&["ip", "netns", "add", &r.ns])?;
    sh(&[
        "ip", "link", "add", &r.veth, "type", "veth", "peer", "name", &peer,
    ])?;
    sh(&["ip", "link", "set", &peer, "netns", &r.ns])?;
    sh(&["ip", "addr", "add", &format!("{a}/30"), "dev", &r.veth])?;
    sh(&["ip", "link", "set", &r.veth, "up"])?;
    let inns = |args: &[&str]| {
        let mut v = vec!["ip", "netns", "exec", r.ns.as_str()];
        v.extend_from_slice(args);
        sh(&v)
    };
    inns(&["ip", "addr", "add", &format!("{b}/30"), "dev", &peer])?;
    inns(&["ip", "link", "set", &peer, "up"])?;
    inns(&["ip", "link", "set", "lo", "up"])?;
    let t = tmp.path();
    let host_key = t.join("host_key");
    let user_key = t.join("user_key");
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-f",
        host_key.to_str().unwrap(),
    ])?;
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-f",
        user_key.to_str().unwrap(),
    ])?;
    let auth = t.join("authorized_keys");
    std::fs::copy(user_key.with_extension("pub"), &auth).map_err(|e| e.to_string())?;
    let cfg = t.join("sshd_config");
    std::fs::write(
        &cfg,
        format!(
            "Port 2222\nListenAddress {b}\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin yes\n\
             PasswordAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n\
             Subsystem sftp internal-sftp\n",
            host_key.display(),
            auth.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    // sshd wants its privilege-separation directory.
    let _ = std::fs::create_dir_all("/run/sshd");
    r.sshd = Some(
        Command::new("ip")
            .args(["netns", "exec", &r.ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("sshd: {e}"))?,
    );
    std::fs::create_dir_all(&r.mount).map_err(|e| e.to_string())?;
    let opts = format!(
        "IdentityFile={},StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,port=2222,\
         ConnectTimeout=5",
        user_key.display()
    );
    // sshd needs a moment to listen.
    let t0 = Instant::now();
    loop {
        match sh(&[
            "sshfs",
            "-o",
            &opts,
            &format!("root@{b}:{}", served.display()),
            r.mount.to_str().unwrap(),
        ]) {
            Ok(()) => break,
            Err(e) if t0.elapsed() > Duration::from_secs(10) => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    r.mounted = true;
    // Keep the key directory alive with the mount.
    r._tmp = tmp;
    Ok(r)
}

#[cfg(target_os = "linux")]
fn the_suite_runs_on_a_network_file_system_and_says_so() {
    let served = disk_tmp("served");
    let remote = match make_remote(&served) {
        Ok(r) => r,
        Err(why) => {
            osgauge::testing::not_run("the_suite_runs_on_a_network_file_system", &why);
            let _ = std::fs::remove_dir_all(&served);
            return;
        }
    };
    let store = tempfile::tempdir().unwrap();
    let rec = micro_record(
        store.path(),
        &[
            "fs/read_latency",
            "fs/seq_read_t1",
            "fs/create_delete",
            "--dir",
            remote.mount.to_str().unwrap(),
            "--sizes",
            "32KiB,256KiB",
            "--max-size",
            "4MiB",
            "--run-time",
            "20ms",
        ],
    );
    for id in ["fs/read_latency", "fs/seq_read_t1", "fs/create_delete"] {
        let b = bench(&rec, id);
        measured_or_reasoned(b);
        assert_eq!(b["params"]["fs_type"], "fuse.sshfs", "{id}");
        assert_eq!(b["params"]["network_fs"], true, "{id}");
        eprintln!(
            "{id}: bypass {} / check {}",
            b["params"]["bypass_method"], b["measured"]["bypass_check"]
        );
    }
    // A network mount's reads cannot be checked against a local device counter: said, not hidden.
    assert!(
        bench(&rec, "fs/read_latency")["measured"]["bypass_check"]
            .as_str()
            .unwrap()
            .contains("network file system")
    );
    // Nothing left on the server side either.
    assert!(entries(&served).is_empty(), "{:?}", entries(&served));
    drop(remote);
    let _ = std::fs::remove_dir_all(&served);
}
#[cfg(target_os = "linux")]
crate::register!(
    the_suite_runs_on_a_network_file_system_and_says_so
        .root()
        .executable(&["sshfs"])
);

/// On a memory-backed file system the storage figures are not passed off: fsync and the
/// file-cache size are unsupported with the reason, create/delete is measured and marked.
#[cfg(target_os = "linux")]
fn storage_figures_on_tmpfs_are_unsupported_or_marked() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        osgauge::testing::not_run(
            "storage_figures_on_tmpfs_are_unsupported_or_marked",
            "no /dev/shm on this machine",
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let out = run(
        d.path(),
        &[
            "micro",
            "fs/fsync",
            "fs/cache_size",
            "fs/create_delete",
            "--dir",
            "/dev/shm",
            "--runs",
            "2",
            "--run-time",
            "20ms",
            "--export-json",
            json.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = common::read_json(&json);
    for id in ["fs/fsync", "fs/cache_size"] {
        let b = common::json_bench(&v, id);
        assert_eq!(b["error"]["kind"], "unsupported", "{id}: {}", b["error"]);
        assert!(
            b["error"]["message"]
                .as_str()
                .unwrap()
                .contains("memory-backed"),
            "{id}: {}",
            b["error"]
        );
    }
    let b = common::json_bench(&v, "fs/create_delete");
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert!(
        b["warnings"].to_string().contains("in-memory metadata"),
        "{}",
        b["warnings"]
    );
}
#[cfg(target_os = "linux")]
crate::register!(storage_figures_on_tmpfs_are_unsupported_or_marked.path("/dev/shm"));
