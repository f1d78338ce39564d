//! The suite registry: the one list through which the runner and `osgauge run` find every suite.
//! Each suite is a folder of `src/bench/` whose `mod.rs` lists its benchmarks (`benchmarks()`,
//! or `quick_benchmarks()` for a study whose full matrix has a command of its own), says what it
//! measures (`DESCRIPTION`) and which figures the summary of a run shows first (`HEADLINES`);
//! adding a suite adds one entry here and touches no other suite.

use std::path::PathBuf;

use crate::record::RunRecord;

use super::{Benchmark, Headlines, cpu, frame, fs, interactivity, latency, mem, net, policy, proc};

pub struct Suite {
    pub name: &'static str,
    pub description: &'static str,
    /// The figures the summary of a run shows first for this suite.
    pub headlines: Headlines,
    /// What the suite says about a run once every benchmark has run, whichever suites ran.
    pub notes: Option<RunNotes>,
    pub benchmarks: Vec<Box<dyn Benchmark>>,
}

/// A suite's notes on a run, added to its warnings once every benchmark has run: one per record
/// (an A/B run has one record per setting), None where it has nothing to say. The suite may
/// measure once more for them after the run, not when `interrupted`.
pub type RunNotes = fn(records: &[RunRecord], interrupted: bool) -> Vec<Option<String>>;

/// Options that change how suites are built (the quick preset's lighter configurations and
/// suite-specific `micro` options). One field per suite that has options, each the suite's own
/// type with its `Default` (the standard configuration); a caller names only the suites it
/// changes (`SuiteOptions { latency: …, ..Default::default() }`), so a new suite with options
/// adds its field here (and its line in [`SuiteOptions::quick`] if it has a lighter one) and
/// touches no caller.
#[derive(Debug, Clone, Default)]
pub struct SuiteOptions {
    pub mem: mem::MemOptions,
    pub net: net::NetOptions,
    pub fs: fs::FsOptions,
    pub latency: latency::LatencyOptions,
    pub frame: frame::FrameOptions,
    pub interactivity: interactivity::InteractivityOptions,
}

impl SuiteOptions {
    /// The quick preset: each suite in its lighter configuration where it has one.
    pub fn quick() -> SuiteOptions {
        SuiteOptions {
            mem: mem::MemOptions::quick(),
            net: net::NetOptions::quick(),
            fs: fs::FsOptions::quick(),
            frame: frame::FrameOptions::quick(),
            interactivity: interactivity::InteractivityOptions::quick(),
            ..Default::default()
        }
    }
}

/// Every suite, in the order `run` executes them, with default options.
pub fn suites() -> Vec<Suite> {
    suites_with(&SuiteOptions::default())
}

/// Every suite, built with `opts`.
pub fn suites_with(opts: &SuiteOptions) -> Vec<Suite> {
    vec![
        Suite {
            name: "cpu",
            description: cpu::DESCRIPTION,
            headlines: cpu::HEADLINES,
            notes: None,
            benchmarks: cpu::benchmarks(),
        },
        Suite {
            name: "proc",
            description: proc::DESCRIPTION,
            headlines: proc::HEADLINES,
            notes: None,
            benchmarks: proc::benchmarks(),
        },
        Suite {
            name: "mem",
            description: mem::DESCRIPTION,
            headlines: mem::HEADLINES,
            notes: None,
            benchmarks: mem::benchmarks(&opts.mem),
        },
        Suite {
            name: "net",
            description: net::DESCRIPTION,
            headlines: net::HEADLINES,
            notes: None,
            benchmarks: net::benchmarks(&opts.net),
        },
        Suite {
            name: "fs",
            description: fs::DESCRIPTION,
            headlines: fs::HEADLINES,
            notes: None,
            benchmarks: fs::benchmarks(&opts.fs),
        },
        Suite {
            name: "frame",
            description: frame::DESCRIPTION,
            headlines: frame::HEADLINES,
            notes: None,
            benchmarks: frame::benchmarks(&opts.frame),
        },
        Suite {
            name: "latency",
            description: latency::DESCRIPTION,
            headlines: latency::HEADLINES,
            notes: Some(latency::idle_wakeup::run_notes),
            benchmarks: latency::benchmarks(&opts.latency),
        },
        Suite {
            name: "interactivity",
            description: interactivity::DESCRIPTION,
            headlines: interactivity::HEADLINES,
            notes: None,
            benchmarks: interactivity::quick_benchmarks(&opts.interactivity),
        },
        Suite {
            name: "policy",
            description: policy::DESCRIPTION,
            headlines: policy::HEADLINES,
            notes: None,
            benchmarks: policy::quick_benchmarks(),
        },
    ]
}

/// Each suite's headline figures by suite name, for the summary of a run
/// (`output::summary::render_summary`).
pub fn headlines() -> Vec<(&'static str, Headlines)> {
    suites()
        .into_iter()
        .map(|s| (s.name, s.headlines))
        .collect()
}

/// Each record's notes from every suite ([`Suite::notes`]), in suite order.
pub fn run_notes(records: &[RunRecord], interrupted: bool) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new(); records.len()];
    for notes in suites().iter().filter_map(|s| s.notes) {
        for (o, n) in out.iter_mut().zip(notes(records, interrupted)) {
            o.extend(n);
        }
    }
    out
}

/// Everything dead osgauge processes left: their temp files and folders of every kind, the file
/// system suite's work folders, the interactivity load folders under the default load base. Run
/// at the start of every command; the suites' own sweeps are listed here, beside the suites.
pub fn remove_leftovers() -> Vec<PathBuf> {
    let mut gone =
        crate::tempfiles::remove_stale_in(&std::env::temp_dir(), crate::tempfiles::KINDS);
    // The file-system suite's work folders in the current directory (its default --dir) and the
    // temp dir: stale when no live osgauge holds their lock (a folder under another --dir goes
    // at that dir's next use).
    gone.extend(fs::workdir::clean_stale(&std::env::temp_dir()));
    if let Ok(cwd) = std::env::current_dir() {
        gone.extend(fs::workdir::clean_stale(&cwd));
    }
    // Tracing settings a killed `latency --attribute` changed are put back (its state file goes).
    gone.extend(crate::platform::tracefs::restore_stale());
    gone.extend(crate::workload::load::remove_stale(
        &crate::workload::load::default_load_base(),
        &[],
    ));
    gone
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn metrics_named_in_a_unit_are_stored_in_it() {
        for s in suites() {
            for b in &s.benchmarks {
                for m in &b.info().metrics {
                    if let Some(u) = crate::units::unit_of_suffix(m.name) {
                        assert_eq!(
                            m.unit,
                            u,
                            "{}/{}: the name promises {}, the unit is {}",
                            b.info().id,
                            m.name,
                            u.symbol(),
                            m.unit.symbol()
                        );
                    }
                }
            }
        }
    }

    /// The summary's headlines as `output/summary.rs` listed them before each suite declared its
    /// own (benchmark id, metric, label): the summary prints them in this order.
    const HEADLINES_BEFORE: &[(&str, &str, &str)] = &[
        ("cpu/null_syscall", "", "null system call"),
        ("cpu/io_syscall", "", "1-byte read"),
        ("proc/fork_exit", "", "fork + exit"),
        ("proc/thread_create", "", "thread create + join"),
        (
            "proc/ctx_switch_thread_pinned",
            "switch",
            "context switch (threads, pinned)",
        ),
        ("mem/latency_random", "ram", "load latency, RAM"),
        ("mem/bandwidth_1t", "copy", "copy bandwidth, 1 thread"),
        ("mem/bandwidth_all", "copy", "copy bandwidth, all CPUs"),
        ("net/tcp_rtt_64b", "rtt_p50_us", "TCP round trip 64 B, p50"),
        ("net/tcp_stream", "throughput_gbit_s", "TCP stream"),
        ("net/udp_stream", "jitter_p99_us", "UDP jitter p99"),
        (
            "fs/read_latency",
            "random_block_*",
            "random 4 KiB read, uncached",
        ),
        ("fs/seq_read_t1", "mb_per_s", "sequential read, 1 thread"),
        ("fs/seq_write_t1", "mb_per_s", "sequential write, 1 thread"),
        ("fs/fsync", "write_fsync", "write + fsync"),
        (
            "frame/pacing_60fps_1mp",
            "period_dev_p99",
            "60 fps: p99 period deviation",
        ),
        ("frame/pacing_60fps_1mp", "late_pct", "60 fps: frames late"),
        ("latency/wakeup", "latency", "timer wake-up latency, p50"),
        (
            "latency/wakeup",
            "latency_p99",
            "timer wake-up latency, p99",
        ),
        ("latency/noise", "noise_pct", "OS noise (busy loop per CPU)"),
        (
            "latency/idle_wakeup",
            "idle_exit",
            "waking an idle CPU (idle − busy)",
        ),
    ];

    #[test]
    fn the_suites_headlines_are_the_summarys_old_list_in_its_order() {
        let listed: Vec<(&str, &str, &str)> = headlines()
            .iter()
            .filter_map(|(_, h)| match h {
                Headlines::Listed(l) => Some(*l),
                Headlines::Picked(_) => None,
            })
            .flatten()
            .map(|h| (h.id, h.metric, h.label))
            .collect();
        assert_eq!(listed, HEADLINES_BEFORE);
        // The one label that changes when other work competed for the CPUs.
        let busy: Vec<(&str, &str)> = headlines()
            .iter()
            .filter_map(|(_, h)| match h {
                Headlines::Listed(l) => Some(*l),
                Headlines::Picked(_) => None,
            })
            .flatten()
            .filter_map(|h| Some((h.label, h.label_when_busy?)))
            .collect();
        assert_eq!(
            busy,
            [(
                "OS noise (busy loop per CPU)",
                "noise incl. other processes"
            )]
        );
        let picked: Vec<&str> = headlines()
            .iter()
            .filter(|(_, h)| matches!(h, Headlines::Picked(_)))
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(picked, ["interactivity", "policy"]);
    }

    /// A suite's headline names one of its own benchmarks (as built with the default options) and
    /// a metric that benchmark declares, and its label fits a summary row.
    #[test]
    fn every_headline_names_a_metric_of_its_suite() {
        for s in suites() {
            let Headlines::Listed(list) = s.headlines else {
                continue;
            };
            for h in list {
                let b = s.benchmarks.iter().find(|b| b.info().id == h.id);
                let b = b.unwrap_or_else(|| panic!("{}: no benchmark {}", s.name, h.id));
                let names: Vec<&str> = b.info().metrics.iter().map(|m| m.name).collect();
                let found = match h.metric.strip_suffix('*') {
                    _ if h.metric.is_empty() => true,
                    Some(prefix) => names.iter().any(|n| n.starts_with(prefix)),
                    None => names.contains(&h.metric),
                };
                assert!(found, "{} has no metric {} ({names:?})", h.id, h.metric);
                for l in std::iter::once(h.label).chain(h.label_when_busy) {
                    let w = crate::output::width(l);
                    assert!(w <= crate::output::summary::LABEL_W, "{l}: {w} columns");
                }
            }
        }
    }

    /// One list of notes per record, from the suites that declare notes (the latency suite:
    /// the idle exit); a record without wake-up figures gets none (and needs no measuring).
    #[test]
    fn run_notes_are_one_list_per_record() {
        let with_notes: Vec<&str> = suites()
            .iter()
            .filter(|s| s.notes.is_some())
            .map(|s| s.name)
            .collect();
        assert_eq!(with_notes, ["latency"]);
        let r: RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/cpu-a.json")).unwrap();
        assert!(!latency::idle_wakeup::needs_idle_exit(&r));
        assert_eq!(
            run_notes(&[r.clone(), r], false),
            [Vec::<String>::new(), Vec::new()]
        );
    }

    #[test]
    fn ids_are_unique_and_prefixed_by_their_suite() {
        let mut seen = HashSet::new();
        for s in suites() {
            assert!(!s.benchmarks.is_empty(), "suite {} is empty", s.name);
            for b in &s.benchmarks {
                let i = b.info();
                assert!(seen.insert(i.id.clone()), "duplicate id {}", i.id);
                assert_eq!(i.suite, s.name);
                assert!(i.id.starts_with(&format!("{}/", s.name)), "{}", i.id);
                assert!(!i.metrics.is_empty(), "{} has no metrics", i.id);
                assert!(!i.method.is_empty() && !i.title.is_empty());
                let mut names = HashSet::new();
                for m in &i.metrics {
                    assert!(
                        names.insert(m.name),
                        "{}: duplicate metric {}",
                        i.id,
                        m.name
                    );
                    assert!(!m.description.is_empty());
                }
            }
        }
    }
}
