//! What `osgauge serve` keeps per source address, so that no source can lock others out and
//! guessing the token is slowed:
//!
//! - **Pre-auth slots.** A connection holds a slot from its accept until its handshake ends (at
//!   the latest at the handshake deadline). One source holds at most `max_pending_per_source`;
//!   all sources together `max_pending`, of which a quarter ([`ServerConfig::known_reserve`]) is
//!   kept for sources that authenticated before (the last [`MAX_KNOWN`]): sources never seen
//!   authenticating share the rest. A flood from one address leaves every other address served;
//!   a flood from many new addresses leaves the addresses of real clients, seen before, served.
//! - **Back-off.** Each failed authentication from a source doubles the time it must wait before
//!   its next attempt, from [`BACKOFF_BASE`] to [`BACKOFF_MAX`]; a connection from it in that time
//!   is refused at once, and an answer to a challenge that arrives in it is refused unchecked (so
//!   connections opened before the first failure do not each get a guess). A success clears the
//!   count; so does [`FORGET_AFTER`] without a failure. The cost: a real client sharing the
//!   address (a NAT) of someone guessing waits as they do.
//! - **Logging.** Refusals and unauthenticated sessions are logged once per source and
//!   [`LOG_INTERVAL`], with how many were not logged since; authenticated sessions always.
//!
//! A source is an IPv4 address, or an IPv6 address's /64 (what one host or one customer usually
//! gets: one attacker has at least that many addresses). The table is bounded ([`MAX_SOURCES`]):
//! when it is full the entry unused longest that holds no slot is dropped.
//!
//! [`ServerConfig::known_reserve`]: super::ServerConfig::known_reserve

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

/// Wait after the first failed authentication.
pub const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// Longest wait between attempts of one source.
pub const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A source's failures are forgotten this long after its last one.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);
/// One log line per source and interval for refusals and unauthenticated sessions.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// Sources tracked at once.
pub const MAX_SOURCES: usize = 4096;
/// Sources remembered as having authenticated.
pub const MAX_KNOWN: usize = 1024;

/// The source an address counts as: itself (IPv4, or IPv4 mapped into IPv6), or its /64.
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(a) & !((1u128 << 64) - 1))),
        },
    }
}

#[derive(Debug)]
struct Source {
    pending: usize,
    failures: u32,
    last_failure: Option<Instant>,
    backoff_until: Option<Instant>,
    last_seen: Instant,
    last_logged: Option<Instant>,
    not_logged: u64,
}

/// A pre-auth slot held by one connection; give it back with [`Sources::release`].
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub source: IpAddr,
    known: bool,
}

/// Why a connection is refused before its handshake.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The source is backing off after failed authentications (counted as throttled).
    BackOff(String),
    /// No pre-auth slot for it (counted as refused).
    Busy(String),
}

impl Refusal {
    pub fn reason(&self) -> &str {
        match self {
            Refusal::BackOff(s) | Refusal::Busy(s) => s,
        }
    }
}

/// How a handshake ended, for [`Sources::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Authenticated,
    /// A wrong answer to the challenge (only with a token).
    WrongToken,
    /// Anything else: a timeout, a protocol error, a refusal during back-off.
    Other,
}

#[derive(Debug)]
pub struct Limits {
    pub max_pending: usize,
    pub per_source: usize,
    pub known_reserve: usize,
}

#[derive(Debug, Default)]
pub struct Sources {
    map: HashMap<IpAddr, Source>,
    known: HashMap<IpAddr, Instant>,
    pending: usize,
    pending_unknown: usize,
}

impl Sources {
    /// Connections in their handshake now.
    pub fn pending(&self) -> usize {
        self.pending
    }

    fn entry(&mut self, source: IpAddr, now: Instant) -> &mut Source {
        if !self.map.contains_key(&source) && self.map.len() >= MAX_SOURCES {
            // Drop the entry unused longest that holds no slot (there is one: at most
            // max_pending entries hold a slot).
            if let Some(k) = self
                .map
                .iter()
                .filter(|(_, s)| s.pending == 0)
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| *k)
            {
                self.map.remove(&k);
            }
        }
        let s = self.map.entry(source).or_insert(Source {
            pending: 0,
            failures: 0,
            last_failure: None,
            backoff_until: None,
            last_seen: now,
            last_logged: None,
            not_logged: 0,
        });
        s.last_seen = now;
        s
    }

    /// Is `source` backing off at `now`? The time left.
    pub fn backing_off(&self, source: IpAddr, now: Instant) -> Option<Duration> {
        let until = self.map.get(&source)?.backoff_until?;
        (until > now).then(|| until - now)
    }

    fn backoff_refusal(source: IpAddr, left: Duration, failures: u32) -> Refusal {
        Refusal::BackOff(format!(
            "slow down: {failures} failed authentications from {source}; try again in {:.1} s",
            left.as_secs_f64()
        ))
    }

    /// A pre-auth slot for a connection from `ip`, or why not.
    pub fn admit(&mut self, ip: IpAddr, now: Instant, l: &Limits) -> Result<Slot, Refusal> {
        let source = source_of(ip);
        let known = self.known.contains_key(&source);
        let (pending, unknown_pending) = (self.pending, self.pending_unknown);
        let s = self.entry(source, now);
        if let Some(until) = s.backoff_until
            && until > now
        {
            return Err(Self::backoff_refusal(source, until - now, s.failures));
        }
        if s.pending >= l.per_source {
            return Err(Refusal::Busy(format!(
                "busy: {} connections from {source} are still authenticating",
                s.pending
            )));
        }
        let shared = l.max_pending.saturating_sub(l.known_reserve);
        if pending >= l.max_pending || (!known && unknown_pending >= shared) {
            return Err(Refusal::Busy(if known {
                format!("busy: {pending} connections are still authenticating")
            } else {
                format!(
                    "busy: {unknown_pending} connections from addresses not seen \
                     authenticating before are still authenticating ({} slots are kept for \
                     addresses that have)",
                    l.known_reserve
                )
            }));
        }
        s.pending += 1;
        self.pending += 1;
        if !known {
            self.pending_unknown += 1;
        }
        Ok(Slot { source, known })
    }

    /// Before checking an answer to a challenge: refused unchecked while the source backs off.
    pub fn may_try(&self, slot: &Slot, now: Instant) -> Result<(), Refusal> {
        match self.backing_off(slot.source, now) {
            Some(left) => {
                let failures = self.map.get(&slot.source).map_or(0, |s| s.failures);
                Err(Self::backoff_refusal(slot.source, left, failures))
            }
            None => Ok(()),
        }
    }

    /// Give a slot back at the end of its handshake.
    pub fn release(&mut self, slot: Slot, outcome: Outcome, now: Instant) {
        self.pending = self.pending.saturating_sub(1);
        if !slot.known {
            self.pending_unknown = self.pending_unknown.saturating_sub(1);
        }
        let s = self.entry(slot.source, now);
        s.pending = s.pending.saturating_sub(1);
        match outcome {
            Outcome::Authenticated => {
                s.failures = 0;
                s.backoff_until = None;
                if self.known.len() >= MAX_KNOWN
                    && !self.known.contains_key(&slot.source)
                    && let Some(k) = self.known.iter().min_by_key(|(_, t)| **t).map(|(k, _)| *k)
                {
                    self.known.remove(&k);
                }
                self.known.insert(slot.source, now);
            }
            Outcome::WrongToken => self.failed(slot.source, now),
            Outcome::Other => {}
        }
    }

    /// Record a failed authentication of `source` at `now`: its back-off starts (or doubles).
    /// Called as soon as the answer is found wrong, before the refusal is sent, so that the
    /// source's next answer, on any connection, already meets the back-off.
    pub fn failed(&mut self, source: IpAddr, now: Instant) {
        let s = self.entry(source, now);
        if s.last_failure.is_some_and(|t| now - t > FORGET_AFTER) {
            s.failures = 0;
        }
        s.failures = s.failures.saturating_add(1);
        s.last_failure = Some(now);
        let wait = BACKOFF_BASE
            .saturating_mul(1u32 << (s.failures - 1).min(16))
            .min(BACKOFF_MAX);
        s.backoff_until = Some(now + wait);
    }

    /// Whether to log an event of `ip`'s now: `Some(n)` (log it, with `n` events not logged since
    /// the last line) once per [`LOG_INTERVAL`] and source, `None` (counted) otherwise.
    pub fn log_gate(&mut self, ip: IpAddr, now: Instant) -> Option<u64> {
        let s = self.entry(source_of(ip), now);
        match s.last_logged {
            Some(t) if now - t < LOG_INTERVAL => {
                s.not_logged += 1;
                None
            }
            _ => {
                s.last_logged = Some(now);
                Some(std::mem::take(&mut s.not_logged))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        max_pending: 8,
        per_source: 3,
        known_reserve: 2,
    };

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn one_source_cannot_take_the_pool_and_known_sources_keep_a_share() {
        let mut s = Sources::default();
        let t = Instant::now();
        // A real client authenticates once: its address is known from then on.
        let real = s.admit(ip("10.0.0.1"), t, &L).unwrap();
        s.release(real, Outcome::Authenticated, t);
        // One flooding address: 3 slots, then busy.
        let flood: Vec<_> = (0..3)
            .map(|_| s.admit(ip("10.0.0.66"), t, &L).unwrap())
            .collect();
        let e = s.admit(ip("10.0.0.66"), t, &L).unwrap_err();
        assert!(e.reason().contains("3 connections from 10.0.0.66"), "{e:?}");
        // Many new addresses: they share 6 of 8 slots (3 taken already).
        for i in 0..3 {
            s.admit(ip(&format!("10.1.0.{i}")), t, &L).unwrap();
        }
        let e = s.admit(ip("10.1.0.99"), t, &L).unwrap_err();
        assert!(e.reason().contains("kept for addresses"), "{e:?}");
        // The known address still gets in, twice (the reserve), then the pool is full.
        let a = s.admit(ip("10.0.0.1"), t, &L).unwrap();
        s.admit(ip("10.0.0.1"), t, &L).unwrap();
        assert!(matches!(
            s.admit(ip("10.0.0.1"), t, &L),
            Err(Refusal::Busy(_))
        ));
        assert_eq!(s.pending(), 8);
        // Slots come back.
        for f in flood {
            s.release(f, Outcome::Other, t);
        }
        s.release(a, Outcome::Other, t);
        assert_eq!(s.pending(), 4);
        s.admit(ip("10.0.0.66"), t, &L).unwrap();
    }

    #[test]
    fn failed_authentications_back_off_doubling_and_success_clears_them() {
        let mut s = Sources::default();
        let t0 = Instant::now();
        let src = ip("192.0.2.7");
        let mut t = t0;
        let mut waits = Vec::new();
        for _ in 0..10 {
            let slot = s.admit(src, t, &L).unwrap();
            s.release(slot, Outcome::WrongToken, t);
            let left = s.backing_off(src, t).unwrap();
            waits.push(left);
            // Refused while it backs off, refused unchecked at auth too.
            let e = s.admit(src, t + left / 2, &L).unwrap_err();
            assert!(matches!(e, Refusal::BackOff(_)), "{e:?}");
            assert!(e.reason().contains("failed authentications"), "{e:?}");
            t += left;
        }
        assert_eq!(waits[0], BACKOFF_BASE);
        assert_eq!(waits[1], BACKOFF_BASE * 2);
        assert_eq!(*waits.last().unwrap(), BACKOFF_MAX);
        // Another address is not affected.
        s.admit(ip("192.0.2.8"), t0, &L).unwrap();
        // A connection admitted before the failure may not guess during the back-off.
        let early = s.admit(src, t, &L).unwrap();
        let other = s.admit(src, t, &L).unwrap();
        s.release(other, Outcome::WrongToken, t);
        assert!(s.may_try(&early, t).is_err());
        // After the wait, the right token clears the count.
        let t = t + BACKOFF_MAX;
        s.release(early, Outcome::Other, t);
        let ok = s.admit(src, t, &L).unwrap();
        s.release(ok, Outcome::Authenticated, t);
        let slot = s.admit(src, t, &L).unwrap();
        s.release(slot, Outcome::WrongToken, t);
        assert_eq!(s.backing_off(src, t), Some(BACKOFF_BASE));
    }

    #[test]
    fn logging_is_once_per_source_and_interval_with_the_count() {
        let mut s = Sources::default();
        let t = Instant::now();
        assert_eq!(s.log_gate(ip("10.0.0.1"), t), Some(0));
        for _ in 0..4999 {
            assert_eq!(s.log_gate(ip("10.0.0.1"), t), None);
        }
        assert_eq!(s.log_gate(ip("10.0.0.2"), t), Some(0));
        assert_eq!(s.log_gate(ip("10.0.0.1"), t + LOG_INTERVAL), Some(4999));
    }

    #[test]
    fn an_ipv6_source_is_its_64_and_the_table_stays_bounded() {
        assert_eq!(source_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(source_of(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        let mut s = Sources::default();
        let t = Instant::now();
        for i in 0..(MAX_SOURCES as u32 + 100) {
            let a = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let slot = s.admit(a, t, &L);
            if let Ok(slot) = slot {
                s.release(slot, Outcome::Other, t);
            }
        }
        assert!(s.map.len() <= MAX_SOURCES);
    }
}
