//! `osgauge model validate`: one short run of a tiny profile (structure only, never speed), its
//! exports, its exit-status rule, and the export options refused up front when unusable.

use std::path::Path;

use crate::common;

use common::osgauge;
use osgauge::appmodel::validate::median_run;

const TINY: &str = "[app]\nname = \"tiny\"\nunit = \"req\"\ntarget_rate = 10\n[demand]\n\
    net_rx_mb = 0.2\nnet_tx_mb = 0.1\ndisk_write_mb = 0.2\ndisk_read_mb = 0.1\nframes = 1\n\
    frame_mb = 0.5\napp_cpu_s = 0.004\napp_mem_mb = 2\ncontext_switches = 4\n\
    [capacity]\ndisplay_link_mb_s = 5000\n";

/// The tiny profile with its file I/O path: cache bypassed (the default) where the test runs
/// natively; through the cache on Windows, whose test executables CI runs under Wine, which
/// does not honour the bypass flag (the app refuses a bypass it cannot have).
fn tiny() -> String {
    let io = if cfg!(windows) { "buffered" } else { "direct" };
    TINY.replace("[demand]\n", &format!("[demand]\ndisk_io = \"{io}\"\n"))
}

/// `osgauge-validate-*` folders in this test's own temp dir (the sandbox's TMPDIR, which the
/// osgauge it starts uses): never the shared one, where a killed run or another test may leave
/// its own.
fn ours_left() -> usize {
    std::fs::read_dir(common::with_test_sandbox(|s| s.tmp()))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("osgauge-validate-")
        })
        .count()
}

/// The run prints and exports the prediction, every step and the verdict; the exit status
/// follows the verdict (0 agrees or not judged, 1 disagrees); agreement itself depends on the
/// machine and is not asserted.
fn validate_runs_the_tiny_profile_and_exports_every_step_and_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tiny.toml");
    std::fs::write(&p, tiny()).unwrap();
    // A stored run (a cpu-suite record): its prediction is printed beside the probes' one.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cpu-a.json");
    let (j, m, h) = (
        dir.path().join("v.json"),
        dir.path().join("v.md"),
        dir.path().join("v.html"),
    );
    let out = osgauge()
        .args(["model", "validate", p.to_str().unwrap()])
        .args(["--step-s", "0.2", "--max-rate", "20"])
        .args(["--export-json", j.to_str().unwrap()])
        .args(["--export-markdown", m.to_str().unwrap()])
        .args(["--export-html", h.to_str().unwrap()])
        .args(["--inputs", fixture.to_str().unwrap()])
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = out.status.code().unwrap();
    assert!(
        code == 0 || code == 1,
        "{code}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("flat out"), "{text}");
    assert!(text.contains("maximum rate: predicted"), "{text}");
    assert!(text.contains("ping-pong round trip"), "{text}");
    assert!(text.contains("from the run "), "{text}");
    let v: serde_json::Value = common::read_json(&j);
    assert_eq!(v["schema"], "osgauge.appmodel.validate/1");
    assert_eq!(v["exit_code"], code);
    let vd = &v["verdict"];
    match code {
        0 => assert!(vd["agrees"] == true || vd["judged"] == false, "{vd}"),
        _ => assert!(vd["agrees"] == false && vd["judged"] == true && vd["off"].is_string()),
    }
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 7, "4 offered rates + 3 flat-out runs");
    assert!(steps[..4].iter().all(|s| s["offered"].is_f64()));
    assert!(steps[4..].iter().all(|s| s["offered"].is_null()));
    // The maximum rate measured is the median flat-out run (the rule: validate::median_run).
    let flat: Vec<f64> = steps[4..]
        .iter()
        .map(|s| s["achieved"].as_f64().unwrap())
        .collect();
    assert_eq!(
        v["verdict"]["x_measured"].as_f64().unwrap(),
        *median_run(&flat, |x| *x)
    );
    assert!(text.contains("median of 5 probes"), "{text}");
    // The harness's pacing is measured at every offered rate, never flat out.
    assert!(steps[..4].iter().all(|s| s["cpu_pacing_pct"].is_f64()));
    assert!(steps[4..].iter().all(|s| s["cpu_pacing_pct"].is_null()));
    for s in steps {
        // The units finished in the step: a whole number, at an offered rate no more than the
        // units its schedule starts (one every 1/offered s from the step's start).
        let units = s["achieved"].as_f64().unwrap() * s["duration_s"].as_f64().unwrap();
        assert!((units - units.round()).abs() < 1e-6, "{s}");
        if let Some(offered) = s["offered"].as_f64() {
            let scheduled = (offered * s["duration_s"].as_f64().unwrap()).ceil();
            assert!(units.round() <= scheduled, "{s}");
        }
        assert!(s["cpu_measured_pct"].is_f64() && s["cpu_predicted_pct"].is_f64());
        for r in ["memory", "net_rx", "net_tx", "disk", "display"] {
            assert!(s["achieved_mb_s"][r].is_f64(), "{r}: {s}");
        }
    }
    // The working set really is ≥ 4 × the LLC.
    let ws = &v["working_set"];
    assert!(ws["ring_bytes"].as_u64().unwrap() >= 4 * ws["llc_bytes"].as_u64().unwrap());
    // The prediction includes the context switches and the loopback memory-traffic inputs.
    assert_eq!(v["analysis"]["predictions"].as_array().unwrap().len(), 2);
    let inp = &v["analysis"]["inputs"][0]["values"];
    assert!(inp["ctx_switch_us"]["value"].as_f64().unwrap() > 0.0);
    assert_eq!(inp["net_rx_mem_per_mb"]["value"], 4.0);
    assert_eq!(inp["net_rx_mem_per_mb"]["origin"], "assumed");
    let cpu = v["analysis"]["predictions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "cpu")
        .unwrap();
    assert!(
        cpu["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["label"].as_str().unwrap().contains("context switches")),
        "{cpu}"
    );
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("## Steps") && md.contains("## Verdict"), "{md}");
    assert_eq!(md.matches("| flat out |").count(), 3, "{md}");
    let html = std::fs::read_to_string(&h).unwrap();
    assert!(html.contains("<h2>Steps</h2>") && html.contains("<h2>Verdict</h2>"));
    assert_eq!(ours_left(), 0, "the run's temp folder was removed");
}
crate::register!(validate_runs_the_tiny_profile_and_exports_every_step_and_the_verdict.ci_only());

/// An export that cannot be written is a usage error before anything runs, never ignored.
fn validate_refuses_an_unwritable_export_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tiny.toml");
    std::fs::write(&p, tiny()).unwrap();
    let bad = dir.path().join("no-such-dir").join("v.json");
    let out = osgauge()
        .args(["model", "validate", p.to_str().unwrap(), "--step-s", "0.2"])
        .args(["--export-json", bad.to_str().unwrap()])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("--export-json"), "{err}");
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!stdout.contains("validate:"), "nothing ran: {stdout}");
}
crate::register!(validate_refuses_an_unwritable_export_up_front);

/// A memory-heavy profile that states almost no CPU: the prediction charges the CPU at least the
/// time one core takes to move the memory traffic (the probe's one-thread copy rate), says so,
/// and every step's CPU agreement is judged against that floor (and the contended end, where
/// the all-thread bandwidth per core is below one core's). Structure only, never speed.
fn validate_charges_a_memory_heavy_profile_the_cpu_its_copies_take() {
    if cfg!(windows) {
        // The calculation is the same on every OS (its unit tests run under Wine too); a whole
        // validate run takes ~90 s under Wine, and the tiny-profile test above already runs one.
        osgauge::testing::not_run(
            "validate_charges_a_memory_heavy_profile_the_cpu_its_copies_take",
            "on Windows the floor's calculation is covered by calc's unit tests",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mem.toml");
    std::fs::write(
        &p,
        "[app]\nname = \"mem\"\nunit = \"op\"\ntarget_rate = 5\n[demand]\napp_cpu_s = 0.00001\napp_mem_mb = 64\n",
    )
    .unwrap();
    let j = dir.path().join("v.json");
    let out = osgauge()
        .args(["model", "validate", p.to_str().unwrap()])
        .args(["--step-s", "0.2", "--max-rate", "20"])
        .args(["--export-json", j.to_str().unwrap()])
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = out.status.code().unwrap();
    assert!(code == 0 || code == 1, "{code}: {text}");
    assert!(
        text.contains("raised from the profile's app_cpu_s"),
        "{text}"
    );
    let v: serde_json::Value = common::read_json(&j);
    let pr = &v["analysis"]["predictions"][0];
    let bw_1t = v["analysis"]["inputs"][0]["values"]["mem_bw_1t_mb_s"]["value"]
        .as_f64()
        .unwrap();
    assert!(bw_1t > 0.0);
    let cpu = pr["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "cpu")
        .unwrap();
    // 64 MB at one core's rate, not the stated 0.01 ms.
    let demand = cpu["demand"].as_f64().unwrap();
    assert!(
        (demand - 64.0 / bw_1t).abs() < 1e-9 * demand.max(1.0),
        "{cpu}"
    );
    assert!(
        cpu["parts"][0]["source"]
            .as_str()
            .unwrap()
            .contains("floor")
    );
    let s = cpu["s"].as_f64().unwrap();
    for st in v["steps"].as_array().unwrap() {
        let achieved = st["achieved"].as_f64().unwrap();
        let lo = st["cpu_predicted_pct"].as_f64().unwrap();
        assert!(
            (lo - achieved * s * 100.0).abs() < 1e-6 * lo.max(1.0),
            "{st}"
        );
        if let Some(hi) = st["cpu_predicted_contended_pct"].as_f64() {
            assert!(hi > lo, "{st}");
        }
    }
}
crate::register!(validate_charges_a_memory_heavy_profile_the_cpu_its_copies_take.ci_only().ignore_if(cfg!(windows), "a whole validate run takes ~90 s under Wine; the floor's calculation is covered by calc's unit tests there"));

/// `disk_io = "direct"` where the cache cannot be bypassed (a memory-backed temp folder) is a
/// clear error naming the way out — never a run through the cache passed off as bypassed.
fn direct_io_where_the_cache_cannot_be_bypassed_is_a_clear_error() {
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tiny.toml");
    std::fs::write(
        &p,
        TINY.replace("[demand]\n", "[demand]\ndisk_io = \"direct\"\n"),
    )
    .unwrap();
    let out = osgauge()
        .args(["model", "validate", p.to_str().unwrap()])
        .args(["--step-s", "0.2", "--max-rate", "20"])
        .env("TMPDIR", shm.path())
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("demand.disk_io = \"direct\"") && err.contains("memory-backed"),
        "{err}"
    );
    assert!(err.contains("disk_io = \"buffered\""), "{err}");
    assert_eq!(
        std::fs::read_dir(shm.path()).unwrap().count(),
        0,
        "the run's temp folder was removed"
    );
}
crate::register!(
    direct_io_where_the_cache_cannot_be_bypassed_is_a_clear_error.ignore_if(
        cfg!(not(target_os = "linux")),
        "needs /dev/shm (a Linux tmpfs)"
    )
);
