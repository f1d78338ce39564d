//! `osgauge fleet check`: each machine's newest run against its own history, exit 3 on a
//! regression — on a SQLite store and on a PostgreSQL database of a server of its own
//! (`on_both_stores!`; NOT RUN where PostgreSQL is not installed).
//!
//! The series are EDITED COPIES of a recorded run (tests/fixtures/cpu-10runs.json, a real
//! `micro cpu --runs 10` run): one benchmark's per-run values scaled (`slowed`) by a seeded ±2 %
//! between invocations, the newest by a known step.

use crate::common;

use chrono::{DateTime, Duration, Utc};
use common::{Lcg, fixture, slowed};
use osgauge::record::RunRecord;
use std::path::Path;

crate::on_both_stores!(
    a_regression_in_the_newest_run_exits_3_and_says_where,
    noise_alone_passes_and_short_series_say_so,
);

const BENCH: &str = "cpu/null_syscall";

/// `n` runs of `host` under label `nightly`, an hour apart: `BENCH` scaled by ±2 % (seeded),
/// the last one also by `last`.
fn series(host: &str, n: usize, seed: u64, last: f64) -> Vec<RunRecord> {
    let mut rng = Lcg(seed);
    let t0: DateTime<Utc> = "2026-11-01T00:00:00Z".parse().unwrap();
    (0..n)
        .map(|i| {
            let step = if i + 1 == n { last } else { 1.0 };
            let f = step * (1.0 + 0.02 * (2.0 * rng.next() - 1.0));
            let mut r = slowed(&fixture("cpu-10runs.json"), BENCH, f);
            r.machine.hostname = Some(host.into());
            r.label = Some("nightly".into());
            r.started = t0 + Duration::hours(i as i64);
            r.finished = Some(r.started + Duration::seconds(30));
            r
        })
        .collect()
}

fn import(store: &Path, dir: &Path, records: &[RunRecord]) {
    let file = dir.join("import.json");
    std::fs::write(&file, serde_json::to_string(records).unwrap()).unwrap();
    common::osgauge_on(store)
        .args(["results", "import"])
        .arg(&file)
        .assert()
        .success();
}

fn a_regression_in_the_newest_run_exits_3_and_says_where(store: &Path, dir: &Path) {
    // host-a: 8 runs, the newest 30 % slower on one benchmark; host-b: 8 runs of noise.
    let a = series("host-a", 8, 1, 1.30);
    let b = series("host-b", 8, 2, 1.0);
    import(store, dir, &[a.clone(), b].concat());
    let json = dir.join("check.json");
    let out = common::osgauge_on(store)
        .args(["fleet", "check", "--export-json"])
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("REGRESSION  host-a · nightly"), "{text}");
    assert!(text.contains(BENCH), "{text}");
    assert!(text.contains("ok      host-b · nightly"), "{text}");
    let c = common::read_json(&json);
    assert_eq!(c["schema"], "osgauge.fleet-check/1");
    let s = c["series"].as_array().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0]["newest"], a[7].run_id.to_string());
    assert_eq!(s[0]["baseline"].as_array().unwrap().len(), 7);
    let regs = s[0]["outcome"]["regressions"].as_array().unwrap();
    assert!(!regs.is_empty());
    assert!(regs.iter().all(|r| r["benchmark"] == BENCH), "{regs:?}");
    let ratio = regs[0]["ratio"].as_f64().unwrap();
    assert!((1.2..1.4).contains(&ratio), "{ratio}");
    assert_eq!(s[1]["outcome"]["regressions"].as_array().unwrap().len(), 0);
    // A threshold above the step: no regression, exit 0; one machine only: the same.
    common::osgauge_on(store)
        .args(["fleet", "check", "--threshold", "50%"])
        .assert()
        .code(0);
    common::osgauge_on(store)
        .args(["fleet", "check", "--machine", "host-b"])
        .assert()
        .code(0);
    // Checked against fewer earlier runs when asked: less power — 3 runs of history leave the
    // between-invocation noise 2 degrees of freedom; the step (+27 %) is then inside what they
    // can tell apart after the correction, and the output says how large a change could be.
    let out = common::osgauge_on(store)
        .args(["fleet", "check", "--machine", "host-a", "--history", "3"])
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("could be detected"), "{text}");
    assert_eq!(
        common::read_json(&json)["series"][0]["baseline"],
        serde_json::json!(
            a[4..7]
                .iter()
                .map(|r| r.run_id.to_string())
                .collect::<Vec<_>>()
        )
    );
}

fn noise_alone_passes_and_short_series_say_so(store: &Path, dir: &Path) {
    let mut runs = series("host-a", 10, 3, 1.0);
    runs.extend(series("host-c", 3, 4, 1.5));
    import(store, dir, &runs);
    let out = common::osgauge_on(store)
        .args(["fleet", "check"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("ok      host-a · nightly"), "{text}");
    assert!(
        text.contains(
            "host-c · nightly: 3 run(s); a check needs at least 4 (the newest and 3 before it)"
        ),
        "{text}"
    );
    assert!(
        text.contains("1 series checked, 0 with a regression, 1 with too few runs"),
        "{text}"
    );
    // Nothing matching the filters is an error (a CI job must not pass on a wrong filter).
    common::osgauge_on(store)
        .args(["fleet", "check", "--label", "no-such-label"])
        .assert()
        .code(2);
}
