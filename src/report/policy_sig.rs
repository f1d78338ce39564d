//! The policy study's "which policy differences are significant" section: the pairwise table of
//! `crate::export::pairwise` (medians, ratio, p, BH q, verdict; significant rows marked) and,
//! per metric, a grid chart (rows = workload/procs, columns = policy pairs, each cell coloured by
//! the direction of the difference, saturated when significant, q in the cell's tooltip).
//! The grid is a plain inline SVG: a table of coloured cells with `<title>` tooltips, which the
//! plotters charts cannot carry.

use maud::{Markup, html};

use super::color;
use crate::export::pairwise::{
    Analysis, PairTest, fmt_p, fmt_ratio, method_text, ratio, significant, verdict,
};
use crate::record::RunRecord;
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
fn grid(a: &Analysis, metric: &str) -> Option<Markup> {
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
    // Numbers (coordinates, sizes, colours) and text, all through maud: the text is escaped.
    let cell = |g: &str, p: &str| {
        rows.iter()
            .find(|r| r.group == g && format!("{} vs {}", r.a, r.b) == p)
            .copied()
    };
    let legend_y = head_h + groups.len() * cell_h + 8;
    let legend_x: Vec<usize> = LEGEND
        .iter()
        .scan(8, |x, l| {
            let at = *x;
            *x += text_w(l.2) + 24;
            Some(at)
        })
        .collect();
    Some(html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(w) height=(h) viewBox={ "0 0 " (w) " " (h) }
            font-family="sans-serif" font-size="12" role="img" {
            @for (j, p) in pairs.iter().enumerate() {
                text x=(label_w + j * col_w + col_w / 2) y="16" text-anchor="middle" { (p) }
            }
            @for (i, g) in groups.iter().enumerate() {
                @let y = head_h + i * cell_h;
                text x=(label_w - 8) y=(y + 17) text-anchor="end" { (g) }
                @for (j, p) in pairs.iter().enumerate() {
                    @let x = label_w + j * col_w;
                    @if let Some(r) = cell(g, p) {
                        @let sig = significant(r);
                        @let (cr, cg, cb) = dir_color(r.median_b > r.median_a);
                        @let (fill, opacity, ink) = if r.median_b == r.median_a {
                            ("#eee".to_string(), 1.0, "#333")
                        } else if sig {
                            (format!("rgb({cr},{cg},{cb})"), 1.0, "#fff")
                        } else {
                            (format!("rgb({cr},{cg},{cb})"), 0.18, "#333")
                        };
                        g {
                            title {
                                (g) " · " (metric) ": " (r.b) " / " (r.a) " = " (fmt_ratio(ratio(r)))
                                " (" (format_value(r.median_b, unit)) " vs " (format_value(r.median_a, unit))
                                "), p = " (fmt_p(r.p)) @if !r.exact { " (normal approx.)" }
                                ", q = " (fmt_p(r.q)) " — " (verdict(r))
                            }
                            rect x=(x + 1) y=(y + 1) width=(col_w - 2) height=(cell_h - 2)
                                fill=(fill) fill-opacity=(opacity) stroke="#fff" {}
                            text x=(x + col_w / 2) y=(y + 17) text-anchor="middle" fill=(ink)
                                font-weight=[sig.then_some("bold")] {
                                (fmt_ratio(ratio(r))) @if sig { " ✱" }
                            }
                        }
                    } @else {
                        g {
                            title { (g) " · " (metric) " · " (p) ": not tested" }
                            rect x=(x + 1) y=(y + 1) width=(col_w - 2) height=(cell_h - 2)
                                fill="#fff" stroke="#bbb" stroke-dasharray="3 3" {}
                            text x=(x + col_w / 2) y=(y + 17) text-anchor="middle" fill="#999" { "—" }
                        }
                    }
                }
            }
            // Legend: the four cell kinds.
            @for ((higher, sig, label), x) in LEGEND.iter().zip(&legend_x) {
                @let (cr, cg, cb) = dir_color(*higher);
                rect x=(x) y=(legend_y) width="14" height="14"
                    fill={ "rgb(" (cr) "," (cg) "," (cb) ")" } fill-opacity=(if *sig { 1.0 } else { 0.18 }) {}
                text x=(x + 18) y=(legend_y + 12) { (label) }
            }
        }
    })
}

fn table(a: &Analysis) -> Markup {
    html! {
        table.policy-significance {
            "\n"
            tr {
                th { "work/procs" } th { "metric" } th { "a vs b" } th { "median a" } th { "median b" }
                th { "b / a" } th { "p" } th { "q (BH)" } th { "verdict" }
            } "\n"
            @for r in &a.rows {
                @let unit = a.unit(&r.metric);
                @let sig = significant(r);
                tr class=[sig.then_some("sig")] style=[sig.then_some(SIG_ROW)] {
                    td { (r.group) }
                    td { (r.metric) }
                    td { (r.a) " vs " (r.b) }
                    td style=(NUM) { (format_value(r.median_a, unit)) }
                    td style=(NUM) { (format_value(r.median_b, unit)) }
                    td style=(NUM) { (fmt_ratio(ratio(r))) }
                    td style=(NUM) { (fmt_p(r.p)) @if !r.exact { " approx." } }
                    td style=(NUM) { (fmt_p(r.q)) }
                    td { @if sig { "✱ " } (verdict(r)) }
                } "\n"
            }
        } "\n"
    }
}

const NUM: &str = "text-align:right";

/// One run's part of the section (empty when it is not a policy study).
fn run_part(name: &str, record: &RunRecord, several: bool) -> Option<Markup> {
    let a = crate::export::pairwise::analyse(record)?;
    let dir = |better: &Better| match better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
        Better::Neutral => "neutral",
    };
    Some(html! {
        @if several { h3 { (name) } "\n" }
        @if !a.notes.is_empty() {
            ul.note { "\n" @for n in &a.notes { li { (n) } "\n" } } "\n"
        }
        @if !a.rows.is_empty() {
            div.grid {
                "\n"
                @for (metric, _, better) in &a.units {
                    @if let Some(svg) = grid(&a, metric) {
                        figure.wide {
                            figcaption {
                                (name) " · " (metric) " (" (dir(better)) "): ratio b / a of the medians per workload/procs and policy pair — saturated and ✱ = significant (q < "
                                (crate::export::pairwise::ALPHA) "), pale = not; p and q in each cell's tooltip"
                            }
                            (svg)
                        } "\n"
                    }
                }
            } "\n"
            (table(&a))
        }
    })
}

/// The section for every policy run in the report (empty when there is none).
pub fn section(runs: &[(String, RunRecord)]) -> Markup {
    let policy_runs = runs
        .iter()
        .filter(|(_, r)| crate::export::pairwise::analyse(r).is_some())
        .count();
    let parts: Vec<Markup> = runs
        .iter()
        .filter_map(|(n, r)| run_part(n, r, policy_runs > 1))
        .collect();
    if parts.is_empty() {
        return html! {};
    }
    html! {
        section #policy-significance {
            "\n" h2 { "Which policy differences are significant" } "\n"
            p.note { (method_text()) } "\n"
            @for p in &parts { (p) }
        } "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_a_policy_run_gives_no_section() {
        let r: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        assert_eq!(section(&[("a".into(), r)]).into_string(), "");
    }

    #[test]
    fn table_and_grid_mark_significant_pairs_and_escape() {
        let r = crate::export::pairwise::tests::record(&[
            ("policy/cpu/<other>/10", vec![10.0, 11.0, 12.0, 13.0, 14.0]),
            ("policy/cpu/fifo/10", vec![20.0, 21.0, 22.0, 23.0, 24.0]),
            ("policy/cpu/rr/10", vec![20.5, 21.5, 22.5, 23.5, 24.5]),
            ("policy/io/fifo/10", vec![5.0, 6.0, 7.0, 8.0, 9.0]),
            ("policy/io/rr/10", vec![1.0, 2.0, 3.0, 4.0, 4.5]),
        ]);
        let h = section(&[("run \"1\"".into(), r)]).into_string();
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
        let r = crate::export::pairwise::tests::record(&[
            ("policy/cpu/other/10", vec![10.0, 11.0]),
            ("policy/cpu/other/100", vec![20.0, 21.0]),
        ]);
        let h = section(&[("a".into(), r)]).into_string();
        assert!(h.contains("One policy only, nothing to compare: cpu/10 (other), cpu/100 (other)"));
        assert!(!h.contains("<table") && !h.contains("<svg"), "{h}");
    }
}
