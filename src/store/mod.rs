//! The result store: an embedded SQLite file holding every run record.
//!
//! One row per run: the full JSON record (exactly as serialised, so export is round-trip exact)
//! plus indexed columns for listing and lookup. A run is written when it starts and again after
//! each benchmark finishes, so an interrupted or killed run keeps what was measured and shows as
//! incomplete. The schema is versioned with `PRAGMA user_version` and upgraded by the migrations
//! below; WAL mode, a busy timeout and one statement or transaction per write keep concurrent
//! invocations from corrupting it.
//!
//! Location: `--store PATH`, else the `OSGAUGE_STORE` environment variable, else
//! `<user data dir>/osgauge/results.sqlite` (XDG data dir on Linux, `~/Library/Application
//! Support` on macOS, `%APPDATA%` on Windows).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::model::{RunRecord, SCHEMA};

/// Environment variable naming the store file (used when `--store` is not given).
pub const STORE_ENV: &str = "OSGAUGE_STORE";

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

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// The store path when none is given on the command line: `OSGAUGE_STORE`, else the user data dir.
pub fn default_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(STORE_ENV).filter(|p| !p.is_empty()) {
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

impl Store {
    /// Open (creating it and its directory if needed) and upgrade the store at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the store directory {}", dir.display()))?;
        }
        // The busy handler does not cover every lock SQLite takes while a fresh store is set up
        // (switching to WAL, WAL recovery): another invocation opening the same new store at the
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

    fn open_once(path: &Path) -> Result<Store> {
        let conn = Connection::open(path)
            .with_context(|| format!("opening the result store {}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: readers never block the writer and a killed writer leaves a consistent database.
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            // Some file systems (network mounts) refuse WAL; the rollback journal is still safe.
            eprintln!(
                "osgauge: note: store {} uses journal mode {mode} (WAL unavailable)",
                path.display()
            );
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store
            .migrate()
            .with_context(|| format!("upgrading the result store {}", path.display()))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        tx.commit()?;
        Ok(())
    }

    /// Insert or update a run (one atomic statement).
    pub fn save(&self, record: &RunRecord, origin: Origin) -> Result<()> {
        let json = serde_json::to_string(record)?;
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
            ],
        )?;
        Ok(())
    }

    /// Store an imported record. An identical record already stored is left alone; a different
    /// one with the same id is an error unless `replace`.
    pub fn import(&self, record: &RunRecord, replace: bool) -> Result<ImportOutcome> {
        if record.schema != SCHEMA {
            bail!(
                "record schema is '{}', this osgauge reads '{SCHEMA}'",
                record.schema
            );
        }
        let outcome = match self.get(&record.run_id.to_string())? {
            Some(existing) if existing == *record => return Ok(ImportOutcome::AlreadyStored),
            Some(_) if !replace => bail!(
                "a different run with id {} is already stored (use --replace to overwrite it)",
                record.run_id
            ),
            Some(_) => ImportOutcome::Replaced,
            None => ImportOutcome::Added,
        };
        self.save(record, Origin::Imported)?;
        Ok(outcome)
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunRow>> {
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
        Ok(self
            .conn
            .query_row("SELECT record FROM runs WHERE run_id = ?1", [run_id], |r| {
                r.get(0)
            })
            .optional()?)
    }

    pub fn get(&self, run_id: &str) -> Result<Option<RunRecord>> {
        match self.get_json(run_id)? {
            None => Ok(None),
            Some(j) => Ok(Some(serde_json::from_str(&j).with_context(|| {
                format!("stored record {run_id} is not a valid {SCHEMA} record")
            })?)),
        }
    }

    /// Resolve what the user typed: an exact run id, a label (the most recent run with it), or
    /// a unique run-id prefix (at least 4 characters).
    pub fn resolve(&self, key: &str) -> Result<Resolved> {
        let rows = self.list()?;
        if let Some(r) = rows.iter().find(|r| r.run_id == key) {
            return Ok(Resolved::One(r.run_id.clone(), None));
        }
        let labelled: Vec<&RunRow> = rows
            .iter()
            .filter(|r| r.label.as_deref() == Some(key))
            .collect();
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
        Ok(self
            .conn
            .execute("DELETE FROM runs WHERE run_id = ?1", [run_id])?
            > 0)
    }
}

/// Result of [`Store::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The run id, and a note for the user when the choice was not obvious.
    One(String, Option<String>),
    Ambiguous(Vec<String>),
    NotFound,
}

/// The first 13 characters of a run id: for UUIDv7 the full millisecond timestamp, so distinct
/// for runs started at different times.
pub fn short_id(run_id: &str) -> &str {
    run_id.get(..13).unwrap_or(run_id)
}

/// Read run records from a file: a JSON record, a JSON array of records, or an osgauge HTML
/// report (the records embedded in it).
pub fn read_records(path: &Path) -> Result<Vec<RunRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_records(&text).with_context(|| format!("{}", path.display()))
}

/// See [`read_records`].
pub fn parse_records(text: &str) -> Result<Vec<RunRecord>> {
    let trimmed = text.trim_start();
    let json = if trimmed.starts_with('<') {
        crate::report::extract_embedded(text).ok_or_else(|| {
            anyhow!("HTML without embedded osgauge records (not an osgauge report?)")
        })?
    } else {
        text
    };
    let value: serde_json::Value = serde_json::from_str(json).context("not valid JSON")?;
    let items = match value {
        serde_json::Value::Array(a) => a,
        v => vec![v],
    };
    items
        .into_iter()
        .map(|v| {
            let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
            if schema != SCHEMA {
                bail!("not an osgauge run record (schema '{schema}', expected '{SCHEMA}')");
            }
            Ok(serde_json::from_value(v)?)
        })
        .collect()
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
