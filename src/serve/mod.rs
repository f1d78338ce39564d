//! `osgauge serve`: the peer of the network suite (netperf's design: a control connection plus
//! separate data connections). Loopback only unless configured with another address, and then a
//! token is required (challenge–response, see [`proto`]). Bounded: sessions at a time, data
//! connections per test, bytes and time per session, an idle timeout, a time bound per test.
//! Every session is logged in one line. The same server runs in-process on 127.0.0.1 as the
//! default peer of `osgauge micro net`.

pub mod client;
pub mod data;
pub mod proto;
pub mod udp_stats;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::platform::wait::{self, Bound, Bounded, slice_timeouts};
use proto::{Msg, PROTOCOL, ProtoError, VERSION};

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
            max_streams: 64,
            max_bytes: 256 << 30,
            max_session: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(5),
            max_test: Duration::from_secs(120),
            log: false,
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
    pending: AtomicUsize,
    next_id: AtomicU64,
    refused: AtomicU64,
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
    /// Connections refused because the session limit was reached.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
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
        pending: AtomicUsize::new(0),
        next_id: AtomicU64::new(1),
        refused: AtomicU64::new(0),
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
        if sh.pending.load(Ordering::SeqCst) >= sh.cfg.max_pending {
            sh.refused.fetch_add(1, Ordering::SeqCst);
            let _ = conn.set_write_timeout(Some(Duration::from_millis(200)));
            let reason = format!(
                "busy: {} connections are still authenticating",
                sh.cfg.max_pending
            );
            let _ = proto::write_msg(&mut conn, &Msg::Refuse { reason });
            if sh.cfg.log {
                crate::outln!("session {id} from {peer}: refused (busy: handshakes)");
            }
            continue;
        }
        sh.pending.fetch_add(1, Ordering::SeqCst);
        let sh2 = sh.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("osgauge-session-{id}"))
            .stack_size(256 << 10)
            .spawn(move || {
                let started = Instant::now();
                let mut log = SessionLog::default();
                let end = match connection(&sh2, conn, peer, started, &mut log) {
                    Ok(()) => "closed by client".to_string(),
                    Err(e) => e,
                };
                if sh2.cfg.log {
                    crate::outln!(
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
                    );
                }
            });
        if spawned.is_err() {
            sh.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// One connection: the handshake (counted as pending), then a session slot, then the session.
fn connection(
    sh: &Shared,
    mut ctl: TcpStream,
    peer: SocketAddr,
    started: Instant,
    log: &mut SessionLog,
) -> Result<(), String> {
    let hs = handshake(sh, &mut ctl, started);
    sh.pending.fetch_sub(1, Ordering::SeqCst);
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
/// whole exchange, however slowly the client sends.
fn handshake(sh: &Shared, ctl: &mut TcpStream, started: Instant) -> Result<(), String> {
    let cfg = &sh.cfg;
    let _ = ctl.set_nodelay(true);
    let bound = Bound::new(Some(started + cfg.handshake_timeout), None);
    slice_timeouts(ctl, &bound).map_err(|e| e.to_string())?;
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
            return Err(refuse(
                ctl,
                format!(
                    "protocol {}/{version} not supported: this server speaks {PROTOCOL}/{VERSION} (osgauge {}); use the same osgauge version on both ends",
                    crate::output::display_text(&protocol, 64),
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
        Ok(_) => return Err(refuse(ctl, "expected hello".into())),
        Err(e) if late(&e) => return Err(refuse(ctl, too_slow())),
        Err(e) => return Err(refuse(ctl, format!("handshake: {e}"))),
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
    .map_err(|e| e.to_string())?;
    match proto::read_msg(&mut Bounded::new(&*ctl, bound)) {
        Ok(Msg::Auth { mac }) => {
            if let Some(t) = &cfg.token
                && !proto::verify_mac(t, &nonce, &mac)
            {
                return Err(refuse(ctl, "authentication failed".into()));
            }
            Ok(())
        }
        Ok(_) => Err(refuse(ctl, "expected auth".into())),
        Err(e) if late(&e) => Err(refuse(ctl, too_slow())),
        Err(e) => Err(refuse(ctl, format!("handshake: {e}"))),
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
