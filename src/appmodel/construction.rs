//! Agreement by construction: how much of a predicted figure rests on a figure someone *stated*
//! (the profile's own application CPU, an assumed copy count, a capacity the profile states, a
//! published figure) rather than one this machine *measured*. A synthetic application that spins
//! for exactly the profile's `app_cpu_s` agrees with a CPU prediction made of that same figure
//! whatever the OS costs are; such a check proves nothing about the measurements and must not
//! count. Pure.

use serde::Serialize;

use super::calc::{Part, Prediction, fmt};

/// Above this share of stated figures a check is by construction and does not count.
pub const MAX_STATED_SHARE: f64 = 0.5;

/// What a resource's predicted figure rests on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Basis {
    pub resource: String,
    /// Share (0..=1) of the resource's per-unit demand — or, when its capacity is stated, all of
    /// it — that comes from stated figures.
    pub stated_share: f64,
    /// The stated figures, as "label (share %)".
    pub stated: Vec<String>,
}

impl Basis {
    /// More than half stated: a check of this resource agrees by construction.
    pub fn by_construction(&self) -> bool {
        self.stated_share > MAX_STATED_SHARE
    }

    /// "BY CONSTRUCTION: …" or "measured: …" — the sentence a verdict shows.
    pub fn text(&self) -> String {
        if self.by_construction() {
            format!(
                "BY CONSTRUCTION: {} % of the {} prediction is stated, not measured ({}), so its agreement would prove nothing and it does not count",
                fmt(self.stated_share * 100.0),
                self.resource,
                self.stated.join("; ")
            )
        } else if self.stated.is_empty() {
            format!(
                "the {} prediction rests on measured figures only",
                self.resource
            )
        } else {
            format!(
                "the {} prediction is {} % stated ({}), the rest measured",
                self.resource,
                fmt(self.stated_share * 100.0),
                self.stated.join("; ")
            )
        }
    }
}

/// Whether a demand part is a stated figure rather than a measured one.
fn stated_part(p: &Part) -> bool {
    p.assumed
        || p.source.starts_with("profile demand.app_cpu")
        || p.label.contains("(published")
        || p.source.contains("published")
}

/// What `resource`'s prediction rests on (None: the prediction has no such resource).
pub fn basis(pred: &Prediction, resource: &str) -> Option<Basis> {
    let r = pred.resource(resource)?;
    if let Some(src) = &r.capacity_source
        && (src.contains("stated by the profile") || src.contains("published"))
    {
        return Some(Basis {
            resource: resource.to_string(),
            stated_share: 1.0,
            stated: vec![format!("its capacity: {src}")],
        });
    }
    // Fractions (a share of all CPUs per unit) in the demand's own unit.
    let cap = r.capacity.unwrap_or(0.0);
    let amount = |p: &Part| p.amount.unwrap_or(0.0) + p.fraction.unwrap_or(0.0) * cap;
    let total: f64 = r.parts.iter().map(amount).sum();
    if total <= 0.0 {
        return Some(Basis {
            resource: resource.to_string(),
            stated_share: 0.0,
            stated: Vec::new(),
        });
    }
    let mut stated = Vec::new();
    let mut share = 0.0;
    for p in r.parts.iter().filter(|p| stated_part(p)) {
        let s = amount(p) / total;
        share += s;
        stated.push(format!("{} ← {} ({} %)", p.label, p.source, fmt(s * 100.0)));
    }
    Some(Basis {
        resource: resource.to_string(),
        stated_share: share,
        stated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appmodel::inputs::{Inputs, Origin, Value};
    use crate::appmodel::{Profile, predict};

    fn inputs(p: &Profile) -> Inputs {
        let mut i = Inputs::new("t", "test");
        for (k, v) in [
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("disk_write_cpu_s_per_mb_t1", 0.002),
            ("mem_bw_mb_s", 10000.0),
            ("mem_bw_1t_mb_s", 8000.0),
            ("disk_write_mb_s_t1", 500.0),
            ("net_link_mb_s", 1000.0),
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
        p.apply_to(&mut i);
        i
    }

    /// 0.02 CPU-s of stated application CPU beside 1 + 2 ms of measured OS costs: 87 % stated,
    /// by construction; with no application CPU the CPU prediction is all measured.
    #[test]
    fn a_cpu_prediction_made_of_the_profiles_own_cpu_is_by_construction() {
        let src = "[app]\nname = \"t\"\nunit = \"f\"\ntarget_rate = 1\n[demand]\nnet_rx_mb = 1\ndisk_write_mb = 1\napp_cpu_s = 0.02\n";
        let p = Profile::parse("p", src).unwrap();
        let b = basis(&predict(&p, &inputs(&p)), "cpu").unwrap();
        assert!((b.stated_share - 0.02 / 0.023).abs() < 1e-9, "{b:?}");
        assert!(b.by_construction() && b.text().starts_with("BY CONSTRUCTION"));

        let p = Profile::parse("p", &src.replace("app_cpu_s = 0.02", "app_cpu_s = 0")).unwrap();
        let b = basis(&predict(&p, &inputs(&p)), "cpu").unwrap();
        assert!(!b.by_construction(), "{b:?}");
        assert!(b.stated_share < 1e-12, "{b:?}");
    }

    /// Memory demand made mostly of assumed copy counts is by construction; a stated link
    /// capacity makes the whole link prediction stated.
    #[test]
    fn assumed_copy_counts_and_stated_capacities_are_stated() {
        let src = "[app]\nname = \"t\"\nunit = \"f\"\ntarget_rate = 1\n[demand]\nnet_rx_mb = 1\n[capacity]\nnet_link_mb_s = 125\n";
        let p = Profile::parse("p", src).unwrap();
        let pr = predict(&p, &inputs(&p));
        let m = basis(&pr, "memory").unwrap();
        assert!(m.by_construction(), "{m:?}");
        let n = basis(&pr, "net_rx").unwrap();
        assert_eq!(n.stated_share, 1.0);
        assert!(basis(&pr, "display").is_none());
    }
}
