//! Issue 22.9: every temporary folder osgauge makes carries its owner's pid, and any later osgauge
//! command removes it once the owner is dead — here after a SIGKILL of `micro mem/page_fault`
//! (its 2 MiB `major_fault.dat`) and for a study folder of a killed `policy`.
#![cfg(unix)]

use crate::common;

use std::time::{Duration, Instant};

use common::Sandbox;

fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn a_killed_runs_temp_folders_are_removed_by_the_next_command() {
    let sb = Sandbox::new();
    let tmp = sb.tmp();
    let mut child = sb
        .command()
        .args([
            "micro",
            "mem/page_fault",
            "--runs",
            "5",
            "--run-time",
            "1s",
            "--no-store",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for its major-fault file, then kill it where it cannot clean up.
    let t0 = Instant::now();
    let dir = loop {
        if let Some(d) = entries(&tmp)
            .into_iter()
            .find(|n| n.starts_with("osgauge-pagefault-"))
            && tmp.join(&d).join("major_fault.dat").exists()
        {
            break tmp.join(d);
        }
        if t0.elapsed() > Duration::from_secs(120) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            osgauge::testing::not_run(
                "a_killed_runs_temp_folders_are_removed_by_the_next_command",
                &format!(
                    "mem/page_fault made no major-fault file here; temp dir: {:?}",
                    entries(&tmp)
                ),
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("osgauge-pagefault-{}-", child.id())),
        "{dir:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        dir.exists(),
        "SIGKILL leaves it (nothing can clean up then)"
    );
    // A policy study folder of a dead process, and one of a live process (this test).
    let dead_policy = tmp.join("osgauge-policy-4294967-abc");
    std::fs::create_dir(&dead_policy).unwrap();
    std::fs::write(dead_policy.join("work"), b"x").unwrap();
    let live = tmp.join(format!("osgauge-policy-{}-abc", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    // Any later command removes the dead owners' folders.
    sb.osgauge().args(["results", "list"]).assert().success();
    assert!(!dir.exists(), "left: {:?}", entries(&tmp));
    assert!(!dead_policy.exists(), "left: {:?}", entries(&tmp));
    assert!(live.exists(), "a live owner's folder was removed");
}
crate::register!(a_killed_runs_temp_folders_are_removed_by_the_next_command);

/// A killed `micro fs` leaves its work folder in the temp dir (the default --dir): unlocked, it is
/// removed by the next osgauge command of any kind, not only by the next `micro fs`.
fn a_dead_fs_work_folder_in_the_temp_dir_goes_with_any_next_command() {
    let sb = Sandbox::new();
    let dead = sb.tmp().join("osgauge-fs-4194399-0");
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join(".osgauge-fs-owner"), b"4194399").unwrap();
    std::fs::write(dead.join("read0"), vec![0u8; 4096]).unwrap();
    // And one in the current directory, the default --dir.
    let cwd = sb.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let dead_here = cwd.join("osgauge-fs-4194399-1");
    std::fs::create_dir(&dead_here).unwrap();
    std::fs::write(dead_here.join(".osgauge-fs-owner"), b"4194399").unwrap();
    let out = sb.command().arg("list").current_dir(&cwd).output().unwrap();
    assert!(out.status.success());
    assert!(!dead.exists(), "{:?}", entries(&sb.tmp()));
    assert!(!dead_here.exists(), "{:?}", entries(&cwd));
}
crate::register!(a_dead_fs_work_folder_in_the_temp_dir_goes_with_any_next_command);
