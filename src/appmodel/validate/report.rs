//! What `model validate` found: the prediction, every step, the verdict (which law or input is
//! off when it disagrees), and its JSON and Markdown exports (the HTML page is drawn by
//! `crate::report::appmodel`). The exit status the command gave it is the caller's to say.

use std::collections::BTreeMap;

use serde::Serialize;

use super::app::Step;
use crate::appmodel::Analysis;
use crate::appmodel::calc::Prediction;

/// Relative agreement required.
pub const TOLERANCE: f64 = 0.15;

#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// Offered rate, units/s (None: flat out).
    pub offered: Option<f64>,
    pub duration_s: f64,
    pub achieved: f64,
    pub cpu_measured_pct: f64,
    /// At an offered rate: the harness's own pacing (the same rate with no work), subtracted
    /// from the measured CPU before it is judged: the profile's demands do not include it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pacing_pct: Option<f64>,
    pub cpu_predicted_pct: f64,
    /// The prediction with every core moving memory at once (memory contention), when the
    /// application's CPU is its memory traffic's floor: the measured CPU lies between the two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_predicted_contended_pct: Option<f64>,
    pub cpu_agrees: Option<bool>,
    /// Resource → MB/s the app moved at the achieved rate (per-unit MB × rate; no counter).
    pub achieved_mb_s: BTreeMap<String, f64>,
}

impl StepRow {
    pub fn new(st: &Step, pred: &Prediction, disk_mb: f64) -> Self {
        let cpu = pred.resource("cpu");
        let s_cpu = cpu.and_then(|r| r.s).unwrap_or(0.0);
        let pr = st.achieved * s_cpu;
        let pr_hi = cpu
            .and_then(|r| r.s_contended)
            .map(|s| st.achieved * s)
            .filter(|hi| *hi > pr);
        let mut achieved_mb_s = BTreeMap::new();
        for rc in &pred.resources {
            if rc.unit == "MB" {
                achieved_mb_s.insert(rc.resource.to_string(), st.achieved * rc.demand);
            }
        }
        if disk_mb > 0.0 {
            achieved_mb_s.insert("disk".into(), st.achieved * disk_mb);
        }
        let mut row = StepRow {
            offered: st.offered,
            duration_s: st.duration_s,
            achieved: st.achieved,
            cpu_measured_pct: st.cpu_util * 100.0,
            cpu_pacing_pct: st.pacing_cpu_util.map(|x| x * 100.0),
            cpu_predicted_pct: pr * 100.0,
            cpu_predicted_contended_pct: pr_hi.map(|x| x * 100.0),
            cpu_agrees: None,
            achieved_mb_s,
        };
        row.cpu_agrees =
            (st.achieved > 0.0 && pr > 0.0).then(|| row.cpu_deviation().abs() <= TOLERANCE);
        row
    }
    /// The offered rate ("12.50"), or "flat out".
    pub fn offered_text(&self) -> String {
        self.offered
            .map_or("flat out".into(), |v| format!("{v:.2}"))
    }
    /// "memory 12.3, net_rx 4.5": MB/s per resource at the achieved rate.
    pub fn achieved_mb_s_text(&self) -> String {
        self.achieved_mb_s
            .iter()
            .map(|(k, v)| format!("{k} {v:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
    /// "21.8 %", or "21.8–28.4 %" with the contended end.
    pub fn cpu_predicted_text(&self) -> String {
        match self.cpu_predicted_contended_pct {
            Some(hi) => format!("{:.1}–{hi:.1} %", self.cpu_predicted_pct),
            None => format!("{:.1} %", self.cpu_predicted_pct),
        }
    }
    /// The measured CPU less the harness's pacing: what the profile's work took.
    pub fn cpu_work_pct(&self) -> f64 {
        (self.cpu_measured_pct - self.cpu_pacing_pct.unwrap_or(0.0)).max(0.0)
    }
    /// The work's CPU vs predicted, relative to the nearer end of the predicted range (0 inside).
    pub fn cpu_deviation(&self) -> f64 {
        deviation(
            self.cpu_work_pct(),
            self.cpu_predicted_pct,
            self.cpu_predicted_contended_pct
                .unwrap_or(self.cpu_predicted_pct),
        )
    }
}

/// The median of the steps' CPU deviations (None without any): what the utilisation law is
/// judged on.
pub fn median_deviation(devs: &[f64]) -> Option<f64> {
    (!devs.is_empty()).then(|| crate::stats::median(devs))
}

/// `measured` relative to the range [lo, hi]: 0 inside, else measured / nearer end − 1.
pub fn deviation(measured: f64, lo: f64, hi: f64) -> f64 {
    if measured < lo {
        measured / lo - 1.0
    } else if measured > hi {
        measured / hi - 1.0
    } else {
        0.0
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// False: the machine was shared, the figures are shown but not judged.
    pub judged: bool,
    pub agrees: bool,
    pub x_predicted: f64,
    pub x_measured: f64,
    pub x_agrees: bool,
    pub cpu_agrees: bool,
    pub bottleneck: String,
    pub flat_out_cpu_pct: f64,
    /// When it disagrees: the law or input that is off.
    pub off: Option<String>,
    /// The laws not counted: their prediction is over half stated figures (by construction).
    pub not_counted: Vec<String>,
    pub text: String,
}

impl Verdict {
    /// A quiet machine's measurement disagrees with the prediction (a shared machine's is not
    /// judged).
    pub fn disagrees(&self) -> bool {
        self.judged && !self.agrees
    }
}

/// The verdict from the figures. `bottleneck_inputs`: what the bottleneck's demand is made of.
pub fn judge(
    busy: bool,
    x_predicted: f64,
    x_measured: f64,
    cpu_agrees: bool,
    bottleneck: &str,
    bottleneck_inputs: &str,
    flat_out_cpu: f64,
) -> Verdict {
    let x_agrees = (x_measured / x_predicted - 1.0).abs() <= TOLERANCE;
    let cpu_saturated = flat_out_cpu >= 0.85;
    let off = if cpu_agrees && x_agrees {
        None
    } else if !cpu_agrees {
        Some(
            "the utilisation law / additivity: the CPU per unit measured in the app differs from the sum of the per-MB costs the probes measured alone (the same work mixed behaves differently, or the app does work the profile does not count)"
                .to_string(),
        )
    } else if bottleneck == "cpu" && cpu_saturated {
        Some("the capacity of the bottleneck (cpu): the CPUs this process gets flat out differ from the logical CPU count".to_string())
    } else if bottleneck == "cpu" {
        Some(format!(
            "the CPU (the predicted bottleneck) did not saturate flat out ({:.0} %): another resource limits first — its demand is underestimated, or the model lacks it",
            flat_out_cpu * 100.0
        ))
    } else if x_measured > x_predicted {
        Some(format!(
            "the demand of the bottleneck ({bottleneck}): it did not saturate at its predicted rate, so its per-unit demand ({bottleneck_inputs}) is overestimated or the capacity probed for it is too low"
        ))
    } else {
        Some(format!(
            "the capacity of the bottleneck ({bottleneck}): the app reaches less than the probe measured (the activities share it), or its demand ({bottleneck_inputs}) is underestimated"
        ))
    };
    let agrees = off.is_none();
    let text = match (&off, busy) {
        (_, true) => format!(
            "NOT JUDGED: the machine was shared (other work during the idle baseline), so the maximum rate and the bottleneck cannot be validated here; figures shown for information (maximum rate {:+.1} %, CPU per unit {}).",
            (x_measured / x_predicted - 1.0) * 100.0,
            if cpu_agrees { "within 15 %" } else { "off by > 15 %" }
        ),
        (None, false) => "AGREES within 15 %: the utilisation law (CPU per unit) and the bottleneck law (maximum rate) hold on this machine.".to_string(),
        (Some(o), false) => format!("DISAGREES (> 15 %): off is {o}."),
    };
    Verdict {
        judged: !busy,
        agrees,
        x_predicted,
        x_measured,
        x_agrees,
        cpu_agrees,
        bottleneck: bottleneck.to_string(),
        flat_out_cpu_pct: flat_out_cpu * 100.0,
        off,
        not_counted: Vec::new(),
        text,
    }
}

/// [`judge`], refusing the laws whose prediction agrees by construction: `x_refused` /
/// `cpu_refused` say why the maximum-rate / CPU-per-unit prediction is over half stated figures
/// (see [`crate::appmodel::construction`]). A refused law never makes the verdict agree nor
/// disagree; with both refused there is no verdict (not judged).
#[allow(clippy::too_many_arguments)]
pub fn judge_counted(
    busy: bool,
    x_predicted: f64,
    x_measured: f64,
    cpu_agrees: bool,
    bottleneck: &str,
    bottleneck_inputs: &str,
    flat_out_cpu: f64,
    x_refused: Option<String>,
    cpu_refused: Option<String>,
) -> Verdict {
    let x_for_judging = if x_refused.is_some() {
        x_predicted
    } else {
        x_measured
    };
    let mut v = judge(
        busy,
        x_predicted,
        x_for_judging,
        cpu_agrees || cpu_refused.is_some(),
        bottleneck,
        bottleneck_inputs,
        flat_out_cpu,
    );
    v.x_measured = x_measured;
    v.x_agrees = (x_measured / x_predicted - 1.0).abs() <= TOLERANCE;
    v.cpu_agrees = cpu_agrees;
    let mut refused = Vec::new();
    if let Some(w) = x_refused {
        refused.push(format!("maximum rate (bottleneck law): {w}"));
    }
    if let Some(w) = cpu_refused {
        refused.push(format!("CPU per unit (utilisation law): {w}"));
    }
    if refused.is_empty() {
        return v;
    }
    let list = refused.join("; ");
    if refused.len() == 2 {
        v.judged = false;
        v.agrees = false;
        v.off = None;
        v.text = format!(
            "NO VERDICT: both laws agree or disagree by construction, so nothing is judged — not counted: {list}."
        );
    } else if v.agrees && v.judged {
        let counted = if refused[0].starts_with("CPU") {
            "the bottleneck law (maximum rate)"
        } else {
            "the utilisation law (CPU per unit)"
        };
        v.text =
            format!("AGREES within 15 % on {counted} only; not counted (by construction): {list}.");
    } else {
        v.text = format!("{} Not counted (by construction): {list}.", v.text);
    }
    v.not_counted = refused;
    v
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkingSet {
    pub llc_bytes: u64,
    pub llc_source: String,
    pub ring_bytes: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub schema: &'static str,
    pub profile_path: String,
    pub working_set: WorkingSet,
    /// Other work during the idle baseline, CPUs.
    pub background_cpus: f64,
    pub shared_machine: bool,
    pub notes: Vec<String>,
    /// The prediction from the probes (inputs, per-resource demands, laws).
    pub analysis: Analysis,
    pub steps: Vec<StepRow>,
    pub verdict: Verdict,
}

/// The JSON export: the validation and the exit status `model validate` gave it.
pub fn json(v: &Validation, exit_code: i32) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct Export<'a> {
        #[serde(flatten)]
        validation: &'a Validation,
        exit_code: i32,
    }
    let e = Export {
        validation: v,
        exit_code,
    };
    Ok(serde_json::to_string_pretty(&e)? + "\n")
}

/// The Markdown export, with the exit status `model validate` gave it.
pub fn markdown(v: &Validation, exit_code: i32) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "# model validate: {}\n\n",
        v.analysis.profile.name
    ));
    o.push_str(&format!(
        "Working set per ring: {} MiB (LLC {} MiB: {}). Other work during the idle baseline: {:.2} CPUs{}.\n\n",
        v.working_set.ring_bytes >> 20,
        v.working_set.llc_bytes >> 20,
        v.working_set.llc_source,
        v.background_cpus,
        if v.shared_machine { " (shared machine)" } else { "" }
    ));
    for n in &v.notes {
        o.push_str(&format!("- {n}\n"));
    }
    o.push_str("\n## Prediction (from the probes)\n\n");
    o.push_str(&crate::appmodel::render::markdown(&v.analysis));
    o.push_str(&format!(
        "\n## Steps\n\n| offered ({u}/s) | s | achieved ({u}/s) | CPU measured % | − pacing % | CPU predicted % | CPU agrees | achieved MB/s (per-unit MB × rate) |\n|---|---|---|---|---|---|---|---|\n",
        u = v.analysis.profile.unit
    ));
    for s in &v.steps {
        o.push_str(&format!(
            "| {} | {:.1} | {:.2} | {:.1} | {} | {} | {} | {} |\n",
            s.offered_text(),
            s.duration_s,
            s.achieved,
            s.cpu_measured_pct,
            s.cpu_pacing_pct.map_or("—".into(), |x| format!("{x:.1}")),
            s.cpu_predicted_text(),
            s.cpu_agrees.map_or("—", |b| if b { "yes" } else { "NO" }),
            s.achieved_mb_s_text()
        ));
    }
    let vd = &v.verdict;
    o.push_str(&format!(
        "\n## Verdict\n\nMaximum rate: predicted {:.2}, measured {:.2} ({:+.1} %). Bottleneck predicted: {}; flat out this process used {:.1} % of all CPUs.\n\n**{}** (exit status {})\n",
        vd.x_predicted,
        vd.x_measured,
        (vd.x_measured / vd.x_predicted - 1.0) * 100.0,
        vd.bottleneck,
        vd.flat_out_cpu_pct,
        vd.text,
        exit_code
    ));
    o
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn cpu_agrees_inside_the_contention_range_and_within_15_percent_of_its_ends() {
        assert_eq!(deviation(0.5, 0.4, 0.6), 0.0);
        assert!((deviation(0.3, 0.4, 0.6) + 0.25).abs() < 1e-12);
        assert!((deviation(0.9, 0.4, 0.6) - 0.5).abs() < 1e-12);
        let row = |measured: f64, hi: Option<f64>| StepRow {
            offered: None,
            duration_s: 1.0,
            achieved: 10.0,
            cpu_measured_pct: measured,
            cpu_pacing_pct: None,
            cpu_predicted_pct: 40.0,
            cpu_predicted_contended_pct: hi,
            cpu_agrees: None,
            achieved_mb_s: BTreeMap::new(),
        };
        assert_eq!(row(55.0, Some(60.0)).cpu_deviation(), 0.0);
        assert_eq!(row(55.0, Some(60.0)).cpu_predicted_text(), "40.0–60.0 %");
        // Without the contended end, 55 % against 40 % is +37.5 %.
        assert!((row(55.0, None).cpu_deviation() - 0.375).abs() < 1e-12);
        assert_eq!(row(55.0, None).cpu_predicted_text(), "40.0 %");
        // Below the uncontended end counts against it.
        assert!((row(30.0, Some(60.0)).cpu_deviation() + 0.25).abs() < 1e-12);
        // The law is judged on the median step: one outlier does not decide it, a shift does.
        assert_eq!(median_deviation(&[]), None);
        assert_eq!(
            median_deviation(&[0.02, 0.21, -0.03, 0.05, 0.0, 0.01, 0.04]),
            Some(0.02)
        );
        assert_eq!(median_deviation(&[0.3, 0.2, 0.25, 0.1]), Some(0.225));
        // The harness's pacing is taken off the measured CPU before it is judged.
        let mut paced = row(50.0, None);
        paced.cpu_pacing_pct = Some(10.0);
        assert_eq!(paced.cpu_work_pct(), 40.0);
        assert_eq!(paced.cpu_deviation(), 0.0);
        let st = Step {
            offered: Some(10.0),
            duration_s: 1.0,
            achieved: 10.0,
            cpu_util: 0.5,
            pacing_cpu_util: Some(0.1),
        };
        let p = crate::appmodel::Profile::parse(
            "p",
            "[app]\nname = \"t\"\nunit = \"req\"\ntarget_rate = 10\n[demand]\napp_cpu_s = 0.08\n",
        )
        .unwrap();
        let mut i = crate::appmodel::inputs::Inputs::new("probes", "linux");
        i.values.insert(
            "cpus".into(),
            crate::appmodel::inputs::Value {
                value: 2.0,
                origin: crate::appmodel::inputs::Origin::Measured,
                source: "test".into(),
            },
        );
        let pred = crate::appmodel::analyse(&p, vec![i], None).predictions[0].clone();
        // Predicted 10/s × 0.08 / 2 = 40 %; measured 50 % − 10 % pacing = 40 %: agrees, while
        // 50 % against 40 % would be +25 %.
        let r = StepRow::new(&st, &pred, 0.0);
        assert!((r.cpu_predicted_pct - 40.0).abs() < 1e-9);
        assert_eq!(r.cpu_agrees, Some(true));
        let r = StepRow::new(
            &Step {
                pacing_cpu_util: None,
                ..st
            },
            &pred,
            0.0,
        );
        assert_eq!(r.cpu_agrees, Some(false));
    }

    #[test]
    fn a_quiet_machine_that_disagrees_is_the_only_disagreement() {
        // Agrees.
        let v = judge(false, 100.0, 110.0, true, "cpu", "", 0.95);
        assert!(v.agrees && v.judged);
        assert!(!v.disagrees());
        // A quiet machine that disagrees, naming what is off.
        let v = judge(false, 100.0, 170.0, true, "memory", "assumed copies", 0.5);
        assert!(v.disagrees());
        assert!(
            v.off
                .as_deref()
                .unwrap()
                .starts_with("the demand of the bottleneck (memory)")
        );
        let v = judge(false, 100.0, 60.0, true, "cpu", "", 0.99);
        assert!(
            v.off
                .as_deref()
                .unwrap()
                .starts_with("the capacity of the bottleneck (cpu)")
        );
        let v = judge(false, 100.0, 100.0, false, "cpu", "", 0.99);
        assert!(v.disagrees());
        assert!(v.off.as_deref().unwrap().contains("utilisation law"));
        // A shared machine: shown, not judged.
        let v = judge(true, 100.0, 170.0, false, "memory", "", 0.5);
        assert!(!v.judged);
        assert!(!v.judged);
        assert!(!v.disagrees());
        assert!(v.text.starts_with("NOT JUDGED"), "{}", v.text);
        // A CPU prediction that is the profile's own CPU is never counted as agreeing.
        let v = judge_counted(
            false,
            100.0,
            100.0,
            true,
            "cpu",
            "",
            0.99,
            Some("stated".into()),
            Some("stated".into()),
        );
        assert!(!v.judged && !v.agrees && !v.disagrees());
        assert!(v.text.starts_with("NO VERDICT"), "{}", v.text);
        let v = judge_counted(
            false,
            100.0,
            100.0,
            false,
            "memory",
            "",
            0.5,
            None,
            Some("stated".into()),
        );
        assert!(
            v.agrees
                && v.text
                    .contains("not counted (by construction): CPU per unit"),
            "{}",
            v.text
        );
        let v = judge_counted(
            false,
            100.0,
            170.0,
            true,
            "memory",
            "",
            0.5,
            None,
            Some("stated".into()),
        );
        assert!(
            v.disagrees() && v.text.contains("Not counted (by construction)"),
            "{}",
            v.text
        );
    }

    /// Every export carries every step (offered, achieved, CPU measured vs predicted, per-resource
    /// MB/s), the verdict and the exit status given.
    #[test]
    fn the_exports_contain_the_prediction_every_step_and_the_verdict() {
        let v = sample();
        // S_cpu = (0.01 + 0.001) / 2 = 0.0055 → at 12.4/s, 6.82 %.
        assert!((v.steps[0].cpu_predicted_pct - 6.82).abs() < 1e-9);
        assert_eq!(v.steps[0].cpu_agrees, Some(true));
        assert!((v.steps[1].achieved_mb_s["net_rx"] - 77.7).abs() < 1e-9);
        let j: serde_json::Value = serde_json::from_str(&json(&v, 1).unwrap()).unwrap();
        assert_eq!(j["steps"].as_array().unwrap().len(), 2);
        assert_eq!(j["steps"][0]["offered"], 12.5);
        assert!(j["steps"][1]["offered"].is_null());
        assert_eq!(j["verdict"]["x_measured"], 77.7);
        assert!(j["analysis"]["predictions"][0]["x_max"].is_f64());
        assert_eq!(j["exit_code"], 1);
        let md = markdown(&v, 1);
        assert!(
            md.contains("| 12.50 | 1.0 | 12.40 | 6.8 | — | 6.8 % | yes |"),
            "{md}"
        );
        assert!(md.contains("| flat out | 1.0 | 77.70 |"), "{md}");
        assert!(md.contains(&v.verdict.text), "{md}");
        assert!(md.contains("(exit status 1)"), "{md}");
    }

    /// A validation of a small profile: two steps (an offered rate and flat out) and a verdict
    /// that the memory bandwidth is off.
    pub(crate) fn sample() -> Validation {
        use crate::appmodel::inputs::{Inputs, Origin, Value};
        use crate::appmodel::{Profile, analyse};
        let p = Profile::parse(
            "p",
            "[app]\nname = \"t\"\nunit = \"req\"\ntarget_rate = 10\n[demand]\nnet_rx_mb = 1\napp_cpu_s = 0.01\napp_mem_mb = 4\n",
        )
        .unwrap();
        let mut i = Inputs::new("probes", "linux");
        for (k, v) in [
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("mem_bw_mb_s", 1000.0),
            ("net_link_mb_s", 500.0),
        ] {
            i.values.insert(
                k.into(),
                Value {
                    value: v,
                    origin: Origin::Measured,
                    source: "test".into(),
                },
            );
        }
        let a = analyse(&p, vec![i], None);
        let pred = a.predictions[0].clone();
        let step = |offered, achieved, cpu_util| {
            StepRow::new(
                &Step {
                    offered,
                    duration_s: 1.0,
                    achieved,
                    cpu_util,
                    pacing_cpu_util: None,
                },
                &pred,
                0.0,
            )
        };
        let steps = vec![step(Some(12.5), 12.4, 0.068), step(None, 77.7, 0.42)];
        let verdict = judge(false, pred.x_max.unwrap(), 77.7, true, "memory", "x", 0.42);
        Validation {
            schema: "osgauge.appmodel.validate/1",
            profile_path: "p.toml".into(),
            working_set: WorkingSet {
                llc_bytes: 32 << 20,
                llc_source: "test".into(),
                ring_bytes: 128 << 20,
            },
            background_cpus: 0.0,
            shared_machine: false,
            notes: vec!["a note".into()],
            analysis: a,
            steps,
            verdict,
        }
    }
}
