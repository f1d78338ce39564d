//! osgauge: measures how well an operating system serves interactive and real-time work and how
//! fast its basic services are. Data flows one way: CLI → plan → runner → benchmarks → result
//! record → statistics → sinks (terminal, exports). See README.md and `osgauge --help`.

pub mod appmodel;
pub mod attribution;
pub mod bench;
pub mod cli;
pub mod compare;
pub mod cpucost;
pub mod embedded;
pub mod export;
pub mod fleet;
pub mod output;
pub mod platform;
pub mod record;
pub mod report;
pub mod runner;
pub mod serve;
pub mod stats;
pub mod store;
pub mod system;
pub mod tempfiles;
/// Test support (is the machine too busy for a timing assertion?); not part of the API.
#[doc(hidden)]
pub mod testing;
pub mod timing;
pub mod units;
pub mod workload;
