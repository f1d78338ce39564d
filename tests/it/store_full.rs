//! The store on a nearly full file system with 1 KiB blocks (issue 22.6/22.8): SQLite's WAL index
//! (`-shm`) was mapped and extended sparsely there, and touching a hole on a full disk raised
//! SIGBUS ("Bus error", exit 135: no export, and every later `results list` crashed too). Now
//! the store never maps anything: a full disk is a clear error (exit 1), the exports are written,
//! and no command leaves `-wal`/`-shm` beside the store. Needs root (a loopback ext4 mount).
#![cfg(target_os = "linux")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Sandbox;

/// A 64 MiB ext4 with 1 KiB blocks, loop-mounted in the test's own folder; unmounted on drop.
struct SmallFs {
    mnt: PathBuf,
}

impl SmallFs {
    fn make(dir: &Path) -> Result<SmallFs, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("mounting a loopback file system needs root".into());
        }
        let img = dir.join("img");
        let f = std::fs::File::create(&img).map_err(|e| e.to_string())?;
        f.set_len(64 << 20).map_err(|e| e.to_string())?;
        let ok = |c: &mut Command| -> Result<(), String> {
            let o = c.output().map_err(|e| format!("{c:?}: {e}"))?;
            o.status
                .success()
                .then_some(())
                .ok_or_else(|| format!("{c:?}: {}", String::from_utf8_lossy(&o.stderr)))
        };
        ok(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-b", "1024"])
            .arg(&img))?;
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        ok(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&img)
            .arg(&mnt))?;
        Ok(SmallFs { mnt })
    }

    /// Fill the file system (as root: the reserved blocks too) with `name`.
    fn fill(&self, name: &str) {
        let _ = Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", self.mnt.join(name).display()))
            .arg("bs=1k")
            .output()
            .unwrap();
        let _ = Command::new("sync").status();
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
    }
}

fn beside(store: &Path) -> Vec<String> {
    std::fs::read_dir(store.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "s.sqlite")
        .collect()
}

fn a_full_file_system_with_small_blocks_gives_an_error_never_a_crash() {
    let sb = Sandbox::new();
    let fs = match SmallFs::make(sb.path()) {
        Ok(f) => f,
        Err(why) => {
            osgauge::testing::not_run(
                "a_full_file_system_with_small_blocks_gives_an_error_never_a_crash",
                &why,
            );
            return;
        }
    };
    let dir = fs.mnt.join("small");
    std::fs::create_dir(&dir).unwrap();
    let store = dir.join("s.sqlite");
    let micro = |json: &Path, csv: &Path| {
        sb.osgauge()
            .args([
                "micro",
                "cpu/null_syscall",
                "--runs",
                "2",
                "--run-time",
                "10ms",
            ])
            .arg("--store")
            .arg(&store)
            .arg("--export-json")
            .arg(json)
            .arg("--export-csv")
            .arg(csv)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let first = micro(&sb.path().join("0.json"), &sb.path().join("0.csv"));
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // The store as an osgauge before this change left it: WAL mode (no -wal once closed).
    {
        let c = rusqlite::Connection::open(&store).unwrap();
        let m: String = c
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(m, "wal");
    }
    assert!(beside(&store).is_empty(), "{:?}", beside(&store));
    // The repro: the disk filled, 40 KiB freed.
    fs.fill("fill");
    let fill = fs.mnt.join("fill");
    let len = std::fs::metadata(&fill).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fill)
        .unwrap()
        .set_len(len.saturating_sub(40 << 10))
        .unwrap();
    let _ = Command::new("sync").status();
    for (i, fill_all) in [(1, false), (2, true)] {
        if fill_all {
            fs.fill("fill2");
        }
        let json = sb.path().join(format!("{i}.json"));
        let csv = fs.mnt.join(format!("{i}.csv"));
        let o = micro(&json, &csv);
        let err = String::from_utf8_lossy(&o.stderr);
        // Never killed by a signal (SIGBUS was exit 135 via the shell, no code here).
        let code = o.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "round {i}: {:?} {err}",
            o.status
        );
        if fill_all {
            assert_eq!(code, Some(1), "{err}");
            assert!(err.contains("full"), "round {i}: {err}");
        }
        // The export on the healthy disk is written whatever the store did.
        let rec: serde_json::Value = common::read_json(&json);
        assert_eq!(rec["schema"], "osgauge.run/1");
        assert!(beside(&store).is_empty(), "round {i}: {:?}", beside(&store));
        // Reading the store afterwards works and changes nothing beside it.
        let l = sb
            .osgauge()
            .args(["results", "list", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(
            l.status.code(),
            Some(0),
            "round {i}: {}",
            String::from_utf8_lossy(&l.stderr)
        );
        assert!(String::from_utf8_lossy(&l.stdout).contains("run(s) in"));
        assert!(beside(&store).is_empty(), "round {i}: {:?}", beside(&store));
    }
}
crate::register!(
    a_full_file_system_with_small_blocks_gives_an_error_never_a_crash
        .root()
        .executable(&["mkfs.ext4", "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"])
);
