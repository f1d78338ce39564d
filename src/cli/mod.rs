//! Command line: the top-level argument definitions (clap derive), the exit codes, and dispatch
//! to one file per command (`run.rs`: run and micro, with `micro.rs` the suites' options and
//! `outputs.rs` the outputs of a run; `list.rs`, `system.rs`, `latency.rs`, `interactivity.rs`,
//! `policy.rs`, `results.rs`, `ab.rs`, `fleet.rs`, `serve.rs`, `appmodel.rs`). Usage errors print
//! one line on stderr and exit with code 2; nothing is half-written.

use std::sync::atomic::AtomicBool;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::bench::registry::suites;
use crate::units::parse_duration;

mod ab;
mod appmodel;
mod fleet;
mod fs;
mod interactivity;
mod latency;
mod list;
mod micro;
mod outputs;
mod parse;
pub mod policy;
mod results;
mod run;
mod run_opts;
mod select;
mod serve;
mod sink;
mod system;
pub use fs::FsOpts;
pub use interactivity::*;
pub use list::{HARNESS_METHOD, list_text};
pub use micro::{MemOpts, MemPart, SuiteArgs};
pub use parse::*;
pub use results::{CompareArgs, ReportArgs, ResultsCmd, StoreOpts, parse_percent};
pub use run::{default_bound_s, failures, pick_suites, select, select_with};
pub use run_opts::{DEFAULT_MAX_RUNS, RunOpts};

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
        /// quick: 4 runs × 50 ms per benchmark, the suites in their lighter configuration (under
        /// 45 s on a quiet 2-core VM); standard: 10 runs × 300 ms (about 6 minutes there, up to 12
        /// when the file CPU-cost windows extend). Each run prints its own estimate first, and
        /// says so when other work is using the CPUs
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
        // Each suite's own options (micro.rs).
        #[command(flatten)]
        suites: SuiteArgs,
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

impl Preset {
    /// Runs per benchmark and measuring time per run. Quick: 4 runs, the fewest from which a
    /// comparison can reach significance ([`crate::runner::MIN_SIGNIFICANT_RUNS`]), of 50 ms;
    /// standard: 10 runs of 300 ms. Both add the runner's warm-up run (`--warmup`, default 1).
    pub fn runs_and_run_time(self) -> (u32, std::time::Duration) {
        use std::time::Duration;
        match self {
            Preset::Quick => (
                crate::runner::MIN_SIGNIFICANT_RUNS,
                Duration::from_millis(50),
            ),
            Preset::Standard => (10, Duration::from_millis(300)),
        }
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
        } => run::run_preset(preset, &suite, opts),
        Command::Micro {
            select,
            opts,
            suites,
        } => run::run_micro(select, opts, &suites),
        Command::Echo => match crate::platform::serve_echo() {
            Ok(()) => Ok(EXIT_OK),
            Err(e) => Err(CliError::Other(anyhow::Error::new(e).context("echo"))),
        },
        Command::List { long, json } => {
            crate::out!("{}", list_text(long, json));
            Ok(EXIT_OK)
        }
        Command::System(SystemCmd::Show { json }) => system::show(json),
        Command::System(SystemCmd::Check) => system::check(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
}
