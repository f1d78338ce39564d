//! The full run record as pretty JSON (schema `osgauge.run/1`); re-importable.

use crate::record::RunRecord;

pub fn render(record: &RunRecord) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(record)?;
    s.push('\n');
    Ok(s)
}
