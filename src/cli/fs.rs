//! Options of the fs suite on `osgauge micro` (`--dir`, `--sizes`, `--pattern`; `--threads` and
//! `--max-size` are shared with the mem suite and defined in `MemOpts`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::MemOpts;
use crate::bench::fs::{FsOptions, Pattern};
use crate::bench::mem::Threads;

#[derive(Args, Debug, Clone, Default)]
pub struct FsOpts {
    /// fs suite: directory to work in (a fresh osgauge-fs-* directory is made and removed there; local or a network mount) [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// fs suite: read-latency file sizes, comma-separated, e.g. 32KiB,256KiB,64MiB [default: 32KiB…64MiB; quick: 32KiB,256KiB,4MiB]
    #[arg(long, value_delimiter = ',', value_parser = parse_file_size, value_name = "SIZE")]
    pub sizes: Vec<u64>,
    /// fs suite: read-latency page orders, comma-separated (seq = backwards page by page, random) [default: both]
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ORDER")]
    pub pattern: Vec<FsPattern>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsPattern {
    Seq,
    Random,
}

fn parse_file_size(s: &str) -> Result<u64, String> {
    let b = crate::units::parse_size(s)?;
    if b < 4096 || b % 4096 != 0 {
        return Err(format!(
            "--sizes {s}: must be a multiple of 4KiB, at least 4KiB"
        ));
    }
    Ok(b)
}

impl FsOpts {
    pub fn is_set(&self) -> bool {
        self.dir.is_some() || !self.sizes.is_empty() || !self.pattern.is_empty()
    }

    /// Validated fs-suite options (with the shared `--threads` and `--max-size`); `--dir` is
    /// checked here, before anything runs.
    pub fn to_options(&self, mem: &MemOpts) -> Result<FsOptions, String> {
        if let Some(d) = &self.dir {
            crate::bench::fs::workdir::check_dir(d)?;
        }
        let threads: Option<Vec<usize>> = if mem.threads.is_empty() {
            None
        } else {
            let all = crate::platform::allowed_cpus()
                .map(|c| c.len())
                .unwrap_or(1);
            Some(
                mem.threads
                    .iter()
                    .map(|t| match t {
                        Threads::N(n) => *n,
                        Threads::All => all,
                    })
                    .collect(),
            )
        };
        if let Some(t) = &threads
            && t.iter().any(|&n| n > 64)
        {
            return Err("--threads: the fs suite takes at most 64 threads".into());
        }
        Ok(FsOptions {
            dir: self.dir.clone(),
            sizes: (!self.sizes.is_empty()).then(|| self.sizes.clone()),
            patterns: self
                .pattern
                .iter()
                .map(|p| match p {
                    FsPattern::Seq => Pattern::Seq,
                    FsPattern::Random => Pattern::Random,
                })
                .collect(),
            threads,
            max_size: mem.max_size,
            quick: false,
        })
    }
}
