//! The synthetic application's temp file, written and read the way the profile's `disk_io`
//! says, so the application does what the file-system figures the model reads measured:
//! - `direct` (the default): the OS cache bypassed (`platform::fs::open_uncached`), the unit's
//!   bytes staged into an aligned 4 MiB block and written (read) a block at a time, as
//!   `fs/seq_write_t*` / `fs/seq_read_t*` do for `mb_per_s` and `cpu_s_per_gb`;
//! - `buffered`: through the OS cache, made durable (fdatasync) every time the file wraps, as a
//!   recorder rotating its segment files does and as the suite's `_buffered` figures (writes,
//!   fsync and close of each file) include.
//!
//! Either way the file holds `cap` bytes, filled before the step (not measured): writes then
//! overwrite allocated blocks in place, wrapping, and reads stream through what it holds.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::platform::fs::{self, AlignedBuf};

/// The block of a cache-bypassed transfer: the file-system suite's block size.
pub const DIRECT_BLOCK: usize = 4 << 20;

/// Why `disk_io = "direct"` cannot run here, for an error the user can act on.
fn direct_refused(path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!(
        "demand.disk_io = \"direct\": the OS cache cannot be bypassed for {} ({why}); set \
         disk_io = \"buffered\" in the profile, or point TMPDIR at a directory on a disk",
        path.display()
    ))
}

pub enum AppFile {
    Buffered {
        file: File,
        cap: u64,
        wpos: u64,
        rpos: u64,
    },
    Direct {
        file: File,
        cap: u64,
        wbuf: AlignedBuf,
        wfill: usize,
        wpos: u64,
        rbuf: AlignedBuf,
        /// Bytes of `rbuf` not yet handed out, from `DIRECT_BLOCK - rleft`.
        rleft: usize,
        rpos: u64,
    },
}

impl AppFile {
    /// Create `path`, `cap` bytes (rounded down to whole blocks for `direct`, at least one),
    /// filled from `fill`.
    pub fn create(path: &Path, buffered: bool, cap: usize, fill: &[u8]) -> io::Result<AppFile> {
        std::fs::File::create(path)?;
        if buffered {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)?;
            let mut off = 0u64;
            while (off as usize) < cap {
                let n = fill.len().min(cap - off as usize);
                write_all_at(&file, &fill[..n], off)?;
                off += n as u64;
            }
            file.sync_data()?;
            return Ok(AppFile::Buffered {
                file,
                cap: cap as u64,
                wpos: 0,
                rpos: cap as u64 / 2,
            });
        }
        let u = fs::open_uncached(path, true).map_err(|e| direct_refused(path, e))?;
        if u.drop_before_pass {
            return Err(direct_refused(path, u.method));
        }
        if !DIRECT_BLOCK.is_multiple_of(u.align) {
            return Err(direct_refused(
                path,
                format!("alignment {} B does not divide 4 MiB", u.align),
            ));
        }
        let cap = (cap / DIRECT_BLOCK).max(1) * DIRECT_BLOCK;
        let mut wbuf = AlignedBuf::new(DIRECT_BLOCK, u.align, 0);
        for (i, b) in wbuf.bytes_mut().iter_mut().enumerate() {
            *b = fill.get(i % fill.len().max(1)).copied().unwrap_or(0);
        }
        let mut off = 0;
        while off < cap {
            write_all_at(&u.file, wbuf.bytes(), off as u64)?;
            off += DIRECT_BLOCK;
        }
        Ok(AppFile::Direct {
            file: u.file,
            cap: cap as u64,
            wbuf,
            wfill: 0,
            wpos: 0,
            rbuf: AlignedBuf::new(DIRECT_BLOCK, u.align, 0),
            rleft: 0,
            rpos: cap as u64 / 2 / DIRECT_BLOCK as u64 * DIRECT_BLOCK as u64,
        })
    }

    /// Write `data` at the write position (wrapping at the file's size).
    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        match self {
            AppFile::Buffered {
                file, cap, wpos, ..
            } => {
                while !data.is_empty() {
                    if *wpos >= *cap {
                        // A wrap: what was written since the last one is made durable.
                        file.sync_data()?;
                        *wpos = 0;
                    }
                    let n = data.len().min((*cap - *wpos) as usize);
                    write_all_at(file, &data[..n], *wpos)?;
                    *wpos += n as u64;
                    data = &data[n..];
                }
            }
            AppFile::Direct {
                file,
                cap,
                wbuf,
                wfill,
                wpos,
                ..
            } => {
                while !data.is_empty() {
                    let n = data.len().min(DIRECT_BLOCK - *wfill);
                    wbuf.bytes_mut()[*wfill..*wfill + n].copy_from_slice(&data[..n]);
                    *wfill += n;
                    data = &data[n..];
                    if *wfill == DIRECT_BLOCK {
                        if *wpos >= *cap {
                            *wpos = 0;
                        }
                        write_all_at(file, wbuf.bytes(), *wpos)?;
                        *wpos += DIRECT_BLOCK as u64;
                        *wfill = 0;
                    }
                }
            }
        }
        Ok(())
    }

    /// Fill `out` from the read position (wrapping at the file's size).
    pub fn read(&mut self, mut out: &mut [u8]) -> io::Result<()> {
        match self {
            AppFile::Buffered {
                file, cap, rpos, ..
            } => {
                while !out.is_empty() {
                    if *rpos >= *cap {
                        *rpos = 0;
                    }
                    let n = out.len().min((*cap - *rpos) as usize);
                    read_exact_at(file, &mut out[..n], *rpos)?;
                    *rpos += n as u64;
                    out = &mut out[n..];
                }
            }
            AppFile::Direct {
                file,
                cap,
                rbuf,
                rleft,
                rpos,
                ..
            } => {
                while !out.is_empty() {
                    if *rleft == 0 {
                        if *rpos >= *cap {
                            *rpos = 0;
                        }
                        read_exact_at(file, rbuf.bytes_mut(), *rpos)?;
                        *rpos += DIRECT_BLOCK as u64;
                        *rleft = DIRECT_BLOCK;
                    }
                    let from = DIRECT_BLOCK - *rleft;
                    let n = out.len().min(*rleft);
                    out[..n].copy_from_slice(&rbuf.bytes()[from..from + n]);
                    *rleft -= n;
                    out = &mut out[n..];
                }
            }
        }
        Ok(())
    }
}

fn write_all_at(f: &File, mut buf: &[u8], mut off: u64) -> io::Result<()> {
    while !buf.is_empty() {
        let n = fs::write_at(f, buf, off)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0"));
        }
        buf = &buf[n..];
        off += n as u64;
    }
    Ok(())
}

fn read_exact_at(f: &File, mut buf: &mut [u8], mut off: u64) -> io::Result<()> {
    while !buf.is_empty() {
        let n = fs::read_at(f, buf, off)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the temp file is shorter than it was filled",
            ));
        }
        buf = &mut buf[n..];
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is written is read back, in both modes, across a wrap (a direct-I/O partial block
    /// is written only when its block is full).
    /// Why direct I/O must be refused in `dir`, decided before the test runs by the platform's
    /// cache-bypassing open of a probe file: refused there (memory-backed file system, Wine), a
    /// page-dropping fallback (the file system refuses O_DIRECT), or an alignment that does not
    /// divide the block. None: direct I/O must work.
    fn direct_refusal(dir: &Path) -> Option<String> {
        let probe = dir.join("probe");
        File::create(&probe).unwrap();
        let why = match fs::open_uncached(&probe, true) {
            Err(e) => Some(e.to_string()),
            Ok(u) if u.drop_before_pass => Some(u.method.to_string()),
            Ok(u) if !DIRECT_BLOCK.is_multiple_of(u.align) => {
                Some(format!("alignment {} B does not divide 4 MiB", u.align))
            }
            Ok(_) => None,
        };
        std::fs::remove_file(&probe).unwrap();
        why
    }

    #[test]
    fn both_modes_write_wrap_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let refusal = direct_refusal(dir.path());
        let fill = vec![7u8; 1000];
        for buffered in [true, false] {
            let path = dir.path().join(format!("f-{buffered}"));
            let mut f = match AppFile::create(&path, buffered, 2 * DIRECT_BLOCK, &fill) {
                Ok(f) => {
                    assert!(buffered || refusal.is_none(), "direct although {refusal:?}");
                    f
                }
                // Refused exactly where the platform refuses, with its reason.
                Err(e) if !buffered => {
                    let why = refusal
                        .as_deref()
                        .unwrap_or_else(|| panic!("direct I/O refused where it works: {e}"));
                    assert!(e.to_string().contains(why), "{e} (expected: {why})");
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                2 * DIRECT_BLOCK as u64
            );
            let data: Vec<u8> = (0..3 * DIRECT_BLOCK).map(|i| (i % 251) as u8).collect();
            f.write(&data).unwrap();
            // 3 blocks written into a 2-block file: the third overwrote the first.
            let mut back = vec![0u8; DIRECT_BLOCK];
            match &mut f {
                AppFile::Buffered { rpos, .. } => *rpos = 0,
                AppFile::Direct { rpos, rleft, .. } => (*rpos, *rleft) = (0, 0),
            }
            f.read(&mut back).unwrap();
            assert!(back == data[2 * DIRECT_BLOCK..], "buffered = {buffered}");
            f.read(&mut back).unwrap();
            assert!(
                back == data[DIRECT_BLOCK..2 * DIRECT_BLOCK],
                "buffered = {buffered}"
            );
        }
    }
}
