//! Every wait on something outside osgauge ends at its time bound or at the first signal (issue
//! 27): an export to a FIFO nobody reads, a peer that answers one byte a second (in the handshake
//! and in the data phase). Exports: one failing does not stop the others, `-` is standard output.
//!
//! The time limits asserted here are "it ends at all" bounds, far above the expected time (a few
//! seconds): before the fix each of these waits lasted until a second signal or for ever.
#![cfg(unix)]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;
use osgauge::serve::proto::{self, Msg};

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Wait for `child` at most `bound`; kill it and fail when it is still running then.
fn wait_or_fail(mut child: Child, bound: Duration, what: &str) -> (i32, String, String) {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            if let Some(mut o) = child.stdout.take() {
                o.read_to_string(&mut out).unwrap();
            }
            if let Some(mut e) = child.stderr.take() {
                e.read_to_string(&mut err).unwrap();
            }
            return (st.code().unwrap_or(-1), out, err);
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running {bound:?} later");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until `path`'s text contains `needle` (stderr of a child written to a file).
fn wait_for_text(path: &std::path::Path, needle: &str, bound: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < bound {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn an_export_to_a_fifo_nobody_reads_ends_at_the_first_signal_and_the_others_are_written() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("ff");
    mkfifo(&fifo);
    let csv = sb.path().join("out.csv");
    let err_file = sb.path().join("stderr.txt");
    let child = sb
        .command()
        .args([
            "micro",
            "cpu/null_syscall",
            "--runs",
            "2",
            "--run-time",
            "10ms",
        ])
        .arg("--export-json")
        .arg(&fifo)
        .arg("--export-csv")
        .arg(&csv)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    // The run is stored first, then the exports: the FIFO waits for a reader.
    assert!(
        wait_for_text(&err_file, "stored as run", Duration::from_secs(120)),
        "{}",
        std::fs::read_to_string(&err_file).unwrap_or_default()
    );
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGTERM);
    let (code, _, _) = wait_or_fail(
        child,
        Duration::from_secs(20),
        "blocked on the FIFO after SIGTERM",
    );
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(code, 143, "{err}");
    assert!(
        err.contains(&format!("--export-json: {} not written", fifo.display()))
            && err.contains("interrupted by a signal"),
        "{err}"
    );
    // The other export was written (the FIFO's turn came first).
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.contains("cpu/null_syscall"), "{text}");
    // The FIFO is left as it was.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}
crate::register!(
    an_export_to_a_fifo_nobody_reads_ends_at_the_first_signal_and_the_others_are_written
);

fn a_fifo_with_a_reader_gets_the_export() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("ff");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    sb.osgauge()
        .args([
            "micro",
            "cpu/null_syscall",
            "--runs",
            "2",
            "--run-time",
            "10ms",
            "--quiet",
        ])
        .arg("--export-json")
        .arg(&fifo)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let rec: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(rec["schema"], "osgauge.run/1");
}
crate::register!(a_fifo_with_a_reader_gets_the_export);

fn one_failed_export_does_not_stop_the_others_and_dash_is_standard_output() {
    if !std::path::Path::new("/dev/full").exists() {
        osgauge::testing::not_run(
            "one_failed_export_does_not_stop_the_others",
            "no /dev/full on this system",
        );
        return;
    }
    let sb = Sandbox::new();
    let md = sb.path().join("out.md");
    let out = sb
        .osgauge()
        .args([
            "micro",
            "cpu/null_syscall",
            "--runs",
            "2",
            "--run-time",
            "10ms",
            "--export-json",
            "-",
            "--export-csv",
            "/dev/full",
        ])
        .arg("--export-markdown")
        .arg(&md)
        .current_dir(sb.path())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // Standard output is the JSON record alone; the tables went to standard error.
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {err}"));
    assert_eq!(rec["schema"], "osgauge.run/1");
    assert!(
        err.contains("null_syscall"),
        "the tables are on stderr: {err}"
    );
    assert!(
        err.contains("--export-csv: /dev/full not written: No space left on device"),
        "{err}"
    );
    // The export after the failed one was written.
    assert!(
        std::fs::read_to_string(&md)
            .unwrap()
            .contains("null_syscall")
    );
    // No file named `-` was made.
    assert!(!sb.path().join("-").exists());
}
crate::register!(
    one_failed_export_does_not_stop_the_others_and_dash_is_standard_output.path("/dev/full")
);

/// Tells when a peer below has a client blocked on it (one message per client).
type Blocked = std::sync::mpsc::Receiver<()>;

/// Wait until the peer says a client is blocked on it (at most 60 s).
fn wait_blocked(blocked: &Blocked) {
    blocked
        .recv_timeout(Duration::from_secs(60))
        .expect("osgauge never reached the peer within 60 s");
}

/// A peer that accepts and then answers one byte a second: a 4 KiB length prefix, then a body
/// byte per second (never a whole frame). Each connection is told on the receiver.
fn dripping_peer() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Blocked,
) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let (tx, blocked) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { break };
            if s2.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send(());
                let _ = c.write_all(&4096u32.to_be_bytes());
                while c.write_all(b"{").is_ok() {
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
    });
    (addr, stop, blocked)
}

/// A peer that speaks the protocol honestly up to the data phase, then echoes one byte a second.
/// Each client that reaches the data phase is told on the receiver.
fn peer_dripping_data() -> (std::net::SocketAddr, Blocked) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, blocked) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { break };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let Ok(Msg::Hello { .. }) = proto::read_msg(&mut c) else {
                    return;
                };
                let challenge = Msg::Challenge {
                    version: proto::VERSION,
                    nonce: proto::hex(&proto::nonce()),
                    token_required: false,
                };
                proto::write_msg(&mut c, &challenge).unwrap();
                let Ok(Msg::Auth { .. }) = proto::read_msg(&mut c) else {
                    return;
                };
                proto::write_msg(
                    &mut c,
                    &Msg::Welcome {
                        server: "drip".into(),
                    },
                )
                .unwrap();
                let Ok(Msg::Start { .. }) = proto::read_msg(&mut c) else {
                    return;
                };
                let data = TcpListener::bind("127.0.0.1:0").unwrap();
                let port = data.local_addr().unwrap().port();
                proto::write_msg(&mut c, &Msg::Ready { port }).unwrap();
                let (mut d, _) = data.accept().unwrap();
                let _ = tx.send(());
                let mut b = [0u8; 1];
                while d.read_exact(&mut b).is_ok() {
                    if d.write_all(&b).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
                // Hold the control connection until the client goes.
                let _ = c.read(&mut [0u8; 1]);
            });
        }
    });
    (addr, blocked)
}

fn net_against(sb: &Sandbox, peer: std::net::SocketAddr, timeout: &str) -> Child {
    sb.command()
        .args(["micro", "net/tcp_rtt_64b", "--runs", "1", "--no-store"])
        .arg("--peer")
        .arg(peer.to_string())
        .args(["--timeout", timeout])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn a_peer_dripping_its_handshake_ends_at_the_time_bound() {
    let sb = Sandbox::new();
    let (addr, _stop, _blocked) = dripping_peer();
    let t0 = Instant::now();
    let child = net_against(&sb, addr, "2s");
    // Bound 2 s + 2 s grace for the report + start-up; before: as long as the peer dripped.
    let (code, out, err) = wait_or_fail(
        child,
        Duration::from_secs(60),
        "net against a dripping peer",
    );
    assert_eq!(
        code, 0,
        "a benchmark's timeout is recorded, not an error: {err}"
    );
    assert!(out.contains("timeout: time bound"), "{out}\n{err}");
    eprintln!("ended after {:?}", t0.elapsed());
}
crate::register!(a_peer_dripping_its_handshake_ends_at_the_time_bound);

fn a_peer_dripping_its_handshake_is_left_at_the_first_signal() {
    let sb = Sandbox::new();
    let (addr, _stop, blocked) = dripping_peer();
    let child = net_against(&sb, addr, "10m");
    // Once it waits on the dripping handshake (no fixed sleep: a slow start is waited for).
    wait_blocked(&blocked);
    signal(&child, libc::SIGINT);
    let (code, out, err) = wait_or_fail(child, Duration::from_secs(20), "net after SIGINT");
    assert_eq!(code, 130, "{out}\n{err}");
    assert!(out.contains("interrupted"), "{out}\n{err}");
}
crate::register!(a_peer_dripping_its_handshake_is_left_at_the_first_signal);

fn a_peer_dripping_its_echo_ends_at_the_time_bound_and_at_the_first_signal() {
    let sb = Sandbox::new();
    let (addr, blocked) = peer_dripping_data();
    let child = net_against(&sb, addr, "3s");
    let (code, out, err) = wait_or_fail(child, Duration::from_secs(60), "echo at 1 byte/s");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("timeout: time bound"), "{out}\n{err}");
    // The first run's client reached the data phase too: only the second's is waited for.
    while blocked.try_recv().is_ok() {}
    let child = net_against(&sb, addr, "10m");
    wait_blocked(&blocked);
    signal(&child, libc::SIGTERM);
    let (code, out, err) = wait_or_fail(child, Duration::from_secs(20), "echo after SIGTERM");
    assert_eq!(code, 143, "{out}\n{err}");
}
crate::register!(a_peer_dripping_its_echo_ends_at_the_time_bound_and_at_the_first_signal);
