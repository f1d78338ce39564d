//! Value parsers and checks of the command line shared by several commands: durations, run
//! times and time bounds, CPU lists, percentages, slices and real-time policies.

use std::time::Duration;

use super::*;

/// `--policy` of a measuring thread (interactivity, latency, noise): the names of
/// [`Policy::THREAD`](crate::platform::sched::Policy::THREAD), which every OS maps for a thread.
pub(super) fn thread_policy()
-> impl clap::builder::TypedValueParser<Value = crate::platform::sched::Policy> {
    use crate::platform::sched::Policy;
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Policy::THREAD.map(Policy::name))
        .map(|s| Policy::parse(&s).expect("a listed policy name"))
}

/// The EEVDF custom slice: Linux accepts 0.1 ms to 100 ms.
pub(super) fn parse_slice(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_micros(100) || d > Duration::from_millis(100) {
        return Err(format!("'{s}': expected a slice between 100µs and 100ms"));
    }
    Ok(d)
}

pub(super) fn parse_pct(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!("'{s}': expected a percentage in (0, 100]")),
    }
}

/// A CPU list as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

pub(super) fn parse_cpu_list(s: &str) -> Result<CpuList, String> {
    let v = cpu_list(s)?;
    let allowed = crate::platform::allowed_cpus().map_err(|e| format!("cannot pin: {e}"))?;
    check_cpus_allowed(&v, &allowed).map(|()| CpuList(v))
}

/// Every CPU of `wanted` must be one this process may run on (`allowed`: its affinity mask,
/// which only names CPUs that exist).
pub fn check_cpus_allowed(wanted: &[usize], allowed: &[usize]) -> Result<(), String> {
    let missing: Vec<String> = wanted
        .iter()
        .filter(|c| !allowed.contains(c))
        .map(|c| c.to_string())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let have: Vec<u32> = allowed.iter().map(|&c| c as u32).collect();
    Err(format!(
        "CPU {} not available: this process may use CPUs {}",
        missing.join(", "),
        crate::system::format_cpu_list(&have)
    ))
}

/// `--run-time`: at least 1 ms (the harness needs batches of ≥ 50 µs and the record keeps ms),
/// at most 1 h.
pub(crate) fn parse_run_time(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(1) || d > Duration::from_secs(3600) {
        return Err(format!("'{s}': expected a measuring time from 1ms to 60m"));
    }
    Ok(d)
}

/// `--timeout`: at least 100 ms (a bound below one run's setup only records timeouts), at most
/// 24 h.
pub(super) fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(100) {
        return Err(format!("'{s}': expected a time bound from 100ms to 24h"));
    }
    Ok(d)
}

/// "0", "0,2", "0-3,6" → sorted, deduplicated CPU numbers (the kernel's CPU-list syntax, read by
/// the one parser of it, `system::parse::parse_cpu_list`), each at most 4095.
pub fn cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let v = crate::system::parse::parse_cpu_list(s)
        .ok_or_else(|| format!("'{s}': expected CPU numbers or ranges like 0-3,6"))?;
    if v.is_empty() {
        return Err("empty CPU list".into());
    }
    if let Some(c) = v.iter().find(|&&c| c > 4095) {
        return Err(format!("'{s}': CPU {c} is beyond 4095"));
    }
    Ok(v.into_iter().map(|c| c as usize).collect())
}

pub(super) fn parse_max_size(s: &str) -> Result<u64, String> {
    let b = crate::units::parse_size(s)?;
    crate::bench::mem::validate_max_size(b)?;
    Ok(b)
}

/// `--ci-width`: a share of the median above 0 and at most 100 %, e.g. 5% or 0.5%.
pub(super) fn parse_ci_width(s: &str) -> Result<f64, String> {
    let v = parse_percent(s)?;
    if v <= 0.0 || v > 1.0 {
        return Err(format!(
            "'{s}': expected a CI half-width above 0% and at most 100%"
        ));
    }
    Ok(v)
}

/// `total` split into `runs` runs (`what`: "per cell"); each at least `min`.
pub(super) fn split_duration(
    total: Duration,
    runs: u32,
    what: &str,
    min: Duration,
) -> Result<Duration, CliError> {
    let per_run = total / runs.max(1);
    if per_run < min {
        let t = |d: Duration| crate::units::format_time_ns(d.as_nanos() as f64);
        return Err(CliError::Usage(format!(
            "--duration {} {what} over {runs} runs leaves {} per run, less than {}: lengthen \
             --duration or lower --runs",
            t(total),
            t(per_run),
            t(min)
        )));
    }
    Ok(per_run)
}
