//! The net suite from the command line: the ids and metric names other parts rely on, option
//! checks (exit 2, one line), `serve` refusing an exposed address without a token, and a short
//! loopback run whose record goes into the HTML report's network section.

use crate::common;

use std::process::Command;

use serde_json::Value;

fn osgauge(dir: &std::path::Path) -> Command {
    let mut c = common::osgauge_std();
    c.env("OSGAUGE_STORE", dir.join("store.db"))
        .env("OSGAUGE_CACHE_DIR", dir.join("cache"));
    c
}

fn contract_ids_and_metrics_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let o = osgauge(dir.path())
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let list: Value = common::parse_json(&o.stdout);
    let metrics = |id: &str| -> Vec<(String, String)> {
        let b = list
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed"));
        b["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap().to_string(),
                    m["better"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let has = |id: &str, name: &str, better: &str| {
        assert!(
            metrics(id).contains(&(name.to_string(), better.to_string())),
            "{id} lacks {name} ({better}): {:?}",
            metrics(id)
        )
    };
    has("net/tcp_stream", "throughput_gbit_s", "higher");
    has("net/tcp_stream", "rx_service_demand_us_per_kib", "lower");
    has("net/tcp_stream", "tx_service_demand_us_per_kib", "lower");
    has("net/tcp_stream", "rx_thread_us_per_kib", "lower");
    has("net/tcp_stream", "tx_thread_us_per_kib", "lower");
    has("net/tcp_stream_n", "rx_thread_us_per_kib", "lower");
    has("net/udp_stream", "rx_service_demand_us_per_kib", "lower");
    has("net/udp_stream", "loss_pct", "lower");
    has("net/udp_stream", "jitter_p99_us", "lower");
    has("net/tcp_rtt_64b", "rtt_p50_us", "lower");
}
crate::register!(contract_ids_and_metrics_are_listed);

fn options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["micro", "cpu", "--rate", "1Gbit"][..],
        &["micro", "net", "--token-file", "/nonexistent"],
        &["micro", "net", "--size", "10"],
        &["micro", "net", "--rate", "fast"],
        &["micro", "net", "--duration", "1s", "--run-time", "1s"],
        &["serve", "--listen", "0.0.0.0:0"],
    ] {
        let o = osgauge(dir.path()).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert!(!o.stderr.is_empty(), "{args:?}");
    }
    let o = osgauge(dir.path())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("token is required"));
}
crate::register!(options_are_checked);

fn a_short_loopback_run_reaches_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let o = osgauge(dir.path())
        .args(["micro", "net/tcp_rtt_sweep", "net/udp_stream"])
        .args([
            "--runs",
            "2",
            "--warmup",
            "0",
            "--duration",
            "200ms",
            "--quiet",
        ])
        .args([
            "--rate",
            "100Mbit",
            "--size",
            "4KiB",
            "--no-store",
            "--export-json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec: Value = common::read_json(&json);
    let udp = rec["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "net/udp_stream")
        .unwrap();
    assert!(udp["error"].is_null(), "{}", udp["error"]);
    assert_eq!(udp["params"]["size_bytes"], 4096);
    assert_eq!(udp["params"]["rate_bit_s"], 100_000_000);
    let html = dir.path().join("r.html");
    let o = osgauge(dir.path())
        .arg("report")
        .arg(&json)
        .arg("--export-html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("Network: round trip vs size, UDP jitter"));
    assert!(h.contains("TCP round trip vs message size"));
    assert!(h.contains("net/udp_stream inter-arrival deviation over time"));
}
crate::register!(a_short_loopback_run_reaches_the_report);

/// The data threads' own CPU of a loopback stream (one and one per CPU): measured on Linux (a
/// nanosecond thread clock), positive, and never more than the threads' wall time.
fn a_loopback_stream_measures_its_data_threads_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let o = osgauge(dir.path())
        .args(["micro", "net/tcp_stream", "net/tcp_stream_n"])
        .args(["--runs", "1", "--warmup", "0", "--run-time", "200ms"])
        .args(["--quiet", "--no-store", "--export-json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec: Value = common::read_json(&json);
    for id in ["net/tcp_stream", "net/tcp_stream_n"] {
        let b = common::json_bench(&rec, id);
        assert!(b["error"].is_null(), "{id}: {}", b["error"]);
        let f = &b["run_facts"][0];
        let (send_s, streams) = (
            f["send_s"].as_f64().unwrap(),
            f["streams"].as_f64().unwrap(),
        );
        for (m, fact) in [
            ("rx_thread_us_per_kib", "rx_thread_cpu_s"),
            ("tx_thread_us_per_kib", "tx_thread_cpu_s"),
        ] {
            let mv = common::json_metric(b, m);
            match mv["summary"]["center"].as_f64() {
                Some(v) => {
                    assert!(v > 0.0, "{id} {m}: {v}");
                    let cpu = f[fact].as_f64().unwrap();
                    assert!(
                        cpu > 0.0 && cpu <= streams * (send_s + 1.0),
                        "{id}: {fact} {cpu} s, {streams} stream(s) sending {send_s} s"
                    );
                }
                None if cfg!(target_os = "linux") => {
                    panic!("{id} {m} not measured: {}", mv["not_measured"])
                }
                None => assert!(mv["not_measured"].is_string(), "{id} {m}: {mv}"),
            }
        }
    }
}
crate::register!(a_loopback_stream_measures_its_data_threads_cpu);

/// `osgauge serve` prints where it listens, serves, logs the session, and stops on SIGINT with 130.
#[cfg(unix)]
fn serve_logs_sessions_and_stops_on_ctrl_c() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let mut child = osgauge(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr: std::net::SocketAddr = first
        .split("listening on ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(first.contains("loopback only, no token"), "{first}");
    let c = osgauge::serve::client::Client::connect(addr, None, std::time::Duration::from_secs(5))
        .unwrap();
    c.bye();
    let log = lines.next().unwrap().unwrap();
    assert!(log.contains("authenticated; tests: none"), "{log}");
    // SAFETY: kill with a child's pid and a signal number; no memory is passed.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}
#[cfg(unix)]
crate::register!(serve_logs_sessions_and_stops_on_ctrl_c);

/// Start `osgauge serve` with `args`; its address, its stdout lines and the child.
#[cfg(unix)]
fn start_serve(
    dir: &std::path::Path,
    args: &[&str],
) -> (
    std::net::SocketAddr,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    std::process::Child,
) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = osgauge(dir)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .split("listening on ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    (addr, lines, child)
}

/// A token file other users can read is warned about (ssh refuses such keys); a private one is not.
#[cfg(unix)]
fn a_token_file_readable_by_others_is_warned_about() {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "a-token-of-enough-length-0123\n").unwrap();
    for (mode, warned) in [(0o644, true), (0o600, false)] {
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(mode)).unwrap();
        let (_, _lines, mut child) =
            start_serve(dir.path(), &["--token-file", token.to_str().unwrap()]);
        // SAFETY: kill with a child's pid and a signal number; no memory is passed.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(130));
        assert_eq!(
            err.contains("is not private") && err.contains("chmod 600"),
            warned,
            "mode {mode:o}: {err}"
        );
    }
}
#[cfg(unix)]
crate::register!(a_token_file_readable_by_others_is_warned_about);

/// A peer's byte limit that ends a stream is named on both sides: the client's error says which
/// limit (not only "Connection reset by peer") and the server's session line too.
#[cfg(unix)]
fn a_peer_limit_that_ends_a_test_is_named_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, mut lines, mut child) = start_serve(dir.path(), &["--max-bytes", "1MiB"]);
    let json = dir.path().join("r.json");
    let out = osgauge(dir.path())
        .args(["micro", "net/tcp_stream", "--runs", "1", "--warmup", "0"])
        .args([
            "--run-time",
            "200ms",
            "--peer",
            &addr.to_string(),
            "--export-json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let rec: serde_json::Value = common::read_json(&json);
    let e = rec["benchmarks"][0]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        e.contains("--max-bytes"),
        "client: {e} / {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = lines.next().unwrap().unwrap();
    assert!(
        log.contains("byte limit") && log.contains("--max-bytes"),
        "server: {log}"
    );
    // SAFETY: kill takes a pid and a signal number; no memory is passed.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
}
#[cfg(unix)]
crate::register!(a_peer_limit_that_ends_a_test_is_named_on_both_sides);

/// `serve --new-token FILE` writes 256 random bits as hex to a new file of mode 0600 (and never
/// over an existing one); `serve --token-file` takes it without a warning; `serve --help` says how
/// strong a token must be.
#[cfg(unix)]
fn serve_new_token_writes_a_private_random_token() {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("token");
    let o = osgauge(dir.path())
        .args(["serve", "--new-token"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let t = std::fs::read_to_string(&f).unwrap();
    let t = t.trim();
    assert_eq!(t.len(), 64, "{t}");
    assert!(t.bytes().all(|b| b.is_ascii_hexdigit()), "{t}");
    // Another one differs, and an existing file is never overwritten.
    let g = dir.path().join("token2");
    osgauge(dir.path())
        .args(["serve", "--new-token"])
        .arg(&g)
        .output()
        .unwrap();
    assert_ne!(std::fs::read_to_string(&g).unwrap().trim(), t);
    let o = osgauge(dir.path())
        .args(["serve", "--new-token"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&f).unwrap().trim(), t);
    let (_, _lines, mut child) = start_serve(dir.path(), &["--token-file", f.to_str().unwrap()]);
    // SAFETY: kill takes a pid and a signal number; no memory is passed.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(!err.contains("not private"), "{err}");
    let help = osgauge(dir.path())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("128 bits") && help.contains("--new-token"),
        "{help}"
    );
}
#[cfg(unix)]
crate::register!(serve_new_token_writes_a_private_random_token);

/// 60 connections with a wrong token from one address write one log line, not 60 (the rest are
/// counted for the next line of that address); each is refused, as a failure or as slowed down.
#[cfg(unix)]
fn failed_authentications_are_logged_once_per_address_and_interval() {
    use osgauge::serve::proto::{self, Msg};
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("token");
    std::fs::write(&f, "a-token-of-enough-length-0123\n").unwrap();
    std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (addr, lines, mut child) = start_serve(dir.path(), &["--token-file", f.to_str().unwrap()]);
    for _ in 0..60 {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let hello = Msg::Hello {
            protocol: proto::PROTOCOL.into(),
            version: proto::VERSION,
        };
        proto::write_msg(&mut s, &hello).unwrap();
        if let Ok(Msg::Challenge { .. }) = proto::read_msg(&mut s) {
            let mac = "00".repeat(32);
            proto::write_msg(&mut s, &Msg::Auth { mac }).unwrap();
            match proto::read_msg(&mut s) {
                Ok(Msg::Refuse { reason }) => assert!(
                    reason.contains("authentication failed") || reason.contains("slow down"),
                    "{reason}"
                ),
                m => panic!("{m:?}"),
            }
        }
    }
    // Give the last sessions' lines time to be written, then stop and read them all.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill takes a pid and a signal number; no memory is passed.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let logged: Vec<String> = lines
        .map_while(Result::ok)
        .filter(|l| l.starts_with("session "))
        .collect();
    child.wait().unwrap();
    // One per 10 s interval: the test takes less than 10 s on an idle machine; a very slow one
    // may cross an interval or two.
    assert!(
        !logged.is_empty() && logged.len() <= 7,
        "{} lines for 60 connections: {logged:?}",
        logged.len()
    );
}
#[cfg(unix)]
crate::register!(failed_authentications_are_logged_once_per_address_and_interval);

/// A peer that is busy (its pre-auth slots for this address taken by silent connections) fails
/// the run: with --fail-on-error the client exits 5 and the record says why.
#[cfg(unix)]
fn a_busy_peer_fails_the_run_with_fail_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _lines, mut child) = start_serve(dir.path(), &[]);
    // 16 silent connections hold every pre-auth slot of 127.0.0.1 for the 5 s handshake bound.
    let silent: Vec<_> = (0..16)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    let json = dir.path().join("r.json");
    let o = osgauge(dir.path())
        .args(["micro", "net/tcp_rtt_64b", "--runs", "1", "--warmup", "0"])
        .args(["--run-time", "100ms", "--no-store", "--fail-on-error"])
        .args(["--peer", &addr.to_string(), "--export-json"])
        .arg(&json)
        .output()
        .unwrap();
    drop(silent);
    // SAFETY: kill takes a pid and a signal number; no memory is passed.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    assert_eq!(
        o.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec: serde_json::Value = common::read_json(&json);
    let e = rec["benchmarks"][0]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(e.contains("busy: 16 connections from 127.0.0.1"), "{e}");
}
#[cfg(unix)]
crate::register!(a_busy_peer_fails_the_run_with_fail_on_error);
