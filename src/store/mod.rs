//! The result store: every run record, in an embedded SQLite file (the default) or a PostgreSQL
//! database shared by many machines (a `postgres://` / `postgresql://` URL as `--store` or
//! `OSGAUGE_STORE`). One interface ([`Store`]), two backends: [`sqlite`] and [`postgres`].
//!
//! Both keep the same logical content: one row per run — the full JSON record exactly as
//! serialised (so export is round-trip exact) plus indexed columns for listing and lookup. A run
//! is written when it starts and again after each benchmark finishes, so an interrupted or killed
//! run keeps what was measured and shows as incomplete; every write is read back before it counts
//! as stored. Both carry a schema version upgraded by migrations, and refuse a database that is
//! not osgauge's ([`NotAStore`]). Every error names the store (a PostgreSQL URL always without
//! its password) and carries a hint suited to its kind ([`Trouble`]).
//!
//! Location: `--store PATH|URL`, else the `OSGAUGE_STORE` environment variable, else
//! `<user data dir>/osgauge/results.sqlite` (XDG data dir on Linux, `~/Library/Application
//! Support` on macOS, `%APPDATA%` on Windows). An empty path is refused.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::record::{RunRecord, SCHEMA};

pub mod copy;
pub mod location;
pub mod pending;
pub mod postgres;
pub mod sqlite;
pub mod tls;

pub use location::{BadLocation, shown};
pub use postgres::{ConnectError, redact_args, redact_url};

/// Environment variable naming the store file (used when `--store` is not given).
pub const STORE_ENV: &str = "OSGAUGE_STORE";

/// `PRAGMA application_id` of an osgauge store: ASCII "OSGa".
pub const APPLICATION_ID: i32 = 0x4F53_4761;

/// The largest file `results import` (and compare/report) reads.
pub const IMPORT_MAX_BYTES: u64 = 256 << 20;

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
    /// The machine's stable id (`machine.machine_id`), when recorded.
    pub machine_id: Option<String>,
    /// The run's tags (`tags`).
    pub tags: std::collections::BTreeMap<String, String>,
    pub benchmarks: u32,
    pub origin: String,
}

/// Tags as a store column holds them (a JSON object; NULL or anything else: none).
pub fn tags_of_column(text: Option<&str>) -> std::collections::BTreeMap<String, String> {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

/// A record's tags as a store column holds them: a JSON object, NULL when there are none.
pub fn tags_column(record: &RunRecord) -> Option<String> {
    (!record.tags.is_empty())
        .then(|| serde_json::to_string(&record.tags).expect("a map of strings"))
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
#[error("{} is not an osgauge result store: {why}", shown(path))]
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
    /// The database server cannot be reached (or the connection to it was lost).
    Unreachable,
    /// The database takes no writes (a read-only database or session, a standby server).
    ReadOnly,
    /// The store's tables are not as osgauge made them (a column dropped, renamed or added by
    /// hand).
    Altered,
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
            if let Some(t) = postgres::trouble_of(c) {
                return t;
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
        if postgres::url_of(path).is_some() {
            return postgres::hint_for(&anyhow!("{self:?}"), self, "");
        }
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
            Trouble::Unreachable | Trouble::ReadOnly | Trouble::Altered | Trouble::Other => {
                String::new()
            }
        }
    }
}

/// A store error: what was being done, the store path, the cause and a hint, on one line.
#[derive(Debug, thiserror::Error)]
#[error("{doing} the result store {}: {cause}{}", shown(path), if hint.is_empty() { String::new() } else { format!("; {hint}") })]
pub struct StoreError {
    pub path: PathBuf,
    pub doing: String,
    pub cause: String,
    pub trouble: Trouble,
    pub hint: String,
}

/// Wrap `e` (unless it already names the store) with the path and a hint.
/// The first five of `names`, comma-separated, with `, …` when there are more (a foreign
/// database's tables in an error message).
fn first_names(names: &[String]) -> String {
    let mut list = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 5 {
        list.push_str(", …");
    }
    list
}

fn wrap(path: &Path, doing: &str, e: anyhow::Error) -> anyhow::Error {
    if e.chain().any(|c| {
        c.is::<StoreError>()
            || c.is::<NotAStore>()
            || c.is::<ConnectError>()
            || c.is::<BadLocation>()
    }) {
        return e;
    }
    let trouble = Trouble::of(&e);
    let hint = if postgres::url_of(path).is_some() {
        postgres::hint_for(&e, trouble, doing)
    } else {
        trouble.hint(path)
    };
    anyhow::Error::new(StoreError {
        path: path.to_path_buf(),
        doing: doing.to_string(),
        cause: location::redact(&cause_text(&e)),
        trouble,
        hint,
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

/// Where a record's JSON `text` holds a NUL character (U+0000): the path of the first string
/// (or key) with one, e.g. `label` or `benchmarks[2].error`. PostgreSQL's text and JSONB cannot
/// hold NUL, so neither store takes such a run (runs move between the two kinds as they are).
pub fn nul_at(text: &str) -> Option<String> {
    // JSON writes NUL only as the escape \u0000.
    if !text.contains("\\u0000") {
        return None;
    }
    fn walk(v: &serde_json::Value, path: &str) -> Option<String> {
        let at = |p: &str, k: &str| {
            if p.is_empty() {
                k.to_string()
            } else {
                format!("{p}.{k}")
            }
        };
        match v {
            serde_json::Value::String(s) => s.contains('\0').then(|| path.to_string()),
            serde_json::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, x)| walk(x, &format!("{path}[{i}]"))),
            serde_json::Value::Object(o) => o.iter().find_map(|(k, x)| {
                if k.contains('\0') {
                    Some(at(path, &k.replace('\0', "\\u0000")))
                } else {
                    walk(x, &at(path, k))
                }
            }),
            _ => None,
        }
    }
    walk(&serde_json::from_str(text).ok()?, "")
}

/// The error for a run that holds a NUL character, before anything of it is written.
fn refuse_nul(record: &RunRecord, text: &str) -> Result<()> {
    match nul_at(text) {
        None => Ok(()),
        Some(at) => bail!(
            "run {}: its {at} holds a NUL character (\\u0000), which a PostgreSQL store cannot hold, so no store takes it: not stored (remove the character from the record)",
            record.run_id
        ),
    }
}

/// Whether `e` says a PostgreSQL store cannot be used at all: a bad URL, a server that cannot be
/// reached, a login refused (the CLI exits 2, as for a file that is not a store).
pub fn is_connect_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<ConnectError>())
}

/// Whether two stored texts of one run are the same record: byte-equal, or equal as JSON (a
/// store may keep the text reformatted). What `results push/pull` and a pending upload compare.
pub fn same_record_text(a: &str, b: &str) -> bool {
    a == b
        || serde_json::from_str::<serde_json::Value>(a).ok()
            == serde_json::from_str::<serde_json::Value>(b).ok()
}

/// Whether `e` is the store's refusal of a file that is not an osgauge store, or of a location
/// that looks like a URL and is not a supported one.
pub fn is_not_a_store(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.is::<NotAStore>() || c.is::<BadLocation>())
}

/// An open result store: the embedded SQLite file or a PostgreSQL database.
pub struct Store {
    backend: Backend,
    /// The SQLite file, or the PostgreSQL URL without its password (see [`Store::path`]).
    path: PathBuf,
}

enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(Box<postgres::Pg>),
}

/// Call the same method on whichever backend is open.
macro_rules! on_backend {
    ($self:expr, $b:ident => $e:expr) => {
        match &$self.backend {
            Backend::Sqlite($b) => $e,
            Backend::Postgres($b) => $e,
        }
    };
}

/// The local SQLite store: `OSGAUGE_STORE` when it names a file, else
/// `<user data dir>/osgauge/results.sqlite` (where a run goes on when the database server it was
/// writing to is lost).
pub fn local_path() -> Result<PathBuf> {
    match std::env::var_os(STORE_ENV) {
        Some(p) if !p.is_empty() && postgres::url_of(Path::new(&p)).is_none() => {
            Ok(PathBuf::from(p))
        }
        _ => {
            let dir = dirs::data_dir().ok_or_else(|| {
                anyhow!("no user data directory on this system for the local store")
            })?;
            Ok(dir.join("osgauge").join("results.sqlite"))
        }
    }
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

impl Store {
    /// Open the store at `path` for writing: a `postgres://` / `postgresql://` URL is a
    /// PostgreSQL database (connected, checked to be osgauge's, its schema created or
    /// upgraded); anything else is the SQLite file, created (with its directory) if missing,
    /// refused if it is not an osgauge store or is damaged, its schema upgraded.
    pub fn open(path: &Path) -> Result<Store> {
        location::check(path)?;
        if let Some(url) = postgres::url_of(path) {
            let shown = postgres::remember(&url);
            return postgres::Pg::open_write(&url)
                .map(|pg| Store {
                    backend: Backend::Postgres(Box::new(pg)),
                    path: shown.clone(),
                })
                .map_err(|e| wrap(&shown, "opening", e));
        }
        sqlite::Sqlite::open_write(path)
            .map(|s| Store {
                backend: Backend::Sqlite(s),
                path: path.to_path_buf(),
            })
            .map_err(|e| wrap(path, "opening", e))
    }

    /// Open the store at `path` for reading only: nothing is created or changed (SQLite:
    /// `SQLITE_OPEN_READ_ONLY`; PostgreSQL: a read-only session). `None` when there is no store
    /// there yet (no file; a database without osgauge's tables).
    pub fn open_read_only(path: &Path) -> Result<Option<Store>> {
        location::check(path)?;
        if let Some(url) = postgres::url_of(path) {
            let shown = postgres::remember(&url);
            return postgres::Pg::open_read(&url)
                .map(|pg| {
                    pg.map(|pg| Store {
                        backend: Backend::Postgres(Box::new(pg)),
                        path: shown.clone(),
                    })
                })
                .map_err(|e| wrap(&shown, "opening", e));
        }
        sqlite::Sqlite::open_read(path)
            .map(|s| {
                s.map(|s| Store {
                    backend: Backend::Sqlite(s),
                    path: path.to_path_buf(),
                })
            })
            .map_err(|e| wrap(path, "opening", e))
    }

    /// Where the store is, for messages: the SQLite file, or the PostgreSQL URL without its
    /// password (opening this path again in the same process connects with the password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this store is a PostgreSQL database (a server the run reaches over a connection
    /// that may be lost).
    pub fn is_server(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// For a PostgreSQL store, whether its connection is encrypted, as the server reports it
    /// (e.g. `encrypted, TLSv1.3 (TLS_AES_256_GCM_SHA384)`, `not encrypted`); `None` for a
    /// SQLite file.
    pub fn transport(&self) -> Option<&str> {
        match &self.backend {
            Backend::Postgres(pg) => Some(pg.transport()),
            Backend::Sqlite(_) => None,
        }
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<u32> {
        self.ctx("reading", on_backend!(self, b => b.schema_version()))
    }

    fn save_text(&self, record: &RunRecord, json: &str, origin: Origin) -> Result<()> {
        refuse_nul(record, json)?;
        on_backend!(self, b => b.save_text(record, json, origin))
    }

    /// Rewrite a run that is already stored (a run being measured, after each benchmark), then
    /// read it back. Ok(false), writing nothing, when the run is no longer there: someone deleted
    /// it meanwhile (`results delete`), and a deleted run is not brought back.
    pub fn update(&self, record: &RunRecord) -> Result<bool> {
        let json = serde_json::to_string(record)?;
        refuse_nul(record, &json).map_err(|e| wrap(&self.path, "writing to", e))?;
        self.ctx(
            &format!("writing run {} to", record.run_id),
            on_backend!(self, b => b.update(record, &json)),
        )
    }

    /// Every run, oldest first.
    pub fn list(&self) -> Result<Vec<RunRow>> {
        self.ctx("reading", on_backend!(self, b => b.list()))
    }

    /// The stored record JSON, exactly as written.
    pub fn get_json(&self, run_id: &str) -> Result<Option<String>> {
        Ok(self.get_row(run_id)?.map(|(text, _)| text))
    }

    /// The stored record JSON, exactly as written, and its origin (`measured`/`imported`).
    pub fn get_row(&self, run_id: &str) -> Result<Option<(String, String)>> {
        self.ctx("reading", on_backend!(self, b => b.get_row(run_id)))
    }

    /// Delete one run; false when it was not there.
    pub fn delete(&self, run_id: &str) -> Result<bool> {
        self.ctx("deleting from", on_backend!(self, b => b.delete(run_id)))
    }

    /// Store `text` (a record's JSON, parsing to `record`) verbatim with `origin`, as
    /// `results push/pull` copies a run between stores, then read it back.
    pub fn put_text(&self, record: &RunRecord, text: &str, origin: Origin) -> Result<()> {
        self.ctx(
            &format!("writing run {} to", record.run_id),
            self.save_text(record, text, origin),
        )
    }

    /// Store `text` (a record's JSON, parsing to `record`) with `origin` only if no run with its
    /// id is stored yet, atomically (of concurrent copies of one run, one stores it), then read
    /// it back. False when a run with that id was already there (nothing written).
    pub fn put_new(&self, record: &RunRecord, text: &str, origin: Origin) -> Result<bool> {
        self.ctx(&format!("writing run {} to", record.run_id), {
            refuse_nul(record, text)
                .and_then(|()| on_backend!(self, b => b.insert_new(record, text, origin)))
        })
    }

    /// Wrap an error of an operation on this store with its path and a hint.
    fn ctx<T>(&self, doing: &str, r: Result<T>) -> Result<T> {
        r.map_err(|e| wrap(&self.path, doing, e))
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
        let all = || {
            let mut out = Vec::new();
            for d in docs {
                out.push(self.import_text(&d.record, &d.text, replace)?);
            }
            Ok(out)
        };
        self.ctx(
            "importing into",
            on_backend!(self, b => b.in_transaction(all)),
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
        let row = self.get_row(run_id)?;
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

/// The first 13 characters of a run id: for UUIDv7 the millisecond timestamp, so distinct for
/// runs started at different times — but two runs started in one millisecond share it: where
/// several ids are shown together, use [`short_ids`].
pub fn short_id(run_id: &str) -> &str {
    run_id.get(..13).unwrap_or(run_id)
}

/// Short forms of `ids` shown together: each the shortest prefix of at least 13 characters (not
/// ending on a dash) that no other of `ids` starts with, so each resolves to its run (runs
/// started in the same millisecond get longer prefixes, into the random part).
pub fn short_ids(ids: &[&str]) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let mut n = 13.min(id.len());
            loop {
                while n < id.len() && id.as_bytes()[n - 1] == b'-' {
                    n += 1;
                }
                let p = &id[..n];
                if n >= id.len() || !ids.iter().any(|o| o != id && o.starts_with(p)) {
                    return p.to_string();
                }
                n += 1;
            }
        })
        .collect()
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
        crate::embedded::extract_embedded(text).ok_or_else(|| {
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
    fn first_names_lists_five_and_says_when_there_are_more() {
        let names = |n: usize| (1..=n).map(|i| format!("t{i}")).collect::<Vec<_>>();
        assert_eq!(first_names(&names(0)), "");
        assert_eq!(first_names(&names(2)), "t1, t2");
        assert_eq!(first_names(&names(5)), "t1, t2, t3, t4, t5");
        assert_eq!(first_names(&names(6)), "t1, t2, t3, t4, t5, …");
    }

    #[test]
    fn short_ids_are_unique_prefixes_even_within_one_millisecond() {
        // Two runs of one millisecond (same 48-bit timestamp), one of another.
        let a = "019ac1e2-3f4a-7b10-8c2d-aaaaaaaaaaaa";
        let b = "019ac1e2-3f4a-7b10-9d3e-bbbbbbbbbbbb";
        let c = "019ac1e2-3f4b-7000-8000-cccccccccccc";
        let s = short_ids(&[a, b, c]);
        assert_eq!(
            s,
            [
                "019ac1e2-3f4a-7b10-8",
                "019ac1e2-3f4a-7b10-9",
                "019ac1e2-3f4b"
            ]
        );
        for (id, p) in [a, b, c].iter().zip(&s) {
            assert!(id.starts_with(p.as_str()) && !p.ends_with('-'));
        }
        assert_eq!(short_ids(&[a]), ["019ac1e2-3f4a"]);
    }
}
