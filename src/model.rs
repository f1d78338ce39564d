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
    /// What was asked for and what was actually applied (read back), e.g. pinning. A fact read
    /// back while running is here only when every measured run reported the same value (or the
    /// benchmark derived it from all runs, e.g. the latency `curve`); each run's own facts are in
    /// `run_facts`.
    pub params: serde_json::Map<String, serde_json::Value>,
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
    fn error_kinds_serialise_lowercase() {
        let e = BenchError::unsupported("no such thing on this OS");
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(j["kind"], "unsupported");
        assert_eq!(e.to_string(), "unsupported: no such thing on this OS");
    }
}
