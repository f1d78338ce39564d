//! Exporters: pure functions of the result record (one file per format), and an atomic writer.

pub mod csv;
pub mod cyclictest;
pub mod json;
pub mod markdown;
pub mod pairwise;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::platform::wait::{self, Bound};

/// How long writing one export may wait for something outside osgauge: a FIFO's reader to open
/// it, room in a full pipe, a slow device. The first Ctrl-C or SIGTERM ends the wait sooner. An
/// export not written in time is reported as not written, naming its path.
pub const EXPORT_WAIT: Duration = Duration::from_secs(30);

/// The output path `-`: standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// When one of `paths` is `-`, standard output carries that export alone: from now on the human
/// output goes to standard error.
pub fn claim_stdout<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    if paths.into_iter().any(is_stdout) {
        crate::output::stdout::reserve_for_data();
    }
}

use crate::record::RunRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
}

impl Format {
    pub fn flag(self) -> &'static str {
        match self {
            Format::Json => "--export-json",
            Format::Csv => "--export-csv",
            Format::Markdown => "--export-markdown",
        }
    }

    pub fn render(self, record: &RunRecord) -> anyhow::Result<String> {
        match self {
            Format::Json => json::render(record),
            Format::Csv => csv::render(record),
            Format::Markdown => Ok(markdown::render(record)),
        }
    }
}

/// How an output is named to the user (`-`: standard output).
pub fn display_output(path: &Path) -> String {
    if is_stdout(path) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// One export to write: its option, its path, and its text (or why it could not be rendered).
pub type Output<'a> = (&'a str, &'a Path, anyhow::Result<String>);

/// Write each of `outputs` on its own — one that fails (a full disk, a FIFO nobody reads) does not
/// stop the others — and report each failure on standard error, one line naming the option, the
/// path and why. Err(a summary) when any was not written.
pub fn write_each(outputs: Vec<Output>) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for (flag, path, text) in outputs {
        let r = text
            .map_err(|e| format!("{e:#}"))
            .and_then(|t| write_atomic(path, t.as_bytes()).map_err(|e| e.to_string()));
        if let Err(why) = r {
            crate::errln!("osgauge: error: {}", failure(flag, path, &why));
            failed.push(display_output(path));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!("not written: {}", failed.join(", ")))
    }
}

/// The one-line report of an export that was not written.
pub fn failure(flag: &str, path: &Path, why: &str) -> String {
    format!("{flag}: {} not written: {why}", display_output(path))
}

/// How an output path is written.
enum Target {
    /// A new path or a regular file: a temporary file in this directory, renamed to this path
    /// (the path with symlinks followed).
    Replace(PathBuf),
    /// Anything else that exists (a device, a FIFO, /dev/stdout): opened and written as it is;
    /// appended to where /dev/stdout and the like name a regular file (`> out.txt`), after what
    /// was printed there.
    WriteThrough {
        fifo: bool,
        append: bool,
    },
    Directory,
    /// `-`: standard output.
    Stdout,
}

fn classify(path: &Path) -> std::io::Result<Target> {
    if is_stdout(path) {
        return Ok(Target::Stdout);
    }
    // metadata() follows every kind of link, the kernel's /proc/self/fd/N too.
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(Target::Directory),
        Ok(m) if !m.is_file() || is_stdio_alias(path) => Ok(Target::WriteThrough {
            fifo: crate::platform::is_fifo(&m),
            append: m.is_file(),
        }),
        Ok(_) => Ok(Target::Replace(resolve_symlinks(path)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(Target::Replace(resolve_symlinks(path)?))
        }
        Err(e) => Err(e),
    }
}

/// /dev/stdout, /dev/fd/1, /proc/self/fd/1 and the like: an open descriptor, even when it is
/// redirected to a regular file, is written through, never replaced.
fn is_stdio_alias(path: &Path) -> bool {
    ["/dev/stdout", "/dev/stderr", "/dev/fd", "/proc/self/fd"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// Check a command's export options before it runs: every path given can be written (the error
/// names its option), no two name the same file, and the one that is standard output claims it.
/// `targets` lists (option name, path if given).
pub fn check_targets(targets: &[(&str, Option<&Path>)]) -> Result<(), String> {
    let mut given: Vec<(&str, &Path)> = Vec::new();
    for &(flag, p) in targets {
        if let Some(p) = p {
            check_writable(p).map_err(|e| format!("{flag}: {e}"))?;
            given.push((flag, p));
        }
    }
    check_distinct(&given)?;
    claim_stdout(given.iter().map(|(_, p)| *p));
    Ok(())
}

/// Check before running that `path` can be written, without creating or changing anything there.
/// A symlink is judged by what it points to. An existing regular file or a new path: its directory
/// exists and accepts a new file (the write goes through a temporary file renamed into place).
/// Anything else that exists (a device such as /dev/null, a FIFO) is written through as it is, so
/// it only has to be openable for writing (a FIFO is not opened: that would wait for a reader).
pub fn check_writable(path: &Path) -> Result<(), String> {
    let target = match classify(path).map_err(|e| format!("{}: {e}", path.display()))? {
        Target::Directory => return Err(format!("{} is a directory", path.display())),
        Target::Stdout => return Ok(()),
        Target::WriteThrough { fifo: true, .. } => return Ok(()),
        Target::WriteThrough { fifo: false, .. } => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map(drop)
                .map_err(|e| format!("cannot write to {}: {e}", path.display()));
        }
        Target::Replace(t) => t,
    };
    let dir = parent_dir(&target);
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    tempfile::NamedTempFile::new_in(&dir)
        .map(drop)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))
}

/// Exit-2 check that no two outputs of one command are the same file, however spelt
/// (`a`, `./a`, `dir/../a`, a symlink to `a`). `outputs`: (option name, path).
pub fn check_distinct(outputs: &[(&str, &Path)]) -> Result<(), String> {
    let keys: Vec<PathBuf> = outputs.iter().map(|(_, p)| identity(p)).collect();
    for i in 0..outputs.len() {
        for j in 0..i {
            if keys[i] == keys[j] {
                return Err(format!(
                    "{} and {} both write {}: give each output its own file",
                    outputs[j].0,
                    outputs[i].0,
                    outputs[i].1.display()
                ));
            }
        }
    }
    Ok(())
}

/// The file a path names: symlinks followed, the directory made absolute and canonical.
fn identity(path: &Path) -> PathBuf {
    if is_stdout(path) {
        return path.to_path_buf();
    }
    let target = resolve_symlinks(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = parent_dir(&target);
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    match target.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Follow `path` while it is a symlink (relative links resolve against the link's directory); a
/// dangling link gives the path it points to (the write creates it). Loops are an error.
fn resolve_symlinks(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)?;
                p = if link.is_absolute() {
                    link
                } else {
                    parent_dir(&p).join(link)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Write `contents` to `path`. A new path or a regular file is written atomically: a temporary
/// file in the same directory, flushed, then renamed over it, so a reader never sees a
/// half-written file. A symlink is followed (its target is written, the link stays). Anything
/// else (a device such as /dev/null or /dev/full, a FIFO) is opened and written through, never
/// replaced; that write waits at most [`EXPORT_WAIT`] and not past the first Ctrl-C/SIGTERM (a
/// FIFO nobody reads, a full pipe). `-` is standard output. Errors (e.g. /dev/full: no space left
/// on device) are returned for the caller to name the path.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    write_bounded(path, contents, &Bound::signal_or_after(EXPORT_WAIT))
}

/// [`write_atomic`] with the bound given.
pub fn write_bounded(path: &Path, contents: &[u8], bound: &Bound) -> std::io::Result<()> {
    match classify(path)? {
        Target::Directory => Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )),
        Target::Stdout => crate::output::stdout::write_data(contents),
        Target::WriteThrough { append, .. } => wait::write_through(path, append, contents, bound)
            .map_err(|e| match wait::ended_by(&e) {
                Some(why) => std::io::Error::new(
                    e.kind(),
                    format!("{why} while waiting for a reader or for room to write"),
                ),
                None => e,
            }),
        Target::Replace(target) => {
            // A regular file cannot be polled: a write to a slow network file system blocks in
            // the kernel. It runs on a thread of its own, waited on until the first Ctrl-C or
            // SIGTERM (no deadline: a large file on a slow disk may legitimately take long).
            let contents = contents.to_vec();
            let signal_only = Bound::new(None, bound.stop());
            signal_only.run(move || {
                let mut builder = tempfile::Builder::new();
                if let Some(perm) = crate::platform::user_file_permissions() {
                    builder.permissions(perm);
                }
                let mut tmp = builder.tempfile_in(parent_dir(&target))?;
                tmp.write_all(&contents)?;
                tmp.as_file().sync_all()?;
                tmp.persist(&target).map_err(|e| e.error)?;
                Ok(())
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            let expect = crate::platform::user_file_permissions().unwrap().mode();
            assert_eq!(
                mode, expect,
                "exports get the user's normal file mode, not 0600"
            );
        }
    }

    #[test]
    fn writability_is_checked_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(&dir.path().join("x.csv")).is_ok());
        assert!(
            check_writable(dir.path())
                .unwrap_err()
                .contains("is a directory")
        );
        let missing = dir.path().join("no/such/dir/x.csv");
        assert!(
            check_writable(&missing)
                .unwrap_err()
                .contains("does not exist")
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn same_file_under_two_spellings_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("sub/../a");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let e = check_distinct(&[("--export-json", &a), ("--export-csv", &b)]).unwrap_err();
        assert!(e.contains("--export-json and --export-csv"), "{e}");
        assert!(check_distinct(&[("x", &a), ("y", &dir.path().join("b"))]).is_ok());
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink("a", &link).unwrap();
            assert!(check_distinct(&[("x", &a), ("y", &link)]).is_err());
        }
    }

    #[cfg(unix)]
    mod special_files {
        use super::super::*;
        use std::os::unix::fs::FileTypeExt;

        #[test]
        fn a_symlink_is_followed_and_kept() {
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join("target.json");
            std::fs::write(&target, "old").unwrap();
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink("target.json", &link).unwrap();
            check_writable(&link).unwrap();
            write_atomic(&link, b"new").unwrap();
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
            // A dangling link: the file it names is created, the link stays.
            let dangling = dir.path().join("dangling");
            std::os::unix::fs::symlink("made.json", &dangling).unwrap();
            write_atomic(&dangling, b"made").unwrap();
            assert!(
                std::fs::symlink_metadata(&dangling)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(
                std::fs::read_to_string(dir.path().join("made.json")).unwrap(),
                "made"
            );
        }

        #[test]
        fn a_fifo_is_written_through_and_kept() {
            let dir = tempfile::tempdir().unwrap();
            let fifo = dir.path().join("pipe");
            let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            check_writable(&fifo).unwrap();
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read(&fifo).unwrap())
            };
            write_atomic(&fifo, b"through the pipe").unwrap();
            assert_eq!(reader.join().unwrap(), b"through the pipe");
            assert!(
                std::fs::symlink_metadata(&fifo)
                    .unwrap()
                    .file_type()
                    .is_fifo()
            );
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        }

        /// Making a device node with mknod needs root: ignored, with the reason, without it.
        #[test_with::root()]
        #[test]
        fn a_device_node_is_written_through_and_kept() {
            let dir = tempfile::tempdir().unwrap();
            let node = dir.path().join("null");
            let c = std::ffi::CString::new(node.as_os_str().as_encoded_bytes()).unwrap();
            // The null device, 1:3 on Linux; this test only relies on it accepting writes.
            let dev = libc::makedev(1, 3);
            assert_eq!(
                // SAFETY: a valid NUL-terminated path.
                unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, dev) },
                0
            );
            check_writable(&node).unwrap();
            write_atomic(&node, b"discarded").unwrap();
            let m = std::fs::symlink_metadata(&node).unwrap();
            assert!(m.file_type().is_char_device(), "{m:?}");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        }

        /// Ignored, with the reason, where there is no /dev/full.
        #[test_with::path(/dev/full)]
        #[test]
        fn a_full_device_gives_an_error() {
            let full = Path::new("/dev/full");
            let e = write_atomic(full, b"x").unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
            assert!(
                std::fs::metadata(full)
                    .unwrap()
                    .file_type()
                    .is_char_device()
            );
        }
    }
}
