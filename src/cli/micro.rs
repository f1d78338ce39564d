//! `osgauge micro`'s suite options: each suite's option group, flattened into `micro`'s arguments
//! in this order, checked against the selection (an option of a suite not selected is a usage
//! error) and turned into that suite's options. A suite with `micro` options adds its group here
//! (its field in [`SuiteArgs`] and its line in [`SuiteArgs::suite_options`]); nothing else in the
//! command line names it.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::run_opts::RunOpts;
use super::{CliError, FsOpts, parse_max_size, serve, split_duration};
use crate::bench::mem::{MemOptions, Part, Threads};
use crate::bench::registry::SuiteOptions;

/// Every suite's `micro` options.
#[derive(Args, Debug, Clone, Default)]
pub struct SuiteArgs {
    #[command(flatten)]
    pub mem: MemOpts,
    // Boxed: the suite option groups would make every Command as large as this variant.
    #[command(flatten)]
    pub net: Box<serve::NetOpts>,
    #[command(flatten)]
    pub fs: Box<FsOpts>,
}

impl SuiteArgs {
    /// The suites' options for the selection `select`, each group checked against it (exit 2);
    /// the net suite's `--duration` is split into `opts`' run time.
    pub(super) fn suite_options(
        &self,
        select: &[String],
        opts: &mut RunOpts,
    ) -> Result<SuiteOptions, CliError> {
        let picks = |suite: &str| {
            select
                .iter()
                .any(|s| s == suite || s.starts_with(&format!("{suite}/")))
        };
        let (wants_mem, wants_fs) = (picks("mem"), picks("fs"));
        if self.net.is_set() && !picks("net") {
            return Err(CliError::Usage(
                "--peer, --token-file, --rate, --size and --duration apply to the net suite: select `net` or a net/… id"
                    .into(),
            ));
        }
        // --duration is a total, as in every command: split into the runs (micro's default 10).
        if let Some(d) = self.net.duration {
            let runs = opts.runs_plan(10)?.0;
            opts.run_time = Some(split_duration(
                d,
                runs,
                "per net benchmark",
                Duration::from_millis(1),
            )?);
        }
        let mem_only = !self.mem.only.is_empty();
        if (mem_only || (self.mem.is_set() && !wants_fs)) && !wants_mem {
            return Err(CliError::Usage(
                "--only applies to the mem suite, --max-size and --threads to the mem and fs suites: select `mem`/`fs` or one of their ids"
                    .into(),
            ));
        }
        if self.fs.is_set() && !wants_fs {
            return Err(CliError::Usage(
                "--dir, --sizes and --pattern apply to the fs suite: select `fs` or an fs/… id"
                    .into(),
            ));
        }
        Ok(SuiteOptions {
            mem: if wants_mem {
                self.mem.to_options().map_err(CliError::Usage)?
            } else {
                MemOptions::default()
            },
            net: self.net.to_options()?,
            fs: self.fs.to_options(&self.mem).map_err(CliError::Usage)?,
            ..Default::default()
        })
    }
}

/// Options of the mem suite (`osgauge micro mem …`).
#[derive(Args, Debug, Clone, Default)]
pub struct MemOpts {
    /// mem suite: only these parts, comma-separated (latency, bandwidth, page-faults)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PART")]
    pub only: Vec<MemPart>,
    /// mem and fs suites. mem: largest latency working set and largest bandwidth footprint (all arrays), e.g. 256MiB, 1GiB [default: max(512MiB, 4× last-level cache) for latency, 4× LLC per array for bandwidth; never over 25 % of available memory]. fs: bandwidth bytes per thread [64MiB] and the cache-size sweep's cap [256MiB]
    #[arg(long, value_parser = parse_max_size, value_name = "SIZE")]
    pub max_size: Option<u64>,
    /// mem and fs suites: bandwidth thread counts, comma-separated numbers and/or 'all' [default: mem 1, powers of two below the CPU count, all; fs 1,2,3]
    #[arg(long, value_delimiter = ',', value_parser = crate::bench::mem::parse_threads, value_name = "N|all")]
    pub threads: Vec<Threads>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemPart {
    Latency,
    Bandwidth,
    PageFaults,
}

impl MemOpts {
    pub(super) fn is_set(&self) -> bool {
        !self.only.is_empty() || self.max_size.is_some() || !self.threads.is_empty()
    }

    /// Validated mem-suite options.
    pub(super) fn to_options(&self) -> Result<MemOptions, String> {
        if !self.threads.is_empty() {
            crate::bench::mem::validate_threads(&self.threads)?;
        }
        Ok(MemOptions {
            only: self
                .only
                .iter()
                .map(|p| match p {
                    MemPart::Latency => Part::Latency,
                    MemPart::Bandwidth => Part::Bandwidth,
                    MemPart::PageFaults => Part::PageFaults,
                })
                .collect(),
            max_size: self.max_size,
            threads: (!self.threads.is_empty()).then(|| self.threads.clone()),
            quick: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command, dispatch};

    #[test]
    fn mem_options_parse_and_reject_bad_values() {
        let ok = Cli::try_parse_from([
            "osgauge",
            "micro",
            "mem",
            "--only",
            "latency,page-faults",
            "--max-size",
            "256MiB",
            "--threads",
            "1,all",
        ])
        .unwrap();
        let Command::Micro { suites, .. } = ok.command else {
            panic!("not micro")
        };
        let mem = suites.mem;
        assert_eq!(mem.only, vec![MemPart::Latency, MemPart::PageFaults]);
        assert_eq!(mem.max_size, Some(256 << 20));
        assert_eq!(mem.threads, vec![Threads::N(1), Threads::All]);
        let o = mem.to_options().unwrap();
        assert_eq!(o.only, vec![Part::Latency, Part::PageFaults]);
        for bad in [
            &["--only", "cache"][..],
            &["--max-size", "1KiB"],
            &["--max-size", "huge"],
            &["--threads", "0"],
            &["--threads", "two"],
        ] {
            let mut args = vec!["osgauge", "micro", "mem"];
            args.extend_from_slice(bad);
            let e = Cli::try_parse_from(args).unwrap_err();
            assert!(e.use_stderr(), "{bad:?} accepted");
        }
        // More threads than CPUs: rejected when validated (exit 2 in dispatch).
        let too_many = MemOpts {
            threads: vec![Threads::N(100_000)],
            ..Default::default()
        };
        assert!(too_many.to_options().is_err());
        // mem options without the mem suite are a usage error.
        let cli = Cli::try_parse_from(["osgauge", "micro", "cpu", "--threads", "1"]).unwrap();
        assert!(matches!(dispatch(cli), Err(CliError::Usage(_))));
    }

    /// The quick preset builds the suites that have a lighter configuration in it, and the rest
    /// as standard.
    #[test]
    fn the_quick_preset_lightens_the_suites_that_have_a_lighter_configuration() {
        let q = SuiteOptions::quick();
        assert!(q.mem.quick && q.net.quick && q.fs.quick);
        let d = SuiteOptions::default();
        assert!(!d.mem.quick && !d.net.quick && !d.fs.quick);
        assert_eq!(
            format!("{:?}", q.latency),
            format!("{:?}", crate::bench::latency::LatencyOptions::default())
        );
    }

    /// An option of a suite the selection does not pick is a usage error naming the suite.
    #[test]
    fn a_suite_option_without_its_suite_is_a_usage_error() {
        let check = |args: &[&str]| {
            let mut argv = vec!["osgauge", "micro"];
            argv.extend_from_slice(args);
            let Command::Micro {
                select,
                mut opts,
                suites,
            } = Cli::try_parse_from(argv).unwrap().command
            else {
                unreachable!()
            };
            suites.suite_options(&select, &mut opts)
        };
        for (args, says) in [
            (&["cpu", "--rate", "1Gbit"][..], "apply to the net suite"),
            (
                &["cpu", "--only", "latency"],
                "--only applies to the mem suite",
            ),
            (
                &["fs", "--only", "latency"],
                "--only applies to the mem suite",
            ),
            (&["cpu", "--pattern", "seq"], "apply to the fs suite"),
        ] {
            match check(args) {
                Err(CliError::Usage(e)) => assert!(e.contains(says), "{args:?}: {e}"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
        // --threads and --max-size belong to mem and fs both; --duration splits into the runs.
        assert!(check(&["fs/seq_read_t1", "--threads", "1"]).is_ok());
        let mut argv = vec![
            "osgauge",
            "micro",
            "net/tcp_connect",
            "--duration",
            "2s",
            "--runs",
            "4",
        ];
        let Command::Micro {
            select,
            mut opts,
            suites,
        } = Cli::try_parse_from(argv.drain(..)).unwrap().command
        else {
            unreachable!()
        };
        let o = suites.suite_options(&select, &mut opts).unwrap();
        assert_eq!(opts.run_time, Some(Duration::from_millis(500)));
        assert!(!o.net.quick);
    }
}
