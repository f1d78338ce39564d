//! The fleet view: runs of many machines side by side, and one metric's history on a machine.
//!
//! Pure: everything here works on run rows and records handed in (read from any store by the
//! CLI), with "now" passed in; no I/O, no clock.
//!
//! * [`RunFilter`]: which stored runs a command looks at (machine, label, time, status); shared
//!   by `results list` and `fleet`.
//! * [`latest_per_machine_label`]: the fleet's default selection — of the runs the filter keeps,
//!   the newest of each (machine, label) pair.
//! * [`build`]: one table per suite, a row per benchmark metric, a column per selected run (or
//!   per group with [`GroupBy`]), the best median of each row marked by the metric's direction.
//! * [`history`]: one metric over time, per machine, with change points by E-Divisive means
//!   ([`changepoint`]) and the `compare` verdict between the runs on either side.
//!
//! A machine is its recorded machine id, else its hostname ([`identity`]); it is shown by the
//! hostname of its newest run (a record without one is "(no hostname)"). Runs are in time order,
//! or in the natural order of a tag's values ([`Order`]).

pub mod changepoint;
pub mod check;
pub mod identity;
pub mod render;

pub use identity::{MachineInfo, Machines};

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::Serialize;

use crate::compare::{self, Verdict};
use crate::record::{BoundKind, MetricResult, RunRecord};
use crate::stats;
use crate::store::RunRow;
use crate::units::{Better, Unit};

/// Schema of the fleet table as `fleet --export-json` writes it.
pub const FLEET_SCHEMA: &str = "osgauge.fleet/1";
/// Schema of a history as `fleet history --export-json` writes it.
pub const HISTORY_SCHEMA: &str = "osgauge.history/1";

/// The name a run's machine goes by: its hostname.
pub fn machine_name(hostname: Option<&str>) -> String {
    match hostname {
        Some(h) if !h.is_empty() => h.to_string(),
        _ => "(no hostname)".into(),
    }
}

/// Which runs to look at: every given condition must hold; a list matches when any of its
/// entries does (an empty list matches everything).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// Machines: a hostname, a shown name or a machine id prefix ([`MachineInfo::is_named`]).
    pub machines: Vec<String>,
    pub labels: Vec<String>,
    /// Started at or after.
    pub since: Option<DateTime<Utc>>,
    /// Started before.
    pub until: Option<DateTime<Utc>>,
    pub status: Option<Status>,
    /// Tags every run must carry with these values (`--where KEY=VALUE`).
    pub tags: Vec<(String, String)>,
    /// A tag every run must carry, whatever its value (ordering by it: `--order-by tag:KEY`).
    pub has_tag: Option<String>,
}

/// A run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every planned benchmark finished.
    Complete,
    /// Interrupted (or still running).
    Incomplete,
}

impl Status {
    pub fn parse(s: &str) -> Result<Status, String> {
        match s {
            "complete" => Ok(Status::Complete),
            "incomplete" => Ok(Status::Incomplete),
            _ => Err(format!(
                "'{s}' is not a run status (complete or incomplete)"
            )),
        }
    }
}

impl RunFilter {
    /// Whether `row` matches, its machine known by `row` alone (see [`RunFilter::apply`]).
    pub fn matches(&self, row: &RunRow) -> bool {
        self.matches_in(row, &Machines::of_rows(std::slice::from_ref(row)))
    }

    /// Whether `row` matches, its machine as `machines` knows it.
    pub fn matches_in(&self, row: &RunRow, machines: &Machines) -> bool {
        if !self.machines.is_empty() {
            let named = match machines.of(&row.run_id) {
                Some(m) => self.machines.iter().any(|w| m.is_named(w)),
                None => self
                    .machines
                    .contains(&machine_name(row.hostname.as_deref())),
            };
            if !named {
                return false;
            }
        }
        if !self
            .tags
            .iter()
            .all(|(k, v)| row.tags.get(k).is_some_and(|x| x == v))
        {
            return false;
        }
        if let Some(k) = &self.has_tag
            && !row.tags.contains_key(k)
        {
            return false;
        }
        if !self.labels.is_empty() && !row.label.as_ref().is_some_and(|l| self.labels.contains(l)) {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let Ok(t) = DateTime::parse_from_rfc3339(&row.started) else {
                return false;
            };
            let t = t.with_timezone(&Utc);
            if self.since.is_some_and(|s| t < s) || self.until.is_some_and(|u| t >= u) {
                return false;
            }
        }
        match self.status {
            Some(Status::Complete) => row.complete,
            Some(Status::Incomplete) => !row.complete,
            None => true,
        }
    }

    /// The filter in words ("every run" when it has no condition).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.machines.is_empty() {
            parts.push(format!("machine {}", self.machines.join(" or ")));
        }
        if !self.labels.is_empty() {
            parts.push(format!("label {}", self.labels.join(" or ")));
        }
        for (k, v) in &self.tags {
            parts.push(format!("tag {k}={v}"));
        }
        if let Some(k) = &self.has_tag {
            parts.push(format!("with tag {k}"));
        }
        if let Some(t) = self.since {
            parts.push(format!(
                "started at or after {}",
                t.format("%Y-%m-%d %H:%M:%S UTC")
            ));
        }
        if let Some(t) = self.until {
            parts.push(format!(
                "started before {}",
                t.format("%Y-%m-%d %H:%M:%S UTC")
            ));
        }
        match self.status {
            Some(Status::Complete) => parts.push("complete".into()),
            Some(Status::Incomplete) => parts.push("incomplete".into()),
            None => {}
        }
        if parts.is_empty() {
            "every run".into()
        } else {
            parts.join(", ")
        }
    }

    /// The rows that match, in their order; each run's machine as all of `rows` make it known
    /// (a renamed host is one machine under any of its names).
    pub fn apply<'a>(&self, rows: &'a [RunRow]) -> Vec<&'a RunRow> {
        let machines = Machines::of_rows(rows);
        rows.iter()
            .filter(|r| self.matches_in(r, &machines))
            .collect()
    }
}

/// Longest tag key and value, in characters.
pub const TAG_KEY_MAX: usize = 64;
pub const TAG_VALUE_MAX: usize = 200;

/// `KEY=VALUE` as `--tag` and `--where` take it: a key of 1 to 64 letters, digits and `_.-`,
/// a value of at most 200 characters without control characters (may be empty).
pub fn parse_tag(s: &str) -> Result<(String, String), String> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(format!(
            "'{}' is not KEY=VALUE (e.g. kernel_rev=6.18-rc3-12-gabc123)",
            crate::output::display_text(s, 60)
        ));
    };
    if k.is_empty()
        || k.chars().count() > TAG_KEY_MAX
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        return Err(format!(
            "tag key '{}' must be 1 to {TAG_KEY_MAX} letters, digits, '_', '.' or '-'",
            crate::output::display_text(k, 60)
        ));
    }
    if let Some(c) = v.chars().find(|&c| c.is_control()) {
        return Err(format!(
            "the value of tag '{k}' must not contain control characters (found {})",
            c.escape_unicode()
        ));
    }
    let n = v.chars().count();
    if n > TAG_VALUE_MAX {
        return Err(format!(
            "the value of tag '{k}' has at most {TAG_VALUE_MAX} characters (this one has {n})"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Tags from repeated `--tag KEY=VALUE`: each parsed, a key given twice refused.
pub fn parse_tags(args: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for a in args {
        let (k, v) = parse_tag(a)?;
        if out.contains_key(&k) {
            return Err(format!("tag '{k}' is given twice"));
        }
        out.insert(k, v);
    }
    Ok(out)
}

/// A point in time for `--since`/`--until`: an age back from `now` (`30d`, `12h`, `2w`, `90m`,
/// `45s`), a date (`2026-11-01`, midnight UTC) or an RFC 3339 time (`2026-11-01T12:00:00Z`).
pub fn parse_time(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let t = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(d.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight").and_utc());
    }
    let split = t
        .find(|c: char| !c.is_ascii_digit())
        .filter(|&i| i > 0)
        .ok_or_else(|| time_error(s))?;
    let n: i64 = t[..split].parse().map_err(|_| time_error(s))?;
    let age = match &t[split..] {
        "s" => Duration::try_seconds(n),
        "m" | "min" => Duration::try_minutes(n),
        "h" => Duration::try_hours(n),
        "d" => Duration::try_days(n),
        "w" => Duration::try_weeks(n),
        _ => None,
    }
    .ok_or_else(|| time_error(s))?;
    now.checked_sub_signed(age).ok_or_else(|| time_error(s))
}

fn time_error(s: &str) -> String {
    format!(
        "'{s}' is not a time: give an age (30d, 12h, 2w, 90m, 45s), a date (2026-11-01) or an RFC 3339 time (2026-11-01T12:00:00Z)"
    )
}

/// The order runs are put in: by start time, or by the value of a tag (natural order: numbers
/// inside the values compare as numbers, so build 99 < build 100 and 6.9 < 6.18; ties by start
/// time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Order {
    #[default]
    Started,
    Tag(String),
}

impl Order {
    /// `started`, `tag:KEY`, or a tag key alone.
    pub fn parse(s: &str) -> Result<Order, String> {
        let s = s.trim();
        if s == "started" {
            return Ok(Order::Started);
        }
        let key = s.strip_prefix("tag:").unwrap_or(s);
        parse_tag(&format!("{key}="))
            .map(|(k, _)| Order::Tag(k))
            .map_err(|_| {
                format!(
                    "'{}' is not an order: give `started` or a tag key (tag:KEY)",
                    crate::output::display_text(s, 60)
                )
            })
    }

    /// How the order is written (`started`, `tag:KEY`).
    pub fn as_text(&self) -> String {
        match self {
            Order::Started => "started".into(),
            Order::Tag(k) => format!("tag:{k}"),
        }
    }

    /// Compare two runs by (tags, start time, run id).
    pub fn cmp(
        &self,
        a: (&BTreeMap<String, String>, &str, &str),
        b: (&BTreeMap<String, String>, &str, &str),
    ) -> std::cmp::Ordering {
        let by_tag = match self {
            Order::Started => std::cmp::Ordering::Equal,
            Order::Tag(k) => match (a.0.get(k), b.0.get(k)) {
                (Some(x), Some(y)) => natural_cmp(x, y),
                (x, y) => x.is_some().cmp(&y.is_some()),
            },
        };
        by_tag.then_with(|| (a.1, a.2).cmp(&(b.1, b.2)))
    }

    fn rows(&self, a: &RunRow, b: &RunRow) -> std::cmp::Ordering {
        self.cmp(
            (&a.tags, &a.started, &a.run_id),
            (&b.tags, &b.started, &b.run_id),
        )
    }

    fn records(&self, a: &RunRecord, b: &RunRecord) -> std::cmp::Ordering {
        let (sa, sb) = (a.started.to_rfc3339(), b.started.to_rfc3339());
        let (ia, ib) = (a.run_id.to_string(), b.run_id.to_string());
        self.cmp((&a.tags, &sa, &ia), (&b.tags, &sb, &ib))
    }
}

/// Natural order of two texts: runs of digits compare as numbers, the rest as text.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut digit = None;
        for (i, c) in s.char_indices() {
            let d = c.is_ascii_digit();
            if digit.is_some_and(|x| x != d) {
                out.push((digit.unwrap(), &s[start..i]));
                start = i;
            }
            digit = Some(d);
        }
        if let Some(d) = digit {
            out.push((d, &s[start..]));
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let o = match (x, y) {
            ((true, p), (true, q)) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            ((_, p), (_, q)) => p.cmp(q),
        };
        if o.is_ne() {
            return o;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

/// The fleet's default selection: of `rows` (already filtered), the last run in `order` of
/// each (machine, label) pair — the newest, by default —, ordered by machine then label.
pub fn latest_per_machine_label<'a>(
    rows: &[&'a RunRow],
    machines: &Machines,
    order: &Order,
) -> Vec<&'a RunRow> {
    let key = |r: &RunRow| (machines.index(&r.run_id), r.label.clone());
    let mut best: Vec<&RunRow> = Vec::new();
    for &r in rows {
        match best.iter_mut().find(|b| key(b) == key(r)) {
            Some(b) => {
                if order.rows(r, b).is_gt() {
                    *b = r;
                }
            }
            None => best.push(r),
        }
    }
    let name = |r: &RunRow| machines.name(&r.run_id, r.hostname.as_deref());
    best.sort_by(|a, b| (name(a), &a.label).cmp(&(name(b), &b.label)));
    best
}

/// How `--group-by` folds machines into columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// Operating system name and version (`os_name`, else `os`).
    Os,
    /// Kernel release.
    Kernel,
    /// Run label.
    Label,
}

impl GroupBy {
    pub fn parse(s: &str) -> Result<GroupBy, String> {
        match s {
            "os" => Ok(GroupBy::Os),
            "kernel" => Ok(GroupBy::Kernel),
            "label" => Ok(GroupBy::Label),
            _ => Err(format!("'{s}' cannot group machines (os, kernel or label)")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Os => "os",
            GroupBy::Kernel => "kernel",
            GroupBy::Label => "label",
        }
    }

    fn key(self, r: &RunRecord) -> String {
        match self {
            GroupBy::Os => os_text(r),
            GroupBy::Kernel => r
                .machine
                .kernel_release
                .clone()
                .unwrap_or_else(|| "—".into()),
            GroupBy::Label => r.label.clone().unwrap_or_else(|| "(no label)".into()),
        }
    }
}

fn os_text(r: &RunRecord) -> String {
    r.machine
        .os_name
        .clone()
        .unwrap_or_else(|| r.machine.os.clone())
}

/// One selected run: the machine it ran on and the attributes shown as header rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    /// The machine as shown ([`identity`]).
    pub machine: String,
    /// Its stable id, when recorded.
    pub machine_id: Option<String>,
    pub label: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub run_id: String,
    pub started: DateTime<Utc>,
    pub complete: bool,
    pub cpu: String,
    /// Logical CPUs (physical cores), as recorded.
    pub cores: String,
    pub os: String,
    pub kernel: String,
}

impl Member {
    /// `r` as a member, its machine shown as `machine`.
    pub fn of(r: &RunRecord, machine: String) -> Member {
        let c = &r.machine.cpu;
        let cores = match (c.logical_cpus, c.physical_cores) {
            (Some(l), Some(p)) if l != p => format!("{l} ({p} cores)"),
            (Some(l), _) => l.to_string(),
            (None, Some(p)) => format!("{p} cores"),
            (None, None) => "—".into(),
        };
        Member {
            machine,
            machine_id: r.machine.machine_id.clone(),
            label: r.label.clone(),
            tags: r.tags.clone(),
            run_id: r.run_id.to_string(),
            started: r.started,
            complete: r.complete,
            cpu: c.model_name.clone().unwrap_or_else(|| "—".into()),
            cores,
            os: os_text(r),
            kernel: r
                .machine
                .kernel_release
                .clone()
                .unwrap_or_else(|| "—".into()),
        }
    }
}

/// A column of the fleet table: one run, or a group of runs (`--group-by`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    pub title: String,
    /// The runs in this column (one without `--group-by`).
    pub members: Vec<Member>,
}

impl Column {
    /// The distinct values of one attribute over the members, joined.
    pub fn attribute(&self, f: impl Fn(&Member) -> &str) -> String {
        self.attribute_owned(|m| f(m).to_string())
    }

    /// [`Column::attribute`] of a value made from each member ("—" when every one is empty).
    pub fn attribute_owned(&self, f: impl Fn(&Member) -> String) -> String {
        let mut v: Vec<String> = Vec::new();
        for m in &self.members {
            let x = f(m);
            if !v.contains(&x) {
                v.push(x);
            }
        }
        if v.iter().all(String::is_empty) {
            return "—".into();
        }
        v.retain(|x| !x.is_empty());
        v.join(" · ")
    }
}

/// One figure of the fleet table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// A run: the median of its per-run medians. A group: the median of its members' medians.
    pub center: f64,
    /// A run: the 95 % bootstrap CI of its median, as recorded. A group: none (see `range`).
    pub ci95: Option<[f64; 2]>,
    /// A group: the smallest and largest member median.
    pub range: Option<[f64; 2]>,
    /// A run: its independent runs. A group: the machines (runs) with a figure.
    pub n: u64,
    /// The figure is a bound (≥/≤), not a measurement; never marked best.
    pub bound: Option<BoundKind>,
}

/// One benchmark metric across the columns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub metric: String,
    pub unit: Unit,
    pub better: Better,
    /// One per column; None with the reason in `notes`.
    pub cells: Vec<Option<Cell>>,
    /// Why a column has no figure ("" where it has one).
    pub notes: Vec<String>,
    /// The column with the best median by the metric's direction (None for a neutral metric,
    /// or fewer than two figures to choose between).
    pub best: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suite {
    pub suite: String,
    pub rows: Vec<Row>,
}

/// The fleet table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fleet {
    pub schema: String,
    /// How the runs were chosen, in words.
    pub selection: String,
    pub group_by: Option<GroupBy>,
    pub columns: Vec<Column>,
    pub suites: Vec<Suite>,
}

/// The rule [`latest_per_machine_label`] applies, as help and every output state it.
pub const SELECTION_RULE: &str = "of the runs matching the filters (complete runs only unless --status says otherwise), the newest run of each machine (machine id, else hostname) and label";

/// The selection as the fleet table states it: the rule and the filters applied.
pub fn selection_text(filter: &RunFilter, order: &Order) -> String {
    match order {
        Order::Started => format!("{SELECTION_RULE} (filters: {})", filter.describe()),
        Order::Tag(k) => format!(
            "{} (filters: {})",
            SELECTION_RULE.replace(
                "the newest run",
                &format!("the run with the highest tag {k}")
            ),
            filter.describe()
        ),
    }
}

fn cell_of(m: &MetricResult) -> Option<Cell> {
    let s = m.summary.as_ref()?;
    Some(Cell {
        center: s.center,
        ci95: Some(s.ci95),
        range: None,
        n: s.runs,
        bound: m.bound.as_ref().map(|b| b.kind),
    })
}

fn note_of(r: &RunRecord, bench: &str, metric: &str) -> String {
    let Some(b) = r.benchmark(bench) else {
        return "not in this run".into();
    };
    if let Some(m) = b.metrics.iter().find(|m| m.name == metric)
        && let Some(n) = &m.not_measured
    {
        return format!("not measured: {n}");
    }
    match &b.error {
        Some(e) => e.to_string(),
        None => "not measured".into(),
    }
}

/// The best of `cells` for `better`: the index of the lowest or highest center (bounds left out;
/// None for neutral metrics, with fewer than two figures, or when the best value is tied).
fn best_of(cells: &[Option<Cell>], better: Better) -> Option<usize> {
    let vals: Vec<(usize, f64)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            c.as_ref()
                .filter(|c| c.bound.is_none())
                .map(|c| (i, c.center))
        })
        .collect();
    if vals.len() < 2 {
        return None;
    }
    // The best only when no other figure equals it.
    let pick = |cmp: fn(f64, f64) -> bool| {
        let (i, v) = vals
            .iter()
            .copied()
            .reduce(|a, b| if cmp(b.1, a.1) { b } else { a })?;
        (vals.iter().filter(|(_, x)| *x == v).count() == 1).then_some(i)
    };
    match better {
        Better::Lower => pick(|x, y| x < y),
        Better::Higher => pick(|x, y| x > y),
        Better::Neutral => None,
    }
}

/// Build the fleet table of `runs` (each a selected run), grouped when `group_by` says so.
/// Columns follow the order of `runs` (groups: in order of first member).
pub fn build(
    runs: &[RunRecord],
    machines: &Machines,
    group_by: Option<GroupBy>,
    selection: &str,
) -> Fleet {
    let name_of =
        |r: &RunRecord| machines.name(&r.run_id.to_string(), r.machine.hostname.as_deref());
    let cols = columns_of(runs, group_by, &name_of);
    // Rows: suites, benchmarks and metrics in order of first appearance.
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in runs {
        for b in &r.benchmarks {
            for m in &b.metrics {
                let k = (b.suite.clone(), b.id.clone(), m.name.clone());
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    let mut suites: Vec<Suite> = Vec::new();
    for (suite, bench, metric) in keys {
        let row = row_of(runs, &cols, group_by, bench, metric);
        match suites.iter_mut().find(|s| s.suite == suite) {
            Some(s) => s.rows.push(row),
            None => suites.push(Suite {
                suite,
                rows: vec![row],
            }),
        }
    }
    Fleet {
        schema: FLEET_SCHEMA.into(),
        selection: selection.into(),
        group_by,
        columns: cols
            .into_iter()
            .map(|(title, idx)| Column {
                title,
                members: idx
                    .iter()
                    .map(|&i| Member::of(&runs[i], name_of(&runs[i])))
                    .collect(),
            })
            .collect(),
        suites,
    }
}

/// The fleet table's columns: each a title and the indices in `runs` of its runs. Ungrouped, one
/// per run, titled by its machine (`name_of`) and, when the runs have several labels, its label;
/// grouped, one per value of `group_by`, in order of first member. A title shown twice gets the
/// short id of its first run.
fn columns_of(
    runs: &[RunRecord],
    group_by: Option<GroupBy>,
    name_of: &dyn Fn(&RunRecord) -> String,
) -> Vec<(String, Vec<usize>)> {
    let mut cols: Vec<(String, Vec<usize>)> = Vec::new();
    let labels: Vec<&Option<String>> = {
        let mut v: Vec<&Option<String>> = Vec::new();
        for r in runs {
            if !v.contains(&&r.label) {
                v.push(&r.label);
            }
        }
        v
    };
    for (i, r) in runs.iter().enumerate() {
        let title = match group_by {
            Some(g) => format!("{} {}", g.as_str(), g.key(r)),
            None => {
                let m = name_of(r);
                match (&r.label, labels.len() > 1) {
                    (Some(l), true) => format!("{m} · {l}"),
                    _ => m,
                }
            }
        };
        match cols
            .iter_mut()
            .find(|(t, _)| *t == title && group_by.is_some())
        {
            Some((_, v)) => v.push(i),
            None => cols.push((title, vec![i])),
        }
    }
    // Make titles unique (the same machine and label twice when the caller chose so).
    for i in 0..cols.len() {
        if cols[..i].iter().any(|(t, _)| *t == cols[i].0) {
            let id = runs[cols[i].1[0]].run_id.to_string();
            cols[i].0 = format!("{} ({})", cols[i].0, crate::store::short_id(&id));
        }
    }
    cols
}

/// The row of `bench`/`metric`: per column its figure (a group's: [`group_cell`] of its members'),
/// or why it has none; its direction (neutral when any run says so) and best column.
fn row_of(
    runs: &[RunRecord],
    cols: &[(String, Vec<usize>)],
    group_by: Option<GroupBy>,
    bench: String,
    metric: String,
) -> Row {
    let found: Vec<Option<&MetricResult>> = runs
        .iter()
        .map(|r| {
            r.benchmark(&bench)
                .and_then(|b| b.metrics.iter().find(|m| m.name == metric))
        })
        .collect();
    let first = found.iter().flatten().next().expect("key from some run");
    let better = if found.iter().flatten().any(|m| m.better == Better::Neutral) {
        Better::Neutral
    } else {
        first.better
    };
    let mut cells = Vec::new();
    let mut notes = Vec::new();
    for (_, idx) in cols {
        let member_cells: Vec<Cell> = idx
            .iter()
            .filter_map(|&i| found[i].and_then(cell_of))
            .collect();
        let cell = match (group_by, member_cells.len()) {
            (_, 0) => None,
            (None, _) => member_cells.into_iter().next(),
            (Some(_), _) => Some(group_cell(&member_cells)),
        };
        notes.push(match &cell {
            Some(_) => String::new(),
            // Why the column's first run has no figure.
            None => idx
                .first()
                .map(|&i| note_of(&runs[i], &bench, &metric))
                .unwrap_or_default(),
        });
        cells.push(cell);
    }
    Row {
        best: best_of(&cells, better),
        benchmark: bench,
        metric,
        unit: first.unit,
        better,
        cells,
        notes,
    }
}

/// A group's figure from its members' (at least one): the median of their medians, their
/// range, how many, and the first bound among them; no CI.
fn group_cell(members: &[Cell]) -> Cell {
    let centers: Vec<f64> = members.iter().map(|c| c.center).collect();
    let lo = centers.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = centers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Cell {
        center: stats::median(&centers),
        ci95: None,
        range: Some([lo, hi]),
        n: centers.len() as u64,
        bound: members.iter().find_map(|c| c.bound),
    }
}

/// `bench/metric` as the user writes it: the metric is the last path part when the benchmark
/// has one of that name, else the benchmark's first metric. Resolved against `records`:
/// (benchmark id, metric name).
pub fn resolve_metric(spec: &str, records: &[RunRecord]) -> Result<(String, String), String> {
    let find = |bench: &str, metric: Option<&str>| {
        records.iter().find_map(|r| {
            let b = r.benchmark(bench)?;
            match metric {
                Some(m) => b
                    .metrics
                    .iter()
                    .find(|x| x.name == m)
                    .map(|x| x.name.clone()),
                None => b.metrics.first().map(|x| x.name.clone()),
            }
        })
    };
    if let Some((bench, metric)) = spec.rsplit_once('/')
        && let Some(m) = find(bench, Some(metric))
    {
        return Ok((bench.to_string(), m));
    }
    if let Some(m) = find(spec, None) {
        return Ok((spec.to_string(), m));
    }
    Err(format!(
        "no selected run has '{spec}' (give a benchmark id such as cpu/null_syscall, or benchmark/metric)"
    ))
}

/// One run's figure in a history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub run_id: String,
    pub label: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub started: DateTime<Utc>,
    pub complete: bool,
    pub center: f64,
    pub ci95: [f64; 2],
    pub runs: u64,
    pub bound: Option<BoundKind>,
}

/// A change point of a history, with the runs on either side and `compare`'s verdict between
/// them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Index in `points` of the first run after the change.
    pub index: usize,
    /// E-Divisive's permutation p-value for the split.
    pub p: f64,
    /// The last run before and the first run after the change.
    pub before: String,
    pub after: String,
    /// Median of the segment after / median of the segment before.
    pub segment_ratio: f64,
    /// `osgauge compare BEFORE AFTER` on this metric: verdict, and the ratio with its CI where
    /// the change is judged by ratio.
    pub verdict: Verdict,
    pub ratio: Option<f64>,
    pub ratio_ci95: Option<[f64; 2]>,
    /// Benjamini-Hochberg adjusted p of that comparison (over every metric the two runs share).
    pub q: Option<f64>,
}

/// One machine's series of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The machine as shown ([`identity`]).
    pub machine: String,
    /// Its stable id, when recorded.
    pub machine_id: Option<String>,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    /// Why there is no (further) change point: too few runs, a step too recent to test, or the
    /// likeliest split and its p ([`changepoint::why_no_more`]).
    pub no_more_changes: String,
    /// Runs of this machine that had no figure for the metric (left out of the series).
    pub skipped: usize,
}

/// The history of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    pub schema: String,
    pub benchmark: String,
    pub metric: String,
    pub unit: Unit,
    pub better: Better,
    pub method: changepoint::Options,
    /// The order of each series: `started` or `tag:KEY`.
    pub order: String,
    pub series: Vec<Series>,
}

/// The runs of `records` per machine (as `machines` knows them), each machine's in `order`,
/// machines by shown name: (machine, its runs).
pub fn per_machine<'a>(
    records: &'a [RunRecord],
    machines: &Machines,
    order: &Order,
) -> Vec<(MachineInfo, Vec<&'a RunRecord>)> {
    let mut by_machine: Vec<(MachineInfo, Vec<&RunRecord>)> = Vec::new();
    for r in records {
        let id = r.run_id.to_string();
        let m = machines.of(&id).cloned().unwrap_or_else(|| MachineInfo {
            id: r.machine.machine_id.clone(),
            name: machine_name(r.machine.hostname.as_deref()),
            hostnames: vec![machine_name(r.machine.hostname.as_deref())],
        });
        match by_machine.iter_mut().find(|(x, _)| *x == m) {
            Some((_, v)) => v.push(r),
            None => by_machine.push((m, vec![r])),
        }
    }
    by_machine.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    for (_, v) in &mut by_machine {
        v.sort_by(|a, b| order.records(a, b));
    }
    by_machine
}

/// The history of `bench`/`metric` over `records` (any machines; one series per machine, as
/// `machines` knows them, runs in `order`), with change points by E-Divisive means over each
/// series' medians.
pub fn history(
    records: &[RunRecord],
    bench: &str,
    metric: &str,
    opts: changepoint::Options,
    machines: &Machines,
    order: &Order,
) -> History {
    let mut unit = Unit::Count;
    let mut better = Better::Lower;
    let mut series = Vec::new();
    for (machine, recs) in per_machine(records, machines, order) {
        let found = points_of(recs, bench, metric);
        if let Some((u, b)) = found.direction {
            unit = u;
            better = b;
        }
        series.push(series_of(machine, found, bench, metric, opts));
    }
    History {
        schema: HISTORY_SCHEMA.into(),
        benchmark: bench.into(),
        metric: metric.into(),
        unit,
        better,
        method: opts,
        order: order.as_text(),
        series,
    }
}

/// One machine's runs that have a figure of the metric, as [`points_of`] finds them.
struct MachinePoints<'a> {
    points: Vec<Point>,
    /// The run of each point.
    used: Vec<&'a RunRecord>,
    /// Runs without a figure.
    skipped: usize,
    /// Unit and direction of the last figure found.
    direction: Option<(Unit, Better)>,
}

/// The point of each of `recs` (in their order) that has a summary of `bench`/`metric`; the
/// others counted as skipped.
fn points_of<'a>(recs: Vec<&'a RunRecord>, bench: &str, metric: &str) -> MachinePoints<'a> {
    let mut found = MachinePoints {
        points: Vec::new(),
        used: Vec::new(),
        skipped: 0,
        direction: None,
    };
    for r in recs {
        let m = r
            .benchmark(bench)
            .and_then(|b| b.metrics.iter().find(|m| m.name == metric));
        match m.and_then(|m| m.summary.as_ref().map(|s| (m, s))) {
            Some((m, s)) => {
                found.direction = Some((m.unit, m.better));
                found.points.push(Point {
                    run_id: r.run_id.to_string(),
                    label: r.label.clone(),
                    tags: r.tags.clone(),
                    started: r.started,
                    complete: r.complete,
                    center: s.center,
                    ci95: s.ci95,
                    runs: s.runs,
                    bound: m.bound.as_ref().map(|b| b.kind),
                });
                found.used.push(r);
            }
            None => found.skipped += 1,
        }
    }
    found
}

/// A machine's series: its points, the change points E-Divisive finds in their medians (each
/// judged by [`change_of`]), and why there is no further one.
fn series_of(
    machine: MachineInfo,
    found: MachinePoints,
    bench: &str,
    metric: &str,
    opts: changepoint::Options,
) -> Series {
    let values: Vec<f64> = found.points.iter().map(|p| p.center).collect();
    let (cps, rejected) = changepoint::search(&values, opts);
    let no_more_changes = changepoint::why_no_more(
        &values,
        cps.last().map_or(0, |c| c.index),
        rejected.as_ref(),
        opts,
    );
    // Segment boundaries: 0, each change point, the end.
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(cps.iter().map(|c| c.index));
    bounds.push(values.len());
    let changes = cps
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let segments = (bounds[k]..c.index, c.index..bounds[k + 2]);
            change_of(c, segments, &found.used, &values, bench, metric)
        })
        .collect();
    Series {
        machine: machine.name,
        machine_id: machine.id,
        points: found.points,
        changes,
        no_more_changes,
        skipped: found.skipped,
    }
}

/// The change point `c` between the segments `before` and `after` (index ranges of `used` and
/// `values`): the runs on either side, the ratio of the segments' medians, and `compare`'s
/// verdict between the segments.
fn change_of(
    c: &changepoint::ChangePoint,
    (before, after): (std::ops::Range<usize>, std::ops::Range<usize>),
    used: &[&RunRecord],
    values: &[f64],
    bench: &str,
    metric: &str,
) -> Change {
    let (a, b) = (used[c.index - 1], used[c.index]);
    // The same rule as `compare`, with the invocation as the unit: the segment before the change
    // against the segment after it, each run of the history one invocation of its segment's
    // system.
    let side = |r: std::ops::Range<usize>| -> Vec<crate::record::RunRecord> {
        used[r].iter().map(|x| (*x).clone()).collect()
    };
    let groups = [
        (a.run_id.to_string(), side(before.clone())),
        (b.run_id.to_string(), side(after.clone())),
    ];
    let cmp = compare::compare_groups(&groups, &compare::Options::default());
    let delta = cmp
        .rows
        .iter()
        .find(|r| r.benchmark == bench && r.metric == metric)
        .and_then(|r| r.cells.get(1))
        .and_then(|c| c.vs_base.as_ref());
    let before = stats::median(&values[before]);
    let after = stats::median(&values[after]);
    Change {
        index: c.index,
        p: c.p,
        before: a.run_id.to_string(),
        after: b.run_id.to_string(),
        segment_ratio: after / before,
        verdict: delta.map(|d| d.verdict).unwrap_or(Verdict::Same),
        ratio: delta
            .filter(|d| d.basis == compare::Basis::Ratio)
            .map(|d| d.ratio),
        ratio_ci95: delta
            .filter(|d| d.basis == compare::Basis::Ratio)
            .map(|d| d.ci95),
        q: delta.map(|d| d.q),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_the_median_and_range_of_its_members() {
        let cell = |center: f64, bound: Option<BoundKind>| Cell {
            center,
            ci95: Some([center - 1.0, center + 1.0]),
            range: None,
            n: 10,
            bound,
        };
        let g = group_cell(&[
            cell(3.0, None),
            cell(1.0, None),
            cell(10.0, Some(BoundKind::AtLeast)),
        ]);
        assert_eq!(
            g,
            Cell {
                center: 3.0,
                ci95: None,
                range: Some([1.0, 10.0]),
                n: 3,
                bound: Some(BoundKind::AtLeast),
            }
        );
    }

    fn row(id: &str, host: &str, label: &str, started: &str, complete: bool) -> RunRow {
        RunRow {
            run_id: id.into(),
            label: Some(label.into()),
            started: started.into(),
            finished: None,
            complete,
            os: "linux".into(),
            hostname: Some(host.into()),
            machine_id: None,
            tags: Default::default(),
            benchmarks: 1,
            origin: "imported".into(),
        }
    }

    #[test]
    fn filters_by_machine_label_time_and_status() {
        let rows = [
            row("1", "a", "x", "2026-11-01T00:00:00Z", true),
            row("2", "b", "x", "2026-11-10T00:00:00Z", false),
            row("3", "a", "y", "2026-11-20T00:00:00Z", true),
        ];
        let ids = |f: &RunFilter| -> Vec<String> {
            f.apply(&rows).iter().map(|r| r.run_id.clone()).collect()
        };
        assert_eq!(ids(&RunFilter::default()), ["1", "2", "3"]);
        let f = RunFilter {
            machines: vec!["a".into()],
            ..Default::default()
        };
        assert_eq!(ids(&f), ["1", "3"]);
        let f = RunFilter {
            labels: vec!["x".into()],
            status: Some(Status::Complete),
            ..Default::default()
        };
        assert_eq!(ids(&f), ["1"]);
        let now = "2026-11-25T00:00:00Z".parse().unwrap();
        let f = RunFilter {
            since: Some(parse_time("20d", now).unwrap()),
            until: Some(parse_time("2026-11-20", now).unwrap()),
            ..Default::default()
        };
        // since 2026-11-05, until (exclusive) 2026-11-20 00:00.
        assert_eq!(ids(&f), ["2"]);
        assert_eq!(
            f.describe(),
            "started at or after 2026-11-05 00:00:00 UTC, started before 2026-11-20 00:00:00 UTC"
        );
        assert_eq!(RunFilter::default().describe(), "every run");
        let f = RunFilter {
            status: Some(Status::Incomplete),
            ..Default::default()
        };
        assert_eq!(ids(&f), ["2"]);
    }

    #[test]
    fn times_parse_as_ages_dates_and_rfc3339() {
        let now: DateTime<Utc> = "2026-11-25T12:00:00Z".parse().unwrap();
        assert_eq!(
            parse_time("30d", now).unwrap(),
            "2026-10-26T12:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert_eq!(
            parse_time("2w", now).unwrap(),
            parse_time("14d", now).unwrap()
        );
        assert_eq!(
            parse_time("90m", now).unwrap(),
            "2026-11-25T10:30:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert_eq!(
            parse_time("2026-11-01T06:00:00+01:00", now).unwrap(),
            "2026-11-01T05:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        for bad in [
            "",
            "30",
            "d",
            "30x",
            "yesterday",
            "-3d",
            "99999999999999999d",
        ] {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn latest_run_per_machine_and_label() {
        let rows = [
            row("1", "b", "x", "2026-11-01T00:00:00Z", true),
            row("2", "a", "x", "2026-11-02T00:00:00Z", true),
            row("3", "b", "x", "2026-11-03T00:00:00Z", true),
            row("4", "b", "y", "2026-11-04T00:00:00Z", true),
            row("5", "a", "x", "2026-11-01T00:00:00Z", true),
        ];
        let all: Vec<&RunRow> = rows.iter().collect();
        let ids: Vec<&str> =
            latest_per_machine_label(&all, &Machines::of_rows(&rows), &Order::Started)
                .iter()
                .map(|r| r.run_id.as_str())
                .collect();
        assert_eq!(ids, ["2", "3", "4"]);
    }

    #[test]
    fn best_follows_the_direction_and_skips_bounds_and_neutral() {
        let c = |v: f64, bound: Option<BoundKind>| {
            Some(Cell {
                center: v,
                ci95: None,
                range: None,
                n: 1,
                bound,
            })
        };
        let cells = [
            c(3.0, None),
            c(1.0, None),
            None,
            c(0.5, Some(BoundKind::AtMost)),
        ];
        assert_eq!(best_of(&cells, Better::Lower), Some(1));
        assert_eq!(best_of(&cells, Better::Higher), Some(0));
        assert_eq!(best_of(&cells, Better::Neutral), None);
        assert_eq!(best_of(&cells[..1], Better::Lower), None);
        // A tie for the best: no mark.
        let tied = [c(1.0, None), c(2.0, None), c(1.0, None)];
        assert_eq!(best_of(&tied, Better::Lower), None);
        assert_eq!(best_of(&tied, Better::Higher), Some(1));
    }
}
