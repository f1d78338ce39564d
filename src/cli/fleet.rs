//! CLI of the fleet view: `osgauge fleet`, `osgauge fleet history` and `osgauge fleet check`
//! (their run filters are [`super::select`]'s, shared with `results list`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::results::StorePath;
use super::select::{FilterArgs, RunSelect};
use super::{CliError, EXIT_OK, EXIT_REGRESSION};
use crate::fleet::{self, GroupBy, Machines, Status};
use crate::record::RunRecord;
use crate::store::{RunRow, Store};

/// `osgauge fleet --help`, after the options.
pub const AFTER_HELP: &str = "Examples:\n  osgauge fleet --label linux-6.18 --label win11\n  osgauge fleet --machine host-a --machine host-b --since 30d --export-html fleet.html\n  osgauge fleet --group-by kernel --export-markdown fleet.md --export-csv fleet.csv\n  osgauge fleet history host-a cpu/null_syscall\n  osgauge fleet --where kernel_rev=6.18-rc3 --order-by tag:build\n  osgauge fleet check --since 30d                     exit 3 on a regression (CI, cron)\n\nWhich runs: of the runs matching the filters (complete runs only unless --status says\notherwise), the newest run of each machine and label: one column each. A machine is its\nmachine id where recorded, else its hostname; it is shown by its newest hostname, with the\nstart of its id when two machines share a name.\nEach figure: the run's median of per-run medians with its 95 % CI; ★ marks the best median of a\nrow by the metric's direction (none when tied; not a significance test: use `osgauge compare`).\n--group-by folds the columns into groups: the median of the members' medians, with n and their range.";

/// Where the fleet outputs go.
#[derive(Args, Debug, Clone, Default)]
pub struct FleetExports {
    /// Write the tables as Markdown
    #[arg(long, value_name = "FILE", alias = "export-md")]
    pub export_markdown: Option<PathBuf>,
    /// Write the tables as CSV (one line per metric and column, values in the base unit)
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write the tables as JSON (schema in docs/record.md)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write a self-contained HTML page with the tables and charts
    #[arg(long, value_name = "FILE")]
    pub export_html: Option<PathBuf>,
}

impl FleetExports {
    fn check(&self) -> Result<(), CliError> {
        crate::export::check_targets(&[
            ("--export-markdown", self.export_markdown.as_deref()),
            ("--export-csv", self.export_csv.as_deref()),
            ("--export-json", self.export_json.as_deref()),
            ("--export-html", self.export_html.as_deref()),
        ])
        .map_err(CliError::Usage)
    }

    fn write(
        &self,
        md: impl FnOnce() -> String,
        csv: impl FnOnce() -> anyhow::Result<String>,
        json: impl FnOnce() -> anyhow::Result<String>,
        html: impl FnOnce() -> anyhow::Result<String>,
    ) -> Result<(), CliError> {
        let mut outs: Vec<crate::export::Output> = Vec::new();
        if let Some(p) = &self.export_markdown {
            outs.push(("--export-markdown", p, Ok(md())));
        }
        if let Some(p) = &self.export_csv {
            outs.push(("--export-csv", p, csv()));
        }
        if let Some(p) = &self.export_json {
            outs.push(("--export-json", p, json()));
        }
        if let Some(p) = &self.export_html {
            outs.push(("--export-html", p, html()));
        }
        crate::export::write_each(outs)?;
        Ok(())
    }
}

/// `osgauge fleet`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: Option<FleetCmd>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Fold machines into one column per os, kernel or label: each figure the median of the
    /// members' medians, with n and their range
    #[arg(long, value_name = "KEY", value_parser = GroupBy::parse)]
    pub group_by: Option<GroupBy>,
    #[command(flatten)]
    pub exports: FleetExports,
    #[command(flatten)]
    pub store: StorePath,
}

#[derive(Subcommand, Debug)]
pub enum FleetCmd {
    /// One metric over time on one machine (or `all`: one series per machine), with change points
    #[command(
        after_help = "Examples:\n  osgauge fleet history host-a cpu/null_syscall\n  osgauge fleet history all cpu/proc_call/args3 --since 30d --export-html h.html\n\nMETRIC: a benchmark id (its first metric) or benchmark/metric.\nMACHINE: a hostname as recorded, or `all` for every machine (one series and one chart each).\nChange points: E-Divisive means over the whole series of run medians (Matteson & James;\npermutation test, 199 permutations, α = 0.01, ≥ 3 runs on either side, fixed seed), each with\nthe runs on either side and `osgauge compare`'s verdict between them. A permutation test needs\nabout 10 runs before any change can reach α = 0.01. Every run matching the filters is used\n(incomplete ones too unless --status complete)."
    )]
    History(Box<HistoryArgs>),
    /// Print the SQL that makes a shared PostgreSQL store's reader and writer roles
    #[command(
        after_help = "Examples:\n  osgauge fleet roles > roles.sql\n  psql \"postgres://owner@db.lab/osgauge\" -f roles.sql\n  psql \"postgres://owner@db.lab/osgauge\" -c \"CREATE ROLE alice LOGIN PASSWORD 'CHANGE-ME' IN ROLE osgauge_writer\"\n\nRun the script as the owner of the store's tables (the role whose first osgauge run created\nthem), after that run. osgauge_reader reads every run; osgauge_writer also adds runs and\nupdates or deletes only the runs it stored (row-level security); the owner keeps every right.\nNothing is connected to: the script goes to standard output."
    )]
    Roles,
    /// Check each machine's newest run against its own history: exit 3 on a regression beyond the
    /// noise (for a CI job or a cron)
    #[command(
        after_help = "Examples:\n  osgauge fleet check\n  osgauge fleet check --label nightly --since 60d --store postgres://osgauge@db.lab/osgauge\n  osgauge fleet check --order-by tag:build --threshold 5% --export-json check.json\n\nA series is one machine's complete runs under one label, in time order (or --order-by).\nIts last run is checked against the runs before it (the last --history of them, at least 3):\n`osgauge compare`'s rule with every run one invocation — Welch's t over invocations, the\nbetween-invocation noise learned from the history itself, Benjamini-Hochberg within the\nheadline and the other metrics, a ±--noise band, and on the same system the drift reference.\nA regression: a metric called worse by at least --threshold.\n\nExit codes: 0 no regression (series with too few runs are listed, not failed);\n3 a regression in some series; 2 bad arguments, no store, or no run matching the filters."
    )]
    Check(Box<CheckArgs>),
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Check against at most this many earlier runs of each series (the most recent)
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(3..=1000), value_name = "N")]
    pub history: u32,
    /// A worse verdict counts as a regression when the change is at least X
    #[arg(long, default_value = "0%", value_parser = super::parse_percent, value_name = "X%")]
    pub threshold: f64,
    /// Half-width of the noise band: a difference inside ±X is never called better/worse
    #[arg(long, default_value = "2%", value_parser = super::parse_percent, value_name = "X%")]
    pub noise: f64,
    /// Write the outcome as JSON (schema osgauge.fleet-check/1)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    #[command(flatten)]
    pub store: StorePath,
}

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Hostname, or `all`
    pub machine: String,
    /// Benchmark id or benchmark/metric, e.g. cpu/null_syscall
    pub metric: String,
    #[command(flatten)]
    pub select: RunSelect,
    #[command(flatten)]
    pub exports: FleetExports,
    #[command(flatten)]
    pub store: StorePath,
}

fn records(s: &Store, rows: &[&RunRow]) -> Result<Vec<RunRecord>, CliError> {
    let mut out = Vec::new();
    for r in rows {
        if let Some(rec) = s.get(&r.run_id)? {
            out.push(rec);
        }
    }
    Ok(out)
}

pub fn dispatch(a: FleetArgs) -> Result<i32, CliError> {
    match a.command {
        Some(FleetCmd::History(h)) => return history(*h),
        Some(FleetCmd::Roles) => {
            crate::out!("{}", crate::store::postgres::ROLES_SQL);
            return Ok(EXIT_OK);
        }
        Some(FleetCmd::Check(c)) => return check(*c),
        None => {}
    }
    a.exports.check()?;
    let filter = a.filter.filter(Some(Status::Complete))?;
    let Some(s) = a.store.open_read()? else {
        return Err(CliError::Usage(format!(
            "no result store at {} (nothing to show)",
            crate::store::shown(&a.store.path()?)
        )));
    };
    let rows = s.list()?;
    let order = a.filter.select.order()?;
    let machines = Machines::of_rows(&rows);
    let matching = filter.apply(&rows);
    let chosen = fleet::latest_per_machine_label(&matching, &machines, &order);
    if chosen.is_empty() {
        return Err(CliError::Usage(format!(
            "no stored run matches the filters ({} run(s) in {}; see `osgauge results list`)",
            rows.len(),
            s.path().display()
        )));
    }
    if chosen.len() > 12 && a.group_by.is_none() {
        crate::errln!(
            "osgauge: note: {} columns (one per machine and label); narrow them with --label, --machine or --since, or fold them with --group-by",
            chosen.len()
        );
    }
    let recs = records(&s, &chosen)?;
    no_id_note(&machines, &chosen);
    let f = fleet::build(
        &recs,
        &machines,
        a.group_by,
        &fleet::selection_text(&filter, &order),
    );
    crate::out!("{}", fleet::render::text(&f));
    a.exports.write(
        || fleet::render::markdown(&f),
        || fleet::render::csv(&f),
        || fleet::render::json(&f),
        || crate::report::fleet::render_fleet(&f),
    )?;
    Ok(EXIT_OK)
}

fn history(a: HistoryArgs) -> Result<i32, CliError> {
    a.exports.check()?;
    let machines = if a.machine == "all" {
        Vec::new()
    } else {
        vec![a.machine.clone()]
    };
    let filter = a.select.filter(machines, None)?;
    let Some(s) = a.store.open_read()? else {
        return Err(CliError::Usage(format!(
            "no result store at {} (nothing to show)",
            crate::store::shown(&a.store.path()?)
        )));
    };
    let rows = s.list()?;
    let order = a.select.order()?;
    let machines = Machines::of_rows(&rows);
    let matching = filter.apply(&rows);
    if matching.is_empty() {
        return Err(CliError::Usage(format!(
            "no stored run of machine '{}' matches ({} run(s) in {}; see `osgauge results list`)",
            crate::output::display_text(&a.machine, crate::output::LABEL_MAX_CHARS),
            rows.len(),
            s.path().display()
        )));
    }
    let recs = records(&s, &matching)?;
    no_id_note(&machines, &matching);
    let (bench, metric) = fleet::resolve_metric(&a.metric, &recs).map_err(CliError::Usage)?;
    let h = fleet::history(
        &recs,
        &bench,
        &metric,
        fleet::changepoint::Options::default(),
        &machines,
        &order,
    );
    crate::out!("{}", fleet::render::history_text(&h));
    a.exports.write(
        || fleet::render::history_markdown(&h),
        || fleet::render::history_csv(&h),
        || fleet::render::history_json(&h),
        || crate::report::fleet::render_history(&h),
    )?;
    Ok(EXIT_OK)
}

fn check(a: CheckArgs) -> Result<i32, CliError> {
    crate::export::check_targets(&[("--export-json", a.export_json.as_deref())])
        .map_err(CliError::Usage)?;
    let filter = a.filter.filter(Some(Status::Complete))?;
    let order = a.filter.select.order()?;
    let Some(s) = a.store.open_read()? else {
        return Err(CliError::Usage(format!(
            "no result store at {} (nothing to check)",
            crate::store::shown(&a.store.path()?)
        )));
    };
    let rows = s.list()?;
    let machines = Machines::of_rows(&rows);
    let matching = filter.apply(&rows);
    if matching.is_empty() {
        return Err(CliError::Usage(format!(
            "no stored run matches the filters ({} run(s) in {}; see `osgauge results list`)",
            rows.len(),
            s.path().display()
        )));
    }
    let recs = records(&s, &matching)?;
    no_id_note(&machines, &matching);
    let opts = fleet::check::Options {
        history: a.history as usize,
        threshold: a.threshold,
        noise: a.noise,
    };
    let c = fleet::check::check(
        &recs,
        &machines,
        &order,
        opts,
        &format!(
            "each machine's runs per label (filters: {})",
            filter.describe()
        ),
    );
    crate::out!("{}", fleet::render::check_text(&c));
    if let Some(p) = &a.export_json {
        crate::export::write_each(vec![("--export-json", p, fleet::render::check_json(&c))])?;
    }
    Ok(if c.regressed() > 0 {
        EXIT_REGRESSION
    } else {
        EXIT_OK
    })
}

/// Say which machines of `rows` have no machine id (known by hostname only), if any.
fn no_id_note(machines: &Machines, rows: &[&crate::store::RunRow]) {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        if let Some(m) = machines.of(&r.run_id)
            && m.id.is_none()
            && !names.contains(&m.name)
        {
            names.push(m.name.clone());
        }
    }
    if !names.is_empty() {
        crate::errln!(
            "osgauge: note: no machine id recorded for {} (runs made before machine ids, or the OS's id unreadable: see `osgauge system show`): known by hostname only",
            names
                .iter()
                .map(|n| crate::output::display_text(n, crate::output::LABEL_MAX_CHARS))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}
