//! The PostgreSQL backend of the result store: one database shared by many machines.
//!
//! Selected by a `postgres://` or `postgresql://` URL as `--store` or `OSGAUGE_STORE`:
//! `postgres://USER[:PASSWORD]@HOST[:PORT]/DBNAME[?PARAM=VALUE&…]`. A Unix-socket directory is
//! given as `?host=/run/postgresql` or percent-encoded in the host part
//! (`postgres://%2Frun%2Fpostgresql/osgauge`). Credentials as libpq takes them: the URL, else
//! `PGPASSWORD`, else the password file (`PGPASSFILE`, default `~/.pgpass`; ignored when group or
//! others may read it, as libpq does); the user defaults to `PGUSER`, else the login name, the
//! database to `PGDATABASE`, else the user name; the host to `PGHOST`, else the Debian socket
//! directory `/var/run/postgresql` when it exists, else `localhost`; the port to `PGPORT`, else
//! 5432. Parameters other than the known ones below are refused (a typo must not be ignored).
//!
//! TLS: `sslmode` (`disable`, `prefer` — the default —, `require`, `verify-ca`, `verify-full`)
//! and `sslrootcert` as libpq defines them (`PGSSLMODE`, `PGSSLROOTCERT` as defaults); see
//! [`super::tls`]. Whether the session is encrypted is read back from the server
//! ([`Pg::transport`]).
//!
//! Tables (schema version 1): `osgauge_schema` (one row: application `osgauge`, version) marks
//! the database as osgauge's; `runs` has one row per run — the indexed columns (run id, label,
//! hostname, OS, kernel, start time, completeness) plus the record exactly as written (`record`,
//! text, so export is byte for byte) and the same record as JSONB (`doc`, generated from it) for
//! queries; `run_benchmarks` has one row per benchmark of a run (its JSON as JSONB), written in
//! the same transaction as the run row each time a benchmark finishes. Every write is one short
//! transaction of its own, so many machines write at once without waiting for each other (run
//! ids are UUIDv7: two machines never collide). The schema is created and upgraded under an
//! advisory lock, so writers that start together on an empty database migrate it once.
//!
//! A database that holds tables but not osgauge's mark is refused ([`NotAStore`]); an empty one
//! is made osgauge's by the first writer; a reader of an empty one sees no runs and changes
//! nothing (its session is read-only).
//!
//! The password never leaves this module: [`Store::path`](super::Store::path) is the URL without
//! it ([`redact_url`]); the process remembers the full URL under that name, so opening the
//! shown location again (the read-back of a run through a fresh connection) connects as before.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::{NotAStore, Origin, RunRow, Trouble, tls};
use crate::record::RunRecord;

/// Schema migrations; entry `i` upgrades the version from `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: runs, their benchmarks.
    "CREATE TABLE runs (
        run_id     UUID PRIMARY KEY,
        label      TEXT,
        started    TEXT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        finished   TEXT,
        complete   BOOLEAN NOT NULL,
        os         TEXT NOT NULL,
        hostname   TEXT,
        kernel     TEXT,
        benchmarks INTEGER NOT NULL,
        origin     TEXT NOT NULL,
        stored_at  TIMESTAMPTZ NOT NULL,
        record     TEXT NOT NULL,
        doc        JSONB GENERATED ALWAYS AS (record::jsonb) STORED
    );
    CREATE INDEX runs_label ON runs (label, started_at);
    CREATE INDEX runs_started ON runs (started_at);
    CREATE INDEX runs_hostname ON runs (hostname, started_at);
    CREATE INDEX runs_os ON runs (os, kernel);
    CREATE INDEX runs_complete ON runs (complete);
    CREATE TABLE run_benchmarks (
        run_id       UUID NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        position     INTEGER NOT NULL,
        benchmark_id TEXT NOT NULL,
        suite        TEXT NOT NULL,
        failed       BOOLEAN NOT NULL,
        result       JSONB NOT NULL,
        PRIMARY KEY (run_id, position)
    );
    CREATE INDEX run_benchmarks_id ON run_benchmarks (benchmark_id);",
    // 2: machine identity and tags, generated from the record (so every writer, of any version
    // from this one on, fills them; the rows already stored are filled as the columns are made).
    "ALTER TABLE runs
        ADD COLUMN machine_id TEXT GENERATED ALWAYS AS (record::jsonb -> 'machine' ->> 'machine_id') STORED,
        ADD COLUMN tags JSONB GENERATED ALWAYS AS (
            CASE WHEN jsonb_typeof(record::jsonb -> 'tags') = 'object'
                  AND record::jsonb -> 'tags' <> '{}'::jsonb
                 THEN record::jsonb -> 'tags' END) STORED;
    CREATE INDEX runs_machine_id ON runs (machine_id, started_at);
    CREATE INDEX runs_tags ON runs USING gin (tags);",
    // 3: who stored each row, and row-level security so that roles other than the tables' owner
    // (the writer and reader roles of [`ROLES_SQL`]) read every run but change or delete only
    // the runs they stored. The owner is not subject to the policies.
    "ALTER TABLE runs ADD COLUMN stored_by TEXT NOT NULL DEFAULT current_user;
    ALTER TABLE run_benchmarks ADD COLUMN stored_by TEXT NOT NULL DEFAULT current_user;
    ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
    ALTER TABLE run_benchmarks ENABLE ROW LEVEL SECURITY;
    CREATE POLICY osgauge_read ON runs FOR SELECT USING (true);
    CREATE POLICY osgauge_add ON runs FOR INSERT WITH CHECK (stored_by = current_user);
    CREATE POLICY osgauge_own ON runs FOR UPDATE
        USING (stored_by = current_user) WITH CHECK (stored_by = current_user);
    CREATE POLICY osgauge_own_delete ON runs FOR DELETE USING (stored_by = current_user);
    CREATE POLICY osgauge_read ON run_benchmarks FOR SELECT USING (true);
    CREATE POLICY osgauge_add ON run_benchmarks FOR INSERT WITH CHECK (stored_by = current_user);
    CREATE POLICY osgauge_own ON run_benchmarks FOR UPDATE
        USING (stored_by = current_user) WITH CHECK (stored_by = current_user);
    CREATE POLICY osgauge_own_delete ON run_benchmarks FOR DELETE
        USING (stored_by = current_user);",
];

/// The schema version this osgauge makes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The roles of a shared store, for its owner to run once the store exists (`osgauge fleet
/// roles` prints it): `osgauge_reader` reads every run; `osgauge_writer` reads every run, adds
/// runs, and updates or deletes only the runs it stored (row-level security, schema version 3).
/// Login roles are made members of one of them.
pub const ROLES_SQL: &str = "\
-- osgauge: the reader and writer roles of a shared result store.
-- Run as the owner of the store's tables (the role whose first osgauge run created them),
-- in the store's database, after that first run:  psql \"$URL\" -f roles.sql
-- Creating roles needs the CREATEROLE attribute (or a superuser).
DO $$
BEGIN
  IF to_regclass('osgauge_schema') IS NULL
     OR (SELECT version FROM osgauge_schema LIMIT 1) < 3 THEN
    RAISE EXCEPTION 'no osgauge result store of schema version 3 or later in this database: run osgauge once with --store URL as the owner first';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'osgauge_reader') THEN
    CREATE ROLE osgauge_reader NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'osgauge_writer') THEN
    CREATE ROLE osgauge_writer NOLOGIN;
  END IF;
END
$$;
DO $$
BEGIN
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO osgauge_reader, osgauge_writer', current_database());
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO osgauge_reader, osgauge_writer', current_schema());
END
$$;
GRANT SELECT ON osgauge_schema, runs, run_benchmarks TO osgauge_reader, osgauge_writer;
GRANT INSERT, UPDATE, DELETE ON runs, run_benchmarks TO osgauge_writer;
-- Then, for each person or machine (a password of your own in place of CHANGE-ME):
--   CREATE ROLE alice LOGIN PASSWORD 'CHANGE-ME' IN ROLE osgauge_writer;
--   CREATE ROLE dashboard LOGIN PASSWORD 'CHANGE-ME' IN ROLE osgauge_reader;
";

/// The advisory lock taken while the schema is checked and upgraded ("OSGa").
const SCHEMA_LOCK: i64 = 0x4F53_4761;

/// How long connecting may take unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The URL parameters accepted (libpq's names, those the client supports).
const KNOWN_PARAMS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "user",
    "password",
    "dbname",
    "sslmode",
    "sslrootcert",
    "connect_timeout",
    "application_name",
    "options",
    "keepalives",
    "keepalives_idle",
    "target_session_attrs",
];

/// A store URL that cannot be used, a server that cannot be reached, a login refused: the
/// command cannot start (the CLI exits 2). One line, never with the password.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConnectError(pub String);

/// Full URLs by the name they are shown under (see the module docs).
static KNOWN_URLS: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// Whether `s` starts with a PostgreSQL URL scheme.
fn is_url(s: &str) -> bool {
    super::location::is_pg_url(s)
}

/// The full URL when `path` names a PostgreSQL store (a URL, or the password-less name a store
/// opened in this process is shown under).
pub fn url_of(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    if !is_url(s) {
        return None;
    }
    let known = KNOWN_URLS.lock().unwrap_or_else(|p| p.into_inner());
    Some(
        known
            .as_ref()
            .and_then(|m| m.get(s))
            .cloned()
            .unwrap_or_else(|| s.to_string()),
    )
}

/// Remember `url` under its password-less name, and return that name.
pub fn remember(url: &str) -> PathBuf {
    let shown = redact_url(url);
    let mut known = KNOWN_URLS.lock().unwrap_or_else(|p| p.into_inner());
    known
        .get_or_insert_with(HashMap::new)
        .insert(shown.clone(), url.to_string());
    PathBuf::from(shown)
}

/// `s` with every secret removed: the one redaction ([`super::location::redact`]).
pub fn redact_url(s: &str) -> String {
    super::location::redact(s)
}

/// The command line as recorded in a run: every secret removed, whatever its form.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    super::location::redact_args(args)
}

/// The query parameters of `url` (raw, undecoded).
fn params(url: &str) -> Vec<(&str, &str)> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .collect()
}

/// `s` with `%XX` escapes decoded (as in a URL's query).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` without its TLS parameters (the client library knows neither `verify-ca`/`verify-full`
/// nor `sslrootcert`: they are [`tls::Settings`]).
fn without_tls_params(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let query = query.split('#').next().unwrap_or("");
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| {
            let k = kv.split('=').next().unwrap_or("");
            !kv.is_empty() && k != "sslmode" && k != "sslrootcert"
        })
        .collect();
    if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

/// The connection settings of `url`, completed as libpq completes them (see the module docs),
/// and its TLS settings.
fn config(url: &str) -> Result<(postgres::Config, tls::Settings), ConnectError> {
    let shown = redact_url(url);
    let bad = |why: String| ConnectError(format!("the result store URL {shown}: {why}"));
    check_authority(url).map_err(bad)?;
    let tls = tls_settings(url).map_err(bad)?;
    let mut c: postgres::Config = without_tls_params(url)
        .parse()
        .map_err(|e: postgres::Error| bad(format!("{e}")))?;
    c.ssl_mode(tls.mode.negotiate());
    complete_from_env(&mut c).map_err(bad)?;
    complete_password(&mut c);
    Ok((c, tls))
}

/// An environment variable, when set and not empty.
fn env_var(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

/// Err (why) when the user or password of `url` holds a raw '@': the host would be taken from
/// the middle of them.
fn check_authority(url: &str) -> Result<(), String> {
    let scheme_end = url.find("://").map(|i| i + 3).unwrap_or(0);
    let authority = url[scheme_end..]
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    if authority.matches('@').count() > 1 {
        return Err(
            "the user name or password holds a raw '@', so the host cannot be told apart: write each '@' in them as %40 (e.g. postgres://USER:p%40ss@HOST/DB), or give the password in PGPASSWORD or ~/.pgpass".into(),
        );
    }
    Ok(())
}

/// The TLS settings of `url`: its `sslmode` (else PGSSLMODE, else prefer) and `sslrootcert`
/// (else PGSSLROOTCERT). Err (why) for a parameter the store does not know or an unknown mode.
fn tls_settings(url: &str) -> Result<tls::Settings, String> {
    let mut mode = None;
    let mut root = None;
    for (k, v) in params(url) {
        if !KNOWN_PARAMS.contains(&k) {
            return Err(format!(
                "unknown parameter '{}' (known: {})",
                crate::output::display_text(k, 40),
                KNOWN_PARAMS.join(", ")
            ));
        }
        if k == "sslmode" {
            mode = Some(v.to_string());
        }
        if k == "sslrootcert" {
            root = Some(PathBuf::from(percent_decode(v)));
        }
    }
    let mode = match mode.or_else(|| env_var("PGSSLMODE")) {
        None => tls::SslMode::Prefer,
        Some(v) => tls::SslMode::parse(&v).ok_or_else(|| {
            format!(
                "sslmode '{}' is not one of disable, prefer, require, verify-ca, verify-full",
                crate::output::display_text(&v, 40)
            )
        })?,
    };
    Ok(tls::Settings {
        mode,
        root: root.or_else(|| env_var("PGSSLROOTCERT").map(PathBuf::from)),
    })
}

/// What the URL left out, as libpq fills it in: the user (PGUSER, else the login name), the
/// database (PGDATABASE, else the user's name), the host (PGHOST, else the local socket
/// directory where there is one, else localhost), the port (PGPORT), the connect timeout and the
/// application name. Err (why) for a PGPORT that is not a port or no user name at all.
fn complete_from_env(c: &mut postgres::Config) -> Result<(), String> {
    if c.get_user().is_none() {
        let user = env_var("PGUSER")
            .or_else(|| env_var("USER"))
            .or_else(|| env_var("LOGNAME"))
            .or_else(|| env_var("USERNAME"))
            .ok_or_else(|| {
                "no user name: give one in the URL (postgres://USER@…) or set PGUSER".to_string()
            })?;
        c.user(&user);
    }
    if c.get_dbname().is_none() {
        let db = env_var("PGDATABASE").unwrap_or_else(|| c.get_user().unwrap_or("").to_string());
        c.dbname(&db);
    }
    if c.get_hosts().is_empty() {
        match env_var("PGHOST") {
            #[cfg(unix)]
            Some(h) if h.starts_with('/') => {
                c.host_path(h);
            }
            Some(h) => {
                c.host(&h);
            }
            #[cfg(unix)]
            None if Path::new("/var/run/postgresql").is_dir() => {
                c.host_path("/var/run/postgresql");
            }
            None => {
                c.host("localhost");
            }
        }
    }
    if c.get_ports().is_empty()
        && let Some(p) = env_var("PGPORT")
    {
        let p: u16 = p
            .parse()
            .map_err(|_| format!("PGPORT '{p}' is not a port number"))?;
        c.port(p);
    }
    if c.get_connect_timeout().is_none() {
        c.connect_timeout(CONNECT_TIMEOUT);
    }
    if c.get_application_name().is_none() {
        c.application_name("osgauge");
    }
    Ok(())
}

/// The password, when the URL has none: PGPASSWORD, else the password file's entry for the
/// connection; why the password file was ignored is kept for the "no password" error.
fn complete_password(c: &mut postgres::Config) {
    *IGNORED_PASSFILE.lock().unwrap_or_else(|p| p.into_inner()) = None;
    if c.get_password().is_some() {
        return;
    }
    if let Some(p) = env_var("PGPASSWORD") {
        c.password(p);
    } else {
        match pgpass_lookup(c) {
            PassFile::Found(p) => {
                c.password(p);
            }
            PassFile::Ignored(why) => {
                *IGNORED_PASSFILE.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            }
            PassFile::None => {}
        }
    }
}

/// Why the password file was not read, when it was ignored (for the "no password" error).
static IGNORED_PASSFILE: Mutex<Option<String>> = Mutex::new(None);

/// What the password file gave.
enum PassFile {
    Found(String),
    /// There, but ignored: why (as libpq warns).
    Ignored(String),
    None,
}

/// The host name, port, database and user as the password file matches them.
fn pgpass_key(c: &postgres::Config) -> (String, String, String, String) {
    let host = match c.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        // libpq matches a Unix-socket connection as "localhost".
        _ => "localhost".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432).to_string();
    (
        host,
        port,
        c.get_dbname().unwrap_or("").to_string(),
        c.get_user().unwrap_or("").to_string(),
    )
}

/// The password for `c` from the password file, as libpq reads it.
fn pgpass_lookup(c: &postgres::Config) -> PassFile {
    let file = match std::env::var_os("PGPASSFILE") {
        Some(f) if !f.is_empty() => PathBuf::from(f),
        _ => match dirs::home_dir() {
            Some(h) => h.join(".pgpass"),
            None => return PassFile::None,
        },
    };
    let Ok(meta) = std::fs::metadata(&file) else {
        return PassFile::None;
    };
    if !meta.is_file() {
        return PassFile::Ignored(format!(
            "the password file {} is not a plain file",
            file.display()
        ));
    }
    // libpq ignores a password file group or others may read.
    match crate::platform::fs::secret_open_to_others(&file) {
        Ok(None) => {}
        Ok(Some(why)) => {
            return PassFile::Ignored(format!(
                "the password file {} was ignored, as libpq ignores one that group or others may read ({why})",
                file.display()
            ));
        }
        Err(e) => {
            return PassFile::Ignored(format!(
                "the password file {} could not be checked: {e}",
                file.display()
            ));
        }
    }
    let Ok(text) = std::fs::read_to_string(&file) else {
        return PassFile::Ignored(format!(
            "the password file {} cannot be read",
            file.display()
        ));
    };
    match pgpass_find(&text, &pgpass_key(c)) {
        Some(p) => PassFile::Found(p),
        None => PassFile::None,
    }
}

/// The first line of a password file matching `key` (host, port, database, user): `*` matches
/// anything, `\:` and `\\` are a literal colon and backslash.
fn pgpass_find(text: &str, key: &(String, String, String, String)) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = vec![String::new()];
        let mut chars = line.chars();
        while let Some(ch) = chars.next() {
            match ch {
                '\\' => {
                    if let Some(n) = chars.next() {
                        fields.last_mut().expect("one field").push(n);
                    }
                }
                ':' if fields.len() < 5 => fields.push(String::new()),
                ch => fields.last_mut().expect("one field").push(ch),
            }
        }
        if fields.len() != 5 {
            continue;
        }
        let want = [&key.0, &key.1, &key.2, &key.3];
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

/// The kind of trouble a PostgreSQL error is, for [`Trouble::of`].
pub(super) fn trouble_of(c: &(dyn std::error::Error + 'static)) -> Option<Trouble> {
    let e = c.downcast_ref::<postgres::Error>()?;
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return Some(match code {
            "42501" => Trouble::Permission,
            "25006" => Trouble::ReadOnly,
            "53100" | "53200" => Trouble::Full,
            "40P01" | "55P03" | "40001" => Trouble::Locked,
            "XX001" | "XX002" => Trouble::Corrupt,
            // Undefined column or table, a value a column refuses (NOT NULL, CHECK, type): the
            // tables are not as osgauge made them.
            "42703" | "42P01" | "42804" | "23502" | "23514" | "23503" => Trouble::Altered,
            c if c.starts_with("08") || c.starts_with("57P") => Trouble::Unreachable,
            _ => Trouble::Other,
        });
    }
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    Some(if e.is_closed() || io {
        Trouble::Unreachable
    } else {
        Trouble::Other
    })
}

/// The server's message of the first PostgreSQL error in `e`'s chain.
fn db_message(e: &anyhow::Error) -> String {
    e.chain()
        .find_map(|c| {
            c.downcast_ref::<postgres::Error>()?
                .as_db_error()
                .map(|d| d.message().to_string())
        })
        .unwrap_or_default()
}

/// The hint for a PostgreSQL store error: for a refused permission, what was refused (creating
/// the tables, writing, replacing another role's run, deleting, reading) decides it.
pub(super) fn hint_for(e: &anyhow::Error, t: Trouble, doing: &str) -> String {
    let msg = db_message(e);
    match t {
        Trouble::Permission if msg.contains("row-level security") => "this role may add runs and update its own, not replace or change a run another role stored (a writer role; see the README's roles): ask the store's owner".into(),
        Trouble::Permission if doing.starts_with("deleting") => "this role may not delete runs (a reader role only reads them; a writer role deletes only the runs it stored): ask the store's owner to delete them".into(),
        Trouble::Permission if msg.contains("for schema") || msg.contains("must be owner") => "the database user may not create or change tables here: make it the database's owner (ALTER DATABASE … OWNER TO …), or let the owner run osgauge once to set the store up".into(),
        Trouble::Permission if doing.starts_with("reading") || doing.starts_with("opening") => "this role may not read osgauge's tables: grant it the reader role (GRANT osgauge_reader TO …; see the README's roles)".into(),
        Trouble::Permission => "this role may not write osgauge's tables: use a writer role (GRANT osgauge_writer TO …; see the README's roles)".into(),
        Trouble::ReadOnly => "the database takes no writes (default_transaction_read_only, or a standby server): write to the primary, or ask its administrator".into(),
        Trouble::Altered => "osgauge's tables in this database were changed by hand (a column dropped, renamed or added NOT NULL): restore them as osgauge made them, or give osgauge a new database".into(),
        Trouble::Full => "the database server is out of disk space or memory".into(),
        Trouble::Locked => "another session holds a lock: try again".into(),
        Trouble::Corrupt => "the database reports damaged data: ask its administrator".into(),
        Trouble::Unreachable => "the database server cannot be reached or closed the connection: check that it is running".into(),
        Trouble::Other => String::new(),
    }
}

/// Connect to `url`: the errors a user can do something about are one [`ConnectError`] line.
/// TLS as the URL's `sslmode` says; never over a Unix socket (as libpq).
fn connect(url: &str) -> Result<postgres::Client> {
    let (mut c, tls) = config(url)?;
    let shown = redact_url(url);
    let user = c.get_user().unwrap_or("").to_string();
    let db = c.get_dbname().unwrap_or("").to_string();
    let host = match c.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => Some(h.clone()),
        _ => None,
    };
    let cannot =
        |why: String| ConnectError(format!("cannot connect to the result store {shown}: {why}"));
    let connected = if tls.mode == tls::SslMode::Disable || host.is_none() {
        c.ssl_mode(postgres::config::SslMode::Disable);
        c.connect(postgres::NoTls)
    } else {
        let config = tls::client_config(&tls).map_err(cannot)?;
        c.connect(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    };
    match connected {
        Ok(client) => Ok(client),
        Err(e) => {
            let msg = match e.as_db_error() {
                Some(d) if d.code().code() == "28000" && d.message().contains("no encryption") => {
                    format!(
                        "the server accepts this connection only with TLS (its pg_hba.conf: hostssl) and sslmode={} does not use it; use sslmode=require or verify-full ({})",
                        tls.mode.as_str(),
                        d.message()
                    )
                }
                Some(d) if matches!(d.code().code(), "28P01" | "28000") => format!(
                    "authentication failed for user \"{user}\" ({}); check the password (in the URL, PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf",
                    d.message()
                ),
                Some(d) if d.code().code() == "3D000" => {
                    format!("database \"{db}\" does not exist (create it: createdb -O {user} {db})")
                }
                Some(d) => format!("the server refused the connection: {}", d.message()),
                None => {
                    let text = e.to_string();
                    let source = std::error::Error::source(&e).map(|s| s.to_string());
                    if let Some(why) = tls::explain(&e, &tls, host.as_deref().unwrap_or("")) {
                        why
                    } else if text.contains("password missing")
                        || source
                            .as_deref()
                            .is_some_and(|s| s.contains("password missing"))
                    {
                        let ignored = IGNORED_PASSFILE
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .clone();
                        match ignored {
                            Some(why) => format!(
                                "the server asks for a password for user \"{user}\" and none was given: {why}"
                            ),
                            None => format!(
                                "the server asks for a password for user \"{user}\" and none was given (in the URL, PGPASSWORD or ~/.pgpass)"
                            ),
                        }
                    } else {
                        let why = source.unwrap_or(text);
                        format!(
                            "the server cannot be reached ({why}); check that it is running and the host, port or socket directory in the URL"
                        )
                    }
                }
            };
            Err(cannot(msg).into())
        }
    }
}

/// The osgauge tables of the database, if it is osgauge's.
enum Kind {
    /// Marked as osgauge's: the schema version.
    Ours(u32),
    /// No tables at all.
    Empty,
    Foreign(String),
}

fn identify(client: &mut impl postgres::GenericClient) -> Result<Kind> {
    // pg_tables lists every table, whatever this role may do with it (information_schema
    // hides the tables a role has no right on: a reader without rights would see "no store").
    let tables: Vec<String> = client
        .query(
            "SELECT tablename::text FROM pg_catalog.pg_tables
             WHERE schemaname = current_schema() ORDER BY 1",
            &[],
        )
        .context("listing the database's tables")?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if tables.is_empty() {
        return Ok(Kind::Empty);
    }
    if tables.iter().any(|t| t == "osgauge_schema") {
        let mark = client
            .query_opt(
                "SELECT application::text, version::bigint FROM osgauge_schema LIMIT 1",
                &[],
            )
            .context("reading osgauge's mark (table osgauge_schema)")?;
        if let Some(row) = mark {
            let app: String = row.get(0);
            let version: i64 = row.get(1);
            if app == "osgauge" {
                return Ok(Kind::Ours(u32::try_from(version).unwrap_or(u32::MAX)));
            }
        }
        return Ok(Kind::Foreign(
            "its osgauge_schema table does not carry osgauge's mark".into(),
        ));
    }
    let list = super::first_names(&tables);
    Ok(Kind::Foreign(format!(
        "the database holds another application's tables ({list}) and no osgauge mark; give osgauge a database of its own"
    )))
}

fn newer(version: u32) -> anyhow::Error {
    anyhow::anyhow!(
        "the store has schema version {version}, newer than this osgauge knows ({}); use a newer osgauge",
        MIGRATIONS.len()
    )
}

/// A delete that row-level security refused (another role's run).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RefusedDelete(pub String);

pub struct Pg {
    client: RefCell<postgres::Client>,
    /// The schema version of the database (a reader does not upgrade it).
    version: u32,
    /// Whether the session is encrypted, as the server reports it ([`tls::read_back`]).
    transport: String,
    /// Inside [`Pg::in_transaction`]: writes join that transaction.
    in_tx: Cell<bool>,
}

impl Pg {
    /// Connect for writing; make an empty database osgauge's, upgrade its schema, refuse
    /// another application's.
    pub fn open_write(url: &str) -> Result<Pg> {
        let mut client = connect(url)?;
        let transport = tls::read_back(&mut client)?;
        let shown = PathBuf::from(redact_url(url));
        {
            let mut tx = client.transaction()?;
            // Writers starting together on an empty database: one creates the schema.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
            let version = match identify(&mut tx)? {
                Kind::Foreign(why) => {
                    return Err(NotAStore { path: shown, why }.into());
                }
                Kind::Empty => {
                    tx.batch_execute(
                        "CREATE TABLE osgauge_schema (
                            application TEXT NOT NULL,
                            version     INTEGER NOT NULL,
                            created     TIMESTAMPTZ NOT NULL DEFAULT now()
                        );
                        INSERT INTO osgauge_schema (application, version) VALUES ('osgauge', 0);",
                    )
                    .context("creating the osgauge tables")?;
                    0
                }
                Kind::Ours(v) => v,
            };
            if version as usize > MIGRATIONS.len() {
                return Err(newer(version));
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.batch_execute(sql)
                    .with_context(|| format!("migration {}", i + 1))?;
                tx.execute(
                    "UPDATE osgauge_schema SET version = $1",
                    &[&((i + 1) as i32)],
                )?;
            }
            tx.commit()?;
        }
        Ok(Pg {
            client: RefCell::new(client),
            version: MIGRATIONS.len() as u32,
            transport,
            in_tx: Cell::new(false),
        })
    }

    /// Connect for reading only (a read-only session). `None` for an empty database.
    pub fn open_read(url: &str) -> Result<Option<Pg>> {
        let mut client = connect(url)?;
        let transport = tls::read_back(&mut client)?;
        let shown = PathBuf::from(redact_url(url));
        client.batch_execute("SET default_transaction_read_only = on")?;
        match identify(&mut client)? {
            Kind::Empty => Ok(None),
            Kind::Foreign(why) => Err(NotAStore { path: shown, why }.into()),
            Kind::Ours(v) if v as usize > MIGRATIONS.len() => Err(newer(v)),
            // Made by a writer that has not finished creating the tables yet.
            Kind::Ours(0) => Ok(None),
            Kind::Ours(v) => Ok(Some(Pg {
                client: RefCell::new(client),
                version: v,
                transport,
                in_tx: Cell::new(false),
            })),
        }
    }

    /// Whether the session is encrypted, as the server reported it on connecting: e.g.
    /// `encrypted, TLSv1.3 (TLS_AES_256_GCM_SHA384)` or `not encrypted`.
    pub fn transport(&self) -> &str {
        &self.transport
    }

    pub fn schema_version(&self) -> Result<u32> {
        let v: i32 = self
            .client
            .borrow_mut()
            .query_one("SELECT version FROM osgauge_schema LIMIT 1", &[])?
            .get(0);
        Ok(v as u32)
    }

    /// Run `f` in one transaction: everything it writes is stored, or nothing.
    pub fn in_transaction<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        if self.in_tx.get() {
            return f();
        }
        self.client.borrow_mut().batch_execute("BEGIN")?;
        self.in_tx.set(true);
        let out = f();
        self.in_tx.set(false);
        let mut c = self.client.borrow_mut();
        match out {
            Ok(v) => {
                c.batch_execute("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                // The connection may be gone; the error that matters is `e`.
                let _ = c.batch_execute("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Write the run's row and its benchmarks' rows (one transaction); false when `insert` is
    /// false and the run is not stored.
    fn write(&self, record: &RunRecord, json: &str, origin: Option<Origin>) -> Result<bool> {
        let id = record.run_id.to_string();
        let started = record.started.to_rfc3339();
        let finished = record.finished.map(|f| f.to_rfc3339());
        let n = i32::try_from(record.benchmarks.len()).context("too many benchmarks")?;
        let kernel = record.machine.kernel_release.clone();
        let there = self.in_transaction(|| {
            let mut c = self.client.borrow_mut();
            let rows = match origin {
                Some(origin) => c.execute(
                    "INSERT INTO runs (run_id, label, started, started_at, finished, complete, os,
                                       hostname, kernel, benchmarks, origin, stored_at, record)
                     VALUES ($1::text::uuid, $2, $3, $3::text::timestamptz, $4, $5, $6, $7, $8, $9,
                             $10, now(), $11)
                     ON CONFLICT (run_id) DO UPDATE SET
                        label = excluded.label, started = excluded.started,
                        started_at = excluded.started_at, finished = excluded.finished,
                        complete = excluded.complete, os = excluded.os,
                        hostname = excluded.hostname, kernel = excluded.kernel,
                        benchmarks = excluded.benchmarks, origin = excluded.origin,
                        stored_at = excluded.stored_at, record = excluded.record",
                    &[
                        &id,
                        &record.label,
                        &started,
                        &finished,
                        &record.complete,
                        &record.machine.os,
                        &record.machine.hostname,
                        &kernel,
                        &n,
                        &origin.as_str(),
                        &json,
                    ],
                )?,
                None => c.execute(
                    "UPDATE runs SET label = $2, started = $3, started_at = $3::text::timestamptz,
                        finished = $4, complete = $5, os = $6, hostname = $7, kernel = $8,
                        benchmarks = $9, stored_at = now(), record = $10
                     WHERE run_id = $1::text::uuid",
                    &[
                        &id,
                        &record.label,
                        &started,
                        &finished,
                        &record.complete,
                        &record.machine.os,
                        &record.machine.hostname,
                        &kernel,
                        &n,
                        &json,
                    ],
                )?,
            };
            if rows == 0 {
                return Ok(false);
            }
            c.execute(
                "DELETE FROM run_benchmarks WHERE run_id = $1::text::uuid AND position >= $2",
                &[&id, &n],
            )?;
            let upsert = c.prepare(
                "INSERT INTO run_benchmarks (run_id, position, benchmark_id, suite, failed, result)
                 VALUES ($1::text::uuid, $2, $3, $4, $5, $6::text::jsonb)
                 ON CONFLICT (run_id, position) DO UPDATE SET
                    benchmark_id = excluded.benchmark_id, suite = excluded.suite,
                    failed = excluded.failed, result = excluded.result
                 WHERE run_benchmarks.result IS DISTINCT FROM excluded.result
                    OR run_benchmarks.benchmark_id IS DISTINCT FROM excluded.benchmark_id",
            )?;
            for (i, b) in record.benchmarks.iter().enumerate() {
                let text = serde_json::to_string(b)?;
                c.execute(
                    &upsert,
                    &[&id, &(i as i32), &b.id, &b.suite, &b.error.is_some(), &text],
                )?;
            }
            Ok(true)
        })?;
        if there && !self.in_tx.get() {
            self.read_back(&id, json)?;
        }
        Ok(there)
    }

    fn read_back(&self, id: &str, json: &str) -> Result<()> {
        if self.get_row(id)?.map(|(t, _)| t).as_deref() != Some(json) {
            bail!("the run was written but does not read back as written");
        }
        Ok(())
    }

    pub fn save_text(&self, record: &RunRecord, json: &str, origin: Origin) -> Result<()> {
        self.write(record, json, Some(origin)).map(|_| ())
    }

    pub fn update(&self, record: &RunRecord, json: &str) -> Result<bool> {
        self.write(record, json, None)
    }

    /// Store a run only if no run with its id is there: concurrent callers for one id take a
    /// transaction lock on it in turn, so exactly one stores it. True when this call did (then
    /// read back).
    pub fn insert_new(&self, record: &RunRecord, json: &str, origin: Origin) -> Result<bool> {
        let id = record.run_id.to_string();
        let added = self.in_transaction(|| {
            {
                let mut c = self.client.borrow_mut();
                c.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    &[&id],
                )?;
                if c.query_opt("SELECT 1 FROM runs WHERE run_id = $1::text::uuid", &[&id])?
                    .is_some()
                {
                    return Ok(false);
                }
            }
            self.write(record, json, Some(origin))
        })?;
        if added && !self.in_tx.get() {
            self.read_back(&id, json)?;
        }
        Ok(added)
    }

    pub fn list(&self) -> Result<Vec<RunRow>> {
        // Schema version 1 (read, not upgraded) has no machine id and tag columns: from the
        // records' JSONB.
        let sql = if self.version >= 2 {
            "SELECT run_id::text, label, started, finished, complete, os, hostname, benchmarks,
                    origin, machine_id, tags::text
             FROM runs ORDER BY started_at, run_id"
        } else {
            "SELECT run_id::text, label, started, finished, complete, os, hostname, benchmarks,
                    origin, doc -> 'machine' ->> 'machine_id', (doc -> 'tags')::text
             FROM runs ORDER BY started_at, run_id"
        };
        let rows = self.client.borrow_mut().query(sql, &[])?;
        Ok(rows
            .iter()
            .map(|r| RunRow {
                run_id: r.get(0),
                label: r.get(1),
                started: r.get(2),
                finished: r.get(3),
                complete: r.get(4),
                os: r.get(5),
                hostname: r.get(6),
                benchmarks: r.get::<_, i32>(7) as u32,
                origin: r.get(8),
                machine_id: r.get(9),
                tags: super::tags_of_column(r.get::<_, Option<String>>(10).as_deref()),
            })
            .collect())
    }

    pub fn get_row(&self, run_id: &str) -> Result<Option<(String, String)>> {
        if uuid::Uuid::try_parse(run_id).is_err() {
            return Ok(None);
        }
        let row = self.client.borrow_mut().query_opt(
            "SELECT record, origin FROM runs WHERE run_id = $1::text::uuid",
            &[&run_id],
        )?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    pub fn delete(&self, run_id: &str) -> Result<bool> {
        if uuid::Uuid::try_parse(run_id).is_err() {
            return Ok(false);
        }
        let mut c = self.client.borrow_mut();
        let n = c.execute("DELETE FROM runs WHERE run_id = $1::text::uuid", &[&run_id])?;
        if n == 0 {
            // Row-level security hides another role's run from DELETE without an error: say so.
            let by: Option<Option<String>> = c
                .query_opt(
                    "SELECT stored_by FROM runs WHERE run_id = $1::text::uuid",
                    &[&run_id],
                )?
                .map(|r| r.get(0));
            if let Some(by) = by {
                bail!(RefusedDelete(format!(
                    "run {run_id} was stored by the role {}, and this role may delete only the runs it stored (a writer role; see the README's roles): ask the store's owner to delete it",
                    by.as_deref().unwrap_or("?")
                )));
            }
        }
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_parameters_and_tls_modes_are_refused_in_one_line() {
        let e = config("postgres://a:pw@h/d?sslmod=disable").unwrap_err().0;
        assert!(e.contains("unknown parameter 'sslmod'"), "{e}");
        assert!(!e.contains("pw"), "{e}");
        let e = config("postgres://a@h/d?sslmode=requires").unwrap_err().0;
        assert!(e.contains("is not one of"), "{e}");
        for m in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            let (c, t) = config(&format!(
                "postgres://a@h/d?sslmode={m}&sslrootcert=%2Ftmp%2Fca.pem&connect_timeout=3"
            ))
            .unwrap();
            assert_eq!(t.mode.as_str(), m);
            assert_eq!(t.root.as_deref(), Some(Path::new("/tmp/ca.pem")));
            assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(3)));
        }
    }

    #[test]
    fn password_file_lines_match_as_libpq_matches_them() {
        let key = |h: &str, p: &str, d: &str, u: &str| {
            (h.to_string(), p.to_string(), d.to_string(), u.to_string())
        };
        let file = "# comment\nother:5432:*:*:nope\nlocalhost:5432:osg:ann:pa\\:ss\n*:*:*:*:any\n";
        assert_eq!(
            pgpass_find(file, &key("localhost", "5432", "osg", "ann")).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(
            pgpass_find(file, &key("db", "1", "x", "y")).as_deref(),
            Some("any")
        );
        assert_eq!(pgpass_find("h:1:d:u\n", &key("h", "1", "d", "u")), None);
    }
}
