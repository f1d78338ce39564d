//! Every line osgauge prints on standard output goes through here ([`crate::out!`],
//! [`crate::outln!`], [`Stdout`]), never through `print!`: Rust ignores SIGPIPE, so `print!` panics
//! ("failed printing to stdout") when the reader went away (`osgauge results list | head -1`).
//!
//! Policy: on a broken pipe (EPIPE) printing stops quietly and the command keeps working — a run is
//! still finalised in the store and its exports are written — and the exit status is what it would
//! have been (0 when all went well): the reader asked for no more, like `yes | head -1`. Any other
//! write error (a full disk behind `> file`, `/dev/full`) and a standard output that was closed
//! when osgauge started (`>&-`) are errors: printing stops, the command finishes its work, and
//! the command line's `main` reports "writing to standard output: …" and exits 1. Messages on standard
//! error go through [`crate::errln!`], which never panics either.

use std::io::{self, Write};
use std::sync::Mutex;

#[derive(Default)]
struct State {
    broken_pipe: bool,
    error: Option<String>,
}

static STATE: Mutex<State> = Mutex::new(State {
    broken_pipe: false,
    error: None,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Set when an export writes to standard output (`--export-json -`): the human output (tables,
/// lists) then goes to standard error, so standard output carries the export alone.
static HUMAN_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Send what [`print`] prints to standard error from now on (standard output is an export's).
pub fn reserve_for_data() {
    HUMAN_TO_STDERR.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Write `text` to standard output now (flushed), or to standard error once standard output is
/// reserved for an export ([`reserve_for_data`]). Never panics; see the module policy.
pub fn print(text: &str) {
    if HUMAN_TO_STDERR.load(std::sync::atomic::Ordering::SeqCst) {
        eprint(text);
        return;
    }
    write_bytes(text.as_bytes());
}

/// Write an export's bytes to standard output (`--export-json -`). Unlike [`print`], a failure
/// is returned: the export was not written.
pub fn write_data(bytes: &[u8]) -> io::Result<()> {
    write_bytes(bytes);
    let st = state();
    if st.broken_pipe {
        return Err(io::Error::new(
            io::ErrorKind::BrokenPipe,
            "the reader of standard output went away",
        ));
    }
    match &st.error {
        Some(e) => Err(io::Error::other(e.clone())),
        None => Ok(()),
    }
}

/// [`print`] of bytes.
pub fn write_bytes(bytes: &[u8]) {
    let mut st = state();
    if st.broken_pipe || st.error.is_some() || bytes.is_empty() {
        return;
    }
    if crate::platform::stdout_closed_at_start() {
        st.error = Some("standard output is closed".into());
        return;
    }
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => st.broken_pipe = true,
        Err(e) => st.error = Some(e.to_string()),
    }
}

/// The first write error other than a broken pipe, if any.
pub fn error() -> Option<String> {
    state().error.clone()
}

/// Whether the reader of standard output went away.
pub fn broken_pipe() -> bool {
    state().broken_pipe
}

/// Standard output as an [`io::Write`] for code that wants a writer (shell completions); writes
/// always "succeed" and follow the module policy.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_bytes(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `print!` through [`print`].
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::output::stdout::print(&format!($($t)*))
    };
}

/// `println!` through [`print`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::stdout::print("\n")
    };
    ($($t:tt)*) => {
        $crate::output::stdout::print(&format!("{}\n", format_args!($($t)*)))
    };
}

/// Write `text` to standard error, ignoring failure: `eprintln!` panics when stderr is a pipe whose
/// reader went away (`osgauge micro cpu 2>&1 | head -1`), which would cut a run short before it is
/// stored.
pub fn eprint(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!` through [`eprint`].
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::stdout::eprint("\n")
    };
    ($($t:tt)*) => {
        $crate::output::stdout::eprint(&format!("{}\n", format_args!($($t)*)))
    };
}
