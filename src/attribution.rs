//! Spike attribution, shared by the latency and interactivity suites (`--attribute`), so neither
//! imports the other: for a wake-up that came late, what held its CPU between the intended wake-up
//! and the actual one, from the scheduler, IRQ, softirq and local-timer events tracefs recorded on
//! that CPU (monotonic clock, µs resolution in the text format). The window is swept event by
//! event; each stretch is charged to the innermost thing active then:
//! - an IRQ handler, a softirq or the local timer interrupt (by name);
//! - else the task running, when it is not the measured thread (comm, pid, kernel priority);
//! - else, once the measured thread was woken (sched_waking), the wake-up path (waking → running
//!   → the thread's clock read);
//! - else, when the measured thread itself runs without having slept, its own previous period
//!   (an interactivity frame that overran into the next);
//! - else the CPU idling (idle exit, on a VM the host's halt exit) or anything no event shows —
//!   "unexplained".
//!
//! On a VM whose kernel's task clock leaves host steal out (CONFIG_PARAVIRT_TIME_ACCOUNTING), a
//! task's share is then split into its own run time and "host (steal)": the wall time of its
//! runtime segments (`sched_stat_runtime`, from its switch-in or previous update to the next)
//! less the run time the scheduler counted in them — prorated and marked estimated where a
//! segment reaches outside the spike, and left on the task, marked, where no segment covers it.
//!
//! The parts add up to the latency by construction; "unexplained" is never hidden. Pure: the
//! trace text comes in, the explanation goes out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One parsed trace event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub ts_ns: u64,
    pub cpu: usize,
    /// The task current when the event fired (the line's `<comm>-<pid>` header): it shows who
    /// ran even where no switch to it was recorded (this kernel records no switch out of idle).
    pub comm: String,
    pub pid: u32,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Switch {
        prev_pid: u32,
        next_comm: String,
        next_pid: u32,
        next_prio: i32,
    },
    Waking {
        pid: u32,
        prio: i32,
    },
    IrqEntry {
        name: String,
    },
    IrqExit,
    SoftirqEntry {
        name: String,
    },
    SoftirqExit,
    TimerEntry,
    TimerExit,
    /// `sched_stat_runtime`: task `pid` ran `runtime_ns` by the scheduler's task clock since its
    /// previous update (its switch-in or its previous such event). With
    /// CONFIG_PARAVIRT_TIME_ACCOUNTING that clock leaves out what the host stole.
    Runtime {
        pid: u32,
        runtime_ns: u64,
    },
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let i = text.find(&format!("{key}="))? + key.len() + 1;
    let rest = &text[i..];
    Some(rest.split(' ').next().unwrap_or(rest))
}

/// Parse tracefs's text output (`trace`), keeping the events attribution uses.
pub fn parse(text: &str) -> Vec<Event> {
    text.lines().filter_map(parse_line).collect()
}

/// One line: `<comm>-<pid> [cpu] flags ts: event: fields`.
pub fn parse_line(line: &str) -> Option<Event> {
    if line.starts_with('#') {
        return None;
    }
    let open = line.find(" [")? + 1;
    let close = open + line[open..].find(']')?;
    let (comm, pid) = line[..open].trim().rsplit_once('-')?;
    let pid: u32 = pid.parse().ok()?;
    let cpu: usize = line[open + 1..close].trim().parse().ok()?;
    let rest = &line[close + 1..];
    // flags, then "secs.usecs:", then "event:", then fields.
    let mut parts = rest.trim_start().splitn(2, ' ');
    let _flags = parts.next()?;
    let rest = parts.next()?.trim_start();
    let colon = rest.find(": ")?;
    let ts = &rest[..colon];
    let (secs, usecs) = ts.split_once('.')?;
    let ts_ns = secs.parse::<u64>().ok()? * 1_000_000_000 + usecs.parse::<u64>().ok()? * 1_000;
    let rest = &rest[colon + 2..];
    let colon = rest.find(": ").unwrap_or(rest.len());
    let name = &rest[..colon];
    let fields = rest.get(colon + 2..).unwrap_or("");
    let kind = match name {
        "sched_switch" => {
            // next_comm may hold spaces: take it between "next_comm=" and " next_pid=".
            let nc = fields.find("next_comm=")? + "next_comm=".len();
            let np = fields.find(" next_pid=")?;
            Kind::Switch {
                prev_pid: field(fields, "prev_pid")?.parse().ok()?,
                next_comm: fields.get(nc..np)?.to_string(),
                next_pid: field(fields, "next_pid")?.parse().ok()?,
                next_prio: field(fields, "next_prio")?.parse().ok()?,
            }
        }
        "sched_waking" => Kind::Waking {
            pid: field(fields, "pid")?.parse().ok()?,
            prio: field(fields, "prio")?.parse().ok()?,
        },
        "irq_handler_entry" => Kind::IrqEntry {
            name: format!(
                "irq {} {}",
                field(fields, "irq").unwrap_or("?"),
                field(fields, "name").unwrap_or("?")
            ),
        },
        "irq_handler_exit" => Kind::IrqExit,
        "softirq_entry" => Kind::SoftirqEntry {
            name: fields
                .split("action=")
                .nth(1)
                .map(|a| a.trim_end_matches(']').to_string())
                .unwrap_or_else(|| field(fields, "vec").unwrap_or("?").to_string()),
        },
        "softirq_exit" => Kind::SoftirqExit,
        "local_timer_entry" => Kind::TimerEntry,
        "local_timer_exit" => Kind::TimerExit,
        "sched_stat_runtime" => Kind::Runtime {
            pid: field(fields, "pid")?.parse().ok()?,
            runtime_ns: field(fields, "runtime")?.parse().ok()?,
        },
        _ => return None,
    };
    Some(Event {
        ts_ns,
        cpu,
        comm: comm.to_string(),
        pid,
        kind,
    })
}

/// What a part of a spike was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    /// Another task ran.
    Task,
    Irq,
    Softirq,
    /// The local timer interrupt (where the measured thread's timer fires).
    Timer,
    /// The measured thread had been woken and was on its way to run.
    WakeupPath,
    /// The measured thread itself was running, never having slept: its previous period's work
    /// ran past this period's start (interactivity tasks).
    OwnWork,
    /// Nothing recorded explains it: idle exit, a VM's host, SMIs.
    Unexplained,
    /// The host ran something else while a task held this CPU (a VM's steal): the task's wall
    /// time on the CPU less the run time the scheduler's task clock counted for it
    /// (`sched_stat_runtime`), which leaves steal out where the kernel accounts it.
    Steal,
}

/// One named share of a spike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub kind: PartKind,
    /// comm, IRQ or softirq name; empty for the wake-up path and unexplained time.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Kernel priority of a task (0–99 real-time: 99 − rt priority; 100–139: nice + 120).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    pub ns: u64,
    /// A steal part prorated from runtime stretches that reach outside the task's time in the
    /// window (or the window itself): an estimate, not a sum of whole stretches.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// A task part's time that no runtime event covers (its start not seen, or no update yet):
    /// host steal, if any, could not be separated from it and stays on the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_unseparated_ns: Option<u64>,
}

/// A late wake-up, explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    pub cpu: usize,
    /// Intended wake-up, monotonic ns.
    pub at_ns: u64,
    pub latency_ns: u64,
    /// Largest first; they add up to `latency_ns`.
    pub parts: Vec<Part>,
}

/// A share's identity: kind, name, pid, kernel priority.
type ShareKey = (PartKind, String, Option<u32>, Option<i32>);
/// A culprit's identity over spikes (kind, name, pid) → (priority, total ns, any steal part
/// estimated, time whose steal could not be separated).
type Culprits = BTreeMap<(PartKind, String, Option<u32>), (Option<i32>, u64, bool, Option<u64>)>;

/// A late wake-up to explain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Late {
    pub cpu: usize,
    /// The measured thread's id.
    pub tid: u32,
    pub intended_ns: u64,
    pub actual_ns: u64,
}

/// Kernel priority per pid, from any event that names it (a waking or a switch to it).
fn priorities(events: &[Event]) -> BTreeMap<u32, i32> {
    let mut prios = BTreeMap::new();
    for e in events {
        match &e.kind {
            Kind::Waking { pid, prio } => {
                prios.insert(*pid, *prio);
            }
            Kind::Switch {
                next_pid,
                next_prio,
                ..
            } => {
                prios.insert(*next_pid, *next_prio);
            }
            _ => {}
        }
    }
    prios
}

/// Explain `late` from `events` (every CPU's, in time order). With `split_steal` (the kernel's
/// task clock leaves host steal out), each task's time is split into its own run time and host
/// steal from its runtime events.
pub fn attribute(events: &[Event], late: &Late, split_steal: bool) -> Spike {
    let on_cpu: Vec<&Event> = events.iter().filter(|e| e.cpu == late.cpu).collect();
    let prios = priorities(events);
    let segs = split_steal.then(|| SegmentIndex::new(segments(events, late.cpu)));
    let mut state = CpuState::default();
    state.replay_to(&on_cpu, &prios, late.intended_ns);
    explain(&on_cpu, &prios, segs.as_ref(), state, late)
}

/// One CPU's state at a point of its trace: the next event, the task running and the interrupt
/// stack, from the events before that point (replayed once per CPU and carried forward from one
/// late wake-up to the next, so a trace is read once however many wake-ups were late).
#[derive(Debug, Clone, Default)]
struct CpuState {
    next: usize,
    running: Option<(String, u32, i32)>,
    stack: Vec<(PartKind, String)>,
}

impl CpuState {
    /// Apply the events up to `until_ns` (inclusive) from where the state stands.
    fn replay_to(&mut self, on_cpu: &[&Event], prios: &BTreeMap<u32, i32>, until_ns: u64) {
        while self.next < on_cpu.len() && on_cpu[self.next].ts_ns <= until_ns {
            // Which thread was woken matters only inside a window (see `explain`).
            apply_event(
                on_cpu[self.next],
                prios,
                0,
                &mut self.running,
                &mut self.stack,
            );
            self.next += 1;
        }
    }
}

/// Apply one event to a CPU's state (the task running, the interrupt stack); true when it is the
/// waking of thread `tid`.
fn apply_event(
    e: &Event,
    prios: &BTreeMap<u32, i32>,
    tid: u32,
    running: &mut Option<(String, u32, i32)>,
    stack: &mut Vec<(PartKind, String)>,
) -> bool {
    let mut woken = false;
    let apply = |e: &Event,
                 running: &mut Option<(String, u32, i32)>,
                 stack: &mut Vec<(PartKind, String)>,
                 woken: &mut bool| {
        // The line's current task, where no switch to it was recorded.
        if running.as_ref().is_none_or(|r| r.1 != e.pid) && !matches!(e.kind, Kind::Switch { .. }) {
            let comm = if e.pid == 0 {
                "idle".to_string()
            } else {
                e.comm.clone()
            };
            *running = Some((comm, e.pid, prios.get(&e.pid).copied().unwrap_or(120)));
        }
        match &e.kind {
            Kind::Switch {
                next_comm,
                next_pid,
                next_prio,
                ..
            } => {
                *running = Some((next_comm.clone(), *next_pid, *next_prio));
                stack.clear();
            }
            Kind::Waking { pid, .. } if *pid == tid => *woken = true,
            Kind::Waking { .. } => {}
            Kind::IrqEntry { name } => stack.push((PartKind::Irq, name.clone())),
            Kind::SoftirqEntry { name } => stack.push((PartKind::Softirq, name.clone())),
            Kind::TimerEntry => stack.push((PartKind::Timer, "local timer interrupt".into())),
            Kind::IrqExit | Kind::SoftirqExit | Kind::TimerExit => {
                stack.pop();
            }
            Kind::Runtime { .. } => {}
        }
    };
    apply(e, running, stack, &mut woken);
    woken
}

/// Explain `late` on its CPU from `state` (replayed to its intended time): the window swept event
/// by event (see the module documentation). `segs`: the CPU's runtime segments where steal is
/// split from the tasks' time.
fn explain(
    on_cpu: &[&Event],
    prios: &BTreeMap<u32, i32>,
    segs: Option<&SegmentIndex>,
    state: CpuState,
    late: &Late,
) -> Spike {
    let CpuState {
        next: mut i,
        mut running,
        mut stack,
    } = state;
    // A waking before the intended time was an earlier period's.
    let mut woken = false;
    let mut sweep = Sweep::default();
    let mut t = late.intended_ns;
    while i < on_cpu.len() && on_cpu[i].ts_ns < late.actual_ns {
        let e = on_cpu[i];
        let key = share_key(&running, &stack, woken, late.tid);
        sweep.charge(t, e.ts_ns, key);
        t = e.ts_ns;
        woken |= apply_event(e, prios, late.tid, &mut running, &mut stack);
        i += 1;
    }
    let key = share_key(&running, &stack, woken, late.tid);
    sweep.charge(t, late.actual_ns, key);
    let Sweep { shares, stretches } = sweep;
    let mut parts: Vec<Part> = shares
        .into_iter()
        .map(|((kind, name, pid, prio), ns)| Part {
            kind,
            name,
            pid,
            prio,
            ns,
            estimated: false,
            steal_unseparated_ns: None,
        })
        .collect();
    if let Some(segs) = segs {
        separate_steal(
            &mut parts,
            &stretches,
            segs,
            (late.intended_ns, late.actual_ns),
        );
    }
    parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
    Spike {
        cpu: late.cpu,
        at_ns: late.intended_ns,
        latency_ns: late.actual_ns.saturating_sub(late.intended_ns),
        parts,
    }
}

/// Who a stretch of a late period's window is charged to: the innermost interrupt context on
/// the `stack`; else the running task — the late task itself (its wake-up path once it was
/// `woken`, its own work before), another task, or (idle, nobody) the wake-up path once woken
/// and unexplained time before.
fn share_key(
    running: &Option<(String, u32, i32)>,
    stack: &[(PartKind, String)],
    woken: bool,
    tid: u32,
) -> ShareKey {
    if let Some((k, n)) = stack.last() {
        return (*k, n.clone(), None, None);
    }
    match running {
        Some((_, pid, _)) if *pid == tid && woken => {
            (PartKind::WakeupPath, String::new(), None, None)
        }
        Some((_, pid, _)) if *pid == tid => (PartKind::OwnWork, String::new(), None, None),
        Some((comm, pid, prio)) if *pid != 0 => {
            (PartKind::Task, comm.clone(), Some(*pid), Some(*prio))
        }
        _ if woken => (PartKind::WakeupPath, String::new(), None, None),
        _ => (PartKind::Unexplained, String::new(), None, None),
    }
}

/// A late period's window as swept so far: time per share, and the stretches other tasks ran
/// (from, to, pid) for separating steal from them.
#[derive(Default)]
struct Sweep {
    shares: BTreeMap<ShareKey, u64>,
    stretches: Vec<(u64, u64, u32)>,
}

impl Sweep {
    /// Charge `from..to` (nothing when empty) to `key`; a task's stretch is kept.
    fn charge(&mut self, from: u64, to: u64, key: ShareKey) {
        if to <= from {
            return;
        }
        if let (PartKind::Task, Some(pid)) = (key.0, key.2) {
            self.stretches.push((from, to, pid));
        }
        *self.shares.entry(key).or_default() += to - from;
    }
}

/// A stretch of a task's time on one CPU that a runtime event closes: wall time from `start_ns`
/// (its switch-in or its previous runtime event; None where no event shows when it began) to
/// `end_ns`, and the run time the scheduler's task clock counted in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub pid: u32,
    pub start_ns: Option<u64>,
    pub end_ns: u64,
    pub runtime_ns: u64,
}

/// The runtime segments of the tasks that ran on `cpu`. A runtime event counts for the task
/// current on `cpu` when it names it, whichever CPU recorded it (a remote wake-up updates the
/// running task's clock from the waker's CPU).
///
/// A switch follows the outgoing task's last runtime event by a few µs (the scheduler picking
/// the next task); the scheduler counts that switch path to the incoming task, whose clock
/// starts at the outgoing task's last update. So the incoming task's first segment starts there,
/// and the outgoing task's switch path is a segment of its own with no steal of its own (any
/// steal in it shows in the incoming task's first segment, which spans it).
pub fn segments(events: &[Event], cpu: usize) -> Vec<Segment> {
    // The task current on `cpu`, since when its run time is known to be counted, and whether
    // that mark is its last runtime event (else its switch-in).
    let mut cur: Option<(u32, Option<u64>, bool)> = None;
    let mut out = Vec::new();
    for e in events {
        if e.cpu == cpu {
            match &e.kind {
                Kind::Switch { next_pid, .. } => {
                    let mut start = e.ts_ns;
                    if let Some((p, Some(last), true)) = cur
                        && p == e.pid
                        && e.ts_ns > last
                    {
                        out.push(Segment {
                            pid: p,
                            start_ns: Some(last),
                            end_ns: e.ts_ns,
                            runtime_ns: e.ts_ns - last,
                        });
                        start = last;
                    }
                    cur = Some((*next_pid, Some(start), false));
                    continue;
                }
                // A line of a task that no switch brought in: its start is not known.
                _ if cur.is_none_or(|c| c.0 != e.pid) => cur = Some((e.pid, None, false)),
                _ => {}
            }
        }
        if let Kind::Runtime { pid, runtime_ns } = e.kind
            && let Some((p, mark, from_runtime)) = cur.as_mut()
            && *p == pid
        {
            out.push(Segment {
                pid,
                start_ns: *mark,
                end_ns: e.ts_ns,
                runtime_ns,
            });
            *mark = Some(e.ts_ns);
            *from_runtime = true;
        }
    }
    out
}

/// The resolution of tracefs's text timestamps ("secs.usecs"), ns.
pub const TS_RESOLUTION_NS: u64 = 1_000;

/// Move each task's host steal out of its part into one "host (steal)" part. Steal is the CPU's:
/// each segment of the task inside the window gives its whole wall − runtime (signed, so the
/// scheduler clock's small skew against the trace timestamps cancels over consecutive segments);
/// a segment reaching outside the window gives its share by the part inside (prorated, marked
/// estimated). The task's steal is clamped to its time that its segments cover; below the
/// timestamps' resolution (1 µs per segment used) it is not told apart from rounding and stays on
/// the task. Time no segment covers keeps its steal, if any, and says so. The parts still add up:
/// what leaves a task part is the steal part.
fn separate_steal(
    parts: &mut Vec<Part>,
    stretches: &[(u64, u64, u32)],
    segs: &SegmentIndex,
    window: (u64, u64),
) {
    // The segments that can reach into the window, in their order (the sums below keep it).
    let near = segs.reaching(window);
    let mut steal_total = 0u64;
    let mut estimated = false;
    for part in parts.iter_mut().filter(|p| p.kind == PartKind::Task) {
        let Some(pid) = part.pid else { continue };
        let mine: Vec<(u64, u64)> = stretches
            .iter()
            .filter(|s| s.2 == pid)
            .map(|s| (s.0, s.1))
            .collect();
        let mut covered = 0u64;
        let mut steal = 0f64;
        let mut prorated = false;
        let mut used = 0u64;
        for seg in near.iter().filter(|g| g.pid == pid) {
            let Some(start) = seg.start_ns else { continue };
            let wall = seg.end_ns.saturating_sub(start);
            let inside = window.1.min(seg.end_ns).saturating_sub(window.0.max(start));
            if inside == 0 || wall == 0 {
                continue;
            }
            covered += mine
                .iter()
                .map(|&(a, b)| b.min(seg.end_ns).saturating_sub(a.max(start)))
                .sum::<u64>();
            used += 1;
            steal += (wall as f64 - seg.runtime_ns as f64) * inside as f64 / wall as f64;
            prorated |= inside != wall;
        }
        let covered = covered.min(part.ns);
        // The text trace's timestamps are whole µs: each segment's wall time is known to < 1 µs.
        // Steal within that (the sum over the segments used) is not told apart from rounding.
        let resolution = (used * TS_RESOLUTION_NS) as f64;
        let steal = if steal < resolution {
            0
        } else {
            (steal.round() as u64).min(covered)
        };
        if covered < part.ns {
            part.steal_unseparated_ns = Some(part.ns - covered);
        }
        if steal > 0 {
            part.ns -= steal;
            steal_total += steal;
            estimated |= prorated;
        }
    }
    parts.retain(|p| p.ns > 0 || p.kind != PartKind::Task);
    if steal_total > 0 {
        parts.push(Part {
            kind: PartKind::Steal,
            name: String::new(),
            pid: None,
            prio: None,
            ns: steal_total,
            estimated,
            steal_unseparated_ns: None,
        });
    }
}

/// One CPU's runtime segments, found by the window they reach into: a spike's window is short and
/// a trace holds many segments, so each spike looks only at those that can overlap it.
struct SegmentIndex {
    segs: Vec<Segment>,
    /// Indices of `segs` by end (then by index).
    by_end: Vec<usize>,
    /// `min_start[k]`: the earliest start among `by_end[k..]` (a segment with no start: never).
    min_start: Vec<u64>,
}

impl SegmentIndex {
    fn new(segs: Vec<Segment>) -> SegmentIndex {
        let mut by_end: Vec<usize> = (0..segs.len()).collect();
        by_end.sort_by_key(|&k| (segs[k].end_ns, k));
        let mut min_start = vec![u64::MAX; by_end.len()];
        let mut m = u64::MAX;
        for (j, &k) in by_end.iter().enumerate().rev() {
            m = m.min(segs[k].start_ns.unwrap_or(u64::MAX));
            min_start[j] = m;
        }
        SegmentIndex {
            segs,
            by_end,
            min_start,
        }
    }

    /// Every segment with a start that ends after `window.0` and starts before `window.1` (all
    /// that can overlap it), in their original order.
    fn reaching(&self, window: (u64, u64)) -> Vec<&Segment> {
        let first = self
            .by_end
            .partition_point(|&k| self.segs[k].end_ns <= window.0);
        let mut found = Vec::new();
        for j in first..self.by_end.len() {
            // Past here every segment starts at or after the window's end.
            if self.min_start[j] >= window.1 {
                break;
            }
            let k = self.by_end[j];
            if self.segs[k].start_ns.is_some_and(|s| s < window.1) {
                found.push(k);
            }
        }
        found.sort_unstable();
        found.into_iter().map(|k| &self.segs[k]).collect()
    }
}

/// The CPU a late thread ran on when it finally ran: the last switch to `tid` at or before
/// `actual_ns` (for a thread that was not pinned).
pub fn cpu_of(events: &[Event], tid: u32, actual_ns: u64) -> Option<usize> {
    events
        .iter()
        .take_while(|e| e.ts_ns <= actual_ns)
        .filter(|e| {
            matches!(&e.kind, Kind::Switch { next_pid, .. } if *next_pid == tid) || e.pid == tid
        })
        .last()
        .map(|e| e.cpu)
}

/// A run's `attribution` fact: every late wake-up explained, the `top` latest kept with their
/// parts, the culprits over all of them (the largest `top`, at least 10), the share of the time explained, and the events the ring
/// lost.
///
/// `steal_split`: Ok where the kernel's task clock leaves host steal out (tasks' time is split
/// into their own and the host's), else why not (the time stays on the tasks, and the fact says
/// so).
pub fn summary(
    text: &str,
    lost: u64,
    mut late: Vec<Late>,
    threshold_ns: u64,
    top: usize,
    steal_split: Result<(), String>,
) -> serde_json::Value {
    let events = parse(text);
    late.sort_by_key(|l| std::cmp::Reverse(l.actual_ns - l.intended_ns));
    let spikes = attribute_all(&events, &late, steal_split.is_ok());
    let explained: u64 = spikes
        .iter()
        .flat_map(|s| &s.parts)
        .filter(|p| p.kind != PartKind::Unexplained)
        .map(|p| p.ns)
        .sum();
    let total: u64 = spikes.iter().map(|s| s.latency_ns).sum();
    serde_json::json!({
        "threshold_ns": threshold_ns,
        "spikes": spikes.len(),
        "explained_pct": if total > 0 { 100.0 * explained as f64 / total as f64 } else { 100.0 },
        "events": events.len(),
        "events_lost": lost,
        "steal_split": match &steal_split {
            Ok(()) => serde_json::json!({ "separated": true }),
            Err(why) => serde_json::json!({ "separated": false, "reason": why }),
        },
        "culprits": top_culprits(&spikes, top.max(10)),
        "top": spikes.iter().take(top).collect::<Vec<_>>(),
    })
}

/// [`attribute`] for every one of `late`, in their order, reading the trace once: the events,
/// priorities and runtime segments of each CPU are gathered once, and each CPU's state is
/// replayed forward from one late wake-up to the next in time order (each wake-up replayed from
/// the trace's start made a run with many late periods quadratic: minutes in a debug build).
pub fn attribute_all(events: &[Event], late: &[Late], split_steal: bool) -> Vec<Spike> {
    let prios = priorities(events);
    let mut per_cpu: BTreeMap<usize, Vec<&Event>> = BTreeMap::new();
    for l in late {
        per_cpu.entry(l.cpu).or_default();
    }
    for e in events {
        if let Some(v) = per_cpu.get_mut(&e.cpu) {
            v.push(e);
        }
    }
    let segs: BTreeMap<usize, SegmentIndex> = if split_steal {
        per_cpu
            .keys()
            .map(|&c| (c, SegmentIndex::new(segments(events, c))))
            .collect()
    } else {
        BTreeMap::new()
    };
    let mut order: Vec<usize> = (0..late.len()).collect();
    order.sort_by_key(|&k| (late[k].cpu, late[k].intended_ns));
    let mut spikes: Vec<Option<Spike>> = vec![None; late.len()];
    let mut state = CpuState::default();
    let mut cpu = None;
    for k in order {
        let l = &late[k];
        if cpu != Some(l.cpu) {
            cpu = Some(l.cpu);
            state = CpuState::default();
        }
        let on_cpu = &per_cpu[&l.cpu];
        state.replay_to(on_cpu, &prios, l.intended_ns);
        let segs = segs.get(&l.cpu);
        spikes[k] = Some(explain(on_cpu, &prios, segs, state.clone(), l));
    }
    spikes.into_iter().flatten().collect()
}

/// The CPU [`cpu_of`] finds for each of `starts`, in their order, reading the events once.
pub fn cpus_of(events: &[Event], tid: u32, starts: &[u64]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..starts.len()).collect();
    order.sort_by_key(|&k| starts[k]);
    let mut found = vec![None; starts.len()];
    let (mut next, mut last) = (0, None);
    for k in order {
        // `cpu_of` reads the events up to the first one past the start: a prefix that only grows
        // with the start.
        while next < events.len() && events[next].ts_ns <= starts[k] {
            let e = &events[next];
            if matches!(&e.kind, Kind::Switch { next_pid, .. } if *next_pid == tid) || e.pid == tid
            {
                last = Some(e.cpu);
            }
            next += 1;
        }
        found[k] = last;
    }
    found
}

/// What a result's runs recorded in their `attribution` facts, together: the spikes kept (latest
/// first), how many were explained, how many trace events were lost, the threshold, and the runs.
pub struct Recorded {
    pub spikes: Vec<Spike>,
    pub count: u64,
    pub lost: u64,
    pub threshold_ns: f64,
    pub runs: usize,
    /// Why host steal was not separated from the tasks' time (the first run's reason), or None
    /// where every run separated it.
    pub steal_split: Option<String>,
}

/// The attribution facts of `b`'s runs, or None when none was traced.
pub fn recorded(b: &crate::record::BenchmarkResult) -> Option<Recorded> {
    let per_run: Vec<&serde_json::Value> = b
        .run_facts
        .iter()
        .filter_map(|f| f.get("attribution"))
        .collect();
    if per_run.is_empty() {
        return None;
    }
    let mut spikes: Vec<Spike> = per_run
        .iter()
        .filter_map(|a| serde_json::from_value::<Vec<Spike>>(a["top"].clone()).ok())
        .flatten()
        .collect();
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    let sum = |k: &str| per_run.iter().filter_map(|a| a[k].as_u64()).sum();
    Some(Recorded {
        spikes,
        count: sum("spikes"),
        lost: sum("events_lost"),
        threshold_ns: per_run[0]["threshold_ns"].as_f64().unwrap_or(0.0),
        runs: per_run.len(),
        steal_split: per_run
            .iter()
            .find(|a| a["steal_split"]["separated"] != true)
            .map(|a| {
                a["steal_split"]["reason"]
                    .as_str()
                    .unwrap_or("recorded before osgauge separated it")
                    .to_string()
            }),
    })
}

/// A run's `steal` fact: the host steal on the measured CPUs between two samples of
/// [`crate::platform::cputime::cpu_steal_ns`] `run_ns` apart — total and % of the CPUs' time,
/// per CPU — or why it is not applicable or not measurable (never a 0 passed off as measured).
pub fn steal_fact(
    cpus: &[usize],
    before: &Result<(Vec<u64>, u64), String>,
    after: &Result<(Vec<u64>, u64), String>,
    run_ns: u64,
) -> serde_json::Value {
    use serde_json::json;
    match (before, after) {
        (Ok((b, res)), Ok((a, _))) if b.len() == cpus.len() && a.len() == cpus.len() => {
            let per: Vec<u64> = a.iter().zip(b).map(|(a, b)| a.saturating_sub(*b)).collect();
            let ns: u64 = per.iter().sum();
            let cpu_ns = run_ns * cpus.len() as u64;
            json!({
                "measured": true,
                "ns": ns,
                "cpu_ns": cpu_ns,
                "pct_of_run": if cpu_ns > 0 { 100.0 * ns as f64 / cpu_ns as f64 } else { 0.0 },
                "cpus": cpus,
                "per_cpu_ns": per,
                "resolution_ns": res,
                "source": "/proc/stat per-CPU steal column, before and after the run",
            })
        }
        (Err(why), _) | (_, Err(why)) => json!({ "measured": false, "reason": why }),
        _ => json!({ "measured": false, "reason": "not measurable: the CPU list changed" }),
    }
}

/// "host steal on the measured CPUs: 12 ms (0.06 % of their time …)" over a result's runs'
/// `steal` facts (`run_facts`), or "host steal: not applicable: …" where a run could not measure
/// it; None where no run recorded the fact.
pub fn steal_text(run_facts: &[serde_json::Map<String, serde_json::Value>]) -> Option<String> {
    let facts: Vec<&serde_json::Value> = run_facts.iter().filter_map(|f| f.get("steal")).collect();
    let first = facts.first()?;
    if let Some(f) = facts.iter().find(|f| f["measured"] != true) {
        return Some(format!(
            "host steal: {}",
            f["reason"].as_str().unwrap_or("not measured")
        ));
    }
    let sum = |k: &str| facts.iter().filter_map(|f| f[k].as_u64()).sum::<u64>();
    let (ns, cpu_ns) = (sum("ns"), sum("cpu_ns"));
    Some(format!(
        "host steal on the measured CPUs: {} in {} run(s) ({:.2} % of their time; /proc/stat, \
         {} steps)",
        crate::units::format_time_ns(ns as f64),
        facts.len(),
        if cpu_ns > 0 {
            100.0 * ns as f64 / cpu_ns as f64
        } else {
            0.0
        },
        crate::units::format_time_ns(first["resolution_ns"].as_f64().unwrap_or(0.0))
    ))
}

/// The culprits over many spikes: total time per (kind, name, pid), largest first.
pub fn top_culprits(spikes: &[Spike], n: usize) -> Vec<Part> {
    let mut m: Culprits = BTreeMap::new();
    for p in spikes.iter().flat_map(|s| &s.parts) {
        let e = m
            .entry((p.kind, p.name.clone(), p.pid))
            .or_insert((p.prio, 0, false, None));
        e.1 += p.ns;
        e.2 |= p.estimated;
        if let Some(u) = p.steal_unseparated_ns {
            e.3 = Some(e.3.unwrap_or(0) + u);
        }
    }
    let mut v: Vec<Part> = m
        .into_iter()
        .map(
            |((kind, name, pid), (prio, ns, estimated, steal_unseparated_ns))| Part {
                kind,
                name,
                pid,
                prio,
                ns,
                estimated,
                steal_unseparated_ns,
            },
        )
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.ns));
    v.truncate(n);
    v
}

/// One line for a part: "task stress-ng (pid 123, prio 120) 2.9 ms".
pub fn part_text(p: &Part) -> String {
    let t = crate::units::format_time_ns(p.ns as f64);
    match p.kind {
        PartKind::Task => format!(
            "task {} (pid {}, prio {}) {t}{}",
            p.name,
            p.pid.unwrap_or(0),
            p.prio.unwrap_or(0),
            match p.steal_unseparated_ns {
                Some(u) => format!(
                    " (steal not separated from {}: no runtime event covers it)",
                    crate::units::format_time_ns(u as f64)
                ),
                None => String::new(),
            }
        ),
        PartKind::Steal if p.estimated => format!("host (steal) {t} (estimated, prorated)"),
        PartKind::Steal => format!("host (steal) {t}"),
        PartKind::Irq => format!("{} {t}", p.name),
        PartKind::Softirq => format!("softirq {} {t}", p.name),
        PartKind::Timer => format!("{} {t}", p.name),
        PartKind::WakeupPath => format!("wake-up path {t}"),
        PartKind::OwnWork => format!("its own previous period {t}"),
        PartKind::Unexplained => format!("unexplained {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interrupt context charges itself; else the late task is its wake-up path once woken
    /// and its own work before; another task is named; idle is the wake-up path once woken and
    /// unexplained before.
    #[test]
    fn each_stretch_is_charged_to_whoever_held_the_cpu() {
        let own = Some(("me".to_string(), 7, 120));
        let other = Some(("cc1".to_string(), 9, 120));
        let idle = Some(("swapper/0".to_string(), 0, 120));
        let irq = [(PartKind::Irq, "eth0".to_string())];
        let kind = |r: &Option<(String, u32, i32)>, s: &[(PartKind, String)], w: bool| {
            share_key(r, s, w, 7).0
        };
        assert_eq!(share_key(&other, &irq, false, 7).1, "eth0");
        assert_eq!(kind(&other, &irq, true), PartKind::Irq);
        assert_eq!(kind(&own, &[], true), PartKind::WakeupPath);
        assert_eq!(kind(&own, &[], false), PartKind::OwnWork);
        assert_eq!(
            share_key(&other, &[], true, 7),
            (PartKind::Task, "cc1".to_string(), Some(9), Some(120))
        );
        assert_eq!(kind(&idle, &[], true), PartKind::WakeupPath);
        assert_eq!(kind(&None, &[], false), PartKind::Unexplained);
        let mut sweep = Sweep::default();
        sweep.charge(10, 10, share_key(&other, &[], false, 7));
        sweep.charge(10, 25, share_key(&other, &[], false, 7));
        sweep.charge(25, 30, share_key(&own, &[], false, 7));
        sweep.charge(30, 40, share_key(&other, &[], false, 7));
        assert_eq!(sweep.stretches, [(10, 25, 9), (30, 40, 9)]);
        assert_eq!(sweep.shares.values().copied().collect::<Vec<_>>(), [25, 5]);
    }

    pub(super) const TRACE: &str = "\
# tracer: nop
          <idle>-0       [001] d..2.   100.000100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog worker next_pid=777 next_prio=9
     hog worker-777     [001] d.h1.   100.001000: local_timer_entry: vector=236
     hog worker-777     [001] d.h3.   100.001002: sched_waking: comm=osgauge pid=42 prio=120 target_cpu=001
     hog worker-777     [001] d.h1.   100.001004: local_timer_exit: vector=236
     hog worker-777     [001] d.h1.   100.002000: irq_handler_entry: irq=24 name=virtio0-input.0
     hog worker-777     [001] d.h1.   100.002050: irq_handler_exit: irq=24 ret=handled
     hog worker-777     [001] ..s1.   100.002050: softirq_entry: vec=3 [action=NET_RX]
     hog worker-777     [001] ..s1.   100.002150: softirq_exit: vec=3 [action=NET_RX]
     hog worker-777     [001] d..2.   100.004000: sched_switch: prev_comm=hog worker prev_pid=777 prev_prio=9 prev_state=S ==> next_comm=osgauge next_pid=42 next_prio=120
          other-5       [000] d..2.   100.002500: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=b next_pid=6 next_prio=120
";

    #[test]
    fn steal_is_measured_per_cpu_or_said_not_to_be() {
        use serde_json::json;
        let b = Ok((vec![100_000_000, 0], 10_000_000));
        let a = Ok((vec![130_000_000, 10_000_000], 10_000_000));
        let f = steal_fact(&[0, 1], &b, &a, 1_000_000_000);
        assert_eq!(f["measured"], true);
        assert_eq!(f["ns"], 40_000_000);
        assert_eq!(f["per_cpu_ns"], json!([30_000_000, 10_000_000]));
        // 40 ms of 2 CPUs × 1 s.
        assert!((f["pct_of_run"].as_f64().unwrap() - 2.0).abs() < 1e-9);
        let run = |f: serde_json::Value| {
            let mut m = serde_json::Map::new();
            m.insert("steal".into(), f);
            m
        };
        assert_eq!(steal_text(&[]), None, "no fact, no line");
        let mut r = vec![run(f.clone()), run(f)];
        let t = steal_text(&r).unwrap();
        assert!(
            t.contains("80") && t.contains("2 run(s)") && t.contains("2.00 %"),
            "{t}"
        );
        let why: Result<(Vec<u64>, u64), String> = Err("not applicable: bare metal".into());
        let f = steal_fact(&[0, 1], &why, &a, 1_000_000_000);
        assert_eq!(f["measured"], false);
        assert!(f.get("ns").is_none(), "no figure where none was measured");
        r.push(run(f));
        assert_eq!(
            steal_text(&r).unwrap(),
            "host steal: not applicable: bare metal"
        );
    }

    #[test]
    fn lines_parse_with_spaces_in_names_and_headers_skipped() {
        let ev = parse(TRACE);
        assert_eq!(ev.len(), 10, "{ev:#?}");
        assert_eq!(ev[0].ts_ns, 100_000_100_000);
        assert_eq!(
            ev[0].kind,
            Kind::Switch {
                prev_pid: 0,
                next_comm: "hog worker".into(),
                next_pid: 777,
                next_prio: 9
            }
        );
        assert_eq!(ev[2].kind, Kind::Waking { pid: 42, prio: 120 });
        assert_eq!((ev[1].comm.as_str(), ev[1].pid), ("hog worker", 777));
        assert_eq!((ev[0].comm.as_str(), ev[0].pid), ("<idle>", 0));
        assert_eq!(
            ev[4].kind,
            Kind::IrqEntry {
                name: "irq 24 virtio0-input.0".into()
            }
        );
        assert_eq!(
            ev[6].kind,
            Kind::SoftirqEntry {
                name: "NET_RX".into()
            }
        );
        assert_eq!(ev[9].cpu, 0);
    }

    #[test]
    fn a_hog_holding_the_cpu_is_named_and_the_parts_add_up() {
        let ev = parse(TRACE);
        // Intended at 100.001000 (the timer fires), woke at 100.004010 (10 µs after the switch).
        let late = Late {
            cpu: 1,
            tid: 42,
            intended_ns: 100_001_000_000,
            actual_ns: 100_004_010_000,
        };
        let s = attribute(&ev, &late, true);
        assert_eq!(s.latency_ns, 3_010_000);
        let total: u64 = s.parts.iter().map(|p| p.ns).sum();
        assert_eq!(total, s.latency_ns, "the parts add up: {:?}", s.parts);
        let hog = &s.parts[0];
        assert_eq!(
            (hog.kind, hog.name.as_str(), hog.pid, hog.prio),
            (PartKind::Task, "hog worker", Some(777), Some(9))
        );
        // The hog's own time: 3.010 ms − timer 4 µs − IRQ 50 µs − softirq 100 µs − 10 µs wake-up.
        assert_eq!(hog.ns, 3_010_000 - 4_000 - 50_000 - 100_000 - 10_000);
        let get = |k: PartKind| s.parts.iter().find(|p| p.kind == k).map(|p| p.ns);
        assert_eq!(get(PartKind::Timer), Some(4_000));
        assert_eq!(get(PartKind::Irq), Some(50_000));
        assert_eq!(get(PartKind::Softirq), Some(100_000));
        assert_eq!(get(PartKind::WakeupPath), Some(10_000));
        assert_eq!(get(PartKind::Unexplained), None);
        assert!(part_text(hog).starts_with("task hog worker (pid 777, prio 9) "));
        let top = top_culprits(&[s.clone(), s.clone()], 2);
        assert_eq!(top[0].name, "hog worker");
        assert_eq!(top[0].ns, 2 * hog.ns);
        assert_eq!(top.len(), 2);
    }

    #[test]
    fn a_task_switched_in_from_idle_without_a_switch_event_is_named_by_its_lines() {
        // This kernel records no sched_switch out of idle: the hog shows only as the current
        // task of its lines.
        let t = "\
          <idle>-0       [001] d.h3.  100.000100: sched_waking: comm=hog pid=777 prio=49 target_cpu=001
             hog-777     [001] d.h..  100.001000: local_timer_entry: vector=236
             hog-777     [001] d.h2.  100.001001: sched_waking: comm=osgauge pid=42 prio=120 target_cpu=001
             hog-777     [001] d.h..  100.001002: local_timer_exit: vector=236
             hog-777     [001] d..2.  100.003000: sched_switch: prev_comm=hog prev_pid=777 prev_prio=49 prev_state=S ==> next_comm=osgauge next_pid=42 next_prio=120
";
        let s = attribute(
            &parse(t),
            &Late {
                cpu: 1,
                tid: 42,
                intended_ns: 100_000_990_000,
                actual_ns: 100_003_010_000,
            },
            true,
        );
        let hog = &s.parts[0];
        assert_eq!(
            (hog.kind, hog.pid, hog.prio),
            (PartKind::Task, Some(777), Some(49))
        );
        // From its first line in the window; the 10 µs before it, when the last line seen was
        // idle's, no event explains: unexplained, not guessed.
        assert_eq!(hog.ns, 1_998_000);
        let un = s
            .parts
            .iter()
            .find(|p| p.kind == PartKind::Unexplained)
            .unwrap();
        assert_eq!(un.ns, 10_000);
        assert_eq!(s.parts.iter().map(|p| p.ns).sum::<u64>(), s.latency_ns);
    }

    #[test]
    fn a_thread_running_its_own_overrun_is_its_own_previous_period() {
        // The task (pid 42) never slept: its previous frame ran until 100.002000.
        let t = "\
         osgauge-42      [001] d.h..  100.000900: local_timer_entry: vector=236
         osgauge-42      [001] d.h..  100.000910: local_timer_exit: vector=236
";
        let s = attribute(
            &parse(t),
            &Late {
                cpu: 1,
                tid: 42,
                intended_ns: 100_001_000_000,
                actual_ns: 100_002_000_000,
            },
            true,
        );
        assert_eq!(s.parts.len(), 1, "{:?}", s.parts);
        assert_eq!(
            (s.parts[0].kind, s.parts[0].ns),
            (PartKind::OwnWork, 1_000_000)
        );
        assert!(part_text(&s.parts[0]).starts_with("its own previous period"));
        assert_eq!(cpu_of(&parse(t), 42, 100_002_000_000), Some(1));
        assert_eq!(cpu_of(&parse(t), 7, 100_002_000_000), None);
    }

    #[test]
    fn an_idle_cpu_with_no_events_is_unexplained_never_hidden() {
        let ev = parse(
            "          <idle>-0       [001] d..2.   100.000100: sched_switch: prev_comm=x prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n",
        );
        let s = attribute(
            &ev,
            &Late {
                cpu: 1,
                tid: 42,
                intended_ns: 100_001_000_000,
                actual_ns: 100_001_080_000,
            },
            true,
        );
        assert_eq!(s.parts.len(), 1);
        assert_eq!(s.parts[0].kind, PartKind::Unexplained);
        assert_eq!(s.parts[0].ns, 80_000);
    }

    /// A hog switched in at 100.000000 runs two runtime stretches: 1 ms of wall with 600 µs of
    /// run time (400 µs taken by the host), then 1 ms with 1 ms; the measured thread (42) is
    /// switched in at 100.002000 and reads its clock 10 µs later.
    pub(super) const STEAL: &str = "\
          <idle>-0       [001] d..2.   100.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=777 next_prio=120
             hog-777     [001] d..2.   100.001000: sched_stat_runtime: comm=hog pid=777 runtime=600000 [ns]
             hog-777     [001] d..2.   100.002000: sched_stat_runtime: comm=hog pid=777 runtime=1000000 [ns]
             hog-777     [001] d..2.   100.002000: sched_switch: prev_comm=hog prev_pid=777 prev_prio=120 prev_state=R ==> next_comm=osgauge next_pid=42 next_prio=120
";

    fn spike(trace: &str, intended_ns: u64, split: bool) -> Spike {
        let s = attribute(
            &parse(trace),
            &Late {
                cpu: 1,
                tid: 42,
                intended_ns,
                actual_ns: 100_002_010_000,
            },
            split,
        );
        assert_eq!(
            s.parts.iter().map(|p| p.ns).sum::<u64>(),
            s.latency_ns,
            "the parts add up: {:?}",
            s.parts
        );
        s
    }

    fn part(s: &Spike, k: PartKind) -> Option<&Part> {
        s.parts.iter().find(|p| p.kind == k)
    }

    #[test]
    fn runtime_events_parse() {
        let ev = parse(STEAL);
        assert_eq!(
            ev[1].kind,
            Kind::Runtime {
                pid: 777,
                runtime_ns: 600_000
            }
        );
        let segs = segments(&ev, 1);
        assert_eq!(segs.len(), 2);
        assert_eq!(
            (segs[0].start_ns, segs[0].end_ns, segs[0].runtime_ns),
            (Some(100_000_000_000), 100_001_000_000, 600_000)
        );
        assert_eq!(
            segs[1].start_ns,
            Some(100_001_000_000),
            "the previous update"
        );
        assert!(segments(&ev, 0).is_empty(), "another CPU's");
        // A switch 3 µs after the outgoing task's last update: its switch path is a segment of
        // its own, without steal, and the incoming task's clock starts at that update.
        let t = format!(
            "{}{}",
            STEAL.replace("100.002000: sched_switch", "100.002003: sched_switch"),
            "         osgauge-42      [001] d..2.   100.002500: sched_stat_runtime: comm=osgauge pid=42 runtime=500000 [ns]\n"
        );
        let segs = segments(&parse(&t), 1);
        assert_eq!(segs.len(), 4, "{segs:?}");
        assert_eq!(
            (
                segs[2].pid,
                segs[2].start_ns,
                segs[2].end_ns,
                segs[2].runtime_ns
            ),
            (777, Some(100_002_000_000), 100_002_003_000, 3_000)
        );
        assert_eq!((segs[3].pid, segs[3].start_ns), (42, Some(100_002_000_000)));
        let s = attribute(
            &parse(&t),
            &Late {
                cpu: 1,
                tid: 42,
                intended_ns: 100_000_000_000,
                actual_ns: 100_002_010_000,
            },
            true,
        );
        let hog = s.parts.iter().find(|p| p.kind == PartKind::Task).unwrap();
        assert_eq!(
            (hog.ns, hog.steal_unseparated_ns),
            (1_603_000, None),
            "the switch path is covered"
        );
    }

    #[test]
    fn a_task_that_ran_less_than_its_wall_time_gives_the_rest_to_the_host() {
        let s = spike(STEAL, 100_000_000_000, true);
        let hog = part(&s, PartKind::Task).unwrap();
        assert_eq!((hog.pid, hog.ns), (Some(777), 1_600_000));
        assert_eq!(hog.steal_unseparated_ns, None);
        let st = part(&s, PartKind::Steal).unwrap();
        assert_eq!(st.ns, 400_000);
        assert!(!st.estimated, "whole stretches inside the spike");
        assert_eq!(part_text(st), "host (steal) 400.0 µs");
        assert_eq!(part(&s, PartKind::OwnWork).unwrap().ns, 10_000);
        assert_eq!(s.parts[0].kind, PartKind::Task, "largest first");
        // Without the split (a kernel whose task clock counts steal): all on the task.
        let s = spike(STEAL, 100_000_000_000, false);
        assert_eq!(part(&s, PartKind::Task).unwrap().ns, 2_000_000);
        assert_eq!(part(&s, PartKind::Steal), None);
        assert_eq!(part(&s, PartKind::Task).unwrap().steal_unseparated_ns, None);
    }

    #[test]
    fn a_stretch_reaching_outside_the_spike_is_prorated_and_marked_estimated() {
        // The spike starts half-way into the first stretch: half its 400 µs of steal.
        let s = spike(STEAL, 100_000_500_000, true);
        assert_eq!(part(&s, PartKind::Task).unwrap().ns, 1_300_000);
        let st = part(&s, PartKind::Steal).unwrap();
        assert_eq!(st.ns, 200_000);
        assert!(st.estimated);
        assert!(part_text(st).contains("estimated"), "{}", part_text(st));
        let culprits = top_culprits(&[s.clone(), s], 5);
        let st = culprits.iter().find(|p| p.kind == PartKind::Steal).unwrap();
        assert_eq!(
            (st.ns, st.estimated),
            (400_000, true),
            "summed, still marked"
        );
    }

    #[test]
    fn without_runtime_events_steal_is_not_separated_nor_guessed() {
        let no_runtime: String = STEAL
            .lines()
            .filter(|l| !l.contains("sched_stat_runtime"))
            .map(|l| format!("{l}\n"))
            .collect();
        let s = spike(&no_runtime, 100_000_000_000, true);
        let hog = part(&s, PartKind::Task).unwrap();
        assert_eq!(hog.ns, 2_000_000, "the whole time stays on the task");
        assert_eq!(hog.steal_unseparated_ns, Some(2_000_000));
        assert!(
            part_text(hog).contains("steal not separated from 2"),
            "{}",
            part_text(hog)
        );
        assert_eq!(part(&s, PartKind::Steal), None);
        // A task whose switch-in no event shows (from idle on this kernel): its first stretch's
        // start is unknown, so that stretch stays on it; the next one is separated.
        let from_idle: String = STEAL.lines().skip(1).map(|l| format!("{l}\n")).collect();
        let s = spike(&from_idle, 100_000_000_000, true);
        let hog = part(&s, PartKind::Task).unwrap();
        // Charged from its first line (100.001000): 1 ms, all in the second, fully counted
        // stretch: no steal, nothing unseparated; the first millisecond is unexplained.
        assert_eq!((hog.ns, hog.steal_unseparated_ns), (1_000_000, None));
        assert_eq!(part(&s, PartKind::Unexplained).unwrap().ns, 1_000_000);
    }

    #[test]
    fn a_runtime_above_the_wall_time_is_no_negative_steal() {
        // The scheduler clock runs a little ahead of the trace timestamps: 1.02 ms counted in
        // 1 ms of wall time, then 0.98 ms in 1 ms — the skew cancels, no steal.
        let t = STEAL
            .replace("runtime=600000", "runtime=1020000")
            .replace("runtime=1000000", "runtime=980000");
        let s = spike(&t, 100_000_000_000, true);
        assert_eq!(part(&s, PartKind::Steal), None, "{:?}", s.parts);
        assert_eq!(part(&s, PartKind::Task).unwrap().ns, 2_000_000);
        // All skew: still never below zero nor above the task's time.
        let t = STEAL.replace("runtime=1000000", "runtime=9000000");
        let s = spike(&t, 100_000_000_000, true);
        assert_eq!(part(&s, PartKind::Steal), None);
    }

    #[test]
    fn steal_within_the_timestamps_resolution_stays_on_the_task() {
        // 1.5 µs short over two segments (2 µs of rounding): not told apart.
        let t = STEAL.replace("runtime=600000", "runtime=998500");
        let s = spike(&t, 100_000_000_000, true);
        assert_eq!(part(&s, PartKind::Steal), None, "{:?}", s.parts);
        // 2.5 µs: separated.
        let t = STEAL.replace("runtime=600000", "runtime=997500");
        let s = spike(&t, 100_000_000_000, true);
        assert_eq!(part(&s, PartKind::Steal).map(|p| p.ns), Some(2_500));
    }

    #[test]
    fn the_summary_says_whether_steal_was_separated() {
        let late = vec![Late {
            cpu: 1,
            tid: 42,
            intended_ns: 100_000_000_000,
            actual_ns: 100_002_010_000,
        }];
        let a = summary(STEAL, 0, late.clone(), 100_000, 5, Ok(()));
        assert_eq!(a["steal_split"]["separated"], true);
        assert_eq!(a["top"][0]["parts"][1]["kind"], "steal");
        let why = "this kernel has no CONFIG_PARAVIRT_TIME_ACCOUNTING";
        let a = summary(STEAL, 0, late, 100_000, 5, Err(why.into()));
        assert_eq!(a["steal_split"]["separated"], false);
        assert_eq!(a["steal_split"]["reason"], why);
        assert!(
            a["top"][0]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["kind"] != "steal")
        );
        // Parts of records before the split read back.
        let old: Part =
            serde_json::from_str(r#"{"kind":"task","name":"x","pid":1,"ns":5}"#).unwrap();
        assert_eq!((old.estimated, old.steal_unseparated_ns), (false, None));
    }
}

#[cfg(test)]
mod whole_trace_tests {
    use super::*;

    /// Late wake-ups over every stretch between two events of each CPU, overlapping and in no
    /// time order, for the thread of every pid the trace names.
    fn lates(events: &[Event]) -> Vec<Late> {
        let mut v = Vec::new();
        let mut pids: Vec<u32> = events.iter().map(|e| e.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        for (i, a) in events.iter().enumerate() {
            for b in events[i + 1..].iter().take(6) {
                for &tid in pids.iter().take(3) {
                    v.push(Late {
                        cpu: a.cpu,
                        tid,
                        intended_ns: a.ts_ns,
                        actual_ns: b.ts_ns.max(a.ts_ns + 1),
                    });
                }
            }
        }
        v.reverse();
        v
    }

    /// One pass over the trace explains every late wake-up exactly as one replay per wake-up.
    #[test]
    fn attribute_all_explains_as_attribute_does() {
        for text in [super::tests::TRACE, super::tests::STEAL] {
            let ev = parse(text);
            let late = lates(&ev);
            assert!(late.len() >= 10, "{}", late.len());
            for split in [false, true] {
                let one_by_one: Vec<Spike> =
                    late.iter().map(|l| attribute(&ev, l, split)).collect();
                assert_eq!(attribute_all(&ev, &late, split), one_by_one);
            }
        }
    }

    /// The same on a long synthetic trace of two CPUs: switches, wakings, nested interrupts,
    /// runtime updates in random order of kinds (a fixed-seed generator).
    #[test]
    fn attribute_all_explains_a_long_trace_as_attribute_does() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut ev = Vec::new();
        let mut ts = 1_000_000u64;
        for _ in 0..3000 {
            ts += 1 + rnd(5000);
            let cpu = rnd(2) as usize;
            let pid = [0, 42, 7, 99][rnd(4) as usize];
            let kind = match rnd(9) {
                0 | 1 => Kind::Switch {
                    prev_pid: pid,
                    next_comm: format!("t{}", rnd(4)),
                    next_pid: [0, 42, 7, 99][rnd(4) as usize],
                    next_prio: 100 + rnd(40) as i32,
                },
                2 => Kind::Waking {
                    pid: [42, 7][rnd(2) as usize],
                    prio: 120,
                },
                3 => Kind::IrqEntry {
                    name: "eth0".into(),
                },
                4 => Kind::IrqExit,
                5 => Kind::SoftirqEntry {
                    name: "NET_RX".into(),
                },
                6 => Kind::SoftirqExit,
                7 => Kind::TimerEntry,
                _ => Kind::Runtime {
                    pid,
                    runtime_ns: rnd(4000),
                },
            };
            ev.push(Event {
                ts_ns: ts,
                cpu,
                comm: format!("c{pid}"),
                pid,
                kind,
            });
        }
        let late: Vec<Late> = (0..300)
            .map(|_| {
                let at = 1_000_000 + rnd(ts - 1_000_000);
                Late {
                    cpu: rnd(2) as usize,
                    tid: 42,
                    intended_ns: at,
                    actual_ns: at + 1 + rnd(200_000),
                }
            })
            .collect();
        for split in [false, true] {
            let one_by_one: Vec<Spike> = late.iter().map(|l| attribute(&ev, l, split)).collect();
            assert_eq!(attribute_all(&ev, &late, split), one_by_one);
        }
        let starts: Vec<u64> = late.iter().map(|l| l.actual_ns).collect();
        let each: Vec<Option<usize>> = starts.iter().map(|&s| cpu_of(&ev, 42, s)).collect();
        assert_eq!(cpus_of(&ev, 42, &starts), each);
    }

    /// One pass finds the CPU of every start as `cpu_of` does, whatever the starts' order.
    #[test]
    fn cpus_of_finds_what_cpu_of_finds() {
        for text in [super::tests::TRACE, super::tests::STEAL] {
            let ev = parse(text);
            let mut starts: Vec<u64> = ev.iter().map(|e| e.ts_ns).collect();
            starts.extend(ev.iter().map(|e| e.ts_ns + 1));
            starts.push(0);
            starts.reverse();
            let mut pids: Vec<u32> = ev.iter().map(|e| e.pid).collect();
            pids.push(999_999);
            for tid in pids {
                let each: Vec<Option<usize>> =
                    starts.iter().map(|&s| cpu_of(&ev, tid, s)).collect();
                assert_eq!(cpus_of(&ev, tid, &starts), each);
            }
        }
    }
}
