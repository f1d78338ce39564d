//! Command line: argument definitions (clap derive), validation into a plan, and dispatch.
//! Usage errors print one line on stderr and exit with code 2; nothing is half-written.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::bench::Benchmark;
use crate::bench::mem::{MemOptions, Part, Threads};
use crate::bench::registry::{SuiteOptions, suites, suites_with};
use crate::export::{Format, check_writable, write_atomic};
use crate::model::{Config, RunRecord};
use crate::output::progress::Progress;
use crate::runner::{Event, Plan};
use crate::units::parse_duration;

mod ab;
mod appmodel;
mod fleet;
mod fs;
mod interactivity;
mod latency;
mod parse;
pub mod policy;
mod results;
mod select;
mod serve;
mod sink;
pub use fs::FsOpts;
pub use interactivity::*;
pub use parse::*;
pub use results::{CompareArgs, ReportArgs, ResultsCmd, StoreOpts, parse_percent};

/// Exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_WARN: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_INTERRUPTED: i32 = 130;
/// `compare --fail-on-regression`: a metric is significantly worse than the baseline.
pub const EXIT_REGRESSION: i32 = 3;
/// `system check`: no warning, but some checks could not be made on this OS.
pub const EXIT_INCOMPLETE: i32 = 4;
/// `--fail-on-error`: a benchmark failed or timed out, or nothing was measured.
pub const EXIT_BENCH_FAILED: i32 = 5;

#[derive(Parser, Debug)]
#[command(
    name = "osgauge",
    version,
    about = "Measure how well an operating system serves interactive and real-time work, and how fast its basic services are",
    after_help = "Examples:\n  osgauge run                                   quick preset: every suite, a summary table\n  osgauge run --preset standard --label linux-6.12\n  osgauge micro cpu proc --runs 10 --export-json r.json\n  osgauge list --long                           what each benchmark measures and how\n  osgauge system check                          is this machine quiet enough to measure?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a preset: every suite that exists, with the preset's run count and measuring time
    #[command(
        after_help = "Examples:\n  osgauge run\n  osgauge run --preset standard --label my-laptop --export-json run.json\n  osgauge run --runs 3 --quiet --export-markdown run.md\n  osgauge run --suite net,fs --fail-on-error          two suites; exit 5 if a benchmark failed\n  osgauge run --ci-width 5% --max-runs 20             run on until each CI is within ±5 %\n\nOpens with a summary (headline figures with their CI, verdicts), then the full tables."
    )]
    Run {
        /// quick: 5 runs × 100 ms per benchmark (1 min 40 s on a quiet 2-core VM); standard: 10 runs
        /// × 300 ms (about 6 minutes there, up to 12 when the file CPU-cost windows extend). Each
        /// run prints its own estimate first
        #[arg(long, value_enum, default_value_t = Preset::Quick)]
        preset: Preset,
        /// Only these suites, comma-separated, e.g. net,fs [default: every suite]
        #[arg(long, value_delimiter = ',', value_name = "SUITE")]
        suite: Vec<String>,
        #[command(flatten)]
        opts: RunOpts,
    },
    /// Run micro-benchmarks: whole suites (cpu, proc, mem, net, fs) and/or single benchmark ids (cpu/null_syscall)
    #[command(
        after_help = "Examples:\n  osgauge micro cpu\n  osgauge micro cpu proc --runs 10 --export-json r.json --export-csv r.csv --export-markdown r.md\n  osgauge micro cpu/null_syscall proc/ctx_switch_process_pinned --run-time 500ms\n  osgauge micro mem                                   latency curves, bandwidth, page faults\n  osgauge micro mem --only latency --max-size 256MiB --export-csv curve.csv\n  osgauge micro mem --only bandwidth --threads 1,2,all\n  osgauge micro net                                   network over loopback (in-process peer)\n  osgauge micro net --peer host:7700 --token-file t\n  osgauge micro net/udp_stream --rate 1Gbit --size 8KiB --duration 10s\n  osgauge micro fs --dir /mnt/data                    file system: latency, cache, contention, bandwidth\n  osgauge micro fs/read_latency --sizes 32KiB,256KiB,64MiB --pattern seq,random\n  osgauge micro fs/seq_write_t1 fs/seq_read_t1 --max-size 4GiB\n  osgauge micro fs/cache_size --max-size 8GiB          longer: an explicit opt-in beyond the default\n\nSee `osgauge list` for every id."
    )]
    Micro {
        /// Suite names or benchmark ids
        #[arg(required = true, value_name = "SUITE|ID")]
        select: Vec<String>,
        #[command(flatten)]
        opts: RunOpts,
        #[command(flatten)]
        mem: MemOpts,
        // Boxed: the suite option groups would make every Command as large as this variant.
        #[command(flatten)]
        net: Box<serve::NetOpts>,
        #[command(flatten)]
        fs: Box<FsOpts>,
    },
    /// A/B on one machine: two settings switched by commands, alternated round by round in
    /// random order, judged on paired differences (the machine's drift cancels)
    #[command(
        after_help = "Examples:\n  osgauge ab --a 'sysctl -w net.core.rmem_max=212992 net.ipv4.tcp_rmem=\"4096 131072 6291456\"' \\\n             --b 'sysctl -w net.core.rmem_max=65536 net.ipv4.tcp_rmem=\"4096 65536 65536\"' \\\n             --read 'sysctl -n net.ipv4.tcp_rmem' net/tcp_stream --runs 10\n  osgauge ab --a 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' \\\n             --b 'echo always > /sys/kernel/mm/transparent_hugepage/enabled' \\\n             --read 'cat /sys/kernel/mm/transparent_hugepage/enabled' mem/bandwidth_1t\n\nEach round runs A and B in random order; before each, its command switches the machine\n(sh -c; cmd /C on Windows) and --read records the state read back. The machine is returned by\n--restore (default: the --a command) on every way out. A failed switch stops the run and\nnothing is stored. The two arms are stored as LABEL:A and LABEL:B (default label 'ab');\n`osgauge compare ab:A ab:B` pairs them again."
    )]
    Ab(Box<ab::AbArgs>),
    /// Repeat a measuring command as separate invocations under one label, so that `compare`
    /// learns this machine's noise between invocations
    #[command(
        after_help = "Examples:\n  osgauge calibrate                                  3 × `osgauge run` under the label 'calibration'\n  osgauge calibrate --invocations 5 micro cpu proc --runs 10\n  osgauge calibrate --pause 2m run --preset standard\n\nA comparison of two single invocations gives verdicts only where this machine's\nbetween-invocation noise is known: from a label stored several times (this command, or your\nown repeated runs), per benchmark and metric, on the same host, CPU, OS and kernel."
    )]
    Calibrate(ab::CalibrateArgs),
    /// The network suite's peer: serve round-trip, bandwidth, connection and UDP tests to osgauge clients
    #[command(
        after_help = "Examples:\n  osgauge serve                                       a peer on 127.0.0.1:7700 (no token)\n  osgauge serve --listen 0.0.0.0:7700 --token-file t   reachable from other machines, token required\n  osgauge micro net --peer host:7700 --token-file t   (on the client) the net suite against it\n  osgauge serve --new-token t                         write a new random token to t (mode 0600)\n\nThe token never crosses the wire: the client answers a random nonce with HMAC-SHA256. Someone\nwho records one exchange can still test guesses offline, so the token must be random: at least\n128 bits of randomness (32 random hex digits; --new-token writes 256 bits as 64 hex digits). 16\nbytes is the least accepted, and a word or phrase typed by a person is far weaker than that.\n\nGuessing online is slowed: each failed authentication from an address doubles the wait before\nits next try (0.1 s, up to 10 s). Connections still authenticating are bounded per address (16;\nan IPv6 /64 counts as one address) and in total (256, of which 64 are kept for addresses that\nauthenticated before). One log line per authenticated session; refusals and failed handshakes\nat most one line per address every 10 s, with how many were left out. Ctrl-C stops."
    )]
    Serve(serve::ServeArgs),
    /// List every benchmark: id, what it measures, unit, and whether higher or lower is better
    #[command(
        after_help = "Examples:\n  osgauge list\n  osgauge list --long     also print each benchmark's method\n  osgauge list --json"
    )]
    List {
        /// Also print how each benchmark measures (method, what is subtracted)
        #[arg(long)]
        long: bool,
        /// Machine-readable output
        #[arg(long, conflicts_with = "long")]
        json: bool,
    },
    /// The machine and environment record, and hygiene advice
    #[command(subcommand)]
    System(SystemCmd),
    /// Interactivity: an emulated interactive task (audio, video, x, gaming, custom) under a
    /// background load; scheduling latency, deadlines met, CPU received (Interbench's successor)
    #[command(
        after_help = "Examples:\n  osgauge interactivity                                   the full task × load matrix\n  osgauge interactivity --task audio,video --load none,burn,compile --duration 10s --runs 5\n  osgauge interactivity --task video --video-hz 144 --policy fifo --priority 50 --cpus 0\n  osgauge interactivity --task custom --custom-cpu 20 --custom-interval 10ms --load burn\n  osgauge interactivity --format interbench               Interbench-style table\n\nHere --runs defaults to 3 per cell; --duration is the measuring time of one cell, split into its runs (as for latency and noise; 10s over 5 runs: 2s each), --run-time one run's; warm-up runs last at most 300 ms. Without --load every load runs: the plan (cells, time) is printed before the first.\nLatency is per period (actual − intended start, ns); dropped frames are counted apart. Method: `osgauge list --long`."
    )]
    Interactivity(Box<InteractivityArgs>),
    /// Timer wake-up latency per CPU (cyclictest's measurement): pinned threads, absolute-time
    /// periodic sleeps, policy and timer slack read back
    #[command(after_help = latency::LATENCY_HELP)]
    Latency(Box<latency::LatencyArgs>),
    /// OS noise per CPU (osnoise's measurement): a pinned busy loop per CPU, every gap above a
    /// threshold is time the OS took
    #[command(after_help = latency::NOISE_HELP)]
    Noise(Box<latency::NoiseArgs>),
    /// Internal: body of a load child process
    #[command(name = "__load", hide = true)]
    Load { spec: String },
    /// Scheduling-policy study: cpu, io, mixed, sleepy work × policies × process counts; wall,
    /// user, system time, context switches, turnaround, fairness
    #[command(after_help = policy::AFTER_HELP)]
    Policy(Box<policy::PolicyArgs>),
    /// Internal: body of a policy-study child process
    #[command(name = "__policy_child", hide = true)]
    PolicyChild { spec: String },
    /// Print a shell completion script
    #[command(
        after_help = "Examples:\n  osgauge completions bash > ~/.local/share/bash-completion/completions/osgauge\n  osgauge completions zsh > ~/.zfunc/_osgauge\n  osgauge completions fish > ~/.config/fish/completions/osgauge.fish"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The result store: list, show, export, import and delete runs
    #[command(subcommand)]
    Results(ResultsCmd),
    /// Compare 2..N runs (stored runs by label, id or id prefix, or JSON files); the first is the baseline
    #[command(
        after_help = "Examples:\n  osgauge compare linux-6.18 win11 macos-15\n  osgauge compare base.json new.json --fail-on-regression 5%\n  osgauge compare a b --export-markdown cmp.md --export-csv cmp.csv --export-json cmp.json\n\nMethod: ratio of medians of per-run medians with a 95 % bootstrap CI (the difference, in the\nmetric's unit, where a value is zero or negative); two-sided Mann-Whitney U over per-run values\n(exact up to 40 runs), Benjamini-Hochberg adjusted; better/worse only when q < 0.05 and the CI lies\noutside the noise band, else ~; neutral metrics are never judged. From a baseline of 0 any\nsignificant worse change is a regression. Settings that differ are listed; their cells marked (s).\n\nExit codes: 0 ok; 3 a regression (--fail-on-regression); 2 usage error; 1 other error."
    )]
    Compare(CompareArgs),
    /// Write a self-contained HTML report (system table, comparison, charts) of 1..N runs
    #[command(
        after_help = "Examples:\n  osgauge report linux-6.18 --export-html linux.html\n  osgauge report linux-6.18 win11 macos-15 --export-html report.html"
    )]
    Report(ReportArgs),
    /// The same benchmarks across machines side by side (one table per suite, a column per
    /// machine, the best marked); `fleet history` shows one metric over time with change points
    #[command(after_help = fleet::AFTER_HELP)]
    Fleet(fleet::FleetArgs),
    /// Application model: predict an application's capacity, bottleneck and QoS on stored runs
    /// (or published figures) from a TOML profile; `model validate <PROFILE>` runs a synthetic
    /// application and compares
    #[command(after_help = appmodel::AFTER_HELP)]
    Model(Box<appmodel::ModelArgs>),
    /// Internal: the echo peer of proc/ctx_switch_process_* where the peer is a started program
    /// (Windows). Copies stdin to stdout byte by byte until end of input. Hidden from --help.
    #[command(name = "__echo", hide = true)]
    Echo,
}

#[derive(Subcommand, Debug)]
pub enum SystemCmd {
    /// Print the machine and environment record osgauge stores with every run
    #[command(
        after_help = "Examples:\n  osgauge system show\n  osgauge system show --json > machine.json"
    )]
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Check whether the machine is ready for quiet measurements; exit 0 when ready, 1 with warnings.
    /// Prints what to fix; never changes the system.
    #[command(after_help = "Examples:\n  osgauge system check && osgauge run")]
    Check,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    Quick,
    Standard,
}

#[derive(Args, Debug, Clone)]
pub struct RunOpts {
    /// Independent runs per benchmark [default: 5 for quick, 10 otherwise]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// Warm-up runs per benchmark, discarded
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// Measuring time per run, 1ms..60m, e.g. 100ms, 1s [default: 100ms for quick, 300ms otherwise]
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
    /// The benchmarks with the drift reference added (it runs in every round), and the order's
    /// schedule: the seed asked for or a fresh one.
    pub fn interleave(
        &self,
        mut benchmarks: Vec<Box<dyn crate::bench::Benchmark>>,
    ) -> (
        Vec<Box<dyn crate::bench::Benchmark>>,
        crate::model::Schedule,
    ) {
        benchmarks.push(Box::new(crate::bench::reference::Reference::new()));
        let schedule = crate::model::Schedule {
            order: "interleaved".into(),
            seed: self.seed.unwrap_or_else(crate::runner::new_seed),
            rounds: Vec::new(),
            reference: Some(crate::bench::reference::ID.to_string()),
        };
        (benchmarks, schedule)
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
    fn is_set(&self) -> bool {
        !self.only.is_empty() || self.max_size.is_some() || !self.threads.is_empty()
    }

    /// Validated mem-suite options.
    fn to_options(&self) -> Result<MemOptions, String> {
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

/// Default cap of adaptive runs (`--max-runs`).
pub const DEFAULT_MAX_RUNS: u32 = 30;

impl RunOpts {
    /// The runs to plan and the adaptive rule: with `--ci-width`, `runs` is the minimum (at
    /// least [`crate::runner::MIN_SIGNIFICANT_RUNS`]) and `--max-runs` the cap. Returns (runs,
    /// most runs a benchmark may take, adaptive config).
    pub fn runs_plan(
        &self,
        default_runs: u32,
    ) -> Result<(u32, u32, Option<crate::model::AdaptiveConfig>), CliError> {
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
            Some(crate::model::AdaptiveConfig {
                ci_width: width,
                max_runs: max,
            }),
        ))
    }

    /// The `--tag`s, checked (exit 2 for a malformed one).
    fn tags(&self) -> Result<std::collections::BTreeMap<String, String>, CliError> {
        crate::fleet::parse_tags(&self.tags).map_err(|e| CliError::Usage(format!("--tag: {e}")))
    }

    /// Before running: the label is valid, every output can be written, and no two name the
    /// same file (exit 2). The label is checked here, not by clap, whose message would echo it raw.
    fn check_outputs(&self) -> Result<(), CliError> {
        self.check_outputs_with(&[])
    }

    /// [`Self::check_outputs`] with a command's own outputs (option name, path) besides the
    /// common ones.
    fn check_outputs_with(&self, extra: &[(&str, &Path)]) -> Result<(), CliError> {
        if let Some(l) = &self.label {
            crate::output::parse_label(l).map_err(|e| CliError::Usage(format!("--label: {e}")))?;
        }
        self.tags()?;
        let mut all: Vec<(&str, &Path)> = Vec::new();
        for (format, path) in self.exports() {
            check_writable(path).map_err(|e| CliError::Usage(format!("{}: {e}", format.flag())))?;
            all.push((format.flag(), path));
        }
        if let Some(p) = &self.store.export_html {
            all.push(("--export-html", p));
        }
        for &(flag, path) in extra {
            check_writable(path).map_err(|e| CliError::Usage(format!("{flag}: {e}")))?;
            all.push((flag, path));
        }
        // An export over the result store would destroy it.
        let store = match (&self.store.store, self.store.no_store) {
            (_, true) => None,
            (Some(p), false) => Some(p.clone()),
            (None, false) => crate::store::default_path().ok(),
        };
        crate::export::claim_stdout(all.iter().map(|(_, p)| *p));
        if let Some(p) = &store {
            all.push(("the result store", p));
        }
        crate::export::check_distinct(&all).map_err(CliError::Usage)
    }

    fn exports(&self) -> Vec<(Format, &Path)> {
        [
            (Format::Json, &self.export_json),
            (Format::Csv, &self.export_csv),
            (Format::Markdown, &self.export_markdown),
        ]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect()
    }
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    // What killed osgauge processes left in the temp dir (any command removes it; not the
    // helper children osgauge starts itself, by the hundred for a policy study).
    if !matches!(
        cli.command,
        Command::Load { .. } | Command::PolicyChild { .. } | Command::Echo
    ) {
        crate::bench::registry::remove_leftovers();
    }
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(CliError::Usage(msg)) => {
            crate::errln!("osgauge: error: {msg}");
            EXIT_USAGE
        }
        Err(CliError::Other(e)) => {
            crate::errln!("osgauge: error: {e:#}");
            EXIT_WARN
        }
    };
    // A reader that went away (`| head`) is no error; any other failure to print is
    // (see `output::stdout`).
    match crate::output::stdout::error() {
        Some(e) => {
            crate::errln!("osgauge: error: writing to standard output: {e}");
            if code == EXIT_OK { EXIT_WARN } else { code }
        }
        None => code,
    }
}

#[derive(Debug)]
pub enum CliError {
    /// Bad input: exit 2.
    Usage(String),
    /// Something failed while working: exit 1.
    Other(anyhow::Error),
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::Other(e)
    }
}

fn dispatch(cli: Cli) -> Result<i32, CliError> {
    match cli.command {
        Command::Run {
            preset,
            suite,
            opts,
        } => run_preset(preset, &suite, opts),
        Command::Micro {
            select,
            opts,
            mem,
            net,
            fs,
        } => run_micro(select, opts, &mem, &net, &fs),
        Command::Echo => match crate::platform::serve_echo() {
            Ok(()) => Ok(EXIT_OK),
            Err(e) => Err(CliError::Other(anyhow::Error::new(e).context("echo"))),
        },
        Command::List { long, json } => {
            crate::out!("{}", list_text(long, json));
            Ok(EXIT_OK)
        }
        Command::System(SystemCmd::Show { json }) => system_show(json),
        Command::System(SystemCmd::Check) => system_check(),
        Command::Interactivity(args) => run_interactivity(*args),
        Command::Load { spec } => Ok(crate::workload::load::child_main(&spec)),
        Command::Policy(args) => policy::run_policy(*args),
        Command::Latency(args) => latency::run_latency(*args),
        Command::Noise(args) => latency::run_noise(*args),
        Command::PolicyChild { spec } => Ok(crate::bench::policy::child::child_main(&spec)),
        Command::Completions { shell } => {
            let mut cmd = completion_command();
            clap_complete::generate(
                shell,
                &mut cmd,
                "osgauge",
                &mut crate::output::stdout::Stdout,
            );
            Ok(EXIT_OK)
        }
        Command::Results(cmd) => results::dispatch_results(cmd),
        Command::Compare(args) => results::dispatch_compare(args),
        Command::Ab(args) => ab::run_ab(*args),
        Command::Calibrate(args) => ab::run_calibrate(args),
        Command::Report(args) => results::dispatch_report(args),
        Command::Fleet(args) => fleet::dispatch(args),
        Command::Serve(args) => serve::run_serve(args),
        Command::Model(args) => appmodel::dispatch(*args),
    }
}

/// `osgauge run`: the preset's suites (their lighter configuration at the quick preset).
fn run_preset(preset: Preset, suite: &[String], opts: RunOpts) -> Result<i32, CliError> {
    let all = pick_suites(suite).map_err(CliError::Usage)?;
    // The quick preset builds suites in their lighter configuration.
    let suite_opts = SuiteOptions {
        mem: match preset {
            Preset::Quick => MemOptions::quick(),
            Preset::Standard => MemOptions::default(),
        },
        net: match preset {
            Preset::Quick => crate::bench::net::NetOptions::quick(),
            Preset::Standard => crate::bench::net::NetOptions::default(),
        },
        fs: match preset {
            Preset::Quick => crate::bench::fs::FsOptions::quick(),
            Preset::Standard => Default::default(),
        },
        latency: Default::default(),
    };
    run_plan(preset_name(preset), preset, all, opts, &suite_opts)
}

/// `osgauge micro`: the selected suites and ids, each suite's options checked against the
/// selection.
fn run_micro(
    select: Vec<String>,
    mut opts: RunOpts,
    mem: &MemOpts,
    net: &serve::NetOpts,
    fs: &FsOpts,
) -> Result<i32, CliError> {
    let picks = |suite: &str| {
        select
            .iter()
            .any(|s| s == suite || s.starts_with(&format!("{suite}/")))
    };
    let (wants_mem, wants_fs) = (picks("mem"), picks("fs"));
    if net.is_set() && !picks("net") {
        return Err(CliError::Usage(
            "--peer, --token-file, --rate, --size and --duration apply to the net suite: select `net` or a net/… id"
                .into(),
        ));
    }
    // --duration is a total, as in every command: split into the runs (micro's default 10).
    if let Some(d) = net.duration {
        let runs = opts.runs_plan(10)?.0;
        opts.run_time = Some(split_duration(
            d,
            runs,
            "per net benchmark",
            Duration::from_millis(1),
        )?);
    }
    let mem_only = !mem.only.is_empty();
    if (mem_only || (mem.is_set() && !wants_fs)) && !wants_mem {
        return Err(CliError::Usage(
            "--only applies to the mem suite, --max-size and --threads to the mem and fs suites: select `mem`/`fs` or one of their ids"
                .into(),
        ));
    }
    if fs.is_set() && !wants_fs {
        return Err(CliError::Usage(
            "--dir, --sizes and --pattern apply to the fs suite: select `fs` or an fs/… id".into(),
        ));
    }
    let suite_opts = SuiteOptions {
        mem: if wants_mem {
            mem.to_options().map_err(CliError::Usage)?
        } else {
            MemOptions::default()
        },
        net: net.to_options()?,
        fs: fs.to_options(mem).map_err(CliError::Usage)?,
        latency: Default::default(),
    };
    run_plan("custom", Preset::Standard, select, opts, &suite_opts)
}

/// `osgauge system show`: the machine and its environment, as text or JSON.
fn system_show(json: bool) -> Result<i32, CliError> {
    let m = crate::platform::sysinfo::machine();
    let e = crate::platform::sysinfo::environment();
    if json {
        let v = serde_json::json!({ "machine": m, "environment": e });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(anyhow::Error::from)?
        );
    } else {
        crate::out!("{}", crate::system::render_text(&m, &e));
    }
    Ok(EXIT_OK)
}

/// `osgauge system check`: the hygiene rules and a brief idle wake-up measurement; the exit code
/// says ready, warnings, or incomplete.
fn system_check() -> Result<i32, CliError> {
    let m = crate::platform::sysinfo::machine();
    let e = crate::platform::sysinfo::environment();
    let mut findings = crate::system::check(&m, &e);
    // The idle-exit cost, measured briefly (it dominates latency-sensitive figures).
    let quick = std::time::Duration::from_millis(400);
    let idle_wakeup = crate::bench::latency::idle_wakeup::quick_measure(quick);
    if let Ok((idle, busy, exit)) = idle_wakeup {
        findings.push(crate::bench::latency::idle_wakeup::finding(
            idle, busy, exit, quick,
        ));
    }
    let warnings = findings
        .iter()
        .filter(|f| f.level == crate::system::Level::Warning)
        .count();
    for f in &findings {
        let tag = match f.level {
            crate::system::Level::Warning => "WARNING",
            crate::system::Level::Info => "info",
        };
        crate::outln!("[{tag}] {}: {}", f.topic, f.message);
        if let Some(fix) = &f.fix {
            crate::outln!("          fix: {fix}");
        }
    }
    let mut unchecked = crate::system::unchecked(&e);
    if let Err(why) = idle_wakeup {
        unchecked.push(("idle_wakeup".into(), why));
    }
    for (topic, why) in &unchecked {
        crate::outln!("[not checked] {topic}: {why}");
    }
    if warnings == 0 && !unchecked.is_empty() {
        crate::outln!(
            "Checks incomplete on {}: {} check(s) could not be made; nothing else found.",
            m.os,
            unchecked.len()
        );
        Ok(EXIT_INCOMPLETE)
    } else if warnings == 0 {
        crate::outln!("Ready: nothing that osgauge knows to disturb measurements.");
        Ok(EXIT_OK)
    } else {
        crate::outln!(
            "{warnings} warning(s): results on this machine may be noisy (osgauge changes nothing itself)."
        );
        Ok(EXIT_WARN)
    }
}

/// `run --suite a,b`: the named suites in the order `run` executes them, each once; every suite
/// when none is named.
pub fn pick_suites(wanted: &[String]) -> Result<Vec<String>, String> {
    let names: Vec<&'static str> = suites().iter().map(|s| s.name).collect();
    if let Some(bad) = wanted.iter().find(|w| !names.contains(&w.as_str())) {
        return Err(format!(
            "--suite: unknown suite '{}' (suites: {})",
            crate::output::display_text(bad, 64),
            names.join(", ")
        ));
    }
    Ok(names
        .into_iter()
        .filter(|n| wanted.is_empty() || wanted.iter().any(|w| w == n))
        .map(str::to_string)
        .collect())
}

/// Every suite name and benchmark id, for shell completion.
pub fn completion_values() -> Vec<String> {
    let all = suites();
    all.iter()
        .map(|s| s.name.to_string())
        .chain(
            all.iter()
                .flat_map(|s| s.benchmarks.iter().map(|b| b.info().id.clone())),
        )
        .collect()
}

/// The command line as the completion scripts see it: `micro`'s selection completes suite names
/// and benchmark ids, `run --suite` suite names. (Only for the scripts: parsing keeps its own
/// checks and messages.)
pub fn completion_command() -> clap::Command {
    use clap::builder::PossibleValuesParser;
    let ids = completion_values();
    let suite_names: Vec<String> = suites().iter().map(|s| s.name.to_string()).collect();
    Cli::command()
        .mut_subcommand("micro", |c| {
            c.mut_arg("select", |a| a.value_parser(PossibleValuesParser::new(ids)))
        })
        .mut_subcommand("run", |c| {
            c.mut_arg("suite", |a| {
                a.value_parser(PossibleValuesParser::new(suite_names))
            })
        })
}

fn preset_name(p: Preset) -> &'static str {
    match p {
        Preset::Quick => "quick",
        Preset::Standard => "standard",
    }
}

/// Resolve suite names and benchmark ids into benchmarks, in suite order, without duplicates.
pub fn select(names: &[String]) -> Result<Vec<Box<dyn Benchmark>>, String> {
    select_with(names, &SuiteOptions::default())
}

/// [`select`] from suites built with `opts`.
pub fn select_with(
    names: &[String],
    opts: &SuiteOptions,
) -> Result<Vec<Box<dyn Benchmark>>, String> {
    let mut wanted_suites = Vec::new();
    let mut wanted_ids = Vec::new();
    let all = suites_with(opts);
    for n in names {
        if all.iter().any(|s| s.name == n) {
            wanted_suites.push(n.as_str());
        } else if all
            .iter()
            .any(|s| s.benchmarks.iter().any(|b| b.info().id == *n))
        {
            wanted_ids.push(n.as_str());
        } else {
            let known: Vec<_> = all.iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown suite or benchmark '{n}' (suites: {}; `osgauge list` shows every id)",
                known.join(", ")
            ));
        }
    }
    let mut out = Vec::new();
    for s in all {
        let whole = wanted_suites.contains(&s.name);
        for b in s.benchmarks {
            if whole || wanted_ids.contains(&b.info().id.as_str()) {
                out.push(b);
            }
        }
    }
    Ok(out)
}

fn run_plan(
    preset: &str,
    defaults: Preset,
    selection: Vec<String>,
    opts: RunOpts,
    suite_opts: &SuiteOptions,
) -> Result<i32, CliError> {
    run_plan_then(preset, defaults, selection, opts, suite_opts, |_| Ok(()))
}

/// [`run_plan`], then `after(record)` once the results are printed (a command's own exports).
fn run_plan_then(
    preset: &str,
    defaults: Preset,
    selection: Vec<String>,
    opts: RunOpts,
    suite_opts: &SuiteOptions,
    after: impl FnOnce(&RunRecord) -> Result<(), CliError>,
) -> Result<i32, CliError> {
    let benchmarks = select_with(&selection, suite_opts).map_err(CliError::Usage)?;
    opts.check_outputs()?;
    let (runs, run_time) = match defaults {
        Preset::Quick => (5, Duration::from_millis(100)),
        Preset::Standard => (10, Duration::from_millis(300)),
    };
    let (runs, most_runs, adaptive) = opts.runs_plan(runs)?;
    let run_time = opts.run_time.unwrap_or(run_time);
    // Default bound: ten times the planned measuring time (of the most runs a benchmark may
    // take), at least 20 s and three times the longest benchmark's own estimate (mem/bandwidth
    // faults in 4× the last-level cache each run: 17 s on a quiet 2-CPU VM with a 480 MiB L3,
    // over the old 32 s bound on a busy one), plus room for the CPU-cost windows a benchmark may
    // extend (two per run, `cpucost::max_extension` each).
    let planned = run_time.as_secs_f64() * f64::from(most_runs + opts.warmup);
    let extension = crate::cpucost::max_extension(run_time).as_secs_f64()
        * 2.0
        * f64::from(most_runs + opts.warmup);
    let at_most_runs = crate::bench::Estimate {
        runs: most_runs,
        warmup: opts.warmup,
        run_time,
    };
    let longest = benchmarks
        .iter()
        .map(|b| b.estimate_s(&at_most_runs))
        .fold(0.0, f64::max);
    let timeout = opts.timeout.unwrap_or(Duration::from_secs_f64(
        default_bound_s(planned, longest) + extension,
    ));
    let (benchmarks, schedule) = opts.interleave(benchmarks);
    let plan = Plan {
        benchmarks,
        label: opts.label.clone(),
        tags: opts.tags()?,
        config: Config {
            preset: preset.to_string(),
            selection,
            runs,
            warmup_runs: opts.warmup,
            run_time_ms: run_time.as_millis() as u64,
            timeout_ms: (timeout.as_millis() as u64).max(1),
            bootstrap_seed: crate::stats::BOOTSTRAP_SEED,
            command_line: crate::store::redact_args(std::env::args()),
            adaptive: adaptive.clone(),
            schedule: Some(schedule),
            ab: None,
        },
    };
    let preface = format!(
        "{} benchmark(s) and the drift reference, in rounds of random order, {}",
        plan.benchmarks.len() - 1,
        runs_text(&plan)
    );
    let mut after_result = Ok(());
    let code = execute_and_keep(plan, &opts, &preface, |record| {
        print_record(record, opts.quiet, opts.verbose);
        after_result = after(record);
    })?;
    after_result?;
    Ok(code)
}

/// A benchmark's default time bound before CPU-cost extensions, s: ten times its planned
/// measuring time, at least 20 s, and at least three times the longest benchmark's own estimate
/// (`longest_s`: an estimate assumes a quiet machine; a busy one takes up to about twice as long).
pub fn default_bound_s(planned_s: f64, longest_s: f64) -> f64 {
    (planned_s * 10.0).max(20.0).max(3.0 * longest_s)
}

/// "5 run(s) each" or, adaptive, "4–30 run(s) each until the 95 % CI is within ±5 %".
fn runs_text(plan: &Plan) -> String {
    match &plan.config.adaptive {
        None => format!("{} run(s) each", plan.config.runs),
        Some(a) => format!(
            "{}–{} run(s) each until the 95 % CI is within ±{} %",
            plan.config.runs,
            a.max_runs,
            a.ci_width * 100.0
        ),
    }
}

/// Run a plan with a progress bar and Ctrl-C handling, storing each benchmark as it finishes;
/// then `print` the results, finish the stored run and write the exports. Exit code: 130 when
/// interrupted, else 0 (failed benchmarks are in the record).
fn execute_and_keep(
    plan: Plan,
    opts: &RunOpts,
    preface: &str,
    print: impl FnOnce(&RunRecord),
) -> Result<i32, CliError> {
    let mut store = sink::StoreSink::open(&opts.store, opts.quiet)?;
    let history = store.history(&plan.benchmarks, &plan.config);
    let (estimates, from_history) = crate::runner::estimates_with_history(&plan, &history);
    let estimate: f64 = crate::runner::RUN_OVERHEAD_S + estimates.iter().sum::<f64>();
    if !opts.quiet {
        let basis = if from_history == 0 {
            String::new()
        } else {
            format!(
                " ({from_history} of {} benchmark(s) timed by earlier runs on this store)",
                estimates.len()
            )
        };
        // Extensions only where no earlier run timed the benchmark (its time includes them).
        let extra = if from_history == 0 {
            plan.estimate_extension_s()
        } else {
            0.0
        };
        let upto = if extra >= 1.0 {
            format!(
                " (up to {} if the CPU-cost windows extend to their cap)",
                crate::output::progress::format_secs(estimate + extra)
            )
        } else {
            String::new()
        };
        crate::errln!(
            "osgauge: {preface}, about {}{}{upto}{basis}",
            crate::output::progress::format_secs(estimate),
            if plan.config.adaptive.is_some() {
                " at the fewest runs"
            } else {
                ""
            }
        );
    }
    let cancel = interrupt_flag();
    // Load files that killed osgauge processes left behind (default folder, and the old-style
    // files in the working directory).
    let cwd = std::env::current_dir().unwrap_or_default();
    crate::workload::load::remove_stale(&crate::workload::load::default_load_base(), &[&cwd]);
    let mut progress = Progress::new(
        estimates,
        plan.config.runs,
        plan.config.warmup_runs,
        !opts.quiet,
    );
    let warmup = plan.config.warmup_runs;
    let started = std::time::Instant::now();
    let mut round_runs = 0usize;
    let mut current_round = 0u32;
    // --store-required: the first write the store could not take ends the run at the next
    // round (the reason goes into each cut benchmark's record).
    let store_stop: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
    let required = opts.store.store_required;
    let label = plan.label.clone();
    let records = crate::runner::execute_arms(
        plan,
        &[label],
        &mut |_, _| match store_stop.borrow().as_ref() {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        },
        cancel,
        &mut |ev| {
            store.on_event(&ev);
            if required && store.write_failed() && store_stop.borrow().is_none() {
                *store_stop.borrow_mut() = Some(
                    "stopped by --store-required: the result store could not take the run"
                        .to_string(),
                );
            }
            match ev {
                Event::Started { record, .. } => {
                    // The machine as the run starts: other work there slows every benchmark.
                    if !opts.quiet
                        && let Some(busy) =
                            crate::system::busy_now(&record.machine, &record.environment.start)
                    {
                        progress.note(&format!(
                            "osgauge: other work is using the CPUs ({busy}): expect this run to \
                             take longer than estimated, and its figures to include that work"
                        ));
                    }
                }
                Event::RunStarted { info, round, .. } => {
                    current_round = round;
                    progress.start(round, &info.id);
                }
                Event::RunFinished { index, .. } => {
                    round_runs += 1;
                    progress.finish_run(index, current_round, warmup);
                }
                Event::RoundFinished { round, .. } => {
                    progress.finish_round(round, round_runs);
                    round_runs = 0;
                }
            }
        },
    );
    let record = match records {
        Ok(mut v) | Err((_, mut v)) => v.pop().expect("one arm"),
    };
    let stopped_by_store = store_stop.borrow().clone();
    progress.done();
    print(&record);
    if !opts.quiet {
        crate::errln!(
            "osgauge: took {} (estimated {})",
            crate::output::progress::format_secs(started.elapsed().as_secs_f64()),
            crate::output::progress::format_secs(estimate)
        );
    }
    // A run the store could not keep is still exported (it is in memory), then exits 1. Every
    // export is attempted, whatever became of the store or of the other exports.
    let stored = store.finish(&record);
    let mut outputs = write_exports(&record, opts);
    outputs.push(store.export_html(&record));
    let (written, failed): (Vec<_>, Vec<_>) = outputs.into_iter().partition(|o| o.is_ok());
    let written: Vec<String> = written
        .into_iter()
        .filter_map(Result::ok)
        .flatten()
        .collect();
    let failed: Vec<String> = failed.into_iter().filter_map(Result::err).collect();
    for f in &failed {
        crate::errln!("osgauge: error: {f}");
    }
    if !stored && !store.kept_locally() {
        crate::errln!(
            "osgauge: {}",
            if written.is_empty() {
                "every measured result is only in the output above".to_string()
            } else {
                format!(
                    "every measured result is in the output above and in {}",
                    written.join(", ")
                )
            }
        );
    }
    if let Some(why) = &stopped_by_store {
        crate::errln!("osgauge: error: the run was {why} (the warning above says why)");
    }
    let failures = opts.fail_on_error.then(|| failures(&record)).flatten();
    if let Some(why) = &failures {
        crate::errln!("osgauge: --fail-on-error: {why}");
    }
    // A signal that ended the run, or an export it cut short, gives its exit code.
    let interrupted = cancel.load(Ordering::Relaxed);
    Ok(if interrupted && (!record.complete || !failed.is_empty()) {
        crate::platform::interrupt_exit_code().unwrap_or(EXIT_INTERRUPTED)
    } else if !stored || !failed.is_empty() || stopped_by_store.is_some() {
        EXIT_WARN
    } else if failures.is_some() {
        EXIT_BENCH_FAILED
    } else {
        EXIT_OK
    })
}

/// What `--fail-on-error` fails on: benchmarks that failed or reached their time bound, or a run
/// in which no figure at all was measured. `None` when there is none.
pub fn failures(record: &RunRecord) -> Option<String> {
    use crate::model::ErrorKind;
    let failed: Vec<String> = record
        .benchmarks
        .iter()
        .filter_map(|b| {
            let e = b.error.as_ref()?;
            matches!(e.kind, ErrorKind::Failed | ErrorKind::Timeout)
                .then(|| format!("{} ({})", b.id, e.kind.as_str()))
        })
        .collect();
    if !failed.is_empty() {
        return Some(format!(
            "{} benchmark(s) not measured: {}",
            failed.len(),
            failed.join(", ")
        ));
    }
    let measured = record
        .benchmarks
        .iter()
        .any(|b| b.metrics.iter().any(|m| m.summary.is_some()));
    (!measured).then(|| "nothing was measured".to_string())
}

fn print_record(record: &RunRecord, quiet: bool, verbose: bool) {
    crate::out!(
        "{}",
        crate::output::summary::render_summary(record, &crate::bench::registry::headlines())
    );
    crate::out!("{}", crate::output::render_tables(record));
    if let Some(line) = reference_line(record) {
        crate::outln!("{line}");
    }
    crate::outln!(
        "median of {} (95 % bootstrap CI); p99 over timed batches; CV = run-to-run variation. Method: `osgauge list --long`.",
        crate::output::runs_kept_text(record)
    );
    print_warnings(record, quiet, verbose);
}

/// One line with the drift reference's figures, when the run has them.
fn reference_line(record: &RunRecord) -> Option<String> {
    let r = record.reference.as_ref()?;
    let parts: Vec<String> = r
        .metrics
        .iter()
        .filter_map(|m| {
            let c = m.summary.as_ref()?.center;
            Some(format!(
                "{} {}",
                m.name,
                crate::units::format_value(c, m.unit)
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "drift reference (every round; `compare` reads it): {}",
            parts.join(", ")
        )
    })
}

/// The warnings section on stderr (not with --quiet): each condition once, in brief and leaving
/// out what the summary's Verdicts said, or everything in full with --verbose (each warning is
/// in the record and the report).
fn print_warnings(record: &RunRecord, quiet: bool, verbose: bool) {
    if quiet {
        return;
    }
    use crate::output::summary;
    let verdicts_shown = summary::shows_summary(record);
    let w = summary::warning_lines(record, verbose, verdicts_shown);
    if !w.is_empty() {
        crate::errln!(
            "\nWarnings{}:",
            if verbose {
                " (in full)"
            } else if verdicts_shown {
                " (the run's own are under Verdicts above; each in full: --verbose)"
            } else {
                " (each in full: --verbose)"
            }
        );
        for x in w {
            let wrapped = if verbose {
                vec![format!("- {x}")]
            } else {
                crate::output::conditions::wrap(&format!("- {x}"), 78, "    ")
            };
            for line in wrapped {
                crate::errln!("  {line}");
            }
        }
    }
}

/// Write every export of `opts`, each on its own: one that fails (a full disk, a FIFO nobody
/// reads) does not stop the others. Per export: Ok(the path written) or Err(one line naming the
/// option, the path and why it was not written).
fn write_exports(record: &RunRecord, opts: &RunOpts) -> Vec<Result<Option<String>, String>> {
    opts.exports()
        .into_iter()
        .map(|(format, path)| {
            format
                .render(record)
                .map_err(|e| format!("{e:#}"))
                .and_then(|text| write_atomic(path, text.as_bytes()).map_err(|e| e.to_string()))
                .map(|()| Some(crate::export::display_output(path)))
                .map_err(|e| crate::export::failure(format.flag(), path, &e))
        })
        .collect()
}

/// Set by Ctrl-C (and on Unix SIGTERM, SIGHUP). The first one stops after the current step
/// (cleanly, children reaped, results kept); a second one exits at once. Exit code 128 + the first
/// signal: 130 INT, 143 TERM, 129 HUP.
pub(crate) fn interrupt_flag() -> &'static AtomicBool {
    static FLAG: AtomicBool = AtomicBool::new(false);
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        if let Err(e) = crate::platform::install_interrupt_handler(&FLAG) {
            crate::errln!("osgauge: warning: Ctrl-C handling unavailable ({e}); Ctrl-C will end the run without saving");
        }
    });
    &FLAG
}

/// `osgauge list` output.
pub fn list_text(long: bool, json: bool) -> String {
    let all = suites();
    if json {
        let v: Vec<_> = all
            .iter()
            .flat_map(|s| s.benchmarks.iter())
            .map(|b| {
                let i = b.info();
                serde_json::json!({
                    "id": i.id, "suite": i.suite, "title": i.title, "method": i.method,
                    "metrics": i.metrics.iter().map(|m| serde_json::json!({
                        "name": m.name, "unit": m.unit, "better": m.better, "description": m.description
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        return serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    }
    let mut s = String::new();
    for suite in &all {
        s.push_str(&format!("{} — {}\n", suite.name, suite.description));
        for b in &suite.benchmarks {
            let i = b.info();
            s.push_str(&format!("  {:<34} {}\n", i.id, i.title));
            for m in &i.metrics {
                let better = m.better.describe();
                s.push_str(&format!(
                    "      {:<10} {:<5} {:<16} {}\n",
                    m.name,
                    m.unit.symbol(),
                    better,
                    m.description
                ));
            }
            if long {
                s.push_str(&wrap(&i.method, 6, 96));
            }
        }
        s.push('\n');
    }
    if long {
        s.push_str("Harness (every batched benchmark):\n");
        s.push_str(&wrap(HARNESS_METHOD, 2, 96));
    }
    s
}

pub const HARNESS_METHOD: &str = "A batch of n operations is timed with two monotonic clock reads; one clock-read cost (measured at the start of every run record, `timing.timer_overhead_ns`) is subtracted per batch, and for operations of a few ns the empty-loop cost per iteration (`timing.loop_overhead_ns`) too. n doubles until a batch lasts ≥ max(50 µs, 1000 clock reads); those sizing batches are discarded. Batches are timed until the run's measuring time is used; the run's value is the median over its batches and its p99 the 99th percentile over batches (single operations when n = 1). Runs are independent repetitions after a discarded warm-up run (none for a benchmark whose every run warms itself, as its method says); the reported figure is the median of per-run medians with a 95 % bootstrap CI (fixed seed), and CV is the run-to-run coefficient of variation. Every benchmark has a time bound; reaching it stops the benchmark cleanly and records a timeout, keeping the finished runs.";

fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent + line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default bound covers three times the longest benchmark's own estimate (a busy machine
    /// took twice mem/bandwidth's quiet 17 s and lost it to the old 32 s bound), never less than
    /// ten times the planned measuring time or 20 s.
    #[test]
    fn the_default_bound_leaves_the_longest_benchmark_room_on_a_busy_machine() {
        assert_eq!(default_bound_s(0.6, 0.7), 20.0);
        assert_eq!(default_bound_s(3.0, 2.0), 30.0);
        assert_eq!(default_bound_s(0.6, 21.0), 63.0);
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// --duration is a total in every command: interactivity's is one cell's, split into its
    /// runs like latency's and noise's; a run too short for the command is refused, not run.
    #[test]
    fn duration_is_a_total_split_into_the_runs_and_the_plan_names_the_cells() {
        let ms = Duration::from_millis;
        assert_eq!(
            split_duration(ms(9000), 3, "per cell", ms(100)).unwrap(),
            ms(3000)
        );
        let Err(CliError::Usage(e)) = split_duration(ms(200), 3, "per cell", ms(100)) else {
            panic!("a 67 ms run accepted");
        };
        assert!(
            e.contains("leaves 66.67 ms per run, less than 100.0 ms"),
            "{e}"
        );
        assert_eq!(
            split_duration(ms(200), 2, "per net benchmark", ms(1)).unwrap(),
            ms(100)
        );
        let cli = |args: &[&str]| {
            let mut v = vec!["osgauge", "interactivity"];
            v.extend_from_slice(args);
            match Cli::try_parse_from(v).unwrap().command {
                Command::Interactivity(a) => *a,
                _ => unreachable!(),
            }
        };
        let a = cli(&["--task", "video", "--duration", "10s", "--runs", "5"]);
        assert_eq!(a.duration, Some(ms(10_000)));
        // Without --load every load runs, and the plan says so before it starts.
        let (tasks, loads) = interactivity_cells(&a).unwrap();
        assert_eq!(loads.len(), crate::workload::load::LoadKind::ALL.len());
        let t =
            interactivity_plan_text(&tasks, &loads, a.load.is_empty(), "5 run(s) each", ms(2000));
        assert!(
            t.starts_with("9 cell(s): task video × load none, video, x, burn")
                && t.contains("(every load: no --load given); 5 run(s) each of 2.000 s"),
            "{t}"
        );
    }

    #[test]
    fn echo_subcommand_is_hidden_and_named_as_the_platform_expects() {
        let cmd = Cli::command();
        let echo = cmd
            .find_subcommand(crate::platform::ECHO_SUBCOMMAND)
            .expect("the echo subcommand exists");
        assert!(echo.is_hide_set());
        let help = Cli::command().render_help().to_string();
        assert!(!help.contains(crate::platform::ECHO_SUBCOMMAND), "{help}");
    }

    #[test]
    fn selection_resolves_suites_and_ids_in_order() {
        let b = select(&["cpu/null_syscall".into(), "cpu".into()]).unwrap();
        let ids: Vec<_> = b.iter().map(|b| b.info().id.clone()).collect();
        assert!(ids.contains(&"cpu/null_syscall".to_string()));
        // No duplicates, suite order kept.
        let mut dedup = ids.clone();
        dedup.dedup();
        assert_eq!(ids, dedup);
        assert_eq!(ids[0], "cpu/timer_read");
        assert!(
            select(&["nosuch".into()])
                .err()
                .unwrap()
                .contains("unknown suite or benchmark 'nosuch'")
        );
    }

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
        let Command::Micro { mem, .. } = ok.command else {
            panic!("not micro")
        };
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

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(cpu_list("0").unwrap(), vec![0]);
        assert_eq!(cpu_list("3,0-2,2").unwrap(), vec![0, 1, 2, 3]);
        assert!(cpu_list("2-1").is_err());
        assert!(cpu_list("a").is_err());
        assert!(cpu_list("").is_err());
        assert!(cpu_list("4096").is_err() && cpu_list("4100,0-0").is_err());
        assert!(check_cpus_allowed(&[0, 1], &[0, 1]).is_ok());
        let e = check_cpus_allowed(&[1, 99], &[0, 1]).unwrap_err();
        assert!(
            e.contains("CPU 99 not available") && e.contains("0-1"),
            "{e}"
        );
    }

    #[test]
    fn run_options_are_bounded_at_parse_time() {
        use clap::error::ErrorKind;
        let bad = [
            vec!["--run-time", "0.00001ns"],
            vec!["--run-time", "500us"],
            vec!["--run-time", "61m"],
            vec!["--timeout", "10ms"],
            vec!["--timeout", "1441m"],
            vec!["--timeout", "25h"],
            vec!["--runs", "0"],
            vec!["--runs", "1001"],
            vec!["--warmup", "101"],
        ];
        for args in bad {
            let mut argv = vec!["osgauge", "micro", "cpu"];
            argv.extend(&args);
            let e = Cli::try_parse_from(&argv).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{args:?}");
            // clap exits 2 for these.
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
        for args in [
            vec!["--run-time", "1ms"],
            vec!["--run-time", "60m"],
            vec!["--timeout", "100ms"],
            vec!["--timeout", "2h"],
            vec!["--timeout", "24h"],
            vec!["--runs", "1", "--warmup", "0"],
        ] {
            let mut argv = vec!["osgauge", "micro", "cpu"];
            argv.extend(&args);
            assert!(Cli::try_parse_from(&argv).is_ok(), "{args:?}");
        }
        // A CPU that does not exist (or this process may not use) is refused when parsing.
        match crate::platform::allowed_cpus() {
            Ok(allowed) => {
                let absent = (allowed.iter().max().unwrap() + 1).to_string();
                let e = Cli::try_parse_from(["osgauge", "interactivity", "--cpus", &absent])
                    .unwrap_err();
                assert_eq!(e.exit_code(), 2);
                assert!(e.to_string().contains("not available"), "{e}");
                let ok = allowed[0].to_string();
                assert!(Cli::try_parse_from(["osgauge", "interactivity", "--cpus", &ok]).is_ok());
            }
            Err(e) => eprintln!("--cpus check skipped: no affinity mask here ({e})"),
        }
    }

    #[test]
    fn fail_on_error_counts_failures_and_empty_runs_not_unsupported() {
        use crate::model::{BenchError, RunRecord};
        let text = include_str!("../tests/fixtures/cpu-a.json");
        let mut r: RunRecord = serde_json::from_str(text).unwrap();
        assert_eq!(failures(&r), None);
        r.benchmarks[0].error = Some(BenchError::unsupported("unsupported on TestOS: no"));
        assert_eq!(failures(&r), None, "unsupported is not a failure");
        r.benchmarks[1].error = Some(BenchError::timeout("bound"));
        let why = failures(&r).unwrap();
        assert!(
            why.contains(&format!("{} (timeout)", r.benchmarks[1].id)),
            "{why}"
        );
        assert!(!why.contains(&r.benchmarks[0].id), "{why}");
        r.benchmarks[1].error = None;
        for b in &mut r.benchmarks {
            for m in &mut b.metrics {
                m.summary = None;
            }
        }
        assert_eq!(failures(&r).as_deref(), Some("nothing was measured"));
    }

    #[test]
    fn suites_are_picked_in_run_order() {
        assert_eq!(
            pick_suites(&["fs".into(), "net".into(), "fs".into()]).unwrap(),
            vec!["net".to_string(), "fs".to_string()]
        );
        assert_eq!(pick_suites(&[]).unwrap().len(), suites().len());
        assert!(pick_suites(&["cpu/null_syscall".into()]).is_err());
    }

    #[test]
    fn wrap_respects_width() {
        let w = wrap(HARNESS_METHOD, 2, 60);
        assert!(
            w.lines()
                .all(|l| l.chars().count() <= 60 || !l.trim().contains(' '))
        );
        assert!(w.lines().all(|l| l.starts_with("  ")));
    }
}
