//! `osgauge system show` and `osgauge system check`.

use super::{CliError, EXIT_INCOMPLETE, EXIT_OK, EXIT_WARN};

/// `osgauge system show`: the machine and its environment, as text or JSON.
pub(super) fn show(json: bool) -> Result<i32, CliError> {
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
pub(super) fn check() -> Result<i32, CliError> {
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
