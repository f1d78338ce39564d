//! CLI of the result store, comparison and report: `results`, `compare`, `report`, and the
//! `--store` / `--no-store` options of `run` and `micro` (the store writer hooked into a run is
//! [`super::sink`]).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::{CliError, EXIT_OK, EXIT_REGRESSION};
use crate::export::{check_writable, write_atomic};
use crate::output::{LABEL_MAX_CHARS, display_text};
use crate::record::RunRecord;
use crate::store::{self, Resolved, Store, short_id};

/// Where runs are stored (shared by `run` and `micro`).
#[derive(Args, Debug, Clone, Default)]
pub struct StoreOpts {
    /// Result store: a SQLite file or a postgres:// URL [default: $OSGAUGE_STORE, else <user data dir>/osgauge/results.sqlite]
    #[arg(long, value_name = "PATH|URL", conflicts_with = "no_store")]
    pub store: Option<PathBuf>,
    /// Do not keep this run in the result store
    #[arg(long)]
    pub no_store: bool,
    /// Stop measuring at the first write the result store cannot take (the run so far is kept
    /// in the local store and uploaded as usual; exit 1). Without it the run goes on
    #[arg(long, conflicts_with = "no_store")]
    pub store_required: bool,
    /// Write a self-contained HTML report of this run (inline SVG charts, the record embedded)
    #[arg(long, value_name = "FILE")]
    pub export_html: Option<PathBuf>,
}

/// `--store` for the commands that only read the store.
#[derive(Args, Debug, Clone, Default)]
pub struct StorePath {
    /// Result store: a SQLite file or a postgres:// URL [default: $OSGAUGE_STORE, else <user data dir>/osgauge/results.sqlite]
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
}

impl StorePath {
    pub(super) fn path(&self) -> Result<PathBuf, CliError> {
        store_path(self.store.as_deref())
    }

    /// Open for writing (created when missing).
    fn open(&self) -> Result<Store, CliError> {
        let s = Store::open(&self.path()?).map_err(store_err)?;
        store::pending::upload_waiting(&s);
        Ok(s)
    }

    /// Open for reading only: nothing is created or changed; `None` when no store exists yet.
    pub(super) fn open_read(&self) -> Result<Option<Store>, CliError> {
        let s = Store::open_read_only(&self.path()?).map_err(store_err)?;
        if let Some(s) = &s {
            store::pending::upload_waiting(s);
        }
        Ok(s)
    }

    /// The newest complete run in the store, if the store holds one.
    pub(crate) fn newest_complete(&self) -> Result<Option<store::RunRow>, CliError> {
        let Some(s) = self.open_read()? else {
            return Ok(None);
        };
        Ok(s.list()?.into_iter().rev().find(|r| r.complete))
    }
}

/// The store path: `--store`, else `OSGAUGE_STORE`, else the default. An empty path (`--store
/// ''`, `OSGAUGE_STORE=`) is a usage error, never a fall-back to the default store.
pub(super) fn store_path(given: Option<&Path>) -> Result<PathBuf, CliError> {
    match given {
        Some(p) if p.as_os_str().is_empty() => {
            Err(CliError::Usage("--store: the path is empty".into()))
        }
        Some(p) => Ok(p.to_path_buf()),
        None => store::default_path().map_err(|e| CliError::Usage(format!("{e:#}"))),
    }
}

/// A store error for the CLI: a file or database that is not an osgauge store, a store URL that
/// cannot be used, a database server that cannot be reached or refuses the login, is bad input
/// (exit 2).
pub(super) fn store_err(e: anyhow::Error) -> CliError {
    if store::is_not_a_store(&e) || store::is_connect_error(&e) {
        CliError::Usage(format!("{e:#}"))
    } else {
        CliError::Other(e)
    }
}

#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List stored runs, oldest first
    #[command(
        after_help = "Examples:\n  osgauge results list\n  osgauge results list --json\n  osgauge results list --machine host-a --since 30d\n  osgauge results list --label linux-6.18 --label win11 --status complete\n  osgauge results list --where build=1042 --order-by tag:build\n\nFilters: every one given must hold; a repeated --machine/--label matches any of its values,\nrepeated --where all must hold. A machine is its machine id where recorded, else its hostname:\n--machine takes any hostname it had, or the start of its id."
    )]
    List {
        /// Print the list as JSON: one object per run (run_id, label, started, finished,
        /// complete, os, hostname, machine_id, tags, benchmarks, origin)
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        filter: super::select::FilterArgs,
        #[command(flatten)]
        store: StorePath,
    },
    /// Show one stored run's results (RUN: label, run id or id prefix)
    #[command(
        after_help = "Examples:\n  osgauge results show linux-6.18\n  osgauge results show 0193a1b2 --json"
    )]
    Show {
        run: String,
        /// Print the full JSON record
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StorePath,
    },
    /// Write one stored run as its JSON record (schema osgauge.run/1), to a file or stdout
    #[command(after_help = "Examples:\n  osgauge results export linux-6.18 -o r.json")]
    Export {
        run: String,
        /// Output file (written atomically); stdout when omitted
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        store: StorePath,
    },
    /// Import run records: JSON files (one record or an array) or osgauge HTML reports
    #[command(
        after_help = "Examples:\n  osgauge results import win11.json macos-15.json\n  osgauge results import report.html\n\nAt most 256 MiB per file (a larger file is refused by its size, unread). Every file is read\nwhole and checked before anything is stored (a bad file imports nothing): memory peaks at about\n3–4 times the files' size (a 100 MiB file: about 320 MB), so at most about 1 GB per 256 MiB."
    )]
    Import {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Overwrite a stored run that has the same id but different contents
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        store: StorePath,
    },
    /// Copy runs from this store (--store) to another (a SQLite file or postgres:// URL),
    /// idempotent by run id
    #[command(
        after_help = "Examples:\n  osgauge results push --to postgres://osgauge@db.lab/osgauge\n  osgauge results push --store runs.sqlite --to postgres://osgauge@db.lab/osgauge linux-6.18"
    )]
    ///
    /// A run already there unchanged is left alone; one stored there incomplete (a run whose
    /// connection was lost) is replaced by the copy here when that differs; a different run with
    /// the same id is reported and not copied unless --replace.
    Push {
        /// The store to copy to
        #[arg(long, value_name = "PATH|URL", required = true)]
        to: PathBuf,
        /// Runs to copy (label, run id or id prefix); every run when none is given
        runs: Vec<String>,
        /// Overwrite a different run with the same id in the target store
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        store: StorePath,
    },
    /// Copy runs from another store (a SQLite file or postgres:// URL) into this one (--store),
    /// idempotent by run id
    #[command(
        after_help = "Examples:\n  osgauge results pull --from postgres://osgauge@db.lab/osgauge\n  osgauge results pull --from postgres://osgauge@db.lab/osgauge win11"
    )]
    Pull {
        /// The store to copy from
        #[arg(long, value_name = "PATH|URL", required = true)]
        from: PathBuf,
        /// Runs to copy (label, run id or id prefix); every run when none is given
        runs: Vec<String>,
        /// Overwrite a different run with the same id in this store
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        store: StorePath,
    },
    /// Delete stored runs (RUN: label, run id or id prefix)
    #[command(
        after_help = "Examples:\n  osgauge results delete 0193a1b2\n  osgauge results delete --yes 0193a1b2 0193a1c4   no question (scripts)"
    )]
    ///
    /// On a terminal it lists the runs and asks before deleting; elsewhere (a script, a pipe) it
    /// refuses without --yes. A label that several runs carry is refused like an ambiguous id
    /// prefix: name the run by its id.
    Delete {
        #[arg(required = true)]
        runs: Vec<String>,
        /// Delete without asking (needed when standard input is not a terminal)
        #[arg(short, long)]
        yes: bool,
        #[command(flatten)]
        store: StorePath,
    },
}

/// `osgauge compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Runs to compare, the first is the baseline: stored runs (label, run id or id prefix) or
    /// files (JSON records, HTML reports)
    #[arg(required = true, num_args = 1.., value_name = "RUN|FILE")]
    pub runs: Vec<String>,
    /// Half-width of the noise band: a difference inside ±X is never called better/worse
    #[arg(long, default_value = "2%", value_parser = parse_percent, value_name = "X%")]
    pub noise: f64,
    /// Exit with code 3 when a metric is significantly worse than the baseline by at least X
    #[arg(long, value_parser = parse_percent, value_name = "X%")]
    pub fail_on_regression: Option<f64>,
    /// Write the comparison as Markdown
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write the comparison as CSV (one row per benchmark, metric and run)
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write the comparison as JSON
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    #[command(flatten)]
    pub store: StorePath,
}

/// `osgauge report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Runs to show, the first is the baseline: stored runs (label, run id or id prefix) or files
    #[arg(required = true, num_args = 1.., value_name = "RUN|FILE")]
    pub runs: Vec<String>,
    /// The HTML file to write (self-contained: inline SVG charts and CSS, the run records embedded)
    #[arg(long, short = 'o', value_name = "FILE", required = true)]
    pub export_html: PathBuf,
    /// Half-width of the noise band for the comparison
    #[arg(long, default_value = "2%", value_parser = parse_percent, value_name = "X%")]
    pub noise: f64,
    #[command(flatten)]
    pub store: StorePath,
}

/// `5%`, `5` (both 5 %) or `0.05%`, from 0 % to 1000 % inclusive; returns a fraction.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    let v: f64 = t
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 5%)"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("'{s}' is out of range (0% to 1000%)"));
    }
    Ok(v / 100.0)
}

pub fn dispatch_results(cmd: ResultsCmd) -> Result<i32, CliError> {
    match cmd {
        ResultsCmd::List {
            json,
            filter,
            store,
        } => results_list(json, &filter, &store),
        ResultsCmd::Show { run, json, store } => results_show(&run, json, &store),
        ResultsCmd::Export { run, output, store } => results_export(&run, output, &store),
        ResultsCmd::Import {
            files,
            replace,
            store,
        } => results_import(&files, replace, &store),
        ResultsCmd::Push {
            to,
            runs,
            replace,
            store,
        } => {
            let from = store.path()?;
            let to = store_path(Some(&to))?;
            transfer(&from, &to, &runs, replace)
        }
        ResultsCmd::Pull {
            from,
            runs,
            replace,
            store,
        } => {
            let from = store_path(Some(&from))?;
            let to = store.path()?;
            transfer(&from, &to, &runs, replace)
        }
        ResultsCmd::Delete { runs, yes, store } => results_delete(&runs, yes, &store),
    }
}

/// `results list`: the stored runs the filters keep, as a table or JSON.
fn results_list(
    json: bool,
    filter: &super::select::FilterArgs,
    store: &StorePath,
) -> Result<i32, CliError> {
    // Bad filters are refused before the store is read.
    filter.filter(None)?;
    let Some(s) = store.open_read()? else {
        if json {
            crate::outln!("[]");
        } else {
            crate::outln!(
                "No runs stored in {} (no store there yet).",
                store::shown(&store.path()?)
            );
        }
        return Ok(EXIT_OK);
    };
    let every = s.list()?;
    let all = every.len();
    let rows = super::select::filter_rows(every.clone(), filter)?;
    if json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "run_id": r.run_id, "label": r.label, "started": r.started,
                    "finished": r.finished, "complete": r.complete, "os": r.os,
                    "hostname": r.hostname, "machine_id": r.machine_id, "tags": r.tags,
                    "benchmarks": r.benchmarks, "origin": r.origin,
                })
            })
            .collect();
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(anyhow::Error::from)?
        );
    } else if all == 0 {
        crate::outln!("No runs stored in {}.", s.path().display());
    } else if rows.is_empty() {
        crate::outln!(
            "No run matches the filters ({all} run(s) in {}).",
            s.path().display()
        );
    } else {
        // Runs that ended before any benchmark finished (killed, interrupted at once) hold
        // nothing to compare: listed apart, after the runs that measured something.
        let (measured, empty) = split_unmeasured(&rows);
        if !measured.is_empty() {
            crate::out!("{}", list_text(&measured, &every));
        }
        if !empty.is_empty() {
            crate::outln!(
                "\nEnded before a benchmark finished (killed; nothing measured; `results delete`):"
            );
            crate::out!("{}", list_text(&empty, &every));
        }
        if filter.is_empty() {
            crate::outln!("{} run(s) in {}", rows.len(), s.path().display());
        } else {
            crate::outln!(
                "{} of {all} run(s) in {} match the filters",
                rows.len(),
                s.path().display()
            );
        }
    }
    if !json && let Some(t) = s.transport() {
        crate::outln!("Connection to the store: {t} (as the server reports it).");
    }
    Ok(EXIT_OK)
}

/// `results show`: one run's tables and warnings, or its record as JSON.
fn results_show(run: &str, json: bool, store: &StorePath) -> Result<i32, CliError> {
    let s = store.open_read()?.ok_or_else(|| not_found(run))?;
    let id = resolve(&s, run)?;
    let rec = s.get(&id)?.ok_or_else(|| not_found(run))?;
    if json {
        crate::out!("{}", crate::export::json::render(&rec)?);
    } else {
        crate::outln!(
            "run {}  label {}  started {}  {}  {} / {}",
            rec.run_id,
            rec.label
                .as_deref()
                .map(|l| crate::output::display_text(l, LABEL_MAX_CHARS))
                .unwrap_or_else(|| "—".into()),
            rec.started.format("%Y-%m-%d %H:%M:%S UTC"),
            if rec.complete {
                "complete"
            } else {
                "INCOMPLETE (interrupted)"
            },
            rec.machine.os,
            rec.machine.hostname.as_deref().unwrap_or("—")
        );
        crate::out!("{}", crate::output::render_tables(&rec));
        for w in crate::output::all_warnings(&rec) {
            crate::outln!("  warning: {}", display_text(&w, usize::MAX));
        }
    }
    Ok(EXIT_OK)
}

/// `results export`: one run's stored record, to a file or standard output.
fn results_export(run: &str, output: Option<PathBuf>, store: &StorePath) -> Result<i32, CliError> {
    let s = store.open_read()?.ok_or_else(|| not_found(run))?;
    let id = resolve(&s, run)?;
    let text = s.export_json(&id)?.ok_or_else(|| not_found(run))?;
    match output {
        Some(p) => {
            check_writable(&p).map_err(|e| CliError::Usage(format!("-o: {e}")))?;
            write_atomic(&p, text.as_bytes())
                .map_err(|e| CliError::Other(anyhow::anyhow!("writing {}: {e}", p.display())))?;
        }
        None => crate::out!("{text}"),
    }
    Ok(EXIT_OK)
}

/// `results import`: every record of `files` is checked, stored in one transaction, read back
/// and then reported.
fn results_import(files: &[PathBuf], replace: bool, store: &StorePath) -> Result<i32, CliError> {
    // Read everything first: a bad file imports nothing.
    let mut docs = Vec::new();
    let mut from = Vec::new();
    for f in files {
        // The size first: a file over the limit is refused before a byte of it is read.
        if let Ok(m) = std::fs::metadata(f)
            && m.is_file()
            && m.len() > store::IMPORT_MAX_BYTES
        {
            return Err(CliError::Usage(format!(
                "{} is larger than the import limit of {} ({}): nothing imported",
                f.display(),
                crate::units::format_size(store::IMPORT_MAX_BYTES),
                crate::units::format_size(m.len())
            )));
        }
        let d = store::read_documents(f).map_err(|e| CliError::Usage(format!("{e:#}")))?;
        if d.is_empty() {
            return Err(CliError::Usage(format!(
                "{}: no run records in it: nothing to import",
                f.display()
            )));
        }
        // Held to what a run of this osgauge satisfies, before the store is opened.
        for doc in &d {
            store::check_imported(&doc.record).map_err(|e| {
                CliError::Usage(format!("{}: run {}: {e}", f.display(), doc.record.run_id))
            })?;
        }
        from.extend(std::iter::repeat_n(f.clone(), d.len()));
        docs.extend(d);
    }
    let s = store.open()?;
    // One transaction: every record is stored or none.
    let outcomes = s.import_all(&docs, replace).map_err(store_err)?;
    // Read them back through a fresh connection before saying "imported".
    let check = Store::open_read_only(s.path()).and_then(|r| {
        let r = r.ok_or_else(|| anyhow::anyhow!("the store has disappeared"))?;
        for d in &docs {
            let id = d.record.run_id.to_string();
            let back = r.get_json(&id)?;
            let same = back.is_some_and(|b| {
                serde_json::from_str::<serde_json::Value>(&b).ok()
                    == serde_json::from_str::<serde_json::Value>(&d.text).ok()
            });
            if !same {
                anyhow::bail!("run {id} does not read back as imported");
            }
        }
        Ok(())
    });
    if let Err(e) = check {
        return Err(CliError::Other(e.context(format!(
            "the import into {} could not be verified",
            s.path().display()
        ))));
    }
    for ((d, f), outcome) in docs.iter().zip(&from).zip(outcomes) {
        let r = &d.record;
        let what = match outcome {
            store::ImportOutcome::Added => "imported",
            store::ImportOutcome::AlreadyStored => "already stored",
            store::ImportOutcome::Replaced => "replaced",
        };
        crate::outln!(
            "{what}: run {} ({}, {}) from {}",
            r.run_id,
            r.label
                .as_deref()
                .map(|l| crate::output::display_text(l, LABEL_MAX_CHARS))
                .unwrap_or_else(|| "no label".into()),
            crate::output::display_text(&r.machine.os, LABEL_MAX_CHARS),
            f.display()
        );
    }
    Ok(EXIT_OK)
}

/// `results delete`: the named runs, after a confirmation unless `yes`.
fn results_delete(runs: &[String], yes: bool, store: &StorePath) -> Result<i32, CliError> {
    // A missing store is not created just to find nothing in it.
    if store.open_read()?.is_none() {
        return Err(not_found(&runs[0]));
    }
    let s = store.open()?;
    let mut ids = Vec::new();
    for r in runs {
        let id = resolve_exactly(&s, r)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if !yes && !confirm_delete(&s, &ids)? {
        crate::errln!("osgauge: nothing deleted");
        return Ok(EXIT_OK);
    }
    let unfinished: Vec<String> = s
        .list()?
        .into_iter()
        .filter(|r| ids.contains(&r.run_id) && r.finished.is_none())
        .map(|r| r.run_id)
        .collect();
    for id in ids {
        if s.delete(&id)? {
            crate::outln!("deleted run {id}");
            if unfinished.contains(&id) {
                crate::errln!(
                    "osgauge: note: run {id} was unfinished: if an osgauge is still measuring it, that osgauge stops storing it and says so (its results stay in its output and exports)"
                );
            }
        }
    }
    Ok(EXIT_OK)
}

/// `results push/pull`: copy the runs `keys` name (every run when empty) from the store `from`
/// to the store `to`, by run id: a run already there unchanged is skipped; one there incomplete
/// and different is replaced; another difference is a conflict (replaced only with `replace`).
/// Every copied run is read back through a fresh connection before it counts.
fn transfer(from: &Path, to: &Path, keys: &[String], replace: bool) -> Result<i32, CliError> {
    let src = Store::open_read_only(from).map_err(store_err)?;
    let Some(src) = src else {
        crate::outln!(
            "No runs stored in {} (no store there yet): nothing to copy.",
            store::shown(from)
        );
        return Ok(EXIT_OK);
    };
    let dst = Store::open(to).map_err(store_err)?;
    if src.path() == dst.path()
        || (src.path().exists()
            && std::fs::canonicalize(src.path()).ok() == std::fs::canonicalize(dst.path()).ok())
    {
        return Err(CliError::Usage(format!(
            "{} is both the source and the target store",
            src.path().display()
        )));
    }
    let ids = transfer_ids(&src, keys)?;
    let tally = copy_runs(&src, &dst, &ids, replace)?;
    verify_copies(dst.path(), &tally.written)?;
    // Runs that waited in `from` to be uploaded to `to` are there now.
    for id in ids.iter().filter(|id| !tally.conflicts.contains(id)) {
        store::pending::settled(src.path(), id, dst.path());
    }
    crate::outln!(
        "{}",
        tally.summary(ids.len(), src.path(), dst.path(), replace)
    );
    for id in &tally.conflicts {
        crate::errln!(
            "osgauge: run {id} is stored differently in {}: not copied (--replace overwrites it)",
            dst.path().display()
        );
    }
    Ok(if tally.conflicts.is_empty() {
        EXIT_OK
    } else {
        super::EXIT_WARN
    })
}

/// The run ids `keys` name in `src` (each once, in the order named), or every run's when none.
fn transfer_ids(src: &Store, keys: &[String]) -> Result<Vec<String>, CliError> {
    let rows = src.list()?;
    if keys.is_empty() {
        return Ok(rows.iter().map(|r| r.run_id.clone()).collect());
    }
    let mut ids = Vec::new();
    for k in keys {
        let id = resolve(src, k)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// How the runs of a transfer went: counts per outcome, the conflicting runs, and each written
/// run's id and text (to read back).
#[derive(Default)]
struct Tally {
    copied: usize,
    same: usize,
    updated: usize,
    replaced: usize,
    conflicts: Vec<String>,
    written: Vec<(String, String)>,
}

impl Tally {
    /// The line that sums up the transfer of `n` runs from `from` to `to`.
    fn summary(&self, n: usize, from: &Path, to: &Path, replace: bool) -> String {
        let replaced_text = if replace {
            format!(", {} replaced (different there, --replace)", self.replaced)
        } else {
            String::new()
        };
        format!(
            "{n} run(s) from {} to {}: {} copied, {} updated (incomplete there){replaced_text}, {} already there, {} conflicting",
            from.display(),
            to.display(),
            self.copied,
            self.updated,
            self.same,
            self.conflicts.len()
        )
    }
}

/// Copy the runs `ids` from `src` to `dst` ([`store::copy::copy_run`]), with a progress bar on a
/// terminal.
fn copy_runs(src: &Store, dst: &Store, ids: &[String], replace: bool) -> Result<Tally, CliError> {
    use std::io::IsTerminal;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::with_draw_target(
            Some(ids.len() as u64),
            indicatif::ProgressDrawTarget::stderr(),
        );
        b.set_style(
            indicatif::ProgressStyle::with_template("[{elapsed}] [{bar:30}] {pos}/{len} runs")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    });
    let mut tally = Tally::default();
    for id in ids {
        let (record, text, origin) = store::copy::source_row(src, id)?
            .ok_or_else(|| anyhow::anyhow!("run {id} disappeared from {}", src.path().display()))?;
        let done = store::copy::copy_run(dst, &record, &text, origin, replace)?;
        match done {
            store::copy::Copied::New => tally.copied += 1,
            store::copy::Copied::Updated => tally.updated += 1,
            store::copy::Copied::Replaced => tally.replaced += 1,
            store::copy::Copied::Same => tally.same += 1,
            store::copy::Copied::Conflict => tally.conflicts.push(id.clone()),
        }
        if done.written() {
            tally.written.push((id.clone(), text));
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    Ok(tally)
}

/// Read the `written` runs (id, text) back from the store at `dst` as another process sees it
/// now: an error unless each reads back as copied.
fn verify_copies(dst: &Path, written: &[(String, String)]) -> Result<(), CliError> {
    let check = Store::open_read_only(dst).and_then(|r| {
        let r = r.ok_or_else(|| anyhow::anyhow!("the store has disappeared"))?;
        for (id, text) in written {
            if r.get_json(id)?.as_deref() != Some(text.as_str()) {
                anyhow::bail!("run {id} does not read back as copied");
            }
        }
        Ok(())
    });
    check.map_err(|e| {
        CliError::Other(e.context(format!(
            "the copy into {} could not be verified",
            dst.display()
        )))
    })
}

/// Ask on the terminal before deleting `ids` (listed with start time, label and state): true
/// for "y"/"yes". Not on a terminal: a usage error asking for --yes.
fn confirm_delete(s: &Store, ids: &[String]) -> Result<bool, CliError> {
    use std::io::{BufRead, IsTerminal};
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(CliError::Usage(format!(
            "results delete asks before deleting and standard input is not a terminal: add --yes to delete {} run(s) without asking",
            ids.len()
        )));
    }
    let every = s.list()?;
    let rows: Vec<store::RunRow> = every
        .iter()
        .filter(|r| ids.contains(&r.run_id))
        .cloned()
        .collect();
    crate::output::stdout::eprint(&list_text(&rows, &every));
    crate::output::stdout::eprint(&format!("Delete {} run(s)? [y/N] ", ids.len()));
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::Other(anyhow::anyhow!("reading the answer: {e}")))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn not_found(key: &str) -> CliError {
    CliError::Usage(format!(
        "no stored run matches '{key}' (a label, run id or id prefix of 4+ characters; see `osgauge results list`)"
    ))
}

fn resolve(s: &Store, key: &str) -> Result<String, CliError> {
    resolved(key, s.resolve(key)?)
}

fn resolved(key: &str, r: Resolved) -> Result<String, CliError> {
    match r {
        Resolved::One(id, note) => {
            if let Some(n) = note {
                crate::errln!("osgauge: note: {n}");
            }
            Ok(id)
        }
        Resolved::Ambiguous(ids) => Err(CliError::Usage(format!(
            "'{key}' is the prefix of several runs: {}",
            ids.join(", ")
        ))),
        Resolved::AmbiguousLabel(runs) => Err(CliError::Usage(format!(
            "'{key}' is the label of {} runs: {}; name one by its run id (or an id prefix)",
            runs.len(),
            runs.join(", ")
        ))),
        Resolved::NotFound => Err(not_found(key)),
    }
}

/// [`resolve`] for a destructive command: a label several runs carry is refused, listing them.
fn resolve_exactly(s: &Store, key: &str) -> Result<String, CliError> {
    match s.resolve_exactly(key)? {
        r @ Resolved::AmbiguousLabel(_) => resolved(key, r),
        _ => resolve(s, key),
    }
}

/// The rows that measured something, and the incomplete ones with no benchmark (a run killed
/// before its first benchmark finished), each in their order.
fn split_unmeasured(rows: &[store::RunRow]) -> (Vec<store::RunRow>, Vec<store::RunRow>) {
    rows.iter()
        .cloned()
        .partition(|r| r.complete || r.benchmarks > 0)
}

/// The table of `rows`, their ids as short as they can be while unique among `all` (the store's
/// runs, so each short id resolves to its run).
fn list_text(rows: &[store::RunRow], all: &[store::RunRow]) -> String {
    let mut table = vec![[
        "id".to_string(),
        "started (UTC)".into(),
        "label".into(),
        "os".into(),
        "host".into(),
        "benchmarks".into(),
        "state".into(),
        "origin".into(),
    ]];
    let ids: Vec<&str> = all.iter().map(|r| r.run_id.as_str()).collect();
    let short: std::collections::HashMap<&str, String> =
        ids.iter().copied().zip(store::short_ids(&ids)).collect();
    for r in rows {
        let id = short
            .get(r.run_id.as_str())
            .cloned()
            .unwrap_or_else(|| short_id(&r.run_id).to_string());
        let started = chrono::DateTime::parse_from_rfc3339(&r.started)
            .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|_| r.started.clone());
        table.push([
            id,
            started,
            r.label
                .as_deref()
                .map(|l| display_text(l, LABEL_MAX_CHARS))
                .unwrap_or_else(|| "—".into()),
            display_text(&r.os, LABEL_MAX_CHARS),
            r.hostname
                .as_deref()
                .map(|h| display_text(h, LABEL_MAX_CHARS))
                .unwrap_or_else(|| "—".into()),
            r.benchmarks.to_string(),
            if r.complete {
                "complete".into()
            } else {
                "incomplete".into()
            },
            r.origin.clone(),
        ]);
    }
    let rows: Vec<Vec<String>> = table.into_iter().map(Vec::from).collect();
    crate::output::grid::Grid::default().render(&rows)
}

/// Named sides of a comparison, each one or more invocations.
pub(crate) type Sides = Vec<(String, Vec<RunRecord>)>;

/// compare/report arguments as sides: files first (one side per record), else stored runs — a
/// label stored several times is one side of all its complete invocations (the invocation is
/// then the unit of replication), a run id or prefix one side of that run. Also this machine's
/// between-invocation noise learned from the store's other labels stored several times.
pub(crate) fn load_sides(
    keys: &[String],
    sp: &StorePath,
) -> Result<(Sides, crate::compare::NoiseHistory), CliError> {
    let mut out: Vec<(String, Vec<RunRecord>)> = Vec::new();
    let mut store: Option<Store> = None;
    let mut side_labels: Vec<String> = Vec::new();
    for k in keys {
        if Path::new(k).is_file() {
            for (n, r) in load_runs(std::slice::from_ref(k), sp)? {
                out.push((n, vec![r]));
            }
            continue;
        }
        if store.is_none() {
            store = Some(sp.open_read()?.ok_or_else(|| not_found(k))?);
        }
        let s = store.as_ref().unwrap();
        let rows = s.list()?;
        let labelled: Vec<&store::RunRow> = rows
            .iter()
            .filter(|r| r.label.as_deref() == Some(k.as_str()) && r.complete)
            .collect();
        if labelled.len() > 1 && !rows.iter().any(|r| r.run_id == *k) {
            let mut recs = Vec::new();
            for r in &labelled {
                if let Some(rec) = s.get(&r.run_id)? {
                    recs.push(rec);
                }
            }
            crate::errln!(
                "osgauge: note: label '{}' names {} complete runs: compared as {} invocations \
                 (the unit of replication)",
                display_text(k, LABEL_MAX_CHARS),
                recs.len(),
                recs.len()
            );
            side_labels.push(k.clone());
            out.push((k.clone(), recs));
            continue;
        }
        let id = resolve(s, k)?;
        let r = s.get(&id)?.ok_or_else(|| not_found(k))?;
        out.push((k.clone(), vec![r]));
    }
    for (name, _) in out.iter_mut() {
        *name = display_text(name, LABEL_MAX_CHARS);
    }
    for i in 0..out.len() {
        if out[..i].iter().any(|(n, _)| *n == out[i].0) {
            let id = out[i].1[0].run_id.to_string();
            out[i].0 = format!("{} ({})", out[i].0, short_id(&id));
        }
    }
    let history = match store.take().map_or_else(|| sp.open_read(), |s| Ok(Some(s))) {
        Ok(Some(s)) => {
            let hosts: Vec<Option<String>> = out
                .iter()
                .flat_map(|(_, g)| g.iter().map(|r| r.machine.hostname.clone()))
                .collect();
            learn_history(&s, &hosts, &side_labels)
        }
        _ => crate::compare::NoiseHistory::default(),
    };
    Ok((out, history))
}

/// This store's between-invocation noise on the machines `hosts`: every label (but `skip`, the
/// labels being compared) stored two or more times complete on one of them.
pub(crate) fn learn_history(
    s: &Store,
    hosts: &[Option<String>],
    skip: &[String],
) -> crate::compare::NoiseHistory {
    let Ok(rows) = s.list() else {
        return crate::compare::NoiseHistory::default();
    };
    let mut count: std::collections::HashMap<(&str, Option<&str>), usize> =
        std::collections::HashMap::new();
    for r in rows.iter().filter(|r| r.complete) {
        if let Some(l) = &r.label
            && hosts.contains(&r.hostname)
            && !skip.contains(l)
        {
            *count.entry((l, r.hostname.as_deref())).or_default() += 1;
        }
    }
    let recs: Vec<RunRecord> = rows
        .iter()
        .filter(|r| {
            r.complete
                && r.label.as_deref().is_some_and(|l| {
                    count.get(&(l, r.hostname.as_deref())).copied().unwrap_or(0) >= 2
                })
        })
        .filter_map(|r| s.get(&r.run_id).ok().flatten())
        .collect();
    crate::compare::NoiseHistory::learn(&recs)
}

/// Whether `p` is a SQLite database (its header), e.g. a result store given where a record
/// file was expected.
fn is_sqlite_file(p: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

/// Resolve compare/report arguments into named records: files first, else stored runs.
pub(crate) fn load_runs(
    keys: &[String],
    sp: &StorePath,
) -> Result<Vec<(String, RunRecord)>, CliError> {
    let mut out: Vec<(String, RunRecord)> = Vec::new();
    let mut store: Option<Store> = None;
    for k in keys {
        let p = Path::new(k);
        if p.is_file() {
            if is_sqlite_file(p) {
                return Err(CliError::Usage(format!(
                    "{} is a result store (a SQLite file), not a run record: give it as --store and name the runs in it, e.g. `osgauge compare --store {} RUN1 RUN2` (RUN: a label, run id or id prefix; `osgauge results list --store {}` lists them)",
                    display_text(k, 200),
                    display_text(k, 200),
                    display_text(k, 200)
                )));
            }
            let recs = store::read_records(p).map_err(|e| CliError::Usage(format!("{e:#}")))?;
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| k.clone());
            let many = recs.len() > 1;
            for r in recs {
                // A run is named by its label, as a stored run is; the file name only for a
                // record without one.
                let name = match (&r.label, many) {
                    (Some(l), _) => l.clone(),
                    (None, true) => format!("{stem}:{}", short_id(&r.run_id.to_string())),
                    (None, false) => stem.clone(),
                };
                out.push((name, r));
            }
            continue;
        }
        if store.is_none() {
            store = Some(sp.open_read()?.ok_or_else(|| not_found(k))?);
        }
        let s = store.as_ref().unwrap();
        let id = resolve(s, k)?;
        let r = s.get(&id)?.ok_or_else(|| not_found(k))?;
        out.push((k.clone(), r));
    }
    // Names are printed in tables: no control characters, bounded length.
    for (name, _) in out.iter_mut() {
        *name = display_text(name, LABEL_MAX_CHARS);
    }
    // Make names unique.
    for i in 0..out.len() {
        if out[..i].iter().any(|(n, _)| *n == out[i].0) {
            let id = out[i].1.run_id.to_string();
            out[i].0 = format!("{} ({})", out[i].0, short_id(&id));
        }
    }
    Ok(out)
}

pub fn dispatch_compare(a: CompareArgs) -> Result<i32, CliError> {
    crate::export::check_targets(&[
        ("--export-markdown", a.export_markdown.as_deref()),
        ("--export-csv", a.export_csv.as_deref()),
        ("--export-json", a.export_json.as_deref()),
    ])
    .map_err(CliError::Usage)?;
    let (sides, history) = load_sides(&a.runs, &a.store)?;
    if sides.len() < 2 {
        return Err(CliError::Usage(
            "compare needs at least two runs (the first is the baseline)".into(),
        ));
    }
    let cmp = crate::compare::compare_groups(
        &sides,
        &crate::compare::Options {
            noise: a.noise,
            history,
            paired: false,
        },
    );
    crate::out!("{}", crate::compare::render::text(&cmp));
    let mut outs: Vec<crate::export::Output> = Vec::new();
    if let Some(p) = &a.export_markdown {
        outs.push((
            "--export-markdown",
            p,
            Ok(crate::compare::render::markdown(&cmp)),
        ));
    }
    if let Some(p) = &a.export_csv {
        outs.push(("--export-csv", p, crate::compare::render::csv(&cmp)));
    }
    if let Some(p) = &a.export_json {
        outs.push(("--export-json", p, crate::compare::render::json(&cmp)));
    }
    crate::export::write_each(outs)?;
    if let Some(t) = a.fail_on_regression {
        let regs = cmp.regressions(t);
        if !regs.is_empty() {
            crate::errln!(
                "osgauge: {} regression(s) of at least {}% (significant, outside the noise band):",
                regs.len(),
                crate::compare::trim_num(t * 100.0)
            );
            for (r, j, _) in regs {
                crate::errln!("  {}", crate::compare::render::regression_text(&cmp, r, j));
            }
            return Ok(EXIT_REGRESSION);
        }
    }
    Ok(EXIT_OK)
}

pub fn dispatch_report(a: ReportArgs) -> Result<i32, CliError> {
    check_writable(&a.export_html).map_err(|e| CliError::Usage(format!("--export-html: {e}")))?;
    crate::export::claim_stdout([a.export_html.as_path()]);
    let (runs, history) = load_sides(&a.runs, &a.store)?;
    let html = crate::report::render_groups(
        &runs,
        crate::compare::Options {
            noise: a.noise,
            history,
            paired: false,
        },
    )?;
    write_atomic(&a.export_html, html.as_bytes()).map_err(|e| {
        CliError::Other(anyhow::anyhow!(
            "--export-html: writing {}: {e}",
            a.export_html.display()
        ))
    })?;
    crate::errln!(
        "osgauge: wrote {} ({} KiB, {} run(s))",
        crate::export::display_output(&a.export_html),
        html.len().div_ceil(1024),
        runs.iter().map(|(_, g)| g.len()).sum::<usize>()
    );
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_sums_up_each_outcome_and_replacements_only_with_replace() {
        let t = Tally {
            copied: 3,
            same: 2,
            updated: 1,
            replaced: 4,
            conflicts: vec!["x".into()],
            written: Vec::new(),
        };
        let (from, to) = (Path::new("/a.sqlite"), Path::new("/b.sqlite"));
        assert_eq!(
            t.summary(11, from, to, false),
            "11 run(s) from /a.sqlite to /b.sqlite: 3 copied, 1 updated (incomplete there), 2 already there, 1 conflicting"
        );
        assert_eq!(
            t.summary(11, from, to, true),
            "11 run(s) from /a.sqlite to /b.sqlite: 3 copied, 1 updated (incomplete there), 4 replaced (different there, --replace), 2 already there, 1 conflicting"
        );
    }

    /// A run killed before its first benchmark finished is set apart from the real ones; an
    /// interrupted run that measured something stays among them.
    #[test]
    fn killed_runs_with_nothing_measured_are_listed_apart() {
        let row = |id: &str, complete: bool, benchmarks: u32| store::RunRow {
            run_id: id.into(),
            label: None,
            started: "2026-11-28T05:00:00Z".into(),
            finished: None,
            complete,
            os: "linux".into(),
            hostname: None,
            machine_id: None,
            tags: Default::default(),
            benchmarks,
            origin: "local".into(),
        };
        let rows = vec![
            row("a", true, 50),
            row("b", false, 0),
            row("c", false, 12),
            row("d", true, 0),
        ];
        let (measured, empty) = split_unmeasured(&rows);
        let ids = |v: &[store::RunRow]| v.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&measured), ["a", "c", "d"]);
        assert_eq!(ids(&empty), ["b"]);
    }
}
