//! Terminal, Markdown and JSON views of an [`Analysis`]; every view is built from the same
//! tables (`sections`), so they cannot disagree.

use super::Analysis;
use super::calc::{Prediction, fmt};
use super::score::Gate;

pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

fn pct(v: Option<f64>, dec: usize) -> String {
    v.map_or("—".into(), |v| format!("{:.dec$} %", v * 100.0))
}

fn rate(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.2}"))
}

fn gate_text(g: Gate) -> &'static str {
    match g {
        Gate::Pass => "pass",
        Gate::Failed => "FAILED",
        Gate::NotVerified => "not verified",
    }
}

/// The tables of one run's prediction (`k`: its place among the analysis's runs).
fn per_run(a: &Analysis, pr: &Prediction, k: usize) -> Vec<Table> {
    let mut out = vec![demand_table(a, pr), parts_table(pr)];
    if let Some(checks) = a.checks.get(k)
        && !checks.is_empty()
    {
        out.push(checks_table(pr, checks));
    }
    out
}

/// Per resource: demand, capacity, S, U at the target and the rate it saturates at; under it
/// the laws' results, the QoS checks and every input missing, flagged or to measure.
fn demand_table(a: &Analysis, pr: &Prediction) -> Table {
    let unit = &a.profile.unit;
    let mut rows = Vec::new();
    for r in &pr.resources {
        let cap = match (r.capacity, r.resource) {
            (Some(c), "cpu") => format!("{} CPUs", fmt(c)),
            (Some(c), "thread") => format!("{} CPU (one thread)", fmt(c)),
            (Some(c), "disk") => format!("{} {}/s", fmt(c), r.unit),
            (Some(c), _) => format!("{} {}/s", fmt(c), r.unit),
            (None, _) if r.parts.iter().all(|p| p.fraction.is_some()) && r.s.is_some() => {
                "(per-unit %)".into()
            }
            (None, _) => "MISSING".into(),
        };
        rows.push(vec![
            r.title.to_string(),
            if r.parts.iter().any(|p| p.amount.is_some()) {
                format!("{} {}", fmt(r.demand), r.unit)
            } else {
                "—".into()
            },
            cap,
            pct(r.s, 3),
            pct(r.util_at_target, 1),
            rate(r.x_sat),
            if r.missing.is_empty() {
                String::new()
            } else {
                format!("lower bound: {} missing", r.missing.join(", "))
            },
        ]);
    }
    let notes = laws_notes(a, pr);
    Table {
        title: format!(
            "{} ({}): service demand per {unit} and utilisation",
            pr.name, pr.os
        ),
        header: [
            "resource",
            "demand/unit",
            "capacity",
            &format!("S (per {unit}/s)"),
            &format!("U at {} {unit}/s", fmt(pr.target_rate)),
            &format!("saturates at ({unit}/s)"),
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        notes,
    }
}

/// The notes under the demand table.
fn laws_notes(a: &Analysis, pr: &Prediction) -> Vec<String> {
    let unit = &a.profile.unit;
    let mut notes = Vec::new();
    let ub = if pr.upper_bound {
        " UPPER BOUND (inputs missing)"
    } else {
        ""
    };
    notes.push(format!(
        "Maximum rate: {} {unit}/s{ub}; bottleneck: {}; next: {}.",
        rate(pr.x_max),
        pr.bottleneck.as_deref().unwrap_or("—"),
        pr.next_bottleneck.as_deref().unwrap_or("—"),
    ));
    notes.push(format!(
        "Rate at the {} % utilisation ceiling: {} {unit}/s; target {} {unit}/s: {}.",
        fmt(pr.ceiling * 100.0),
        rate(pr.x_ceiling),
        fmt(pr.target_rate),
        match pr.target_ok {
            Some(true) => "within the ceiling",
            Some(false) => "ABOVE the ceiling",
            None => "cannot be judged",
        }
    ));
    if let (Some(x), Some(g), Some(b)) = (pr.x_max_plus10, pr.gain_plus10, &pr.bottleneck) {
        notes.push(format!(
            "+10 % capacity at the bottleneck ({b}): {} {unit}/s ({:+.1} %){}.",
            rate(Some(x)),
            g * 100.0,
            match &pr.next_bottleneck {
                Some(n) if g < 0.0999 => format!(", limited by {n}"),
                _ => String::new(),
            }
        ));
    }
    for q in &pr.qos {
        notes.push(format!(
            "QoS {}: limit {}, measured {} — {} ({})",
            q.what,
            fmt(q.limit),
            q.measured.map_or("—".into(), fmt),
            match q.pass {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "NOT MEASURED",
            },
            q.source
        ));
    }
    for (k, why) in &pr.missing {
        notes.push(format!("MISSING {k}: {why}"));
    }
    for (k, src) in &pr.flagged {
        notes.push(format!("FLAGGED {k}: {src}"));
    }
    for n in &pr.notes {
        notes.push(format!("NOTE: {n}"));
    }
    if let Some(cmd) = &pr.to_measure {
        notes.push(format!(
            "TO MEASURE what is missing: `{cmd}` runs every benchmark this profile reads at the standard preset, whose CPU-cost windows are extended to the counters' resolution (a few minutes); then `{}`",
            super::inputs::model_command(&a.profile.file)
        ));
    }
    notes
}

/// Where each demand comes from: every part of every resource.
fn parts_table(pr: &Prediction) -> Table {
    let mut prow = Vec::new();
    for r in &pr.resources {
        for p in &r.parts {
            prow.push(vec![
                r.title.to_string(),
                p.label.clone(),
                match (p.amount, p.fraction) {
                    (Some(v), _) => format!("{} {}", fmt(v), r.unit),
                    (_, Some(f)) => format!("{} % of capacity", fmt(f * 100.0)),
                    _ => "—".into(),
                },
                format!("{}{}", if p.assumed { "ASSUMED: " } else { "" }, p.source),
            ]);
        }
    }
    Table {
        title: format!("{}: where each demand comes from", pr.name),
        header: ["resource", "part", "per unit", "source"]
            .map(String::from)
            .to_vec(),
        rows: prow,
        notes: vec![],
    }
}

/// A published column's printed results against the same figures recomputed.
fn checks_table(pr: &Prediction, checks: &[super::published::Check]) -> Table {
    Table {
        title: format!("{}: published results recomputed (printed vs computed)", pr.name),
        header: ["table", "figure", "printed", "computed", ""].map(String::from).to_vec(),
        rows: checks
            .iter()
            .map(|c| {
                vec![
                    c.table.clone(),
                    c.what.clone(),
                    c.printed.clone(),
                    c.computed_text.clone(),
                    c.verdict.to_string(),
                ]
            })
            .collect(),
        notes: std::iter::once(
            "= same at the printed precision; ≈ within 2 units of the last printed digit (the source \
             multiplied its own rounded intermediates); ≠ further apart."
                .to_string(),
        )
        .chain(checks.iter().filter_map(|c| {
            c.note.as_ref().map(|n| format!("Table {} {}: {n}", c.table, c.what))
        }))
        .collect(),
    }
}

/// Every table of the analysis, in print order.
pub fn sections(a: &Analysis) -> Vec<Table> {
    let mut out = Vec::new();
    for (k, pr) in a.predictions.iter().enumerate() {
        out.extend(per_run(a, pr, k));
    }
    if a.predictions.len() > 1 {
        out.push(side_by_side(a));
    }
    if !a.scores.rows.is_empty() {
        out.push(score_table(a));
    }
    out
}

/// The runs side by side (several runs): maximum rate, bottleneck and next, rate at the
/// ceiling, and every resource's utilisation at the target rate.
fn side_by_side(a: &Analysis) -> Table {
    let unit = &a.profile.unit;
    let mut header = vec![String::new()];
    header.extend(a.predictions.iter().map(|p| p.name.clone()));
    let mut rows = vec![
        {
            let mut r = vec![format!("maximum rate ({unit}/s)")];
            r.extend(a.predictions.iter().map(|p| {
                format!(
                    "{}{}",
                    rate(p.x_max),
                    if p.upper_bound { " (upper bound)" } else { "" }
                )
            }));
            r
        },
        {
            let mut r = vec!["bottleneck / next".to_string()];
            r.extend(a.predictions.iter().map(|p| {
                format!(
                    "{} / {}",
                    p.bottleneck.as_deref().unwrap_or("—"),
                    p.next_bottleneck.as_deref().unwrap_or("—")
                )
            }));
            r
        },
        {
            let mut r = vec![format!(
                "rate at {} % ceiling",
                fmt(a.profile.ceiling * 100.0)
            )];
            r.extend(a.predictions.iter().map(|p| rate(p.x_ceiling)));
            r
        },
    ];
    let mut names: Vec<(&str, &str)> = Vec::new();
    for p in &a.predictions {
        for r in &p.resources {
            if !names.iter().any(|n| n.0 == r.resource) {
                names.push((r.resource, r.title));
            }
        }
    }
    for (res, title) in names {
        let mut r = vec![format!("U {title} at {}", fmt(a.profile.target_rate))];
        r.extend(
            a.predictions
                .iter()
                .map(|p| pct(p.resource(res).and_then(|x| x.util_at_target), 1)),
        );
        rows.push(r);
    }
    Table {
        title: "Side by side".into(),
        header,
        rows,
        notes: vec![],
    }
}

/// The score table of the weighted requirements: a row per subsystem, the weighted score, the
/// requirements gate, and the ranking with the reasons of each gate in the notes.
fn score_table(a: &Analysis) -> Table {
    let mut header = vec!["subsystem".to_string(), "weight".into()];
    header.extend(a.scores.runs.iter().cloned());
    let mut rows: Vec<Vec<String>> = a
        .scores
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![r.subsystem.clone(), fmt(r.weight)];
            row.extend(r.cells.iter().map(|c| match (c.score, c.value) {
                (Some(s), Some(v)) if c.within_noise => format!("{s}≈ ({})", fmt(v)),
                (Some(s), Some(v)) => format!("{s} ({})", fmt(v)),
                _ => "— (not measured)".into(),
            }));
            row
        })
        .collect();
    let mut total = vec!["weighted score".to_string(), String::new()];
    total.extend(a.scores.gates.iter().map(|g| {
        format!(
            "{} / {}{}",
            fmt(g.weighted),
            fmt(g.weighted_max),
            if g.rows_unscored > 0 {
                format!(" ({} unscored)", g.rows_unscored)
            } else {
                String::new()
            }
        )
    }));
    rows.push(total);
    let mut gate = vec!["requirements gate".to_string(), String::new()];
    gate.extend(a.scores.gates.iter().map(|g| gate_text(g.gate).to_string()));
    rows.push(gate);
    let mut notes = vec![format!(
        "Ranking (a failed requirement ranks last whatever the score): {}",
        a.scores
            .ranking
            .iter()
            .map(|&i| format!(
                "{} [{}]",
                a.scores.runs[i],
                gate_text(a.scores.gates[i].gate)
            ))
            .collect::<Vec<_>>()
            .join(" > ")
    )];
    for (i, g) in a.scores.gates.iter().enumerate() {
        for r in &g.reasons {
            notes.push(format!("{}: {r}", a.scores.runs[i]));
        }
    }
    notes.push(
        "Scores 1–5: linear between the profile's worst and best where given, else relative to the best run shown; ≈: this run's 95 % CI overlaps the best run's, so the runs do not resolve the difference and it scores as the best."
            .into(),
    );
    Table {
        title: "Score table (weighted requirements)".into(),
        header,
        rows,
        notes,
    }
}

fn heading(a: &Analysis) -> Vec<String> {
    let p = &a.profile;
    let mut h = vec![format!(
        "Application model: {} — unit: {}, target {} {}/s, utilisation ceiling {} %",
        p.name,
        p.unit,
        fmt(p.target_rate),
        p.unit,
        fmt(p.ceiling * 100.0)
    )];
    if let Some(s) = &a.published {
        h.push(format!(
            "PUBLISHED FIGURES, not measured by osgauge: {} — {}",
            s.title, s.note
        ));
    }
    h.push(
        "Laws: U = F + X·S, X_max = min (1 − F)/S (bottleneck = argmin), X at ceiling ρ = min (ρ − F)/S. \
         MB = 10^6 B in osgauge's measurements (published figures keep their source's units); \
         memory traffic counts bytes read + written (STREAM)."
            .into(),
    );
    h
}

pub fn text(a: &Analysis) -> String {
    let mut s = heading(a).join("\n");
    s.push('\n');
    for t in sections(a) {
        s.push('\n');
        s.push_str(&t.title);
        s.push('\n');
        let n = t.header.len();
        let rows: Vec<Vec<&str>> = std::iter::once(&t.header)
            .chain(&t.rows)
            .map(|r| r.iter().take(n).map(String::as_str).collect())
            .collect();
        let g = crate::output::grid::Grid {
            indent: "  ",
            ..Default::default()
        };
        s.push_str(&g.render(&rows));
        for note in &t.notes {
            s.push_str("  ");
            s.push_str(note);
            s.push('\n');
        }
    }
    s
}

fn md_cell(c: &str) -> String {
    c.replace('|', "\\|")
}

pub fn markdown(a: &Analysis) -> String {
    let h = heading(a);
    let mut s = format!("# {}\n\n", h[0]);
    for l in &h[1..] {
        s.push_str(&format!("{l}\n\n"));
    }
    for t in sections(a) {
        s.push_str(&format!("## {}\n\n", t.title));
        let row = |r: &Vec<String>| {
            format!(
                "| {} |\n",
                r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ")
            )
        };
        s.push_str(&row(&t.header));
        s.push_str(&format!("|{}\n", "---|".repeat(t.header.len())));
        for r in &t.rows {
            s.push_str(&row(r));
        }
        s.push('\n');
        for n in &t.notes {
            s.push_str(&format!("- {}\n", md_cell(n)));
        }
        if !t.notes.is_empty() {
            s.push('\n');
        }
    }
    s
}

pub fn json(a: &Analysis) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(a)?)
}
