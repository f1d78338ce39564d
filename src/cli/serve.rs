//! `osgauge serve` (the network suite's peer) and the net suite's `micro` options.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;

use super::{CliError, EXIT_INTERRUPTED, EXIT_OK};
use crate::bench::net::NetOptions;
use crate::serve::{self, ServerConfig, proto};

/// Options of the net suite (`osgauge micro net …`).
#[derive(Args, Debug, Clone, Default)]
pub struct NetOpts {
    /// net suite: run against `osgauge serve` at HOST:PORT instead of an in-process peer on 127.0.0.1
    #[arg(long, value_name = "HOST:PORT")]
    pub peer: Option<String>,
    /// net suite: file holding the peer's token (at least 16 bytes; only an HMAC of it is sent)
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// net suite: UDP stream rate, e.g. 1Gbit, 500Mbit, 100M [default: 200Mbit]
    #[arg(long, value_parser = crate::bench::net::parse_rate, value_name = "RATE")]
    pub rate: Option<u64>,
    /// net suite: UDP datagram size, 20 B..65507 B, e.g. 8KiB [default: 8KiB]
    #[arg(long, value_parser = parse_udp_size, value_name = "SIZE")]
    pub size: Option<u32>,
    /// net suite: measuring time of each net benchmark, split into --runs runs (one run's:
    /// --run-time), e.g. 10s
    #[arg(long, value_parser = super::parse_run_time, value_name = "DURATION", conflicts_with = "run_time")]
    pub duration: Option<Duration>,
}

fn parse_udp_size(s: &str) -> Result<u32, String> {
    let b = crate::units::parse_size(s)?;
    if !(20..=65_507).contains(&b) {
        return Err(format!("UDP datagram size {b} B outside 20 B..65507 B"));
    }
    Ok(b as u32)
}

fn resolve(s: &str) -> Result<SocketAddr, String> {
    s.to_socket_addrs()
        .map_err(|e| format!("'{s}': {e} (expected HOST:PORT)"))?
        .next()
        .ok_or_else(|| format!("'{s}' resolves to no address"))
}

impl NetOpts {
    pub fn is_set(&self) -> bool {
        self.peer.is_some()
            || self.token_file.is_some()
            || self.rate.is_some()
            || self.size.is_some()
            || self.duration.is_some()
    }

    pub fn to_options(&self) -> Result<NetOptions, CliError> {
        let peer = match &self.peer {
            Some(p) => Some(resolve(p).map_err(|e| CliError::Usage(format!("--peer {e}")))?),
            None => None,
        };
        let token = match &self.token_file {
            Some(f) => {
                if peer.is_none() {
                    return Err(CliError::Usage(
                        "--token-file goes with --peer (the in-process peer needs none)".into(),
                    ));
                }
                Some(
                    proto::read_token(f)
                        .map_err(|e| CliError::Usage(format!("--token-file {e}")))?,
                )
            }
            None => None,
        };
        Ok(NetOptions {
            peer,
            token,
            rate_bps: self.rate,
            size: self.size,
            quick: false,
        })
    }
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Write a new random token to FILE (which must not exist; mode 0600) and exit
    #[arg(long, value_name = "FILE", conflicts_with = "token_file")]
    pub new_token: Option<PathBuf>,
    /// Address to listen on; anything but loopback requires --token-file
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "ADDR:PORT")]
    pub listen: String,
    /// File holding the shared token (at least 16 bytes; 128 random bits or more, see below — make one with --new-token); clients answer a challenge with an HMAC of it
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Sessions served at once; more are refused as busy
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_sessions: u32,
    /// Bytes received per session, e.g. 100GiB
    #[arg(long, default_value = "256GiB", value_parser = crate::units::parse_size, value_name = "SIZE")]
    pub max_bytes: u64,
    /// Length of a session, e.g. 10m
    #[arg(long, default_value = "10m", value_parser = crate::units::parse_duration, value_name = "DURATION")]
    pub max_session_time: Duration,
    /// Time a session may stay silent, e.g. 30s
    #[arg(long, default_value = "30s", value_parser = crate::units::parse_duration, value_name = "DURATION")]
    pub idle_timeout: Duration,
}

pub fn run_serve(a: ServeArgs) -> Result<i32, CliError> {
    if let Some(f) = &a.new_token {
        let token = proto::new_token();
        crate::platform::fs::create_secret_file(f, format!("{token}\n").as_bytes())
            .map_err(|e| CliError::Usage(format!("--new-token {}: {e}", f.display())))?;
        crate::outln!(
            "osgauge serve: wrote a new token ({} random bits) to {} (mode 0600); give it to both ends with --token-file {}",
            proto::NEW_TOKEN_BYTES * 8,
            f.display(),
            f.display()
        );
        return Ok(EXIT_OK);
    }
    let listen = resolve(&a.listen).map_err(|e| CliError::Usage(format!("--listen {e}")))?;
    let token = match &a.token_file {
        Some(f) => {
            Some(proto::read_token(f).map_err(|e| CliError::Usage(format!("--token-file {e}")))?)
        }
        None => None,
    };
    let cfg = ServerConfig {
        listen,
        token,
        max_sessions: a.max_sessions as usize,
        max_bytes: a.max_bytes,
        max_session: a.max_session_time,
        idle_timeout: a.idle_timeout,
        log: true,
        ..ServerConfig::loopback()
    };
    cfg.check().map_err(CliError::Usage)?;
    let flag = super::interrupt_flag();
    let mut h = serve::start(cfg.clone())
        .map_err(|e| CliError::Other(anyhow::anyhow!("listening on {listen}: {e}")))?;
    crate::outln!(
        "osgauge serve: listening on {} ({}/{}; {}); at most {} sessions, {} s per session, idle timeout {} s. Ctrl-C stops.",
        h.addr(),
        proto::PROTOCOL,
        proto::VERSION,
        if cfg.token.is_some() {
            "token required (challenge-response)"
        } else {
            "loopback only, no token"
        },
        cfg.max_sessions,
        cfg.max_session.as_secs(),
        cfg.idle_timeout.as_secs()
    );
    while !flag.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    h.stop();
    crate::outln!("osgauge serve: stopped");
    Ok(crate::platform::interrupt_exit_code()
        .unwrap_or(EXIT_INTERRUPTED)
        .max(EXIT_OK))
}
