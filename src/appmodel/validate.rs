//! `osgauge model validate`: the synthetic application (placeholder until implemented).

use std::path::Path;

use crate::cli::CliError;

pub fn run_cli(_profile: &Path, _max_rate: Option<f64>, _step_s: f64) -> Result<i32, CliError> {
    Err(CliError::Other(anyhow::anyhow!(
        "model validate is not implemented in this build"
    )))
}
