//! The synthetic application: per unit exactly the profile's work and no other — receive over
//! loopback TCP (an in-process peer sends), write and read a temp file (cache bypassed or
//! through the cache and fsynced, as the profile's `disk_io` says: [`super::disk`]), copy
//! memory (the app's own traffic), compute (spin on the thread's CPU clock), copy frames, send over
//! loopback (an in-process peer receives), make the profile's counted system calls (the cheap
//! I/O call they are priced at), and ping-pong with a partner thread for the profile's
//! context switches. Every buffer streams through a per-thread [`Ring`] of ≥ 4 × the LLC; nothing
//! is allocated per unit. Run at a fixed offered rate or flat out, measuring the units finished
//! and this process's CPU time.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use serde::Serialize;

use super::disk::AppFile;
use super::work::{CHUNK, MB, PingPong, Ring, SWITCHES_PER_ROUND_TRIP, drain, pump, recv, send};
use super::{INTERRUPTED, ValidateError, failed, proc_cpu_s};
use crate::appmodel::profile::Profile;
use crate::platform::clock::{now_ns, sleep_until_ns, thread_cpu_time_ns};

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Offered rate, units/s (None: flat out).
    pub offered: Option<f64>,
    pub duration_s: f64,
    pub achieved: f64,
    /// This process's CPU time / (duration × CPUs).
    pub cpu_util: f64,
    /// The harness's own pacing at this offered rate: the CPU utilisation of the same app doing
    /// no work per unit (timer sleeps and wake-ups), measured just before the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_cpu_util: Option<f64>,
}

/// The profile with no work per unit (same unit and disk threads): run at an offered rate it
/// measures the harness's own pacing cost, which the profile's demands do not include.
pub fn null_profile(p: &Profile) -> Profile {
    let mut n = p.clone();
    n.demand = crate::appmodel::profile::Demand {
        disk_threads: p.demand.disk_threads,
        disk_io: p.demand.disk_io.clone(),
        net_protocol: p.demand.net_protocol.clone(),
        frame_pacing: p.demand.frame_pacing.clone(),
        ..Default::default()
    };
    n
}

/// Round trips per unit for the profile's context switches (rounded up to whole round trips).
pub fn round_trips(switches: f64) -> usize {
    (switches / SWITCHES_PER_ROUND_TRIP).ceil().max(0.0) as usize
}

/// The temp file each worker writes: rewritten in place once it holds this many bytes.
pub fn file_cap(ws: usize) -> usize {
    ws.max(256 * MB).div_ceil(MB) * MB
}

fn mb(x: f64) -> usize {
    (x * MB as f64) as usize
}

/// One worker's state, set up before the step starts.
struct Worker {
    ring: Ring,
    rx: Option<std::net::TcpStream>,
    tx: Option<std::net::TcpStream>,
    helpers: Vec<std::thread::JoinHandle<()>>,
    pp: Option<PingPong>,
    /// The temp file (None: the profile neither writes nor reads files).
    file: Option<AppFile>,
    /// The profile's counted system calls, made as the cheap I/O call they are priced at.
    syscalls: Option<crate::platform::CheapIo>,
}

impl Worker {
    /// Worker `k`: its ping-pong pair (if any) is bound to the k-th allowed CPU.
    fn new(
        p: &Profile,
        k: usize,
        ws: usize,
        path: &Path,
        stop: &Arc<AtomicBool>,
    ) -> Result<Self, ValidateError> {
        let d = &p.demand;
        let mut helpers = Vec::new();
        let rx = if d.net_rx_mb > 0.0 {
            let (r, w) = super::work::tcp_pair().map_err(failed)?;
            helpers.push(pump(w, Ring::new(ws), stop.clone()));
            Some(r)
        } else {
            None
        };
        let tx = if d.net_tx_mb > 0.0 {
            let (r, w) = super::work::tcp_pair().map_err(failed)?;
            helpers.push(drain(r, Ring::new(ws)));
            Some(w)
        } else {
            None
        };
        let pp = if d.context_switches > 0.0 {
            Some(PingPong::start(super::work::nth_allowed_cpu(k)).map_err(failed)?)
        } else {
            None
        };
        let mut ring = Ring::new(ws);
        // The file is filled to its full size before the step (not measured): writes then
        // overwrite allocated blocks in place, and reads stream through ≥ the working set.
        let file = if d.disk_write_mb > 0.0 || d.disk_read_mb > 0.0 {
            let fill = ring.take(CHUNK).to_vec();
            Some(
                AppFile::create(path, d.disk_io == "buffered", file_cap(ws), &fill)
                    .map_err(failed)?,
            )
        } else {
            None
        };
        Ok(Worker {
            ring,
            rx,
            tx,
            helpers,
            pp,
            file,
            syscalls: if d.syscalls > 0.0 {
                Some(crate::platform::CheapIo::open().map_err(failed)?)
            } else {
                None
            },
        })
    }

    /// One unit of the profile's work.
    fn unit(&mut self, p: &Profile, app_cpu: f64) -> Result<(), ValidateError> {
        let d = &p.demand;
        if let Some(r) = self.rx.as_mut() {
            recv(r, &mut self.ring, mb(d.net_rx_mb)).map_err(failed)?;
        }
        if let Some(f) = self.file.as_mut() {
            let mut left = mb(d.disk_write_mb);
            while left > 0 {
                let n = left.min(CHUNK);
                f.write(self.ring.take(n)).map_err(failed)?;
                left -= n;
            }
            let mut left = mb(d.disk_read_mb);
            while left > 0 {
                let n = left.min(CHUNK);
                f.read(self.ring.take(n)).map_err(failed)?;
                left -= n;
            }
        }
        // The application's own work: its memory traffic (a copy counts read + written), then
        // compute until its CPU time per unit (the copy included) is spent.
        let t0 = thread_cpu_time_ns().map_err(failed)?;
        self.ring.copy(mb(d.app_mem_mb / 2.0));
        let target = t0 + (app_cpu * 1e9) as u64;
        while thread_cpu_time_ns().map_err(failed)? < target {
            for _ in 0..1000 {
                std::hint::black_box(0u64);
            }
        }
        for _ in 0..(d.frames.round() as usize) {
            self.ring.copy(mb(d.frame_mb));
        }
        if let Some(w) = self.tx.as_mut() {
            send(w, &mut self.ring, mb(d.net_tx_mb)).map_err(failed)?;
        }
        if let Some(io) = self.syscalls.as_mut() {
            for _ in 0..(d.syscalls.round() as usize) {
                io.read_one().map_err(failed)?;
            }
        }
        if let Some(pp) = self.pp.as_mut() {
            pp.round_trips(round_trips(d.context_switches))
                .map_err(failed)?;
        }
        Ok(())
    }

    fn finish(self, stop: &AtomicBool) {
        stop.store(true, Ordering::Relaxed);
        drop(self.rx);
        drop(self.tx);
        for h in self.helpers {
            let _ = h.join();
        }
        drop(self.pp);
    }
}

/// Run the synthetic application for `secs` at `rate` units/s (None: flat out) on `cpus` worker
/// threads, buffers streaming through `ws`-byte rings.
pub fn run_app(
    p: &Profile,
    cpus: usize,
    rate: Option<f64>,
    secs: f64,
    dir: &Path,
    ws: usize,
) -> Result<Step, ValidateError> {
    let d = &p.demand;
    let app_cpu = d.app_cpu_s.unwrap_or(0.0) + d.app_cpu_pct.unwrap_or(0.0) / 100.0 * cpus as f64;
    let done = AtomicU64::new(0);
    let start_at = AtomicU64::new(0);
    // Every worker is set up (rings touched, peers connected) before the step's clock starts.
    let barrier = Barrier::new(cpus + 1);
    let dur = (secs * 1e9) as u64;
    let res: Result<f64, ValidateError> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        for k in 0..cpus {
            let (done, start_at, barrier) = (&done, &start_at, &barrier);
            let path = dir.join(format!("app-{k}.bin"));
            hs.push(s.spawn(move || -> Result<(), ValidateError> {
                // Each worker stops its own helpers (another worker may still be mid-unit).
                let stop = Arc::new(AtomicBool::new(false));
                let setup = Worker::new(p, k, ws, &path, &stop);
                barrier.wait();
                barrier.wait();
                let mut w = setup?;
                let start = start_at.load(Ordering::SeqCst);
                let end = start + dur;
                let mut j = 0u64;
                let r = (|| -> Result<(), ValidateError> {
                    if rate.is_none() {
                        sleep_until_ns(start).map_err(failed)?;
                    }
                    loop {
                        if let Some(r) = rate {
                            let t =
                                start + (((k as u64 + j * cpus as u64) as f64 / r) * 1e9) as u64;
                            if t >= end {
                                break;
                            }
                            sleep_until_ns(t).map_err(failed)?;
                        }
                        // A unit behind schedule at the end is not started.
                        if now_ns() >= end || INTERRUPTED.load(Ordering::Relaxed) {
                            break;
                        }
                        j += 1;
                        w.unit(p, app_cpu)?;
                        if now_ns() <= end {
                            done.fetch_add(1, Ordering::Relaxed); // only units finished in the step
                        }
                    }
                    Ok(())
                })();
                w.finish(&stop);
                let _ = std::fs::remove_file(&path);
                r
            }));
        }
        barrier.wait();
        let start = now_ns() + 20_000_000;
        start_at.store(start, Ordering::SeqCst);
        barrier.wait();
        let cpu = (|| -> Result<f64, ValidateError> {
            sleep_until_ns(start).map_err(failed)?;
            let c0 = proc_cpu_s()?;
            sleep_until_ns(start + dur).map_err(failed)?;
            Ok(proc_cpu_s()? - c0)
        })();
        for h in hs {
            h.join().map_err(|_| failed("a worker panicked"))??;
        }
        cpu
    });
    let cpu = res?;
    Ok(Step {
        offered: rate,
        duration_s: secs,
        achieved: done.load(Ordering::Relaxed) as f64 / secs,
        cpu_util: cpu / (secs * cpus as f64),
        pacing_cpu_util: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_become_whole_round_trips() {
        assert_eq!(round_trips(0.0), 0);
        assert_eq!(round_trips(6.0), 3);
        assert_eq!(round_trips(7.0), 4);
        assert_eq!(file_cap(10), 256 * MB);
        assert_eq!(file_cap(300 * MB + 1), 301 * MB);
    }
}
