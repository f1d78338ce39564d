//! Which stored runs a command looks at: the filters `results list`, `fleet` and `fleet history`
//! share (machine, label, time, state), and the rows of a store they keep.

use clap::{Args, ValueEnum};

use super::CliError;
use crate::fleet::{self, RunFilter, Status};
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
    /// Only runs of this machine (its hostname); repeat for several
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
        Ok(RunFilter {
            machines,
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

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
            && self.since.is_none()
            && self.until.is_none()
            && self.status.is_none()
    }
}

/// `results list` with filters: the rows that match.
pub fn filter_rows(rows: Vec<RunRow>, f: &FilterArgs) -> Result<Vec<RunRow>, CliError> {
    let filter = f.filter(None)?;
    Ok(rows.into_iter().filter(|r| filter.matches(r)).collect())
}
