//! `osgauge model validate <profile>`: a synthetic application doing the profile's per-unit work —
//! receive over loopback TCP (std::net), send over loopback, write (and read) a temp file, touch
//! memory (a copy), compute (spin on the thread's CPU clock), copy frames — run at rising offered
//! rates and then flat out (saturation), measuring the achieved rate and the CPU utilisation. The
//! prediction it is compared with is made from a fresh measurement of the inputs by small probes
//! in this module (the network and file-system suites may not be present): CPU per MB of a
//! loopback transfer (sender and receiver are both on this machine, in both the probe and the
//! app), buffered file write/read bandwidth and CPU per MB, all-thread copy bandwidth, frame copy
//! time. CPU is this process's own CPU time (`crate::cpucost`'s process counter), so other work
//! on a shared machine does not count as the app's; what other work took is measured in an idle
//! baseline first and given to the model as a fixed background CPU load F_cpu.
//!
//! Not exercised: context switches (the app does not force them: the profile's count is dropped),
//! presenting to a display, memory traffic (no counter: memory utilisation is predicted only).

use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::calc::{Prediction, fmt, predict};
use super::inputs::{Inputs, Origin, Value};
use super::profile::Profile;
use crate::cli::CliError;
use crate::cpucost::CpuMeter;
use crate::platform::cputime;
use crate::platform::realtime::{now_ns, sleep_until_ns, thread_cpu_time_ns};

const MB: usize = 1_000_000;

/// Set by Ctrl-C (SIGINT/SIGTERM/SIGHUP): the current step stops, files are removed, exit 130/143.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

const DIR_PREFIX: &str = "osgauge-validate-";

/// Remove the temp folders of validate runs whose process is gone (killed before cleaning up).
fn remove_stale() {
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(DIR_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !crate::platform::process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn other(e: impl std::fmt::Display) -> CliError {
    CliError::Other(anyhow::anyhow!("model validate: {e}"))
}

fn proc_cpu_s() -> Result<f64, CliError> {
    Ok(cputime::process_cpu_ns().map_err(other)? as f64 / 1e9)
}

/// A loopback pair: (reader side, writer side).
fn pair() -> std::io::Result<(TcpStream, TcpStream)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let w = TcpStream::connect(l.local_addr()?)?;
    let (r, _) = l.accept()?;
    Ok((r, w))
}

/// A thread writing `buf` forever into `w` until `stop` (or the peer closes).
fn pump(mut w: TcpStream, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let buf = vec![7u8; 256 * 1024];
        while !stop.load(Ordering::Relaxed) {
            if w.write_all(&buf).is_err() {
                break;
            }
        }
    })
}

/// A thread reading `r` until end of stream.
fn drain(mut r: TcpStream) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 256 * 1024];
        while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
    })
}

fn read_exact_mb(r: &mut TcpStream, buf: &mut [u8], bytes: usize) -> std::io::Result<()> {
    let mut left = bytes;
    while left > 0 {
        let n = left.min(buf.len());
        r.read_exact(&mut buf[..n])?;
        left -= n;
    }
    Ok(())
}

fn measured(inp: &mut Inputs, key: &str, value: f64, how: &str) {
    inp.values.insert(
        key.to_string(),
        Value {
            value,
            origin: Origin::Measured,
            source: format!("validate probe: {how}"),
        },
    );
}

/// The probes: fresh inputs for the prediction.
fn probe(p: &Profile, cpus: usize, dir: &Path) -> Result<Inputs, CliError> {
    let mut inp = Inputs::new("this machine (probes)", std::env::consts::OS);
    measured(&mut inp, "cpus", cpus as f64, "logical CPUs");
    // Loopback TCP: 64 MB, CPU of this process (sender + receiver threads) per MB.
    {
        let (mut r, w) = pair().map_err(other)?;
        let stop = Arc::new(AtomicBool::new(false));
        let h = pump(w, stop.clone());
        let mut buf = vec![0u8; 256 * 1024];
        read_exact_mb(&mut r, &mut buf, 8 * MB).map_err(other)?; // warm-up
        let (c0, t0) = (proc_cpu_s()?, Instant::now());
        read_exact_mb(&mut r, &mut buf, 64 * MB).map_err(other)?;
        let (cpu, wall) = (proc_cpu_s()? - c0, t0.elapsed().as_secs_f64());
        stop.store(true, Ordering::Relaxed);
        drop(r);
        let _ = h.join();
        let how = "64 MB over loopback TCP, this process's CPU (sender + receiver) per MB";
        measured(&mut inp, "net_rx_cpu_s_per_mb_tcp", cpu / 64.0, how);
        measured(&mut inp, "net_rx_cpu_s_per_mb_udp", cpu / 64.0, how);
        measured(&mut inp, "net_tx_cpu_s_per_mb", cpu / 64.0, how);
        measured(
            &mut inp,
            "net_link_mb_s",
            64.0 / wall,
            "64 MB over loopback TCP, MB/s",
        );
    }
    // File write then read (buffered, the page cache): 128 MB in 1 MB chunks.
    {
        let path = dir.join("probe.bin");
        let chunk = vec![3u8; MB];
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(other)?;
        let (c0, t0) = (proc_cpu_s()?, Instant::now());
        for _ in 0..128 {
            f.write_all(&chunk).map_err(other)?;
        }
        let (cpu, wall) = (proc_cpu_s()? - c0, t0.elapsed().as_secs_f64());
        let t = p.demand.disk_threads;
        let how = "128 MB buffered writes of 1 MB to a temp file, this process's CPU";
        measured(
            &mut inp,
            &format!("disk_write_mb_s_t{t}"),
            128.0 / wall,
            how,
        );
        measured(
            &mut inp,
            &format!("disk_write_cpu_s_per_mb_t{t}"),
            cpu / 128.0,
            how,
        );
        f.seek(SeekFrom::Start(0)).map_err(other)?;
        let mut rbuf = vec![0u8; MB];
        let (c0, t0) = (proc_cpu_s()?, Instant::now());
        for _ in 0..128 {
            f.read_exact(&mut rbuf).map_err(other)?;
        }
        let (cpu, wall) = (proc_cpu_s()? - c0, t0.elapsed().as_secs_f64());
        let how = "128 MB buffered reads of 1 MB from the temp file (page cache)";
        measured(&mut inp, &format!("disk_read_mb_s_t{t}"), 128.0 / wall, how);
        measured(
            &mut inp,
            &format!("disk_read_cpu_s_per_mb_t{t}"),
            cpu / 128.0,
            how,
        );
        drop(f);
        let _ = std::fs::remove_file(&path);
    }
    // Copy: single thread (frame copy CPU per MB), then all threads (bandwidth, read + written).
    {
        let n = 32 * MB;
        let src = vec![1u8; n];
        let mut dst = vec![0u8; n];
        dst.copy_from_slice(&src);
        let t0 = thread_cpu_time_ns().map_err(other)?;
        for _ in 0..4 {
            dst.copy_from_slice(std::hint::black_box(&src));
        }
        let cpu = (thread_cpu_time_ns().map_err(other)? - t0) as f64 / 1e9;
        let v = cpu / (4.0 * n as f64 / 1e6);
        for var in super::inputs::FRAME_VARIANTS {
            measured(
                &mut inp,
                &format!("frame_copy_cpu_s_per_mb_{var}"),
                v,
                "4 copies of 32 MB, thread CPU per MB copied",
            );
        }
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..cpus {
                s.spawn(|| {
                    let src = vec![1u8; n];
                    let mut dst = vec![0u8; n];
                    for _ in 0..4 {
                        dst.copy_from_slice(std::hint::black_box(&src));
                    }
                });
            }
        });
        // First-touch of both buffers (2n written) + 4 copies (8n read + written).
        let bytes = cpus as f64 * 10.0 * n as f64;
        measured(
            &mut inp,
            "mem_bw_mb_s",
            bytes / 1e6 / t0.elapsed().as_secs_f64(),
            "all threads copying 32 MB buffers, bytes read + written / wall",
        );
    }
    Ok(inp)
}

struct Step {
    offered: Option<f64>,
    achieved: f64,
    cpu_util: f64,
}

/// Run the synthetic application for `secs` at `rate` units/s (None: flat out).
fn run_app(
    p: &Profile,
    cpus: usize,
    rate: Option<f64>,
    secs: f64,
    dir: &Path,
) -> Result<Step, CliError> {
    let d = &p.demand;
    let app_cpu = d.app_cpu_s.unwrap_or(0.0) + d.app_cpu_pct.unwrap_or(0.0) / 100.0 * cpus as f64;
    let done = Arc::new(AtomicU64::new(0));
    // Workers set up before `start`; CPU is read at `start` and at `end` (setup not counted).
    let start = now_ns() + 200_000_000;
    let end = start + (secs * 1e9) as u64;
    let res: Result<f64, CliError> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        for k in 0..cpus {
            let done = done.clone();
            // Each worker stops its own helpers (another worker may still be mid-unit).
            let stop = Arc::new(AtomicBool::new(false));
            let dir = dir.to_path_buf();
            hs.push(s.spawn(move || -> Result<(), CliError> {
                let mut helpers = Vec::new();
                let mut rx = None;
                if d.net_rx_mb > 0.0 {
                    let (r, w) = pair().map_err(other)?;
                    helpers.push(pump(w, stop.clone()));
                    rx = Some(r);
                }
                let mut tx = None;
                if d.net_tx_mb > 0.0 {
                    let (r, w) = pair().map_err(other)?;
                    helpers.push(drain(r));
                    tx = Some(w);
                }
                let path = dir.join(format!("app-{k}.bin"));
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(other)?;
                let mut written = 0usize;
                let mut net = vec![0u8; 256 * 1024];
                let chunk = vec![5u8; MB];
                let mem_half = ((d.app_mem_mb / 2.0) * MB as f64) as usize;
                let mem_buf = mem_half.clamp(1, 16 * MB);
                let (msrc, mut mdst) = (vec![1u8; mem_buf], vec![0u8; mem_buf]);
                let fbytes = (d.frame_mb * MB as f64) as usize;
                let (fsrc, mut fdst) = (vec![2u8; fbytes.max(1)], vec![0u8; fbytes.max(1)]);
                let mut j = 0u64;
                if rate.is_none() {
                    sleep_until_ns(start).map_err(other)?;
                }
                loop {
                    if let Some(r) = rate {
                        let t = start + (((k as u64 + j * cpus as u64) as f64 / r) * 1e9) as u64;
                        if t >= end {
                            break;
                        }
                        sleep_until_ns(t).map_err(other)?;
                    }
                    if now_ns() >= end {
                        break; // a unit behind schedule at the end is not started
                    }
                    if INTERRUPTED.load(Ordering::Relaxed) {
                        break;
                    }
                    j += 1;
                    if let Some(r) = rx.as_mut() {
                        read_exact_mb(r, &mut net, (d.net_rx_mb * MB as f64) as usize)
                            .map_err(other)?;
                    }
                    let mut left = (d.disk_write_mb * MB as f64) as usize;
                    while left > 0 {
                        let n = left.min(MB);
                        if written > 256 * MB {
                            file.seek(SeekFrom::Start(0)).map_err(other)?;
                            written = 0;
                        }
                        file.write_all(&chunk[..n]).map_err(other)?;
                        written += n;
                        left -= n;
                    }
                    if d.disk_read_mb > 0.0 && written > 0 {
                        let mut left = (d.disk_read_mb * MB as f64) as usize;
                        let mut rb = vec![0u8; MB];
                        while left > 0 {
                            let n = left.min(MB).min(written);
                            file.seek(SeekFrom::Start(0)).map_err(other)?;
                            file.read_exact(&mut rb[..n]).map_err(other)?;
                            left -= n;
                        }
                        file.seek(SeekFrom::Start(written as u64)).map_err(other)?;
                    }
                    // The application's own work: its memory traffic (a copy counts read +
                    // written), then compute until its CPU time per unit is spent.
                    let t0 = thread_cpu_time_ns().map_err(other)?;
                    let mut left = mem_half;
                    while left > 0 {
                        let n = left.min(mem_buf);
                        mdst[..n].copy_from_slice(std::hint::black_box(&msrc[..n]));
                        left -= n;
                    }
                    let target = t0 + (app_cpu * 1e9) as u64;
                    while thread_cpu_time_ns().map_err(other)? < target {
                        for _ in 0..1000 {
                            std::hint::black_box(0u64);
                        }
                    }
                    for _ in 0..(d.frames.round() as usize) {
                        fdst.copy_from_slice(std::hint::black_box(&fsrc));
                    }
                    if let Some(w) = tx.as_mut() {
                        let mut left = (d.net_tx_mb * MB as f64) as usize;
                        while left > 0 {
                            let n = left.min(chunk.len());
                            w.write_all(&chunk[..n]).map_err(other)?;
                            left -= n;
                        }
                    }
                    if now_ns() <= end {
                        done.fetch_add(1, Ordering::Relaxed); // only units finished in the step
                    }
                }
                stop.store(true, Ordering::Relaxed);
                drop(rx);
                drop(tx);
                for h in helpers {
                    let _ = h.join();
                }
                drop(file);
                let _ = std::fs::remove_file(&path);
                Ok(())
            }));
        }
        let cpu = (|| -> Result<f64, CliError> {
            sleep_until_ns(start).map_err(other)?;
            let c0 = proc_cpu_s()?;
            sleep_until_ns(end).map_err(other)?;
            Ok(proc_cpu_s()? - c0)
        })();
        for h in hs {
            h.join().map_err(|_| other("a worker panicked"))??;
        }
        cpu
    });
    let cpu = res?;
    Ok(Step {
        offered: rate,
        achieved: done.load(Ordering::Relaxed) as f64 / secs,
        cpu_util: cpu / (secs * cpus as f64),
    })
}

fn ratio_text(measured: f64, predicted: f64) -> String {
    let r = measured / predicted - 1.0;
    format!(
        "{:+.1} % ({})",
        r * 100.0,
        if r.abs() <= 0.15 {
            "agrees within 15 %"
        } else {
            "DISAGREES (> 15 %)"
        }
    )
}

pub fn run_cli(path: &Path, max_rate: Option<f64>, step_s: f64) -> Result<i32, CliError> {
    let p = Profile::load(path).map_err(|e| CliError::Usage(e.0))?;
    if !(0.2..=60.0).contains(&step_s) {
        return Err(CliError::Usage("--step-s: from 0.2 to 60 seconds".into()));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    remove_stale();
    crate::platform::install_interrupt_handler(&INTERRUPTED).map_err(other)?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(other)?;
    let r = validate(p, cpus, dir.path(), max_rate, step_s);
    drop(dir);
    match crate::platform::interrupt_exit_code() {
        Some(code) if INTERRUPTED.load(Ordering::Relaxed) => {
            crate::errln!("osgauge: model validate interrupted; temporary files removed");
            Ok(code)
        }
        _ => r,
    }
}

fn validate(
    mut p: Profile,
    cpus: usize,
    dir: &Path,
    max_rate: Option<f64>,
    step_s: f64,
) -> Result<i32, CliError> {
    if p.demand.context_switches > 0.0 {
        crate::outln!(
            "note: the synthetic application does not force context switches; the profile's {} per unit are left out of the prediction",
            fmt(p.demand.context_switches)
        );
        p.demand.context_switches = 0.0;
    }
    p.capacity.remove("net_link_mb_s");
    crate::outln!(
        "validate: measuring the inputs with in-module probes (loopback TCP, temp file, copies) …"
    );
    let meter = CpuMeter::start(Duration::from_millis(500)).map_err(other)?;
    let base = meter.stop().map_err(other)?.baseline.busy_cpus();
    let mut inp = probe(&p, cpus, dir)?;
    inp.apply_profile(&p);
    let pred: Prediction = predict(&p, &inp);
    let a = super::analyse(&p, vec![inp], None);
    crate::out!("{}", super::render::text(&a));
    let busy = base > 0.25;
    crate::outln!(
        "Other work on this machine during a 0.5 s idle baseline: {:.2} CPUs{}",
        base,
        if busy {
            " — the machine is SHARED: the scheduler splits the CPUs between this app and that work, so the maximum rate cannot be validated here (the utilisation law still can: CPU per unit is this process's own)."
        } else {
            "."
        }
    );
    let Some(x_pred) = pred.x_max else {
        return Err(other(
            "no maximum rate could be predicted (nothing limits the profile's work)",
        ));
    };
    let top = max_rate.unwrap_or(1.25 * x_pred);
    let mut steps = Vec::new();
    crate::outln!(
        "\nvalidate: the synthetic application on {cpus} worker thread(s), {step_s} s per step"
    );
    crate::outln!(
        "  offered ({u}/s)  achieved ({u}/s)  CPU (this process)  CPU predicted",
        u = p.unit
    );
    let s_cpu = pred.resource("cpu").and_then(|r| r.s).unwrap_or(0.0);
    for f in [0.25, 0.5, 0.75, 1.0] {
        let r = (top * f / 1.25).max(0.01);
        // Long enough for ~20 units, within [step_s, 4 × step_s].
        let secs = (20.0 / r).clamp(step_s, 4.0 * step_s);
        let st = run_app(&p, cpus, Some(r), secs, dir)?;
        crate::outln!(
            "  {:>14.2}  {:>15.2}  {:>17.1} %  {:>12.1} %",
            r,
            st.achieved,
            st.cpu_util * 100.0,
            st.achieved * s_cpu * 100.0
        );
        steps.push(st);
    }
    let sat = run_app(&p, cpus, None, step_s, dir)?;
    crate::outln!(
        "  {:>14}  {:>15.2}  {:>17.1} %  {:>12.1} %",
        "flat out",
        sat.achieved,
        sat.cpu_util * 100.0,
        sat.achieved * s_cpu * 100.0
    );
    let measured_max = steps
        .iter()
        .map(|s| s.achieved)
        .fold(sat.achieved, f64::max);
    crate::outln!("\nComparison (prediction from the probes vs the synthetic application):");
    crate::outln!(
        "  maximum rate: predicted {:.2}, measured {:.2} {}/s: {}",
        x_pred,
        measured_max,
        p.unit,
        ratio_text(measured_max, x_pred)
    );
    let mut cpu_ok = s_cpu > 0.0;
    for st in steps.iter().chain(std::iter::once(&sat)) {
        if st.achieved <= 0.0 || s_cpu <= 0.0 {
            cpu_ok = false;
            continue;
        }
        let pr = st.achieved * s_cpu;
        crate::outln!(
            "  CPU utilisation at {:.2} {}/s ({}): predicted {:.1} %, measured {:.1} %: {}",
            st.achieved,
            p.unit,
            st.offered
                .map_or("flat out".to_string(), |o| format!("offered {o:.2}")),
            pr * 100.0,
            st.cpu_util * 100.0,
            ratio_text(st.cpu_util, pr)
        );
        cpu_ok &= ((st.cpu_util / pr) - 1.0).abs() <= 0.15;
    }
    let bottleneck = pred.bottleneck.clone().unwrap_or_default();
    crate::outln!(
        "  bottleneck: predicted {bottleneck}; flat out this process used {:.1} % of all CPUs{}",
        sat.cpu_util * 100.0,
        match (bottleneck == "cpu", busy) {
            (_, true) => " (shared machine: not judged)",
            (true, false) if sat.cpu_util >= 0.85 => " — consistent with a CPU bottleneck",
            (true, false) => " — the CPU was NOT saturated: the CPU bottleneck is not confirmed",
            (false, false) if sat.cpu_util < 0.85 => {
                " — CPU not saturated, consistent with a non-CPU bottleneck"
            }
            (false, false) => {
                " — the CPU saturated although another resource was predicted to limit first"
            }
        }
    );
    crate::outln!(
        "  memory, disk and network utilisations are predicted only (no counter measures them here)."
    );
    let x_ok = ((measured_max / x_pred) - 1.0).abs() <= 0.15;
    if busy && cpu_ok {
        crate::outln!(
            "The utilisation law holds (per-unit CPU demand within 15 % at every step); the maximum rate and bottleneck are not validated on this shared machine."
        );
    } else if x_ok && cpu_ok {
        crate::outln!(
            "Agreement within 15 %: the utilisation law (per-unit CPU demand) and the bottleneck law hold on this machine."
        );
    } else if cpu_ok {
        crate::outln!(
            "The utilisation law holds (the per-unit CPU demand adds up) but the maximum rate does not: the capacity of the bottleneck ({bottleneck}) is not what the probe measured — on a shared machine other work takes CPU that the idle baseline did not see, and concurrent I/O lowers the memory bandwidth a lone copy gets."
        );
    } else {
        crate::outln!(
            "The per-unit CPU demand does not add up: the probes' per-MB costs measured alone differ from the same work mixed in the app (the additivity assumption), or other work disturbed the measurement."
        );
    }
    Ok(crate::cli::EXIT_OK)
}
