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
/// A culprit's identity over spikes (kind, name, pid) → (priority, total ns).
type Culprits = BTreeMap<(PartKind, String, Option<u32>), (Option<i32>, u64)>;

/// A late wake-up to explain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Late {
    pub cpu: usize,
    /// The measured thread's id.
    pub tid: u32,
    pub intended_ns: u64,
    pub actual_ns: u64,
}

/// Explain `late` from `events` (every CPU's, in time order).
pub fn attribute(events: &[Event], late: &Late) -> Spike {
    // State on this CPU at the window's start: the task running and the interrupt stack, from
    // the events before it.
    let on_cpu: Vec<&Event> = events.iter().filter(|e| e.cpu == late.cpu).collect();
    let mut running: Option<(String, u32, i32)> = None;
    let mut stack: Vec<(PartKind, String)> = Vec::new();
    let mut woken = false;
    // Kernel priority per pid, from any event that names it.
    let mut prios: BTreeMap<u32, i32> = BTreeMap::new();
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
            Kind::Waking { pid, .. } if *pid == late.tid => *woken = true,
            Kind::Waking { .. } => {}
            Kind::IrqEntry { name } => stack.push((PartKind::Irq, name.clone())),
            Kind::SoftirqEntry { name } => stack.push((PartKind::Softirq, name.clone())),
            Kind::TimerEntry => stack.push((PartKind::Timer, "local timer interrupt".into())),
            Kind::IrqExit | Kind::SoftirqExit | Kind::TimerExit => {
                stack.pop();
            }
        }
    };
    let mut i = 0;
    while i < on_cpu.len() && on_cpu[i].ts_ns <= late.intended_ns {
        apply(on_cpu[i], &mut running, &mut stack, &mut woken);
        i += 1;
    }
    // A waking before the intended time was an earlier period's.
    woken = false;
    let mut shares: BTreeMap<ShareKey, u64> = BTreeMap::new();
    let mut t = late.intended_ns;
    let charge = |from: u64,
                  to: u64,
                  running: &Option<(String, u32, i32)>,
                  stack: &[(PartKind, String)],
                  woken: bool,
                  shares: &mut BTreeMap<ShareKey, u64>| {
        if to <= from {
            return;
        }
        let key = if let Some((k, n)) = stack.last() {
            (*k, n.clone(), None, None)
        } else {
            match running {
                Some((_, pid, _)) if *pid == late.tid && woken => {
                    (PartKind::WakeupPath, String::new(), None, None)
                }
                Some((_, pid, _)) if *pid == late.tid => {
                    (PartKind::OwnWork, String::new(), None, None)
                }
                Some((comm, pid, prio)) if *pid != 0 => {
                    (PartKind::Task, comm.clone(), Some(*pid), Some(*prio))
                }
                _ if woken => (PartKind::WakeupPath, String::new(), None, None),
                _ => (PartKind::Unexplained, String::new(), None, None),
            }
        };
        *shares.entry(key).or_default() += to - from;
    };
    while i < on_cpu.len() && on_cpu[i].ts_ns < late.actual_ns {
        let e = on_cpu[i];
        charge(t, e.ts_ns, &running, &stack, woken, &mut shares);
        t = e.ts_ns;
        apply(e, &mut running, &mut stack, &mut woken);
        i += 1;
    }
    charge(t, late.actual_ns, &running, &stack, woken, &mut shares);
    let mut parts: Vec<Part> = shares
        .into_iter()
        .map(|((kind, name, pid, prio), ns)| Part {
            kind,
            name,
            pid,
            prio,
            ns,
        })
        .collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
    Spike {
        cpu: late.cpu,
        at_ns: late.intended_ns,
        latency_ns: late.actual_ns.saturating_sub(late.intended_ns),
        parts,
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
pub fn summary(
    text: &str,
    lost: u64,
    mut late: Vec<Late>,
    threshold_ns: u64,
    top: usize,
) -> serde_json::Value {
    let events = parse(text);
    late.sort_by_key(|l| std::cmp::Reverse(l.actual_ns - l.intended_ns));
    let spikes: Vec<Spike> = late.iter().map(|l| attribute(&events, l)).collect();
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
        "culprits": top_culprits(&spikes, top.max(10)),
        "top": spikes.iter().take(top).collect::<Vec<_>>(),
    })
}

/// What a result's runs recorded in their `attribution` facts, together: the spikes kept (latest
/// first), how many were explained, how many trace events were lost, the threshold, and the runs.
pub struct Recorded {
    pub spikes: Vec<Spike>,
    pub count: u64,
    pub lost: u64,
    pub threshold_ns: f64,
    pub runs: usize,
}

/// The attribution facts of `b`'s runs, or None when none was traced.
pub fn recorded(b: &crate::model::BenchmarkResult) -> Option<Recorded> {
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
    })
}

/// The culprits over many spikes: total time per (kind, name, pid), largest first.
pub fn top_culprits(spikes: &[Spike], n: usize) -> Vec<Part> {
    let mut m: Culprits = BTreeMap::new();
    for p in spikes.iter().flat_map(|s| &s.parts) {
        let e = m
            .entry((p.kind, p.name.clone(), p.pid))
            .or_insert((p.prio, 0));
        e.1 += p.ns;
    }
    let mut v: Vec<Part> = m
        .into_iter()
        .map(|((kind, name, pid), (prio, ns))| Part {
            kind,
            name,
            pid,
            prio,
            ns,
        })
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
            "task {} (pid {}, prio {}) {t}",
            p.name,
            p.pid.unwrap_or(0),
            p.prio.unwrap_or(0)
        ),
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

    const TRACE: &str = "\
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
        let s = attribute(&ev, &late);
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
        );
        assert_eq!(s.parts.len(), 1);
        assert_eq!(s.parts[0].kind, PartKind::Unexplained);
        assert_eq!(s.parts[0].ns, 80_000);
    }
}
