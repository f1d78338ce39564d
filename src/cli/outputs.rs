//! The outputs of a run, chosen once from the flags and written through one path (as hyperfine's
//! `ExportManager` and criterion's `Reports` fan-out do): the result store, the progress display,
//! the terminal tables, a command's own files (latency's cyclictest histogram, policy's
//! significance rows), each export of the record and the HTML report.
//!
//! The order and the error rules, one place for every command that runs benchmarks:
//! 1. while running: each runner event to the store, then to the progress display;
//! 2. once the run is over: the progress display ends, the terminal tables are printed, the
//!    command's own files are written (the first that fails fails the command: its message comes
//!    last and the exit code is 1), "took …";
//! 3. the store finishes the run; then `--export-json`, `--export-csv`, `--export-markdown`,
//!    `--export-html`, each on its own: one that fails is reported and the others are still
//!    written (exit 1);
//! 4. what was not kept is said: the failed exports, where the results are when the store did not
//!    keep them, a run stopped by `--store-required`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::run_opts::RunOpts;
use super::sink::StoreSink;
use super::{CliError, EXIT_BENCH_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_WARN};
use crate::export::{Format, check_writable, write_atomic};
use crate::output::progress::{Progress, format_secs};
use crate::record::RunRecord;
use crate::runner::{Event, Plan};

/// What to say as a run starts while other work keeps `share` of the CPUs busy (`busy`: how it
/// was seen). The estimate assumes a quiet machine; the benchmarks share the CPUs with that work,
/// so the run takes longer: about the estimate × (1 + share) while that work stays as it is (on
/// this project's 2-CPU VM, with other work saturating both CPUs, the quick preset took 1.5× its
/// estimate). It is no bound: work that grows after the start (a build beside it that went from
/// a load average of 2.8 to 400) made the same run take 3.5× (2 min 11 s for 37 s).
pub fn busy_note(busy: &str, share: f64, estimate_s: f64) -> String {
    format!(
        "osgauge: other work is using the CPUs ({busy}): expect this run to take longer than \
         estimated (about {} if that work stays as it is now, more if it grows) and its figures \
         to include that work",
        format_secs(estimate_s * (1.0 + share.clamp(0.0, 1.0)))
    )
}

/// A file a run writes, named by its option.
#[derive(Debug)]
pub(super) struct FileOutput {
    pub flag: &'static str,
    pub path: PathBuf,
    kind: FileKind,
}

#[derive(Debug, PartialEq)]
enum FileKind {
    /// The record in one format (`--export-json`, `--export-csv`, `--export-markdown`).
    Record(Format),
    /// `--export-html`: a report of this one run.
    Html,
    /// `latency --histogram`: benchmark `id`'s wake-up histogram in cyclictest's layout.
    Histogram { id: String, limit_us: u64 },
    /// `policy --export-significance`: the pairwise rows as JSON, or CSV for a `.csv` path.
    Significance,
}

impl FileOutput {
    /// `latency --histogram FILE`: the wake-up histogram of benchmark `id`, buckets up to
    /// `limit_us`.
    pub(super) fn histogram(path: &Path, id: String, limit_us: u64) -> Self {
        FileOutput {
            flag: "--histogram",
            path: path.to_path_buf(),
            kind: FileKind::Histogram { id, limit_us },
        }
    }

    /// `policy --export-significance FILE`.
    pub(super) fn significance(path: &Path) -> Self {
        FileOutput {
            flag: "--export-significance",
            path: path.to_path_buf(),
            kind: FileKind::Significance,
        }
    }

    /// `--export-html`.
    pub(super) fn is_html(&self) -> bool {
        self.kind == FileKind::Html
    }

    /// An export of the record: Ok(the path as named to the user) or Err(one line naming the
    /// option, the path and why it was not written).
    fn write_export(&self, record: &RunRecord) -> Result<String, String> {
        let text = match &self.kind {
            FileKind::Record(format) => format.render(record).map_err(|e| format!("{e:#}")),
            FileKind::Html => {
                let name = record.label.clone().unwrap_or_else(|| {
                    crate::store::short_id(&record.run_id.to_string()).to_string()
                });
                crate::report::render(
                    &[(name, record.clone())],
                    crate::compare::Options::default(),
                )
                .map_err(|e| format!("{e:#}"))
            }
            FileKind::Histogram { .. } | FileKind::Significance => {
                unreachable!("a command's own file is written by write_own")
            }
        };
        text.and_then(|t| write_atomic(&self.path, t.as_bytes()).map_err(|e| e.to_string()))
            .map(|()| crate::export::display_output(&self.path))
            .map_err(|e| crate::export::failure(self.flag, &self.path, &e))
    }

    /// A command's own file: Err(the message the command fails with).
    fn write_own(&self, record: &RunRecord) -> Result<(), String> {
        let path = &self.path;
        match &self.kind {
            FileKind::Histogram { id, limit_us } => {
                let text = record
                    .benchmark(id)
                    .and_then(|b| crate::export::cyclictest::render(b, *limit_us))
                    .ok_or_else(|| {
                        format!(
                            "--histogram {}: {id} measured no wake-up to write",
                            path.display()
                        )
                    })?;
                std::fs::write(path, text)
                    .map_err(|e| format!("--histogram {}: {e}", path.display()))
            }
            FileKind::Significance => {
                let csv = path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
                let text = if csv {
                    crate::export::pairwise::to_csv(record)
                } else {
                    crate::export::pairwise::to_json(record)
                };
                text.and_then(|t| {
                    write_atomic(path, t.as_bytes()).map_err(|e| anyhow::anyhow!("{e}"))
                })
                .map_err(|e| format!("--export-significance: writing {}: {e}", path.display()))
            }
            FileKind::Record(_) | FileKind::Html => {
                unreachable!("an export is written by write_export")
            }
        }
    }
}

impl RunOpts {
    /// Before running: the label is valid, every output can be written, and no two name the
    /// same file (exit 2). The label is checked here, not by clap, whose message would echo it raw.
    pub(super) fn check_outputs(&self) -> Result<(), CliError> {
        self.check_outputs_with(&[])
    }

    /// [`Self::check_outputs`] with a command's own outputs (option name, path) besides the
    /// common ones.
    pub(super) fn check_outputs_with(&self, extra: &[(&str, &Path)]) -> Result<(), CliError> {
        if let Some(l) = &self.label {
            crate::output::parse_label(l).map_err(|e| CliError::Usage(format!("--label: {e}")))?;
        }
        self.tags()?;
        // The exports as the run writes them; --export-html's path is checked when the store
        // opens (`StoreSink::open`), as it always was.
        let exports = exports(self);
        let mut all: Vec<(&str, &Path)> = Vec::new();
        for f in &exports {
            if !f.is_html() {
                check_writable(&f.path).map_err(|e| CliError::Usage(format!("{}: {e}", f.flag)))?;
            }
            all.push((f.flag, &f.path));
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
}

/// The exports of the record `opts` asks for, in the order they are written: JSON, CSV,
/// Markdown, then the HTML report.
pub(super) fn exports(opts: &RunOpts) -> Vec<FileOutput> {
    [
        (Format::Json, &opts.export_json),
        (Format::Csv, &opts.export_csv),
        (Format::Markdown, &opts.export_markdown),
    ]
    .into_iter()
    .filter_map(|(f, p)| {
        p.as_ref().map(|p| FileOutput {
            flag: f.flag(),
            path: p.clone(),
            kind: FileKind::Record(f),
        })
    })
    .chain(opts.store.export_html.as_ref().map(|p| FileOutput {
        flag: "--export-html",
        path: p.clone(),
        kind: FileKind::Html,
    }))
    .collect()
}

/// The progress display of a running run.
struct Running {
    progress: Progress,
    /// The estimate said before the run, s.
    estimate_s: f64,
    started: Instant,
    warmup: u32,
    round_runs: usize,
    current_round: u32,
}

/// The terminal output of a command: its tables of the finished run.
type Terminal<'a> = Box<dyn FnOnce(&RunRecord) + 'a>;

/// Every output of one run.
pub(super) struct Outputs<'a> {
    store: StoreSink,
    /// `--store-required`: the first write the store could not take ends the run at the next
    /// round (the reason goes into each cut benchmark's record).
    store_required: bool,
    /// Why `--store-required` stopped the run.
    store_stop: Option<String>,
    quiet: bool,
    /// Estimates per benchmark, s, from [`Outputs::announce`] until the run starts.
    estimates: Vec<f64>,
    estimate_s: f64,
    running: Option<Running>,
    terminal: Option<Terminal<'a>>,
    own: Vec<FileOutput>,
    exports: Vec<FileOutput>,
}

/// What became of a run's outputs.
#[derive(Debug)]
pub(super) struct Kept {
    /// The store kept the run (or there is none).
    pub stored: bool,
    /// Some export was not written.
    pub export_failed: bool,
    /// `--store-required` stopped the run.
    pub stopped_by_store: bool,
    /// The first of the command's own files that was not written: the command fails with it.
    pub own_failed: Option<String>,
}

/// What to say when a signal came after the last round (the run complete, every export
/// written): it cut nothing short, so the run keeps its own exit code ([`Kept::exit_code`]), and
/// this says why a stopped command exited as a finished one. None otherwise.
pub fn late_signal_note(interrupted: bool, complete: bool, kept: &Kept) -> Option<String> {
    (interrupted && complete && !kept.export_failed).then(|| {
        "osgauge: the stop signal came after the last round had measured: the run is complete \
         and was finished (stored and exported as asked), so it exits as a finished run"
            .to_string()
    })
}

impl Kept {
    /// The exit code: 128 + the signal when a signal ended the run or cut an export short; 1 when
    /// the store did not keep the run, an export was not written or `--store-required` stopped
    /// it; 5 when `--fail-on-error` found failures (`bench_failed`); else 0. A command's own file
    /// that failed makes it an error (exit 1) whatever the rest.
    pub fn exit_code(
        &self,
        interrupted: bool,
        complete: bool,
        bench_failed: bool,
    ) -> Result<i32, CliError> {
        if let Some(e) = &self.own_failed {
            return Err(CliError::Other(anyhow::anyhow!("{e}")));
        }
        Ok(if interrupted && (!complete || self.export_failed) {
            crate::platform::interrupt_exit_code().unwrap_or(EXIT_INTERRUPTED)
        } else if !self.stored || self.export_failed || self.stopped_by_store {
            EXIT_WARN
        } else if bench_failed {
            EXIT_BENCH_FAILED
        } else {
            EXIT_OK
        })
    }
}

impl<'a> Outputs<'a> {
    /// The outputs `opts` asks for (the store opened: a bad path fails before anything is
    /// measured), `terminal` printing the results, and the command's `own` files.
    pub(super) fn open(
        opts: &RunOpts,
        terminal: impl FnOnce(&RunRecord) + 'a,
        own: Vec<FileOutput>,
    ) -> Result<Self, CliError> {
        Ok(Outputs {
            store: StoreSink::open(&opts.store, opts.quiet)?,
            store_required: opts.store.store_required,
            store_stop: None,
            quiet: opts.quiet,
            estimates: Vec::new(),
            estimate_s: 0.0,
            running: None,
            terminal: Some(Box::new(terminal)),
            own,
            exports: exports(opts),
        })
    }

    /// Before running: the estimate (from earlier runs in the store where it has them), said
    /// after `preface` unless quiet.
    pub(super) fn announce(&mut self, plan: &Plan, preface: &str) {
        let history = self.store.history(&plan.benchmarks, &plan.config);
        let (estimates, from_history) = crate::runner::estimates_with_history(plan, &history);
        let estimate: f64 = crate::runner::RUN_OVERHEAD_S + estimates.iter().sum::<f64>();
        if !self.quiet {
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
                    format_secs(estimate + extra)
                )
            } else {
                String::new()
            };
            crate::errln!(
                "osgauge: {preface}, about {}{}{upto}{basis}",
                format_secs(estimate),
                if plan.config.adaptive.is_some() {
                    " at the fewest runs"
                } else {
                    ""
                }
            );
        }
        self.estimates = estimates;
        self.estimate_s = estimate;
    }

    /// The run starts: the progress display appears (not when quiet).
    pub(super) fn start(&mut self, plan: &Plan) {
        self.running = Some(Running {
            progress: Progress::new(
                std::mem::take(&mut self.estimates),
                plan.config.runs,
                plan.config.warmup_runs,
                !self.quiet,
            ),
            estimate_s: self.estimate_s,
            started: Instant::now(),
            warmup: plan.config.warmup_runs,
            round_runs: 0,
            current_round: 0,
        });
    }

    /// Why the run is to stop before its next round (`--store-required`), if it is.
    pub(super) fn stop_reason(&self) -> Option<&str> {
        self.store_stop.as_deref()
    }

    /// One event of the runner: to the store, then to the progress display.
    pub(super) fn event(&mut self, ev: &Event) {
        self.store.on_event(ev);
        if self.store_required && self.store.write_failed() && self.store_stop.is_none() {
            self.store_stop = Some(
                "stopped by --store-required: the result store could not take the run".to_string(),
            );
        }
        let Some(r) = &mut self.running else {
            return;
        };
        match ev {
            Event::Started { record, .. } => {
                // The machine as the run starts: other work there slows every benchmark.
                let (m, e) = (&record.machine, &record.environment.start);
                if !self.quiet
                    && let Some(busy) = crate::system::busy_now(m, e)
                {
                    let share = crate::system::busy_share(m, e).unwrap_or(0.0);
                    r.progress.note(&busy_note(&busy, share, r.estimate_s));
                }
            }
            Event::RunStarted { info, round, .. } => {
                r.current_round = *round;
                r.progress.start(*round, &info.id);
            }
            Event::RunFinished { index, .. } => {
                r.round_runs += 1;
                r.progress.finish_run(*index, r.current_round, r.warmup);
            }
            Event::RoundFinished { round, .. } => {
                r.progress.finish_round(*round, r.round_runs);
                r.round_runs = 0;
            }
        }
    }

    /// The run is over: every output in its order (see the module comment), each failure said.
    pub(super) fn write_all(mut self, record: &RunRecord) -> Kept {
        let running = self.running.take();
        if let Some(r) = &running {
            r.progress.done();
        }
        if let Some(print) = self.terminal.take() {
            print(record);
        }
        let mut own_failed = None;
        for f in &self.own {
            if let Err(e) = f.write_own(record) {
                own_failed.get_or_insert(e);
            }
        }
        if !self.quiet
            && let Some(r) = &running
        {
            crate::errln!(
                "osgauge: took {} (estimated {})",
                format_secs(r.started.elapsed().as_secs_f64()),
                format_secs(r.estimate_s)
            );
        }
        // A run the store could not keep is still exported (it is in memory), then exits 1.
        // Every export is attempted, whatever became of the store or of the other exports.
        let stored = self.store.finish(record);
        let (mut written, mut failed) = (Vec::new(), Vec::new());
        for f in &self.exports {
            match f.write_export(record) {
                Ok(shown) => written.push(shown),
                Err(line) => failed.push(line),
            }
        }
        for f in &failed {
            crate::errln!("osgauge: error: {f}");
        }
        if !stored && !self.store.kept_locally() {
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
        if let Some(why) = &self.store_stop {
            crate::errln!("osgauge: error: the run was {why} (the warning above says why)");
        }
        Kept {
            stored,
            export_failed: !failed.is_empty(),
            stopped_by_store: self.store_stop.is_some(),
            own_failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    /// The run options of `osgauge micro cpu ARGS…`.
    fn opts(args: &[&str]) -> RunOpts {
        let mut argv = vec!["osgauge", "micro", "cpu"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Micro { opts, .. } => opts,
            _ => unreachable!(),
        }
    }

    fn record() -> RunRecord {
        serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap()
    }

    fn flags(files: &[FileOutput]) -> Vec<&'static str> {
        files.iter().map(|f| f.flag).collect()
    }

    /// Each export flag chooses its file, written in one order whatever the order of the flags:
    /// JSON, CSV, Markdown, then the HTML report; none without a flag.
    #[test]
    fn the_exports_are_chosen_from_the_flags_in_one_order() {
        assert!(exports(&opts(&[])).is_empty());
        let o = opts(&[
            "--export-html",
            "r.html",
            "--export-markdown",
            "r.md",
            "--export-json",
            "r.json",
        ]);
        let files = exports(&o);
        assert_eq!(
            flags(&files),
            ["--export-json", "--export-markdown", "--export-html"]
        );
        assert_eq!(files[0].path, Path::new("r.json"));
        assert_eq!(files[0].kind, FileKind::Record(Format::Json));
        assert!(files[2].is_html() && !files[0].is_html());
        let all = exports(&opts(&[
            "--export-csv",
            "c",
            "--export-json",
            "j",
            "--export-markdown",
            "m",
            "--export-html",
            "h",
        ]));
        assert_eq!(
            flags(&all),
            [
                "--export-json",
                "--export-csv",
                "--export-markdown",
                "--export-html"
            ]
        );
    }

    /// `-` is standard output: at most one output may take it (the HTML report and a command's
    /// own file too), and no export may name the result store. (Checking claims standard output
    /// for the export first: this test process's human output then goes to standard error, which
    /// no unit test reads.)
    #[test]
    fn standard_output_takes_one_output_and_no_export_overwrites_the_store() {
        let refused =
            |args: &[&str], extra: &[(&str, &Path)]| match opts(args).check_outputs_with(extra) {
                Err(CliError::Usage(e)) => e,
                other => panic!("{args:?} accepted: {other:?}"),
            };
        let e = refused(&["--export-json", "-", "--export-csv", "-"], &[]);
        assert_eq!(
            e,
            "--export-json and --export-csv both write -: give each output its own file"
        );
        let e = refused(&["--export-markdown", "-", "--export-html", "-"], &[]);
        assert!(
            e.starts_with("--export-markdown and --export-html both write -"),
            "{e}"
        );
        let e = refused(&["--export-json", "-"], &[("--histogram", Path::new("-"))]);
        assert!(
            e.starts_with("--export-json and --histogram both write -"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.db");
        let db = db.to_str().unwrap();
        let e = refused(&["--store", db, "--export-csv", db], &[]);
        assert!(
            e.contains("--export-csv") && e.contains("the result store"),
            "{e}"
        );
        // Named to the user as standard output.
        assert_eq!(
            crate::export::display_output(Path::new("-")),
            "standard output"
        );
    }

    /// An export that cannot be written is reported, and every other is still written; a
    /// command's own file that cannot be written fails the command (exit 1) after everything
    /// else was written. The terminal tables come first.
    #[test]
    fn a_failing_output_is_reported_and_the_others_are_still_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        let (json, csv, md, html) = (p("absent/r.json"), p("r.csv"), p("r.md"), p("r.html"));
        let o = opts(&[
            "--no-store",
            "--quiet",
            "--export-json",
            &json,
            "--export-csv",
            &csv,
            "--export-markdown",
            &md,
            "--export-html",
            &html,
        ]);
        let shown = RefCell::new(Vec::new());
        let own = vec![FileOutput::histogram(
            Path::new(&p("h.txt")),
            "latency/wakeup".into(),
            1000,
        )];
        let outputs =
            Outputs::open(&o, |r: &RunRecord| shown.borrow_mut().push(r.run_id), own).unwrap();
        let record = record();
        let kept = outputs.write_all(&record);
        assert_eq!(*shown.borrow(), [record.run_id], "the terminal tables once");
        assert!(kept.stored, "no store: nothing to lose");
        assert!(kept.export_failed && !kept.stopped_by_store);
        assert!(!Path::new(&json).exists());
        for written in [&csv, &md, &html] {
            assert!(std::fs::metadata(written).unwrap().len() > 0, "{written}");
        }
        let own = kept.own_failed.as_deref().unwrap();
        assert!(
            own.starts_with("--histogram ")
                && own.ends_with("latency/wakeup measured no wake-up to write"),
            "{own}"
        );
        assert!(!dir.path().join("h.txt").exists());
        let Err(CliError::Other(e)) = kept.exit_code(false, true, false) else {
            panic!("a failed own file is not an error");
        };
        assert_eq!(format!("{e:#}"), own);
        // One failed export's line names its option and path.
        let f = &exports(&o)[0];
        let line = f.write_export(&record).unwrap_err();
        assert!(
            line.starts_with(&format!("--export-json: {json} not written: ")),
            "{line}"
        );
    }

    /// A busy start says how much longer the run may take, as an expectation, not a bound.
    #[test]
    fn a_busy_start_says_how_much_longer_while_the_work_stays_as_it_is() {
        let n = busy_note("100 % busy over 200 ms", 0.5, 40.0);
        assert!(n.contains("(100 % busy over 200 ms)"), "{n}");
        assert!(
            n.contains("about 1 min 00 s if that work stays as it is now"),
            "{n}"
        );
        assert!(n.contains("more if it grows"), "{n}");
        assert!(!n.contains("up to"), "{n}");
        // The share is at most all CPUs: twice the estimate.
        let n = busy_note("x", 3.0, 40.0);
        assert!(n.contains("about 1 min 20 s"), "{n}");
    }

    /// The exit code of a run from what became of its outputs.
    #[test]
    fn the_exit_code_follows_what_was_kept() {
        let kept = |stored, export_failed, stopped_by_store| Kept {
            stored,
            export_failed,
            stopped_by_store,
            own_failed: None,
        };
        let code = |k: Kept, interrupted, complete, bench_failed| {
            k.exit_code(interrupted, complete, bench_failed)
                .ok()
                .unwrap()
        };
        assert_eq!(code(kept(true, false, false), false, true, false), EXIT_OK);
        assert_eq!(
            code(kept(true, false, false), false, true, true),
            EXIT_BENCH_FAILED
        );
        assert_eq!(
            code(kept(false, false, false), false, true, true),
            EXIT_WARN
        );
        assert_eq!(code(kept(true, true, false), false, true, false), EXIT_WARN);
        assert_eq!(
            code(kept(true, false, true), false, false, false),
            EXIT_WARN
        );
        // A signal that cut the run or an export short: 128 + the signal (none here: 130).
        assert_eq!(
            code(kept(true, false, false), true, false, false),
            EXIT_INTERRUPTED
        );
        assert_eq!(
            code(kept(true, true, false), true, true, false),
            EXIT_INTERRUPTED
        );
        // A complete run the signal did not cut keeps its own code, and says why.
        assert_eq!(code(kept(true, false, false), true, true, false), EXIT_OK);
        let note = late_signal_note(true, true, &kept(true, false, false)).unwrap();
        assert!(note.contains("after the last round"), "{note}");
        assert_eq!(
            late_signal_note(true, false, &kept(true, false, false)),
            None
        );
        assert_eq!(late_signal_note(true, true, &kept(true, true, false)), None);
        assert_eq!(
            late_signal_note(false, true, &kept(true, false, false)),
            None
        );
    }
}
