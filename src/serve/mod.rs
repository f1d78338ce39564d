//! `osgauge serve`: the peer of the network suite (netperf's design: a control connection plus
//! separate data connections). Loopback only unless configured with another address, and then a
//! token is required (challenge–response, see [`proto`]). Bounded: sessions at a time, data
//! connections per test, bytes and time per session, an idle timeout, a time bound per test.
//! Every session is logged in one line. The same server runs in-process on 127.0.0.1 as the
//! default peer of `osgauge micro net`.

pub mod client;
pub mod data;
pub mod proto;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use proto::{Msg, PROTOCOL, ProtoError, VERSION};

/// Default port of `osgauge serve`.
pub const DEFAULT_PORT: u16 = 7700;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// The shared token; required when `listen` is not a loopback address.
    pub token: Option<Vec<u8>>,
    /// Sessions served at once; more are refused ("busy") at once.
    pub max_sessions: usize,
    /// Data connections per test.
    pub max_streams: u32,
    /// Bytes received per session.
    pub max_bytes: u64,
    /// Length of a session.
    pub max_session: Duration,
    /// Time a session may wait for the client's next message.
    pub idle_timeout: Duration,
    /// Time to complete the hello/auth exchange.
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
        if sh.active.load(Ordering::SeqCst) >= sh.cfg.max_sessions {
            sh.refused.fetch_add(1, Ordering::SeqCst);
            let _ = conn.set_write_timeout(Some(Duration::from_millis(200)));
            let reason = format!("busy: {} sessions already running", sh.cfg.max_sessions);
            let _ = proto::write_msg(&mut conn, &Msg::Refuse { reason });
            if sh.cfg.log {
                crate::outln!("session {id} from {peer}: refused (busy)");
            }
            continue;
        }
        sh.active.fetch_add(1, Ordering::SeqCst);
        let sh2 = sh.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("osgauge-session-{id}"))
            .spawn(move || {
                let started = Instant::now();
                let mut log = SessionLog::default();
                let end = match session(&sh2, conn, peer, &mut log) {
                    Ok(()) => "closed by client".to_string(),
                    Err(e) => e,
                };
                if sh2.cfg.log {
                    crate::outln!(
                        "session {id} from {peer}: {}; tests: {}; {} bytes received; {:.1} s; {end}",
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
                        started.elapsed().as_secs_f64()
                    );
                }
                sh2.active.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            sh.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[derive(Default)]
struct SessionLog {
    authenticated: bool,
    tests: Vec<&'static str>,
    bytes: u64,
}

fn refuse(ctl: &mut TcpStream, reason: String) -> String {
    let _ = proto::write_msg(
        ctl,
        &Msg::Refuse {
            reason: reason.clone(),
        },
    );
    reason
}

fn session(
    sh: &Shared,
    mut ctl: TcpStream,
    peer: SocketAddr,
    log: &mut SessionLog,
) -> Result<(), String> {
    let started = Instant::now();
    let cfg = &sh.cfg;
    let _ = ctl.set_nodelay(true);
    ctl.set_read_timeout(Some(cfg.handshake_timeout))
        .map_err(|e| e.to_string())?;
    ctl.set_write_timeout(Some(cfg.handshake_timeout))
        .map_err(|e| e.to_string())?;
    match proto::read_msg(&mut ctl) {
        Ok(Msg::Hello { protocol, version }) if protocol == PROTOCOL && version == VERSION => {}
        Ok(Msg::Hello { protocol, version }) => {
            return Err(refuse(
                &mut ctl,
                format!(
                    "protocol {protocol}/{version} not supported: this server speaks {PROTOCOL}/{VERSION} (osgauge {}); use the same osgauge version on both ends",
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
        Ok(_) => return Err(refuse(&mut ctl, "expected hello".into())),
        Err(e) => return Err(refuse(&mut ctl, format!("handshake: {e}"))),
    }
    let nonce = proto::nonce();
    proto::write_msg(
        &mut ctl,
        &Msg::Challenge {
            version: VERSION,
            nonce: proto::hex(&nonce),
            token_required: cfg.token.is_some(),
        },
    )
    .map_err(|e| e.to_string())?;
    match proto::read_msg(&mut ctl) {
        Ok(Msg::Auth { mac }) => {
            if let Some(t) = &cfg.token
                && !proto::verify_mac(t, &nonce, &mac)
            {
                return Err(refuse(&mut ctl, "authentication failed".into()));
            }
        }
        Ok(_) => return Err(refuse(&mut ctl, "expected auth".into())),
        Err(e) => return Err(refuse(&mut ctl, format!("handshake: {e}"))),
    }
    log.authenticated = true;
    proto::write_msg(
        &mut ctl,
        &Msg::Welcome {
            server: format!("osgauge {}", env!("CARGO_PKG_VERSION")),
        },
    )
    .map_err(|e| e.to_string())?;
    ctl.set_write_timeout(Some(cfg.idle_timeout))
        .map_err(|e| e.to_string())?;
    loop {
        let left = cfg.max_session.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(refuse(&mut ctl, "session time limit reached".into()));
        }
        ctl.set_read_timeout(Some(cfg.idle_timeout.min(left)))
            .map_err(|e| e.to_string())?;
        match proto::read_msg(&mut ctl) {
            Ok(Msg::Start { test }) => {
                log.tests.push(test.name());
                let budget = cfg.max_bytes.saturating_sub(log.bytes);
                match data::run_test(sh, &mut ctl, peer.ip(), &test, budget) {
                    Ok(bytes) => log.bytes += bytes,
                    Err(e) => return Err(refuse(&mut ctl, e)),
                }
            }
            Ok(Msg::Bye) => return Ok(()),
            Ok(m) => return Err(refuse(&mut ctl, format!("unexpected message {m:?}"))),
            Err(ProtoError::Closed) => return Err("client disconnected".into()),
            Err(ProtoError::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(refuse(&mut ctl, "idle timeout".into()));
            }
            Err(e) => return Err(refuse(&mut ctl, e.to_string())),
        }
    }
}
