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
    // Right after a failure, this address backs off.
    let e = Client::connect(h.addr(), Some(TOKEN), T).unwrap_err();
    assert!(e.contains("slow down"), "{e}");
    std::thread::sleep(serve::sources::BACKOFF_BASE * 2);
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
    proto::write_msg(&mut a, &Msg::Auth { mac: mac.clone() }).unwrap();
    assert!(matches!(proto::read_msg(&mut a), Ok(Msg::Welcome { .. })));
    proto::write_msg(&mut b, &Msg::Auth { mac }).unwrap();
    expect_refuse(&mut b, "authentication failed");
    drop((a, b));
    std::thread::sleep(serve::sources::BACKOFF_BASE * 2);
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
    // (40 from one address: over the per-address pre-auth bound, which another test covers.)
    let h = server(false, |c| {
        c.max_sessions = 8;
        c.max_pending_per_source = 64;
    });
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

/// A TCP connection to `addr` from the loopback address `from` (127.0.0.x: Linux answers on all
/// of 127/8, so each is another source address to the server).
#[cfg(target_os = "linux")]
fn connect_from(from: &str, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(from.parse().unwrap(), 0).into())?;
    s.connect_timeout(&addr.into(), T)?;
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(T))?;
    Ok(s)
}

/// Hello and auth (with `token`'s MAC, or a wrong one) from `from`: what the server answers.
#[cfg(target_os = "linux")]
fn login_from(from: &str, addr: SocketAddr, token: Option<&[u8]>) -> Msg {
    let mut s = connect_from(from, addr).unwrap();
    let nonce = match hello(&mut s) {
        Msg::Challenge { nonce, .. } => proto::unhex(&nonce).unwrap(),
        m => return m,
    };
    let mac = match token {
        Some(t) => proto::auth_mac(t, &nonce),
        None => "00".repeat(32),
    };
    proto::write_msg(&mut s, &Msg::Auth { mac }).unwrap();
    proto::read_msg(&mut s).unwrap()
}

/// 300 connections from one address that never say a word (each would hold a pre-auth slot for
/// the whole handshake bound) take 16 slots; the rest are refused at once, naming the address,
/// and a client from another address is served meanwhile. Then 200 more addresses, one silent
/// connection each, fill the slots kept for addresses never seen authenticating: a new address is
/// refused, saying so, while the address that authenticated before is still served.
#[cfg(target_os = "linux")]
fn a_flood_from_one_address_leaves_another_addresses_client_served() {
    let h = server(false, |c| c.handshake_timeout = Duration::from_secs(20));
    let mut flood = Vec::new();
    let mut refused = 0;
    for _ in 0..300 {
        let mut s = connect_from("127.0.0.3", h.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        if let Ok(Msg::Refuse { reason }) = proto::read_msg(&mut s) {
            assert!(
                reason.contains("busy: 16 connections from 127.0.0.3"),
                "{reason}"
            );
            refused += 1;
        }
        flood.push(s);
    }
    // Each refusal is sent at accept: the ones not read within 20 ms are read now.
    for s in &mut flood {
        s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    }
    assert_eq!(h.pending(), 16, "pre-auth slots held by one address");
    assert!(refused > 0);
    assert!(h.refused() >= 284, "{} refused", h.refused());
    match login_from("127.0.0.2", h.addr(), None) {
        Msg::Welcome { .. } => {}
        m => panic!("the other address was not served: {m:?}"),
    }
    // Many new addresses: 256 slots, 64 kept for known addresses; 16 + 176 fill the shared part.
    let mut many = Vec::new();
    for i in 1..=200u32 {
        let from = format!("127.0.{}.{}", 1 + i / 250, 1 + i % 250);
        many.push(connect_from(&from, h.addr()).unwrap());
    }
    let t0 = Instant::now();
    while h.pending() < 192 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(h.pending(), 192);
    match login_from("127.0.0.9", h.addr(), None) {
        Msg::Refuse { reason } => assert!(reason.contains("kept for addresses"), "{reason}"),
        m => panic!("a new address took a kept slot: {m:?}"),
    }
    match login_from("127.0.0.2", h.addr(), None) {
        Msg::Welcome { .. } => {}
        m => panic!("the address seen before was not served: {m:?}"),
    }
    drop(flood);
    drop(many);
}
#[cfg(target_os = "linux")]
crate::register!(a_flood_from_one_address_leaves_another_addresses_client_served);

/// Wrong tokens from one address meet a back-off that doubles: of 30 attempts in a row, most are
/// refused unchecked ("slow down", counted as throttled) instead of being answered; 8 connections
/// opened together and answered one after another get one checked guess, not 8; another address
/// with the right token is served meanwhile, and the guessing address is refused even with the
/// right token until its wait is over. (Counts, not speed: the waits only grow.)
#[cfg(target_os = "linux")]
fn failed_authentications_back_off_per_address() {
    let h = server(true, |_| {});
    let (mut failed, mut slowed) = (0, 0);
    for _ in 0..30 {
        match login_from("127.0.0.4", h.addr(), None) {
            Msg::Refuse { reason } if reason == "authentication failed" => failed += 1,
            Msg::Refuse { reason } if reason.contains("slow down") => {
                assert!(
                    reason.contains("failed authentications from 127.0.0.4"),
                    "{reason}"
                );
                slowed += 1
            }
            m => panic!("{m:?}"),
        }
    }
    assert_eq!(failed + slowed, 30);
    assert_eq!(h.wrong_tokens(), failed as u64);
    assert!(
        slowed > 0 && failed < 30,
        "{failed} checked, {slowed} slowed"
    );
    assert!(h.throttled() >= slowed as u64);
    match login_from("127.0.0.5", h.addr(), Some(TOKEN)) {
        Msg::Welcome { .. } => {}
        m => panic!("another address was not served: {m:?}"),
    }
    match login_from("127.0.0.4", h.addr(), Some(TOKEN)) {
        Msg::Refuse { reason } => assert!(reason.contains("slow down"), "{reason}"),
        m => panic!("the guessing address got in during its back-off: {m:?}"),
    }
    // Eight connections with their challenges, then eight wrong answers.
    let before = h.wrong_tokens();
    let mut conns: Vec<_> = (0..8)
        .map(|_| {
            let mut s = connect_from("127.0.0.6", h.addr()).unwrap();
            assert!(matches!(hello(&mut s), Msg::Challenge { .. }));
            s
        })
        .collect();
    let mut said = Vec::new();
    for s in &mut conns {
        let mac = "00".repeat(32);
        proto::write_msg(s, &Msg::Auth { mac }).unwrap();
        if let Ok(Msg::Refuse { reason }) = proto::read_msg(s) {
            said.push(reason);
        }
    }
    let checked = h.wrong_tokens() - before;
    assert!(checked < 8, "{checked} of 8 answers checked: {said:?}");
    assert!(said.iter().any(|r| r.contains("slow down")), "{said:?}");
}
#[cfg(target_os = "linux")]
crate::register!(failed_authentications_back_off_per_address);
