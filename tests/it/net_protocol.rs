//! `osgauge serve`'s control protocol against hostile and broken clients, over loopback: wrong or
//! missing token, another protocol version, oversized, truncated and malformed frames, a client
//! that disconnects in the middle of a test, a byte limit, the idle timeout, and 100 concurrent
//! connections — after each, the server still serves a well-behaved client and its number of
//! sessions stays within its limit.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use osgauge::serve::client::Client;
use osgauge::serve::proto::{self, Msg, TestSpec};
use osgauge::serve::{self, ServerConfig, ServerHandle};

const TOKEN: &[u8] = b"a-test-token-of-enough-length";
const T: Duration = Duration::from_secs(5);

fn server(token: bool, tweak: impl FnOnce(&mut ServerConfig)) -> ServerHandle {
    let mut cfg = ServerConfig::loopback();
    cfg.handshake_timeout = Duration::from_secs(1);
    if token {
        cfg.token = Some(TOKEN.to_vec());
    }
    tweak(&mut cfg);
    serve::start(cfg).unwrap()
}

fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, T).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s
}

fn hello(s: &mut TcpStream) -> Msg {
    proto::write_msg(
        s,
        &Msg::Hello {
            protocol: proto::PROTOCOL.into(),
            version: proto::VERSION,
        },
    )
    .unwrap();
    proto::read_msg(s).unwrap()
}

/// The server answers a well-behaved client with a working echo test.
fn still_serves(h: &ServerHandle, token: Option<&[u8]>) {
    let t0 = Instant::now();
    let mut c = loop {
        match Client::connect(h.addr(), token, T) {
            Ok(c) => break c,
            // Busy while the previous sessions time out: bounded wait.
            Err(e) if e.contains("busy") && t0.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("server no longer serves: {e}"),
        }
    };
    let data = c
        .start(&TestSpec::Echo {
            size: 64,
            pin_cpu: None,
        })
        .unwrap();
    let mut d = TcpStream::connect_timeout(&data, T).unwrap();
    d.set_read_timeout(Some(T)).unwrap();
    let msg = [7u8; 64];
    let mut back = [0u8; 64];
    for _ in 0..10 {
        d.write_all(&msg).unwrap();
        d.read_exact(&mut back).unwrap();
        assert_eq!(back, msg);
    }
    drop(d);
    let r = c.finish(640, 0).unwrap();
    assert_eq!(r.bytes, 640);
    c.bye();
}

fn expect_refuse(s: &mut TcpStream, needle: &str) {
    match proto::read_msg(s) {
        Ok(Msg::Refuse { reason }) => assert!(reason.contains(needle), "{reason}"),
        other => panic!("expected a refusal containing '{needle}', got {other:?}"),
    }
}

fn token_is_checked_by_challenge_response() {
    let h = server(true, |_| {});
    let e = Client::connect(h.addr(), Some(b"the-wrong-token-value!!"), T).unwrap_err();
    assert!(e.contains("authentication failed"), "{e}");
    let e = Client::connect(h.addr(), None, T).unwrap_err();
    assert!(e.contains("requires a token"), "{e}");
    // A raw client: the challenge is a fresh nonce each time, and a replayed answer fails.
    let mut a = raw(h.addr());
    let Msg::Challenge {
        nonce,
        token_required,
        ..
    } = hello(&mut a)
    else {
        panic!()
    };
    assert!(token_required);
    let mut b = raw(h.addr());
    let Msg::Challenge { nonce: nonce2, .. } = hello(&mut b) else {
        panic!()
    };
    assert_ne!(nonce, nonce2);
    let mac = proto::auth_mac(TOKEN, &proto::unhex(&nonce).unwrap());
    proto::write_msg(&mut b, &Msg::Auth { mac: mac.clone() }).unwrap();
    expect_refuse(&mut b, "authentication failed");
    proto::write_msg(&mut a, &Msg::Auth { mac }).unwrap();
    assert!(matches!(proto::read_msg(&mut a), Ok(Msg::Welcome { .. })));
    drop((a, b));
    still_serves(&h, Some(TOKEN));
}
crate::register!(token_is_checked_by_challenge_response);

fn other_protocol_versions_are_refused_clearly() {
    let h = server(false, |_| {});
    let mut s = raw(h.addr());
    proto::write_msg(
        &mut s,
        &Msg::Hello {
            protocol: proto::PROTOCOL.into(),
            version: 99,
        },
    )
    .unwrap();
    expect_refuse(
        &mut s,
        "osgauge-net/99 not supported: this server speaks osgauge-net/1",
    );
    still_serves(&h, None);
}
crate::register!(other_protocol_versions_are_refused_clearly);

fn oversized_truncated_and_malformed_frames_end_only_their_session() {
    let h = server(false, |_| {});
    // Oversized: refused on the length alone.
    let mut s = raw(h.addr());
    s.write_all(&(10u32 << 20).to_be_bytes()).unwrap();
    expect_refuse(&mut s, "oversized");
    // Truncated: half a length, then half a body, then the client goes away.
    let mut s = raw(h.addr());
    s.write_all(&[0, 0]).unwrap();
    drop(s);
    let mut s = raw(h.addr());
    s.write_all(&100u32.to_be_bytes()).unwrap();
    s.write_all(b"{\"type\":").unwrap();
    drop(s);
    // Malformed JSON and an unknown message type.
    for body in [&b"\xff\xfe not json"[..], b"{\"type\":\"format_disk\"}"] {
        let mut s = raw(h.addr());
        s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
        s.write_all(body).unwrap();
        expect_refuse(&mut s, "malformed");
    }
    // A message out of order after the handshake.
    let mut c = raw(h.addr());
    hello(&mut c);
    proto::write_msg(&mut c, &Msg::Auth { mac: String::new() }).unwrap();
    assert!(matches!(proto::read_msg(&mut c), Ok(Msg::Welcome { .. })));
    proto::write_msg(&mut c, &Msg::Ready { port: 1 }).unwrap();
    expect_refuse(&mut c, "unexpected message");
    still_serves(&h, None);
}
crate::register!(oversized_truncated_and_malformed_frames_end_only_their_session);

fn a_client_vanishing_mid_test_frees_its_session() {
    let h = server(false, |c| c.idle_timeout = Duration::from_secs(2));
    let mut c = Client::connect(h.addr(), None, T).unwrap();
    let data = c
        .start(&TestSpec::Sink {
            streams: 2,
            idle_ms: 0,
        })
        .unwrap();
    let mut d1 = TcpStream::connect_timeout(&data, T).unwrap();
    let d2 = TcpStream::connect_timeout(&data, T).unwrap();
    d1.write_all(&[1u8; 100_000]).unwrap();
    // Gone without finish or bye: the control connection closes, one data connection stays open.
    drop(c);
    drop(d1);
    let t0 = Instant::now();
    while h.active_sessions() > 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the session outlived its client"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(d2);
    still_serves(&h, None);
}
crate::register!(a_client_vanishing_mid_test_frees_its_session);

fn byte_limit_and_idle_timeout_hold() {
    let h = server(false, |c| {
        c.max_bytes = 1 << 20;
        c.idle_timeout = Duration::from_millis(500);
    });
    let mut c = Client::connect(h.addr(), None, T).unwrap();
    let data = c
        .start(&TestSpec::Sink {
            streams: 1,
            idle_ms: 0,
        })
        .unwrap();
    let mut d = TcpStream::connect_timeout(&data, T).unwrap();
    let chunk = vec![0u8; 64 << 10];
    let mut sent = 0u64;
    // The peer stops reading at the limit: writing fails or the sink closes.
    while sent < 8 << 20 && d.write_all(&chunk).is_ok() {
        sent += chunk.len() as u64;
    }
    drop(d);
    let r = c.finish(sent, 0).unwrap();
    assert!(r.errors.iter().any(|e| e.contains("byte limit")), "{r:?}");
    assert!(r.bytes <= (1 << 20) + (256 << 10), "{}", r.bytes);
    // The idle timeout: a silent authenticated session is told and closed.
    let mut s = raw(h.addr());
    hello(&mut s);
    proto::write_msg(&mut s, &Msg::Auth { mac: String::new() }).unwrap();
    assert!(matches!(proto::read_msg(&mut s), Ok(Msg::Welcome { .. })));
    std::thread::sleep(Duration::from_millis(900));
    expect_refuse(&mut s, "idle timeout");
    still_serves(&h, None);
}
crate::register!(byte_limit_and_idle_timeout_hold);

/// hello + auth (no token) on a raw connection: the server's answer (welcome or refuse).
fn authenticate(s: &mut TcpStream) -> Msg {
    match hello(s) {
        Msg::Challenge { .. } => {}
        m => return m,
    }
    proto::write_msg(s, &Msg::Auth { mac: String::new() }).unwrap();
    proto::read_msg(s).unwrap()
}

fn hundred_concurrent_sessions_stay_bounded() {
    // Session slots are taken once authenticated: 100 clients that authenticate and stay get 8
    // sessions; every one over the limit is told it is refused as busy, at once.
    let h = server(false, |c| c.max_sessions = 8);
    let mut conns = Vec::new();
    let (mut max_active, mut busy, mut welcomed) = (0, 0, 0);
    for _ in 0..100 {
        let mut s = raw(h.addr());
        match authenticate(&mut s) {
            Msg::Welcome { .. } => welcomed += 1,
            Msg::Refuse { reason } => {
                assert!(reason.contains("busy"), "{reason}");
                busy += 1;
            }
            m => panic!("unexpected {m:?}"),
        }
        conns.push(s);
        max_active = max_active.max(h.active_sessions());
    }
    assert!(
        max_active <= 8,
        "{max_active} sessions at once over a limit of 8"
    );
    assert_eq!(welcomed, 8, "{busy} busy");
    assert_eq!(busy, 92);
    assert!(h.refused() >= 92);
    drop(conns);
    still_serves(&h, None);
    assert!(h.active_sessions() <= 8);
}
crate::register!(hundred_concurrent_sessions_stay_bounded);

/// A connection that sends a frame's length prefix and then one byte every `every`.
fn drip(
    addr: SocketAddr,
    prefix: &[u8],
    every: Duration,
) -> std::thread::JoinHandle<Option<(Duration, String)>> {
    let mut s = raw(addr);
    let prefix = prefix.to_vec();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        s.write_all(&prefix).ok()?;
        s.set_read_timeout(Some(every)).unwrap();
        let mut buf = [0u8; 4096];
        let mut got = Vec::new();
        while t0.elapsed() < Duration::from_secs(30) {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
            if s.write_all(b"{").is_err() {
                break;
            }
        }
        Some((t0.elapsed(), String::from_utf8_lossy(&got).into_owned()))
    })
}

fn unauthenticated_drips_never_hold_a_session_slot_past_the_handshake_deadline() {
    // 40 connections that announce a 64 KiB hello and send it one byte every 100 ms: with a
    // per-read timeout they lived for minutes and took every session slot. Now a real client is
    // served while they drip, and each is dropped at the 1 s handshake deadline.
    let h = server(false, |c| c.max_sessions = 8);
    let drips: Vec<_> = (0..40)
        .map(|_| {
            drip(
                h.addr(),
                &(64u32 << 10).to_be_bytes(),
                Duration::from_millis(100),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    still_serves(&h, None);
    for d in drips {
        let (took, said) = d.join().unwrap().expect("the drip started");
        assert!(
            said.contains("handshake not completed within 1.0 s"),
            "{said}"
        );
        // Dropped at the deadline (1 s), not after the 30 s the drip would go on for.
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
    assert_eq!(h.active_sessions(), 0);
}
crate::register!(unauthenticated_drips_never_hold_a_session_slot_past_the_handshake_deadline);

fn after_auth_idle_and_session_time_are_deadlines_not_per_read_timeouts() {
    for (idle, session, needle) in [
        (
            Duration::from_millis(500),
            Duration::from_secs(600),
            "idle timeout",
        ),
        (
            Duration::from_secs(600),
            Duration::from_millis(800),
            "session time limit reached",
        ),
    ] {
        let h = server(false, |c| {
            c.idle_timeout = idle;
            c.max_session = session;
        });
        let mut s = raw(h.addr());
        assert!(matches!(authenticate(&mut s), Msg::Welcome { .. }));
        // A `start` frame announced and then dripped a byte every 100 ms.
        let t0 = Instant::now();
        s.write_all(&(1000u32).to_be_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let said = loop {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{needle}: still open after 20 s"
            );
            let mut buf = [0u8; 4096];
            match s.read(&mut buf) {
                Ok(0) => break String::new(),
                Ok(n) => break String::from_utf8_lossy(&buf[..n]).into_owned(),
                Err(_) => {}
            }
            if s.write_all(b" ").is_err() {
                break String::new();
            }
        };
        assert!(said.contains(needle), "{needle}: {said:?}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{needle}: {:?}",
            t0.elapsed()
        );
    }
}
crate::register!(after_auth_idle_and_session_time_are_deadlines_not_per_read_timeouts);

fn an_echo_whose_control_connection_closed_ends_with_its_session() {
    // The client starts an echo test, drops the control connection and keeps echoing: the echo
    // used to go on unbounded (threads and memory from any loopback client). Now the data
    // connection is shut down when the session ends, and the session slot is freed.
    let h = server(false, |c| c.max_sessions = 2);
    let mut c = Client::connect(h.addr(), None, T).unwrap();
    let data = c
        .start(&TestSpec::Echo {
            size: 64,
            pin_cpu: None,
        })
        .unwrap();
    let mut d = TcpStream::connect_timeout(&data, T).unwrap();
    d.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    drop(c);
    let t0 = Instant::now();
    let msg = [1u8; 64];
    let mut back = [0u8; 64];
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the orphaned echo still echoes"
        );
        if d.write_all(&msg).is_err() || d.read_exact(&mut back).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    while h.active_sessions() > 0 {
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    still_serves(&h, None);
}
crate::register!(an_echo_whose_control_connection_closed_ends_with_its_session);

fn echo_counts_against_the_byte_limit() {
    let h = server(false, |c| c.max_bytes = 64 << 10);
    let mut c = Client::connect(h.addr(), None, T).unwrap();
    let data = c
        .start(&TestSpec::Echo {
            size: 1024,
            pin_cpu: None,
        })
        .unwrap();
    let mut d = TcpStream::connect_timeout(&data, T).unwrap();
    d.set_read_timeout(Some(T)).unwrap();
    let msg = [1u8; 1024];
    let mut back = [0u8; 1024];
    let mut echoed = 0u64;
    while echoed < 1 << 20 && d.write_all(&msg).is_ok() && d.read_exact(&mut back).is_ok() {
        echoed += 1024;
    }
    assert!(
        echoed <= 64 << 10,
        "echoed {echoed} bytes past a 64 KiB limit"
    );
    drop(d);
    // The client learns which limit ended the test.
    match c.finish(echoed, 0) {
        Ok(r) => assert!(r.errors.iter().any(|e| e.contains("--max-bytes")), "{r:?}"),
        Err(e) => assert!(e.contains("--max-bytes"), "{e}"),
    }
}
crate::register!(echo_counts_against_the_byte_limit);

fn client_strings_are_escaped_before_they_are_logged_or_echoed() {
    let h = server(false, |_| {});
    let mut s = raw(h.addr());
    let evil = format!(
        "x\nsession 99 from 1.2.3.4: forged\u{1b}[2J\u{202e}{}",
        "y".repeat(5000)
    );
    proto::write_msg(
        &mut s,
        &Msg::Hello {
            protocol: evil,
            version: proto::VERSION,
        },
    )
    .unwrap();
    match proto::read_msg(&mut s).unwrap() {
        Msg::Refuse { reason } => {
            assert!(
                !reason.contains('\n')
                    && !reason.contains('\u{1b}')
                    && !reason.contains('\u{202e}'),
                "{reason:?}"
            );
            assert!(
                reason.contains("x\\nsession") && reason.contains('…'),
                "{reason}"
            );
            assert!(reason.len() < 600, "{} bytes", reason.len());
        }
        m => panic!("{m:?}"),
    }
}
crate::register!(client_strings_are_escaped_before_they_are_logged_or_echoed);

fn other_addresses_need_a_token() {
    let mut cfg = ServerConfig::loopback();
    cfg.listen = "0.0.0.0:0".parse().unwrap();
    let e = cfg.check().unwrap_err();
    assert!(e.contains("token is required"), "{e}");
    assert!(serve::start(cfg).is_err());
}
crate::register!(other_addresses_need_a_token);
