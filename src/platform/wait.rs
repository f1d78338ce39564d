//! One mechanism for every place osgauge blocks on something outside it (an export to a FIFO, a
//! peer on the network, a pipe to a child): a [`Bound`] — a deadline and the interrupt flag — and
//! waits that end when either does. A wait never sleeps in one long call: it waits in slices of at
//! most [`SLICE`] (poll(2) on Unix, socket timeouts for sockets everywhere) and checks the bound
//! between slices, so the first Ctrl-C or SIGTERM ends it within a slice (the interrupt handler
//! only sets a flag and uses SA_RESTART, so a plain blocking call would never see it).
//!
//! An ended wait is an `io::Error`: [`io::ErrorKind::Interrupted`] "interrupted by a signal" or
//! [`io::ErrorKind::TimedOut`] "no progress before the time bound"; see [`ended`].

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest single blocking call inside a bounded wait.
pub const SLICE: Duration = Duration::from_millis(50);

/// What ends a wait: a deadline, the interrupt flag, or both.
#[derive(Clone, Copy, Debug)]
pub struct Bound<'a> {
    deadline: Option<Instant>,
    stop: Option<&'a AtomicBool>,
}

/// Why a bounded wait ended: the error inside the `io::Error` it returns. Its kind is `Other`
/// for the interrupt (never `Interrupted`, which `read_exact` and friends retry) and `TimedOut` for
/// the deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Ended {
    #[error("interrupted by a signal")]
    Interrupted,
    #[error("no progress before the time bound")]
    TimedOut,
}

impl From<Ended> for io::Error {
    fn from(e: Ended) -> io::Error {
        let kind = match e {
            Ended::Interrupted => io::ErrorKind::Other,
            Ended::TimedOut => io::ErrorKind::TimedOut,
        };
        io::Error::new(kind, e)
    }
}

impl<'a> Bound<'a> {
    /// Never ends (a blocking wait in slices: the caller checks nothing).
    pub fn none() -> Bound<'static> {
        Bound {
            deadline: None,
            stop: None,
        }
    }

    /// Ends at `deadline` or when `stop` is set. A flag that is already set when the bound is
    /// made is ignored (after the first signal a later wait still runs to its deadline; the
    /// second signal quits at once, see [`super::install_interrupt_handler`]).
    pub fn new(deadline: Option<Instant>, stop: Option<&'a AtomicBool>) -> Bound<'a> {
        Bound {
            deadline,
            stop: stop.filter(|s| !s.load(Ordering::SeqCst)),
        }
    }

    /// Ends `d` from now or when `stop` is set.
    pub fn after(d: Duration, stop: Option<&'a AtomicBool>) -> Bound<'a> {
        Self::new(Instant::now().checked_add(d), stop)
    }

    /// Ends `d` from now or at the first Ctrl-C/SIGTERM (the installed interrupt flag, when it
    /// is installed and not yet set).
    pub fn signal_or_after(d: Duration) -> Bound<'static> {
        Bound::after(d, super::installed_interrupt_flag())
    }

    /// The earlier of this bound's deadline and `d` from now.
    pub fn at_most(self, d: Duration) -> Bound<'a> {
        let t = Instant::now().checked_add(d);
        let deadline = match (self.deadline, t) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Bound { deadline, ..self }
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The flag this bound watches, if any.
    pub fn stop(&self) -> Option<&'a AtomicBool> {
        self.stop
    }

    /// Err when the bound has ended (the flag first, then the deadline).
    pub fn check(&self) -> io::Result<()> {
        if self.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(Ended::Interrupted.into());
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Ended::TimedOut.into());
        }
        Ok(())
    }

    /// The next slice: at most [`SLICE`], never past the deadline (at least 1 ms).
    pub fn slice(&self) -> Duration {
        let left = self
            .deadline
            .map_or(SLICE, |d| d.saturating_duration_since(Instant::now()));
        left.min(SLICE).max(Duration::from_millis(1))
    }

    /// Run `op` until it does something: an `op` that blocks at most one slice and then fails with
    /// WouldBlock or TimedOut (a socket with [`SLICE`] timeouts, a non-blocking call) is called
    /// again while the bound holds; `pause` is slept between calls (zero for ops that block
    /// themselves). EINTR is retried too.
    pub fn retry<T>(
        &self,
        pause: Duration,
        mut op: impl FnMut() -> io::Result<T>,
    ) -> io::Result<T> {
        loop {
            self.check()?;
            match op() {
                Err(e) if is_slice_end(&e) => {
                    if !pause.is_zero() {
                        std::thread::sleep(pause.min(self.slice()));
                    }
                }
                r => return r,
            }
        }
    }

    /// Receive from `rx` (a worker thread's answer) in slices, or end with the bound. A worker
    /// that went away without answering is an error.
    pub fn recv<T>(&self, rx: &std::sync::mpsc::Receiver<T>) -> io::Result<T> {
        use std::sync::mpsc::RecvTimeoutError;
        loop {
            match rx.recv_timeout(self.slice()) {
                Ok(v) => return Ok(v),
                Err(RecvTimeoutError::Timeout) => self.check()?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("the worker ended without an answer"));
                }
            }
        }
    }

    /// Run the blocking `work` (a call no poll can wait on: a write to a regular file on a
    /// slow network file system) on a thread of its own and wait for it with this bound. When
    /// the bound ends first the thread is left to finish on its own (the caller reports the
    /// work as not done; process exit ends the thread).
    pub fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("osgauge-bounded".into())
            .spawn(move || {
                let _ = tx.send(work());
            })?;
        self.recv(&rx)?
    }

    /// Wait until `fd` is ready for `dir` (poll(2) in slices), or the bound ends.
    #[cfg(unix)]
    pub fn wait_fd(&self, fd: std::os::fd::RawFd, dir: Dir) -> io::Result<()> {
        loop {
            self.check()?;
            if super::unix::poll_one(fd, dir == Dir::Write, self.slice())? {
                return Ok(());
            }
        }
    }
}

/// Which readiness to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// Whether `e` only says one slice passed (retry) rather than a failure.
pub fn is_slice_end(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    ) && !ended(e)
}

/// How a bound ended, when `e` is a bound's end (flag or deadline) rather than the OS's own error.
pub fn ended_by(e: &io::Error) -> Option<Ended> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<Ended>())
        .copied()
}

/// Whether `e` is a bound's end (flag or deadline) rather than the OS's own error.
pub fn ended(e: &io::Error) -> bool {
    ended_by(e).is_some()
}

/// Whether `e` is a bound's end by the interrupt flag.
pub fn interrupted(e: &io::Error) -> bool {
    ended_by(e) == Some(Ended::Interrupted)
}

/// Give `s` the read and write timeouts a [`Bounded`] wrapper needs to end its calls with
/// `bound`: [`SLICE`] on Unix. On Windows a socket whose send or receive timed out is in an
/// indeterminate state (Winsock's SO_SNDTIMEO/SO_RCVTIMEO documentation), so the timeouts there
/// are the time left to the bound's deadline (none without one): the deadline holds, and a
/// Ctrl-C ends the wait at that deadline rather than within a slice.
pub fn slice_timeouts(s: &std::net::TcpStream, bound: &Bound) -> io::Result<()> {
    let t = if cfg!(windows) {
        bound.deadline().map(|d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        })
    } else {
        Some(SLICE)
    };
    s.set_read_timeout(t)?;
    s.set_write_timeout(t)
}

/// A stream (a `TcpStream` or `&TcpStream` given [`slice_timeouts`]) whose every read and write
/// — and so every `read_exact`/`write_all` built on them — ends with the [`Bound`]: a call that
/// blocks past one slice is retried while the bound holds. The call itself comes first, so a
/// stream with data ready pays nothing for the bound (no clock read, no flag load).
#[derive(Debug)]
pub struct Bounded<'a, S> {
    pub inner: S,
    bound: Bound<'a>,
}

impl<'a, S> Bounded<'a, S> {
    pub fn new(inner: S, bound: Bound<'a>) -> Self {
        Bounded { inner, bound }
    }
}

impl<S: io::Read> io::Read for Bounded<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let s = &mut self.inner;
        self.bound.retry(Duration::ZERO, || s.read(buf))
    }
}

impl<S: io::Write> io::Write for Bounded<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let s = &mut self.inner;
        self.bound.retry(Duration::ZERO, || s.write(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Open `path` (a FIFO, a device, /dev/stdout: anything but a regular file to replace) for
/// writing and write all of `bytes`, ending with `bound`. On Unix the open does not block (a FIFO
/// with no reader is retried every slice instead of waiting in open(2)) and neither do the writes
/// (a full pipe is waited on with poll(2) in slices). Elsewhere a plain open and write.
pub fn write_through(
    path: &std::path::Path,
    append: bool,
    bytes: &[u8],
    bound: &Bound,
) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut f = bound.retry(SLICE, || super::unix::open_write_nonblocking(path, append))?;
        let mut rest = bytes;
        while !rest.is_empty() {
            match f.write(rest) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    bound.wait_fd(f.as_raw_fd(), Dir::Write)?
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        use std::io::Write;
        let _ = bound;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .append(append)
            .open(path)?;
        f.write_all(bytes)?;
        f.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn a_read_from_a_silent_peer_ends_at_the_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _server = l.accept().unwrap();
        let t0 = Instant::now();
        let b = Bound::after(Duration::from_millis(300), None);
        slice_timeouts(&c, &b).unwrap();
        let mut s = Bounded::new(c, b);
        let e = s.read(&mut [0u8; 4]).unwrap_err();
        assert!(ended(&e) && e.kind() == io::ErrorKind::TimedOut, "{e}");
        assert!(t0.elapsed() >= Duration::from_millis(300));
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    }

    // Unix only: on Windows a bound's socket timeout is its deadline (a timed-out Winsock call
    // leaves the socket indeterminate, see `slice_timeouts`), so a flag-only bound cannot end a
    // blocked read there — the documented limit; this test would block for ever under Wine.
    #[cfg(unix)]
    #[test]
    fn a_read_from_a_silent_peer_ends_when_the_flag_is_set() {
        static FLAG: AtomicBool = AtomicBool::new(false);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _server = l.accept().unwrap();
        let b = Bound::new(None, Some(&FLAG));
        slice_timeouts(&c, &b).unwrap();
        let mut s = Bounded::new(c, b);
        let setter = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            FLAG.store(true, Ordering::SeqCst);
        });
        let e = s.read(&mut [0u8; 4]).unwrap_err();
        setter.join().unwrap();
        assert!(interrupted(&e), "{e}");
    }

    #[test]
    fn data_that_arrives_is_read_and_a_set_flag_is_ignored_by_later_bounds() {
        static FLAG: AtomicBool = AtomicBool::new(true);
        let b = Bound::new(None, Some(&FLAG));
        assert!(
            b.check().is_ok(),
            "a flag set before the bound does not end it"
        );
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        std::io::Write::write_all(&mut server, b"abc").unwrap();
        let b = b.at_most(Duration::from_secs(5));
        slice_timeouts(&c, &b).unwrap();
        let mut s = Bounded::new(c, b);
        let mut got = [0u8; 3];
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abc");
    }

    #[test]
    fn work_that_does_not_finish_ends_with_the_bound_and_work_that_does_returns() {
        let b = Bound::after(Duration::from_millis(200), None);
        let e = b
            .run(|| {
                std::thread::sleep(Duration::from_secs(5));
                Ok(1)
            })
            .unwrap_err();
        assert!(ended(&e), "{e}");
        assert_eq!(
            Bound::after(Duration::from_secs(30), None)
                .run(|| Ok(7))
                .unwrap(),
            7
        );
        let e = Bound::none()
            .run(|| -> io::Result<()> { Err(io::Error::other("disk says no")) })
            .unwrap_err();
        assert_eq!(e.to_string(), "disk says no");
    }

    #[cfg(unix)]
    fn fifo(dir: &std::path::Path) -> std::path::PathBuf {
        let p = dir.join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_without_a_reader_ends_at_the_deadline_and_with_the_flag() {
        static FLAG: AtomicBool = AtomicBool::new(false);
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        let t0 = Instant::now();
        let e = write_through(
            &p,
            false,
            b"x",
            &Bound::after(Duration::from_millis(300), None),
        )
        .unwrap_err();
        assert!(ended(&e) && e.kind() == io::ErrorKind::TimedOut, "{e}");
        assert!(t0.elapsed() >= Duration::from_millis(300));
        let setter = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            FLAG.store(true, Ordering::SeqCst);
        });
        let e = write_through(&p, false, b"x", &Bound::new(None, Some(&FLAG))).unwrap_err();
        setter.join().unwrap();
        assert!(interrupted(&e), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_full_fifo_whose_reader_stops_reading_ends_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        // A reader that opens and never reads: the pipe fills (64 KiB) and the write waits.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap();
        let big = vec![b'x'; 4 << 20];
        let e = write_through(
            &p,
            false,
            &big,
            &Bound::after(Duration::from_millis(300), None),
        )
        .unwrap_err();
        assert!(ended(&e) && e.kind() == io::ErrorKind::TimedOut, "{e}");
        drop(reader);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_with_a_reader_gets_everything() {
        let dir = tempfile::tempdir().unwrap();
        let p = fifo(dir.path());
        let big: Vec<u8> = (0..(1u32 << 20)).map(|i| i as u8).collect();
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150));
                std::fs::read(p).unwrap()
            })
        };
        write_through(
            &p,
            false,
            &big,
            &Bound::after(Duration::from_secs(30), None),
        )
        .unwrap();
        assert_eq!(reader.join().unwrap(), big);
    }
}
