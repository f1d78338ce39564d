//! The result store: an embedded SQLite file holding every run record.
//!
//! One row per run: the full JSON record (exactly as serialised, so export is round-trip exact)
//! plus indexed columns for listing and lookup. A run is written when it starts and again after
//! each benchmark finishes, so an interrupted or killed run keeps what was measured and shows as
//! incomplete. The schema is versioned with `PRAGMA user_version` and upgraded by the migrations
//! below; SQLite's rollback journal (`journal_mode=DELETE`, `synchronous=FULL`), a busy timeout
//! and one statement or transaction per write keep concurrent invocations from corrupting it.
//!
//! Why not WAL: a WAL store needs a `-shm` file that SQLite maps into memory and extends
//! sparsely; on a full file system whose blocks are smaller than a memory page (ext4 with 1 KiB
//! blocks) touching a hole in it raises SIGBUS and kills the process — no error, no exports. The
//! rollback journal maps nothing: a full disk is an ordinary SQLITE_FULL error. It also leaves
//! nothing beside the store between writes (the `-journal` exists only during a write), so
//! read-only commands never change the store's directory. A store made in WAL mode by an earlier
//! osgauge is switched to the rollback journal when next opened for writing, with the WAL index
//! on the heap (exclusive locking) for that one step, so no `-shm` is mapped even then; until
//! then it is read as immutable when no `-wal` file is beside it.
//!
//! Location: `--store PATH`, else the `OSGAUGE_STORE` environment variable, else
//! `<user data dir>/osgauge/results.sqlite` (XDG data dir on Linux, `~/Library/Application
//! Support` on macOS, `%APPDATA%` on Windows). An empty path is refused.
//!
//! Ownership: an osgauge store carries `PRAGMA application_id` = [`APPLICATION_ID`] ("OSGa").
//! osgauge creates a new store itself (built under a temporary name, then linked into place, so
//! the path never shows a half-made store) and opens nothing else, except a store made before
//! the mark existed, recognised by its tables being exactly osgauge's (it is marked when next
//! opened for writing). Everything else is refused with [`NotAStore`]: another application's
//! SQLite file, a file that is not SQLite, an empty (0-byte) file, a SQLite file with no tables.
//! Commands that only read ([`Store::open_read_only`]) open with `SQLITE_OPEN_READ_ONLY`, never
//! create a store and never change one; a missing store means "no runs stored yet".
//!
//! Integrity: opening for writing runs `PRAGMA quick_check` and refuses a damaged store with a
//! recovery hint; every write is read back before it counts as stored. Every error names the
//! store and carries a hint suited to its kind ([`Trouble`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::model::{RunRecord, SCHEMA};

/// Environment variable naming the store file (used when `--store` is not given).
pub const STORE_ENV: &str = "OSGAUGE_STORE";

/// `PRAGMA application_id` of an osgauge store: ASCII "OSGa".
pub const APPLICATION_ID: i32 = 0x4F53_4761;

/// The largest file `results import` (and compare/report) reads.
pub const IMPORT_MAX_BYTES: u64 = 256 << 20;

/// The columns of the `runs` table, in order (used to recognise stores made before the
/// application id was set).
const RUNS_COLUMNS: &[&str] = &[
    "run_id",
    "label",
    "started",
    "finished",
    "complete",
    "os",
    "hostname",
    "benchmarks",
    "origin",
    "stored_at",
    "record",
];

/// How long a writer waits for another invocation's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// Schema migrations; entry `i` upgrades `user_version` from `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the runs table.
    "CREATE TABLE runs (
        run_id     TEXT PRIMARY KEY NOT NULL,
        label      TEXT,
        started    TEXT NOT NULL,
        finished   TEXT,
        complete   INTEGER NOT NULL,
        os         TEXT NOT NULL,
        hostname   TEXT,
        benchmarks INTEGER NOT NULL,
        origin     TEXT NOT NULL,
        stored_at  TEXT NOT NULL,
        record     TEXT NOT NULL
    );
    CREATE INDEX runs_label ON runs(label);
    CREATE INDEX runs_started ON runs(started);",
];

/// Where a stored run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Measured by this osgauge on this machine.
    Measured,
    /// Imported from a JSON record or HTML report (any machine, any OS).
    Imported,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Measured => "measured",
            Origin::Imported => "imported",
        }
    }
}

/// One line of `osgauge results list`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub run_id: String,
    pub label: Option<String>,
    pub started: String,
    pub finished: Option<String>,
    pub complete: bool,
    pub os: String,
    pub hostname: Option<String>,
    pub benchmarks: u32,
    pub origin: String,
}

/// What happened on [`Store::import`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportOutcome {
    Added,
    /// The same record was already stored.
    AlreadyStored,
    /// A different record with the same run id was replaced (only with `replace`).
    Replaced,
}

/// The file named as the store is not an osgauge store (bad input: the CLI exits 2).
#[derive(Debug, thiserror::Error)]
#[error("{} is not an osgauge result store: {why}", path.display())]
pub struct NotAStore {
    pub path: PathBuf,
    pub why: String,
}

/// What kind of trouble a store error is, for the hint given with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// Cannot open or write: permissions, a read-only file or file system.
    Permission,
    /// The file system is full (or failing: SQLite's I/O errors).
    Full,
    /// Another connection holds a lock.
    Locked,
    /// The database is damaged.
    Corrupt,
    Other,
}

impl Trouble {
    /// Classify an error by the first SQLite or I/O error in its chain.
    pub fn of(e: &anyhow::Error) -> Trouble {
        use rusqlite::ErrorCode as C;
        for c in e.chain() {
            if let Some(f) = c.downcast_ref::<StoreError>() {
                return f.trouble;
            }
            if let Some(code) = c
                .downcast_ref::<rusqlite::Error>()
                .and_then(|r| r.sqlite_error_code())
            {
                return match code {
                    C::CannotOpen
                    | C::ReadOnly
                    | C::PermissionDenied
                    | C::AuthorizationForStatementDenied => Trouble::Permission,
                    C::DiskFull | C::SystemIoFailure => Trouble::Full,
                    C::DatabaseBusy | C::DatabaseLocked => Trouble::Locked,
                    C::DatabaseCorrupt | C::NotADatabase => Trouble::Corrupt,
                    _ => Trouble::Other,
                };
            }
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind as K;
                return match io.kind() {
                    K::PermissionDenied | K::ReadOnlyFilesystem => Trouble::Permission,
                    K::StorageFull | K::QuotaExceeded => Trouble::Full,
                    _ => Trouble::Other,
                };
            }
        }
        Trouble::Other
    }

    /// The hint for the user (empty for [`Trouble::Other`]).
    pub fn hint(self, path: &Path) -> String {
        let p = path.display();
        match self {
            Trouble::Permission => format!(
                "check that you may read and write {p} and its directory (SQLite also writes {p}-journal beside it while writing), or give --store PATH elsewhere"
            ),
            Trouble::Full => "the file system may be full or failing: free some space, or give --store PATH on another file system".into(),
            Trouble::Locked => {
                "another program holds the store locked: try again when it has finished".into()
            }
            Trouble::Corrupt => format!(
                "move it aside, recover what is left with `sqlite3 {p} .recover | sqlite3 NEW.sqlite`, and use --store NEW.sqlite"
            ),
            Trouble::Other => String::new(),
        }
    }
}

/// A store error: what was being done, the store path, the cause and a hint, on one line.
#[derive(Debug, thiserror::Error)]
#[error("{doing} the result store {}: {cause}{}", path.display(), if hint.is_empty() { String::new() } else { format!("; {hint}") })]
pub struct StoreError {
    pub path: PathBuf,
    pub doing: String,
    pub cause: String,
    pub trouble: Trouble,
    pub hint: String,
}

/// Wrap `e` (unless it already names the store) with the path and a hint.
fn wrap(path: &Path, doing: &str, e: anyhow::Error) -> anyhow::Error {
    if e.chain()
        .any(|c| c.is::<StoreError>() || c.is::<NotAStore>())
    {
        return e;
    }
    let trouble = Trouble::of(&e);
    anyhow::Error::new(StoreError {
        path: path.to_path_buf(),
        doing: doing.to_string(),
        cause: cause_text(&e),
        trouble,
        hint: trouble.hint(path),
    })
}

/// The error chain on one line, without SQLite's repetitions ("disk I/O error: Error code
/// 4874: disk I/O error" becomes "disk I/O error (SQLite code 4874)").
fn cause_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for c in e.chain() {
        let t = c.to_string().replace(['\n', '\r'], " ");
        if let Some((code, msg)) = t
            .strip_prefix("Error code ")
            .and_then(|r| r.split_once(": "))
            && out.contains(msg)
        {
            out.push_str(&format!(" (SQLite code {code})"));
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&t);
    }
    out
}

/// Whether `e` is the store's refusal of a file that is not an osgauge store.
pub fn is_not_a_store(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<NotAStore>())
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// The store path when none is given on the command line: `OSGAUGE_STORE`, else the user data
/// dir. `OSGAUGE_STORE` set but empty is an error, not the default.
pub fn default_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(STORE_ENV) {
        if p.is_empty() {
            bail!(
                "{STORE_ENV} is set but empty: set it to the store file, or unset it for the default store"
            );
        }
        return Ok(PathBuf::from(p));
    }
    let dir = dirs::data_dir().ok_or_else(|| {
        anyhow!("no user data directory on this system; give --store PATH or set {STORE_ENV}")
    })?;
    Ok(dir.join("osgauge").join("results.sqlite"))
}

/// Whether an error is SQLite's "database is busy/locked" (another connection holds a lock).
fn is_busy(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<rusqlite::Error>().is_some_and(|r| {
            matches!(
                r.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        })
    })
}

/// What a SQLite file is, as far as osgauge is concerned.
enum Kind {
    /// Marked with osgauge's application id.
    Ours,
    /// Made by osgauge before the mark: its tables are exactly osgauge's.
    Unmarked,
    /// Not an osgauge store; why.
    Foreign(String),
}

/// Check that the file at `path` can be a SQLite database before SQLite sees it: a directory,
/// an empty file or a file without the SQLite header is refused.
fn check_file(path: &Path) -> Result<()> {
    let not = |why: &str| NotAStore {
        path: path.to_path_buf(),
        why: why.into(),
    };
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(not("it is a directory").into());
    }
    if !meta.is_file() {
        return Err(not("it is not a regular file (a device, FIFO or socket)").into());
    }
    if meta.len() == 0 {
        return Err(not(
            "it is an empty file (osgauge creates its store itself: remove the file or give another path)",
        )
        .into());
    }
    let mut head = [0u8; 16];
    let mut f = std::fs::File::open(path)?;
    let n = f.read(&mut head)?;
    if n < 16 || &head != b"SQLite format 3\0" {
        return Err(not(
            "it is not a SQLite database (a foreign file, or a store whose first page is damaged)",
        )
        .into());
    }
    Ok(())
}

/// Whether the SQLite file at `path` is in WAL mode (header bytes 18 and 19, the file format
/// write and read versions, are 2 for WAL, 1 for the rollback journal).
fn is_wal_file(path: &Path) -> bool {
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head[18] == 2 || head[19] == 2)
}

/// `FILE-wal`, SQLite's write-ahead log beside the store.
fn wal_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// A SQLite URI opening `path` read-only as immutable (Unix paths only; `None` elsewhere).
fn immutable_uri(path: &Path) -> Option<String> {
    if !cfg!(unix) {
        return None;
    }
    let abs = std::path::absolute(path).ok()?;
    let s = abs.to_str()?;
    let mut out = String::from("file:");
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out.push_str("?mode=ro&immutable=1");
    Some(out)
}

fn identify(conn: &Connection) -> rusqlite::Result<Kind> {
    let app: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    if app == APPLICATION_ID {
        return Ok(Kind::Ours);
    }
    if app != 0 {
        return Ok(Kind::Foreign(format!(
            "it belongs to another application (SQLite application_id {app:#010x})"
        )));
    }
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if tables.is_empty() {
        return Ok(Kind::Foreign(
            "it is a SQLite database that osgauge did not make (no tables, no osgauge mark)".into(),
        ));
    }
    if tables == ["runs"] && (1..=MIGRATIONS.len() as u32).contains(&version) {
        let cols: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('runs') ORDER BY cid")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if cols == RUNS_COLUMNS {
            return Ok(Kind::Unmarked);
        }
    }
    let mut list = tables
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if tables.len() > 5 {
        list.push_str(", …");
    }
    Ok(Kind::Foreign(format!(
        "it is another application's SQLite database (tables: {list})"
    )))
}

impl Store {
    /// Open the store at `path` for writing: create it (and its directory) if missing, refuse a
    /// file that is not an osgauge store or is damaged, upgrade its schema.
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_write(path).map_err(|e| wrap(path, "opening", e))
    }

    fn open_write(path: &Path) -> Result<Store> {
        if path.as_os_str().is_empty() {
            bail!("the store path is empty");
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the store directory {}", dir.display()))?;
        }
        // The busy handler does not cover every lock SQLite takes while a store is set up
        // (switching to WAL, WAL recovery): another invocation opening the same store at the
        // same moment can get SQLITE_BUSY at once. Those steps are idempotent, so retry them
        // until the busy timeout.
        let start = std::time::Instant::now();
        loop {
            match Self::open_once(path) {
                Err(e) if is_busy(&e) && start.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => return r,
            }
        }
    }

    /// Make a new store at `path`: built under a temporary name in the same directory and
    /// linked into place without replacing anything, so `path` never shows a half-made store
    /// (and of two concurrent creators, one store wins, whole).
    fn create(path: &Path) -> Result<()> {
        let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d,
            None => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".osgauge-store-").suffix(".tmp");
        // As a file SQLite creates: readable by others unless the umask says otherwise (a
        // temporary file is private by default).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let tmp = builder
            .tempfile_in(dir)
            .with_context(|| format!("creating a new store in {}", dir.display()))?
            .into_temp_path();
        {
            let conn = Connection::open(&tmp)?;
            let mut store = Store {
                conn,
                path: tmp.to_path_buf(),
            };
            store.migrate()?;
            store.conn.close().map_err(|(_, e)| e)?;
        }
        match tmp.persist_noclobber(path) {
            Ok(()) => Ok(()),
            // Another invocation created it first: its store is used.
            Err(_) if path.exists() => Ok(()),
            Err(e) => Err(anyhow::Error::new(e.error).context("moving the new store into place")),
        }
    }

    fn open_once(path: &Path) -> Result<Store> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::create(path)?,
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
        check_file(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // A store left in WAL mode by an earlier osgauge: exclusive locking before its first
        // access keeps the WAL index on the heap (no -shm mapped, see the module docs) until it
        // is switched to the rollback journal below.
        let was_wal = is_wal_file(path);
        if was_wal {
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        }
        if let Kind::Foreign(why) = identify(&conn)? {
            return Err(NotAStore {
                path: path.to_path_buf(),
                why,
            }
            .into());
        }
        let problems: Vec<String> = conn
            .prepare("PRAGMA quick_check(3)")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if problems != ["ok"] {
            let what = problems
                .iter()
                .flat_map(|p| p.lines())
                .filter(|l| !l.starts_with("***"))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(anyhow::Error::new(StoreError {
                path: path.to_path_buf(),
                doing: "opening".into(),
                cause: format!("it is damaged (SQLite quick_check: {what})"),
                trouble: Trouble::Corrupt,
                hint: Trouble::Corrupt.hint(path),
            }));
        }
        // The rollback journal (see the module docs for why not WAL).
        let mode: String = conn.query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("delete") {
            bail!(
                "the store is in journal mode {mode} and could not be switched to the rollback journal (another program may have it open)"
            );
        }
        if was_wal {
            conn.pragma_update(None, "locking_mode", "NORMAL")?;
            // The exclusive lock is released at the next access.
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })?;
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate().context("upgrading the schema")?;
        Ok(store)
    }

    /// Open the store at `path` for reading only (`SQLITE_OPEN_READ_ONLY`): nothing is created
    /// or changed. `None` when there is no store there yet.
    pub fn open_read_only(path: &Path) -> Result<Option<Store>> {
        Self::open_read(path).map_err(|e| wrap(path, "opening", e))
    }

    fn open_read(path: &Path) -> Result<Option<Store>> {
        if path.as_os_str().is_empty() {
            bail!("the store path is empty");
        }
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
        check_file(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // A WAL store with its -wal beside it (an osgauge before the rollback journal was
        // killed, or is writing) is read as SQLite reads WAL, through its -shm: a read-only
        // connection cannot hold the exclusive lock that would keep the WAL index on the heap.
        let connect = |p: &Path| -> rusqlite::Result<(Connection, Kind)> {
            let conn = Connection::open_with_flags(p, flags)?;
            conn.busy_timeout(BUSY_TIMEOUT)?;
            let kind = identify(&conn)?;
            Ok((conn, kind))
        };
        // A store an earlier osgauge left in WAL mode, with no WAL file beside it: everything is
        // in the main file and nobody is writing it. Read it as immutable, so SQLite makes no
        // -wal or -shm file beside it (a read-only command never changes the store's directory).
        let immutable = is_wal_file(path) && !wal_path(path).exists();
        let first = match immutable_uri(path).filter(|_| immutable) {
            Some(uri) => connect(Path::new(&uri)),
            None => connect(path),
        };
        let (conn, kind) = match first {
            // A WAL store in a directory this user cannot write (read-only media, another
            // user's store): SQLite cannot make the shared-memory file a reader needs. With no
            // WAL file beside it, everything is in the main file and nobody is writing it:
            // read it as immutable.
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen)
                    && !wal_path(path).exists() =>
            {
                match immutable_uri(path) {
                    Some(uri) => connect(Path::new(&uri))?,
                    None => return Err(e.into()),
                }
            }
            r => r?,
        };
        if let Kind::Foreign(why) = kind {
            return Err(NotAStore {
                path: path.to_path_buf(),
                why,
            }
            .into());
        }
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        let version = store.schema_version()?;
        if version as usize > MIGRATIONS.len() {
            bail!(
                "the store has schema version {version}, newer than this osgauge knows ({}); use a newer osgauge",
                MIGRATIONS.len()
            );
        }
        Ok(Some(store))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Wrap an error of an operation on this store with its path and a hint.
    fn ctx<T>(&self, doing: &str, r: Result<T>) -> Result<T> {
        r.map_err(|e| wrap(&self.path, doing, e))
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<u32> {
        self.ctx(
            "reading",
            self.conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(Into::into),
        )
    }

    fn migrate(&mut self) -> Result<()> {
        // IMMEDIATE takes the write lock first, so two invocations never migrate at once.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            bail!(
                "the store has schema version {version}, newer than this osgauge knows ({}); use a newer osgauge",
                MIGRATIONS.len()
            );
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("migration {}", i + 1))?;
            tx.pragma_update(None, "user_version", (i + 1) as u32)?;
        }
        let app: i32 = tx.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        if app != APPLICATION_ID {
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Insert or update a run (one atomic statement), then read it back: an error unless what
    /// is stored is exactly what was written.
    pub fn save(&self, record: &RunRecord, origin: Origin) -> Result<()> {
        let json = serde_json::to_string(record)?;
        self.ctx(
            &format!("writing run {} to", record.run_id),
            self.save_text(record, &json, origin),
        )
    }

    /// Rewrite a run that is already stored (a run being measured, after each benchmark), then
    /// read it back. Ok(false), writing nothing, when the run is no longer there: someone deleted
    /// it meanwhile (`results delete`), and a deleted run is not brought back.
    pub fn update(&self, record: &RunRecord) -> Result<bool> {
        let json = serde_json::to_string(record)?;
        let id = record.run_id.to_string();
        self.ctx(&format!("writing run {id} to"), {
            let n = self.conn.execute(
                "UPDATE runs SET label = ?2, started = ?3, finished = ?4, complete = ?5, os = ?6,
                    hostname = ?7, benchmarks = ?8, stored_at = ?9, record = ?10
                 WHERE run_id = ?1",
                params![
                    id,
                    record.label,
                    record.started.to_rfc3339(),
                    record.finished.map(|f| f.to_rfc3339()),
                    record.complete,
                    record.machine.os,
                    record.machine.hostname,
                    record.benchmarks.len() as u32,
                    chrono::Utc::now().to_rfc3339(),
                    json,
                ],
            );
            match n {
                Ok(0) => Ok(false),
                Ok(_) => self.read_back(&id, &json).map(|()| true),
                Err(e) => Err(e.into()),
            }
        })
    }

    fn read_back(&self, id: &str, json: &str) -> Result<()> {
        let back: Option<String> = self
            .conn
            .query_row("SELECT record FROM runs WHERE run_id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        if back.as_deref() != Some(json) {
            bail!("the run was written but does not read back as written");
        }
        Ok(())
    }

    fn save_text(&self, record: &RunRecord, json: &str, origin: Origin) -> Result<()> {
        let id = record.run_id.to_string();
        self.conn.execute(
            "INSERT INTO runs (run_id, label, started, finished, complete, os, hostname, benchmarks,
                               origin, stored_at, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT(run_id) DO UPDATE SET
                label = excluded.label, started = excluded.started, finished = excluded.finished,
                complete = excluded.complete, os = excluded.os, hostname = excluded.hostname,
                benchmarks = excluded.benchmarks, origin = excluded.origin,
                stored_at = excluded.stored_at, record = excluded.record",
            params![
                id,
                record.label,
                record.started.to_rfc3339(),
                record.finished.map(|f| f.to_rfc3339()),
                record.complete,
                record.machine.os,
                record.machine.hostname,
                record.benchmarks.len() as u32,
                origin.as_str(),
                chrono::Utc::now().to_rfc3339(),
                json,
            ],
        )?;
        self.read_back(&id, json)
    }

    /// Store an imported record. An identical record already stored is left alone; a different
    /// one with the same id is an error unless `replace`.
    pub fn import(&self, record: &RunRecord, replace: bool) -> Result<ImportOutcome> {
        let json = serde_json::to_string(record)?;
        self.import_text(record, &json, replace)
    }

    /// Like [`Store::import`], storing `text` (the record's original JSON document, which
    /// parses to `record`) verbatim, so fields this osgauge does not know are kept and export
    /// gives the document back byte for byte.
    pub fn import_text(
        &self,
        record: &RunRecord,
        text: &str,
        replace: bool,
    ) -> Result<ImportOutcome> {
        if record.schema != SCHEMA {
            bail!(
                "record schema is '{}', this osgauge reads '{SCHEMA}'",
                record.schema
            );
        }
        let id = record.run_id.to_string();
        let same = |stored: &str| -> bool {
            let a: Result<serde_json::Value, _> = serde_json::from_str(stored);
            let b: Result<serde_json::Value, _> = serde_json::from_str(text);
            matches!((a, b), (Ok(a), Ok(b)) if a == b)
        };
        let outcome = match self.get_json(&id)? {
            Some(existing) if same(&existing) => return Ok(ImportOutcome::AlreadyStored),
            Some(_) if !replace => bail!(
                "a different run with id {} is already stored (use --replace to overwrite it)",
                record.run_id
            ),
            Some(_) => ImportOutcome::Replaced,
            None => ImportOutcome::Added,
        };
        self.ctx(
            &format!("importing run {id} into"),
            self.save_text(record, text, Origin::Imported),
        )?;
        Ok(outcome)
    }

    /// Import several documents in one transaction: all are stored or none.
    pub fn import_all(&self, docs: &[Document], replace: bool) -> Result<Vec<ImportOutcome>> {
        let tx = self.ctx(
            "importing into",
            self.conn.unchecked_transaction().map_err(Into::into),
        )?;
        let mut out = Vec::new();
        for d in docs {
            out.push(self.import_text(&d.record, &d.text, replace)?);
        }
        self.ctx("importing into", tx.commit().map_err(Into::into))?;
        Ok(out)
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunRow>> {
        self.ctx("reading", self.list_inner())
    }

    fn list_inner(&self) -> Result<Vec<RunRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT run_id, label, started, finished, complete, os, hostname, benchmarks, origin
             FROM runs ORDER BY started, run_id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunRow {
                    run_id: r.get(0)?,
                    label: r.get(1)?,
                    started: r.get(2)?,
                    finished: r.get(3)?,
                    complete: r.get(4)?,
                    os: r.get(5)?,
                    hostname: r.get(6)?,
                    benchmarks: r.get(7)?,
                    origin: r.get(8)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The stored record JSON, exactly as written.
    pub fn get_json(&self, run_id: &str) -> Result<Option<String>> {
        self.ctx(
            "reading",
            self.conn
                .query_row("SELECT record FROM runs WHERE run_id = ?1", [run_id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(Into::into),
        )
    }

    pub fn get(&self, run_id: &str) -> Result<Option<RunRecord>> {
        match self.get_json(run_id)? {
            None => Ok(None),
            Some(j) => Ok(Some(serde_json::from_str(&j).with_context(|| {
                format!("stored record {run_id} is not a valid {SCHEMA} record")
            })?)),
        }
    }

    /// The run as `results export` writes it: a measured run as `--export-json` wrote it; an
    /// imported one as the document it was imported from, verbatim (so fields a newer osgauge
    /// wrote are kept), unless that document holds nothing beyond what this osgauge knows.
    pub fn export_json(&self, run_id: &str) -> Result<Option<String>> {
        let row: Option<(String, String)> = self.ctx(
            "reading",
            self.conn
                .query_row(
                    "SELECT record, origin FROM runs WHERE run_id = ?1",
                    [run_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(Into::into),
        )?;
        let Some((text, origin)) = row else {
            return Ok(None);
        };
        let rec: RunRecord = serde_json::from_str(&text)
            .with_context(|| format!("stored record {run_id} is not a valid {SCHEMA} record"))?;
        let canonical = crate::export::json::render(&rec)?;
        if origin == Origin::Imported.as_str() {
            let orig: serde_json::Value = serde_json::from_str(&text)?;
            let known: serde_json::Value = serde_json::from_str(&canonical)?;
            if orig != known {
                let mut t = text;
                if !t.ends_with('\n') {
                    t.push('\n');
                }
                return Ok(Some(t));
            }
        }
        Ok(Some(canonical))
    }

    /// Resolve what the user typed: an exact run id, a label (the most recent run with it), or
    /// a unique run-id prefix (at least 4 characters).
    pub fn resolve(&self, key: &str) -> Result<Resolved> {
        self.resolve_with(key, false)
    }

    /// [`Store::resolve`] for destructive commands: a label naming several runs is
    /// [`Resolved::AmbiguousLabel`], never "the most recent".
    pub fn resolve_exactly(&self, key: &str) -> Result<Resolved> {
        self.resolve_with(key, true)
    }

    fn resolve_with(&self, key: &str, exactly: bool) -> Result<Resolved> {
        let rows = self.list()?;
        if let Some(r) = rows.iter().find(|r| r.run_id == key) {
            return Ok(Resolved::One(r.run_id.clone(), None));
        }
        let labelled: Vec<&RunRow> = rows
            .iter()
            .filter(|r| r.label.as_deref() == Some(key))
            .collect();
        if exactly && labelled.len() > 1 {
            return Ok(Resolved::AmbiguousLabel(
                labelled
                    .iter()
                    .map(|r| format!("{} (started {})", r.run_id, r.started))
                    .collect(),
            ));
        }
        if let Some(last) = labelled.last() {
            let note = (labelled.len() > 1).then(|| {
                format!(
                    "label '{key}' names {} runs; using the most recent ({})",
                    labelled.len(),
                    short_id(&last.run_id)
                )
            });
            return Ok(Resolved::One(last.run_id.clone(), note));
        }
        let k = key.to_ascii_lowercase();
        if k.len() >= 4 {
            let prefixed: Vec<&RunRow> = rows.iter().filter(|r| r.run_id.starts_with(&k)).collect();
            match prefixed.len() {
                1 => return Ok(Resolved::One(prefixed[0].run_id.clone(), None)),
                n if n > 1 => {
                    return Ok(Resolved::Ambiguous(
                        prefixed.iter().map(|r| r.run_id.clone()).collect(),
                    ));
                }
                _ => {}
            }
        }
        Ok(Resolved::NotFound)
    }

    /// Delete one run; false when it was not there.
    pub fn delete(&self, run_id: &str) -> Result<bool> {
        self.ctx(
            "deleting from",
            self.conn
                .execute("DELETE FROM runs WHERE run_id = ?1", [run_id])
                .map(|n| n > 0)
                .map_err(Into::into),
        )
    }
}

/// Result of [`Store::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The run id, and a note for the user when the choice was not obvious.
    One(String, Option<String>),
    Ambiguous(Vec<String>),
    /// A label several runs carry (only from [`Store::resolve_exactly`]): each run's id and
    /// start time.
    AmbiguousLabel(Vec<String>),
    NotFound,
}

/// The first 13 characters of a run id: for UUIDv7 the full millisecond timestamp, so distinct
/// for runs started at different times.
pub fn short_id(run_id: &str) -> &str {
    run_id.get(..13).unwrap_or(run_id)
}

/// One run record read from a file, with its original JSON text.
#[derive(Debug, Clone)]
pub struct Document {
    pub record: RunRecord,
    /// The record's JSON exactly as it stands in the file (whitespace outside it trimmed).
    pub text: String,
}

/// Read the text of a file to import, at most [`IMPORT_MAX_BYTES`].
pub fn read_import_file(path: &Path) -> Result<String> {
    read_text_capped(path, IMPORT_MAX_BYTES)
}

/// Read a UTF-8 text file of at most `cap` bytes; a longer one (or an endless one such as
/// `/dev/zero`) is an error naming the cap, found without reading more than `cap` bytes.
pub fn read_text_capped(path: &Path, cap: u64) -> Result<String> {
    let reading = || format!("reading {}", path.display());
    let f = std::fs::File::open(path).with_context(reading)?;
    let mut limited = f.take(cap + 1);
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow::Error::new(e).context(reading())),
        };
        if (bytes.len() + n) as u64 > cap {
            bail!(
                "{} is larger than the import limit of {}",
                path.display(),
                crate::units::format_size(cap)
            );
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(bytes).map_err(|e| anyhow!("{}: not UTF-8 text ({e})", path.display()))
}

/// Read run records from a file: a JSON record, a JSON array of records, or an osgauge HTML
/// report (the records embedded in it). At most [`IMPORT_MAX_BYTES`] are read.
pub fn read_records(path: &Path) -> Result<Vec<RunRecord>> {
    Ok(read_documents(path)?
        .into_iter()
        .map(|d| d.record)
        .collect())
}

/// [`read_records`], keeping each record's original text.
pub fn read_documents(path: &Path) -> Result<Vec<Document>> {
    let text = read_import_file(path)?;
    parse_documents(&text).with_context(|| format!("{}", path.display()))
}

/// See [`read_records`].
pub fn parse_records(text: &str) -> Result<Vec<RunRecord>> {
    Ok(parse_documents(text)?
        .into_iter()
        .map(|d| d.record)
        .collect())
}

/// See [`read_documents`]. A leading UTF-8 byte-order mark (PowerShell writes one) is skipped.
pub fn parse_documents(text: &str) -> Result<Vec<Document>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim_start();
    let json = if trimmed.starts_with('<') {
        crate::report::extract_embedded(text).ok_or_else(|| {
            anyhow!("HTML without embedded osgauge records (not an osgauge report?)")
        })?
    } else {
        text
    };
    let value: &serde_json::value::RawValue =
        serde_json::from_str(json).context("not valid JSON")?;
    let items: Vec<&serde_json::value::RawValue> = if value.get().starts_with('[') {
        serde_json::from_str(value.get()).context("not valid JSON")?
    } else {
        vec![value]
    };
    items
        .into_iter()
        .map(|raw| {
            let v: serde_json::Value = serde_json::from_str(raw.get()).context("not valid JSON")?;
            let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
            if schema != SCHEMA {
                bail!("not an osgauge run record (schema '{schema}', expected '{SCHEMA}')");
            }
            Ok(Document {
                record: serde_json::from_value(v)?,
                text: raw.get().to_string(),
            })
        })
        .collect()
}

/// What `results import` holds a record to (the store itself keeps whatever an earlier osgauge
/// stored; every reader prints it escaped), as a run osgauge makes satisfies: a label the command line
/// would accept, benchmark ids that are unique, and ids that are plain names (suite/name, no
/// control characters, no path steps such as `..`), since ids name files and rows downstream.
pub fn check_imported(r: &RunRecord) -> std::result::Result<(), String> {
    if let Some(l) = &r.label {
        crate::output::parse_label(l)
            .map_err(|e| format!("label '{}': {e}", crate::output::display_text(l, 40)))?;
    }
    let mut seen = std::collections::HashSet::new();
    for b in &r.benchmarks {
        let id = &b.id;
        let shown = || crate::output::display_text(id, 60);
        let plain = !id.is_empty()
            && id.len() <= 200
            && id
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..")
            && id
                .chars()
                .all(|c| c.is_alphanumeric() || "_-./:+@".contains(c));
        if !plain {
            return Err(format!(
                "benchmark id '{}' is not a plain name (letters, digits and _-./:+@, no empty, . or .. steps, at most 200 bytes)",
                shown()
            ));
        }
        if !seen.insert(id.as_str()) {
            return Err(format!("benchmark id '{}' appears more than once", shown()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_locked_are_retried_other_errors_are_not() {
        let sqlite = |code| {
            anyhow::Error::new(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                None,
            ))
        };
        assert!(is_busy(&sqlite(rusqlite::ffi::SQLITE_BUSY)));
        assert!(is_busy(
            &sqlite(rusqlite::ffi::SQLITE_LOCKED).context("upgrading the result store")
        ));
        assert!(!is_busy(&sqlite(rusqlite::ffi::SQLITE_CORRUPT)));
        assert!(!is_busy(&anyhow!("database is locked")));
    }
}
