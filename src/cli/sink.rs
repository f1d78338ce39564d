//! The store writer hooked into a run ([`StoreSink`]): the run written as it goes (when it
//! starts and after every round), a failed write to a database server kept in the local store
//! and uploaded, the final record read back before "stored" is said, and earlier runs' times
//! for the estimate.

use std::path::{Path, PathBuf};

use super::CliError;
use super::results::{StoreOpts, store_err, store_path};
use crate::export::check_writable;
use crate::record::RunRecord;
use crate::runner::Event;
use crate::store::{self, Origin, Store};

/// The waits before each attempt to upload a run that went to the local store, before the
/// command exits: about 7 s in all (a server restarting), plus the connection timeouts.
const UPLOAD_RETRY_WAITS: &[std::time::Duration] = &[
    std::time::Duration::ZERO,
    std::time::Duration::from_secs(2),
    std::time::Duration::from_secs(5),
];

/// How many of the newest stored runs [`StoreSink::history`] reads.
pub const HISTORY_RUNS: usize = 10;

/// Writes a run to the store as it goes: when it starts and after every benchmark. A failed
/// write does not stop the run (the results stay in memory, are printed and exported); the
/// first failure is warned about, and [`StoreSink::finish`] says what the store kept.
pub struct StoreSink {
    store: Option<Store>,
    /// The first failed write.
    failed: Option<anyhow::Error>,
    quiet: bool,
    /// The run's row exists (later writes update it, never re-create it).
    inserted: bool,
    /// The run was deleted from the store while measured: it is not written again.
    deleted: bool,
    /// The database server named here was lost mid-run: the run goes on in the local SQLite
    /// store (`store`), to be pushed later.
    lost_server: Option<PathBuf>,
}

impl StoreSink {
    /// Open the store before running, so a bad path fails before anything is measured.
    pub fn open(opts: &StoreOpts, quiet: bool) -> Result<StoreSink, CliError> {
        if let Some(p) = &opts.export_html {
            check_writable(p).map_err(|e| CliError::Usage(format!("--export-html: {e}")))?;
        }
        if opts.no_store {
            return Ok(StoreSink {
                store: None,
                failed: None,
                quiet,
                inserted: false,
                deleted: false,
                lost_server: None,
            });
        }
        let path = store_path(opts.store.as_deref())?;
        let store = Store::open(&path).map_err(|e| match store_err(e) {
            CliError::Other(e) => {
                CliError::Other(anyhow::anyhow!("{e:#}; --no-store runs without the store"))
            }
            usage => usage,
        })?;
        store::pending::upload_waiting(&store);
        Ok(StoreSink {
            store: Some(store),
            failed: None,
            quiet,
            inserted: false,
            deleted: false,
            lost_server: None,
        })
    }

    /// Whether a write to the store failed (whether or not the run went on in the local store).
    pub fn write_failed(&self) -> bool {
        self.failed.is_some() || self.lost_server.is_some()
    }

    /// Whether the database server was lost mid-run and the run is kept in the local store.
    pub fn kept_locally(&self) -> bool {
        self.lost_server.is_some()
    }

    /// A write to a database server failed: reconnect once when the server was lost (a
    /// restart); else — whatever the failure: the server gone, a read-only database, tables
    /// changed by hand, a refused permission — go on in the local SQLite store, writing the whole
    /// run there and leaving a marker so that it uploads itself when the server takes it
    /// ([`store::pending`]). Ok(()) when the record is now written somewhere.
    fn recover(&mut self, record: &RunRecord, e: &anyhow::Error) -> Result<(), anyhow::Error> {
        let Some(s) = &self.store else {
            return Ok(());
        };
        if !s.is_server() || self.lost_server.is_some() {
            return Err(anyhow::anyhow!("not a database server store"));
        }
        let server = s.path().to_path_buf();
        if store::Trouble::of(e) == store::Trouble::Unreachable
            && let Ok(again) = Store::open(&server)
            && again.save(record, Origin::Measured).is_ok()
        {
            self.store = Some(again);
            return Ok(());
        }
        let local = store::local_path()?;
        let l = Store::open(&local)?;
        l.save(record, Origin::Measured)?;
        store::pending::mark(&local, &record.run_id.to_string(), &server)?;
        crate::errln!(
            "osgauge: warning: {e:#}; the run goes on and is kept in the local store {}, to be uploaded when {} takes it",
            local.display(),
            store::shown(&server)
        );
        self.store = Some(l);
        self.lost_server = Some(server);
        Ok(())
    }

    fn save(&mut self, record: &RunRecord) -> bool {
        let Some(s) = &self.store else { return true };
        if self.deleted {
            return false;
        }
        let r = if self.inserted {
            s.update(record).and_then(|there| {
                if there {
                    Ok(())
                } else {
                    self.deleted = true;
                    Err(anyhow::anyhow!(
                        "run {} was deleted from the store {} (`results delete`) while it was being measured, and is no longer stored there: its results are in the output and the exports only",
                        record.run_id,
                        s.path().display()
                    ))
                }
            })
        } else {
            s.save(record, Origin::Measured)
        };
        let r = match r {
            Err(e) if !self.deleted && self.recover(record, &e).is_ok() => Ok(()),
            r => r,
        };
        match r {
            Ok(()) => {
                self.inserted = true;
                true
            }
            Err(e) => {
                if self.failed.is_none() {
                    crate::errln!(
                        "osgauge: warning: {e:#}; the run goes on and its results are kept for the output and exports"
                    );
                    self.failed = Some(e);
                }
                false
            }
        }
    }

    /// Hooked into the runner's events.
    pub fn on_event(&mut self, ev: &Event) {
        match ev {
            Event::Started { record, .. } | Event::RoundFinished { record, .. } => {
                self.save(record);
            }
            _ => {}
        }
    }

    /// Time per run (warm-up included) that earlier stored runs took for each of `benchmarks`,
    /// by id: from the newest of the last [`HISTORY_RUNS`] stored runs that ran the benchmark
    /// with the same preset and run time, the same configured parameters, and finished it without
    /// an error. For estimates only; nothing when there is no store.
    pub fn history(
        &self,
        benchmarks: &[Box<dyn crate::bench::Benchmark>],
        config: &crate::record::Config,
    ) -> std::collections::HashMap<String, f64> {
        let mut found = std::collections::HashMap::new();
        let Some(store) = &self.store else {
            return found;
        };
        let Ok(rows) = store.list() else {
            return found;
        };
        for row in rows.iter().rev().take(HISTORY_RUNS) {
            let Ok(Some(rec)) = store.get(&row.run_id) else {
                continue;
            };
            if rec.config.preset != config.preset || rec.config.run_time_ms != config.run_time_ms {
                continue;
            }
            for b in benchmarks {
                let id = &b.info().id;
                if found.contains_key(id) {
                    continue;
                }
                let Some(old) = rec
                    .benchmarks
                    .iter()
                    .chain(&rec.reference)
                    .find(|x| x.id == *id)
                else {
                    continue;
                };
                let runs = old.metrics.iter().map(|m| m.runs.len()).max().unwrap_or(0);
                let same_work = b.params().iter().all(|(k, v)| old.params.get(k) == Some(v));
                if old.error.is_none() && runs > 0 && same_work && old.wall_s > 0.0 {
                    let all = runs as f64 + f64::from(rec.config.warmup_runs);
                    found.insert(id.clone(), old.wall_s / all);
                }
            }
        }
        found
    }

    /// Store the final record (complete or not, with the end-of-run environment) and check it
    /// reads back through a fresh connection. Says "stored" only then; otherwise says what the
    /// store kept of this run and returns false (the caller exits non-zero).
    pub fn finish(&mut self, record: &RunRecord) -> bool {
        if self.store.is_none() {
            return true;
        }
        let saved = self.save(record);
        let s = self.store.as_ref().expect("checked above");
        let path = s.path().to_path_buf();
        let id = record.run_id.to_string();
        // What another process would see now.
        let stored = Store::open_read_only(&path).and_then(|r| match r {
            Some(r) => r.get_json(&id),
            None => Ok(None),
        });
        let written = serde_json::to_string(record).ok();
        if saved
            && let Ok(Some(back)) = &stored
            && Some(back) == written.as_ref()
        {
            if let Some(server) = self.lost_server.clone() {
                return self.upload_before_exit(record, &path, &server);
            }
            if !self.quiet {
                crate::errln!(
                    "osgauge: stored as run {} in {}{}{}",
                    record.run_id,
                    path.display(),
                    if record.complete { "" } else { " (incomplete)" },
                    s.transport()
                        .map(|t| format!(" (connection {t})"))
                        .unwrap_or_default()
                );
            }
            return true;
        }
        let why = match &self.failed {
            Some(e) => format!("{e:#}"),
            None => "the stored run does not read back as measured".into(),
        };
        crate::errln!("osgauge: error: this run was not stored: {why}");
        let n = record.benchmarks.len();
        let stored = stored.and_then(|t| {
            t.map(|t| serde_json::from_str::<RunRecord>(&t).map_err(anyhow::Error::from))
                .transpose()
        });
        let kept = match stored {
            Ok(Some(back)) => {
                let missing: Vec<&str> = record
                    .benchmarks
                    .iter()
                    .filter(|b| !back.benchmarks.iter().any(|k| k.id == b.id))
                    .map(|b| b.id.as_str())
                    .collect();
                format!(
                    "the store {} keeps {} of the {n} benchmark(s) of this run{}{}",
                    path.display(),
                    back.benchmarks.len(),
                    if back.complete {
                        ""
                    } else {
                        ", marked incomplete"
                    },
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (missing: {})", missing.join(", "))
                    }
                )
            }
            Ok(None) => format!(
                "the store {} keeps nothing of this run (0 of {n} benchmark(s))",
                path.display()
            ),
            Err(e) => format!("what the store kept of this run cannot be read: {e:#}"),
        };
        crate::errln!("osgauge: {kept}");
        false
    }

    /// The run went to the local store `local` because the database server store `server`
    /// could not take it: try to upload it now, a few times over a few seconds (a server that is
    /// restarting), and say what became of it. True when it is now in `server`.
    fn upload_before_exit(&self, record: &RunRecord, local: &Path, server: &Path) -> bool {
        let id = record.run_id.to_string();
        let mut last = None;
        for wait in UPLOAD_RETRY_WAITS {
            std::thread::sleep(*wait);
            let tried = Store::open_read_only(local).and_then(|l| match l {
                Some(l) => store::pending::upload(&l, server, &id),
                None => Err(anyhow::anyhow!(
                    "the local store {} is gone",
                    local.display()
                )),
            });
            match tried {
                Ok(store::pending::Uploaded::Conflict) => {
                    last = Some(
                        "a different complete run with the same id is stored there (`osgauge results push --replace` overwrites it)".to_string(),
                    );
                    break;
                }
                Ok(_) => {
                    store::pending::unmark(local, &id);
                    crate::errln!(
                        "osgauge: the result store {} failed during the run (the warning above says how); the run was kept in the local store {} and is now uploaded: stored as run {} in {}{}",
                        store::shown(server),
                        local.display(),
                        record.run_id,
                        store::shown(server),
                        if record.complete { "" } else { " (incomplete)" },
                    );
                    return true;
                }
                Err(e) => last = Some(format!("{e:#}")),
            }
        }
        crate::errln!(
            "osgauge: the result store {} failed during the run (the warning above says how): run {} is kept in the local store {}{} and could not be uploaded before exiting ({}); the next osgauge command that opens {} uploads it, or now:\n  osgauge results push --store {} --to {}",
            store::shown(server),
            record.run_id,
            local.display(),
            if record.complete { "" } else { " (incomplete)" },
            last.unwrap_or_default(),
            store::shown(server),
            shell_word(&local.display().to_string()),
            shell_word(&store::shown(server)),
        );
        false
    }
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunRecord {
        serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap()
    }

    fn opts(store: &Path) -> StoreOpts {
        StoreOpts {
            store: Some(store.to_path_buf()),
            ..StoreOpts::default()
        }
    }

    /// The record as the runner has it after `n` benchmarks, still running.
    fn so_far(full: &RunRecord, n: usize) -> RunRecord {
        let mut r = full.clone();
        r.benchmarks.truncate(n);
        r.complete = false;
        r.finished = None;
        r
    }

    /// A sink on the store `db` that has seen `full`'s run start.
    fn started(db: &Path, full: &RunRecord) -> StoreSink {
        let mut sink = StoreSink::open(&opts(db), true).unwrap();
        sink.on_event(&Event::Started {
            record: &so_far(full, 0),
            total: full.benchmarks.len(),
        });
        sink
    }

    #[test]
    fn a_run_is_written_as_it_goes_and_said_stored_only_once_it_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.sqlite");
        let full = fixture();
        assert!(full.benchmarks.len() >= 2, "the fixture has benchmarks");
        let mut sink = started(&db, &full);
        let s = Store::open_read_only(&db).unwrap().unwrap();
        let rows = s.list().unwrap();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].complete);
        let one = so_far(&full, 1);
        sink.on_event(&Event::RoundFinished {
            round: 1,
            record: &one,
        });
        assert_eq!(s.get(&full.run_id.to_string()).unwrap().unwrap(), one);
        assert!(sink.finish(&full));
        assert!(!sink.write_failed() && !sink.kept_locally());
        assert_eq!(s.get(&full.run_id.to_string()).unwrap().unwrap(), full);
        assert_eq!(
            s.list().unwrap().len(),
            1,
            "updated in place, never re-created"
        );
    }

    #[test]
    fn without_a_store_nothing_is_written_and_finishing_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("never.sqlite");
        let o = StoreOpts {
            no_store: true,
            ..opts(&db)
        };
        let mut sink = StoreSink::open(&o, true).unwrap();
        let r = fixture();
        sink.on_event(&Event::Started {
            record: &r,
            total: 1,
        });
        assert!(sink.finish(&r));
        assert!(!db.exists());
        assert!(sink.history(&[], &r.config).is_empty());
    }

    #[test]
    fn a_run_deleted_while_measured_stays_deleted_and_is_not_said_stored() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.sqlite");
        let full = fixture();
        let mut sink = started(&db, &full);
        let s = Store::open(&db).unwrap();
        assert!(s.delete(&full.run_id.to_string()).unwrap());
        let one = so_far(&full, 1);
        sink.on_event(&Event::RoundFinished {
            round: 1,
            record: &one,
        });
        assert!(sink.write_failed());
        assert!(!sink.finish(&full));
        assert!(
            s.list().unwrap().is_empty(),
            "a deleted run is not brought back"
        );
    }

    #[test]
    fn a_bad_store_path_fails_before_anything_is_measured() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_store = dir.path().join("text.sqlite");
        std::fs::write(&not_a_store, "plain text, not SQLite").unwrap();
        assert!(matches!(
            StoreSink::open(&opts(&not_a_store), true),
            Err(CliError::Usage(_))
        ));
        let e = StoreSink::open(&opts(Path::new("postgre://u:s3cret@h/db")), true);
        match e {
            Err(CliError::Usage(m)) => assert!(m.contains("did you mean") && !m.contains("s3cret")),
            _ => panic!("a mistyped URL is bad input"),
        }
    }

    #[test]
    fn a_shell_word_is_quoted_only_when_it_needs_it() {
        assert_eq!(shell_word("/tmp/a.sqlite"), "/tmp/a.sqlite");
        assert_eq!(
            shell_word("postgres://u@/d?host=/x"),
            "'postgres://u@/d?host=/x'"
        );
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
