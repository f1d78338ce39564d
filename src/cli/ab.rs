//! `osgauge ab` (two settings of one machine, alternated round by round, judged on paired
//! differences) and `osgauge calibrate` (repeated invocations that teach `compare` this
//! machine's between-invocation noise).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;

use super::{CliError, EXIT_INTERRUPTED, EXIT_OK, EXIT_REGRESSION, RunOpts};
use crate::record::{AbArm, RunRecord, SwitchLog};

/// Output of a switch or read-back command kept in the record, characters.
const OUTPUT_MAX: usize = 2000;

/// `osgauge ab`.
#[derive(Args, Debug)]
pub struct AbArgs {
    /// The command that puts the machine into setting A (run by `sh -c`; `cmd /C` on Windows)
    #[arg(long = "a", value_name = "CMD")]
    pub a: String,
    /// The command that puts the machine into setting B
    #[arg(long = "b", value_name = "CMD")]
    pub b: String,
    /// A command that prints the setting as it is (run after every switch; its output is kept
    /// in the record as the read-back), e.g. 'sysctl -n net.core.rmem_max'
    #[arg(long, value_name = "CMD")]
    pub read: Option<String>,
    /// The command that returns the machine to its starting setting, run on every way out (end,
    /// error, Ctrl-C, SIGTERM) [default: the --a command: A is the starting setting]
    #[arg(long, value_name = "CMD")]
    pub restore: Option<String>,
    /// Exit with code 3 when B is significantly worse than A by at least X on some metric
    #[arg(long, value_parser = super::results::parse_percent, value_name = "X%")]
    pub fail_on_regression: Option<f64>,
    /// Half-width of the noise band: a difference inside ±X is never called better/worse
    #[arg(long, default_value = "2%", value_parser = super::results::parse_percent, value_name = "X%")]
    pub noise: f64,
    /// Suite names or benchmark ids to measure in both settings
    #[arg(required = true, value_name = "SUITE|ID")]
    pub select: Vec<String>,
    #[command(flatten)]
    pub opts: RunOpts,
}

/// `osgauge calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Invocations to run, one after the other (each a separate osgauge process)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=50))]
    pub invocations: u32,
    /// Pause between invocations, so they sample the machine's drift over a longer time, e.g. 30s
    #[arg(long, value_parser = super::parse_timeout, value_name = "DURATION")]
    pub pause: Option<Duration>,
    /// The label the invocations are stored under
    #[arg(long, default_value = "calibration")]
    pub label: String,
    /// The osgauge command to repeat and its arguments, e.g. `run`, `micro cpu proc --runs 10`
    /// [default: run]
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// Run one switch/read command; its exit status and output (cut).
fn shell(line: &str) -> Result<(Option<i32>, String), String> {
    let out = crate::platform::shell_command(line)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run '{line}': {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let text = crate::output::display_text(text.trim(), OUTPUT_MAX);
    Ok((out.status.code(), text))
}

/// Runs the restore command when dropped (every way out of `osgauge ab`, a panic included),
/// unless it already ran.
struct Restore {
    cmd: String,
    done: bool,
}

impl Restore {
    fn run(&mut self) -> Result<(), String> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        match shell(&self.cmd)? {
            (Some(0), _) => Ok(()),
            (status, out) => Err(format!(
                "the restore command '{}' failed ({}): {out}",
                self.cmd,
                status_text(status)
            )),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = self.run() {
            crate::errln!("osgauge: error: {e}");
        }
    }
}

pub fn run_ab(a: AbArgs) -> Result<i32, CliError> {
    let (plan, labels, runs) = ab_plan(&a)?;
    let opts = &a.opts;
    let restore_cmd = a.restore.clone().unwrap_or_else(|| a.a.clone());
    let start_state = match &a.read {
        Some(r) => Some(shell(r).map_err(|e| CliError::Other(anyhow::anyhow!(e)))?.1),
        None => None,
    };
    // One sink per arm's record (a sink keeps one run).
    let mut sinks = [
        super::sink::StoreSink::open(&opts.store, opts.quiet)?,
        super::sink::StoreSink::open(&opts.store, opts.quiet)?,
    ];
    if !opts.quiet {
        crate::errln!(
            "osgauge ab: {} benchmark(s) and the drift reference, {runs} round(s); each round A and B in random order, each switched by its command first; restore: '{restore_cmd}'",
            plan.benchmarks.len() - 1
        );
    }
    let mut restore = Restore {
        cmd: restore_cmd.clone(),
        done: false,
    };
    let cancel = super::interrupt_flag();
    let mut switcher = Switcher {
        commands: [a.a.clone(), a.b.clone()],
        read: a.read.as_deref(),
        quiet: opts.quiet,
        logs: [Vec::new(), Vec::new()],
    };
    let outcome = crate::runner::execute_arms(
        plan,
        &labels,
        &mut |arm, round| switcher.switch(arm, round),
        cancel,
        &mut |_| {},
    );
    let mut records = restore_after(outcome, &mut restore, a.read.as_deref(), start_state)?;
    if cancel.load(Ordering::Relaxed) {
        crate::errln!("osgauge ab: interrupted; the machine was restored and nothing was stored");
        return Ok(crate::platform::interrupt_exit_code().unwrap_or(EXIT_INTERRUPTED));
    }
    let pair = uuid::Uuid::now_v7().to_string();
    for (arm, r) in records.iter_mut().enumerate() {
        r.config.ab = Some(AbArm {
            pair: pair.clone(),
            arm: ["A", "B"][arm].into(),
            switch: switcher.commands[arm].clone(),
            read: a.read.clone(),
            restore: restore_cmd.clone(),
            switches: std::mem::take(&mut switcher.logs[arm]),
        });
    }
    report(&a, &records, &mut sinks)
}

/// Setup of `osgauge ab`: the options checked (what does not apply to it refused) and the plan
/// of the selected benchmarks, with the arms' labels (LABEL:A, LABEL:B) and the rounds to run.
fn ab_plan(a: &AbArgs) -> Result<(crate::runner::Plan, [Option<String>; 2], u32), CliError> {
    let opts = &a.opts;
    opts.check_outputs()?;
    if opts.store.store_required {
        return Err(CliError::Usage(
            "ab stores its two records only when both arms have finished (nothing half-stored), so --store-required has no measuring to stop: leave it out"
                .into(),
        ));
    }
    if opts.export_json.is_some() || opts.export_csv.is_some() || opts.export_markdown.is_some() {
        return Err(CliError::Usage(
            "ab stores the two arms' records; export them with `osgauge compare LABEL:A LABEL:B --export-json …`"
                .into(),
        ));
    }
    let benchmarks = super::select_with(&a.select, &Default::default()).map_err(CliError::Usage)?;
    let (runs, _, adaptive) = opts.runs_plan(10)?;
    if adaptive.is_some() {
        return Err(CliError::Usage(
            "ab pairs the arms' runs round by round: --ci-width does not apply (use --runs)".into(),
        ));
    }
    let run_time = opts.run_time.unwrap_or(Duration::from_millis(100));
    let planned = run_time.as_secs_f64() * f64::from(runs + opts.warmup);
    let timeout = opts
        .timeout
        .unwrap_or(Duration::from_secs_f64((planned * 10.0).max(20.0)));
    let label = opts.label.clone().unwrap_or_else(|| "ab".into());
    let labels = [Some(format!("{label}:A")), Some(format!("{label}:B"))];
    // The arms carry the labels (LABEL:A, LABEL:B); the plan none.
    let mut plan = opts.plan(
        benchmarks,
        "ab",
        a.select.clone(),
        (runs, run_time, timeout),
        None,
    )?;
    plan.label = None;
    Ok((plan, labels, runs))
}

/// `exit N`, or `ended by a signal` when a command has no exit code.
fn status_text(status: Option<i32>) -> String {
    status.map_or("ended by a signal".to_string(), |c| format!("exit {c}"))
}

/// Why the switch into `arm` (its command `cmd`) failed: its status and output, if any.
fn switch_failed(arm: usize, cmd: &str, status: Option<i32>, output: &str) -> String {
    format!(
        "the switch into {} ('{cmd}') failed ({}){}",
        ["A", "B"][arm],
        status_text(status),
        if output.is_empty() {
            String::new()
        } else {
            format!(": {output}")
        }
    )
}

/// The switches of `osgauge ab`: puts the machine into an arm's setting by its command, reads
/// the setting back (`read`), says so (unless `quiet`) and logs each switch per arm.
struct Switcher<'a> {
    commands: [String; 2],
    read: Option<&'a str>,
    quiet: bool,
    logs: [Vec<SwitchLog>; 2],
}

impl Switcher<'_> {
    /// Switch into `arm` before its runs of `round`; Err when the command failed.
    fn switch(&mut self, arm: usize, round: u32) -> Result<(), String> {
        let (status, output) = shell(&self.commands[arm])?;
        let read_back = match self.read {
            Some(r) => Some(shell(r)?.1),
            None => None,
        };
        if !self.quiet {
            crate::errln!(
                "osgauge ab: round {round}: {}{}",
                ["A", "B"][arm],
                read_back
                    .as_deref()
                    .map(|r| format!(" (read back: {})", r.replace('\n', " ")))
                    .unwrap_or_default()
            );
        }
        self.logs[arm].push(SwitchLog {
            round,
            status,
            output: output.clone(),
            read_back,
        });
        if status == Some(0) {
            Ok(())
        } else {
            Err(switch_failed(arm, &self.commands[arm], status, &output))
        }
    }
}

/// After the rounds: the machine restored, the setting read back (`read`) and checked against
/// `start_state`; the arms' records, or the error that stopped the run (nothing stored).
fn restore_after(
    outcome: Result<Vec<RunRecord>, (String, Vec<RunRecord>)>,
    restore: &mut Restore,
    read: Option<&str>,
    start_state: Option<String>,
) -> Result<Vec<RunRecord>, CliError> {
    let restored = restore.run();
    let end_state = match read {
        Some(r) => shell(r).ok().map(|x| x.1),
        None => None,
    };
    let records = match outcome {
        Ok(r) => r,
        Err((e, _)) => {
            if let Err(r) = restored {
                crate::errln!("osgauge: error: {r}");
            }
            return Err(CliError::Other(anyhow::anyhow!(
                "{e}; the run stopped and nothing of it was stored"
            )));
        }
    };
    restored.map_err(|e| CliError::Other(anyhow::anyhow!(e)))?;
    if let (Some(s), Some(e)) = (&start_state, &end_state)
        && s != e
    {
        crate::errln!(
            "osgauge: warning: the setting read back after the restore ({e}) differs from the one before the run ({s})"
        );
    }
    Ok(records)
}

/// The arms compared (paired by round) and printed, their records stored; the exit code: a
/// regression past --fail-on-regression, else whether both were stored.
fn report(
    a: &AbArgs,
    records: &[RunRecord],
    sinks: &mut [super::sink::StoreSink; 2],
) -> Result<i32, CliError> {
    let groups: Vec<(String, Vec<RunRecord>)> = records
        .iter()
        .map(|r| (r.label.clone().unwrap_or_default(), vec![r.clone()]))
        .collect();
    let cmp = crate::compare::compare_groups(
        &groups,
        &crate::compare::Options {
            noise: a.noise,
            paired: true,
            ..Default::default()
        },
    );
    crate::out!("{}", crate::compare::render::text(&cmp));
    let mut stored = true;
    for (sink, r) in sinks.iter_mut().zip(records) {
        stored &= sink.finish(r);
    }
    if let Some(t) = a.fail_on_regression {
        let regs = cmp.regressions(t);
        if !regs.is_empty() {
            for (r, j, _) in regs {
                crate::errln!("  {}", crate::compare::render::regression_text(&cmp, r, j));
            }
            return Ok(EXIT_REGRESSION);
        }
    }
    Ok(if stored { EXIT_OK } else { super::EXIT_WARN })
}

/// `osgauge calibrate`: the command `invocations` times as separate processes, stored under
/// one label, so that `compare` learns this machine's between-invocation noise.
pub fn run_calibrate(a: CalibrateArgs) -> Result<i32, CliError> {
    let mut command = if a.command.is_empty() {
        vec!["run".to_string()]
    } else {
        a.command.clone()
    };
    if !matches!(
        command[0].as_str(),
        "run" | "micro" | "interactivity" | "latency" | "noise" | "policy"
    ) {
        return Err(CliError::Usage(format!(
            "calibrate repeats a measuring command (run, micro, interactivity, latency, noise, policy), not '{}'",
            command[0]
        )));
    }
    if command
        .iter()
        .any(|x| x == "--label" || x.starts_with("--label="))
    {
        return Err(CliError::Usage(
            "give the label to calibrate (--label before the command), not to the command".into(),
        ));
    }
    if command.iter().any(|x| x == "--no-store") {
        return Err(CliError::Usage(
            "calibrate keeps its invocations in the store: --no-store defeats it".into(),
        ));
    }
    command.extend(["--label".to_string(), a.label.clone()]);
    let exe: PathBuf = std::env::current_exe()
        .map_err(|e| CliError::Other(anyhow::anyhow!("cannot find this program: {e}")))?;
    let cancel = super::interrupt_flag();
    for i in 1..=a.invocations {
        crate::errln!(
            "osgauge calibrate: invocation {i} of {}: osgauge {}",
            a.invocations,
            command.join(" ")
        );
        let status = std::process::Command::new(&exe)
            .args(&command)
            .status()
            .map_err(|e| CliError::Other(anyhow::anyhow!("cannot start osgauge: {e}")))?;
        if cancel.load(Ordering::Relaxed) || status.code() == Some(EXIT_INTERRUPTED) {
            crate::errln!(
                "osgauge calibrate: interrupted after {} invocation(s)",
                i - 1
            );
            return Ok(EXIT_INTERRUPTED);
        }
        if !status.success() {
            return Err(CliError::Other(anyhow::anyhow!(
                "invocation {i} failed ({status}); the ones before it are stored"
            )));
        }
        if let Some(p) = a.pause.filter(|_| i < a.invocations) {
            std::thread::sleep(p);
        }
    }
    crate::errln!(
        "osgauge calibrate: {} invocations stored under the label '{}': `osgauge compare` now knows this machine's noise between invocations for these benchmarks",
        a.invocations,
        a.label
    );
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_switch_says_which_arm_its_command_status_and_output() {
        assert_eq!(
            switch_failed(1, "sysctl -w x=2", Some(1), "permission denied"),
            "the switch into B ('sysctl -w x=2') failed (exit 1): permission denied"
        );
        assert_eq!(
            switch_failed(0, "true", None, ""),
            "the switch into A ('true') failed (ended by a signal)"
        );
        assert_eq!(status_text(Some(0)), "exit 0");
    }
}
