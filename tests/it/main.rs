//! The integration tests, one binary (one link in CI): each module is what used to be its own
//! `tests/<name>.rs`. The harness is ours (tests/it/harness.rs, `harness = false`): tests run in
//! parallel except those that declare a serial group (shared machine state, timing), which run
//! alone; a test that cannot judge anything here is reported as ignored with its reason, not as
//! passed; slow end-to-end checks are a CI-only group (`-- --ci-only`).

mod common;
mod harness;

fn main() -> std::process::ExitCode {
    harness::main()
}

mod ab;
mod appmodel;
mod appmodel_check;
mod appmodel_validate;
mod blocking;
mod chaos;
mod cli;
mod compare;
mod exports;
mod fleet;
mod fleet_check;
mod fleet_identity;
mod fleet_trust;
mod fs;
mod fuzz_parsers;
mod interactivity;
mod interactivity_task;
mod interrupt;
mod latency;
mod layers;
mod leftovers;
mod loads;
mod net_cli;
mod net_hostile_peer;
mod net_netns;
mod net_protocol;
mod policy;
mod policy_significance;
mod policy_switches;
mod push_counts;
mod record_schema;
mod report;
mod small_defects;
mod store;
mod store_full;
mod store_pg;
mod store_robust;
mod timing;
mod wide_text;
