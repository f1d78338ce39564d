//! The example profiles of `examples/`, built into the binary, so that every example in the
//! README and `osgauge model --help` runs as written from any directory: a profile path that does
//! not exist and names one of these (`examples/imaging-pipeline.toml`, or the bare file name) reads
//! the built-in copy. A file that exists always wins; the built-in copy is named as such
//! ("examples/imaging-pipeline.toml (built into osgauge)") wherever the file name is shown.

use std::path::Path;

/// Each example's file name and text, as in the checkout's `examples/` at build time.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "audio-workstation.toml",
        include_str!("../../examples/audio-workstation.toml"),
    ),
    (
        "imaging-pipeline.toml",
        include_str!("../../examples/imaging-pipeline.toml"),
    ),
    (
        "memory-bound-check.toml",
        include_str!("../../examples/memory-bound-check.toml"),
    ),
    (
        "os-only-recorder.toml",
        include_str!("../../examples/os-only-recorder.toml"),
    ),
    (
        "real-iperf3-to-disk.toml",
        include_str!("../../examples/real-iperf3-to-disk.toml"),
    ),
    (
        "real-nginx-static.toml",
        include_str!("../../examples/real-nginx-static.toml"),
    ),
    (
        "real-stress-stream.toml",
        include_str!("../../examples/real-stress-stream.toml"),
    ),
    (
        "thesis-2009-figures.toml",
        include_str!("../../examples/thesis-2009-figures.toml"),
    ),
    (
        "thesis-2009.toml",
        include_str!("../../examples/thesis-2009.toml"),
    ),
    (
        "video-streaming-server.toml",
        include_str!("../../examples/video-streaming-server.toml"),
    ),
];

/// The built-in example a missing `path` names: `examples/NAME` or `NAME` (any separator), or
/// None.
pub fn builtin(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let dir = path.parent().map(|p| p.as_os_str().to_str().unwrap_or("?"));
    let in_examples = match dir {
        None | Some("") => true,
        Some(d) => Path::new(d).file_name().and_then(|f| f.to_str()) == Some("examples"),
    };
    if !in_examples {
        return None;
    }
    EXAMPLES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A profile's text and the name to show for it: the file at `path`, or, when there is none and
/// `path` names a built-in example, that example ("… (built into osgauge)").
pub fn read(path: &Path) -> Result<(String, String), String> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok((s, path.display().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match builtin(path) {
            Some(t) => Ok((
                t.to_string(),
                format!("{} (built into osgauge)", path.display()),
            )),
            None => Err(format!("{}: {e}", path.display())),
        },
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of `examples/` is built in, so every README example runs from any directory.
    #[test]
    fn every_example_file_is_built_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        names.sort();
        let built: Vec<&str> = EXAMPLES.iter().map(|e| e.0).collect();
        assert_eq!(names, built);
        for (n, t) in EXAMPLES {
            assert_eq!(std::fs::read_to_string(dir.join(n)).unwrap(), *t, "{n}");
        }
    }

    #[test]
    fn a_missing_example_path_reads_the_builtin_copy_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("examples").join("imaging-pipeline.toml");
        let (text, name) = read(&missing).unwrap();
        assert_eq!(text, EXAMPLES[1].1);
        assert!(
            name.ends_with("imaging-pipeline.toml (built into osgauge)"),
            "{name}"
        );
        assert!(read(Path::new("imaging-pipeline.toml")).is_ok());
        // A file that exists wins; a missing file that is not an example is an error.
        let own = tmp.path().join("imaging-pipeline.toml");
        std::fs::write(&own, "mine").unwrap();
        assert_eq!(read(&own).unwrap().0, "mine");
        assert!(read(&tmp.path().join("examples/nope.toml")).is_err());
        assert!(read(&tmp.path().join("other/imaging-pipeline.toml")).is_err());
    }
}
