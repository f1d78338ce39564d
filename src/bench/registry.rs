//! The suite registry: the one list through which the runner and `osgauge run` find every suite.
//! Each suite is a folder of `src/bench/` whose `mod.rs` lists its benchmarks (`benchmarks()`,
//! or `quick_benchmarks()` for a study whose full matrix has a command of its own) and says what
//! it measures (`DESCRIPTION`); adding a suite adds one entry here and touches no other suite.

use std::path::PathBuf;

use super::{Benchmark, cpu, frame, fs, interactivity, latency, mem, net, policy, proc};

pub struct Suite {
    pub name: &'static str,
    pub description: &'static str,
    pub benchmarks: Vec<Box<dyn Benchmark>>,
}

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
}

impl SuiteOptions {
    /// The quick preset: each suite in its lighter configuration where it has one.
    pub fn quick() -> SuiteOptions {
        SuiteOptions {
            mem: mem::MemOptions::quick(),
            net: net::NetOptions::quick(),
            fs: fs::FsOptions::quick(),
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
            benchmarks: cpu::benchmarks(),
        },
        Suite {
            name: "proc",
            description: proc::DESCRIPTION,
            benchmarks: proc::benchmarks(),
        },
        Suite {
            name: "mem",
            description: mem::DESCRIPTION,
            benchmarks: mem::benchmarks(&opts.mem),
        },
        Suite {
            name: "net",
            description: net::DESCRIPTION,
            benchmarks: net::benchmarks(&opts.net),
        },
        Suite {
            name: "fs",
            description: fs::DESCRIPTION,
            benchmarks: fs::benchmarks(&opts.fs),
        },
        Suite {
            name: "frame",
            description: frame::DESCRIPTION,
            benchmarks: frame::benchmarks(),
        },
        Suite {
            name: "latency",
            description: latency::DESCRIPTION,
            benchmarks: latency::benchmarks(&opts.latency),
        },
        Suite {
            name: "interactivity",
            description: interactivity::DESCRIPTION,
            benchmarks: interactivity::quick_benchmarks(),
        },
        Suite {
            name: "policy",
            description: policy::DESCRIPTION,
            benchmarks: policy::quick_benchmarks(),
        },
    ]
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
