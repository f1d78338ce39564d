//! `osgauge model`: predict an application's capacity on stored runs (or published figures), and
//! `osgauge model validate`: run the synthetic application and compare.

use std::path::{Path, PathBuf};

use clap::Args;

use super::results::{StorePath, load_runs};
use super::{CliError, EXIT_INTERRUPTED, EXIT_OK, EXIT_WARN};
use crate::appmodel::validate::{self, ValidateError, report};
use crate::appmodel::{self, Profile, published};

#[derive(Args, Debug)]
pub struct ModelArgs {
    /// The application profile (TOML), or `validate` followed by the profile
    #[arg(value_name = "PROFILE")]
    pub profile: String,
    /// Runs to predict on: stored runs by label, id or id prefix, or JSON files (as `compare`).
    /// None: the published figures the profile names in `app.inputs`, else the newest complete
    /// stored run
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StorePath,
    /// Write the analysis as JSON
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the analysis as Markdown
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write a self-contained HTML page (utilisation bars, capacity-vs-rate lines)
    #[arg(long, value_name = "FILE")]
    pub export_html: Option<PathBuf>,
    /// validate: the highest rate tried, units/s [default: 1.25 × the prediction]
    #[arg(long)]
    pub max_rate: Option<f64>,
    /// validate: also predict from this stored run's suite figures (label, id, id prefix or JSON
    /// file), printed beside the probes' prediction and the measured figures
    #[arg(long, value_name = "RUN")]
    pub inputs: Option<String>,
    /// validate / check: seconds at each rate step [default: validate 2; check 3, stress-ng 8 — its
    /// loop rate needs 4.5 s after the arrays' set-up]
    #[arg(long)]
    pub step_s: Option<f64>,
    /// check: measure the inputs first — a fresh standard-preset `osgauge micro` run of exactly
    /// the benchmarks the profile reads (not stored) — instead of reading a stored run
    #[arg(long)]
    pub measure: bool,
    /// check --measure: interleaved rounds — in each, the inputs measured afresh and then the
    /// application, so both share one window of the machine's speed; each law is judged on the
    /// median of the rounds' deviations [default: 1]
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// check --measure: measure the inputs with the quick preset's run count and time (5 runs ×
    /// 100 ms per benchmark instead of 10 × 300 ms): about a third of the time, wider intervals
    #[arg(long)]
    pub quick: bool,
}

pub const AFTER_HELP: &str = concat!(
    "Examples:\n",
    "  osgauge model examples/imaging-pipeline.toml linux-6.18 win11     prediction per run, side by side\n",
    "  osgauge model examples/imaging-pipeline.toml run.json --export-html m.html\n",
    "  osgauge model examples/imaging-pipeline.toml --export-html m.html  no runs: the newest stored run\n",
    "  osgauge model examples/thesis-2009.toml                            the thesis's own published inputs\n",
    "  osgauge model validate examples/imaging-pipeline.toml              run the synthetic app, compare\n",
    "  osgauge model validate examples/audio-workstation.toml --export-json v.json\n",
    "  osgauge model validate examples/imaging-pipeline.toml --inputs linux-6.18   also predict from a run\n",
    "  osgauge model validate examples/memory-bound-check.toml          memory traffic: the CPU floor and range\n",
    "  osgauge model check examples/real-nginx-static.toml linux-6.18    a real application vs a stored run\n",
    "  osgauge model check examples/real-iperf3-to-disk.toml --measure   … vs a fresh standard-preset run\n",
    "  osgauge model check examples/real-nginx-static.toml --measure --rounds 3   3 interleaved rounds, median\n",
    "  osgauge model check examples/real-nginx-static.toml --measure --quick     inputs at 5 runs × 100 ms\n",
    "\n",
    "The examples' profiles are built in: a path examples/NAME.toml that does not exist here reads the\n",
    "built-in copy (a file that exists always wins), so these run from any directory.\n",
    "\n",
    "The model (operational laws): per unit, demand D_r on each resource (CPU, memory bandwidth, disk,\n",
    "network, display) from the profile × the per-MB costs measured in a run; S_r = D_r / C_r;\n",
    "U_r = F_r + X·S_r; X_max = min (1 − F_r)/S_r. Inputs come from the mem, proc, net, fs and frame\n",
    "suites (`src/appmodel/inputs.rs` names the benchmark and metric of each); a missing one is listed\n",
    "and the maximum rate is then an upper bound. A core that copies is a busy core: the application's\n",
    "CPU per unit is never below its memory traffic at one core's copy rate (mem/bandwidth_1t; the\n",
    "part in app_mem_triad_mb at its triad rate), and with every core copying at once it grows to its\n",
    "share of mem/bandwidth_all (shown as a range). Exit codes: 0 ok; 2 bad profile or usage; 1 failure.\n",
    "\n",
    "`model validate` runs a synthetic application doing the profile's per-unit work (loopback TCP,\n",
    "a temp file, memory copies through rings of 4 × the last-level cache, compute, frame copies,\n",
    "a pipe ping-pong for the context switches) at rising rates and flat out, and compares it with\n",
    "a prediction from fresh probes; --export-json/--export-markdown/--export-html write the\n",
    "prediction, every step and the verdict. Exit codes of validate: 0 when the maximum rate and the\n",
    "CPU per unit agree within 15 %, or when the machine was shared (\"not judged\"); 1 when a quiet\n",
    "machine's measurement disagrees (the verdict names the law or input that is off) or on failure;\n",
    "2 bad profile or usage; 130/143 interrupted.",
);

pub fn dispatch(a: ModelArgs) -> Result<i32, CliError> {
    if a.profile != "check" && (a.measure || a.rounds.is_some() || a.quick) {
        return Err(CliError::Usage(
            "--measure/--rounds/--quick: only with `model check`".into(),
        ));
    }
    if a.profile == "validate" {
        return validate(a);
    }
    if a.profile == "check" {
        return check(a);
    }
    if a.inputs.is_some() {
        return Err(CliError::Usage(
            "--inputs: only with `model validate` (give runs as positional arguments otherwise)"
                .into(),
        ));
    }
    check_exports(&a)?;
    let profile = Profile::load(Path::new(&a.profile)).map_err(|e| CliError::Usage(e.0))?;
    let mut runs_given = a.runs.clone();
    if runs_given.is_empty() && profile.inputs.is_none() {
        // No runs and no published figures: the newest complete stored run, said so.
        let Some(newest) = a.store.newest_complete()? else {
            return Err(CliError::Usage(format!(
                "{}: no runs given, the profile names no published figures (app.inputs), and the store holds no complete run: run `osgauge run` first, or give runs by label, id or JSON file",
                a.profile
            )));
        };
        crate::errln!(
            "note: no runs given: predicting on the newest complete stored run {}{} (started {})",
            crate::store::short_id(&newest.run_id),
            newest.label.map_or(String::new(), |l| format!(" \"{l}\"")),
            newest.started
        );
        runs_given.push(newest.run_id);
    }
    let analysis = if let (true, Some(src)) = (runs_given.is_empty(), &profile.inputs) {
        let pubd = published::load(src).map_err(|e| CliError::Usage(e.0))?;
        let (ins, source, checks) = appmodel::from_published(pubd);
        appmodel::analyse(&profile, ins, Some((source, checks)))
    } else {
        let runs = load_runs(&runs_given, &a.store)?;
        let ins = runs
            .iter()
            .map(|(n, r)| appmodel::inputs::from_record(n, r))
            .collect();
        appmodel::analyse(&profile, ins, None)
    };
    crate::out!("{}", appmodel::render::text(&analysis));
    let mut outs: Vec<crate::export::Output> = Vec::new();
    if let Some(p) = &a.export_json {
        outs.push(("--export-json", p, appmodel::render::json(&analysis)));
    }
    if let Some(p) = &a.export_markdown {
        outs.push((
            "--export-markdown",
            p,
            Ok(appmodel::render::markdown(&analysis)),
        ));
    }
    if let Some(p) = &a.export_html {
        outs.push((
            "--export-html",
            p,
            Ok(crate::report::appmodel::page(&analysis)),
        ));
    }
    crate::export::write_each(outs)?;
    Ok(EXIT_OK)
}

/// `osgauge model validate <PROFILE>`: the usage checked before anything runs, then the run, its
/// exports, and the exit status of its verdict.
fn validate(a: ModelArgs) -> Result<i32, CliError> {
    let [path] = a.runs.as_slice() else {
        return Err(CliError::Usage(
            "usage: osgauge model validate <PROFILE>".into(),
        ));
    };
    // The judged prediction's inputs: the run given, else the newest complete stored run.
    let key = match &a.inputs {
        Some(k) => Some(k.clone()),
        None => a.store.newest_complete()?.map(|n| {
            crate::errln!(
                "note: predicting from the newest complete stored run {}{}",
                crate::store::short_id(&n.run_id),
                n.label.map_or(String::new(), |l| format!(" \"{l}\""))
            );
            n.run_id
        }),
    };
    let stored = match &key {
        Some(k) => {
            let runs = load_runs(std::slice::from_ref(k), &a.store)?;
            runs.first()
                .map(|(n, r)| appmodel::inputs::from_record(n, r))
        }
        None => None,
    };
    let path = Path::new(path);
    let p = Profile::load(path).map_err(|e| CliError::Usage(e.0))?;
    let step_s = a.step_s.unwrap_or(2.0);
    if !(0.2..=60.0).contains(&step_s) {
        return Err(CliError::Usage("--step-s: from 0.2 to 60 seconds".into()));
    }
    if let Some(m) = a.max_rate
        && !(m.is_finite() && m > 0.0)
    {
        return Err(CliError::Usage("--max-rate: a rate above 0".into()));
    }
    check_exports(&a)?;
    match validate::run(p, path, a.max_rate, step_s, stored) {
        Ok(v) => {
            let code = exit_code(&v.verdict);
            write_validation(&v, code, &a)?;
            Ok(code)
        }
        Err(ValidateError::Interrupted) => {
            crate::errln!("osgauge: {}", ValidateError::Interrupted);
            Ok(crate::platform::interrupt_exit_code().unwrap_or(EXIT_INTERRUPTED))
        }
        Err(e @ ValidateError::Failed(_)) => Err(CliError::Other(e.into())),
    }
}

/// `osgauge model check <PROFILE> [RUN]`: the real application the profile names, predicted
/// from a stored run (RUN, else the newest complete one) or, with --measure, from a fresh
/// standard-preset run of the benchmarks the profile reads. Exit 0 when every counted check
/// agrees (or the machine was shared: not judged), 1 when a quiet machine's counted check
/// disagrees or on failure, 4 when the application is not installed here (NOT RUN).
fn check(a: ModelArgs) -> Result<i32, CliError> {
    let (path, run) = match a.runs.as_slice() {
        [p] => (p, None),
        [p, r] if !a.measure => (p, Some(r.clone())),
        _ => {
            return Err(CliError::Usage(
                "usage: osgauge model check <PROFILE> [RUN | --measure]".into(),
            ));
        }
    };
    if a.inputs.is_some() || a.max_rate.is_some() {
        return Err(CliError::Usage(
            "--inputs/--max-rate: only with `model validate` (`model check` takes the run as an argument)".into(),
        ));
    }
    if let Some(s) = a.step_s
        && !(0.5..=60.0).contains(&s)
    {
        return Err(CliError::Usage("--step-s: from 0.5 to 60 seconds".into()));
    }
    let rounds = a.rounds.unwrap_or(1);
    if !(1..=20).contains(&rounds) {
        return Err(CliError::Usage("--rounds: from 1 to 20".into()));
    }
    if a.quick && !a.measure {
        return Err(CliError::Usage(
            "--quick: only with --measure (it sets how the fresh inputs are measured)".into(),
        ));
    }
    if rounds > 1 && !a.measure {
        return Err(CliError::Usage(
            "--rounds: only with --measure (each round measures the inputs afresh, then runs the application; a stored run cannot be interleaved)".into(),
        ));
    }
    let path = Path::new(path);
    let p = Profile::load(path).map_err(|e| CliError::Usage(e.0))?;
    let kind =
        appmodel::check::kind_of(&p).map_err(|e| CliError::Usage(format!("{}: {e}", a.profile)))?;
    if let Err(why) = kind.available() {
        crate::outln!("model check {}: NOT RUN: {why}", kind.name());
        return Ok(super::EXIT_INCOMPLETE);
    }
    check_exports(&a)?;
    if rounds > 1 {
        return check_rounds(&a, &p, path, kind, rounds);
    }
    let inputs = if a.measure {
        measure_inputs(&p, InputsRun::of(a.quick))?
    } else {
        let key = match run {
            Some(r) => r,
            None => {
                let Some(newest) = a.store.newest_complete()? else {
                    return Err(CliError::Usage(
                        "model check: no run given and the store holds no complete run: give a run, or --measure".into(),
                    ));
                };
                crate::errln!(
                    "note: no run given: predicting from the newest complete stored run {}{}",
                    crate::store::short_id(&newest.run_id),
                    newest.label.map_or(String::new(), |l| format!(" \"{l}\""))
                );
                newest.run_id
            }
        };
        let runs = load_runs(std::slice::from_ref(&key), &a.store)?;
        let (n, r) = runs
            .first()
            .ok_or_else(|| CliError::Usage(format!("no run {key}")))?;
        appmodel::inputs::from_record(n, r)
    };
    match appmodel::check::run(&p, path, inputs, a.step_s) {
        Ok(r) => {
            let code = if r.disagrees() { EXIT_WARN } else { EXIT_OK };
            if let Some(f) = &a.export_json {
                crate::export::write_each(vec![(
                    "--export-json",
                    f,
                    appmodel::check::json(&r, code),
                )])
                .map_err(CliError::Other)?;
            }
            Ok(code)
        }
        Err(appmodel::check::CheckError::NotRun(why)) => {
            crate::outln!("model check {}: NOT RUN: {why}", kind.name());
            Ok(super::EXIT_INCOMPLETE)
        }
        Err(e) => Err(CliError::Other(e.into())),
    }
}

/// `model check --measure --rounds N`: N interleaved rounds (inputs measured, then the
/// application), judged on the median of the rounds' deviations.
fn check_rounds(
    a: &ModelArgs,
    p: &Profile,
    path: &Path,
    kind: appmodel::check::apps::Kind,
    rounds: u32,
) -> Result<i32, CliError> {
    let mut reports = Vec::new();
    for i in 1..=rounds {
        crate::outln!(
            "\n=== round {i} of {rounds}: the inputs measured afresh, then the application ==="
        );
        let inputs = measure_inputs(p, InputsRun::of(a.quick))?;
        match appmodel::check::run(p, path, inputs, a.step_s) {
            Ok(r) => reports.push(r),
            Err(appmodel::check::CheckError::NotRun(why)) => {
                crate::outln!("model check {}: NOT RUN: {why}", kind.name());
                return Ok(super::EXIT_INCOMPLETE);
            }
            Err(e) => return Err(CliError::Other(e.into())),
        }
    }
    let per: Vec<(bool, &[appmodel::check::LawCheck])> = reports
        .iter()
        .map(|r| (r.judged, r.checks.as_slice()))
        .collect();
    let s = appmodel::check::rounds_summary(&per);
    crate::outln!("\n{} interleaved rounds:", s.rounds);
    for l in &s.laws {
        crate::outln!(
            "  {}: {}",
            l.law,
            if l.deviations.is_empty() {
                "not judged in any round".to_string()
            } else {
                format!(
                    "median {:+.1} % (rounds: {})",
                    l.median.unwrap_or(0.0) * 100.0,
                    l.deviations
                        .iter()
                        .map(|d| format!("{:+.1} %", d * 100.0))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
    }
    crate::outln!("{}", s.verdict);
    let code = if s.disagrees() { EXIT_WARN } else { EXIT_OK };
    if let Some(f) = &a.export_json {
        crate::export::write_each(vec![(
            "--export-json",
            f,
            appmodel::check::rounds_json(&reports, &s, code),
        )])
        .map_err(CliError::Other)?;
    }
    Ok(code)
}

/// How `check --measure` runs its child `osgauge micro`: the standard preset's run count and
/// time (the child's defaults), or the quick preset's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputsRun {
    Standard,
    Quick,
}

impl InputsRun {
    fn of(quick: bool) -> Self {
        if quick { Self::Quick } else { Self::Standard }
    }

    /// The child's extra arguments (none: micro's defaults are the standard preset's).
    fn args(self) -> &'static [&'static str] {
        match self {
            Self::Standard => &[],
            Self::Quick => &["--runs", "5", "--run-time", "100ms"],
        }
    }

    /// How the inputs are named in the output and the JSON (`inputs`).
    fn source(self) -> &'static str {
        match self {
            Self::Standard => "fresh standard-preset run",
            Self::Quick => "fresh quick run (5 runs × 100 ms)",
        }
    }

    /// What the progress line says about the child run.
    fn said(self) -> &'static str {
        match self {
            Self::Standard => "standard preset, not stored",
            Self::Quick => "5 runs × 100 ms per benchmark, not stored",
        }
    }
}

/// A fresh run of exactly the benchmarks the profile reads (a child `osgauge micro`, not
/// stored), as inputs.
fn measure_inputs(p: &Profile, how: InputsRun) -> Result<appmodel::Inputs, CliError> {
    let empty = appmodel::Inputs::new("none", "");
    let mut probe = empty.clone();
    p.apply_to(&mut probe);
    let Some(cmd) = appmodel::predict(p, &probe).to_measure else {
        return Err(CliError::Usage(
            "--measure: the profile reads no benchmark".into(),
        ));
    };
    let dir = crate::tempfiles::dir("checkinputs").map_err(|e| CliError::Other(e.into()))?;
    let json = dir.path().join("inputs.json");
    let args: Vec<&str> = cmd
        .split_whitespace()
        .skip(1)
        .take_while(|w| *w != "--label")
        .collect();
    crate::errln!(
        "measuring the inputs: {} ({}) …",
        args.join(" "),
        how.said()
    );
    let exe = std::env::current_exe().map_err(|e| CliError::Other(e.into()))?;
    let st = std::process::Command::new(exe)
        .args(&args)
        .args(how.args())
        .args([
            "--label",
            "model-check-inputs",
            "--no-store",
            "-q",
            "--export-json",
        ])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| CliError::Other(e.into()))?;
    if !json.is_file() {
        return Err(CliError::Other(anyhow::anyhow!(
            "the input run failed ({st}) and wrote no record"
        )));
    }
    let recs = crate::store::read_records(&json).map_err(CliError::Other)?;
    let r = recs
        .first()
        .ok_or_else(|| CliError::Other(anyhow::anyhow!("the input run wrote no record")))?;
    Ok(appmodel::inputs::from_record(how.source(), r))
}

/// Every export asked for can be written, each to a file of its own; when one is `-`, standard
/// output carries it alone from now on.
fn check_exports(a: &ModelArgs) -> Result<(), CliError> {
    crate::export::check_targets(&[
        ("--export-json", a.export_json.as_deref()),
        ("--export-markdown", a.export_markdown.as_deref()),
        ("--export-html", a.export_html.as_deref()),
    ])
    .map_err(CliError::Usage)
}

/// 0 when the verdict agrees or the machine was shared (not judged); 1 when a quiet machine's
/// measurement disagrees.
fn exit_code(v: &report::Verdict) -> i32 {
    if v.disagrees() { EXIT_WARN } else { EXIT_OK }
}

/// Every export asked for, each on its own (one failure does not stop the others).
fn write_validation(v: &report::Validation, code: i32, a: &ModelArgs) -> Result<(), CliError> {
    let mut outs: Vec<crate::export::Output> = Vec::new();
    if let Some(p) = &a.export_json {
        outs.push(("--export-json", p, report::json(v, code)));
    }
    if let Some(p) = &a.export_markdown {
        outs.push(("--export-markdown", p, Ok(report::markdown(v, code))));
    }
    if let Some(p) = &a.export_html {
        outs.push((
            "--export-html",
            p,
            Ok(crate::report::appmodel::validate_page(v, code)),
        ));
    }
    crate::export::write_each(outs).map_err(CliError::Other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appmodel::validate::report::judge;

    #[test]
    fn quick_inputs_run_at_the_quick_presets_count_and_time_and_say_so() {
        assert_eq!(InputsRun::of(false), InputsRun::Standard);
        assert!(InputsRun::Standard.args().is_empty());
        assert_eq!(
            InputsRun::of(true).args(),
            ["--runs", "5", "--run-time", "100ms"]
        );
        assert_ne!(InputsRun::Quick.source(), InputsRun::Standard.source());
        assert!(InputsRun::Quick.source().contains("5 runs × 100 ms"));
        assert!(InputsRun::Quick.said().contains("5 runs × 100 ms"));
    }

    #[test]
    fn validate_exits_1_only_when_a_quiet_machine_disagrees() {
        let agrees = judge(false, 100.0, 110.0, true, "cpu", "", 0.95);
        assert_eq!(exit_code(&agrees), EXIT_OK);
        let disagrees = judge(false, 100.0, 170.0, true, "memory", "", 0.5);
        assert_eq!(exit_code(&disagrees), EXIT_WARN);
        assert_eq!(EXIT_WARN, 1);
        let shared = judge(true, 100.0, 170.0, false, "memory", "", 0.5);
        assert_eq!(exit_code(&shared), EXIT_OK);
    }
}
