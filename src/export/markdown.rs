//! Markdown: the terminal tables as GitHub-flavoured Markdown, with the method and warnings.

use crate::output::{LABEL_MAX_CHARS, markdown_text, table_rows};
use crate::record::RunRecord;

pub fn render(record: &RunRecord) -> String {
    let mut s = String::new();
    let title = record
        .label
        .as_deref()
        .map(|l| crate::output::markdown_text(&crate::output::display_text(l, LABEL_MAX_CHARS)))
        .unwrap_or_else(|| "osgauge run".into());
    s.push_str(&format!("# {title}\n\n"));
    s.push_str(&format!(
        "Run `{}` · {} · osgauge {} ({})\n\n",
        record.run_id,
        record.started.format("%Y-%m-%d %H:%M:%S UTC"),
        record.tool.version,
        record.tool.profile
    ));
    s.push_str(&format!(
        "Per benchmark: median of the per-run medians ({}) with its 95 % bootstrap CI; p99 = median of per-run p99; CV = run-to-run coefficient of variation. Lower is better unless marked ↑ (higher is better) or ≈ (neutral: a verification figure, closer to its target is right).\n\n",
        crate::output::runs_kept_text(record)
    ));
    for (suite, rows) in table_rows(record) {
        s.push_str(&format!("## {suite}\n\n"));
        s.push_str(
            "| benchmark | median | 95 % CI | p99 | CV | note |\n|---|---:|---:|---:|---:|---|\n",
        );
        for r in rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                markdown_text(&r.name),
                r.median,
                r.ci,
                r.p99,
                r.cv,
                markdown_text(&r.note)
            ));
        }
        s.push('\n');
    }
    // A policy study: which policy differences are significant ("" for any other run).
    s.push_str(&super::pairwise::render_markdown(record));
    let warnings = crate::output::all_warnings(record);
    if !warnings.is_empty() {
        s.push_str("## Warnings\n\n");
        for w in warnings {
            s.push_str(&format!("- {w}\n"));
        }
    }
    s
}
