//! The client against a hostile peer: a small fake `osgauge serve` (it speaks the protocol, sinks
//! the data for real) that sends each kind of impossible report, hostile text and a refusal full
//! of escape sequences, or its report a byte at a time. `osgauge micro net/tcp_stream --peer`
//! refuses every impossible report with its reason (a slow one ends at the time bound), stores
//! nothing of it as measured, exits 5 with --fail-on-error, and no peer text reaches the terminal
//! or the record raw.

use crate::common;

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Output;
use std::time::{Duration, Instant};

use osgauge::serve::proto::{self, Msg, PeerReport, TestSpec};
use serde_json::Value;

/// What the fake peer does wrong.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// 2^64 − 1 bytes received.
    Bytes,
    /// The bytes it got in a nanosecond (the "8000 Tbit/s").
    Rate,
    /// Negative receiving-thread CPU.
    ThreadCpu,
    /// A negative counter resolution and net CPU.
    Cpu,
    /// An honest report whose text is an escape sequence and 60 000 characters.
    Text,
    /// A refusal of the test whose reason is an escape sequence and 60 000 characters.
    Refuse,
    /// An honest report sent one byte every 300 ms.
    Slow,
}

fn nasty() -> String {
    format!("\u{1b}[2J\u{1b}]0;owned\u{7}{}", "A".repeat(60_000))
}

/// Serve one session on `l` the way `lie` says.
fn fake_peer(l: TcpListener, lie: Lie) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok((mut ctl, _)) = l.accept() else { return };
        ctl.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let Ok(Msg::Hello { .. }) = proto::read_msg(&mut ctl) else {
            return;
        };
        let nonce = proto::hex(&proto::nonce());
        let challenge = Msg::Challenge {
            version: proto::VERSION,
            nonce,
            token_required: false,
        };
        proto::write_msg(&mut ctl, &challenge).unwrap();
        let Ok(Msg::Auth { .. }) = proto::read_msg(&mut ctl) else {
            return;
        };
        let welcome = Msg::Welcome {
            server: format!("fake{}", nasty()),
        };
        proto::write_msg(&mut ctl, &welcome).unwrap();
        while let Ok(m) = proto::read_msg(&mut ctl) {
            let Msg::Start { test } = m else { return };
            if let Lie::Refuse = lie {
                let _ = proto::write_msg(&mut ctl, &Msg::Refuse { reason: nasty() });
                return;
            }
            let TestSpec::Sink { streams, .. } = test else {
                return;
            };
            let data = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = data.local_addr().unwrap().port();
            proto::write_msg(&mut ctl, &Msg::Ready { port }).unwrap();
            let sinks: Vec<_> = (0..streams)
                .map(|_| {
                    let (mut c, _) = data.accept().unwrap();
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 1 << 16];
                        let (mut n, mut first, mut last) = (0u64, None, None);
                        while let Ok(k) = c.read(&mut buf) {
                            if k == 0 {
                                break;
                            }
                            let now = Instant::now();
                            first.get_or_insert(now);
                            last = Some(now);
                            n += k as u64;
                        }
                        (n, first, last)
                    })
                })
                .collect();
            let Ok(Msg::Finish { .. }) = proto::read_msg(&mut ctl) else {
                return;
            };
            let (mut bytes, mut active) = (0, 0.0f64);
            for s in sinks {
                let (n, f, l) = s.join().unwrap();
                bytes += n;
                if let (Some(f), Some(l)) = (f, l) {
                    active = active.max(l.duration_since(f).as_secs_f64());
                }
            }
            let mut r = PeerReport {
                bytes,
                active_s: active.max(1e-3),
                connections: streams as u64,
                cpu_error: Some("not measured by the fake peer".into()),
                rx_thread_cpu_error: Some("not measured by the fake peer".into()),
                ..Default::default()
            };
            match lie {
                Lie::Bytes => r.bytes = u64::MAX,
                Lie::Rate => r.active_s = 1e-9,
                Lie::ThreadCpu => {
                    r.rx_thread_cpu_s = Some(-1e308);
                    r.rx_thread_cpu_error = None;
                }
                Lie::Cpu => {
                    let w = osgauge::cpucost::Window {
                        wall_s: 0.1,
                        busy_cpu_s: 0.01,
                        total_cpu_s: 0.2,
                        process_cpu_s: 0.0,
                        irq_cpu_s: None,
                        steal_cpu_s: None,
                    };
                    let mut c = osgauge::cpucost::CpuCost::from_windows(w, w);
                    c.resolution_cpu_s = -1.0;
                    c.net_cpu_s = -1e308;
                    r.cpu = Some(c);
                    r.cpu_error = None;
                }
                Lie::Text => {
                    r.cpu_error = Some(nasty());
                    r.rx_thread_cpu_error = Some("\u{1b}[31mred\u{1b}[0m".into());
                }
                Lie::Refuse => unreachable!(),
                Lie::Slow => {
                    for b in proto::encode(&Msg::Report {
                        report: Box::new(r.clone()),
                    }) {
                        if std::io::Write::write_all(&mut ctl, &[b]).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(300));
                    }
                    return;
                }
            }
            let report = Msg::Report {
                report: Box::new(r),
            };
            if proto::write_msg(&mut ctl, &report).is_err() {
                return;
            }
        }
    })
}

/// Run net/tcp_stream once against a fake peer that lies as `lie` says.
fn run_against(dir: &std::path::Path, lie: Lie) -> (Output, Value) {
    run_against_with(dir, lie, &[])
}

fn run_against_with(dir: &std::path::Path, lie: Lie, more: &[&str]) -> (Output, Value) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = l.local_addr().unwrap();
    let peer = fake_peer(l, lie);
    let json = dir.join(format!("{lie:?}.json"));
    let out = common::osgauge_std()
        .env("OSGAUGE_STORE", dir.join("store.db"))
        .env("OSGAUGE_CACHE_DIR", dir.join("cache"))
        .args(["micro", "net/tcp_stream", "--runs", "1", "--warmup", "0"])
        .args(["--run-time", "100ms", "--no-store", "--fail-on-error"])
        .args(["--peer", &addr.to_string(), "--export-json"])
        .arg(&json)
        .args(more)
        .output()
        .unwrap();
    // The client has ended its session: the fake peer's thread ends with it.
    let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
    let _ = peer.join();
    let rec = common::read_json(&json);
    (out, rec)
}

fn no_raw_peer_text(o: &Output, rec: &Value) {
    for (what, text) in [
        ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(&o.stderr).into_owned()),
        ("record", rec.to_string()),
    ] {
        assert!(!text.contains('\u{1b}'), "{what}: a raw escape reached it");
        assert!(!text.contains('\u{7}'), "{what}: a raw BEL reached it");
        assert!(
            !text.contains(&"A".repeat(1000)),
            "{what}: the peer's 60 000-character text was not cut"
        );
    }
}

fn impossible_peer_reports_are_failed_runs_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (lie, says) in [
        (Lie::Bytes, "18446744073709551615 bytes received"),
        (Lie::Rate, "faster than any network stack"),
        (Lie::ThreadCpu, "receiving threads' CPU is -1e308"),
        (Lie::Cpu, "CPU"),
    ] {
        let (o, rec) = run_against(dir.path(), lie);
        let b = &rec["benchmarks"][0];
        let e = b["error"]["message"].as_str().unwrap_or_default();
        assert!(
            e.contains("the peer's report is impossible") && e.contains(says),
            "{lie:?}: error {e:?}; stderr {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(b["error"]["kind"], "failed", "{lie:?}");
        // Nothing of it stored as measured.
        for m in b["metrics"].as_array().into_iter().flatten() {
            assert!(m["summary"].is_null(), "{lie:?}: {m}");
        }
        assert_eq!(o.status.code(), Some(5), "{lie:?}: --fail-on-error");
        no_raw_peer_text(&o, &rec);
    }
}
crate::register!(impossible_peer_reports_are_failed_runs_with_the_reason);

fn peer_text_is_escaped_and_cut_everywhere_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    // An honest report with hostile text: measured, its text escaped and cut.
    let (o, rec) = run_against(dir.path(), Lie::Text);
    no_raw_peer_text(&o, &rec);
    let b = &rec["benchmarks"][0];
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert!(
        rec.to_string().contains("\\\\u{1b}[2J"),
        "the escape is shown escaped"
    );
    // A refusal with hostile text: a failed run, its reason escaped and cut.
    let (o, rec) = run_against(dir.path(), Lie::Refuse);
    no_raw_peer_text(&o, &rec);
    let e = rec["benchmarks"][0]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(e.contains("the peer refused: \\u{1b}[2J"), "{e}");
    assert!(e.chars().count() < 600, "{} characters", e.chars().count());
    assert_eq!(o.status.code(), Some(5));
}
crate::register!(peer_text_is_escaped_and_cut_everywhere_it_goes);

/// A peer that sends its report one byte every 300 ms: the run ends at its time bound as a
/// timeout, nothing of the report is used, and --fail-on-error exits 5.
fn a_peer_answering_slowly_ends_at_the_time_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (o, rec) = run_against_with(dir.path(), Lie::Slow, &["--timeout", "3s"]);
    let b = &rec["benchmarks"][0];
    assert_eq!(b["error"]["kind"], "timeout", "{}", b["error"]);
    for m in b["metrics"].as_array().into_iter().flatten() {
        assert!(m["summary"].is_null(), "{m}");
    }
    assert_eq!(o.status.code(), Some(5));
}
crate::register!(a_peer_answering_slowly_ends_at_the_time_bound);
