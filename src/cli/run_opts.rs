//! The options every measuring command shares (`RunOpts`: runs, warm-up, run time, bound,
//! label, tags, exports, store, verbosity, adaptive runs, seed) and what they make of a plan.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{CliError, StoreOpts, parse_ci_width, parse_run_time, parse_timeout};
#[derive(Args, Debug, Clone)]
pub struct RunOpts {
    /// Independent runs per benchmark [default: 4 for quick, 10 otherwise]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// Warm-up runs per benchmark, discarded
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// Measuring time per run, 1ms..60m, e.g. 100ms, 1s [default: 50ms for quick, 300ms otherwise]
    #[arg(long, value_parser = parse_run_time)]
    pub run_time: Option<Duration>,
    /// Time bound per benchmark (all its runs), 100ms..24h (units ns, us, ms, s, m, h); reaching it stops the benchmark cleanly and records a timeout
    #[arg(long, value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// A name for this run (e.g. the OS or kernel), kept in the record: 1 to 64 characters, no
    /// control characters
    #[arg(long)]
    pub label: Option<String>,
    /// A tag kept in the record, KEY=VALUE (repeat for several), e.g. --tag kernel_rev=abc123
    /// --tag build=1042: `fleet` filters runs by it (--where) and orders them by it (--order-by)
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Write the full run record as JSON (schema osgauge.run/1); `-`: standard output (the tables then go to standard error)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write one CSV row per benchmark metric (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write the result tables as Markdown (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreOpts,
    /// No progress bar and no warnings section
    #[arg(short, long)]
    pub quiet: bool,
    /// Every warning in full (by default each is said once, in brief; the record keeps them all)
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Adaptive runs: keep running each benchmark until the 95 % CI of its headline figure (its
    /// first metric) is within ± this share of the median, e.g. 5%; --runs is then the minimum
    /// (default and lowest: 4, the fewest that can reach significance), --max-runs the cap
    #[arg(long, value_parser = parse_ci_width, value_name = "PCT")]
    pub ci_width: Option<f64>,
    /// With --ci-width: the most runs per benchmark, 4..1000 [default: 30]
    #[arg(long, requires = "ci_width", value_parser = clap::value_parser!(u32).range(4..=1000))]
    pub max_runs: Option<u32>,
    /// Exit with code 5 when a benchmark failed or timed out, or nothing at all was measured
    /// (a benchmark this OS does not support is not a failure)
    #[arg(long)]
    pub fail_on_error: bool,
    /// Seed of the run order: runs are taken in rounds, each a fresh random order of the
    /// benchmarks and the drift reference [default: a new seed, recorded in the run]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

impl RunOpts {
    /// The plan of a measuring command: `benchmarks` with the drift reference added (it runs in
    /// every round), the order's schedule (the seed asked for or a fresh one), this run's label
    /// and tags, and the record's configuration.
    pub(super) fn plan(
        &self,
        mut benchmarks: Vec<Box<dyn crate::bench::Benchmark>>,
        preset: &str,
        selection: Vec<String>,
        (runs, run_time, timeout): (u32, Duration, Duration),
        adaptive: Option<crate::record::AdaptiveConfig>,
    ) -> Result<crate::runner::Plan, CliError> {
        benchmarks.push(Box::new(crate::bench::reference::Reference::new()));
        let schedule = crate::record::Schedule {
            order: "interleaved".into(),
            seed: self.seed.unwrap_or_else(crate::runner::new_seed),
            rounds: Vec::new(),
            reference: Some(crate::bench::reference::ID.to_string()),
        };
        Ok(crate::runner::Plan {
            benchmarks,
            label: self.label.clone(),
            tags: self.tags()?,
            config: crate::record::Config {
                preset: preset.into(),
                selection,
                runs,
                warmup_runs: self.warmup,
                run_time_ms: run_time.as_millis() as u64,
                timeout_ms: (timeout.as_millis() as u64).max(1),
                bootstrap_seed: crate::stats::BOOTSTRAP_SEED,
                command_line: crate::store::redact_args(std::env::args()),
                adaptive,
                schedule: Some(schedule),
                ab: None,
            },
        })
    }
}

/// Default cap of adaptive runs (`--max-runs`).
pub const DEFAULT_MAX_RUNS: u32 = 30;

impl RunOpts {
    /// The runs to plan and the adaptive rule: with `--ci-width`, `runs` is the minimum (at
    /// least [`crate::runner::MIN_SIGNIFICANT_RUNS`]) and `--max-runs` the cap. Returns (runs,
    /// most runs a benchmark may take, adaptive config).
    pub fn runs_plan(
        &self,
        default_runs: u32,
    ) -> Result<(u32, u32, Option<crate::record::AdaptiveConfig>), CliError> {
        let Some(width) = self.ci_width else {
            let runs = self.runs.unwrap_or(default_runs);
            return Ok((runs, runs, None));
        };
        // Adaptive: --runs is the minimum; without it, the fewest runs that can reach significance.
        let min = self
            .runs
            .unwrap_or(0)
            .max(crate::runner::MIN_SIGNIFICANT_RUNS);
        let max = self.max_runs.unwrap_or(DEFAULT_MAX_RUNS.max(min));
        if max < min {
            return Err(CliError::Usage(format!(
                "--max-runs {max} is below the minimum of {min} runs (--runs, at least {})",
                crate::runner::MIN_SIGNIFICANT_RUNS
            )));
        }
        Ok((
            min,
            max,
            Some(crate::record::AdaptiveConfig {
                ci_width: width,
                max_runs: max,
            }),
        ))
    }

    /// The `--tag`s, checked (exit 2 for a malformed one).
    pub(super) fn tags(&self) -> Result<std::collections::BTreeMap<String, String>, CliError> {
        crate::fleet::parse_tags(&self.tags).map_err(|e| CliError::Usage(format!("--tag: {e}")))
    }
}
