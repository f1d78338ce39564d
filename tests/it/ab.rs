//! `osgauge ab` as a user runs it: two settings switched by commands round by round, the switch
//! output and read-back in the records, the machine restored on every way out, a failed switch
//! stopping the run with nothing stored; and `osgauge calibrate`.
#![cfg(unix)]

use crate::common;

use std::path::Path;

/// A "setting" the switch commands write to a file of the test's own (no global state).
fn setting_cmds(file: &Path) -> (String, String, String, String) {
    let f = file.display();
    (
        format!("echo A > '{f}'"),
        format!("echo B > '{f}'"),
        format!("cat '{f}'"),
        format!("echo start > '{f}'"),
    )
}

fn ab_switches_records_and_restores() {
    let dir = tempfile::tempdir().unwrap();
    let setting = dir.path().join("setting");
    std::fs::write(&setting, "start\n").unwrap();
    let (a, b, read, restore) = setting_cmds(&setting);
    let store = dir.path().join("store.sqlite");
    let out = common::osgauge_on(&store)
        .args([
            "ab",
            "--a",
            &a,
            "--b",
            &b,
            "--read",
            &read,
            "--restore",
            &restore,
        ])
        .args([
            "--label",
            "t",
            "cpu/timer_read",
            "--runs",
            "3",
            "--run-time",
            "5ms",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // The machine is back where it started.
    assert_eq!(std::fs::read_to_string(&setting).unwrap(), "start\n");
    // The paired comparison, with each arm's switch and read-back.
    assert!(stdout.contains("switched by: echo A"), "{stdout}");
    assert!(stdout.contains("paired differences"), "{stdout}");
    assert!(stdout.contains("cpu/timer_read"), "{stdout}");
    // Both arms stored, each with its switches: one per round and the warm-up round, the state
    // read back after each being the arm's own.
    for (label, arm) in [("t:A", "A"), ("t:B", "B")] {
        let out = common::osgauge_on(&store)
            .args(["results", "export", label])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: osgauge::record::RunRecord = serde_json::from_slice(&out.stdout).unwrap();
        let ab = r.config.ab.as_ref().expect("an A/B arm");
        assert_eq!(ab.arm, arm);
        assert_eq!(ab.switches.len(), 4, "{:?}", ab.switches);
        assert!(
            ab.switches
                .iter()
                .all(|s| s.status == Some(0) && s.read_back.as_deref() == Some(arm))
        );
        // Every run knows its round: the arms pair up.
        let m = &r.benchmark("cpu/timer_read").unwrap().metrics[0];
        let rounds: Vec<u32> = m.runs.iter().filter_map(|x| x.round).collect();
        assert_eq!(rounds, [1, 2, 3]);
        assert_eq!(
            r.reference.as_ref().map(|x| x.id.as_str()),
            Some(osgauge::bench::reference::ID)
        );
    }
    // compare pairs the two arms again.
    let out = common::osgauge_on(&store)
        .args(["compare", "t:A", "t:B"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("paired differences"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
crate::register!(ab_switches_records_and_restores);

fn a_failed_switch_stops_restores_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let setting = dir.path().join("setting");
    std::fs::write(&setting, "start\n").unwrap();
    let (a, _, read, restore) = setting_cmds(&setting);
    let store = dir.path().join("store.sqlite");
    let out = common::osgauge_on(&store)
        .args(["ab", "--a", &a, "--b", "echo no such setting >&2; exit 3"])
        .args(["--read", &read, "--restore", &restore])
        .args(["cpu/timer_read", "--runs", "3", "--run-time", "5ms"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the switch into B")
            && stderr.contains("exit 3")
            && stderr.contains("no such setting")
            && stderr.contains("nothing of it was stored"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&setting).unwrap(), "start\n");
    let out = common::osgauge_on(&store)
        .args(["results", "list", "--json"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        !listed.contains("\"run_id\""),
        "something was stored: {listed}"
    );
}
crate::register!(a_failed_switch_stops_restores_and_stores_nothing);

fn sigterm_mid_run_restores_the_setting() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let setting = dir.path().join("setting");
    std::fs::write(&setting, "start\n").unwrap();
    let (a, b, read, restore) = setting_cmds(&setting);
    let mut child = common::osgauge_std()
        .args([
            "ab",
            "--a",
            &a,
            "--b",
            &b,
            "--read",
            &read,
            "--restore",
            &restore,
        ])
        .args([
            "cpu/timer_read",
            "--runs",
            "1000",
            "--run-time",
            "20ms",
            "--quiet",
        ])
        .env("OSGAUGE_STORE", dir.path().join("store.sqlite"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait until the run is under way: the setting has been switched at least once.
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&setting).unwrap_or_default() == "start\n" {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "never switched"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_eq!(std::fs::read_to_string(&setting).unwrap(), "start\n");
}
crate::register!(sigterm_mid_run_restores_the_setting);

fn calibrate_stores_invocations_that_compare_learns_from() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite");
    let out = common::osgauge_on(&store)
        .args(["calibrate", "--invocations", "2", "--label", "cal"])
        .args(common::TINY_MICRO)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::osgauge_on(&store)
        .args(["results", "list", "--label", "cal", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    // Two single invocations of other labels on this machine: compare now knows the noise.
    for l in ["x", "y"] {
        let out = common::osgauge_on(&store)
            .args(common::TINY_MICRO)
            .args(["--label", l, "--quiet"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let out = common::osgauge_on(&store)
        .args(["compare", "x", "y"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("cpu/timer_read"))
        .expect(&text);
    assert!(!line.contains("~ (u)"), "{line}");
    // A label given to the command itself is refused (it would split the invocations).
    let out = common::osgauge_on(&store)
        .args(["calibrate", "micro", "cpu/timer_read", "--label", "z"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
crate::register!(calibrate_stores_invocations_that_compare_learns_from);
