//! Published figures as model inputs: a TOML file of someone else's measurements (e.g. the 2009
//! thesis's tables), one `[[column]]` per OS, each input naming the table it comes from, plus the
//! published results (`[[column.check]]`) that `osgauge model` recomputes and prints beside the
//! printed value. These figures are NOT osgauge measurements; every output says so.
//!
//! ```toml
//! [source]
//! title = "…"
//! note = "The thesis's own measurements (2009 hardware), not measured by osgauge"
//! [[column]]
//! name = "Linux"
//! os = "Linux 2.6.28, 64 bit"
//! [column.inputs]
//! mem_bw_mb_s = { value = 6700, ref = "Table 5.8" }
//! net_rx_mem_per_mb = { amount = 375, at = 125, ref = "Table 5.10" }   # value = amount / at
//! [[column.check]]
//! table = "6.6"
//! what = "maximum fps"
//! quantity = "max_rate"        # max_rate | s_pct:<res> | demand:<res> | u_at_max_pct:<res>
//! printed = "43.29"            #   | u_pct:<res>@<rate> | os_mem_derived_mb
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::calc::Prediction;
use super::inputs::{self, Inputs, Origin, Value};
use super::profile::{Profile, ProfileError, line_of};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    source: RawSource,
    column: Vec<RawColumn>,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    pub title: String,
    pub note: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColumn {
    name: String,
    os: String,
    inputs: BTreeMap<String, toml::Spanned<RawInput>>,
    #[serde(default)]
    check: Vec<RawCheck>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    value: Option<f64>,
    amount: Option<f64>,
    at: Option<f64>,
    #[serde(rename = "ref")]
    reference: String,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    table: String,
    what: String,
    quantity: String,
    printed: String,
    note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub table: String,
    pub what: String,
    pub quantity: String,
    pub printed: String,
    pub computed: Option<f64>,
    /// The computed value at the printed precision.
    pub computed_text: String,
    /// "=" same at the printed precision; "≈" within 2 units of the last printed digit (the
    /// thesis multiplied its own rounded intermediates); "≠" further apart; "?" not computable.
    pub verdict: &'static str,
    pub delta: Option<f64>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub source: RawSource,
    pub columns: Vec<(Inputs, Vec<RawCheckOut>)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RawCheckOut {
    pub table: String,
    pub what: String,
    pub quantity: String,
    pub printed: String,
    pub note: Option<String>,
}

pub fn load(path: &Path) -> Result<Published, ProfileError> {
    let (src, name) = super::examples::read(path).map_err(ProfileError)?;
    parse(&name, &src)
}

pub fn parse(file: &str, src: &str) -> Result<Published, ProfileError> {
    let raw: Raw = toml::from_str(src).map_err(|e| {
        let line = e.span().map(|s| line_of(src, s.start)).unwrap_or(0);
        ProfileError(format!("{file}:{line}: {}", e.message().trim()))
    })?;
    let mut columns = Vec::new();
    for c in raw.column {
        let mut inp = Inputs::new(c.name.clone(), c.os.clone());
        for (k, v) in c.inputs {
            let line = line_of(src, v.span().start);
            let v = v.into_inner();
            let value = match (v.value, v.amount, v.at) {
                (Some(x), None, None) => x,
                (None, Some(t), Some(a)) if a > 0.0 => t / a,
                _ => {
                    return Err(ProfileError(format!(
                        "{file}:{line}: column '{}' input {k}: give value, or amount and at (> 0): value = amount / at",
                        c.name
                    )));
                }
            };
            if inputs::spec(&k).is_none() {
                return Err(ProfileError(format!(
                    "{file}:{line}: column '{}': unknown input {k}",
                    c.name
                )));
            }
            if !value.is_finite() || value < 0.0 {
                return Err(ProfileError(format!(
                    "{file}:{line}: column '{}' input {k}: must be a number ≥ 0",
                    c.name
                )));
            }
            let source = match (v.amount, v.at) {
                (Some(t), Some(a)) => format!("{} ({t} per s at {a} MB/s)", v.reference),
                _ => v.reference,
            };
            inp.values.insert(
                k,
                Value {
                    value,
                    origin: Origin::Published,
                    source,
                },
            );
        }
        let checks = c
            .check
            .into_iter()
            .map(|k| RawCheckOut {
                table: k.table,
                what: k.what,
                quantity: k.quantity,
                printed: k.printed,
                note: k.note,
            })
            .collect();
        columns.push((inp, checks));
    }
    Ok(Published {
        source: raw.source,
        columns,
    })
}

/// Memory traffic per unit the OS activities cause, from the per-MB figures (Table 6.1 derived
/// from Tables 5.9/5.10): Σ activity MB × traffic per MB.
pub fn os_mem_derived(p: &Profile, inp: &Inputs) -> Option<f64> {
    let d = &p.demand;
    let acts = [
        (d.net_rx_mb, "net_rx_mem_per_mb"),
        (d.net_tx_mb, "net_tx_mem_per_mb"),
        (d.disk_write_mb, "disk_write_mem_per_mb"),
        (d.disk_read_mb, "disk_read_mem_per_mb"),
        (d.frames * d.frame_mb, "frame_mem_per_mb"),
    ];
    let mut sum = 0.0;
    for (mb, key) in acts {
        if mb > 0.0 {
            sum += mb * inp.get(key)?;
        }
    }
    Some(sum)
}

fn quantity(q: &str, p: &Profile, pr: &Prediction, inp: &Inputs) -> Option<f64> {
    if q == "max_rate" {
        return pr.x_max;
    }
    if q == "os_mem_derived_mb" {
        return os_mem_derived(p, inp);
    }
    let (kind, rest) = q.split_once(':')?;
    match kind {
        "s_pct" => pr.resource(rest)?.s.map(|s| s * 100.0),
        "demand" => Some(pr.resource(rest)?.demand),
        "u_at_max_pct" => pr.util_at(rest, pr.x_max?).map(|u| u * 100.0),
        "u_pct" => {
            let (r, rate) = rest.split_once('@')?;
            pr.util_at(r, rate.parse().ok()?).map(|u| u * 100.0)
        }
        _ => None,
    }
}

/// Recompute each published result and compare it with the printed figure.
pub fn checks(p: &Profile, pr: &Prediction, inp: &Inputs, raw: &[RawCheckOut]) -> Vec<Check> {
    raw.iter()
        .map(|c| {
            let decimals = c.printed.split_once('.').map_or(0, |(_, f)| f.len());
            let computed = quantity(&c.quantity, p, pr, inp);
            let printed: Option<f64> = c.printed.parse().ok();
            let (verdict, delta, text) = match (computed, printed) {
                (Some(v), Some(pv)) => {
                    let text = format!("{v:.decimals$}");
                    let unit = 10f64.powi(-(decimals as i32));
                    let d = v - pv;
                    let verdict = if text == c.printed {
                        "="
                    } else if d.abs() <= 2.0 * unit + 1e-9 {
                        "≈"
                    } else {
                        "≠"
                    };
                    (verdict, Some(d), text)
                }
                _ => ("?", None, "—".to_string()),
            };
            Check {
                table: c.table.clone(),
                what: c.what.clone(),
                quantity: c.quantity.clone(),
                printed: c.printed.clone(),
                computed,
                computed_text: text,
                verdict,
                delta,
                note: c.note.clone(),
            }
        })
        .collect()
}
