//! Where a store is, as the user typed it, and the one redaction every store location and
//! recorded command line goes through before it reaches a person, a record or a file.
//!
//! [`check`] sorts what was typed into a PostgreSQL URL (`postgres://`, `postgresql://`), a SQLite
//! file path, or something that looks like a URL and is not a supported one (`postgre://…`,
//! `postgres:/…`, `postgres//…`, ` postgres://…` with a leading space, `https://…`): that is
//! refused with a hint, never taken as a file path (which would create folders named after the
//! URL, with its password in them). A file whose name holds a colon is still reachable as
//! `./NAME`.
//!
//! [`redact`] removes every secret from a text, whatever its form: the password of each
//! `USER:PASSWORD@HOST` (in a well-formed URL, a mistyped one, or bare), and the value of every
//! `password=` parameter.

use std::path::Path;

/// A store location that looks like a URL but is not a supported one (bad input: the CLI exits
/// 2). The text never holds a password.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadLocation(pub String);

/// What a store location names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A PostgreSQL database (`postgres://` or `postgresql://`).
    Postgres,
    /// A SQLite file.
    File,
}

/// Whether `s` starts with a supported PostgreSQL URL scheme (any letter case).
pub fn is_pg_url(s: &str) -> bool {
    let l = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    l.starts_with("postgres://") || l.starts_with("postgresql://")
}

/// A word that is meant as PostgreSQL's URL scheme (`postgres`, a misspelling of it, `pg`,
/// `psql`).
fn pg_ish(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    w.starts_with("postg")
        || w.starts_with("postr")
        || matches!(w.as_str(), "pg" | "psql" | "pgsql")
}

/// The scheme of `s` when it starts like a URL (`LETTERS:`; two characters at least, so a
/// Windows drive `C:` is a path).
fn scheme_of(s: &str) -> Option<&str> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let ok = scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    ok.then_some(scheme)
}

/// What follows the scheme of a mistyped URL (`postgre://u@h/db` → `u@h/db`), for the hint.
fn after_scheme(s: &str) -> &str {
    let s = match scheme_of(s) {
        Some(sc) => &s[sc.len() + 1..],
        None => s.split_once('/').map(|(_, r)| r).unwrap_or(""),
    };
    s.trim_start_matches('/')
}

/// Sort a store location: a PostgreSQL URL, a file, or (an error) something that looks like a
/// URL and is not one osgauge takes — with a hint, and without any password in it.
pub fn check(path: &Path) -> Result<Kind, BadLocation> {
    let Some(s) = path.to_str() else {
        return Ok(Kind::File);
    };
    let t = s.trim();
    let urlish = |t: &str| {
        is_pg_url(t)
            || scheme_of(t).is_some()
            || t.split_once('/')
                .is_some_and(|(w, rest)| pg_ish(w) && (rest.starts_with('/') || rest.contains('@')))
    };
    if t != s && urlish(t) {
        return Err(BadLocation(format!(
            "the store location '{}' starts or ends with white space: remove it (a URL holds none)",
            redact(s)
        )));
    }
    if is_pg_url(s) {
        return Ok(Kind::Postgres);
    }
    if !urlish(s) {
        return Ok(Kind::File);
    }
    let word = scheme_of(s).unwrap_or_else(|| s.split('/').next().unwrap_or(""));
    let meant_pg = pg_ish(word);
    let why = if meant_pg {
        format!(
            "looks like a PostgreSQL URL but is not one (write postgres:// or postgresql://, two slashes): did you mean 'postgres://{}'?",
            redact(after_scheme(s))
        )
    } else {
        format!(
            "'{}:' is not a result store scheme: give a postgres:// URL or a SQLite file path (./NAME for a file whose name holds a colon)",
            crate::output::display_text(word, 20)
        )
    };
    Err(BadLocation(format!(
        "the store location '{}' {why}",
        redact(s)
    )))
}

/// `s` with every secret removed (see the module docs): each `password=VALUE` parameter dropped,
/// each `USER:PASSWORD@` cut to `USER@`.
pub fn redact(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    for c in s.chars() {
        if c.is_whitespace() {
            out.push_str(&redact_word(&word));
            word.clear();
            out.push(c);
        } else {
            word.push(c);
        }
    }
    out.push_str(&redact_word(&word));
    out
}

/// [`redact`] on a text `path` shows, for messages.
pub fn shown(path: &Path) -> String {
    redact(&path.display().to_string())
}

/// One word (no white space): its `password=` parameters, then its user-info passwords.
fn redact_word(w: &str) -> String {
    let w = drop_password_params(w);
    let mut out = String::new();
    let mut rest = w.as_str();
    while let Some(at) = rest.find('@') {
        // Where the user info starts: after "//" (a URL's authority), else after the last '/',
        // '=' or ':/' before the '@'.
        let before = &rest[..at];
        let start = match before.find("//") {
            Some(i) => i + 2,
            None => before.rfind(['/', '=']).map(|i| i + 1).unwrap_or(0),
        };
        // The user info runs to the last '@' before the query or fragment (a raw '@' in a
        // password).
        let tail_end = rest[start..]
            .find(['?', '#'])
            .map(|i| start + i)
            .unwrap_or(rest.len());
        let last_at = rest[start..tail_end]
            .rfind('@')
            .map(|i| start + i)
            .unwrap_or(at);
        let userinfo = &rest[start..last_at];
        out.push_str(&rest[..start]);
        match userinfo.find(':') {
            Some(colon) => out.push_str(&userinfo[..colon]),
            None => out.push_str(userinfo),
        }
        out.push('@');
        rest = &rest[last_at + 1..];
    }
    out.push_str(rest);
    out
}

/// `w` without its `password=VALUE` parameters (in a URL's query or a `key=value` word).
fn drop_password_params(w: &str) -> String {
    let lower = w.to_ascii_lowercase();
    if !lower.contains("password=") {
        return w.to_string();
    }
    let (base, query) = match w.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (w, None),
    };
    let base = if base.to_ascii_lowercase().starts_with("password=")
        || base.to_ascii_lowercase().contains("&password=")
    {
        // A bare `password=…` word, or a form without '?'.
        base.split('&')
            .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
            .collect::<Vec<_>>()
            .join("&")
    } else if let Some(i) = base.to_ascii_lowercase().find("password=") {
        // `--flag=password=…` and the like: cut the value.
        let end = base[i..].find('&').map(|j| i + j).unwrap_or(base.len());
        format!("{}{}", &base[..i], &base[end..])
    } else {
        base.to_string()
    };
    match query {
        None => base,
        Some(q) => {
            let kept: Vec<&str> = q
                .split('&')
                .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
                .collect();
            if kept.is_empty() {
                base
            } else {
                format!("{base}?{}", kept.join("&"))
            }
        }
    }
}

/// The command line as recorded in a run: every argument through [`redact`]; the argument after
/// `--password`/`-W`-style options (none of osgauge's, but a wrapper may pass them) is kept out.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter().map(|a| redact(&a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_password_is_removed() {
        for (given, want) in [
            (
                "postgres://ann:s3cret@db.lab:5433/osgauge?sslmode=disable",
                "postgres://ann@db.lab:5433/osgauge?sslmode=disable",
            ),
            (
                "--store=postgresql://ann@/og?host=/tmp/x&password=s3cret&port=5",
                "--store=postgresql://ann@/og?host=/tmp/x&port=5",
            ),
            (
                "postgres://ann:p%40ss@h/db?password=x",
                "postgres://ann@h/db",
            ),
            ("postgres://ann:p@ss@h/db", "postgres://ann@h/db"),
            ("postgre://user:s3cret@host/db", "postgre://user@host/db"),
            ("postgres:/user:s3cret@host/db", "postgres:/user@host/db"),
            ("postgres//user:s3cret@host/db", "postgres//user@host/db"),
            (
                " postgres://user:s3cret@host/db",
                " postgres://user@host/db",
            ),
            ("--to=user:s3cret@host", "--to=user@host"),
            ("password=s3cret", ""),
            ("host=h password=s3cret user=u", "host=h  user=u"),
            ("/tmp/results.sqlite", "/tmp/results.sqlite"),
            ("ann@example.org", "ann@example.org"),
        ] {
            assert_eq!(redact(given), want, "{given}");
            assert!(!redact(given).contains("s3cret"), "{given}");
        }
        let args = redact_args([
            "osgauge".into(),
            "--store".into(),
            "postgres://a:b@h/d".into(),
        ]);
        assert_eq!(args, ["osgauge", "--store", "postgres://a@h/d"]);
    }

    #[test]
    fn mistyped_urls_are_refused_with_a_hint_and_paths_are_files() {
        for bad in [
            "postgre://user:s3cret@host/db",
            "postgres:/user:s3cret@host/db",
            "postgres//user:s3cret@host/db",
            " postgres://user:s3cret@host/db",
            "postgres://user:s3cret@host/db ",
            "postgresql:user:s3cret@host/db",
            "postgress://user:s3cret@host/db",
        ] {
            let e = check(Path::new(bad)).unwrap_err().0;
            assert!(!e.contains("s3cret"), "{e}");
            assert!(
                e.contains("did you mean 'postgres://user@host/db'") || e.contains("white space"),
                "{bad}: {e}"
            );
        }
        let e = check(Path::new("https://h/x")).unwrap_err().0;
        assert!(e.contains("'https:' is not a result store scheme"), "{e}");
        for ok in ["postgres://u@h/d", "POSTGRESQL://u@h/d"] {
            assert_eq!(check(Path::new(ok)).unwrap(), Kind::Postgres);
        }
        for file in [
            "/tmp/r.sqlite",
            "r.sqlite",
            "./a:b.sqlite",
            "C:\\Users\\a\\r.sqlite",
            "C:/r.sqlite",
            "postgres/r.sqlite",
            "postgres.sqlite",
        ] {
            assert_eq!(check(Path::new(file)).unwrap(), Kind::File, "{file}");
        }
    }
}
