//! The application profile (TOML, written by the user): the unit of work, the target rate, the
//! per-unit demand, the QoS limits and the weighted requirement list. Every number is validated;
//! an error names the line and the key (`profile.toml:12: demand.net_rx_mb: must be ≥ 0`).
//!
//! ```toml
//! [app]
//! name = "imaging pipeline"
//! unit = "frame"
//! target_rate = 25            # units per second the application must sustain
//! utilisation_ceiling = 0.8   # plan for no resource above 80 %
//! inputs = "figures.toml"     # optional: published figures instead of stored runs
//! check = "nginx-static"     # optional: the real application `osgauge model check` drives
//!
//! [demand]                    # per unit, OS independent
//! net_rx_mb = 2.0             # MB (10^6 B) received over the network
//! net_tx_mb = 0.0             # MB sent
//! net_protocol = "tcp"        # "tcp" or "udp": whose receive cost is used
//! disk_write_mb = 2.0         # MB written to files (sequential)
//! disk_read_mb = 0.0          # MB read from files (sequential)
//! disk_threads = 1            # 1, 2 or 3 threads doing the file I/O
//! disk_io = "direct"          # "direct": the cache-bypassed figures (O_DIRECT); "buffered":
//!                             # through the OS cache, writes made durable (fsync) — whose
//!                             # file-system figures apply; "stream": one long stream written
//!                             # through the cache in small calls, made durable at its end
//!                             # (fs/stream_write; writes only, one thread); "relay": every
//!                             # byte received over TCP written to one file by the thread
//!                             # that received it, what each receive returned (as iperf3 -F,
//!                             # nc, socat) (fs/stream_from_tcp; net_rx_mb = disk_write_mb,
//!                             # one thread)
//! frames = 1                  # frames copied for presentation per unit
//! frame_mb = 2.0              # size of one frame, MB
//! frame_pacing = "60fps_1mp"  # which frame-pacing benchmark's figures apply ("60fps_1mp", "25fps_5mp")
//! app_cpu_s = 0.004           # the application's own CPU-seconds per unit (or app_cpu_pct),
//!                             # the time it spends moving app_mem_mb included (as a measured
//!                             # CPU time is); never taken below app_mem_mb at one core's copy rate
//!                             # (app_mem_triad_mb at its triad rate)
//! app_mem_mb = 125.0          # the application's own memory traffic per unit, MB read + written
//! app_mem_triad_mb = 0.0      # of app_mem_mb, what kernels that read two arrays and write one
//!                             # (STREAM add, triad) move: the memory law prices it at the
//!                             # triad rate (mem/bandwidth_all triad), the rest at the copy rate
//! context_switches = 10       # context switches per unit
//! syscalls = 28               # system calls per unit besides those moving the bytes (their cost
//!                             # is in the per-MB costs) and a connection's (in its cost), each
//!                             # priced as cpu/io_syscall; count them with `strace -c -f`
//! connections = 1             # TCP connections set up and closed per unit (no keep-alive: 1)
//! one_thread = ["net_rx", "disk_write"]  # the activities ONE thread of the application carries
//!                             # for each unit (a serial stage): of net_rx, net_tx, disk_write,
//!                             # disk_read, and "app" (app_cpu_s then runs on that thread too).
//!                             # That thread's own CPU per unit (the suites' thread-CPU figures)
//!                             # cannot exceed one CPU-second per second, however many CPUs
//!                             # there are: the "thread" resource of the laws
//!
//! [capacity]                  # capacities no benchmark measures, stated by the user (flagged)
//! display_link_mb_s = 6000
//!
//! [assumptions]               # memory traffic per MB of an activity (overrides the copy counts)
//! net_rx_mem_per_mb = 3.0
//!
//! [background]                # fixed load on a resource, fraction of its capacity
//! cpu = 0.05
//!
//! [qos]                       # limits checked against measured latency figures
//! net_loss_pct_max = 0.1
//! frame_p99_dev_ms_max = 8.0
//!
//! [[weights]]                 # the prioritised requirement list → 1–5 score table
//! subsystem = "Memory bandwidth"
//! weight = 26
//! input = "mem_bw_mb_s"       # an input key (`osgauge model --inputs`) or "max_rate"
//! require_min = 5000          # optional hard requirement (the gate)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::inputs::{self, Dir, Inputs, Origin, Source, Value};

type Num = Option<Spanned<f64>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    app: RawApp,
    #[serde(default)]
    demand: RawDemand,
    #[serde(default)]
    capacity: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    assumptions: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    background: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    qos: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    weights: Vec<RawWeight>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApp {
    name: String,
    unit: String,
    target_rate: Spanned<f64>,
    utilisation_ceiling: Num,
    inputs: Option<String>,
    description: Option<String>,
    check: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDemand {
    net_rx_mb: Num,
    net_tx_mb: Num,
    net_protocol: Option<Spanned<String>>,
    disk_write_mb: Num,
    disk_read_mb: Num,
    disk_threads: Option<Spanned<i64>>,
    disk_io: Option<Spanned<String>>,
    frames: Num,
    frame_mb: Num,
    frame_pacing: Option<Spanned<String>>,
    app_cpu_s: Num,
    app_cpu_pct: Num,
    app_mem_mb: Num,
    app_mem_triad_mb: Num,
    context_switches: Num,
    syscalls: Num,
    connections: Num,
    one_thread: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeight {
    subsystem: String,
    weight: Spanned<f64>,
    input: Spanned<String>,
    better: Option<Spanned<String>>,
    best: Num,
    worst: Num,
    require_min: Num,
    require_max: Num,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Weight {
    pub subsystem: String,
    pub weight: f64,
    /// An input key or "max_rate".
    pub input: String,
    pub better: Dir,
    /// Absolute scale: `best` scores 5, `worst` scores 1 (else scores are relative to the best run).
    pub best: Option<f64>,
    pub worst: Option<f64>,
    pub require_min: Option<f64>,
    pub require_max: Option<f64>,
}

/// The values of `demand.disk_io`, the default first.
pub const DISK_IO: [&str; 4] = ["direct", "buffered", "stream", "relay"];

/// The activities `demand.one_thread` may list: each is carried, for every unit, by the one
/// thread of a serial stage ("app": the application's own CPU, app_cpu_s).
pub const ONE_THREAD: [&str; 5] = ["net_rx", "net_tx", "disk_write", "disk_read", "app"];

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Demand {
    pub net_rx_mb: f64,
    pub net_tx_mb: f64,
    pub net_protocol: String,
    pub disk_write_mb: f64,
    pub disk_read_mb: f64,
    pub disk_threads: u32,
    /// "direct" (cache bypassed), "buffered" (through the OS cache, made durable) or "stream"
    /// (one long stream through the cache, its writeback alongside the writes; writes only, one
    /// thread) or "relay" (every byte received over TCP written to one file by the thread that
    /// received it, what each receive returned, as one long stream): which of the file-system
    /// suite's figures the disk demand uses.
    pub disk_io: String,
    pub frames: f64,
    pub frame_mb: f64,
    pub frame_pacing: String,
    pub app_cpu_s: Option<f64>,
    pub app_cpu_pct: Option<f64>,
    pub app_mem_mb: f64,
    /// Of `app_mem_mb`, the MB moved by kernels that read two arrays and write one (STREAM add
    /// and triad), which stream at the triad rate: the memory-bandwidth law, the CPU floor (one
    /// core's triad rate) and the contention range (the all-thread triad rate) price them so.
    pub app_mem_triad_mb: f64,
    pub context_switches: f64,
    /// System calls per unit besides the payload's and a connection's (priced as cpu/io_syscall).
    pub syscalls: f64,
    /// TCP connections set up and closed per unit (a request without keep-alive: 1).
    pub connections: f64,
    /// The activities ONE thread of the application carries for every unit (a serial stage),
    /// each one of [`ONE_THREAD`], in the profile's order; empty: no serial stage stated.
    pub one_thread: Vec<String>,
}

impl Demand {
    /// The input key of a file-system figure for this demand's threads and I/O path:
    /// `disk_{dir}_{what}[_buffered]_t{threads}` (dir "write"/"read", what "mb_s"/"cpu_s_per_mb"/
    /// "thread_cpu_s_per_mb"). A stream's (`disk_io = "stream"`): its CPU and its thread's CPU
    /// are fs/stream_write's, `disk_stream_{dir}_{what}`; its bandwidth is the device's, the
    /// cache-bypassed `disk_{dir}_mb_s_t{threads}` — the writeback runs alongside the writes, so
    /// the device, not one file's write-then-fsync, bounds a long stream. A relay's
    /// (`disk_io = "relay"`): its CPU and its thread's CPU are fs/stream_from_tcp's,
    /// `disk_relay_{what}` — the receive's included — its bandwidth the device's, as a stream's.
    pub fn disk_key(&self, dir: &str, what: &str) -> String {
        if what != "mb_s" {
            match self.disk_io.as_str() {
                "stream" => return format!("disk_stream_{dir}_{what}"),
                "relay" => return format!("disk_relay_{what}"),
                _ => {}
            }
        }
        let path = if self.disk_io == "buffered" {
            "_buffered"
        } else {
            ""
        };
        format!("disk_{dir}_{what}{path}_t{}", self.disk_threads)
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Profile {
    /// The file it was read from, as given (for commands printed back to the user).
    #[serde(skip)]
    pub file: String,
    pub name: String,
    pub unit: String,
    pub description: Option<String>,
    pub target_rate: f64,
    pub ceiling: f64,
    /// Published-figures file named by the profile (resolved against the profile's folder).
    pub inputs: Option<PathBuf>,
    /// The real application `osgauge model check` drives for this profile (`app.check`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    pub demand: Demand,
    /// User-stated capacities (input key → value).
    pub capacity: BTreeMap<String, f64>,
    /// Memory-traffic-per-MB overrides (input key → value).
    pub assumptions: BTreeMap<String, f64>,
    /// Fixed background load per resource name, fraction of capacity.
    pub background: BTreeMap<String, f64>,
    /// QoS limit key → limit.
    pub qos: BTreeMap<String, f64>,
    pub weights: Vec<Weight>,
}

/// A QoS limit: profile key, the input it checks, and whether the limit is a maximum.
pub struct QosKey {
    pub key: &'static str,
    pub input: &'static str,
    pub what: &'static str,
}

/// Every QoS limit a profile may set; each is a maximum.
pub const QOS_KEYS: &[QosKey] = &[
    QosKey {
        key: "net_loss_pct_max",
        input: "net_loss_pct",
        what: "UDP datagram loss, %",
    },
    QosKey {
        key: "net_jitter_p99_us_max",
        input: "net_jitter_p99_us",
        what: "UDP inter-arrival jitter p99, µs",
    },
    QosKey {
        key: "net_rtt_p50_us_max",
        input: "net_rtt_p50_us",
        what: "TCP 64-byte round trip median, µs",
    },
    QosKey {
        key: "frame_p99_dev_ms_max",
        input: "frame_p99_dev_ms",
        what: "frame-period deviation p99, ms",
    },
    QosKey {
        key: "frame_late_pct_max",
        input: "frame_late_pct",
        what: "frames late beyond half a period, %",
    },
    QosKey {
        key: "ctx_switch_us_max",
        input: "ctx_switch_us",
        what: "context switch time, µs",
    },
];

/// Background-load resource names.
pub const RESOURCES: &[&str] = &["cpu", "memory", "disk", "net_rx", "net_tx", "display"];

/// A profile error: where, which key, what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(pub String);

/// 1-based line of byte offset `at` in `src`.
pub fn line_of(src: &str, at: usize) -> usize {
    src[..at.min(src.len())].matches('\n').count() + 1
}

struct Ctx<'a> {
    file: &'a str,
    src: &'a str,
}

impl Ctx<'_> {
    fn err<T>(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        msg: &str,
    ) -> Result<T, ProfileError> {
        Err(ProfileError(format!(
            "{}:{}: {key}: {msg}",
            self.file,
            line_of(self.src, span.start)
        )))
    }
    fn non_neg(&self, v: &Num, key: &str) -> Result<f64, ProfileError> {
        match v {
            None => Ok(0.0),
            Some(s) => self.check(s, key, 0.0, ABSURD),
        }
    }
    fn check(&self, s: &Spanned<f64>, key: &str, lo: f64, hi: f64) -> Result<f64, ProfileError> {
        let v = *s.get_ref();
        if !v.is_finite() || v < lo || v > hi {
            let range = if hi == ABSURD && lo == 0.0 {
                format!("must be a number from 0 to {ABSURD:e}")
            } else if hi == f64::MAX {
                format!("must be a number ≥ {lo}")
            } else {
                format!("must be a number from {lo} to {hi}")
            };
            let got = if v.is_finite() && v.abs() >= 1e15 {
                format!("{v:e}")
            } else {
                format!("{v}")
            };
            return self.err(s.span(), key, &format!("{range} (got {got})"));
        }
        Ok(v)
    }
}

/// The largest magnitude a profile figure may have: far beyond any real machine or application
/// (1e12 CPU-seconds or MB per unit), and far enough below f64's range that the model's sums and
/// products stay finite (1e308 printed "inf %").
const ABSURD: f64 = 1e12;
/// Largest weight of a `[[weights]]` entry: a weight ten thousand times another's already makes
/// that one irrelevant; a larger one (1e308) only made the score a number of a hundred digits.
pub const MAX_WEIGHT: f64 = 10_000.0;

impl Profile {
    /// Read and validate a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let (src, name) = super::examples::read(path).map_err(ProfileError)?;
        let mut p = Profile::parse(&name, &src)?;
        if let Some(i) = &p.inputs {
            let base = path.parent().unwrap_or(Path::new("."));
            p.inputs = Some(base.join(i));
        }
        Ok(p)
    }

    /// What the profile states into `inputs`: the copy-count assumptions (the profile's
    /// overrides first) for every key the source did not supply, and the stated capacities.
    pub fn apply_to(&self, inputs: &mut Inputs) {
        for s in inputs::specs() {
            if let Source::Assumed { default, why } = s.source
                && !inputs.values.contains_key(s.key)
            {
                let (value, source) = match self.assumptions.get(s.key) {
                    Some(v) => (*v, "ASSUMED by the profile's [assumptions]".to_string()),
                    None => (default, why.to_string()),
                };
                inputs.values.insert(
                    s.key.to_string(),
                    Value {
                        value,
                        origin: Origin::Assumed,
                        source,
                    },
                );
            }
        }
        for (k, v) in &self.capacity {
            inputs.missing.remove(k);
            inputs.values.insert(
                k.clone(),
                Value {
                    value: *v,
                    origin: Origin::Stated,
                    source: "stated by the profile's [capacity], not measured".into(),
                },
            );
        }
    }

    /// Parse and validate profile text; `file` names it in errors.
    pub fn parse(file: &str, src: &str) -> Result<Profile, ProfileError> {
        let raw: Raw = toml::from_str(src).map_err(|e| {
            let line = e.span().map(|s| line_of(src, s.start));
            let msg = e.message().trim().to_string();
            ProfileError(match line {
                Some(l) => format!("{file}:{l}: {msg}"),
                None => format!("{file}: {msg}"),
            })
        })?;
        let c = Ctx { file, src };
        let (target_rate, ceiling) = c.rates(&raw.app)?;
        let demand = c.demand(&raw.demand)?;
        let capacity = c.keyed(
            &raw.capacity,
            "capacity",
            &|k| inputs::is_capacity_key(k),
            &format!("capacity keys: {}", inputs::capacity_keys().join(", ")),
            ABSURD,
        )?;
        let assumptions = c.keyed(
            &raw.assumptions,
            "assumptions",
            &|k| inputs::is_assumption_key(k),
            &format!("assumption keys: {}", inputs::assumption_keys().join(", ")),
            ABSURD,
        )?;
        let background = c.keyed(
            &raw.background,
            "background",
            &|k| RESOURCES.contains(&k),
            &format!("resources: {}", RESOURCES.join(", ")),
            1.0,
        )?;
        let qos_names: Vec<&str> = QOS_KEYS.iter().map(|q| q.key).collect();
        let qos = c.keyed(
            &raw.qos,
            "qos",
            &|k| qos_names.contains(&k),
            &format!("qos keys: {}", qos_names.join(", ")),
            ABSURD,
        )?;
        let weights = raw
            .weights
            .iter()
            .enumerate()
            .map(|(i, w)| c.weight(i, w))
            .collect::<Result<_, _>>()?;
        Ok(Profile {
            file: file.to_string(),
            name: raw.app.name,
            unit: raw.app.unit,
            description: raw.app.description,
            target_rate,
            ceiling,
            inputs: raw.app.inputs.map(PathBuf::from),
            check: raw.app.check,
            demand,
            capacity,
            assumptions,
            background,
            qos,
            weights,
        })
    }
}

/// The checks of each part of a profile, in the order they are read.
impl Ctx<'_> {
    /// `[app]`: the target rate (> 0) and the utilisation ceiling (in (0, 1], default 0.8).
    fn rates(&self, app: &RawApp) -> Result<(f64, f64), ProfileError> {
        let target_rate = self.check(&app.target_rate, "app.target_rate", 0.0, f64::MAX)?;
        if target_rate <= 0.0 {
            return self.err(app.target_rate.span(), "app.target_rate", "must be > 0");
        }
        let ceiling = match &app.utilisation_ceiling {
            Some(s) => {
                let v = self.check(s, "app.utilisation_ceiling", 0.0, 1.0)?;
                if v <= 0.0 {
                    return self.err(s.span(), "app.utilisation_ceiling", "must be > 0");
                }
                v
            }
            None => 0.8,
        };
        Ok((target_rate, ceiling))
    }

    /// `[demand]`: every figure ≥ 0, the choices among what the suites measure.
    fn demand(&self, d: &RawDemand) -> Result<Demand, ProfileError> {
        let (disk_threads, net_protocol, disk_io, frame_pacing) = self.demand_choices(d)?;
        let (app_cpu_s, app_cpu_pct) = self.app_cpu(d)?;
        let demand = Demand {
            net_rx_mb: self.non_neg(&d.net_rx_mb, "demand.net_rx_mb")?,
            net_tx_mb: self.non_neg(&d.net_tx_mb, "demand.net_tx_mb")?,
            net_protocol,
            disk_write_mb: self.non_neg(&d.disk_write_mb, "demand.disk_write_mb")?,
            disk_read_mb: self.non_neg(&d.disk_read_mb, "demand.disk_read_mb")?,
            disk_threads,
            disk_io,
            frames: self.non_neg(&d.frames, "demand.frames")?,
            frame_mb: self.non_neg(&d.frame_mb, "demand.frame_mb")?,
            frame_pacing,
            app_cpu_s,
            app_cpu_pct,
            app_mem_mb: self.non_neg(&d.app_mem_mb, "demand.app_mem_mb")?,
            app_mem_triad_mb: self.non_neg(&d.app_mem_triad_mb, "demand.app_mem_triad_mb")?,
            context_switches: self.non_neg(&d.context_switches, "demand.context_switches")?,
            syscalls: self.non_neg(&d.syscalls, "demand.syscalls")?,
            connections: self.non_neg(&d.connections, "demand.connections")?,
            one_thread: self.one_thread(&d.one_thread)?,
        };
        self.demand_consistent(d, &demand)?;
        Ok(demand)
    }

    /// The choices of `[demand]` among what the suites measure, or their defaults: disk_threads
    /// (1 … 3), net_protocol (tcp, udp), disk_io ([`DISK_IO`]) and frame_pacing
    /// ([`inputs::FRAME_VARIANTS`]).
    fn demand_choices(&self, d: &RawDemand) -> Result<(u32, String, String, String), ProfileError> {
        let disk_threads = match &d.disk_threads {
            None => 1,
            Some(s) => {
                let v = *s.get_ref();
                if !(1..=3).contains(&v) {
                    return self.err(
                        s.span(),
                        "demand.disk_threads",
                        &format!(
                            "must be 1, 2 or 3 (the file-system suite measures those; got {v})"
                        ),
                    );
                }
                v as u32
            }
        };
        let net_protocol = match &d.net_protocol {
            None => "tcp".to_string(),
            Some(s) if s.get_ref() == "tcp" || s.get_ref() == "udp" => s.get_ref().clone(),
            Some(s) => {
                return self.err(
                    s.span(),
                    "demand.net_protocol",
                    "must be \"tcp\" or \"udp\"",
                );
            }
        };
        let disk_io = match &d.disk_io {
            None => DISK_IO[0].to_string(),
            Some(s) if DISK_IO.contains(&s.get_ref().as_str()) => s.get_ref().clone(),
            Some(s) => {
                return self.err(
                    s.span(),
                    "demand.disk_io",
                    "must be \"direct\" (cache bypassed), \"buffered\" (through the OS cache, fsynced), \"stream\" (one long stream through the cache) or \"relay\" (a TCP stream received and written to a file by one thread)",
                );
            }
        };
        let frame_pacing = match &d.frame_pacing {
            None => "60fps_1mp".to_string(),
            Some(s) if inputs::FRAME_VARIANTS.contains(&s.get_ref().as_str()) => {
                s.get_ref().clone()
            }
            Some(s) => {
                return self.err(
                    s.span(),
                    "demand.frame_pacing",
                    &format!("must be one of {}", inputs::FRAME_VARIANTS.join(", ")),
                );
            }
        };
        Ok((disk_threads, net_protocol, disk_io, frame_pacing))
    }

    /// The application's own CPU demand: app_cpu_s (CPU-seconds per unit, ≥ 0) or app_cpu_pct
    /// (percent of all CPUs per unit/s, 0 … 100), not both.
    fn app_cpu(&self, d: &RawDemand) -> Result<(Option<f64>, Option<f64>), ProfileError> {
        if let (Some(a), Some(_)) = (&d.app_cpu_s, &d.app_cpu_pct) {
            return self.err(
                a.span(),
                "demand.app_cpu_s",
                "give app_cpu_s (CPU-seconds per unit) or app_cpu_pct (percent of all CPUs per unit/s), not both",
            );
        }
        let app_cpu_s = d
            .app_cpu_s
            .as_ref()
            .map(|s| self.check(s, "demand.app_cpu_s", 0.0, ABSURD))
            .transpose()?;
        let app_cpu_pct = d
            .app_cpu_pct
            .as_ref()
            .map(|s| self.check(s, "demand.app_cpu_pct", 0.0, 100.0))
            .transpose()?;
        Ok((app_cpu_s, app_cpu_pct))
    }

    /// The figures of `demand` (read from `d`) against each other: frames need their size,
    /// the stream and relay disk modes measure one thread only, the triad traffic is part of
    /// app_mem_mb.
    fn demand_consistent(&self, d: &RawDemand, demand: &Demand) -> Result<(), ProfileError> {
        if demand.frames > 0.0 && demand.frame_mb == 0.0 {
            let span = d.frames.as_ref().map(|s| s.span()).unwrap_or(0..0);
            return self.err(span, "demand.frame_mb", "frames > 0 needs the frame size");
        }
        // fs/stream_write measures one thread writing one stream: nothing else is measured.
        if demand.disk_io == "stream" && (demand.disk_read_mb > 0.0 || demand.disk_threads != 1) {
            let span = d.disk_io.as_ref().map(|s| s.span()).unwrap_or(0..0);
            return self.err(
                span,
                "demand.disk_io",
                "\"stream\" is one thread writing one stream (fs/stream_write): no disk_read_mb, disk_threads = 1",
            );
        }
        if demand.app_mem_triad_mb > demand.app_mem_mb {
            let span = d
                .app_mem_triad_mb
                .as_ref()
                .map(|s| s.span())
                .unwrap_or(0..0);
            return self.err(
                span,
                "demand.app_mem_triad_mb",
                "is part of app_mem_mb (the traffic its two-arrays-read, one-written kernels move): at most app_mem_mb",
            );
        }
        // fs/stream_from_tcp measures one thread writing to one file every byte it received
        // over TCP: the receive and the write are one activity, whole or not at all.
        if demand.disk_io == "relay" {
            let span = d.disk_io.as_ref().map(|s| s.span()).unwrap_or(0..0);
            let listed = |a: &str| demand.one_thread.iter().any(|x| x == a);
            if demand.net_protocol != "tcp"
                || demand.net_rx_mb <= 0.0
                || demand.disk_write_mb != demand.net_rx_mb
                || demand.disk_read_mb > 0.0
                || demand.disk_threads != 1
            {
                return self.err(
                    span,
                    "demand.disk_io",
                    "\"relay\" is one thread writing to one file every byte it received over TCP (fs/stream_from_tcp): net_protocol = \"tcp\", disk_write_mb = net_rx_mb > 0, no disk_read_mb, disk_threads = 1",
                );
            }
            if listed("net_rx") != listed("disk_write") {
                return self.err(
                    span,
                    "demand.one_thread",
                    "with disk_io = \"relay\" one thread receives and writes each byte: list both net_rx and disk_write, or neither",
                );
            }
        }
        Ok(())
    }

    /// `demand.one_thread`: activities of [`ONE_THREAD`], each at most once.
    fn one_thread(
        &self,
        v: &Option<Spanned<Vec<Spanned<String>>>>,
    ) -> Result<Vec<String>, ProfileError> {
        let Some(list) = v else {
            return Ok(Vec::new());
        };
        let mut out: Vec<String> = Vec::new();
        for a in list.get_ref() {
            let name = a.get_ref();
            if !ONE_THREAD.contains(&name.as_str()) {
                return self.err(
                    a.span(),
                    "demand.one_thread",
                    &format!(
                        "unknown activity {name:?} (one of: {})",
                        ONE_THREAD.join(", ")
                    ),
                );
            }
            if out.contains(name) {
                return self.err(
                    a.span(),
                    "demand.one_thread",
                    &format!("{name:?} is listed twice"),
                );
            }
            out.push(name.clone());
        }
        Ok(out)
    }

    /// A table of `name.key = figure` (`[capacity]`, `[assumptions]`, `[background]`, `[qos]`):
    /// each key `allowed` (else the error lists them: `hint`), each figure from 0 to `hi`.
    fn keyed(
        &self,
        table: &BTreeMap<String, Spanned<f64>>,
        name: &str,
        allowed: &dyn Fn(&str) -> bool,
        hint: &str,
        hi: f64,
    ) -> Result<BTreeMap<String, f64>, ProfileError> {
        let mut out = BTreeMap::new();
        for (k, v) in table {
            let key = format!("{name}.{k}");
            if !allowed(k) {
                return self.err(v.span(), &key, &format!("unknown key ({hint})"));
            }
            let x = self.check(v, &key, 0.0, hi)?;
            if name == "capacity" && x == 0.0 {
                return self.err(
                    v.span(),
                    &key,
                    "must be > 0: a capacity of 0 would leave this resource out of the \
                     bottleneck analysis (leave the key out to use the measured figure)",
                );
            }
            out.insert(k.clone(), x);
        }
        Ok(out)
    }

    /// `[[weights]]` number `i`: a weight > 0 on a scorable input or "max_rate", which way is
    /// better, an absolute scale (both ends or neither) and the requirements of the gate.
    fn weight(&self, i: usize, w: &RawWeight) -> Result<Weight, ProfileError> {
        let key = format!("weights[{i}]");
        let weight = self.check(&w.weight, &format!("{key}.weight"), 0.0, MAX_WEIGHT)?;
        if weight <= 0.0 {
            return self.err(w.weight.span(), &format!("{key}.weight"), "must be > 0");
        }
        let input = w.input.get_ref().clone();
        let default_dir = if input == "max_rate" {
            Some(Dir::Higher)
        } else {
            inputs::spec(&input).map(|s| s.better)
        };
        let Some(default_dir) = default_dir else {
            return self.err(
                w.input.span(),
                &format!("{key}.input"),
                &format!(
                    "unknown input '{input}' (\"max_rate\" or one of: {})",
                    inputs::scorable_keys().join(", ")
                ),
            );
        };
        let better = match &w.better {
            None => default_dir,
            Some(s) if s.get_ref() == "higher" => Dir::Higher,
            Some(s) if s.get_ref() == "lower" => Dir::Lower,
            Some(s) => {
                return self.err(
                    s.span(),
                    &format!("{key}.better"),
                    "must be \"higher\" or \"lower\"",
                );
            }
        };
        let opt = |n: &Num, k: &str| -> Result<Option<f64>, ProfileError> {
            n.as_ref()
                .map(|s| self.check(s, &format!("{key}.{k}"), -ABSURD, ABSURD))
                .transpose()
        };
        let best = opt(&w.best, "best")?;
        let worst = opt(&w.worst, "worst")?;
        if best.is_some() != worst.is_some() {
            let span = w.best.as_ref().or(w.worst.as_ref()).unwrap().span();
            return self.err(
                span,
                &key,
                "give both best and worst (an absolute scale) or neither",
            );
        }
        if let (Some(b), Some(wo)) = (best, worst)
            && b == wo
        {
            return self.err(
                w.best.as_ref().unwrap().span(),
                &key,
                "best and worst are equal",
            );
        }
        let (require_min, require_max) = (
            opt(&w.require_min, "require_min")?,
            opt(&w.require_max, "require_max")?,
        );
        if let (Some(lo), Some(hi)) = (require_min, require_max)
            && lo > hi
        {
            return self.err(
                w.require_min.as_ref().unwrap().span(),
                &key,
                &format!("require_min {lo} is above require_max {hi}: nothing could pass"),
            );
        }
        Ok(Weight {
            subsystem: w.subsystem.clone(),
            weight,
            input,
            better,
            best,
            worst,
            require_min,
            require_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str =
        "[app]\nname = \"x\"\nunit = \"frame\"\ntarget_rate = 25\n\n[demand]\nnet_rx_mb = 2\n";

    #[test]
    fn minimal_profile_parses_with_defaults() {
        let p = Profile::parse("p.toml", OK).unwrap();
        assert_eq!(p.target_rate, 25.0);
        assert_eq!(p.ceiling, 0.8);
        assert_eq!(p.demand.net_rx_mb, 2.0);
        assert_eq!(p.demand.disk_threads, 1);
        assert_eq!(p.demand.net_protocol, "tcp");
        assert_eq!(p.demand.disk_io, "direct");
        assert_eq!(p.demand.disk_key("write", "mb_s"), "disk_write_mb_s_t1");
    }

    #[test]
    fn disk_io_picks_the_file_system_figures_and_a_bad_one_is_refused() {
        let p = Profile::parse(
            "p.toml",
            &format!("{OK}disk_io = \"buffered\"\ndisk_threads = 2\n"),
        )
        .unwrap();
        assert_eq!(
            p.demand.disk_key("write", "cpu_s_per_mb"),
            "disk_write_cpu_s_per_mb_buffered_t2"
        );
        assert!(inputs::spec(&p.demand.disk_key("read", "mb_s")).is_some());
        let e = Profile::parse("p.toml", &format!("{OK}disk_io = \"cached\"\n"))
            .unwrap_err()
            .0;
        assert!(e.starts_with("p.toml:8: demand.disk_io: must be"), "{e}");
    }

    #[test]
    fn a_stream_reads_the_streaming_writer_and_the_device_and_nothing_else() {
        let p = Profile::parse(
            "p.toml",
            &format!("{OK}disk_write_mb = 1\ndisk_io = \"stream\"\n"),
        )
        .unwrap();
        let d = &p.demand;
        assert_eq!(d.disk_key("write", "mb_s"), "disk_write_mb_s_t1");
        assert_eq!(
            d.disk_key("write", "cpu_s_per_mb"),
            "disk_stream_write_cpu_s_per_mb"
        );
        assert_eq!(
            d.disk_key("write", "thread_cpu_s_per_mb"),
            "disk_stream_write_thread_cpu_s_per_mb"
        );
        for k in ["mb_s", "cpu_s_per_mb", "thread_cpu_s_per_mb"] {
            let key = d.disk_key("write", k);
            assert!(inputs::spec(&key).is_some(), "{key}");
        }
        for bad in [
            "disk_read_mb = 1\ndisk_io = \"stream\"\n",
            "disk_threads = 2\ndisk_io = \"stream\"\n",
        ] {
            let e = Profile::parse("p.toml", &format!("{OK}{bad}"))
                .unwrap_err()
                .0;
            assert!(
                e.contains("demand.disk_io: \"stream\" is one thread"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_relay_reads_the_relay_and_the_device_and_is_whole_or_refused() {
        // OK's demand without its net_rx_mb: each case states its own.
        let ok = OK.replace("net_rx_mb = 2\n", "");
        let relay =
            "net_rx_mb = 1\nnet_protocol = \"tcp\"\ndisk_write_mb = 1\ndisk_io = \"relay\"\n";
        let p = Profile::parse(
            "p.toml",
            &format!("{ok}{relay}one_thread = [\"net_rx\", \"disk_write\"]\n"),
        )
        .unwrap();
        let d = &p.demand;
        assert_eq!(d.disk_key("write", "mb_s"), "disk_write_mb_s_t1");
        assert_eq!(
            d.disk_key("write", "cpu_s_per_mb"),
            "disk_relay_cpu_s_per_mb"
        );
        assert_eq!(
            d.disk_key("write", "thread_cpu_s_per_mb"),
            "disk_relay_thread_cpu_s_per_mb"
        );
        for k in ["mb_s", "cpu_s_per_mb", "thread_cpu_s_per_mb"] {
            let key = d.disk_key("write", k);
            assert!(inputs::spec(&key).is_some(), "{key}");
        }
        assert!(inputs::spec("disk_relay_mb_s").is_some());
        // Neither activity on a stated thread is fine; one without the other is not.
        assert!(Profile::parse("p.toml", &format!("{ok}{relay}")).is_ok());
        let e = Profile::parse(
            "p.toml",
            &format!("{ok}{relay}one_thread = [\"disk_write\"]\n"),
        )
        .unwrap_err()
        .0;
        assert!(e.contains("list both net_rx and disk_write"), "{e}");
        for bad in [
            "net_rx_mb = 2\ndisk_write_mb = 1\ndisk_io = \"relay\"\n",
            "net_rx_mb = 1\nnet_protocol = \"udp\"\ndisk_write_mb = 1\ndisk_io = \"relay\"\n",
            "disk_write_mb = 1\ndisk_io = \"relay\"\n",
            "net_rx_mb = 1\ndisk_write_mb = 1\ndisk_read_mb = 1\ndisk_io = \"relay\"\n",
            "net_rx_mb = 1\ndisk_write_mb = 1\ndisk_threads = 2\ndisk_io = \"relay\"\n",
        ] {
            let e = Profile::parse("p.toml", &format!("{ok}{bad}"))
                .unwrap_err()
                .0;
            assert!(
                e.contains("demand.disk_io: \"relay\" is one thread"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn absurd_figures_zero_capacities_and_impossible_requirements_are_refused() {
        let e = Profile::parse("p.toml", &format!("{OK}app_cpu_s = 1e308\n"))
            .unwrap_err()
            .0;
        assert!(
            e.contains("demand.app_cpu_s: must be a number from 0 to 1e12"),
            "{e}"
        );
        let e = Profile::parse("p.toml", &format!("{OK}\n[capacity]\nnet_link_mb_s = 0\n"))
            .unwrap_err()
            .0;
        assert!(e.contains("capacity.net_link_mb_s: must be > 0"), "{e}");
        let w = "\n[[weights]]\nsubsystem = \"a\"\nweight = 1\ninput = \"max_rate\"\n";
        let e = Profile::parse(
            "p.toml",
            &format!("{OK}{w}require_min = 10\nrequire_max = 5\n"),
        )
        .unwrap_err()
        .0;
        assert!(e.contains("require_min 10 is above require_max 5"), "{e}");
        // The edges stay allowed.
        Profile::parse("p.toml", &format!("{OK}app_cpu_s = 1e12\n")).unwrap();
        Profile::parse(
            "p.toml",
            &format!("{OK}{w}require_min = 5\nrequire_max = 5\n"),
        )
        .unwrap();
    }

    #[test]
    fn one_thread_lists_known_activities_once() {
        let p = Profile::parse(
            "p.toml",
            &format!("{OK}one_thread = [\"net_rx\", \"disk_write\", \"app\"]\n"),
        )
        .unwrap();
        assert_eq!(p.demand.one_thread, ["net_rx", "disk_write", "app"]);
        assert!(
            Profile::parse("p.toml", OK)
                .unwrap()
                .demand
                .one_thread
                .is_empty()
        );
        let e = Profile::parse(
            "p.toml",
            &format!("{OK}one_thread = [\"net_rx\",\n  \"gpu\"]\n"),
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("p.toml:9: demand.one_thread: unknown activity \"gpu\" (one of: net_rx,"),
            "{e}"
        );
        let e = Profile::parse(
            "p.toml",
            &format!("{OK}one_thread = [\"disk_read\", \"disk_read\"]\n"),
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("p.toml:8: demand.one_thread: \"disk_read\" is listed twice"),
            "{e}"
        );
        let e = Profile::parse("p.toml", &format!("{OK}one_thread = \"net_rx\"\n"))
            .unwrap_err()
            .0;
        assert!(e.starts_with("p.toml:8:") && e.contains("sequence"), "{e}");
    }

    #[test]
    fn errors_name_the_line_and_key() {
        let bad = OK.replace("net_rx_mb = 2", "net_rx_mb = -2");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(e.starts_with("p.toml:7: demand.net_rx_mb: must be"), "{e}");
        let bad = format!("{OK}disk_threads = 4\n");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(e.starts_with("p.toml:8: demand.disk_threads"), "{e}");
        let bad = format!("{OK}nonsense = 1\n");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(e.starts_with("p.toml:8:") && e.contains("nonsense"), "{e}");
        let bad = format!("{OK}\n[[weights]]\nsubsystem = \"a\"\nweight = 3\ninput = \"nope\"\n");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(
            e.starts_with("p.toml:12: weights[0].input: unknown input"),
            "{e}"
        );
        // A weight is bounded like the demands: 1e308 is refused, naming the bound.
        let bad =
            format!("{OK}\n[[weights]]\nsubsystem = \"a\"\nweight = 1e308\ninput = \"max_rate\"\n");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(
            e.starts_with(
                "p.toml:11: weights[0].weight: must be a number from 0 to 10000 (got 1e308)"
            ),
            "{e}"
        );
        let bad = format!("{OK}\n[qos]\nlatency = 3\n");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(e.starts_with("p.toml:10: qos.latency: unknown key"), "{e}");
        let bad = OK.replace("target_rate = 25", "target_rate = 0");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(
            e.starts_with("p.toml:4: app.target_rate: must be > 0"),
            "{e}"
        );
        let bad = OK.replace("target_rate = 25", "");
        let e = Profile::parse("p.toml", &bad).unwrap_err().0;
        assert!(e.contains("target_rate"), "{e}");
    }
}
