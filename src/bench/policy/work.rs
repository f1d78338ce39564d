//! The study's workloads: a fixed amount of work per child process, in units whose cost is
//! calibrated once so that one process alone takes a known time.
//! - cpu: one unit = the first [`PI_DIGITS`] digits of π by the Rabinowitz–Wagon spigot (checked);
//! - io: one unit = write a [`IO_FILE_BYTES`] file, read it back, from a rotating series of
//!   [`IO_FILES`] files in the process's own folder (bounded size; removed at the end);
//! - mixed: half the cpu units and half the io units;
//! - sleepy: bursts of one cpu unit each followed by a 1 ms sleep (the interactive pattern).

use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub const PI_DIGITS: usize = 100;
pub const IO_FILE_BYTES: usize = 4096;
pub const IO_FILES: u64 = 8;
pub const SLEEP: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum WorkKind {
    Cpu,
    Io,
    Mixed,
    Sleepy,
}

impl WorkKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkKind::Cpu => "cpu",
            WorkKind::Io => "io",
            WorkKind::Mixed => "mixed",
            WorkKind::Sleepy => "sleepy",
        }
    }
    pub fn uses_files(self) -> bool {
        matches!(self, WorkKind::Io | WorkKind::Mixed)
    }
}

/// How much work one process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkSize {
    pub kind: WorkKind,
    pub cpu_units: u64,
    pub io_units: u64,
    pub bursts: u64,
}

/// Digits of π by the spigot algorithm (Rabinowitz & Wagon 1995), as ASCII.
pub fn pi_digits(n: usize) -> String {
    let len = n * 10 / 3 + 1;
    let mut a = vec![2u32; len];
    let mut out = String::with_capacity(n + 1);
    let mut nines = 0;
    let mut predigit = 0u32;
    for j in 0..=n {
        let mut q = 0u32;
        for i in (1..=len).rev() {
            let x = 10 * a[i - 1] + q * i as u32;
            a[i - 1] = x % (2 * i as u32 - 1);
            q = x / (2 * i as u32 - 1);
        }
        a[0] = q % 10;
        q /= 10;
        if q == 9 {
            nines += 1;
        } else if q == 10 {
            out.push(char::from(b'0' + (predigit + 1) as u8));
            for _ in 0..nines {
                out.push('0');
            }
            predigit = 0;
            nines = 0;
        } else {
            if j > 0 {
                out.push(char::from(b'0' + predigit as u8));
            }
            predigit = q;
            for _ in 0..nines {
                out.push('9');
            }
            nines = 0;
        }
    }
    out.push(char::from(b'0' + predigit as u8));
    out.truncate(n);
    out
}

fn cpu_unit() -> io::Result<()> {
    let d = pi_digits(std::hint::black_box(PI_DIGITS));
    if !d.starts_with("314159265358979") {
        return Err(io::Error::other(format!("π came out wrong: {}", &d[..15])));
    }
    Ok(())
}

fn io_unit(dir: &Path, i: u64, buf: &mut [u8]) -> io::Result<()> {
    let p = dir.join(format!("f{}", i % IO_FILES));
    buf[0] = i as u8;
    std::fs::File::create(&p)?.write_all(buf)?;
    let mut back = Vec::with_capacity(buf.len());
    std::fs::File::open(&p)?.read_to_end(&mut back)?;
    if back.len() != buf.len() || back[0] != buf[0] {
        return Err(io::Error::other(
            "a file read back differs from what was written",
        ));
    }
    Ok(())
}

/// Do the work; `dir` is this process's own folder (io, mixed), emptied at the end.
pub fn run(size: &WorkSize, dir: &Path) -> io::Result<()> {
    let mut buf = vec![0x5au8; IO_FILE_BYTES];
    let r = (|| {
        for _ in 0..size.cpu_units {
            cpu_unit()?;
        }
        for i in 0..size.io_units {
            io_unit(dir, i, &mut buf)?;
        }
        for _ in 0..size.bursts {
            cpu_unit()?;
            std::thread::sleep(SLEEP);
        }
        Ok(())
    })();
    if size.io_units > 0 {
        for i in 0..IO_FILES.min(size.io_units) {
            let _ = std::fs::remove_file(dir.join(format!("f{i}")));
        }
    }
    r
}

/// Seconds per unit of each kind, measured in this process: the batch doubles until it lasts
/// 20 ms, then the fastest of three such batches counts (a stall on a busy machine inflates one
/// batch, not all three).
fn per_unit_s(kind: WorkKind, dir: &Path) -> io::Result<f64> {
    let size = |n: u64| match kind {
        WorkKind::Io => WorkSize {
            kind,
            cpu_units: 0,
            io_units: n,
            bursts: 0,
        },
        WorkKind::Sleepy => WorkSize {
            kind,
            cpu_units: 0,
            io_units: 0,
            bursts: n,
        },
        _ => WorkSize {
            kind,
            cpu_units: n,
            io_units: 0,
            bursts: 0,
        },
    };
    let time = |n: u64| -> io::Result<f64> {
        let t = Instant::now();
        run(&size(n), dir)?;
        Ok(t.elapsed().as_secs_f64())
    };
    let mut n = 1u64;
    while time(n)? < 0.02 && n < 1 << 24 {
        n *= 2;
    }
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(time(n)?);
    }
    Ok(best / n as f64)
}

/// Sizes so that one process alone takes about `target` (each at least one unit), and the time
/// one process of that size really took alone (the fastest of three runs here).
pub fn calibrate(kind: WorkKind, target: Duration, dir: &Path) -> io::Result<(WorkSize, Duration)> {
    let t = target.as_secs_f64();
    let units = |per: f64, share: f64| ((t * share / per).round() as u64).max(1);
    let size = match kind {
        WorkKind::Cpu => WorkSize {
            kind,
            cpu_units: units(per_unit_s(WorkKind::Cpu, dir)?, 1.0),
            io_units: 0,
            bursts: 0,
        },
        WorkKind::Io => WorkSize {
            kind,
            cpu_units: 0,
            io_units: units(per_unit_s(WorkKind::Io, dir)?, 1.0),
            bursts: 0,
        },
        WorkKind::Mixed => WorkSize {
            kind,
            cpu_units: units(per_unit_s(WorkKind::Cpu, dir)?, 0.5),
            io_units: units(per_unit_s(WorkKind::Io, dir)?, 0.5),
            bursts: 0,
        },
        WorkKind::Sleepy => WorkSize {
            kind,
            cpu_units: 0,
            io_units: 0,
            bursts: units(per_unit_s(WorkKind::Sleepy, dir)?, 1.0),
        },
    };
    // The fastest of three runs of the chosen size (one run can be stalled on a busy machine).
    let mut alone = Duration::MAX;
    for _ in 0..3 {
        let t0 = Instant::now();
        run(&size, dir)?;
        alone = alone.min(t0.elapsed());
    }
    Ok((size, alone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_digits_are_right() {
        assert_eq!(pi_digits(30), "314159265358979323846264338327");
        assert_eq!(pi_digits(PI_DIGITS).len(), PI_DIGITS);
    }

    #[test]
    fn io_work_leaves_no_files() {
        let d = tempfile::tempdir().unwrap();
        let s = WorkSize {
            kind: WorkKind::Mixed,
            cpu_units: 1,
            io_units: 20,
            bursts: 1,
        };
        run(&s, d.path()).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
