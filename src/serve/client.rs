//! The client side of the control protocol: connect, hello, answer the challenge, run tests.
//!
//! Every blocking step (connect, each control frame read or written) ends with the client's
//! [`Bound`]: the benchmark's deadline (with a little grace for the final report) and the first
//! Ctrl-C/SIGTERM. A peer that answers one byte a second cannot hold the client past either.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::check::{self, Observed, peer_text};
use super::proto::{self, Msg, PROTOCOL, PeerReport, TestSpec, VERSION};
use crate::platform::wait::{Bound, Bounded};

#[derive(Debug)]
pub struct Client<'a> {
    ctl: TcpStream,
    peer: SocketAddr,
    /// The peer's own description (`osgauge 0.1.0`), escaped and cut.
    pub server: String,
    bound: Bound<'a>,
    /// The test under way: what was asked, when, and (after `finish`) what this side sent — what
    /// the peer's report is checked against ([`check::check_report`]).
    test: Option<(TestSpec, std::time::Instant)>,
    sent: (u64, u64),
    connections: Option<u64>,
}

/// Why a step failed: the peer's refusal or an unexpected message, its text escaped and cut.
fn refused_or(m: Result<Msg, proto::ProtoError>, what: &str) -> String {
    match m {
        Ok(Msg::Refuse { reason }) => format!("the peer refused: {}", peer_text(&reason)),
        Ok(other) => format!(
            "{what}: unexpected message from the peer: {}",
            crate::output::display_text(&format!("{other:?}"), 120)
        ),
        Err(e) => format!("{what}: {}", peer_text(&e.to_string())),
    }
}

impl<'a> Client<'a> {
    /// Connect and authenticate (the token, if any, only keys the HMAC of the peer's nonce).
    /// Ends `timeout` from now or at the first Ctrl-C/SIGTERM.
    pub fn connect(
        addr: SocketAddr,
        token: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Client<'static>, String> {
        Client::connect_bounded(addr, token, Bound::signal_or_after(timeout))
    }

    /// [`Client::connect`] with every step of this session (connect, handshake, every later
    /// control frame) ending with `bound`.
    pub fn connect_bounded(
        addr: SocketAddr,
        token: Option<&[u8]>,
        bound: Bound<'a>,
    ) -> Result<Client<'a>, String> {
        let ctl = crate::platform::net::connect_bounded(addr, &bound)
            .map_err(|e| format!("connecting to the peer {addr}: {e}"))?;
        crate::platform::wait::slice_timeouts(&ctl, &bound).map_err(|e| e.to_string())?;
        let mut ctl = Bounded::new(ctl, bound);
        proto::write_msg(
            &mut ctl,
            &Msg::Hello {
                protocol: PROTOCOL.into(),
                version: VERSION,
            },
        )
        .map_err(|e| format!("hello: {e}"))?;
        let nonce = match proto::read_msg(&mut ctl) {
            Ok(Msg::Challenge { version, .. }) if version != VERSION => {
                return Err(format!(
                    "the peer speaks {PROTOCOL}/{version}, this osgauge {PROTOCOL}/{VERSION}: use the same osgauge version on both ends"
                ));
            }
            Ok(Msg::Challenge {
                nonce,
                token_required,
                ..
            }) => {
                if token_required && token.is_none() {
                    return Err(format!(
                        "the peer {addr} requires a token: pass --token-file FILE"
                    ));
                }
                proto::unhex(&nonce).ok_or("the peer sent a malformed nonce")?
            }
            other => return Err(refused_or(other, "handshake")),
        };
        let mac = token
            .map(|t| proto::auth_mac(t, &nonce))
            .unwrap_or_default();
        proto::write_msg(&mut ctl, &Msg::Auth { mac }).map_err(|e| format!("auth: {e}"))?;
        let server = match proto::read_msg(&mut ctl) {
            Ok(Msg::Welcome { server }) => crate::output::display_text(&server, 100),
            other => return Err(refused_or(other, "auth")),
        };
        Ok(Client {
            ctl: ctl.inner,
            peer: addr,
            server,
            bound,
            test: None,
            sent: (0, 0),
            connections: None,
        })
    }

    /// What ends each blocking step of this session from now on.
    pub fn bound(&self) -> Bound<'a> {
        self.bound
    }

    fn ctl(&self) -> Bounded<'a, &TcpStream> {
        Bounded::new(&self.ctl, self.bound)
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Ask for a test (the peer measures its idle baseline, if any, before answering).
    pub fn send_start(&mut self, test: &TestSpec) -> Result<(), String> {
        self.test = Some((test.clone(), std::time::Instant::now()));
        self.sent = (0, 0);
        self.connections = None;
        proto::write_msg(&mut self.ctl(), &Msg::Start { test: test.clone() })
            .map_err(|e| format!("start: {e}"))
    }

    /// The data address the peer opened for the test.
    pub fn wait_ready(&mut self) -> Result<SocketAddr, String> {
        match proto::read_msg(&mut self.ctl()) {
            Ok(Msg::Ready { port }) => Ok(SocketAddr::new(self.peer.ip(), port)),
            other => Err(refused_or(other, "ready")),
        }
    }

    pub fn start(&mut self, test: &TestSpec) -> Result<SocketAddr, String> {
        self.send_start(test)?;
        self.wait_ready()
    }

    /// End the data phase and get the peer's report.
    pub fn finish(&mut self, sent_bytes: u64, sent_datagrams: u64) -> Result<PeerReport, String> {
        self.send_finish(sent_bytes, sent_datagrams)?;
        self.read_report()
    }

    /// End the data phase ([`Self::read_report`] then reads the peer's report): the peer ends its
    /// CPU-cost window and measures its idle window after it, while this side may measure its
    /// own.
    pub fn send_finish(&mut self, sent_bytes: u64, sent_datagrams: u64) -> Result<(), String> {
        self.sent = (sent_bytes, sent_datagrams);
        proto::write_msg(
            &mut self.ctl(),
            &Msg::Finish {
                sent_bytes,
                sent_datagrams,
            },
        )
        .map_err(|e| format!("finish: {e}"))
    }

    /// The connections this side made in the test under way (the accept test): the peer's
    /// count is checked against it.
    pub fn note_connections(&mut self, made: u64) {
        self.connections = Some(made);
    }

    /// The peer's report on the test [`Self::send_finish`] ended, checked against what this side
    /// sent and observed ([`check::check_report`]): an impossible one is an error with the reason.
    pub fn read_report(&mut self) -> Result<PeerReport, String> {
        let report = match proto::read_msg(&mut self.ctl()) {
            Ok(Msg::Report { report }) => *report,
            other => return Err(refused_or(other, "report")),
        };
        let Some((test, started)) = self.test.take() else {
            return Err("report: the peer sent a report for no test".into());
        };
        check::check_report(
            report,
            &Observed {
                test,
                sent_bytes: self.sent.0,
                sent_datagrams: self.sent.1,
                connections: self.connections,
                window_s: started.elapsed().as_secs_f64(),
            },
        )
    }

    pub fn bye(self) {
        let _ = proto::write_msg(&mut self.ctl(), &Msg::Bye);
    }
}
