//! The result record: the contract between measuring and everything after it (terminal tables,
//! exports, store, comparison, reports). One JSON document per run, schema `osgauge.run/1`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::stats::{AcrossRuns, Summary};
use crate::system::{Environment, Machine};
use crate::units::{Better, Unit};

pub const SCHEMA: &str = "osgauge.run/1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema: String,
    pub run_id: Uuid,
    pub label: Option<String>,
    /// The user's tags (`--tag KEY=VALUE`, e.g. a kernel git revision or a build id): what the
    /// fleet view filters (`--where`) and orders (`--order-by`) runs by. Absent when none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tags: std::collections::BTreeMap<String, String>,
    pub started: DateTime<Utc>,
    pub finished: Option<DateTime<Utc>>,
    /// False when the run was interrupted before every planned benchmark finished.
    pub complete: bool,
    pub tool: Tool,
    pub machine: Machine,
    pub environment: Environments,
    /// The measuring harness's own costs, measured at the start of the run.
    pub timing: TimingCalibration,
    pub config: Config,
    pub benchmarks: Vec<BenchmarkResult>,
    /// The drift reference (`reference/drift`), run in every round beside the benchmarks: how
    /// fast the machine itself was while this run measured. Absent in records made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<BenchmarkResult>,
    /// Run-wide warnings (noisy machine, few runs, …), in plain language.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
    pub git: Option<String>,
    /// Compiler profile of this binary: "release" or "debug" (debug timings are not comparable).
    pub profile: String,
    pub target: String,
}

impl Tool {
    pub fn current() -> Tool {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            git: option_env!("OSGAUGE_GIT").map(str::to_string),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_string(),
            target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        }
    }
}

/// The environment sampled when the run started and when it finished.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Environments {
    pub start: Environment,
    pub end: Option<Environment>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimingCalibration {
    /// The clock every benchmark reads (monotonic, nanosecond units).
    pub clock: String,
    /// Resolution the OS reports for that clock, ns (None where the OS does not say).
    pub reported_resolution_ns: Option<f64>,
    /// Smallest non-zero step seen between back-to-back reads, ns.
    pub observed_resolution_ns: f64,
    /// Median cost of one clock read (back-to-back reads), ns. Subtracted once per timed batch.
    pub timer_overhead_ns: f64,
    /// Median cost of one empty loop iteration, ns. Subtracted per iteration where a benchmark says so.
    pub loop_overhead_ns: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Config {
    /// "quick", "standard" or "custom" (a `micro` invocation).
    pub preset: String,
    /// The selection as given (suite names and/or benchmark ids).
    pub selection: Vec<String>,
    pub runs: u32,
    pub warmup_runs: u32,
    /// Measuring time aimed for in each run of a micro-benchmark, ms.
    pub run_time_ms: u64,
    /// Hard bound for each benchmark (all its runs), ms.
    pub timeout_ms: u64,
    pub bootstrap_seed: u64,
    pub command_line: Vec<String>,
    /// Adaptive runs (`--ci-width`): `runs` is then the minimum, and each benchmark runs on
    /// until its headline figure's CI is narrow enough or `max_runs` is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveConfig>,
    /// How the runs were ordered: in rounds, each a fresh random order of the benchmarks (and
    /// the drift reference), from `seed`; absent in records made before rounds existed (each
    /// benchmark's runs then ran back to back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    /// One arm of an `osgauge ab` run: the machine was switched into this arm's setting before
    /// each of its turns; the other arm's record has the same `pair`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbArm>,
}

/// One arm of an A/B run on one machine (`osgauge ab`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AbArm {
    /// Shared by the two arms' records: their runs pair up by round.
    pub pair: String,
    /// "A" or "B".
    pub arm: String,
    /// The command that switched the machine into this arm's setting.
    pub switch: String,
    /// The command that read the setting back, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// The command that returned the machine to its starting setting at the end.
    pub restore: String,
    /// Every switch into this arm: round, exit status, output and the state read back.
    pub switches: Vec<SwitchLog>,
}

/// One switch of an A/B run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SwitchLog {
    pub round: u32,
    /// The switch command's exit code (None: ended by a signal).
    pub status: Option<i32>,
    /// Its standard output and error, cut to 2000 characters.
    pub output: String,
    /// What the read-back command printed afterwards, cut to 2000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_back: Option<String>,
}

/// The order the runs were taken in (randomized multiple interleaved trials): round 0 holds the
/// warm-up runs, rounds 1.. one measured run of every benchmark still running, in a fresh
/// random order each round. The same seed and plan give the same order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Schedule {
    /// "interleaved" (rounds) or "sequential" (each benchmark's runs back to back).
    pub order: String,
    /// Seed of the order (`--seed` repeats it).
    pub seed: u64,
    /// The benchmark ids in the order each round ran them (warm-up round first, when any).
    #[serde(default)]
    pub rounds: Vec<Vec<String>>,
    /// The drift reference's benchmark id, when it ran in every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// `--ci-width W --max-runs N`: run until the 95 % bootstrap CI of the median of the benchmark's
/// headline metric (its first declared metric with samples) has a half-width within `ci_width` of
/// the median, never fewer than `Config::runs`, at most `max_runs`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AdaptiveConfig {
    /// Target half-width of the 95 % CI, as a fraction of the median (0.05 = 5 %).
    pub ci_width: f64,
    pub max_runs: u32,
}

/// How an adaptive benchmark ended (see [`AdaptiveConfig`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AdaptiveOutcome {
    /// The metric the rule watched.
    pub metric: String,
    /// Target half-width, % of the median.
    pub target_pct: f64,
    /// Half-width of the 95 % CI at the last run, % of the median (absent when not computable:
    /// no samples, or a median of 0 with a CI around it).
    pub half_width_pct: Option<f64>,
    /// Measured runs kept.
    pub runs: u32,
    /// Whether the target was reached; false when the benchmark stopped at `max_runs`, its time
    /// bound or an error first.
    pub reached: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchmarkResult {
    /// Stable id, `suite/name`, e.g. `cpu/null_syscall`.
    pub id: String,
    pub suite: String,
    pub title: String,
    /// Settings: what was asked for and what was actually applied (read back), e.g. pinning. A
    /// value read back while running is here only when every measured run reported the same
    /// value; each run's own facts are in `run_facts`. Measured facts are in `measured`.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Facts measured while running that every run agreed on, or derived from all runs (curves,
    /// detected levels, calibrations, counts, self-checks): results, not settings
    /// ([`param_kind`]). Records before this field kept them in `params`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub measured: serde_json::Map<String, serde_json::Value>,
    pub metrics: Vec<MetricResult>,
    pub warnings: Vec<String>,
    pub error: Option<BenchError>,
    /// Wall time the benchmark took, warm-up included, s.
    pub wall_s: f64,
    /// The facts each measured run read back, in run order (`run_facts[i]` belongs to the i-th
    /// measured run). Empty in records written before per-run facts were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_facts: Vec<serde_json::Map<String, serde_json::Value>>,
    /// With `--ci-width`: how the adaptive stopping rule ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveOutcome>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricResult {
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    pub description: String,
    /// One entry per independent run.
    pub runs: Vec<RunMetric>,
    /// Across-run summary (median of per-run medians with a 95 % CI); None when no run finished.
    pub summary: Option<AcrossRuns>,
    /// Why a run could not measure this metric (e.g. "unsupported: …"), when one said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
    /// Set when some run's value was a bound, not a measurement (a ramp that ended at its last
    /// step, a curve that ended before its plateau): the summary is then a bound too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<MetricBound>,
}

/// Which side of the true value a bounded figure lies on.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BoundKind {
    /// The true value is at least the figure (e.g. a rate ramp that ran out of steps).
    AtLeast,
    /// The true value is at most the figure.
    AtMost,
}

impl BoundKind {
    /// The sign printed before a bounded figure.
    pub fn symbol(self) -> &'static str {
        match self {
            BoundKind::AtLeast => "≥",
            BoundKind::AtMost => "≤",
        }
    }
}

/// A metric whose value (in `runs` of its runs) is a bound, with why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricBound {
    pub kind: BoundKind,
    /// Why the value is a bound (the cap, sweep end or timeout that was reached).
    pub reason: String,
    /// How many of the metric's runs gave a bound (the rest were measurements).
    pub runs: u32,
}

impl MetricResult {
    /// The sign to print before the summary: "≥ " / "≤ " for a bound, "" for a measurement.
    pub fn bound_prefix(&self) -> &'static str {
        match self.bound.as_ref().map(|b| b.kind) {
            Some(BoundKind::AtLeast) => "≥ ",
            Some(BoundKind::AtMost) => "≤ ",
            None => "",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunMetric {
    pub summary: Summary,
    /// Base64 of the HDR histogram (V2 deflate serialisation) of this run's samples; values are
    /// recorded as round((value − `histogram_offset`) × `histogram_scale`), so ns metrics are
    /// kept with ps resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_scale: Option<f64>,
    /// Present when the run had samples ≤ 0 (an HDR histogram holds only positive integers): the
    /// histogram holds every sample shifted up by −offset; add the offset back when decoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_offset: Option<f64>,
    /// The round this run was taken in ([`Schedule`]); absent in records made before rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// The OS or this machine lacks the feature; the message says why.
    Unsupported,
    /// The benchmark hit its time bound; runs finished before it are kept.
    Timeout,
    /// The user interrupted the run (Ctrl-C).
    Interrupted,
    /// Anything else that went wrong.
    Failed,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Failed => "failed",
        }
    }
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for BenchError {}

impl BenchError {
    pub fn unsupported(msg: impl Into<String>) -> Self {
        BenchError {
            kind: ErrorKind::Unsupported,
            message: msg.into(),
        }
    }
    pub fn failed(msg: impl Into<String>) -> Self {
        BenchError {
            kind: ErrorKind::Failed,
            message: msg.into(),
        }
    }
    pub fn timeout(msg: impl Into<String>) -> Self {
        BenchError {
            kind: ErrorKind::Timeout,
            message: msg.into(),
        }
    }
    pub fn interrupted() -> Self {
        BenchError {
            kind: ErrorKind::Interrupted,
            message: "interrupted by the user".into(),
        }
    }
    /// An OS call failed: name the call and the OS error.
    pub fn os(call: &str, err: std::io::Error) -> Self {
        BenchError::failed(format!("{call}: {err}"))
    }
}

impl RunRecord {
    pub fn benchmark(&self, id: &str) -> Option<&BenchmarkResult> {
        self.benchmarks.iter().find(|b| b.id == id)
    }
}

impl BenchmarkResult {
    /// A setting or a measured fact by key (records before `measured` existed kept both in
    /// `params`).
    pub fn fact(&self, key: &str) -> Option<&serde_json::Value> {
        self.measured.get(key).or_else(|| self.params.get(key))
    }

    /// The settings only: `params` without the measured facts an older record kept there.
    pub fn settings(&self) -> impl Iterator<Item = (&String, &serde_json::Value)> {
        self.params
            .iter()
            .filter(|(k, _)| param_kind(k) == ParamKind::Setting)
    }

    /// Move every measured fact of `params` to `measured` (by [`param_kind`]): what the runner
    /// does to each result, and what reading an older record may do.
    pub fn separate_measured(&mut self) {
        let keys: Vec<String> = self
            .params
            .keys()
            .filter(|k| param_kind(k) == ParamKind::Measured)
            .cloned()
            .collect();
        for k in keys {
            if let Some(v) = self.params.remove(&k) {
                self.measured.insert(k, v);
            }
        }
    }
}

/// Encode samples into a base64 HDR histogram, values scaled by `scale` and rounded (≥ 1).
pub fn encode_histogram(samples: &[f64], scale: f64) -> Option<String> {
    encode_histogram_offset(samples, scale, 0.0)
}

/// The offset [`encode_histogram_offset`] needs for `samples` at `scale`: 0 when every sample
/// records as ≥ 1, else a whole number of histogram units that lifts the smallest sample to 1.
pub fn histogram_offset(samples: &[f64], scale: f64) -> f64 {
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    if !min.is_finite() || (min * scale).round() >= 1.0 {
        0.0
    } else {
        ((min * scale).round() - 1.0) / scale
    }
}

/// Histogram of `samples` recorded as round((value − offset) × scale); None if a sample is not
/// finite or records below 1 (choose the offset with [`histogram_offset`]).
pub fn encode_histogram_offset(samples: &[f64], scale: f64, offset: f64) -> Option<String> {
    use base64::Engine;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut h = Histogram::<u64>::new(3).ok()?;
    let off = (offset * scale).round();
    for &s in samples {
        if !s.is_finite() {
            return None;
        }
        let v = (s * scale).round() - off;
        if v < 1.0 {
            return None;
        }
        h.record(v as u64).ok()?;
    }
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(&h, &mut buf).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// Decode a histogram written by [`encode_histogram`].
pub fn decode_histogram(b64: &str) -> Option<hdrhistogram::Histogram<u64>> {
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}

/// The drift reference every run takes in every round (`bench/reference.rs` measures it,
/// `compare` reads it): its id and suite, and which of its figures stands for the drift of each
/// suite's metrics.
pub mod drift_reference {
    /// The reference's benchmark id.
    pub const ID: &str = "reference/drift";
    /// Its suite: never selected, never judged.
    pub const SUITE: &str = "reference";

    /// Which reference figure stands for the drift of a suite's metrics: the CPU chain for
    /// `cpu`, the memory read for `mem`, the null system call for everything else.
    pub fn family_of(suite: &str) -> &'static str {
        match suite {
            "cpu" => "cpu_loop",
            "mem" => "mem_read",
            _ => "syscall",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_round_trips_with_scale() {
        let samples: Vec<f64> = (1..=1000).map(|i| i as f64 * 0.5).collect();
        let enc = encode_histogram(&samples, 1000.0).unwrap();
        let h = decode_histogram(&enc).unwrap();
        assert_eq!(h.len(), 1000);
        // 3 significant digits: p50 of 0.5..500 ns is ~250 ns = 250_000 ps.
        let p50 = h.value_at_quantile(0.5) as f64 / 1000.0;
        assert!((p50 - 250.0).abs() / 250.0 < 0.01, "p50 {p50}");
        assert_eq!(encode_histogram(&[f64::NAN], 1.0), None);
    }

    #[test]
    fn histogram_keeps_samples_at_or_below_zero_with_an_offset() {
        let samples = [-2.5, -0.001, 0.0, 0.0002, 3.0];
        // Without an offset they cannot be recorded: no silent clamping to 1.
        assert_eq!(encode_histogram(&samples, 1000.0), None);
        let off = histogram_offset(&samples, 1000.0);
        assert!(off < -2.5 && off > -2.6, "offset {off}");
        let h = decode_histogram(&encode_histogram_offset(&samples, 1000.0, off).unwrap()).unwrap();
        assert_eq!(h.len(), samples.len() as u64);
        // Decoded back with the offset, min and max are the samples'.
        let min = h.min() as f64 / 1000.0 + off;
        let max = h.max() as f64 / 1000.0 + off;
        assert!((min - -2.5).abs() < 1e-3, "min {min}");
        assert!((max - 3.0).abs() / 3.0 < 1e-3, "max {max}");
        // Positive samples need no offset.
        assert_eq!(histogram_offset(&[0.5, 2.0], 1000.0), 0.0);
    }

    #[test]
    fn records_without_run_facts_still_load() {
        let b = BenchmarkResult {
            id: "a/b".into(),
            suite: "a".into(),
            title: String::new(),
            params: serde_json::Map::new(),
            measured: Default::default(),
            metrics: vec![],
            warnings: vec![],
            error: None,
            wall_s: 0.0,
            run_facts: vec![],
            adaptive: None,
        };
        let j = serde_json::to_value(&b).unwrap();
        assert!(j.get("run_facts").is_none());
        let back: BenchmarkResult = serde_json::from_value(j).unwrap();
        assert_eq!(back, b);
    }

    #[test]
    fn measured_facts_are_kept_apart_from_settings_and_old_records_still_read() {
        // An older record: settings and measured facts together in params, no `measured`.
        let old = serde_json::json!({"id": "mem/latency_random", "suite": "mem", "title": "",
            "params": {"pinned": 0, "pattern": "random", "curve": [{"size_bytes": 1}],
                       "work_calibration_spread": 0.01, "loadavg1_before": 0.3,
                       "load_achieved_cpu_pct": 49.0, "policy_applied": "SCHED_FIFO"},
            "metrics": [], "warnings": [], "error": null, "wall_s": 1.0});
        let mut b: BenchmarkResult = serde_json::from_value(old).unwrap();
        assert!(b.measured.is_empty());
        let settings: Vec<&str> = b.settings().map(|(k, _)| k.as_str()).collect();
        assert_eq!(settings, ["pattern", "pinned", "policy_applied"]);
        assert!(
            b.fact("curve").is_some(),
            "read from params in an old record"
        );
        // Separated as the runner does: the record keeps each kind in its own map.
        b.separate_measured();
        let mut params: Vec<&String> = b.params.keys().collect();
        params.sort();
        assert_eq!(params, ["pattern", "pinned", "policy_applied"]);
        let mut measured: Vec<&String> = b.measured.keys().collect();
        measured.sort();
        assert_eq!(
            measured,
            [
                "curve",
                "load_achieved_cpu_pct",
                "loadavg1_before",
                "work_calibration_spread"
            ]
        );
        assert!(b.fact("curve").is_some() && b.fact("pinned").is_some());
        let j = serde_json::to_value(&b).unwrap();
        assert!(j["measured"]["curve"].is_array() && j["params"].get("curve").is_none());
        assert_eq!(serde_json::from_value::<BenchmarkResult>(j).unwrap(), b);
        // Applied settings read back stay settings; observations of the run do not.
        assert_eq!(param_kind("policy_applied"), ParamKind::Setting);
        assert_eq!(param_kind("pinned_cpu"), ParamKind::Setting);
        assert_eq!(param_kind("task_cpu_off_target"), ParamKind::Measured);
        // Observed per run, never a setting: how many passes a CPU-cost window spanned (none
        // when a too-short pass was timed without the meter), where a UDP ramp started.
        for k in [
            "cpu_cost_passes_direct",
            "cpu_cost_bytes_buffered",
            "cpu_direct",
            "start_bit_s",
            "start_rule",
            "arrays_faulted_in_runs",
            "mid_page_write_share",
        ] {
            assert_eq!(param_kind(k), ParamKind::Measured, "{k}");
        }
        assert_eq!(param_kind("rx_cpu_baseline_busy_cpus"), ParamKind::Measured);
    }

    #[test]
    fn error_kinds_serialise_lowercase() {
        let e = BenchError::unsupported("no such thing on this OS");
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(j["kind"], "unsupported");
        assert_eq!(e.to_string(), "unsupported: no such thing on this OS");
    }
}

/// What a benchmark parameter is: a setting (asked for, or applied and read back) or a measured
/// fact (an observation of the run: it may differ between runs with the same settings on the
/// same machine). Only settings are compared as settings; facts are results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Setting,
    Measured,
}

/// The rule for one parameter key, explicit and in one place: a key is measured when it is named
/// in [`OBSERVED_PARAMS`] or belongs to a family of measured keys: derived curves and detected
/// levels (`curve`, `levels`, `run_levels`), anything from the work calibration
/// (`work_calibration_*`), self-checks (`*_check`, `switch_check_*`), counts and readings of the
/// run (`*_before`, `*_after`, `*_achieved*`, `*_per_round`, `*_read_bytes`, `*_write_bytes`,
/// `*_switches_run`, `*_switches_total`), notes. Every other key is a setting.
pub fn param_kind(key: &str) -> ParamKind {
    const EXACT: &[&str] = &["curve", "levels", "run_levels", "frames", "children"];
    const PREFIX: &[&str] = &[
        "work_calibration_",
        "switch_check_",
        "load_ops",
        "cpu_cost_",
    ];
    const SUFFIX: &[&str] = &[
        "_check",
        "_before",
        "_after",
        "_achieved",
        "_per_round",
        "_read_bytes",
        "_write_bytes",
        "_switches_run",
        "_switches_total",
        "_note",
        "_notes",
    ];
    if OBSERVED_PARAMS.contains(&key)
        || EXACT.contains(&key)
        || PREFIX.iter().any(|p| key.starts_with(p))
        || SUFFIX.iter().any(|x| key.ends_with(x))
        || key.contains("_achieved")
    {
        ParamKind::Measured
    } else {
        ParamKind::Setting
    }
}

/// Benchmark parameters named one by one as observations of the run, not settings (see
/// [`param_kind`] for the families matched by rule).
const OBSERVED_PARAMS: &[&str] = &[
    "loadavg1_before",
    "loadavg1_after",
    "cpu_pressure_some_pct",
    "steal_pct",
    "periods",
    "bursts",
    "load_ops",
    "target_cpu_pct",
    "memload_size_rule",
    "observed_resolution_ns",
    "reported_resolution_ns",
    // Measured by the interactivity work calibration (how, not what, was asked).
    "cpu_clock_step_ns",
    "work_loops_per_us",
    "work_calibration_spread",
    "work_calibration_cached",
    // Observed by the fs suite (what the OS and the device counter said, how long it took).
    "process_cpu_s",
    "sweep_wall_s",
    "cache_result",
    "cache_lower_bound_note",
    "os_cache_figure",
    "os_cache_figure_bytes",
    "resident_pages_before_first_pass",
    "resident_fraction_after_reread",
    "device_bytes_per_requested_byte",
    "fs_info_error",
    // Measured by the policy study (work calibrated per machine, start-up, safety notes).
    "work_units_cpu",
    "work_units_io",
    "work_bursts",
    "work_alone_ns",
    "wall_mean_ns",
    "rt_safety",
    "startup_switches",
    "sched_runtime_ns",
    // Observed by the net suite (counts, CPU readings, derived curves and series).
    "rtt_curve",
    "rtt_p99_us_by_size",
    "round_trips",
    "bytes_sent",
    "bytes_received",
    "connections",
    "peer_accepted",
    "setup_max_us",
    "time_wait_before",
    "time_wait_to_peer_before",
    "time_wait_after",
    "datagrams_sent",
    "datagrams_received",
    "send_errors",
    "duplicates",
    "reordered",
    "sender_lateness_p99_us",
    "sender_stalls",
    "jitter",
    "stall_period_s",
    "steps",
    "ramp_stopped_by",
    "tx_cpu_net_pct_all_cpus",
    "tx_cpu_baseline_busy_cpus",
    "rx_cpu_net_pct_all_cpus",
    "rx_cpu_baseline_busy_cpus",
    "rx_cpu_error",
    "bracket_bit_s",
    "start_bit_s",
    "start_rule",
    // Which run faulted the shared bandwidth arrays in (depends on the order of the rounds); what
    // a network-to-disk stream's receives turned out to be.
    "arrays_faulted_in_runs",
    "measured_bytes_relayed",
    "short_receive_share",
    "mid_page_write_share",
    // A file pass's CPU-cost window: its idle baselines and checks, or why it was not run.
    "cpu_direct",
    "cpu_buffered",
    "user_sys_resolution_ns",
    "time_wait_drain_wait_s",
    // Observed by the interactivity task and the policy study.
    "task_cpu_off_target",
    "command_switches",
];
