//! The probes: fresh inputs for the prediction, each measured the way the synthetic application
//! does the same work (same chunk size, buffers streaming through rings of ≥ 4 × the LLC), plus
//! the memory traffic per MB each activity causes ON LOOPBACK (stated assumptions, not the
//! NIC/DMA wording meant for a real network).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use super::disk::AppFile;
use super::work::{CHUNK, MB, PingPong, Ring, SWITCHES_PER_ROUND_TRIP, pump, recv, tcp_pair};
use super::{ValidateError, failed, proc_cpu_s};
use crate::appmodel::inputs::{FRAME_VARIANTS, Inputs, Origin, Value};
use crate::appmodel::profile::Profile;
use crate::platform::clock::thread_cpu_time_ns;

fn put(inp: &mut Inputs, key: &str, value: f64, origin: Origin, how: &str) {
    inp.values.insert(
        key.to_string(),
        Value {
            value,
            origin,
            source: if origin == Origin::Measured {
                format!("validate probe: {how}")
            } else {
                how.to_string()
            },
        },
    );
}

fn measured(inp: &mut Inputs, key: &str, value: f64, how: &str) {
    put(inp, key, value, Origin::Measured, how);
}

/// The memory traffic per MB of each activity as the synthetic application does it on this
/// machine (no memory-traffic counter is read: stated, flagged as assumed).
pub const LOOPBACK_TRAFFIC: &[(&str, f64, &str)] = &[
    (
        "net_rx_mem_per_mb",
        4.0,
        "ASSUMED 4 copies on loopback: the in-process sender's user-to-kernel copy (read + write) + the app's kernel-to-user copy (read + write); no NIC, no DMA; no memory-traffic counter read",
    ),
    (
        "net_tx_mem_per_mb",
        4.0,
        "ASSUMED 4 copies on loopback: the app's user-to-kernel copy (read + write) + the in-process receiver's kernel-to-user copy (read + write); no NIC, no DMA; no memory-traffic counter read",
    ),
    (
        "disk_write_mem_per_mb",
        3.0,
        "ASSUMED 3: direct — the copy into the aligned staging block (read + write) + the device's DMA read; buffered — the copy into the page cache (read + write) + the writeback's DMA read; no memory-traffic counter read",
    ),
    (
        "disk_read_mem_per_mb",
        3.0,
        "ASSUMED 3: direct — the device's DMA write into the staging block + the copy out of it (read + write); buffered — the app reads what it wrote, from the page cache, so 2 of these 3 (an over-count of 1 MB/MB); no memory-traffic counter read",
    ),
    (
        "frame_mem_per_mb",
        2.0,
        "ASSUMED 2: the frame copy's read + write; no memory-traffic counter read",
    ),
];

/// Input by input, the median of several probes (the lower middle for an even count), and each
/// measured input's spread (key, min, max) where the probes differ. Assumed and stated inputs are
/// the same in every probe and are kept as they are.
pub fn median_of(probes: &[Inputs]) -> (Inputs, Vec<(String, f64, f64)>) {
    let mut out = probes[0].clone();
    let mut spread = Vec::new();
    for (k, v) in out.values.iter_mut() {
        if v.origin != Origin::Measured {
            continue;
        }
        let mut xs: Vec<f64> = probes
            .iter()
            .filter_map(|i| i.values.get(k).map(|x| x.value))
            .collect();
        xs.sort_by(f64::total_cmp);
        if xs.len() < 2 {
            continue;
        }
        v.value = xs[(xs.len() - 1) / 2];
        v.source = format!("{} — median of {} probes", v.source, xs.len());
        let (lo, hi) = (xs[0], xs[xs.len() - 1]);
        if hi > lo {
            spread.push((k.clone(), lo, hi));
        }
    }
    (out, spread)
}

/// Measure the inputs. `ws`: the working-set size of every ring.
pub fn probe(p: &Profile, cpus: usize, dir: &Path, ws: usize) -> Result<Inputs, ValidateError> {
    let mut inp = Inputs::new("this machine (probes)", std::env::consts::OS);
    measured(&mut inp, "cpus", cpus as f64, "logical CPUs");
    // The profile's own [assumptions] win (they are how a user tests another copy count).
    for (k, v, why) in LOOPBACK_TRAFFIC {
        if !p.assumptions.contains_key(*k) {
            put(&mut inp, k, *v, Origin::Assumed, why);
        }
    }
    loopback_tcp(&mut inp, ws)?;
    file(&mut inp, p, dir, ws)?;
    copies(&mut inp, cpus, ws)?;
    ping_pong(&mut inp)?;
    Ok(inp)
}

/// Loopback TCP: 64 MB, CPU of this process (sender + receiver threads) per MB.
fn loopback_tcp(inp: &mut Inputs, ws: usize) -> Result<(), ValidateError> {
    let (mut r, w) = tcp_pair().map_err(failed)?;
    let stop = Arc::new(AtomicBool::new(false));
    let h = pump(w, Ring::new(ws), stop.clone());
    let mut ring = Ring::new(ws);
    recv(&mut r, &mut ring, 8 * MB).map_err(failed)?; // warm-up
    let (c0, t0) = (proc_cpu_s()?, Instant::now());
    recv(&mut r, &mut ring, 64 * MB).map_err(failed)?;
    let (cpu, wall) = (proc_cpu_s()? - c0, t0.elapsed().as_secs_f64());
    stop.store(true, Ordering::Relaxed);
    drop(r);
    let _ = h.join();
    let how =
        "64 MB over loopback TCP in 1 MB chunks, this process's CPU (sender + receiver) per MB";
    measured(inp, "net_rx_cpu_s_per_mb_tcp", cpu / 64.0, how);
    measured(inp, "net_rx_cpu_s_per_mb_udp", cpu / 64.0, how);
    measured(inp, "net_tx_cpu_s_per_mb", cpu / 64.0, how);
    measured(
        inp,
        "net_link_mb_s",
        64.0 / wall,
        "64 MB over loopback TCP, MB/s",
    );

    Ok(())
}

/// File write then read in 1 MB chunks, the way the app does them ([`AppFile`]: cache bypassed,
/// or through the cache with an fdatasync at every wrap, as the profile's `disk_io` says), over
/// a file of ≥ the working set filled first (not timed): the timed passes overwrite and read it.
fn file(inp: &mut Inputs, p: &Profile, dir: &Path, ws: usize) -> Result<(), ValidateError> {
    let d = &p.demand;
    let buffered = d.disk_io == "buffered";
    let total = ws.max(128 * MB).div_ceil(MB);
    let path = dir.join("probe.bin");
    let mut ring = Ring::new(ws);
    let fill = ring.take(CHUNK).to_vec();
    let mut f = AppFile::create(&path, buffered, total * MB, &fill).map_err(failed)?;
    let path_words = if buffered {
        "through the cache, fdatasync at each wrap"
    } else {
        "cache bypassed, staged in 4 MiB blocks"
    };
    // One pass more than the file holds, so a buffered pass includes a wrap's fdatasync.
    let (c0, t0) = (proc_cpu_s()?, Instant::now());
    for _ in 0..total + 1 {
        f.write(ring.take(CHUNK)).map_err(failed)?;
    }
    let (cpu, wall) = (proc_cpu_s()? - c0, t0.elapsed().as_secs_f64());
    let how = format!(
        "{} MB writes of 1 MB to a {total} MB temp file ({path_words}), this process's CPU",
        total + 1
    );
    let tf = (total + 1) as f64;
    measured(inp, &d.disk_key("write", "mb_s"), tf / wall, &how);
    measured(inp, &d.disk_key("write", "cpu_s_per_mb"), cpu / tf, &how);
    let (c0, t0) = (proc_cpu_s()?, Instant::now());
    for _ in 0..total {
        f.read(ring.take(CHUNK)).map_err(failed)?;
    }
    let (cpu, wall) = (proc_cpu_s()? - c0, t0.elapsed().as_secs_f64());
    let how = format!("{total} MB reads of 1 MB from the temp file ({path_words})");
    let tf = total as f64;
    measured(inp, &d.disk_key("read", "mb_s"), tf / wall, &how);
    measured(inp, &d.disk_key("read", "cpu_s_per_mb"), cpu / tf, &how);
    drop(f);
    let _ = std::fs::remove_file(&path);
    Ok(())
}

/// Copies in 1 MB chunks through a ring: one thread (frame copy CPU per MB copied, and one
/// core's copy rate: the CPU floor of memory traffic), then all threads at once (bandwidth,
/// bytes read + written). The all-thread clock runs from a start barrier to an end barrier
/// that every thread reaches right after its copy: ring set-up and freeing (unmapping the
/// rings takes as long as a third of the copy) stay outside it.
fn copies(inp: &mut Inputs, cpus: usize, ws: usize) -> Result<(), ValidateError> {
    let mut ring = Ring::new(ws);
    ring.copy(ws); // warm-up
    let bytes = 4 * ws;
    let t0 = thread_cpu_time_ns().map_err(failed)?;
    ring.copy(bytes);
    let cpu = (thread_cpu_time_ns().map_err(failed)? - t0) as f64 / 1e9;
    let copied_mb = bytes as f64 / 1e6;
    let how = format!(
        "{} MB copied in 1 MB chunks through a {} MiB ring by one thread, its thread CPU",
        bytes / MB,
        ws >> 20
    );
    for var in FRAME_VARIANTS {
        measured(
            inp,
            &format!("frame_copy_cpu_s_per_mb_{var}"),
            cpu / copied_mb,
            &format!("{how} per MB copied"),
        );
    }
    measured(
        inp,
        "mem_bw_1t_mb_s",
        2.0 * copied_mb / cpu,
        &format!("{how}: bytes read + written per CPU-second"),
    );
    drop(ring);
    // A capacity: the best of 3 passes (as STREAM reports its best), since a shared host's
    // other work only ever lowers it.
    let (bytes, passes) = (4 * ws, 3);
    let (start, end) = (Barrier::new(cpus + 1), Barrier::new(cpus + 1));
    let wall = std::thread::scope(|s| {
        for _ in 0..cpus {
            s.spawn(|| {
                let mut ring = Ring::new(ws);
                ring.copy(ws); // warm-up
                for _ in 0..passes {
                    start.wait();
                    ring.copy(bytes);
                    end.wait();
                }
            });
        }
        (0..passes)
            .map(|_| {
                start.wait();
                let t0 = Instant::now();
                end.wait();
                t0.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    });
    let traffic = cpus as f64 * 2.0 * bytes as f64;
    measured(
        inp,
        "mem_bw_mb_s",
        traffic / 1e6 / wall,
        &format!(
            "{cpus} thread(s) each copying {} MB in 1 MB chunks through its own {} MiB ring, bytes read + written / wall (start to end barrier), best of {passes} passes",
            bytes / MB,
            ws >> 20
        ),
    );

    Ok(())
}

/// Context switches: the app's own ping-pong with a partner thread, bound to one CPU as in the
/// app, this process's CPU per switch (2 per round trip, the pipe write + read of both sides
/// included). In a thread of its own, so the binding does not stay with the caller.
fn ping_pong(inp: &mut Inputs) -> Result<(), ValidateError> {
    let n = 20_000;
    let (cpu, pinned) = std::thread::scope(|s| {
        s.spawn(|| -> Result<(f64, Result<usize, String>), ValidateError> {
            let mut pp = PingPong::start(super::work::nth_allowed_cpu(0)).map_err(failed)?;
            pp.round_trips(2000).map_err(failed)?;
            let c0 = proc_cpu_s()?;
            pp.round_trips(n).map_err(failed)?;
            let cpu = proc_cpu_s()? - c0;
            Ok((cpu, pp.pinned.clone()))
        })
        .join()
        .map_err(|_| failed("the ping-pong probe panicked"))?
    })?;
    measured(
        inp,
        "ctx_switch_us",
        cpu / (n as f64 * SWITCHES_PER_ROUND_TRIP) * 1e6,
        &format!(
            "{n} round trips of a 1-byte pipe ping-pong with a partner thread (the app's own), {}, this process's CPU per switch (2 per round trip, pipe write + read included)",
            match pinned {
                Ok(c) => format!("both bound to CPU {c} (same-CPU switches, as in the app)"),
                Err(why) => format!("NOT bound to one CPU ({why}): cross-CPU wake-ups included"),
            }
        ),
    );

    Ok(())
}

#[cfg(test)]
mod median_tests {
    use super::*;

    #[test]
    fn the_median_of_three_probes_is_taken_input_by_input_and_assumptions_kept() {
        let probe = |cpu: f64, bw: f64| {
            let mut i = Inputs::new("this machine (probes)", "linux");
            measured(&mut i, "net_tx_cpu_s_per_mb", cpu, "loopback");
            measured(&mut i, "mem_bw_mb_s", bw, "copy");
            measured(&mut i, "cpus", 2.0, "logical CPUs");
            put(
                &mut i,
                "net_tx_mem_per_mb",
                4.0,
                Origin::Assumed,
                "ASSUMED 4",
            );
            i
        };
        let ps = [
            probe(0.0007, 9000.0),
            probe(0.00035, 18000.0),
            probe(0.0005, 17000.0),
        ];
        let (m, spread) = median_of(&ps);
        assert_eq!(m.get("net_tx_cpu_s_per_mb"), Some(0.0005));
        assert_eq!(m.get("mem_bw_mb_s"), Some(17000.0));
        assert_eq!(m.get("cpus"), Some(2.0));
        assert_eq!(m.get("net_tx_mem_per_mb"), Some(4.0));
        assert!(
            m.values["net_tx_cpu_s_per_mb"]
                .source
                .ends_with("median of 3 probes")
        );
        assert_eq!(m.values["net_tx_mem_per_mb"].source, "ASSUMED 4");
        // Spread only for the inputs that moved.
        let keys: Vec<&str> = spread.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(keys, ["mem_bw_mb_s", "net_tx_cpu_s_per_mb"]);
        assert_eq!(spread[1].1, 0.00035);
        assert_eq!(spread[1].2, 0.0007);
    }
}
