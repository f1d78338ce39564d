//! Which stored runs a command looks at: the filters `results list`, `fleet`, `fleet history` and
//! `fleet check` share (machine, label, time, state, tags), the order they are put in, and the
//! rows of a store they keep.

use clap::{Args, ValueEnum};

use super::CliError;
use crate::fleet::{self, Order, RunFilter, Status};
use crate::store::RunRow;

/// A run's state for `--status`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusArg {
    Complete,
    Incomplete,
    Any,
}

/// Which stored runs to look at (`results list`, `fleet`): machines and [`RunSelect`].
#[derive(Args, Debug, Clone, Default)]
pub struct FilterArgs {
    /// Only runs of this machine: a hostname it had, or the start of its machine id (4+ hex
    /// digits); repeat for several
    #[arg(long = "machine", value_name = "NAME")]
    pub machines: Vec<String>,
    #[command(flatten)]
    pub select: RunSelect,
}

/// Label, time and state of the runs to look at; `fleet history` takes these with its machine
/// given as an argument.
#[derive(Args, Debug, Clone, Default)]
pub struct RunSelect {
    /// Only runs with this label; repeat for several
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Only runs started at or after: an age (30d, 12h, 2w, 90m), a date (2026-11-01, UTC) or an
    /// RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only runs started before (same forms as --since)
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Runs in this state: complete, incomplete (interrupted) or any [default: complete for
    /// `fleet`, any otherwise]
    #[arg(long, value_enum, value_name = "STATUS")]
    pub status: Option<StatusArg>,
    /// Only runs with this tag value (`--tag KEY=VALUE` when they ran), e.g. --where build=1042;
    /// repeat for several (all must hold)
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub wheres: Vec<String>,
    /// The order of runs: `started` (the default) or the value of a tag, `tag:KEY` (natural
    /// order: build 99 < build 100, 6.9 < 6.18); ordering by a tag leaves out runs without it.
    /// "Newest" then means last in this order
    #[arg(long, value_name = "started|tag:KEY")]
    pub order_by: Option<String>,
}

impl FilterArgs {
    /// The filter, with `default` for an absent `--status`.
    pub fn filter(&self, default: Option<Status>) -> Result<RunFilter, CliError> {
        self.select.filter(self.machines.clone(), default)
    }

    pub fn is_empty(&self) -> bool {
        self.machines.is_empty() && self.select.is_empty()
    }
}

impl RunSelect {
    /// The filter for `machines` (none: every machine), with `default` for an absent `--status`.
    pub fn filter(
        &self,
        machines: Vec<String>,
        default: Option<Status>,
    ) -> Result<RunFilter, CliError> {
        let now = chrono::Utc::now();
        let time = |flag: &str, v: &Option<String>| {
            v.as_deref()
                .map(|s| fleet::parse_time(s, now))
                .transpose()
                .map_err(|e| CliError::Usage(format!("{flag}: {e}")))
        };
        let tags = self
            .wheres
            .iter()
            .map(|w| fleet::parse_tag(w))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::Usage(format!("--where: {e}")))?;
        let has_tag = match self.order()? {
            Order::Tag(k) => Some(k),
            Order::Started => None,
        };
        Ok(RunFilter {
            machines,
            tags,
            has_tag,
            labels: self.labels.clone(),
            since: time("--since", &self.since)?,
            until: time("--until", &self.until)?,
            status: match self.status {
                None => default,
                Some(StatusArg::Complete) => Some(Status::Complete),
                Some(StatusArg::Incomplete) => Some(Status::Incomplete),
                Some(StatusArg::Any) => None,
            },
        })
    }

    /// `--order-by`, parsed (start time when absent).
    pub fn order(&self) -> Result<Order, CliError> {
        match &self.order_by {
            None => Ok(Order::Started),
            Some(s) => Order::parse(s).map_err(|e| CliError::Usage(format!("--order-by: {e}"))),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
            && self.since.is_none()
            && self.until.is_none()
            && self.status.is_none()
            && self.wheres.is_empty()
            && self.order_by.is_none()
    }
}

/// `results list` with filters: the rows that match, in the order asked for.
pub fn filter_rows(rows: Vec<RunRow>, f: &FilterArgs) -> Result<Vec<RunRow>, CliError> {
    let filter = f.filter(None)?;
    let order = f.select.order()?;
    let mut kept: Vec<RunRow> = filter.apply(&rows).into_iter().cloned().collect();
    if order != Order::Started {
        kept.sort_by(|a, b| {
            order.cmp(
                (&a.tags, &a.started, &a.run_id),
                (&b.tags, &b.started, &b.run_id),
            )
        });
    }
    Ok(kept)
}
