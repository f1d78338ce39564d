//! Runs waiting in the local store for a database server that could not take them.
//!
//! When a run's writes to a PostgreSQL store fail (the server lost, a read-only database, tables
//! changed by hand), the run goes on in the local SQLite store and a marker is left beside that
//! store: `<local store>.pending/<run id>`, holding the target's location without its password.
//! The run tries to upload itself before its command exits; what is still waiting then is
//! uploaded by the next osgauge command that opens that database ([`upload_waiting`]), which
//! says so. Uploading is idempotent by run id (as `results push`): a run already there unchanged
//! is left alone, one stored there incomplete is replaced by the complete copy, a different
//! complete run with the same id is left for `results push --replace`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Store, shown};

/// The folder of markers beside the local store `local`.
pub fn dir(local: &Path) -> PathBuf {
    let mut name = local.file_name().unwrap_or_default().to_os_string();
    name.push(".pending");
    local.with_file_name(name)
}

/// Leave a marker: run `run_id`, kept in the local store `local`, is to go to `target`.
pub fn mark(local: &Path, run_id: &str, target: &Path) -> Result<()> {
    let d = dir(local);
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    let tmp = d.join(format!(".{run_id}.{}", std::process::id()));
    std::fs::write(&tmp, format!("{}\n", shown(target)))
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, d.join(run_id)).with_context(|| format!("writing {}", d.display()))?;
    Ok(())
}

/// Remove the marker of `run_id` (and the folder when it is empty).
pub fn unmark(local: &Path, run_id: &str) {
    let d = dir(local);
    let _ = std::fs::remove_file(d.join(run_id));
    let _ = std::fs::remove_dir(&d);
}

/// Run `run_id` is in `target` now (pushed by hand): remove its marker if it waited for
/// `target`.
pub fn settled(local: &Path, run_id: &str, target: &Path) {
    if waiting_for(local, target).iter().any(|w| w == run_id) {
        unmark(local, run_id);
    }
}

/// The run ids waiting in `local` for `target`.
pub fn waiting_for(local: &Path, target: &Path) -> Vec<String> {
    let want = shown(target);
    let Ok(rd) = std::fs::read_dir(dir(local)) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = rd
        .flatten()
        .filter_map(|e| {
            let id = e.file_name().to_str()?.to_string();
            if id.starts_with('.') || uuid::Uuid::try_parse(&id).is_err() {
                return None;
            }
            let t = std::fs::read_to_string(e.path()).ok()?;
            (t.trim_end_matches('\n') == want).then_some(id)
        })
        .collect();
    ids.sort();
    ids
}

/// What [`upload`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uploaded {
    /// Written there (or the incomplete copy there replaced).
    Copied,
    /// Already there as kept here.
    AlreadyThere,
    /// A different complete run with the same id is there: left for `push --replace`.
    Conflict,
}

/// Copy run `run_id` from `local` to the store at `target` (opened for writing), then read it
/// back through a fresh connection.
pub fn upload(local: &Store, target: &Path, run_id: &str) -> Result<Uploaded> {
    let Some((record, text, origin)) = super::copy::source_row(local, run_id)? else {
        bail!(
            "run {run_id} is not in the local store {}",
            local.path().display()
        );
    };
    let dst = Store::open(target)?;
    match super::copy::copy_run(&dst, &record, &text, origin, false)? {
        super::copy::Copied::Same => return Ok(Uploaded::AlreadyThere),
        super::copy::Copied::Conflict => return Ok(Uploaded::Conflict),
        _ => {}
    }
    let back = Store::open_read_only(dst.path())?
        .map(|r| r.get_json(run_id))
        .transpose()?
        .flatten();
    if back.as_deref() != Some(text.as_str()) {
        bail!("run {run_id} does not read back as uploaded");
    }
    Ok(Uploaded::Copied)
}

/// At a command that opened the database server store `target`: upload the runs waiting for it
/// in the local store, and say what was done (on stderr). Nothing for a SQLite store.
pub fn upload_waiting(target: &Store) {
    if !target.is_server() {
        return;
    }
    let Ok(local) = super::local_path() else {
        return;
    };
    let ids = waiting_for(&local, target.path());
    if ids.is_empty() {
        return;
    }
    let l = match Store::open_read_only(&local) {
        Ok(Some(l)) => l,
        Ok(None) => {
            for id in &ids {
                unmark(&local, id);
            }
            return;
        }
        Err(e) => {
            crate::errln!(
                "osgauge: note: {} run(s) wait in the local store {} to be uploaded to {}, which cannot be read now: {e:#}",
                ids.len(),
                local.display(),
                shown(target.path())
            );
            return;
        }
    };
    for id in ids {
        match upload(&l, target.path(), &id) {
            Ok(Uploaded::Copied) => {
                unmark(&local, &id);
                crate::errln!(
                    "osgauge: uploaded run {id} to {}: it was kept in the local store {} when that store could not take it",
                    shown(target.path()),
                    local.display()
                );
            }
            Ok(Uploaded::AlreadyThere) => unmark(&local, &id),
            Ok(Uploaded::Conflict) => {
                unmark(&local, &id);
                crate::errln!(
                    "osgauge: run {id}, kept in the local store {}, is stored differently in {}: not uploaded (`osgauge results push --replace` overwrites it)",
                    local.display(),
                    shown(target.path())
                );
            }
            Err(e) => crate::errln!(
                "osgauge: note: run {id} still waits in the local store {} to be uploaded to {}: {e:#}",
                local.display(),
                shown(target.path())
            ),
        }
    }
}
