//! `osgauge run` and `osgauge micro`: the run options, the plan of a run, and running it with its
//! outputs (store, progress, terminal tables, exports, HTML report).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::outputs::{FileOutput, Outputs};
use super::run_opts::RunOpts;
use super::{CliError, Preset, SuiteArgs, interrupt_flag};
use crate::bench::Benchmark;
use crate::bench::registry::{SuiteOptions, suites, suites_with};
use crate::record::RunRecord;
use crate::runner::Plan;

/// `osgauge run`: the preset's suites (their lighter configuration at the quick preset).
pub(super) fn run_preset(preset: Preset, suite: &[String], opts: RunOpts) -> Result<i32, CliError> {
    let all = pick_suites(suite).map_err(CliError::Usage)?;
    // The quick preset builds suites in their lighter configuration.
    let suite_opts = match preset {
        Preset::Quick => SuiteOptions::quick(),
        Preset::Standard => SuiteOptions::default(),
    };
    run_plan(preset_name(preset), preset, all, opts, &suite_opts)
}

/// `osgauge micro`: the selected suites and ids, each suite's options checked against the
/// selection.
pub(super) fn run_micro(
    select: Vec<String>,
    mut opts: RunOpts,
    suites: &SuiteArgs,
) -> Result<i32, CliError> {
    let suite_opts = suites.suite_options(&select, &mut opts)?;
    run_plan("custom", Preset::Standard, select, opts, &suite_opts)
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

pub(super) fn run_plan(
    preset: &str,
    defaults: Preset,
    selection: Vec<String>,
    opts: RunOpts,
    suite_opts: &SuiteOptions,
) -> Result<i32, CliError> {
    run_plan_then(
        preset,
        defaults,
        selection,
        opts,
        suite_opts,
        Vec::new(),
        |_| {},
    )
}

/// [`run_plan`] with a command's `own` files, and `after(record)` printed after the results.
pub(super) fn run_plan_then(
    preset: &str,
    defaults: Preset,
    selection: Vec<String>,
    opts: RunOpts,
    suite_opts: &SuiteOptions,
    own: Vec<FileOutput>,
    after: impl FnOnce(&RunRecord),
) -> Result<i32, CliError> {
    let benchmarks = select_with(&selection, suite_opts).map_err(CliError::Usage)?;
    opts.check_outputs()?;
    let (runs, run_time) = defaults.runs_and_run_time();
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
    let plan = opts.plan(
        benchmarks,
        preset,
        selection,
        (runs, run_time, timeout),
        adaptive.clone(),
    )?;
    let preface = format!(
        "{} benchmark(s) and the drift reference, in rounds of random order, {}",
        plan.benchmarks.len() - 1,
        runs_text(&plan)
    );
    execute_and_keep(plan, &opts, &preface, own, |record| {
        print_record(record, opts.quiet, opts.verbose);
        after(record);
    })
}

/// A benchmark's default time bound before CPU-cost extensions, s: ten times its planned
/// measuring time, at least 20 s, and at least three times the longest benchmark's own estimate
/// (`longest_s`: an estimate assumes a quiet machine; a busy one takes up to about twice as long).
pub fn default_bound_s(planned_s: f64, longest_s: f64) -> f64 {
    (planned_s * 10.0).max(20.0).max(3.0 * longest_s)
}

/// "5 run(s) each" or, adaptive, "4–30 run(s) each until the 95 % CI is within ±5 %".
pub(super) fn runs_text(plan: &Plan) -> String {
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
/// then `print` the results, write the command's `own` files, finish the stored run and write the
/// exports ([`Outputs`]). Exit code: 130 when interrupted, else 0 (failed benchmarks are in the
/// record).
pub(super) fn execute_and_keep(
    plan: Plan,
    opts: &RunOpts,
    preface: &str,
    own: Vec<FileOutput>,
    print: impl FnOnce(&RunRecord),
) -> Result<i32, CliError> {
    let mut outputs = Outputs::open(opts, print, own)?;
    outputs.announce(&plan, preface);
    let cancel = interrupt_flag();
    // Load files that killed osgauge processes left behind (default folder, and the old-style
    // files in the working directory).
    let cwd = std::env::current_dir().unwrap_or_default();
    crate::workload::load::remove_stale(&crate::workload::load::default_load_base(), &[&cwd]);
    outputs.start(&plan);
    let outputs = std::cell::RefCell::new(outputs);
    let label = plan.label.clone();
    let records = crate::runner::execute_arms(
        plan,
        &[label],
        &mut |_, _| match outputs.borrow().stop_reason() {
            Some(why) => Err(why.to_string()),
            None => Ok(()),
        },
        cancel,
        &mut |ev| outputs.borrow_mut().event(&ev),
    );
    let record = match records {
        Ok(mut v) | Err((_, mut v)) => v.pop().expect("one arm"),
    };
    let kept = outputs.into_inner().write_all(&record);
    let failures = opts.fail_on_error.then(|| failures(&record)).flatten();
    if let Some(why) = &failures {
        crate::errln!("osgauge: --fail-on-error: {why}");
    }
    let signalled = cancel.load(Ordering::Relaxed);
    if let Some(note) = super::outputs::late_signal_note(signalled, record.complete, &kept) {
        crate::errln!("{note}");
    }
    // A signal that ended the run, or an export it cut short, gives its exit code.
    kept.exit_code(signalled, record.complete, failures.is_some())
}

/// What `--fail-on-error` fails on: benchmarks that failed or reached their time bound, or a run
/// in which no figure at all was measured. `None` when there is none.
pub fn failures(record: &RunRecord) -> Option<String> {
    use crate::record::ErrorKind;
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
pub(super) fn print_warnings(record: &RunRecord, quiet: bool, verbose: bool) {
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
    fn fail_on_error_counts_failures_and_empty_runs_not_unsupported() {
        use crate::record::{BenchError, RunRecord};
        let text = include_str!("../../tests/fixtures/cpu-a.json");
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

    /// The help text names the presets' real run counts and times, and the quick preset takes
    /// the fewest runs a comparison can reach significance from.
    #[test]
    fn the_help_names_each_presets_runs_and_run_time() {
        use clap::CommandFactory;
        let (q_runs, q_time) = Preset::Quick.runs_and_run_time();
        let (s_runs, s_time) = Preset::Standard.runs_and_run_time();
        assert_eq!(q_runs, crate::runner::MIN_SIGNIFICANT_RUNS);
        let mut cmd = super::super::Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for (runs, time, name) in [(q_runs, q_time, "quick"), (s_runs, s_time, "standard")] {
            let ms = time.as_millis();
            assert!(
                help.contains(&format!("{name}: {runs} runs × {ms} ms")),
                "{name}: {help}"
            );
            assert!(
                help.contains(&format!("{ms}ms for quick")) == (name == "quick"),
                "{help}"
            );
        }
        assert!(help.contains(&format!("default: {q_runs} for quick, {s_runs} otherwise")));
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
}
