//! The control protocol between an osgauge client and `osgauge serve` (netperf's design: one
//! control connection, separate data connections; nothing on the control connection while a test
//! moves data).
//!
//! Wire format: a frame is a 4-byte big-endian length followed by that many bytes of one JSON
//! message (at most [`MAX_FRAME`] bytes). A session is:
//! 1. client `hello {protocol, version}` → server `challenge {version, nonce, token_required}` or
//!    `refuse` (other protocol or version: the reason names both versions);
//! 2. client `auth {mac}`, the HMAC-SHA256 of `osgauge-net/1` ‖ nonce keyed with the shared token
//!    (the token itself never crosses the wire) → `welcome` or `refuse`;
//! 3. any number of tests: `start {test}` → `ready {port}` (the data port on the server's own
//!    address) → data connections → `finish {sent_bytes, sent_datagrams}` → `report {report}`;
//! 4. `bye`.

use std::io::{self, Read, Write};

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::udp_stats::UdpSummary;
use crate::cpucost::CpuCost;

pub const PROTOCOL: &str = "osgauge-net";
pub const VERSION: u32 = 1;
/// Largest frame body accepted, bytes.
pub const MAX_FRAME: usize = 64 * 1024;
/// Nonce length, bytes.
pub const NONCE_LEN: usize = 32;

/// What a test asks the peer to do on its side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TestSpec {
    /// Echo `size`-byte messages on one data connection (round trip); the peer's echo thread is
    /// pinned to `pin_cpu` where given.
    Echo { size: u32, pin_cpu: Option<usize> },
    /// Accept `streams` connections and count the bytes received until each closes; measure the
    /// peer's CPU cost with an idle baseline of `idle_ms` first.
    Sink { streams: u32, idle_ms: u32 },
    /// Accept connections, read each to its end and close it (connection setup/teardown).
    Accept,
    /// Receive datagrams of `size` bytes sent at `rate_bps` on one UDP port, timestamp each.
    Udp {
        size: u32,
        rate_bps: u64,
        idle_ms: u32,
    },
}

impl TestSpec {
    pub fn name(&self) -> &'static str {
        match self {
            TestSpec::Echo { .. } => "echo",
            TestSpec::Sink { .. } => "tcp_sink",
            TestSpec::Accept => "accept",
            TestSpec::Udp { .. } => "udp",
        }
    }
}

/// What the peer measured on its side of a test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeerReport {
    /// Bytes received on the data connections (or datagram payload bytes).
    pub bytes: u64,
    /// First byte to last byte received, seconds (over all streams).
    pub active_s: f64,
    /// Connections accepted.
    pub connections: u64,
    /// The peer's CPU cost (system-wide minus its idle baseline, and its own process).
    pub cpu: Option<CpuCost>,
    /// Why `cpu` is missing.
    pub cpu_error: Option<String>,
    /// Receive buffer size the peer's data socket reports, bytes.
    pub rcvbuf: Option<u64>,
    /// The CPU the echo thread was pinned to (read back).
    pub pinned_cpu: Option<usize>,
    pub pin_error: Option<String>,
    /// UDP receive statistics.
    pub udp: Option<UdpSummary>,
    /// TCP sink: the receiving threads' own CPU, s — each one's thread CPU clock from its first
    /// recv to its connection's end, summed over streams. Absent from an older peer (then
    /// `rx_thread_cpu_error` is absent too), or when not measured (`rx_thread_cpu_error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_thread_cpu_s: Option<f64>,
    /// Why `rx_thread_cpu_s` is missing (a clock not read, or too coarse for the test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_thread_cpu_error: Option<String>,
    /// Problems on the peer's side (e.g. a stream that failed).
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Msg {
    Hello {
        protocol: String,
        version: u32,
    },
    Challenge {
        version: u32,
        nonce: String,
        token_required: bool,
    },
    Auth {
        mac: String,
    },
    Welcome {
        server: String,
    },
    Start {
        test: TestSpec,
    },
    Ready {
        port: u16,
    },
    Finish {
        sent_bytes: u64,
        sent_datagrams: u64,
    },
    Report {
        report: Box<PeerReport>,
    },
    Refuse {
        reason: String,
    },
    Bye,
}

/// A protocol error (what the peer sent could not be used).
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("connection closed")]
    Closed,
    #[error("truncated frame: {0}")]
    Truncated(String),
    #[error("oversized frame: {0} bytes (limit {MAX_FRAME})")]
    Oversized(usize),
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Decode one frame body (pure; the fuzz target's entry point).
pub fn decode(body: &[u8]) -> Result<Msg, ProtoError> {
    if body.len() > MAX_FRAME {
        return Err(ProtoError::Oversized(body.len()));
    }
    serde_json::from_slice(body).map_err(|e| ProtoError::Malformed(e.to_string()))
}

/// Encode a message as one frame (length prefix + body).
pub fn encode(m: &Msg) -> Vec<u8> {
    let body = serde_json::to_vec(m).expect("messages serialise");
    let mut v = Vec::with_capacity(body.len() + 4);
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(&body);
    v
}

/// Read one frame and decode it. A length over [`MAX_FRAME`] is refused before reading the body.
pub fn read_msg(r: &mut impl Read) -> Result<Msg, ProtoError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Err(ProtoError::Closed),
            Ok(0) => return Err(ProtoError::Truncated(format!("{got} of 4 length bytes"))),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let n = u32::from_be_bytes(len) as usize;
    if n > MAX_FRAME {
        return Err(ProtoError::Oversized(n));
    }
    let mut body = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match r.read(&mut body[got..]) {
            Ok(0) => return Err(ProtoError::Truncated(format!("{got} of {n} body bytes"))),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    decode(&body)
}

pub fn write_msg(w: &mut impl Write, m: &Msg) -> io::Result<()> {
    w.write_all(&encode(m))?;
    w.flush()
}

/// Hex encoding (lower case).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

fn mac_for(token: &[u8], nonce: &[u8]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(token).expect("HMAC takes any key");
    m.update(format!("{PROTOCOL}/{VERSION}").as_bytes());
    m.update(nonce);
    m
}

/// The client's answer to a challenge: hex HMAC-SHA256(token, "osgauge-net/1" ‖ nonce).
pub fn auth_mac(token: &[u8], nonce: &[u8]) -> String {
    hex(&mac_for(token, nonce).finalize().into_bytes())
}

/// Check an answer in constant time.
pub fn verify_mac(token: &[u8], nonce: &[u8], mac_hex: &str) -> bool {
    match unhex(mac_hex) {
        Some(tag) => mac_for(token, nonce).verify_slice(&tag).is_ok(),
        None => false,
    }
}

/// A fresh random nonce (the thread RNG: ChaCha seeded from the OS).
pub fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::fill(&mut n);
    n
}

/// Bytes of randomness in a generated token ([`new_token`]): 256 bits.
pub const NEW_TOKEN_BYTES: usize = 32;

/// A new token: [`NEW_TOKEN_BYTES`] random bytes from the OS-seeded thread RNG, as hex.
pub fn new_token() -> String {
    let mut b = [0u8; NEW_TOKEN_BYTES];
    rand::fill(&mut b);
    hex(&b)
}

/// Read a token file: its contents with surrounding white space removed; at least 16 bytes.
/// A token file readable by other users gets a warning on standard error (ssh refuses such keys;
/// osgauge warns, as the token only keys an HMAC of a nonce and never crosses the wire).
pub fn read_token(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Ok(Some(why)) = crate::platform::fs::secret_open_to_others(path) {
        crate::errln!(
            "osgauge: warning: --token-file {} is not private ({why}); anyone who can read it can use this peer",
            path.display()
        );
    }
    let t = raw.trim_ascii().to_vec();
    if t.len() < 16 {
        return Err(format!(
            "{}: the token must be at least 16 bytes (got {})",
            path.display(),
            t.len()
        ));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_round_trip() {
        let msgs = vec![
            Msg::Hello {
                protocol: PROTOCOL.into(),
                version: VERSION,
            },
            Msg::Start {
                test: TestSpec::Udp {
                    size: 8192,
                    rate_bps: 1_000_000,
                    idle_ms: 50,
                },
            },
            Msg::Report {
                report: Box::default(),
            },
            Msg::Bye,
        ];
        let mut wire = Vec::new();
        for m in &msgs {
            wire.extend(encode(m));
        }
        let mut r = io::Cursor::new(wire);
        for m in &msgs {
            assert_eq!(&read_msg(&mut r).unwrap(), m);
        }
        assert!(matches!(read_msg(&mut r), Err(ProtoError::Closed)));
    }

    /// An older peer's report has no receiving-thread CPU: it still decodes, with both new
    /// fields absent (the metric is then not measured, with that reason); a report without them
    /// is written without them; a newer peer's fields unknown here are ignored.
    #[test]
    fn a_report_without_the_thread_cpu_decodes_and_unknown_fields_are_ignored() {
        let old = r#"{"type":"report","report":{"bytes":1024,"active_s":0.5,"connections":1,
            "cpu":null,"cpu_error":"x","rcvbuf":null,"pinned_cpu":null,"pin_error":null,
            "udp":null,"errors":[]}}"#;
        let Msg::Report { report } = decode(old.as_bytes()).unwrap() else {
            panic!()
        };
        assert_eq!(report.bytes, 1024);
        assert_eq!(report.rx_thread_cpu_s, None);
        assert_eq!(report.rx_thread_cpu_error, None);
        let wire = String::from_utf8(
            encode(&Msg::Report {
                report: Box::default(),
            })[4..]
                .to_vec(),
        )
        .unwrap();
        assert!(!wire.contains("rx_thread_cpu"), "{wire}");
        let new = PeerReport {
            bytes: 2048,
            rx_thread_cpu_s: Some(0.25),
            ..Default::default()
        };
        let m = Msg::Report {
            report: Box::new(new.clone()),
        };
        assert_eq!(read_msg(&mut io::Cursor::new(encode(&m))).unwrap(), m);
        let newer = old.replace("\"errors\":[]", "\"errors\":[],\"future_figure\":3");
        assert!(matches!(
            decode(newer.as_bytes()).unwrap(),
            Msg::Report { .. }
        ));
    }

    #[test]
    fn oversized_and_truncated_frames_are_errors() {
        let mut big = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        big.extend([b'{'; 16]);
        assert!(matches!(
            read_msg(&mut io::Cursor::new(big)),
            Err(ProtoError::Oversized(_))
        ));
        let mut f = encode(&Msg::Bye);
        f.pop();
        assert!(matches!(
            read_msg(&mut io::Cursor::new(f)),
            Err(ProtoError::Truncated(_))
        ));
        assert!(matches!(
            read_msg(&mut io::Cursor::new(vec![0, 0])),
            Err(ProtoError::Truncated(_))
        ));
        assert!(matches!(
            decode(b"{\"type\":\"nope\"}"),
            Err(ProtoError::Malformed(_))
        ));
    }

    #[test]
    fn mac_depends_on_token_and_nonce_and_hides_the_token() {
        let t = b"0123456789abcdef-secret";
        let n = nonce();
        let m = auth_mac(t, &n);
        assert!(verify_mac(t, &n, &m));
        assert!(!verify_mac(b"0123456789abcdef-wrong!", &n, &m));
        assert!(!verify_mac(t, &nonce(), &m));
        assert!(!verify_mac(t, &n, "zz"));
        assert!(!m.contains("secret") && !m.contains(&hex(t)));
    }

    proptest! {
        /// Any byte string fed to the frame reader is an error or a message, never a panic, and
        /// never reads a body over the limit.
        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut r = io::Cursor::new(bytes.clone());
            while let Ok(_m) = read_msg(&mut r) {}
            let _ = decode(&bytes);
        }

        #[test]
        fn hex_round_trips(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(unhex(&hex(&b)).unwrap(), b);
        }
    }
}
