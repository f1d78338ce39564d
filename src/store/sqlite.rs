//! The embedded SQLite backend of the result store (see the parent module for the store's contract).
//!
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

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::{APPLICATION_ID, NotAStore, Origin, RunRow, StoreError, Trouble};
use crate::record::RunRecord;

/// The columns of the `runs` table as schema version 1 made them, in order (used to recognise
/// stores made before the application id was set, which are all version 1).
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
/// The schema version this osgauge makes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

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
    // 2: machine identity and tags, as columns (filled from the records already stored).
    "ALTER TABLE runs ADD COLUMN machine_id TEXT;
    ALTER TABLE runs ADD COLUMN tags TEXT;
    UPDATE runs SET machine_id = json_extract(record, '$.machine.machine_id'),
                    tags = CASE WHEN json_type(record, '$.tags') = 'object'
                                 AND json_extract(record, '$.tags') <> '{}'
                                THEN json_extract(record, '$.tags') END
        WHERE json_valid(record);
    CREATE INDEX runs_machine_id ON runs(machine_id, started);",
];

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
    if !crate::platform::fs::POSIX_PATHS {
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
    if tables == ["runs"] && version == 1 {
        let cols: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('runs') ORDER BY cid")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if cols == RUNS_COLUMNS {
            return Ok(Kind::Unmarked);
        }
    }
    let list = super::first_names(&tables);
    Ok(Kind::Foreign(format!(
        "it is another application's SQLite database (tables: {list})"
    )))
}

pub(super) struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    /// Open the store at `path` for writing: create it (and its directory) if missing, refuse a
    /// file that is not an osgauge store or is damaged, upgrade its schema.
    pub fn open_write(path: &Path) -> Result<Sqlite> {
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
        if let Some(p) = crate::platform::fs::permissions_from_mode(0o644) {
            builder.permissions(p);
        }
        let tmp = builder
            .tempfile_in(dir)
            .with_context(|| format!("creating a new store in {}", dir.display()))?
            .into_temp_path();
        {
            let conn = Connection::open(&tmp)?;
            let mut store = Sqlite { conn };
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

    fn open_once(path: &Path) -> Result<Sqlite> {
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
        let mut store = Sqlite { conn };
        store.migrate().context("upgrading the schema")?;
        Ok(store)
    }

    /// Open the store at `path` for reading only (`SQLITE_OPEN_READ_ONLY`): nothing is created
    /// or changed. `None` when there is no store there yet.
    pub fn open_read(path: &Path) -> Result<Option<Sqlite>> {
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
        let store = Sqlite { conn };
        let version = store.schema_version()?;
        if version as usize > MIGRATIONS.len() {
            bail!(
                "the store has schema version {version}, newer than this osgauge knows ({}); use a newer osgauge",
                MIGRATIONS.len()
            );
        }
        Ok(Some(store))
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<u32> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
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

    /// Rewrite a run that is already stored; Ok(false) when it is no longer there.
    pub fn update(&self, record: &RunRecord, json: &str) -> Result<bool> {
        let id = record.run_id.to_string();
        {
            let n = self.conn.execute(
                "UPDATE runs SET label = ?2, started = ?3, finished = ?4, complete = ?5, os = ?6,
                    hostname = ?7, benchmarks = ?8, stored_at = ?9, record = ?10,
                    machine_id = ?11, tags = ?12
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
                    record.machine.machine_id,
                    super::tags_column(record),
                ],
            );
            match n {
                Ok(0) => Ok(false),
                Ok(_) => self.read_back(&id, json).map(|()| true),
                Err(e) => Err(e.into()),
            }
        }
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

    pub fn save_text(&self, record: &RunRecord, json: &str, origin: Origin) -> Result<()> {
        self.insert(
            record,
            json,
            origin,
            "DO UPDATE SET
                label = excluded.label, started = excluded.started, finished = excluded.finished,
                complete = excluded.complete, os = excluded.os, hostname = excluded.hostname,
                benchmarks = excluded.benchmarks, origin = excluded.origin,
                stored_at = excluded.stored_at, record = excluded.record,
                machine_id = excluded.machine_id, tags = excluded.tags",
        )?;
        self.read_back(&record.run_id.to_string(), json)
    }

    /// Store a run only if no run with its id is there (one statement: of two writers, one
    /// stores it). True when this call stored it (then read back).
    pub fn insert_new(&self, record: &RunRecord, json: &str, origin: Origin) -> Result<bool> {
        if self.insert(record, json, origin, "DO NOTHING")? == 0 {
            return Ok(false);
        }
        self.read_back(&record.run_id.to_string(), json)?;
        Ok(true)
    }

    /// One INSERT of a run's row, `on_conflict` saying what a run of the same id already there
    /// gets (`DO UPDATE SET …` or `DO NOTHING`): the rows it changed.
    fn insert(
        &self,
        record: &RunRecord,
        json: &str,
        origin: Origin,
        on_conflict: &str,
    ) -> Result<usize> {
        let sql = format!(
            "INSERT INTO runs (run_id, label, started, finished, complete, os, hostname, benchmarks,
                               origin, stored_at, record, machine_id, tags)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
             ON CONFLICT(run_id) {on_conflict}"
        );
        Ok(self.conn.execute(
            &sql,
            params![
                record.run_id.to_string(),
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
                record.machine.machine_id,
                super::tags_column(record),
            ],
        )?)
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunRow>> {
        // A store of schema version 1 (opened read-only, so not upgraded) has no columns for
        // machine ids and tags: read from the records (those made before them have none).
        let sql = if self.schema_version()? >= 2 {
            "SELECT run_id, label, started, finished, complete, os, hostname, benchmarks, origin,
                    machine_id, tags
             FROM runs ORDER BY started, run_id"
        } else {
            "SELECT run_id, label, started, finished, complete, os, hostname, benchmarks, origin,
                    json_extract(record, '$.machine.machine_id'),
                    CASE json_type(record, '$.tags') WHEN 'object' THEN json_extract(record, '$.tags') END
             FROM runs ORDER BY started, run_id"
        };
        let mut stmt = self.conn.prepare(sql)?;
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
                    machine_id: r.get(9)?,
                    tags: super::tags_of_column(r.get::<_, Option<String>>(10)?.as_deref()),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The stored record JSON, exactly as written, and its origin.
    pub fn get_row(&self, run_id: &str) -> Result<Option<(String, String)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT record, origin FROM runs WHERE run_id = ?1",
                [run_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// Delete one run; false when it was not there.
    pub fn delete(&self, run_id: &str) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM runs WHERE run_id = ?1", [run_id])?
            > 0)
    }

    /// Run `f` in one transaction: everything it writes is stored, or nothing.
    pub fn in_transaction<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let tx = self.conn.unchecked_transaction()?;
        let out = f()?;
        tx.commit()?;
        Ok(out)
    }
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
        assert!(!is_busy(&anyhow::anyhow!("database is locked")));
    }
}
