//! `osgauge serve`: the peer of the network suite (netperf's design: a control connection plus
//! separate data connections). Loopback only unless configured with another address, and then a
//! token is required (challenge–response, see [`proto`]). Bounded: sessions at a time, data
//! connections per test, bytes and time per session, an idle timeout, a time bound per test;
//! connections still authenticating per source address and in total, and a back-off per source
//! after failed authentications ([`sources`]). Every authenticated session is logged in one line;
//! refusals and sessions that never authenticated once per source address and 10 s. The same
//! server runs in-process on 127.0.0.1 as the default peer of `osgauge micro net`.

pub mod check;
pub mod client;
pub mod data;
pub mod proto;
pub mod sources;
pub mod udp_stats;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::platform::wait::{self, Bound, Bounded, slice_timeouts};
use proto::{Msg, PROTOCOL, ProtoError, VERSION};
use sources::{Outcome, Refusal, Slot, Sources};

/// Default port of `osgauge serve`.
pub const DEFAULT_PORT: u16 = 7700;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// The shared token; required when `listen` is not a loopback address.
    pub token: Option<Vec<u8>>,
    /// Authenticated sessions served at once; more are refused ("busy") after authenticating.
    pub max_sessions: usize,
    /// Connections still in the hello/auth exchange at once (each ends at the handshake
    /// deadline); more are refused at once. Kept apart from `max_sessions`, so connections that
    /// never authenticate cannot take a real client's session slot.
    pub max_pending: usize,
    /// Connections from one source (an IPv4 address or an IPv6 /64) in the hello/auth exchange
    /// at once; a quarter of `max_pending` is kept for sources that authenticated before
    /// ([`sources`]).
    pub max_pending_per_source: usize,
    /// Data connections per test.
    pub max_streams: u32,
    /// Bytes received per session.
    pub max_bytes: u64,
    /// Length of a session.
    pub max_session: Duration,
    /// Time a session may wait for the client's next message, whole (a deadline per message,
    /// not per read: a client that drips a frame a byte at a time does not extend it).
    pub idle_timeout: Duration,
    /// Time to complete the whole hello/auth exchange, from the connection's accept.
    pub handshake_timeout: Duration,
    /// Time bound of one test's data phase.
    pub max_test: Duration,
    /// Print one line per session.
    pub log: bool,
}

impl ServerConfig {
    /// The in-process peer on 127.0.0.1 (any free port), no token, silent.
    pub fn loopback() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            token: None,
            max_sessions: 8,
            max_pending: 256,
            max_pending_per_source: 16,
            max_streams: 64,
            max_bytes: 256 << 30,
            max_session: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(5),
            max_test: Duration::from_secs(120),
            log: false,
        }
    }

    /// Pre-auth slots kept for sources that authenticated before: a quarter of `max_pending`.
    pub fn known_reserve(&self) -> usize {
        self.max_pending / 4
    }

    fn limits(&self) -> sources::Limits {
        sources::Limits {
            max_pending: self.max_pending,
            per_source: self.max_pending_per_source,
            known_reserve: self.known_reserve(),
        }
    }

    /// A listener address other than loopback needs a token.
    pub fn check(&self) -> Result<(), String> {
        if !self.listen.ip().is_loopback() && self.token.is_none() {
            return Err(format!(
                "--listen {} is reachable from other machines: a token is required (--token-file FILE, at least 16 bytes)",
                self.listen
            ));
        }
        Ok(())
    }
}

struct Shared {
    cfg: ServerConfig,
    stop: AtomicBool,
    active: AtomicUsize,
    /// Pre-auth slots, back-off and log gates per source.
    sources: Mutex<Sources>,
    next_id: AtomicU64,
    refused: AtomicU64,
    throttled: AtomicU64,
    wrong_tokens: AtomicU64,
}

impl Shared {
    fn sources(&self) -> std::sync::MutexGuard<'_, Sources> {
        // A panic while holding it leaves consistent counts (each update is one statement).
        self.sources.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running server; stops (and joins its accept thread) when dropped.
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// Sessions being served now.
    pub fn active_sessions(&self) -> usize {
        self.shared.active.load(Ordering::SeqCst)
    }
    /// Connections refused because a limit was reached (sessions, pre-auth slots).
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }
    /// Connections and answers refused because their source was backing off after failed
    /// authentications.
    pub fn throttled(&self) -> u64 {
        self.shared.throttled.load(Ordering::SeqCst)
    }
    /// Answers to a challenge that were checked and wrong.
    pub fn wrong_tokens(&self) -> u64 {
        self.shared.wrong_tokens.load(Ordering::SeqCst)
    }
    /// Connections in their handshake now.
    pub fn pending(&self) -> usize {
        self.shared.sources().pending()
    }
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let ip = match self.addr.ip() {
            IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let _ = TcpStream::connect_timeout(
            &SocketAddr::new(ip, self.addr.port()),
            Duration::from_secs(1),
        );
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Start serving in a background thread.
pub fn start(cfg: ServerConfig) -> io::Result<ServerHandle> {
    cfg.check().map_err(io::Error::other)?;
    let listener = crate::platform::net::listen(cfg.listen, 128)?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        cfg,
        stop: AtomicBool::new(false),
        active: AtomicUsize::new(0),
        sources: Mutex::new(Sources::default()),
        next_id: AtomicU64::new(1),
        refused: AtomicU64::new(0),
        throttled: AtomicU64::new(0),
        wrong_tokens: AtomicU64::new(0),
    });
    let sh = shared.clone();
    let accept = std::thread::Builder::new()
        .name("osgauge-serve".into())
        .spawn(move || accept_loop(listener, sh))?;
    Ok(ServerHandle {
        addr,
        shared,
        accept: Some(accept),
    })
}

fn accept_loop(listener: TcpListener, sh: Arc<Shared>) {
    loop {
        let (mut conn, peer) = match listener.accept() {
            Ok(c) => c,
            Err(_) if sh.stop.load(Ordering::SeqCst) => return,
            Err(_) => {
                // Out of descriptors or a reset before accept: back off briefly, keep serving.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if sh.stop.load(Ordering::SeqCst) {
            return;
        }
        let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
        let admitted = sh
            .sources()
            .admit(peer.ip(), Instant::now(), &sh.cfg.limits());
        let slot = match admitted {
            Ok(slot) => slot,
            Err(refusal) => {
                match refusal {
                    Refusal::BackOff(_) => sh.throttled.fetch_add(1, Ordering::SeqCst),
                    Refusal::Busy(_) => sh.refused.fetch_add(1, Ordering::SeqCst),
                };
                let _ = conn.set_write_timeout(Some(Duration::from_millis(200)));
                let reason = refusal.reason().to_string();
                let _ = proto::write_msg(&mut conn, &Msg::Refuse { reason });
                log_gated(&sh, peer, || {
                    format!("session {id} from {peer}: refused ({})", refusal.reason())
                });
                continue;
            }
        };
        let sh2 = sh.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("osgauge-session-{id}"))
            .stack_size(256 << 10)
            .spawn(move || {
                let started = Instant::now();
                let mut log = SessionLog::default();
                let end = match connection(&sh2, conn, peer, started, slot, &mut log) {
                    Ok(()) => "closed by client".to_string(),
                    Err(e) => e,
                };
                let line = || {
                    format!(
                        "session {id} from {peer}: {}; tests: {}; {} bytes received; {:.1} s; {}",
                        if log.authenticated {
                            "authenticated"
                        } else {
                            "not authenticated"
                        },
                        if log.tests.is_empty() {
                            "none".to_string()
                        } else {
                            log.tests.join(",")
                        },
                        log.bytes,
                        started.elapsed().as_secs_f64(),
                        crate::output::display_text(&end, 300)
                    )
                };
                if log.authenticated {
                    if sh2.cfg.log {
                        crate::outln!("{}", line());
                    }
                } else {
                    log_gated(&sh2, peer, line);
                }
            });
        if spawned.is_err() {
            sh.sources().release(slot, Outcome::Other, Instant::now());
        }
    }
}

/// Log a line about a connection that did not authenticate: once per source and
/// [`sources::LOG_INTERVAL`], with how many such lines were left out since.
fn log_gated(sh: &Shared, peer: SocketAddr, line: impl FnOnce() -> String) {
    if !sh.cfg.log {
        return;
    }
    let gate = sh.sources().log_gate(peer.ip(), Instant::now());
    if let Some(not_logged) = gate {
        let more = if not_logged > 0 {
            format!(
                " ({not_logged} more from {} not logged in the last {} s)",
                sources::source_of(peer.ip()),
                sources::LOG_INTERVAL.as_secs()
            )
        } else {
            String::new()
        };
        crate::outln!("{}{more}", line());
    }
}

/// One connection: the handshake (counted as pending), then a session slot, then the session.
fn connection(
    sh: &Shared,
    mut ctl: TcpStream,
    peer: SocketAddr,
    started: Instant,
    slot: Slot,
    log: &mut SessionLog,
) -> Result<(), String> {
    let (hs, outcome) = handshake(sh, &mut ctl, started, &slot);
    sh.sources().release(slot, outcome, Instant::now());
    hs?;
    // A session slot, taken only once authenticated.
    let took = sh
        .active
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < sh.cfg.max_sessions).then_some(n + 1)
        })
        .is_ok();
    if !took {
        sh.refused.fetch_add(1, Ordering::SeqCst);
        return Err(refuse(
            &mut ctl,
            format!("busy: {} sessions already running", sh.cfg.max_sessions),
        ));
    }
    log.authenticated = true;
    let r = session(sh, ctl, peer, started, log);
    sh.active.fetch_sub(1, Ordering::SeqCst);
    r
}

#[derive(Default)]
struct SessionLog {
    authenticated: bool,
    tests: Vec<&'static str>,
    bytes: u64,
}

/// Tell the client why its connection ends (best effort, at most a second) and return the reason.
fn refuse(ctl: &mut TcpStream, reason: String) -> String {
    let bound = Bound::after(Duration::from_secs(1), None);
    let _ = slice_timeouts(ctl, &bound);
    let _ = proto::write_msg(
        &mut Bounded::new(&*ctl, bound),
        &Msg::Refuse {
            reason: reason.clone(),
        },
    );
    reason
}

/// Hello, challenge and auth, all before `started + handshake_timeout`: one deadline for the
/// whole exchange, however slowly the client sends. How it ended beside it, for the source's
/// back-off.
fn handshake(
    sh: &Shared,
    ctl: &mut TcpStream,
    started: Instant,
    slot: &Slot,
) -> (Result<(), String>, Outcome) {
    match handshake_steps(sh, ctl, started, slot) {
        Ok(()) => (Ok(()), Outcome::Authenticated),
        Err((e, outcome)) => (Err(e), outcome),
    }
}

fn handshake_steps(
    sh: &Shared,
    ctl: &mut TcpStream,
    started: Instant,
    slot: &Slot,
) -> Result<(), (String, Outcome)> {
    let other = |e: String| (e, Outcome::Other);
    let cfg = &sh.cfg;
    let _ = ctl.set_nodelay(true);
    let bound = Bound::new(Some(started + cfg.handshake_timeout), None);
    slice_timeouts(ctl, &bound).map_err(|e| other(e.to_string()))?;
    let late = |e: &ProtoError| matches!(e, ProtoError::Io(x) if wait::ended(x));
    let too_slow = || {
        format!(
            "handshake not completed within {:.1} s",
            cfg.handshake_timeout.as_secs_f64()
        )
    };
    match proto::read_msg(&mut Bounded::new(&*ctl, bound)) {
        Ok(Msg::Hello { protocol, version }) if protocol == PROTOCOL && version == VERSION => {}
        Ok(Msg::Hello { protocol, version }) => {
            return Err(other(refuse(
                ctl,
                format!(
                    "protocol {}/{version} not supported: this server speaks {PROTOCOL}/{VERSION} (osgauge {}); use the same osgauge version on both ends",
                    crate::output::display_text(&protocol, 64),
                    env!("CARGO_PKG_VERSION")
                ),
            )));
        }
        Ok(_) => return Err(other(refuse(ctl, "expected hello".into()))),
        Err(e) if late(&e) => return Err(other(refuse(ctl, too_slow()))),
        Err(e) => return Err(other(refuse(ctl, format!("handshake: {e}")))),
    }
    let nonce = proto::nonce();
    proto::write_msg(
        &mut Bounded::new(&*ctl, bound),
        &Msg::Challenge {
            version: VERSION,
            nonce: proto::hex(&nonce),
            token_required: cfg.token.is_some(),
        },
    )
    .map_err(|e| other(e.to_string()))?;
    match proto::read_msg(&mut Bounded::new(&*ctl, bound)) {
        Ok(Msg::Auth { mac }) => {
            if let Some(t) = &cfg.token {
                // A source backing off (a failure since this connection was admitted) gets no
                // guess: its answer is not checked.
                let may = sh.sources().may_try(slot, Instant::now());
                if let Err(r) = may {
                    sh.throttled.fetch_add(1, Ordering::SeqCst);
                    return Err(other(refuse(ctl, r.reason().to_string())));
                }
                if !proto::verify_mac(t, &nonce, &mac) {
                    sh.wrong_tokens.fetch_add(1, Ordering::SeqCst);
                    // The back-off starts before the client hears of the failure.
                    sh.sources().failed(slot.source, Instant::now());
                    return Err(other(refuse(ctl, "authentication failed".into())));
                }
            }
            Ok(())
        }
        Ok(_) => Err(other(refuse(ctl, "expected auth".into()))),
        Err(e) if late(&e) => Err(other(refuse(ctl, too_slow()))),
        Err(e) => Err(other(refuse(ctl, format!("handshake: {e}")))),
    }
}

fn session(
    sh: &Shared,
    mut ctl: TcpStream,
    peer: SocketAddr,
    started: Instant,
    log: &mut SessionLog,
) -> Result<(), String> {
    let cfg = &sh.cfg;
    // The session's end: a deadline from its start, whatever the client does.
    let session_end = started + cfg.max_session;
    let session_over = || {
        format!(
            "session time limit reached (--max-session-time {} s)",
            cfg.max_session.as_secs_f64()
        )
    };
    proto::write_msg(
        &mut Bounded::new(
            &ctl,
            Bound::new(Some(session_end), None).at_most(cfg.idle_timeout),
        ),
        &Msg::Welcome {
            server: format!("osgauge {}", env!("CARGO_PKG_VERSION")),
        },
    )
    .map_err(|e| e.to_string())?;
    loop {
        if Instant::now() >= session_end {
            return Err(refuse(&mut ctl, session_over()));
        }
        // The next message, whole, within the idle timeout and the session's end.
        let bound = Bound::new(Some(session_end), None).at_most(cfg.idle_timeout);
        slice_timeouts(&ctl, &bound).map_err(|e| e.to_string())?;
        match proto::read_msg(&mut Bounded::new(&ctl, bound)) {
            Ok(Msg::Start { test }) => {
                log.tests.push(test.name());
                let budget = cfg.max_bytes.saturating_sub(log.bytes);
                match data::run_test(sh, &mut ctl, peer.ip(), &test, budget, session_end) {
                    Ok(bytes) => log.bytes += bytes,
                    Err((bytes, e)) => {
                        log.bytes += bytes;
                        return Err(refuse(&mut ctl, e));
                    }
                }
            }
            Ok(Msg::Bye) => return Ok(()),
            Ok(m) => {
                let m = crate::output::display_text(&format!("{m:?}"), 120);
                return Err(refuse(&mut ctl, format!("unexpected message {m}")));
            }
            Err(ProtoError::Closed) => return Err("client disconnected".into()),
            Err(ProtoError::Io(e)) if wait::ended(&e) => {
                let why = if Instant::now() >= session_end {
                    session_over()
                } else {
                    format!(
                        "idle timeout (--idle-timeout {} s)",
                        cfg.idle_timeout.as_secs_f64()
                    )
                };
                return Err(refuse(&mut ctl, why));
            }
            Err(e) => return Err(refuse(&mut ctl, e.to_string())),
        }
    }
}
