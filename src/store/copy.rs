//! Copying one stored run from one store to another: the one decision `results push`/`pull`
//! and the upload of a run that waited in the local store share.

use super::{Origin, Store};
use crate::record::RunRecord;
use anyhow::{Context, Result};

/// What copying a run did in the target store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// Not there before: written.
    New,
    /// There as an incomplete run (a killed run's partial copy): overwritten.
    Updated,
    /// There as a different complete run, overwritten because replacing was asked for.
    Replaced,
    /// There, as kept in the source: nothing written.
    Same,
    /// There as a different complete run, not replacing: nothing written.
    Conflict,
}

impl Copied {
    /// Whether the run was written to the target.
    pub fn written(self) -> bool {
        matches!(self, Self::New | Self::Updated | Self::Replaced)
    }
}

/// Run `run_id`'s stored text and origin in `src`.
pub fn source_row(src: &Store, run_id: &str) -> Result<Option<(RunRecord, String, Origin)>> {
    let Some((text, origin)) = src.get_row(run_id)? else {
        return Ok(None);
    };
    let record: RunRecord = serde_json::from_str(&text)
        .with_context(|| format!("stored run {run_id} is not a valid record"))?;
    let origin = if origin == Origin::Imported.as_str() {
        Origin::Imported
    } else {
        Origin::Measured
    };
    Ok(Some((record, text, origin)))
}

/// Copy the run (`record` kept as `text`) into `dst`. A run not there is stored only if still
/// absent, in one step (of several copies of one run at once, one writes it and the others find
/// it there); a run there as the same text is left; an incomplete one is overwritten; a different
/// complete one only when `replace`.
pub fn copy_run(
    dst: &Store,
    record: &RunRecord,
    text: &str,
    origin: Origin,
    replace: bool,
) -> Result<Copied> {
    let id = record.run_id.to_string();
    if dst.get_json(&id)?.is_none() && dst.put_new(record, text, origin)? {
        return Ok(Copied::New);
    }
    let there = dst.get_json(&id)?;
    let Some(there) = there else {
        // Deleted meanwhile: copied again.
        dst.put_text(record, text, origin)?;
        return Ok(Copied::New);
    };
    if super::same_record_text(&there, text) {
        return Ok(Copied::Same);
    }
    let incomplete = serde_json::from_str::<RunRecord>(&there).is_ok_and(|r| !r.complete);
    if incomplete || replace {
        dst.put_text(record, text, origin)?;
        return Ok(if incomplete {
            Copied::Updated
        } else {
            Copied::Replaced
        });
    }
    Ok(Copied::Conflict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(complete: bool, label: &str) -> (RunRecord, String) {
        let mut r: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        r.complete = complete;
        r.label = Some(label.into());
        let text = serde_json::to_string(&r).unwrap();
        (r, text)
    }

    #[test]
    fn each_case_of_a_copy_writes_only_what_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let dst = Store::open(&dir.path().join("dst.sqlite")).unwrap();
        let (full, full_text) = fixture(true, "a");
        let id = full.run_id.to_string();
        let stored = |dst: &Store| dst.get_json(&id).unwrap();

        // Absent → written; again → the same, nothing written.
        let c = copy_run(&dst, &full, &full_text, Origin::Measured, false).unwrap();
        assert_eq!((c, c.written()), (Copied::New, true));
        let c = copy_run(&dst, &full, &full_text, Origin::Measured, false).unwrap();
        assert_eq!((c, c.written()), (Copied::Same, false));

        // A different complete run of the same id: a conflict unless replacing.
        let (other, other_text) = fixture(true, "b");
        let c = copy_run(&dst, &other, &other_text, Origin::Measured, false).unwrap();
        assert_eq!((c, c.written()), (Copied::Conflict, false));
        assert_eq!(stored(&dst).as_deref(), Some(full_text.as_str()));
        let c = copy_run(&dst, &other, &other_text, Origin::Measured, true).unwrap();
        assert_eq!((c, c.written()), (Copied::Replaced, true));
        assert_eq!(stored(&dst).as_deref(), Some(other_text.as_str()));

        // An incomplete run there is overwritten without asking.
        let (part, part_text) = fixture(false, "c");
        dst.put_text(&part, &part_text, Origin::Measured).unwrap();
        let c = copy_run(&dst, &full, &full_text, Origin::Measured, false).unwrap();
        assert_eq!((c, c.written()), (Copied::Updated, true));
        assert_eq!(stored(&dst).as_deref(), Some(full_text.as_str()));
    }

    #[test]
    fn the_source_row_keeps_the_origin_and_says_when_the_run_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let src = Store::open(&dir.path().join("src.sqlite")).unwrap();
        let (r, text) = fixture(true, "a");
        src.put_text(&r, &text, Origin::Imported).unwrap();
        let (back, back_text, origin) = source_row(&src, &r.run_id.to_string()).unwrap().unwrap();
        assert_eq!(back.run_id, r.run_id);
        assert_eq!(back_text, text);
        assert_eq!(origin, Origin::Imported);
        assert!(
            source_row(&src, "00000000-0000-7000-8000-000000000000")
                .unwrap()
                .is_none()
        );
    }
}
