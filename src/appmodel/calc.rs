//! The calculator: per-unit demand × per-run capacities → service demand per resource, then the
//! operational laws (Denning & Buzen): utilisation U_r(X) = F_r + X·S_r, maximum rate
//! X_max = min_r (1 − F_r)/S_r (the bottleneck is the argmin), rate at the ceiling
//! X_ρ = min_r (ρ − F_r)/S_r. S_r is the fraction of resource r one unit per second takes.
//! Pure: no I/O. A missing input drops its part (or its whole resource) and marks the prediction
//! an upper bound; nothing is filled in.
//!
//! Besides the machine's resources, a serial stage is one: the activities the profile's
//! `demand.one_thread` lists are carried by ONE thread of the application, so their own-thread
//! CPU per unit (the suites' thread-CPU figures) is served at most one CPU-second per second
//! however many CPUs there are — resource "thread", capacity 1, background the CPU's.

use std::collections::BTreeSet;

use serde::Serialize;

use super::inputs::{Inputs, Origin};
use super::profile::{Profile, QOS_KEYS};

#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub label: String,
    /// In the resource's demand unit (`ResourceCalc::unit`), or…
    pub amount: Option<f64>,
    /// …directly as a fraction of the capacity per unit/s (published per-unit figures).
    pub fraction: Option<f64>,
    pub source: String,
    pub assumed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResourceCalc {
    pub resource: &'static str,
    pub title: &'static str,
    /// Demand unit: "CPU-s", "MB", "disk-s".
    pub unit: &'static str,
    pub parts: Vec<Part>,
    /// Demand per unit (sum of the absolute parts), in `unit`.
    pub demand: f64,
    /// Capacity per second, in `unit`/s; None when not needed (all parts direct) or missing.
    pub capacity: Option<f64>,
    pub capacity_source: Option<String>,
    /// Service demand: fraction of the capacity one unit/s takes. None: cannot be computed.
    pub s: Option<f64>,
    pub background: f64,
    pub util_at_target: Option<f64>,
    /// Rate at which this resource saturates, (1 − F)/S.
    pub x_sat: Option<f64>,
    /// Inputs missing for this resource (its S is then a lower bound, or unknown).
    pub missing: Vec<String>,
    /// CPU only, when the application's CPU is its memory traffic's floor: S when every core
    /// moves memory at once, so each gets only its share of the all-thread bandwidth
    /// (`mem_bw_mb_s / cpus` instead of one core's `mem_bw_1t_mb_s`). The measured CPU lies
    /// between `s` (no two cores copy at the same moment) and this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s_contended: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QosCheck {
    pub key: String,
    pub what: String,
    pub limit: f64,
    pub measured: Option<f64>,
    pub source: String,
    /// None: not measured.
    pub pass: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    pub name: String,
    pub os: String,
    pub unit: String,
    pub target_rate: f64,
    pub ceiling: f64,
    pub resources: Vec<ResourceCalc>,
    pub x_max: Option<f64>,
    pub bottleneck: Option<String>,
    pub next_bottleneck: Option<String>,
    pub x_ceiling: Option<f64>,
    /// X_max with the bottleneck's capacity +10 %, and the relative gain.
    pub x_max_plus10: Option<f64>,
    pub gain_plus10: Option<f64>,
    /// Some input was missing: X_max is an upper bound.
    pub upper_bound: bool,
    /// Missing input key → why.
    pub missing: Vec<(String, String)>,
    /// Assumed or stated inputs used (flagged).
    pub flagged: Vec<(String, String)>,
    /// What the calculation changed or could not check (e.g. the application's CPU raised to
    /// the time its memory traffic keeps a core busy).
    pub notes: Vec<String>,
    /// Where inputs a benchmark measures are absent: the `osgauge micro` command that measures
    /// every benchmark input this prediction reads in one run ([`inputs::measure_command`]).
    ///
    /// [`inputs::measure_command`]: super::inputs::measure_command
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_measure: Option<String>,
    pub qos: Vec<QosCheck>,
    /// target_rate ≤ x_ceiling (None when no rate could be predicted).
    pub target_ok: Option<bool>,
}

impl Prediction {
    pub fn resource(&self, r: &str) -> Option<&ResourceCalc> {
        self.resources.iter().find(|x| x.resource == r)
    }
    /// Utilisation of `r` at rate `x` (fraction).
    pub fn util_at(&self, r: &str, x: f64) -> Option<f64> {
        let rc = self.resource(r)?;
        rc.s.map(|s| rc.background + x * s)
    }
}

/// One prediction being built: the inputs read (each recorded as used, flagged or missing) and
/// the notes on what the calculation changed or could not check.
struct Builder<'a> {
    p: &'a Profile,
    inp: &'a Inputs,
    missing: Vec<(String, String)>,
    flagged: Vec<(String, String)>,
    /// Every key asked for, present or not.
    read: BTreeSet<String>,
    notes: Vec<String>,
}

/// The part a relay's figures price (`demand.disk_io = "relay"`): the receive and the write of
/// each byte on one thread, measured together.
const RELAY_LABEL: &str = "network receive → disk write, one thread (relayed)";

impl Builder<'_> {
    /// Input value, recording use (flagged) or absence (missing, reason `for_what`).
    fn get(&mut self, key: &str, missing_list: &mut Vec<String>) -> Option<f64> {
        self.read.insert(key.to_string());
        match self.inp.values.get(key) {
            Some(v) => {
                if matches!(v.origin, Origin::Assumed | Origin::Stated)
                    && !self.flagged.iter().any(|(k, _)| k == key)
                {
                    self.flagged.push((key.to_string(), v.source.clone()));
                }
                Some(v.value)
            }
            None => {
                let why = self
                    .inp
                    .missing
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| "no source for it in these inputs".into());
                if !self.missing.iter().any(|(k, _)| k == key) {
                    self.missing.push((key.to_string(), why));
                }
                missing_list.push(key.to_string());
                None
            }
        }
    }
    fn src(&self, key: &str) -> String {
        self.inp
            .values
            .get(key)
            .map(|v| format!("{key} ← {}", v.source))
            .unwrap_or_else(|| key.to_string())
    }
    fn assumed(&self, key: &str) -> bool {
        self.inp
            .values
            .get(key)
            .is_some_and(|v| matches!(v.origin, Origin::Assumed | Origin::Stated))
    }
    /// The part `label` of a published total `key` (% of the resource per unit), when the
    /// inputs have one.
    fn published(&mut self, key: &str, label: &str, miss: &mut Vec<String>) -> Option<Part> {
        if !self.inp.values.contains_key(key) {
            return None;
        }
        let v = self.get(key, miss)?;
        Some(Part {
            label: label.into(),
            amount: None,
            fraction: Some(v / 100.0),
            source: self.src(key),
            assumed: false,
        })
    }
    /// One part per activity with traffic: its MB × the cost per MB `key` (in `unit` per MB).
    fn per_mb(
        &mut self,
        acts: &[(&str, f64, &str)],
        unit: &str,
        miss: &mut Vec<String>,
        parts: &mut Vec<Part>,
    ) {
        for &(label, mb, key) in acts {
            if mb > 0.0
                && let Some(k) = self.get(key, miss)
            {
                parts.push(part(
                    format!("{label} {} MB × {} {unit}/MB", fmt(mb), fmt(k)),
                    mb * k,
                    self.src(key),
                    self.assumed(key),
                ));
            }
        }
    }
    /// Capacity `key` of a resource and where it comes from, read only when it has demand.
    fn capacity(
        &mut self,
        needs: bool,
        key: &str,
        miss: &mut Vec<String>,
    ) -> (Option<f64>, Option<String>) {
        if needs {
            (self.get(key, miss), Some(self.src(key)))
        } else {
            (None, None)
        }
    }
}

fn part(label: String, amount: f64, source: String, assumed: bool) -> Part {
    Part {
        label,
        amount: Some(amount),
        fraction: None,
        source,
        assumed,
    }
}

/// Predict `profile` on `inputs`.
pub fn predict(p: &Profile, inp: &Inputs) -> Prediction {
    let mut b = Builder {
        p,
        inp,
        missing: Vec::new(),
        flagged: Vec::new(),
        read: BTreeSet::new(),
        notes: Vec::new(),
    };
    let mut resources = vec![b.cpu(), b.thread(), b.memory(), b.disk(), b.relay()];
    resources.extend(b.links());
    resources.push(b.display());
    // Drop resources with no demand at all.
    resources.retain(|r| !r.parts.is_empty() || !r.missing.is_empty());
    let laws = Laws::of(&resources, p);
    for r in resources.iter_mut() {
        r.util_at_target = r.s.map(|s| r.background + p.target_rate * s);
    }
    let qos = b.qos();
    let upper_bound = !b.missing.is_empty();
    if p.demand.app_mem_mb > 0.0 {
        // Read by the CPU floor (directly: its absence is a note, not a gap).
        b.read.insert("mem_bw_1t_mb_s".into());
        if p.demand.app_mem_triad_mb > 0.0 {
            b.read.insert("mem_bw_1t_triad_mb_s".into());
        }
    }
    let to_measure = super::inputs::measure_command(&b.read, inp);
    Prediction {
        name: inp.name.clone(),
        os: inp.os.clone(),
        unit: p.unit.clone(),
        target_rate: p.target_rate,
        ceiling: p.ceiling,
        resources,
        x_max: laws.x_max,
        bottleneck: laws.bottleneck,
        next_bottleneck: laws.next_bottleneck,
        x_ceiling: laws.x_ceiling,
        x_max_plus10: laws.x_max_plus10,
        gain_plus10: laws.gain_plus10,
        upper_bound,
        missing: b.missing,
        flagged: b.flagged,
        notes: b.notes,
        to_measure,
        qos,
        target_ok: laws.x_ceiling.map(|x| p.target_rate <= x),
    }
}

impl Builder<'_> {
    /// MB of frames copied per unit.
    fn frame_mb(&self) -> f64 {
        self.p.demand.frames * self.p.demand.frame_mb
    }

    /// CPU (CPU-seconds per unit; capacity = logical CPUs).
    fn cpu(&mut self) -> ResourceCalc {
        let (p, d) = (self.p, &self.p.demand);
        let mut miss = Vec::new();
        let mut parts = Vec::new();
        let floor = app_cpu_parts(d, self.inp, &mut parts, &mut self.notes);
        if let Some(pub_part) = self.published(
            "os_cpu_pct_per_unit",
            "OS work per unit (published total)",
            &mut miss,
        ) {
            parts.push(pub_part);
        } else {
            self.os_cpu_parts(&mut miss, &mut parts);
        }
        let needs_cap = parts.iter().any(|x| x.amount.is_some());
        let (cap, cap_src) = self.capacity(needs_cap, "cpus", &mut miss);
        let mut cpu = finish(
            "cpu", "CPU", "CPU-s", parts, cap, cap_src, needs_cap, miss, p,
        );
        self.memory_contention(&mut cpu, floor, cap);
        cpu
    }

    /// The OS's CPU work per unit from the measured costs: per MB of each activity (network
    /// receive and send, disk write and read — a relay's receive and write together —, frame
    /// copies) and per event (connections, system calls, context switches).
    fn os_cpu_parts(&mut self, miss: &mut Vec<String>, parts: &mut Vec<Part>) {
        let d = &self.p.demand;
        let fv = d.frame_pacing.as_str();
        let rx_key = if d.net_protocol == "udp" {
            "net_rx_cpu_s_per_mb_udp"
        } else {
            "net_rx_cpu_s_per_mb_tcp"
        };
        let w_key = d.disk_key("write", "cpu_s_per_mb");
        let r_key = d.disk_key("read", "cpu_s_per_mb");
        let f_key = format!("frame_copy_cpu_s_per_mb_{fv}");
        // A relay's CPU figure is the receive's and the write's together.
        let relay = d.disk_io == "relay";
        let acts = [
            (
                "network receive",
                if relay { 0.0 } else { d.net_rx_mb },
                rx_key,
            ),
            ("network send", d.net_tx_mb, "net_tx_cpu_s_per_mb"),
            (
                if relay { RELAY_LABEL } else { "disk write" },
                d.disk_write_mb,
                &w_key,
            ),
            ("disk read", d.disk_read_mb, &r_key),
            ("frame copy", self.frame_mb(), &f_key),
        ];
        self.per_mb(&acts, "CPU-s", miss, parts);
        let per_event = [
            (
                d.connections,
                "TCP connection(s) set up and closed",
                "net_conn_cpu_s",
                1.0,
                1e6,
            ),
            (d.syscalls, "system calls", "syscall_us", 1e-6, 1.0),
            (
                d.context_switches,
                "context switches",
                "ctx_switch_us",
                1e-6,
                1.0,
            ),
        ];
        for (n, what, key, secs_per_value, us_per_value) in per_event {
            if n > 0.0
                && let Some(v) = self.get(key, miss)
            {
                parts.push(part(
                    format!("{} {what} × {} µs", fmt(n), fmt(v * us_per_value)),
                    n * v * secs_per_value,
                    self.src(key),
                    false,
                ));
            }
        }
    }

    /// Memory contention: when every core moves memory at once each gets 1/cpus of the
    /// all-thread bandwidth; where that makes the application's memory traffic (its CPU floor
    /// `floor`, CPU-s per unit) take longer, `cpu` gets the contended CPU per unit and a note.
    /// `cap`: the logical CPUs.
    fn memory_contention(&mut self, cpu: &mut ResourceCalc, floor: Option<f64>, cap: Option<f64>) {
        let (p, d) = (self.p, &self.p.demand);
        let t = d.app_mem_triad_mb;
        let n = cap.filter(|c| *c > 0.0);
        let share = |key: &str| self.inp.get(key).zip(n).map(|(b, n)| b / n);
        let contended =
            share("mem_bw_mb_s").and_then(|c| traffic_s(d, c, share("mem_bw_triad_mb_s")));
        if let (Some(f), Some(s), Some(n), Some(contended)) = (floor, cpu.s, n, contended)
            && contended > f
        {
            let sc = s + (contended - f) / n;
            cpu.s_contended = Some(sc);
            self.notes.push(format!(
                "Memory contention: when every core moves memory at once each gets 1/cpus of the all-thread bandwidth — {} MB/s for this traffic{}, not one core's {} MB/s — and the application's CPU per unit grows to {} CPU-s — CPU utilisation at the target {} % instead of {} %, the CPU saturating at {} instead of {} {}/s. The measured CPU lies between the two; which end depends on how often the cores copy at the same moment.",
                fmt(d.app_mem_mb / contended),
                if t > 0.0 {
                    " (mem_bw_mb_s / cpus for its copy-like part, mem_bw_triad_mb_s / cpus for its triad-like part)"
                } else {
                    " (mem_bw_mb_s / cpus)"
                },
                fmt(d.app_mem_mb / f),
                fmt(contended),
                fmt((cpu.background + p.target_rate * sc) * 100.0),
                fmt((cpu.background + p.target_rate * s) * 100.0),
                fmt(((1.0 - cpu.background) / sc).max(0.0)),
                cpu.x_sat.map_or("—".into(), fmt),
                p.unit
            ));
        }
    }

    /// One thread (a serial stage): the own-thread CPU-seconds per unit of the activities
    /// `demand.one_thread` lists — each activity's MB × its thread-CPU cost per MB, and "app"
    /// the application's own CPU (as the CPU resource counts it: app_cpu_s, or app_cpu_pct of
    /// all CPUs, never below its memory traffic at one core's copy rate). Capacity: one
    /// CPU-second per second. No resource when the profile lists no activity.
    fn thread(&mut self) -> ResourceCalc {
        let (p, d) = (self.p, &self.p.demand);
        let mut miss = Vec::new();
        let mut parts = Vec::new();
        let relay = d.disk_io == "relay";
        for act in &d.one_thread {
            let (label, mb, key) = match act.as_str() {
                // A relay's thread figure is the receive's and the write's together.
                "net_rx" if relay => continue,
                "disk_write" if relay => (
                    RELAY_LABEL,
                    d.disk_write_mb,
                    d.disk_key("write", "thread_cpu_s_per_mb"),
                ),
                "net_rx" => (
                    "network receive",
                    d.net_rx_mb,
                    format!("net_rx_thread_cpu_s_per_mb_{}", d.net_protocol),
                ),
                "net_tx" => (
                    "network send",
                    d.net_tx_mb,
                    "net_tx_thread_cpu_s_per_mb".to_string(),
                ),
                "disk_write" => (
                    "disk write",
                    d.disk_write_mb,
                    d.disk_key("write", "thread_cpu_s_per_mb"),
                ),
                "disk_read" => (
                    "disk read",
                    d.disk_read_mb,
                    d.disk_key("read", "thread_cpu_s_per_mb"),
                ),
                _ => {
                    self.app_on_thread(&mut miss, &mut parts);
                    continue;
                }
            };
            if mb <= 0.0 {
                self.notes.push(format!(
                    "demand.one_thread lists {act}, but the profile has no {label} per unit: nothing of it is on the thread."
                ));
                continue;
            }
            if super::inputs::spec(&key).is_none() {
                // No suite measures it (a UDP receiving thread): missing, with the reason.
                self.read.insert(key.clone());
                if !self.missing.iter().any(|(k, _)| *k == key) {
                    self.missing.push((
                        key.clone(),
                        format!(
                            "no benchmark measures a {label} thread's own CPU over {} (net/tcp_stream does, over TCP)",
                            d.net_protocol.to_uppercase()
                        ),
                    ));
                }
                miss.push(key);
                continue;
            }
            self.per_mb(&[(label, mb, &key)], "CPU-s", &mut miss, &mut parts);
        }
        if relay && !d.one_thread.is_empty() {
            self.relay_alternation_note();
        }
        let needs = parts.iter().any(|x| x.amount.is_some());
        finish(
            "thread",
            "One thread (serial stage)",
            "CPU-s",
            parts,
            needs.then_some(1.0),
            needs.then(|| {
                "one thread runs on one CPU at a time: 1 CPU-second per second".to_string()
            }),
            needs,
            miss,
            p,
        )
    }

    /// Where the run also measured a relay's two parts apart, what alternating them on one
    /// thread costs: the relay's thread CPU against a receiving thread's plus a streaming
    /// writer's (a note; neither part is read for the prediction).
    fn relay_alternation_note(&mut self) {
        // Read, so that a fresh run (`model check --measure`) measures the parts too.
        self.read.insert("net_rx_thread_cpu_s_per_mb_tcp".into());
        self.read
            .insert("disk_stream_write_thread_cpu_s_per_mb".into());
        let get = |k: &str| self.inp.values.get(k).filter(|v| v.value > 0.0);
        if let (Some(r), Some(rx), Some(w)) = (
            get("disk_relay_thread_cpu_s_per_mb"),
            get("net_rx_thread_cpu_s_per_mb_tcp"),
            get("disk_stream_write_thread_cpu_s_per_mb"),
        ) {
            let sum = rx.value + w.value;
            self.notes.push(format!(
                "One thread relaying costs {}× its parts measured apart here: {} CPU-s/MB on the relaying thread against a receiving thread's {} ({}) + a streaming writer's {} ({}) = {} — what alternating a receive and a write on one thread, and writing what each receive returned (so writes can start mid-page — fs/stream_from_tcp's fact mid_page_write_share says how many did; the streaming writer's calls are page-aligned), cost on this machine, inside the relay's figure and so in the prediction.",
                fmt(r.value / sum),
                fmt(r.value),
                fmt(rx.value),
                rx.source,
                fmt(w.value),
                w.source,
                fmt(sum)
            ));
        }
    }

    /// The application's own CPU per unit on the serial stage's thread ("app" in
    /// `demand.one_thread`): what the CPU resource counts for it.
    fn app_on_thread(&mut self, miss: &mut Vec<String>, parts: &mut Vec<Part>) {
        let d = &self.p.demand;
        let (stated, source) = match (d.app_cpu_s, d.app_cpu_pct) {
            (Some(c), _) => (c, "profile demand.app_cpu_s".to_string()),
            (None, Some(pct)) => match self.get("cpus", miss) {
                Some(n) => (
                    pct / 100.0 * n,
                    format!("profile demand.app_cpu_pct × {}", self.src("cpus")),
                ),
                None => return,
            },
            (None, None) => (0.0, "profile demand.app_cpu_s".to_string()),
        };
        let floor = if d.app_mem_mb > 0.0 {
            self.read.insert("mem_bw_1t_mb_s".into());
            if d.app_mem_triad_mb > 0.0 {
                self.read.insert("mem_bw_1t_triad_mb_s".into());
            }
            one_core_traffic(d, self.inp).ok()
        } else {
            None
        };
        let (v, label, source) = match floor {
            Some((f, rates, src)) if f > stated => (
                f,
                format!(
                    "application logic: its {} MB of memory traffic at {rates}",
                    fmt(d.app_mem_mb)
                ),
                format!("profile demand.app_mem_mb ÷ {src} (floor)"),
            ),
            _ => (stated, "application logic".to_string(), source),
        };
        if v > 0.0 {
            parts.push(part(label, v, source, false));
        } else {
            self.notes.push(
                "demand.one_thread lists app, but the profile states no application CPU: nothing of it is on the thread."
                    .into(),
            );
        }
    }

    /// Memory (MB of traffic per unit, STREAM convention; capacity = memory bandwidth).
    fn memory(&mut self) -> ResourceCalc {
        let d = &self.p.demand;
        let mut miss = Vec::new();
        let mut parts = Vec::new();
        if d.app_mem_mb > 0.0 {
            // Of it, what kernels that read two arrays and write one move: they stream at the
            // triad rate, not the copy rate the capacity is, so they count as that many MB at
            // the copy rate (stress-ng's STREAM pass: 6 of its 10 arrays' traffic).
            let triad = d.app_mem_triad_mb;
            let copy_like = d.app_mem_mb - triad;
            if copy_like > 0.0 {
                parts.push(part(
                    "application logic".into(),
                    copy_like,
                    if triad > 0.0 {
                        "profile demand.app_mem_mb − app_mem_triad_mb (at the copy rate)".into()
                    } else {
                        "profile demand.app_mem_mb".into()
                    },
                    false,
                ));
            }
            if triad > 0.0 {
                let rates = (
                    self.get("mem_bw_mb_s", &mut miss),
                    self.get("mem_bw_triad_mb_s", &mut miss),
                );
                if let (Some(copy), Some(tri)) = rates
                    && copy > 0.0
                    && tri > 0.0
                {
                    parts.push(part(
                        format!(
                            "application logic, two arrays read and one written: {} MB at the triad rate {} MB/s = this many MB at the copy rate {} MB/s",
                            fmt(triad),
                            fmt(tri),
                            fmt(copy)
                        ),
                        triad * copy / tri,
                        format!(
                            "profile demand.app_mem_triad_mb × {} ÷ {}",
                            self.src("mem_bw_mb_s"),
                            self.src("mem_bw_triad_mb_s")
                        ),
                        false,
                    ));
                } else if let (Some(_), Some(_)) = rates {
                    // A rate of 0 prices nothing: the triad traffic is a gap, not dropped.
                    let key = "mem_bw_triad_mb_s";
                    let why = "a copy or triad rate of 0 in these inputs".to_string();
                    self.missing.push((key.into(), why));
                    miss.push(key.into());
                }
            }
        }
        if self.inp.values.contains_key("os_mem_mb_per_unit") {
            let v = self.get("os_mem_mb_per_unit", &mut miss).unwrap();
            parts.push(part(
                "OS work per unit (published total)".into(),
                v,
                self.src("os_mem_mb_per_unit"),
                false,
            ));
        } else {
            let acts = [
                ("network receive", d.net_rx_mb, "net_rx_mem_per_mb"),
                ("network send", d.net_tx_mb, "net_tx_mem_per_mb"),
                ("disk write", d.disk_write_mb, "disk_write_mem_per_mb"),
                ("disk read", d.disk_read_mb, "disk_read_mem_per_mb"),
                ("frame copy", self.frame_mb(), "frame_mem_per_mb"),
            ];
            self.per_mb(&acts, "MB", &mut miss, &mut parts);
        }
        let needs = !parts.is_empty();
        let (cap, cap_src) = self.capacity(needs, "mem_bw_mb_s", &mut miss);
        finish(
            "memory",
            "Memory bandwidth",
            "MB",
            parts,
            cap,
            cap_src,
            needs,
            miss,
            self.p,
        )
    }

    /// Disk (disk-seconds per unit: MB / bandwidth of the profile's thread count; capacity 1).
    fn disk(&mut self) -> ResourceCalc {
        let d = &self.p.demand;
        let t = d.disk_threads;
        let mut miss = Vec::new();
        let mut parts = Vec::new();
        if let Some(pub_part) = self.published(
            "disk_pct_per_unit",
            "disk I/O per unit (published)",
            &mut miss,
        ) {
            parts.push(pub_part);
        } else {
            for (label, mb, key) in [
                ("write", d.disk_write_mb, d.disk_key("write", "mb_s")),
                ("read", d.disk_read_mb, d.disk_key("read", "mb_s")),
            ] {
                if mb > 0.0
                    && let Some(bw) = self.get(&key, &mut miss)
                    && bw > 0.0
                {
                    parts.push(part(
                        format!(
                            "{label} {} MB at {} MB/s ({t} thread(s){})",
                            fmt(mb),
                            fmt(bw),
                            match d.disk_io.as_str() {
                                "buffered" => ", through the OS cache, fsynced",
                                "stream" | "relay" =>
                                    ": a stream through the OS cache, bounded by the device's \
                                     cache-bypassed rate (its writeback runs alongside the writes)",
                                _ => "",
                            }
                        ),
                        mb / bw,
                        self.src(&key),
                        false,
                    ));
                }
            }
        }
        let needs = parts.iter().any(|x| x.amount.is_some());
        let any = d.disk_write_mb + d.disk_read_mb > 0.0 || !parts.is_empty();
        finish(
            "disk",
            "Disk",
            "disk-s",
            parts,
            needs.then_some(1.0),
            needs.then(|| "1 disk-second per second".to_string()),
            any && needs,
            miss,
            self.p,
        )
    }

    /// A relay measured whole (`demand.disk_io = "relay"`; MB per unit, capacity = the suite's
    /// relay rate, fs/stream_from_tcp mb_per_s): a sender, a thread that receives and writes, and
    /// the writeback share the CPUs and wait on one another, so the service as a whole may top
    /// out before any one resource is busy — as a network link's capacity is its measured
    /// stream rate, the relay's is its own.
    fn relay(&mut self) -> ResourceCalc {
        let d = &self.p.demand;
        let mb = if d.disk_io == "relay" {
            d.disk_write_mb
        } else {
            0.0
        };
        self.mb_resource(
            "relay",
            "Network-to-disk relay (measured whole)",
            format!(
                "{} MB received over TCP and written to a file by one thread",
                fmt(mb)
            ),
            mb,
            "disk_relay_mb_s",
        )
    }

    /// A resource that carries `mb` MB per unit (its one part, `label`) at the capacity
    /// `cap_key` (MB/s).
    fn mb_resource(
        &mut self,
        res: &'static str,
        title: &'static str,
        label: String,
        mb: f64,
        cap_key: &str,
    ) -> ResourceCalc {
        let mut miss = Vec::new();
        let mut parts = Vec::new();
        if mb > 0.0 {
            parts.push(part(label, mb, "profile demand".into(), false));
        }
        let (cap, cap_src) = self.capacity(mb > 0.0, cap_key, &mut miss);
        finish(
            res,
            title,
            "MB",
            parts,
            cap,
            cap_src,
            mb > 0.0,
            miss,
            self.p,
        )
    }

    /// Network receive / send links (MB per unit; capacity = link MB/s).
    fn links(&mut self) -> [ResourceCalc; 2] {
        let d = &self.p.demand;
        [
            ("net_rx", "Network receive", d.net_rx_mb),
            ("net_tx", "Network send", d.net_tx_mb),
        ]
        .map(|(res, title, mb)| {
            self.mb_resource(res, title, format!("{} MB", fmt(mb)), mb, "net_link_mb_s")
        })
    }

    /// Display upload link (MB per unit).
    fn display(&mut self) -> ResourceCalc {
        let d = &self.p.demand;
        let frame_mb = self.frame_mb();
        let mut miss = Vec::new();
        let mut parts = Vec::new();
        let mut needs = false;
        if let Some(pub_part) = self.published(
            "display_pct_per_unit",
            "display upload per unit (published)",
            &mut miss,
        ) {
            parts.push(pub_part);
        } else if frame_mb > 0.0 {
            parts.push(part(
                format!("{} frame(s) × {} MB", fmt(d.frames), fmt(d.frame_mb)),
                frame_mb,
                "profile demand".into(),
                false,
            ));
            needs = true;
        }
        let (cap, cap_src) = self.capacity(needs, "display_link_mb_s", &mut miss);
        finish(
            "display",
            "Display upload",
            "MB",
            parts,
            cap,
            cap_src,
            needs,
            miss,
            self.p,
        )
    }

    /// The profile's QoS limits against the inputs' latency figures.
    fn qos(&mut self) -> Vec<QosCheck> {
        let (p, inp) = (self.p, self.inp);
        let fv = p.demand.frame_pacing.as_str();
        let mut qos = Vec::new();
        for q in QOS_KEYS {
            let Some(limit) = p.qos.get(q.key) else {
                continue;
            };
            let key = if q.input.starts_with("frame_") {
                format!("{}_{fv}", q.input)
            } else {
                q.input.to_string()
            };
            let v = inp.values.get(&key);
            self.read.insert(key.clone());
            qos.push(QosCheck {
                key: q.key.to_string(),
                what: q.what.to_string(),
                limit: *limit,
                measured: v.map(|v| v.value),
                source: v
                    .map(|v| format!("{key} ← {}", v.source))
                    .unwrap_or_else(|| {
                        format!(
                            "{key}: {}",
                            inp.missing
                                .get(&key)
                                .map_or("no source in these inputs", |s| s)
                        )
                    }),
                pass: v.map(|v| v.value <= *limit),
            });
        }
        qos
    }
}

/// The operational laws over the resources.
struct Laws {
    /// X_max = min (1 − F)/S, and the resource it is reached at.
    x_max: Option<f64>,
    bottleneck: Option<String>,
    next_bottleneck: Option<String>,
    /// The rate at the utilisation ceiling ρ: min (ρ − F)/S.
    x_ceiling: Option<f64>,
    /// X_max with the bottleneck's capacity +10 % (then the next one may limit), and the gain.
    x_max_plus10: Option<f64>,
    gain_plus10: Option<f64>,
}

impl Laws {
    fn of(resources: &[ResourceCalc], p: &Profile) -> Laws {
        let mut sat: Vec<(f64, &str)> = resources
            .iter()
            .filter_map(|r| r.x_sat.map(|x| (x, r.resource)))
            .collect();
        sat.sort_by(|a, b| a.0.total_cmp(&b.0));
        let x_max = sat.first().map(|s| s.0);
        let x_ceiling = resources
            .iter()
            .filter_map(|r| {
                r.s.filter(|s| *s > 0.0)
                    .map(|s| ((p.ceiling - r.background) / s).max(0.0))
            })
            .min_by(f64::total_cmp);
        let x_max_plus10 = sat.first().map(|(x, _)| {
            let boosted = x * 1.1;
            sat.get(1).map_or(boosted, |n| boosted.min(n.0))
        });
        let gain_plus10 = match (x_max, x_max_plus10) {
            (Some(a), Some(b)) if a > 0.0 => Some(b / a - 1.0),
            _ => None,
        };
        Laws {
            x_max,
            bottleneck: sat.first().map(|s| s.1.to_string()),
            next_bottleneck: sat.get(1).map(|s| s.1.to_string()),
            x_ceiling,
            x_max_plus10,
            gain_plus10,
        }
    }
}

/// Seconds to move the application's memory traffic at `copy` MB/s, the part in
/// `app_mem_triad_mb` at `triad` MB/s (kernels that read two arrays and write one). None: a rate
/// the traffic needs is missing or not positive.
fn traffic_s(d: &super::profile::Demand, copy: f64, triad: Option<f64>) -> Option<f64> {
    let t = d.app_mem_triad_mb;
    let tri = if t > 0.0 {
        t / triad.filter(|r| *r > 0.0)?
    } else {
        0.0
    };
    (copy > 0.0).then(|| (d.app_mem_mb - t) / copy + tri)
}

/// One core moving the application's memory traffic alone: its copy-like MB at one core's copy
/// rate, its `app_mem_triad_mb` (kernels that read two arrays and write one, which stream
/// faster) at one core's triad rate. Ok: (CPU-s per unit, the rates in words, their sources);
/// Err: the rate that is missing or not positive, and why.
fn one_core_traffic(
    d: &super::profile::Demand,
    inp: &Inputs,
) -> Result<(f64, String, String), (String, String)> {
    let rate = |k: &str| {
        inp.values.get(k).filter(|v| v.value > 0.0).ok_or_else(|| {
            let why = inp
                .missing
                .get(k)
                .map_or("not in these inputs", |s| s.as_str());
            (k.to_string(), why.to_string())
        })
    };
    let copy = rate("mem_bw_1t_mb_s")?;
    let t = d.app_mem_triad_mb;
    let tri = if t > 0.0 {
        Some(rate("mem_bw_1t_triad_mb_s")?)
    } else {
        None
    };
    // Both rates are positive here, so the traffic has a time.
    let secs = traffic_s(d, copy.value, tri.map(|v| v.value))
        .ok_or_else(|| ("mem_bw_1t_mb_s".to_string(), "not positive".to_string()))?;
    let Some(tri) = tri else {
        return Ok((
            secs,
            format!("one core's copy rate {} MB/s", fmt(copy.value)),
            format!("mem_bw_1t_mb_s ← {}", copy.source),
        ));
    };
    Ok((
        secs,
        format!(
            "one core's copy rate {} MB/s ({} MB of it at one core's triad rate {} MB/s)",
            fmt(copy.value),
            fmt(t),
            fmt(tri.value)
        ),
        format!(
            "mem_bw_1t_mb_s ← {}; app_mem_triad_mb ÷ mem_bw_1t_triad_mb_s ← {}",
            copy.source, tri.source
        ),
    ))
}

/// The application's own CPU part. Its CPU per unit (`app_cpu_s`, or `app_cpu_pct` of all CPUs)
/// includes the time it spends moving its memory traffic (`app_mem_mb`), as a measured CPU time
/// does; a core that copies is a busy core, so that CPU cannot be less than the traffic at one
/// core's copy rate (`mem_bw_1t_mb_s`, STREAM convention). When the profile states less, the floor
/// is used and a note says so; when the copy rate is not in the inputs, the note says the check
/// could not be made (the stated figure is kept: it is the user's measurement, not a gap).
/// Returns the floor (CPU-s per unit) when it is used.
fn app_cpu_parts(
    d: &super::profile::Demand,
    inp: &Inputs,
    parts: &mut Vec<Part>,
    notes: &mut Vec<String>,
) -> Option<f64> {
    let cpus = inp.get("cpus").filter(|c| *c > 0.0);
    // The stated figure in CPU-seconds per unit, where it can be expressed so.
    let stated_s = match (d.app_cpu_s, d.app_cpu_pct) {
        (Some(c), _) => Some(c),
        (None, Some(pct)) => cpus.map(|n| pct / 100.0 * n),
        (None, None) => Some(0.0),
    };
    let floor = if d.app_mem_mb > 0.0 {
        match one_core_traffic(d, inp) {
            Ok(x) => Some(x),
            Err((key, why)) => {
                notes.push(format!(
                    "The application's CPU per unit is not checked against the time its {} MB of memory traffic keeps a core busy: no one-thread rate ({key}: {why}).",
                    fmt(d.app_mem_mb),
                ));
                None
            }
        }
    } else {
        None
    };
    if let (Some((f, rates, src)), Some(st)) = (floor, stated_s)
        && f > st
    {
        let stated = match (d.app_cpu_s, d.app_cpu_pct) {
            (Some(c), _) => format!("app_cpu_s {} CPU-s", fmt(c)),
            (None, Some(p)) => format!("app_cpu_pct {} % ({} CPU-s)", fmt(p), fmt(st)),
            (None, None) => "no application CPU".into(),
        };
        parts.push(part(
            format!(
                "application logic: its {} MB of memory traffic at {rates}",
                fmt(d.app_mem_mb),
            ),
            f,
            format!("profile demand.app_mem_mb ÷ {src} (floor; the profile states {stated})"),
            false,
        ));
        notes.push(format!(
            "The application's CPU per unit is raised from the profile's {stated} to {} CPU-s: moving its {} MB of memory traffic keeps a core busy that long at {rates} ({src}); a core that copies is a busy core.",
            fmt(f),
            fmt(d.app_mem_mb),
        ));
        return Some(f);
    }
    if let Some(c) = d.app_cpu_s {
        parts.push(part(
            "application logic".into(),
            c,
            "profile demand.app_cpu_s".into(),
            false,
        ));
    }
    if let Some(pct) = d.app_cpu_pct {
        parts.push(Part {
            label: "application logic".into(),
            amount: None,
            fraction: Some(pct / 100.0),
            source: "profile demand.app_cpu_pct".into(),
            assumed: false,
        });
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn finish(
    resource: &'static str,
    title: &'static str,
    unit: &'static str,
    parts: Vec<Part>,
    capacity: Option<f64>,
    capacity_source: Option<String>,
    needs_capacity: bool,
    missing: Vec<String>,
    p: &Profile,
) -> ResourceCalc {
    let demand: f64 = parts.iter().filter_map(|x| x.amount).sum();
    let frac: f64 = parts.iter().filter_map(|x| x.fraction).sum();
    let s = if needs_capacity {
        capacity.filter(|c| *c > 0.0).map(|c| demand / c + frac)
    } else if parts.is_empty() {
        None
    } else {
        Some(frac)
    };
    // A serial stage's thread runs on a CPU: it shares the CPUs' background load.
    let bg_of = if resource == "thread" {
        "cpu"
    } else {
        resource
    };
    let background = p.background.get(bg_of).copied().unwrap_or(0.0);
    let x_sat = s
        .filter(|s| *s > 0.0)
        .map(|s| ((1.0 - background) / s).max(0.0));
    ResourceCalc {
        resource,
        title,
        unit,
        parts,
        demand,
        capacity: capacity.filter(|_| needs_capacity),
        capacity_source,
        s,
        background,
        util_at_target: None,
        x_sat,
        missing,
        s_contended: None,
    }
}

/// Short number: up to 4 significant digits, no trailing zeros.
pub fn fmt(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appmodel::inputs::Value;
    fn inputs(vals: &[(&str, f64)]) -> Inputs {
        let mut i = Inputs::new("t", "test");
        for (k, v) in vals {
            i.values.insert(
                k.to_string(),
                Value {
                    value: *v,
                    origin: Origin::Measured,
                    source: "test".into(),
                },
            );
        }
        i
    }

    const PROFILE: &str = "[app]\nname = \"t\"\nunit = \"req\"\ntarget_rate = 100\nutilisation_ceiling = 0.5\n\
        [demand]\nnet_rx_mb = 1\ndisk_write_mb = 1\napp_cpu_s = 0.002\napp_mem_mb = 10\ncontext_switches = 100\n";

    /// Every input PROFILE needs, with the profile's assumptions applied.
    fn every_input(p: &Profile) -> Inputs {
        let mut i = inputs(&[
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("disk_write_cpu_s_per_mb_t1", 0.002),
            ("ctx_switch_us", 5.0),
            ("mem_bw_mb_s", 1000.0),
            ("disk_write_mb_s_t1", 200.0),
            ("net_link_mb_s", 125.0),
        ]);
        p.apply_to(&mut i);
        i
    }

    /// Hand-computed: CPU = 0.002 + 1 MB × 0.001 + 1 MB × 0.002 + 100 × 5 µs = 0.0055 CPU-s on
    /// 2 CPUs → S = 0.00275; memory = 10 + 3 + 3 = 16 MB at 1000 MB/s → S = 0.016; disk =
    /// 1 MB / 200 MB/s → S = 0.005; net rx = 1 MB / 125 MB/s → S = 0.008.
    #[test]
    fn hand_computed_service_demands_and_laws() {
        let p = Profile::parse("p", PROFILE).unwrap();
        let pr = predict(&p, &every_input(&p));
        let s = |r: &str| pr.resource(r).unwrap().s.unwrap();
        assert!((s("cpu") - 0.00275).abs() < 1e-12);
        assert!((s("memory") - 0.016).abs() < 1e-12);
        assert!((s("disk") - 0.005).abs() < 1e-12);
        assert!((s("net_rx") - 0.008).abs() < 1e-12);
        assert!((pr.x_max.unwrap() - 62.5).abs() < 1e-9);
        assert_eq!(pr.bottleneck.as_deref(), Some("memory"));
        assert_eq!(pr.next_bottleneck.as_deref(), Some("net_rx"));
        assert!((pr.x_ceiling.unwrap() - 31.25).abs() < 1e-9);
        // +10 % memory bandwidth: 68.75 (< net_rx's 125).
        assert!((pr.x_max_plus10.unwrap() - 68.75).abs() < 1e-9);
        assert!((pr.gain_plus10.unwrap() - 0.1).abs() < 1e-9);
        assert!((pr.resource("memory").unwrap().util_at_target.unwrap() - 1.6).abs() < 1e-12);
        assert_eq!(pr.target_ok, Some(false));
        assert!(!pr.upper_bound);
        // The copy-count assumptions are flagged.
        assert!(pr.flagged.iter().any(|(k, _)| k == "net_rx_mem_per_mb"));
    }

    #[test]
    fn missing_input_is_listed_and_marks_an_upper_bound() {
        let p = Profile::parse("p", PROFILE).unwrap();
        let mut i = inputs(&[
            ("cpus", 2.0),
            ("mem_bw_mb_s", 1000.0),
            ("net_link_mb_s", 125.0),
        ]);
        i.miss("disk_write_mb_s_t1", "fs/seq_write_t1 is not in this run");
        p.apply_to(&mut i);
        let pr = predict(&p, &i);
        assert!(pr.upper_bound);
        assert!(
            pr.missing
                .iter()
                .any(|(k, why)| k == "disk_write_mb_s_t1" && why.contains("not in this run"))
        );
        assert!(pr.resource("disk").unwrap().s.is_none());
        // Nothing was filled in: CPU has only the parts it could compute.
        let cpu = pr.resource("cpu").unwrap();
        assert!((cpu.demand - 0.002).abs() < 1e-12, "{}", cpu.demand);
    }

    /// An input a benchmark measures is absent: the prediction names the one `osgauge micro`
    /// run that measures every benchmark input it reads (each benchmark once, in the mapping
    /// table's order; no stated capacity, no CPU count); none when nothing is absent.
    #[test]
    fn a_prediction_missing_measured_inputs_names_the_run_that_measures_them() {
        let p = Profile::parse("examples/p.toml", PROFILE).unwrap();
        let mut i = every_input(&p);
        i.values.insert(
            "mem_bw_1t_mb_s".into(),
            Value {
                value: 16000.0,
                origin: Origin::Measured,
                source: "test".into(),
            },
        );
        assert_eq!(predict(&p, &i).to_measure, None);
        i.values.remove("disk_write_cpu_s_per_mb_t1");
        let cmd = predict(&p, &i).to_measure.expect("a command");
        assert_eq!(
            cmd,
            "osgauge micro mem/bandwidth_all mem/bandwidth_1t proc/ctx_switch_process_pinned \
             net/tcp_stream fs/seq_write_t1 --label model-inputs"
        );
        // The one-core copy rate is read for the CPU floor: its absence alone asks for it too.
        let mut j = every_input(&p);
        assert!(!j.values.contains_key("mem_bw_1t_mb_s"));
        assert!(predict(&p, &j).to_measure.is_some());
        // A publication's figures are never asked to be measured here: they are another
        // machine's measurements.
        let mut published = every_input(&p);
        published.values.remove("disk_write_cpu_s_per_mb_t1");
        for v in published.values.values_mut() {
            v.origin = Origin::Published;
        }
        assert_eq!(predict(&p, &published).to_measure, None);
        let text =
            crate::appmodel::render::text(&crate::appmodel::analyse(&p, vec![published], None));
        assert!(!text.contains("TO MEASURE"), "{text}");
        // The hint reaches the terminal output with the profile's file.
        j.values.remove("disk_write_cpu_s_per_mb_t1");
        let text = crate::appmodel::render::text(&crate::appmodel::analyse(&p, vec![j], None));
        assert!(
            text.contains("TO MEASURE what is missing: `osgauge micro ")
                && text.contains("then `osgauge model examples/p.toml model-inputs`"),
            "{text}"
        );
    }

    const MEMORY_BOUND: &str = "[app]\nname = \"m\"\nunit = \"op\"\ntarget_rate = 10\n\
        [demand]\napp_cpu_s = 0.0002\napp_mem_mb = 256\nnet_rx_mb = 1\n";

    /// Traffic of kernels that read two arrays and write one counts at the triad rate: of 256 MB,
    /// 156 at 24000 MB/s where the copy rate is 20000 are 130 MB at the copy rate, so the memory
    /// demand is 100 + 130 + 3 (the received MB's assumed copies) = 233 MB. Without the triad
    /// rate the prediction is an upper bound naming it.
    #[test]
    fn triad_traffic_counts_at_the_triad_rate() {
        let src = MEMORY_BOUND.replace(
            "app_mem_mb = 256\n",
            "app_mem_mb = 256\napp_mem_triad_mb = 156\n",
        );
        let p = Profile::parse("m", &src).unwrap();
        let rates = [
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("mem_bw_mb_s", 20000.0),
            ("mem_bw_1t_mb_s", 16000.0),
            ("net_link_mb_s", 1000.0),
        ];
        let mut i = inputs(&[rates.as_slice(), &[("mem_bw_triad_mb_s", 24000.0)]].concat());
        p.apply_to(&mut i);
        let pr = predict(&p, &i);
        let mem = pr.resource("memory").unwrap();
        assert!((mem.demand - 233.0).abs() < 1e-9, "{:?}", mem.parts);
        assert!(
            mem.parts
                .iter()
                .any(|x| x.source.contains("mem_bw_triad_mb_s"))
        );
        assert!(!pr.upper_bound);
        // Without one core's triad rate the CPU floor is not checked (said, naming it) ...
        assert!((pr.resource("cpu").unwrap().demand - 0.0012).abs() < 1e-12);
        assert!(
            pr.notes
                .iter()
                .any(|n| n.contains("not checked") && n.contains("mem_bw_1t_triad_mb_s")),
            "{:?}",
            pr.notes
        );
        // ... with it, the floor is 100 MB at 16000 MB/s + 156 at 19500 = 0.01425 CPU-s, and
        // + 1 MB received × 0.001 the CPU demand is 0.01525.
        let triads = [
            ("mem_bw_triad_mb_s", 24000.0),
            ("mem_bw_1t_triad_mb_s", 19500.0),
        ];
        let mut i = inputs(&[rates.as_slice(), &triads].concat());
        p.apply_to(&mut i);
        let pr = predict(&p, &i);
        assert!((pr.resource("cpu").unwrap().demand - 0.01525).abs() < 1e-12);
        // Every core at once: 100 MB at 20000 / 2 + 156 at 24000 / 2 = 0.023 CPU-s, so
        // S_contended = 0.01525 / 2 + (0.023 − 0.01425) / 2 = 0.012.
        let sc = pr.resource("cpu").unwrap().s_contended.unwrap();
        assert!((sc - 0.012).abs() < 1e-12, "{sc}");

        let mut i = inputs(&rates);
        i.miss(
            "mem_bw_triad_mb_s",
            "mem/bandwidth_all triad is not in this run",
        );
        p.apply_to(&mut i);
        let pr = predict(&p, &i);
        assert!(pr.upper_bound);
        assert!(
            pr.missing.iter().any(|(k, _)| k == "mem_bw_triad_mb_s"),
            "{:?}",
            pr.missing
        );

        // It is part of app_mem_mb, never more.
        let over = MEMORY_BOUND.replace(
            "app_mem_mb = 256\n",
            "app_mem_mb = 256\napp_mem_triad_mb = 300\n",
        );
        let e = Profile::parse("m", &over).unwrap_err().to_string();
        assert!(
            e.contains("app_mem_triad_mb") && e.contains("at most app_mem_mb"),
            "{e}"
        );
    }

    /// A core that copies is a busy core: 256 MB at one core's 16000 MB/s is 0.016 CPU-s, more
    /// than the stated 0.0002, so the CPU demand is 0.016 + 1 MB × 0.001 = 0.017 CPU-s on 2 CPUs
    /// → S = 0.0085. Every core copying at once gets 20000 / 2 = 10000 MB/s: 0.0256 CPU-s, so
    /// S_contended = 0.0085 + (0.0256 − 0.016) / 2 = 0.0133.
    #[test]
    fn memory_traffic_sets_a_cpu_floor_and_a_contended_end() {
        let p = Profile::parse("m", MEMORY_BOUND).unwrap();
        let mut i = inputs(&[
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("mem_bw_mb_s", 20000.0),
            ("mem_bw_1t_mb_s", 16000.0),
            ("net_link_mb_s", 1000.0),
        ]);
        p.apply_to(&mut i);
        let pr = predict(&p, &i);
        let cpu = pr.resource("cpu").unwrap();
        assert!((cpu.demand - 0.017).abs() < 1e-12, "{}", cpu.demand);
        assert!((cpu.s.unwrap() - 0.0085).abs() < 1e-12);
        assert!((cpu.s_contended.unwrap() - 0.0133).abs() < 1e-12);
        assert!(cpu.parts[0].source.contains("floor"), "{:?}", cpu.parts);
        assert!(pr.notes.iter().any(|n| n.contains("raised from")));
        assert!(pr.notes.iter().any(|n| n.contains("Memory contention")));
        // Memory: 256 + 4 (assumed copies of the 1 MB received) MB at 20000 MB/s.
        assert_eq!(pr.bottleneck.as_deref(), Some("memory"));
        assert!(!pr.upper_bound);

        // A stated CPU above the floor is kept, with no contention range.
        let src = MEMORY_BOUND.replace("app_cpu_s = 0.0002", "app_cpu_s = 0.05");
        let p = Profile::parse("m", &src).unwrap();
        let pr = predict(&p, &i);
        let cpu = pr.resource("cpu").unwrap();
        assert!((cpu.demand - 0.051).abs() < 1e-12, "{}", cpu.demand);
        assert!(cpu.s_contended.is_none() && pr.notes.is_empty());

        // Without a one-core copy rate the floor is not checked: said, not filled in, and not
        // an upper bound (the stated CPU is the user's own measurement).
        let mut i = inputs(&[
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("mem_bw_mb_s", 20000.0),
            ("net_link_mb_s", 1000.0),
        ]);
        i.miss("mem_bw_1t_mb_s", "mem/bandwidth_1t is not in this run");
        p.apply_to(&mut i);
        let pr = predict(&p, &i);
        assert!((pr.resource("cpu").unwrap().demand - 0.051).abs() < 1e-12);
        assert!(!pr.upper_bound);
        assert!(
            pr.notes
                .iter()
                .any(|n| n.contains("not checked") && n.contains("not in this run"))
        );
    }

    /// A request without keep-alive opens and closes a TCP connection: its measured CPU is a
    /// part of the CPU demand (a per-request cost the per-MB costs do not hold).
    /// System calls a profile counts are priced at the measured cheap I/O system call.
    #[test]
    fn syscalls_per_unit_cost_the_measured_system_call() {
        let src = PROFILE
            .to_string()
            .replace("context_switches = 100", "syscalls = 30");
        let p = Profile::parse("p", &src).unwrap();
        let mut i = every_input(&p);
        i.values.remove("syscall_us");
        assert!(predict(&p, &i).upper_bound, "no system call cost: missing");
        i.values.insert(
            "syscall_us".into(),
            Value {
                value: 0.5,
                origin: Origin::Measured,
                source: "test".into(),
            },
        );
        let pr = predict(&p, &i);
        let cpu = pr.resource("cpu").unwrap();
        // 0.002 + 1 MB × 0.001 + 1 MB × 0.002 + 30 × 0.5 µs.
        assert!((cpu.demand - 0.005015).abs() < 1e-12, "{}", cpu.demand);
        assert!(
            cpu.parts
                .iter()
                .any(|x| x.label.contains("30 system calls"))
        );
    }

    #[test]
    fn connections_per_unit_cost_their_measured_cpu() {
        let src = PROFILE
            .to_string()
            .replace("context_switches = 100", "connections = 2");
        let p = Profile::parse("p", &src).unwrap();
        let mut i = every_input(&p);
        assert!(predict(&p, &i).upper_bound, "no connection cost: missing");
        i.values.insert(
            "net_conn_cpu_s".into(),
            Value {
                value: 50e-6,
                origin: Origin::Measured,
                source: "test".into(),
            },
        );
        let pr = predict(&p, &i);
        let cpu = pr.resource("cpu").unwrap();
        // 0.002 + 1 MB × 0.001 + 1 MB × 0.002 + 2 × 50 µs.
        assert!((cpu.demand - 0.0051).abs() < 1e-12, "{}", cpu.demand);
        assert!(
            cpu.parts
                .iter()
                .any(|x| x.label.contains("2 TCP connection(s)"))
        );
        assert!(!pr.upper_bound);
    }

    const SERIAL: &str = "[app]\nname = \"s\"\nunit = \"MB\"\ntarget_rate = 100\nutilisation_ceiling = 0.5\n\
        [demand]\nnet_rx_mb = 1\ndisk_write_mb = 1\ndisk_io = \"buffered\"\napp_cpu_s = 0.0005\n\
        one_thread = [\"net_rx\", \"disk_write\", \"app\"]\n";

    fn serial_inputs(p: &Profile) -> Inputs {
        let mut i = inputs(&[
            ("cpus", 2.0),
            ("net_rx_cpu_s_per_mb_tcp", 0.001),
            ("disk_write_cpu_s_per_mb_buffered_t1", 0.0008),
            ("mem_bw_mb_s", 10000.0),
            ("disk_write_mb_s_buffered_t1", 2000.0),
            ("net_link_mb_s", 5000.0),
            ("net_rx_thread_cpu_s_per_mb_tcp", 0.0004),
            ("disk_write_thread_cpu_s_per_mb_buffered_t1", 0.0006),
        ]);
        p.apply_to(&mut i);
        i
    }

    /// Hand-computed: the CPU is 0.0005 + 1 MB × 0.001 + 1 MB × 0.0008 = 0.0023 CPU-s on 2 CPUs
    /// → S = 0.00115, saturating at 869.6 MB/s; but ONE thread carries 1 MB × 0.0004 (its own
    /// receive) + 1 MB × 0.0006 (its own write) + 0.0005 (the app) = 0.0015 CPU-s per MB on one
    /// CPU → S = 0.0015, saturating at 666.7 MB/s: the thread is the bottleneck, the CPUs next.
    /// Memory 6 MB at 10000 MB/s → 1666.7; disk 1/2000 → 2000; link 1/5000 → 5000.
    #[test]
    fn one_thread_is_a_resource_of_one_cpu_second_per_second() {
        let p = Profile::parse("s", SERIAL).unwrap();
        let pr = predict(&p, &serial_inputs(&p));
        let t = pr.resource("thread").expect("a thread resource");
        assert_eq!(t.title, "One thread (serial stage)");
        assert_eq!(t.unit, "CPU-s");
        assert_eq!(t.parts.len(), 3, "{:?}", t.parts);
        assert!((t.demand - 0.0015).abs() < 1e-12, "{}", t.demand);
        assert_eq!(t.capacity, Some(1.0));
        assert!((t.s.unwrap() - 0.0015).abs() < 1e-12);
        assert!((t.x_sat.unwrap() - 1.0 / 0.0015).abs() < 1e-9);
        assert!((pr.resource("cpu").unwrap().s.unwrap() - 0.00115).abs() < 1e-12);
        assert!((pr.x_max.unwrap() - 666.666_666_666).abs() < 1e-6);
        assert_eq!(pr.bottleneck.as_deref(), Some("thread"));
        assert_eq!(pr.next_bottleneck.as_deref(), Some("cpu"));
        assert!((pr.x_ceiling.unwrap() - 0.5 / 0.0015).abs() < 1e-9);
        // +10 % of one thread: 733.3, still below the CPUs' 869.6.
        assert!((pr.x_max_plus10.unwrap() - 1.1 / 0.0015).abs() < 1e-9);
        assert!((t.util_at_target.unwrap() - 0.15).abs() < 1e-12);
        assert!(!pr.upper_bound);
        // The app's part is stated: the thread's basis says so (a third of its demand).
        let b = crate::appmodel::construction::basis(&pr, "thread").unwrap();
        assert!((b.stated_share - 0.5 / 1.5).abs() < 1e-9, "{b:?}");
        // The thread shares the CPUs' background: (1 − 0.1) / 0.0015 = 600.
        let p = Profile::parse("s", &format!("{SERIAL}[background]\ncpu = 0.1\n")).unwrap();
        let pr = predict(&p, &serial_inputs(&p));
        let t = pr.resource("thread").unwrap();
        assert!((t.background - 0.1).abs() < 1e-12);
        assert!((pr.x_max.unwrap() - 600.0).abs() < 1e-9);
        // Shown wherever resources are listed.
        let text = crate::appmodel::render::text(&crate::appmodel::analyse(
            &p,
            vec![serial_inputs(&p)],
            None,
        ));
        assert!(
            text.contains("One thread (serial stage)") && text.contains("1 CPU (one thread)"),
            "{text}"
        );
        assert!(text.contains("bottleneck: thread"), "{text}");
    }

    #[test]
    fn a_serial_stage_missing_its_thread_figure_is_an_upper_bound() {
        let p = Profile::parse("s", SERIAL).unwrap();
        let mut i = serial_inputs(&p);
        i.values.remove("net_rx_thread_cpu_s_per_mb_tcp");
        i.miss(
            "net_rx_thread_cpu_s_per_mb_tcp",
            "net/tcp_stream rx_thread_us_per_kib: not measured: the peer (an older osgauge serve) does not report it",
        );
        let pr = predict(&p, &i);
        assert!(pr.upper_bound);
        assert!(
            pr.missing
                .iter()
                .any(|(k, why)| k == "net_rx_thread_cpu_s_per_mb_tcp" && why.contains("older"))
        );
        let t = pr.resource("thread").unwrap();
        assert_eq!(t.missing, ["net_rx_thread_cpu_s_per_mb_tcp"]);
        // Nothing filled in: the write and the app only.
        assert!((t.demand - 0.0011).abs() < 1e-12, "{}", t.demand);
        assert_eq!(
            pr.to_measure.as_deref(),
            Some(
                "osgauge micro mem/bandwidth_all net/tcp_stream fs/seq_write_t1 --label model-inputs"
            )
        );
        // UDP: no suite measures a receiving thread's CPU over UDP — missing, with the reason.
        let src = SERIAL
            .replace("net_rx_mb = 1", "net_rx_mb = 1\nnet_protocol = \"udp\"")
            .replace("[\"net_rx\", \"disk_write\", \"app\"]", "[\"net_rx\"]");
        let p = Profile::parse("s", &src).unwrap();
        let pr = predict(&p, &serial_inputs(&p));
        assert!(pr.upper_bound);
        assert!(
            pr.missing
                .iter()
                .any(|(k, why)| k == "net_rx_thread_cpu_s_per_mb_udp" && why.contains("over UDP")),
            "{:?}",
            pr.missing
        );
        // No serial stage stated: no thread resource at all.
        let src = SERIAL.replace("one_thread = [\"net_rx\", \"disk_write\", \"app\"]\n", "");
        let p = Profile::parse("s", &src).unwrap();
        assert!(predict(&p, &serial_inputs(&p)).resource("thread").is_none());
    }

    #[test]
    fn background_load_reduces_capacity() {
        let src = PROFILE.to_string() + "[background]\nmemory = 0.2\n";
        let p = Profile::parse("p", &src).unwrap();
        let pr = predict(&p, &every_input(&p));
        assert!((pr.x_max.unwrap() - 50.0).abs() < 1e-9); // (1 − 0.2) / 0.016
        assert!((pr.x_ceiling.unwrap() - 18.75).abs() < 1e-9); // (0.5 − 0.2) / 0.016
    }
}
