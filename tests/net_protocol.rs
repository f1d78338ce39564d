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

#[test]
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

#[test]
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

#[test]
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

#[test]
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

#[test]
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

#[test]
fn hundred_concurrent_connections_stay_bounded() {
    let h = server(false, |c| c.max_sessions = 8);
    let mut conns = Vec::new();
    let mut max_active = 0;
    for _ in 0..100 {
        conns.push(raw(h.addr()));
        max_active = max_active.max(h.active_sessions());
    }
    // Every connection over the limit is told it is refused as busy, at once.
    let mut busy = 0;
    for s in &mut conns {
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        if let Ok(Msg::Refuse { reason }) = proto::read_msg(s) {
            assert!(
                reason.contains("busy") || reason.contains("handshake"),
                "{reason}"
            );
            busy += usize::from(reason.contains("busy"));
        }
        max_active = max_active.max(h.active_sessions());
    }
    assert!(
        max_active <= 8,
        "{max_active} sessions at once over a limit of 8"
    );
    assert!(busy >= 92 - 8, "only {busy} of 100 refused as busy");
    assert!(h.refused() >= 84);
    drop(conns);
    still_serves(&h, None);
    assert!(h.active_sessions() <= 8);
}

#[test]
fn other_addresses_need_a_token() {
    let mut cfg = ServerConfig::loopback();
    cfg.listen = "0.0.0.0:0".parse().unwrap();
    let e = cfg.check().unwrap_err();
    assert!(e.contains("token is required"), "{e}");
    assert!(serve::start(cfg).is_err());
}
