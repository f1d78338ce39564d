//! Records the git commit osgauge was built from (`tool.git` in every run record), when built
//! from a git checkout with git available; otherwise the field stays empty.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    let out = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .output();
    if let Ok(o) = out
        && o.status.success()
    {
        let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if !v.is_empty() {
            println!("cargo:rustc-env=OSGAUGE_GIT={v}");
        }
    }
}
