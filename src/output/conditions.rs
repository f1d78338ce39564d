//! The conditions a run met, each said once: a machine-level condition (a noisy machine, free
//! page reporting) once with the benchmarks it touches; a per-run condition once per benchmark,
//! the numbers that differed from run to run given as a range ("70–473 of 1000"); the noisy
//! figures counted in one line. The record keeps every warning as it was raised; this is how a
//! terminal shows them (brief, or in full with `--verbose`).

use crate::record::RunRecord;

use super::display_text;

/// What the runner appends to a figure whose runs varied more than 10 %.
pub const CV_MARK: &str = "run-to-run CV ";

/// One condition as printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The run's own (machine state, build, run count), not raised by one benchmark.
    pub run_level: bool,
    /// The text, numbers that differed between the warnings folded into it given as ranges.
    pub text: String,
    /// The benchmarks it touches, each with the metrics or figures it names ("the buffered
    /// figures", "setup_p99_us"), in record order.
    pub benchmarks: Vec<(String, Vec<String>)>,
    /// How many warnings of the record it stands for.
    pub count: usize,
}

impl Condition {
    /// "fs/seq_write_t1, fs/seq_read_t1 (the buffered figures); fs/stream_write (every figure)":
    /// benchmarks that name the same figures together; at most `max` benchmarks named, then
    /// "and N more".
    pub fn touched(&self, max: usize) -> String {
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for (id, what) in self.benchmarks.iter().take(max) {
            let q = what.join(", ");
            match groups.iter_mut().find(|(g, _)| *g == q) {
                Some((_, ids)) => ids.push(id),
                None => groups.push((q, vec![id])),
            }
        }
        let mut s = groups
            .iter()
            .map(|(q, ids)| {
                if q.is_empty() {
                    ids.join(", ")
                } else {
                    format!("{} ({q})", ids.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let more = self.benchmarks.len().saturating_sub(max);
        if more > 0 {
            s.push_str(&format!(" and {more} more"));
        }
        s
    }

    /// The line in full: "ids: text (N times)" for a benchmark's condition; a run-level one
    /// names the benchmarks it touches after it.
    pub fn full(&self) -> String {
        let times = if self.count > 1 && !self.run_level {
            format!(" ({} times)", self.count)
        } else {
            String::new()
        };
        if self.run_level {
            if self.benchmarks.is_empty() {
                self.text.clone()
            } else {
                format!("{} — touches {}", self.text, self.touched(usize::MAX))
            }
        } else {
            format!("{}: {}{times}", self.touched(usize::MAX), self.text)
        }
    }

    /// The line in brief: the text cut at a clause boundary near `max` characters, at most
    /// four benchmarks named.
    pub fn brief(&self, max: usize) -> String {
        let times = if self.count > 1 && !self.run_level {
            format!(" ({} times)", self.count)
        } else {
            String::new()
        };
        let text = brief_text(&self.text, max);
        if self.run_level {
            if self.benchmarks.is_empty() {
                text
            } else {
                format!("{text} — touches {}", self.touched(4))
            }
        } else {
            format!("{}: {text}{times}", self.touched(4))
        }
    }
}

/// `s` cut to at most about `max` characters at the last clause boundary (": ", " — ", "; ",
/// ", ", " (") before it, " …" appended; whole when short enough.
pub fn brief_text(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: usize = s.char_indices().nth(max).map_or(s.len(), |(i, _)| i);
    let head = &s[..cut];
    let at = [": ", " — ", "; ", ", ", " ("]
        .iter()
        .filter_map(|sep| head.rfind(sep))
        .filter(|&i| i >= max / 3)
        .max()
        .or_else(|| head.rfind(' '))
        .unwrap_or(cut);
    format!("{} …", s[..at].trim_end_matches([',', ';', ':']))
}

/// A text split into its numbers and what lies between them: "at most 70 of 1000" →
/// (["at most ", " of ", ""], ["70", "1000"]).
fn split_numbers(s: &str) -> (Vec<String>, Vec<String>) {
    let mut words = vec![String::new()];
    let mut numbers: Vec<String> = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        if cs[i].is_ascii_digit() {
            let mut n = String::new();
            while i < cs.len()
                && (cs[i].is_ascii_digit()
                    || (cs[i] == '.' && cs.get(i + 1).is_some_and(|c| c.is_ascii_digit())))
            {
                n.push(cs[i]);
                i += 1;
            }
            numbers.push(n);
            words.push(String::new());
        } else {
            words.last_mut().expect("one").push(cs[i]);
            i += 1;
        }
    }
    (words, numbers)
}

/// Texts of one shape (they differ only in their numbers) as one: each number that differed
/// given as its range, "70–473".
pub fn merge_numbers(texts: &[&str]) -> String {
    let Some(first) = texts.first() else {
        return String::new();
    };
    let (words, numbers) = split_numbers(first);
    let mut lo: Vec<(f64, String)> = numbers
        .iter()
        .map(|n| (n.parse().unwrap_or(0.0), n.clone()))
        .collect();
    let mut hi = lo.clone();
    for t in &texts[1..] {
        let (w, ns) = split_numbers(t);
        if w != words || ns.len() != lo.len() {
            continue;
        }
        for (k, n) in ns.into_iter().enumerate() {
            let v: f64 = n.parse().unwrap_or(0.0);
            if v < lo[k].0 {
                lo[k] = (v, n.clone());
            }
            if v > hi[k].0 {
                hi[k] = (v, n);
            }
        }
    }
    let mut out = String::new();
    for (k, w) in words.iter().enumerate() {
        out.push_str(w);
        if k < lo.len() {
            if lo[k].1 == hi[k].1 {
                out.push_str(&lo[k].1);
            } else {
                out.push_str(&format!("{}–{}", lo[k].1, hi[k].1));
            }
        }
    }
    out
}

fn shape(s: &str) -> Vec<String> {
    split_numbers(s).0
}

/// The part of a run-level warning after its topic ("load: noisy machine: …" → "noisy machine:
/// …"): what a benchmark's warning repeats when it meets the same condition.
fn body(w: &str) -> &str {
    match w.split_once(": ") {
        Some((topic, rest)) if !topic.contains(' ') => rest,
        _ => w,
    }
}

/// A benchmark's warning without a doubled id ("fs/x: fs/x: …" of records made before the
/// benchmark stopped naming itself), split into the metric or figures it names and the rest.
fn split_warning<'a>(b: &crate::record::BenchmarkResult, w: &'a str) -> (Option<&'a str>, &'a str) {
    let w = w
        .strip_prefix(b.id.as_str())
        .and_then(|r| r.strip_prefix(": "))
        .unwrap_or(w);
    match w.split_once(": ") {
        Some((head, rest)) if b.metrics.iter().any(|m| m.name == head) => (Some(head), rest),
        _ => (None, w),
    }
}

/// The record's warnings as conditions, each once: the run's own first (with the benchmarks
/// whose warnings repeat them), then the benchmarks' in record order; noisy-CV warnings are
/// left to [`noisy`].
pub fn conditions(record: &RunRecord) -> Vec<Condition> {
    let mut out: Vec<Condition> = record
        .warnings
        .iter()
        .map(|w| Condition {
            run_level: true,
            text: w.clone(),
            benchmarks: Vec::new(),
            count: 1,
        })
        .collect();
    let run_level = out.len();
    // Per shape of a benchmark's condition: its texts and where it was raised.
    let mut texts: Vec<Vec<String>> = Vec::new();
    for b in &record.benchmarks {
        for w in &b.warnings {
            let (metric, rest) = split_warning(b, w);
            if rest.starts_with(CV_MARK) {
                continue;
            }
            // A machine-level condition the run already states: name the benchmark under it,
            // with what the benchmark says it moves ("the buffered figures").
            let of_run = out[..run_level].iter().position(|c| {
                let m = body(&c.text);
                m.chars().count() >= 40 && rest.contains(m)
            });
            let (k, what) = match of_run {
                Some(k) => {
                    let m = body(&out[k].text);
                    let what = rest[..rest.find(m).unwrap_or(0)]
                        .trim_end()
                        .trim_end_matches(':')
                        .to_string();
                    (k, what)
                }
                None => {
                    let key = shape(rest);
                    let k = match out[run_level..].iter().position(|c| shape(&c.text) == key) {
                        Some(i) => run_level + i,
                        None => {
                            out.push(Condition {
                                run_level: false,
                                text: rest.to_string(),
                                benchmarks: Vec::new(),
                                count: 0,
                            });
                            texts.push(Vec::new());
                            out.len() - 1
                        }
                    };
                    texts[k - run_level].push(rest.to_string());
                    (k, metric.unwrap_or("").to_string())
                }
            };
            let c = &mut out[k];
            c.count += 1;
            let id = display_text(&b.id, usize::MAX);
            match c.benchmarks.iter_mut().find(|(i, _)| *i == id) {
                Some((_, v)) => {
                    if !what.is_empty() && !v.contains(&what) {
                        v.push(what);
                    }
                }
                None => c
                    .benchmarks
                    .push((id, if what.is_empty() { vec![] } else { vec![what] })),
            }
        }
    }
    for (c, t) in out[run_level..].iter_mut().zip(&texts) {
        let refs: Vec<&str> = t.iter().map(String::as_str).collect();
        c.text = merge_numbers(&refs);
    }
    for c in &mut out {
        c.text = display_text(&c.text, usize::MAX);
    }
    out
}

/// The figures whose runs varied more than 10 %: per benchmark its metrics and their CV text
/// ("copy 15 %").
pub fn noisy(record: &RunRecord) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for b in &record.benchmarks {
        let cv: Vec<String> = b
            .warnings
            .iter()
            .filter_map(|w| {
                let (metric, rest) = split_warning(b, w);
                let pct = rest.strip_prefix(CV_MARK)?.split(" —").next()?;
                Some(format!("{} {pct}", metric.unwrap_or("")).trim().to_string())
            })
            .collect();
        if !cv.is_empty() {
            out.push((display_text(&b.id, usize::MAX), cv));
        }
    }
    out
}

/// Whether the metric `metric` of benchmark `id` was flagged as noisy.
pub fn is_noisy(record: &RunRecord, id: &str, metric: &str) -> bool {
    record
        .benchmarks
        .iter()
        .filter(|b| b.id == id)
        .flat_map(|b| b.warnings.iter().map(move |w| split_warning(b, w)))
        .any(|(m, rest)| m == Some(metric) && rest.starts_with(CV_MARK))
}

/// `text` wrapped at `width` columns, the lines after the first indented by `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let room = if lines.is_empty() {
            width
        } else {
            width.saturating_sub(super::width(indent))
        };
        if !line.is_empty() && super::width(&line) + 1 + super::width(word) > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| if i == 0 { l } else { format!("{indent}{l}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunRecord {
        let mut r: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        r.warnings.clear();
        for b in &mut r.benchmarks {
            b.warnings.clear();
        }
        r
    }

    #[test]
    fn numbers_that_differ_become_ranges() {
        let t = [
            "at most 473 connections per run instead of 1000: a quarter of the 28232 ports",
            "at most 70 connections per run instead of 1000: a quarter of the 28232 ports",
            "at most 210 connections per run instead of 1000: a quarter of the 28232 ports",
        ];
        assert_eq!(
            merge_numbers(&t),
            "at most 70–473 connections per run instead of 1000: a quarter of the 28232 ports"
        );
        assert_eq!(
            merge_numbers(&["5.6 % after 3 rounds"]),
            "5.6 % after 3 rounds"
        );
        assert_eq!(
            merge_numbers(&["spread 5.6 %.", "spread 12.25 %."]),
            "spread 5.6–12.25 %."
        );
    }

    /// A condition many benchmarks meet — the machine's free page reporting, said by each
    /// file benchmark with its own id doubled in front — is one line naming them; a per-run
    /// condition raised in every run is one line per benchmark with its range.
    #[test]
    fn a_condition_met_by_many_benchmarks_is_said_once() {
        let effect = crate::system::FREE_PAGE_REPORTING_EFFECT;
        let mut r = fixture();
        r.warnings = vec![
            "load: noisy machine: load average 1.59; other work competes".into(),
            format!("free_page_reporting: {effect}"),
        ];
        let ids: Vec<String> = r.benchmarks.iter().map(|b| b.id.clone()).collect();
        assert!(ids.len() >= 3);
        for b in &mut r.benchmarks {
            // As fs/bandwidth wrote it: the id doubled.
            b.warnings
                .push(format!("{}: the buffered figures: {effect}", b.id));
        }
        for (k, n) in [473, 70, 210].into_iter().enumerate() {
            r.benchmarks[0].warnings.push(format!(
                "at most {n} connections per run instead of 1000: sockets in TIME_WAIT held ports (run {})",
                k + 1
            ));
        }
        let m = r.benchmarks[1].metrics[0].name.clone();
        r.benchmarks[1]
            .warnings
            .push(format!("{m}: run-to-run CV 15 % — noisy; repeat"));
        let c = conditions(&r);
        // Two of the run, one per-run condition; the noisy figure is left to `noisy`.
        assert_eq!(c.len(), 3, "{c:#?}");
        let fpr = &c[1];
        assert!(fpr.run_level);
        assert_eq!(fpr.benchmarks.len(), ids.len());
        assert_eq!(fpr.count, 1 + ids.len());
        assert_eq!(
            fpr.benchmarks[0],
            (ids[0].clone(), vec!["the buffered figures".to_string()])
        );
        let lines: Vec<String> = c.iter().map(Condition::full).collect();
        let all = lines.join("\n");
        assert_eq!(all.matches("returns free memory").count(), 1, "{all}");
        assert!(!all.contains(&format!("{0}: {0}", ids[0])), "{all}");
        assert_eq!(
            lines[2],
            format!(
                "{}: at most 70–473 connections per run instead of 1000: sockets in TIME_WAIT \
                 held ports (run 1–3) (3 times)",
                ids[0]
            )
        );
        // In brief every line fits three 80-column lines; the benchmarks that name the same
        // figures are listed together.
        for x in &c {
            let b = x.brief(110);
            assert!(wrap(&b, 78, "    ").len() <= 3, "{b}");
        }
        assert!(
            fpr.full().ends_with(&format!(
                "touches {} (the buffered figures)",
                ids.join(", ")
            )),
            "{}",
            fpr.full()
        );
        assert_eq!(noisy(&r), vec![(ids[1].clone(), vec![format!("{m} 15 %")])]);
        assert!(is_noisy(&r, &ids[1], &m));
        assert!(!is_noisy(&r, &ids[0], &m));
    }

    #[test]
    fn brief_text_cuts_at_a_clause() {
        let s = "this VM returns free memory to its host (virtio-balloon free page reporting): \
                 memory freed more than a few seconds earlier is faulted in again";
        let b = brief_text(s, 100);
        assert_eq!(
            b,
            "this VM returns free memory to its host (virtio-balloon free page reporting) …"
        );
        assert_eq!(brief_text("short", 100), "short");
        let w = wrap(&"word ".repeat(40), 30, "    ");
        assert!(w.iter().all(|l| l.chars().count() <= 30), "{w:#?}");
        assert!(w[1].starts_with("    word"));
    }
}
