//! The policy study's "which policy differences are significant" section: the pairwise table of
//! `crate::compare::pairwise` (medians, ratio, p, BH q, verdict; significant rows marked) and,
//! per metric, a grid chart (rows = workload/procs, columns = policy pairs, each cell coloured by
//! the direction of the difference, saturated when significant, q in the cell's tooltip).
//! The grid is a plain inline SVG: a table of coloured cells with `<title>` tooltips, which the
//! plotters charts cannot carry.

use std::fmt::Write as _;

use super::{color, esc};
use crate::compare::pairwise::{
    Analysis, PairTest, fmt_p, fmt_ratio, method_text, ratio, significant, verdict,
};
use crate::model::RunRecord;
use crate::units::{Better, format_value};

/// Colour of "b higher than a" and "b lower than a" (the report palette: vermillion, blue).
fn dir_color(higher: bool) -> (u8, u8, u8) {
    if higher { color(5) } else { color(0) }
}

const SIG_ROW: &str = "background:#fff1d6;font-weight:600";

/// Width in px of `s` at 12 px sans-serif (a generous estimate).
fn text_w(s: &str) -> usize {
    s.chars().count() * 7 + 14
}

/// The grid of one metric.
fn grid(a: &Analysis, metric: &str) -> Option<String> {
    let rows: Vec<&PairTest> = a.rows.iter().filter(|r| r.metric == metric).collect();
    if rows.is_empty() {
        return None;
    }
    let mut groups: Vec<&str> = Vec::new();
    let mut pairs: Vec<String> = Vec::new();
    for r in &rows {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
        let p = format!("{} vs {}", r.a, r.b);
        if !pairs.contains(&p) {
            pairs.push(p);
        }
    }
    let unit = a.unit(metric);
    let label_w = groups.iter().map(|g| text_w(g)).max().unwrap_or(40).max(80);
    let col_w = pairs.iter().map(|p| text_w(p)).max().unwrap_or(60).max(84);
    let (head_h, cell_h, legend_h) = (24, 26, 28);
    const LEGEND: [(bool, bool, &str); 4] = [
        (true, true, "b higher, significant"),
        (true, false, "b higher, not significant"),
        (false, true, "b lower, significant"),
        (false, false, "b lower, not significant"),
    ];
    let legend_w: usize = 8 + LEGEND.iter().map(|l| text_w(l.2) + 24).sum::<usize>();
    let w = (label_w + pairs.len() * col_w + 8).max(legend_w);
    let h = head_h + groups.len() * cell_h + legend_h;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">"
    );
    for (j, p) in pairs.iter().enumerate() {
        let x = label_w + j * col_w + col_w / 2;
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"16\" text-anchor=\"middle\">{}</text>",
            esc(p)
        );
    }
    for (i, g) in groups.iter().enumerate() {
        let y = head_h + i * cell_h;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            label_w - 8,
            y + 17,
            esc(g)
        );
        for (j, p) in pairs.iter().enumerate() {
            let x = label_w + j * col_w;
            let cell = rows
                .iter()
                .find(|r| r.group == *g && format!("{} vs {}", r.a, r.b) == *p);
            let Some(r) = cell else {
                let _ = write!(
                    s,
                    "<g><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fff\" stroke=\"#bbb\" stroke-dasharray=\"3 3\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#999\">—</text></g>",
                    esc(&format!("{g} · {metric} · {p}: not tested")),
                    x + 1,
                    y + 1,
                    col_w - 2,
                    cell_h - 2,
                    x + col_w / 2,
                    y + 17
                );
                continue;
            };
            let sig = significant(r);
            let (cr, cg, cb) = dir_color(r.median_b > r.median_a);
            let (fill, opacity, ink) = if r.median_b == r.median_a {
                ("#eee".to_string(), 1.0, "#333")
            } else if sig {
                (format!("rgb({cr},{cg},{cb})"), 1.0, "#fff")
            } else {
                (format!("rgb({cr},{cg},{cb})"), 0.18, "#333")
            };
            let tip = format!(
                "{g} · {metric}: {} / {} = {} ({} vs {}), p = {}{}, q = {} — {}",
                r.b,
                r.a,
                fmt_ratio(ratio(r)),
                format_value(r.median_b, unit),
                format_value(r.median_a, unit),
                fmt_p(r.p),
                if r.exact { "" } else { " (normal approx.)" },
                fmt_p(r.q),
                verdict(r)
            );
            let _ = write!(
                s,
                "<g><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" fill-opacity=\"{opacity}\" stroke=\"#fff\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\"{}>{}{}</text></g>",
                esc(&tip),
                x + 1,
                y + 1,
                col_w - 2,
                cell_h - 2,
                x + col_w / 2,
                y + 17,
                if sig { " font-weight=\"bold\"" } else { "" },
                esc(&fmt_ratio(ratio(r))),
                if sig { " ✱" } else { "" }
            );
        }
    }
    // Legend: the four cell kinds.
    let y = head_h + groups.len() * cell_h + 8;
    let mut x = 8;
    for (higher, sig, text) in LEGEND {
        let (cr, cg, cb) = dir_color(higher);
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{y}\" width=\"14\" height=\"14\" fill=\"rgb({cr},{cg},{cb})\" fill-opacity=\"{}\"/><text x=\"{}\" y=\"{}\">{text}</text>",
            if sig { 1.0 } else { 0.18 },
            x + 18,
            y + 12
        );
        x += text_w(text) + 24;
    }
    s.push_str("</svg>");
    Some(s)
}

fn table(a: &Analysis) -> String {
    let mut s = String::from(
        "<table class=\"policy-significance\">\n<tr><th>work/procs</th><th>metric</th><th>a vs b</th><th>median a</th><th>median b</th><th>b / a</th><th>p</th><th>q (BH)</th><th>verdict</th></tr>\n",
    );
    let num = "style=\"text-align:right\"";
    for r in &a.rows {
        let unit = a.unit(&r.metric);
        let sig = significant(r);
        let _ = writeln!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td>{} vs {}</td><td {num}>{}</td><td {num}>{}</td><td {num}>{}</td><td {num}>{}{}</td><td {num}>{}</td><td>{}{}</td></tr>",
            if sig {
                format!(" class=\"sig\" style=\"{SIG_ROW}\"")
            } else {
                String::new()
            },
            esc(&r.group),
            esc(&r.metric),
            esc(&r.a),
            esc(&r.b),
            esc(&format_value(r.median_a, unit)),
            esc(&format_value(r.median_b, unit)),
            esc(&fmt_ratio(ratio(r))),
            esc(&fmt_p(r.p)),
            if r.exact { "" } else { " approx." },
            esc(&fmt_p(r.q)),
            if sig { "✱ " } else { "" },
            esc(&verdict(r))
        );
    }
    s.push_str("</table>\n");
    s
}

/// One run's part of the section ("" when it is not a policy study).
fn run_part(name: &str, record: &RunRecord, several: bool) -> String {
    let Some(a) = crate::compare::pairwise::analyse(record) else {
        return String::new();
    };
    let mut s = String::new();
    if several {
        let _ = writeln!(s, "<h3>{}</h3>", esc(name));
    }
    if !a.notes.is_empty() {
        s.push_str("<ul class=\"note\">\n");
        for n in &a.notes {
            let _ = writeln!(s, "<li>{}</li>", esc(n));
        }
        s.push_str("</ul>\n");
    }
    if a.rows.is_empty() {
        return s;
    }
    s.push_str("<div class=\"grid\">\n");
    for (metric, _, better) in &a.units {
        let Some(svg) = grid(&a, metric) else {
            continue;
        };
        let dir = match better {
            Better::Lower => "lower is better",
            Better::Higher => "higher is better",
            Better::Neutral => "neutral",
        };
        let _ = writeln!(
            s,
            "<figure class=\"wide\"><figcaption>{}</figcaption>{svg}</figure>",
            esc(&format!(
                "{name} · {metric} ({dir}): ratio b / a of the medians per workload/procs and policy pair — saturated and ✱ = significant (q < {}), pale = not; p and q in each cell's tooltip",
                crate::compare::pairwise::ALPHA
            ))
        );
    }
    s.push_str("</div>\n");
    s.push_str(&table(&a));
    s
}

/// The section for every policy run in the report ("" when there is none).
pub fn section(runs: &[(String, RunRecord)]) -> String {
    let policy_runs = runs
        .iter()
        .filter(|(_, r)| crate::compare::pairwise::analyse(r).is_some())
        .count();
    let parts: String = runs
        .iter()
        .map(|(n, r)| run_part(n, r, policy_runs > 1))
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "<section id=\"policy-significance\">\n<h2>Which policy differences are significant</h2>\n<p class=\"note\">{}</p>\n{parts}</section>\n",
        esc(&method_text())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_a_policy_run_gives_no_section() {
        let r: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        assert_eq!(section(&[("a".into(), r)]), "");
    }

    #[test]
    fn table_and_grid_mark_significant_pairs_and_escape() {
        let r = crate::compare::pairwise::tests::record(&[
            ("policy/cpu/<other>/10", vec![10.0, 11.0, 12.0, 13.0, 14.0]),
            ("policy/cpu/fifo/10", vec![20.0, 21.0, 22.0, 23.0, 24.0]),
            ("policy/cpu/rr/10", vec![20.5, 21.5, 22.5, 23.5, 24.5]),
            ("policy/io/fifo/10", vec![5.0, 6.0, 7.0, 8.0, 9.0]),
            ("policy/io/rr/10", vec![1.0, 2.0, 3.0, 4.0, 4.5]),
        ]);
        let h = section(&[("run \"1\"".into(), r)]);
        assert!(
            h.contains("<h2>Which policy differences are significant</h2>"),
            "{h}"
        );
        assert!(h.contains("Mann-Whitney") && h.contains("Benjamini-Hochberg"));
        assert!(
            !h.contains("<other>") && h.contains("&lt;other&gt;"),
            "not escaped"
        );
        // Table: the separated pair is marked, the overlapping one is not.
        let row = |needle: &str| {
            h.lines()
                .find(|l| l.starts_with("<tr") && l.contains(needle))
                .unwrap_or_else(|| panic!("no row {needle}: {h}"))
                .to_string()
        };
        let of = row("&lt;other&gt; vs fifo");
        assert!(
            of.contains("class=\"sig\"") && of.contains("✱ differ: fifo higher"),
            "{of}"
        );
        let fr = row("<td>fifo vs rr</td>");
        assert!(
            !fr.contains("class=\"sig\"") && fr.contains("~ same"),
            "{fr}"
        );
        // Grid: one figure per metric, a cell per group × pair with p and q in its tooltip; pairs
        // a group does not have are drawn as "not tested".
        assert_eq!(h.matches("<svg").count(), 1);
        assert!(h.contains("<title>cpu/10 · makespan: fifo / &lt;other&gt; = 1.833× (22.00 ns vs 12.00 ns), p = 0.0079"), "{h}");
        assert!(
            h.contains("q = 0.0106 — differ: fifo higher</title>"),
            "{h}"
        );
        assert!(
            h.contains("io/10 · makespan · &lt;other&gt; vs fifo: not tested"),
            "{h}"
        );
        // io: rr lower than fifo and significant → the "lower" colour, saturated.
        let (r0, g0, b0) = color(0);
        assert!(h.contains(&format!("fill=\"rgb({r0},{g0},{b0})\" fill-opacity=\"1\"")));
    }

    #[test]
    fn one_policy_only_says_so_instead_of_an_empty_table() {
        let r = crate::compare::pairwise::tests::record(&[
            ("policy/cpu/other/10", vec![10.0, 11.0]),
            ("policy/cpu/other/100", vec![20.0, 21.0]),
        ]);
        let h = section(&[("a".into(), r)]);
        assert!(h.contains("One policy only, nothing to compare: cpu/10 (other), cpu/100 (other)"));
        assert!(!h.contains("<table") && !h.contains("<svg"), "{h}");
    }
}
