//! The building blocks of the synthetic application and its probes: working-set rings larger
//! than the last-level cache, loopback TCP pairs with an in-process peer, and a ping-pong partner
//! thread that forces context switches.

use std::io::{PipeReader, PipeWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub const MB: usize = 1_000_000;
/// I/O and copies go in chunks of at most this many bytes (the same in the app and the probes,
/// so both use the same copy kernel).
pub const CHUNK: usize = MB;

/// A working set that buffers stream through: each `take` returns the next `n` bytes, wrapping
/// to the start when the rest is too short, so a byte is reused only after the whole ring has
/// been through — a ring of ≥ 4 × the LLC makes the traffic the model counts reach memory.
pub struct Ring {
    buf: Vec<u8>,
    pos: usize,
}

impl Ring {
    /// `bytes` long, every page touched now (not during a measurement).
    pub fn new(bytes: usize) -> Self {
        Ring {
            buf: vec![1u8; bytes.max(2 * CHUNK)],
            pos: 0,
        }
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    fn start(&mut self, n: usize) -> usize {
        assert!(n <= self.buf.len(), "ring chunk larger than the ring");
        if self.pos + n > self.buf.len() {
            self.pos = 0;
        }
        let s = self.pos;
        self.pos += n;
        s
    }
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> &mut [u8] {
        let s = self.start(n);
        &mut self.buf[s..s + n]
    }
    /// The next 2 × `n` bytes as (source, destination) of a copy.
    pub fn pair(&mut self, n: usize) -> (&[u8], &mut [u8]) {
        let s = self.start(2 * n);
        let (a, b) = self.buf[s..s + 2 * n].split_at_mut(n);
        (a, b)
    }
    /// Copy `bytes` in chunks of ≤ `CHUNK`, each a fresh (source, destination) pair of the ring.
    pub fn copy(&mut self, bytes: usize) {
        let mut left = bytes;
        while left > 0 {
            let n = left.min(CHUNK);
            let (s, d) = self.pair(n);
            d.copy_from_slice(std::hint::black_box(s));
            left -= n;
        }
    }
}

/// A loopback TCP pair: (reader side, writer side).
pub fn tcp_pair() -> std::io::Result<(TcpStream, TcpStream)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let w = TcpStream::connect(l.local_addr()?)?;
    let (r, _) = l.accept()?;
    Ok((r, w))
}

/// The in-process sender: writes chunks of its own ring into `w` until `stop` (or the peer
/// closes). Its user-to-kernel copy is part of the loopback transfer's cost.
pub fn pump(
    mut w: TcpStream,
    mut ring: Ring,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if w.write_all(ring.take(CHUNK)).is_err() {
                break;
            }
        }
    })
}

/// The in-process receiver: reads `r` into its own ring until end of stream.
pub fn drain(mut r: TcpStream, mut ring: Ring) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || while matches!(r.read(ring.take(CHUNK)), Ok(n) if n > 0) {})
}

/// Receive exactly `bytes` into the ring.
pub fn recv(r: &mut TcpStream, ring: &mut Ring, bytes: usize) -> std::io::Result<()> {
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK);
        r.read_exact(ring.take(n))?;
        left -= n;
    }
    Ok(())
}

/// Send `bytes` from the ring.
pub fn send(w: &mut TcpStream, ring: &mut Ring, bytes: usize) -> std::io::Result<()> {
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK);
        w.write_all(ring.take(n))?;
        left -= n;
    }
    Ok(())
}

/// Context switches per ping-pong round trip: the caller blocks in read (switch out), the
/// partner wakes, echoes and blocks again (switch out) — 2 per round trip.
pub const SWITCHES_PER_ROUND_TRIP: f64 = 2.0;

/// The caller's side of a ping-pong with a partner thread over two pipes (1-byte token).
pub struct PingPong {
    to: Option<PipeWriter>,
    from: PipeReader,
    partner: Option<std::thread::JoinHandle<()>>,
    /// Both sides bound to this CPU (same-CPU switches), or why not.
    pub pinned: Result<usize, String>,
}

/// The `k`-th CPU this thread may run on (wrapping), for spreading pinned pairs.
pub fn nth_allowed_cpu(k: usize) -> Option<usize> {
    let allowed = crate::platform::current_thread_affinity().ok()?;
    (!allowed.is_empty()).then(|| allowed[k % allowed.len()])
}

impl PingPong {
    /// A partner thread answering every byte. With `cpu`, the calling thread and the partner are
    /// both bound to it, so every switch is a same-CPU switch — the kind the proc suite's
    /// `ctx_switch_*_pinned` measures; unpinned, a wake-up of a partner idling on the other CPU
    /// costs a cross-CPU wake-up (an IPI, a VM exit in a guest) that a busy app mostly avoids, so
    /// the cost per switch would depend on how idle the machine is.
    pub fn start(cpu: Option<usize>) -> std::io::Result<Self> {
        let (mut pin, to) = std::io::pipe()?;
        let (from, mut pout) = std::io::pipe()?;
        let pinned = match cpu {
            Some(c) => crate::platform::sched::set_thread_affinity(&[c])
                .map(|()| c)
                .map_err(|e| e.to_string()),
            None => Err("not asked".into()),
        };
        let partner_cpu = pinned.as_ref().ok().copied();
        let partner = std::thread::spawn(move || {
            if let Some(c) = partner_cpu {
                let _ = crate::platform::sched::set_thread_affinity(&[c]);
            }
            let mut b = [0u8; 1];
            while matches!(pin.read(&mut b), Ok(1)) {
                if pout.write_all(&b).is_err() {
                    break;
                }
            }
        });
        Ok(PingPong {
            to: Some(to),
            from,
            partner: Some(partner),
            pinned,
        })
    }
    /// `n` round trips (2 × `n` context switches).
    pub fn round_trips(&mut self, n: usize) -> std::io::Result<()> {
        let mut b = [1u8; 1];
        let Some(to) = self.to.as_mut() else {
            return Err(std::io::Error::other("ping-pong already closed"));
        };
        for _ in 0..n {
            to.write_all(&b)?;
            self.from.read_exact(&mut b)?;
        }
        Ok(())
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        // Closing our write end ends the partner (EOF); then it is joined.
        drop(self.to.take());
        if let Some(h) = self.partner.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_covers_the_whole_buffer_before_reusing_a_byte() {
        let mut r = Ring::new(10 * CHUNK);
        let len = r.len();
        let mut seen = vec![false; len];
        let base = r.buf.as_ptr() as usize;
        let n = 3 * CHUNK / 2;
        // Every chunk until the wrap is new; together they cover all but the short tail.
        let mut starts = Vec::new();
        loop {
            let s = r.take(n).as_ptr() as usize - base;
            if starts.contains(&s) {
                break;
            }
            starts.push(s);
            seen[s..s + n].iter_mut().for_each(|b| *b = true);
        }
        assert_eq!(starts[0], 0);
        let covered = seen.iter().filter(|&&b| b).count();
        assert!(len - covered < n, "covered {covered} of {len}");
        assert_eq!(starts.len(), len / n);
        // A copy pair is two disjoint, adjacent chunks.
        let (s, d) = r.pair(CHUNK);
        assert_eq!(s.as_ptr() as usize + CHUNK, d.as_ptr() as usize);
    }

    #[test]
    fn ping_pong_round_trips_and_ends_its_partner() {
        let mut p = PingPong::start(nth_allowed_cpu(0)).unwrap();
        p.round_trips(100).unwrap();
        drop(p); // joins the partner: a hang here is a failure (test timeout)
    }
}
