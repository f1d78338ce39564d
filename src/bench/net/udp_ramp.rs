//! The highest loss-free UDP rate, found by a bounded ramp: the same paced stream as
//! `net/udp_stream`, each step a short stream of its own, at rates doubling from 50 Mbit/s (a later
//! run: from a quarter of the previous run's highest passing rate) until a step fails (loses a datagram, or its sender cannot keep the rate); then the bracket between the
//! last passing and the first failing rate is halved (geometrically) a few times. A ramp that runs
//! out of steps or time before any step failed gives a lower bound, marked as one.

use std::time::{Duration, Instant};

use serde_json::json;

use super::udp_stream::udp_test;
use super::{NetOptions, Peer, peer_facts};
use crate::bench::{Benchmark, Info, MetricSpec, RunOutput};
use crate::record::{BenchError, BoundKind};
use crate::timing::RunContext;
use crate::units::{Better, Unit};

/// The first rate tried, bit/s.
pub const FIRST_BPS: u64 = 50_000_000;
/// Doublings after the first step: the last doubling step is 50 Mbit/s × 2¹¹ = 102.4 Gbit/s.
pub const MAX_DOUBLINGS: u32 = 11;
/// Halvings of the bracket once a step failed: 3 leave it 2^(1/8) ≈ 9 % wide.
pub const REFINE_STEPS: u32 = 3;
/// A step counts only when the sender reached this share of the rate.
pub const SENDER_SHARE: f64 = 0.95;
/// Steps a typical ramp takes on a fast path (for the estimate): doubling to a few Gbit/s, the
/// refinement, and one failed step.
pub const TYPICAL_STEPS: u32 = 9 + REFINE_STEPS;
/// The highest rate a ramp tries: 50 Mbit/s × 2¹¹ = 102.4 Gbit/s.
pub const MAX_BPS: u64 = FIRST_BPS << MAX_DOUBLINGS;
/// A later run starts this many doublings below the previous run's highest passing rate.
pub const START_DOUBLINGS_BELOW: u32 = 2;
/// Steps a later run's ramp typically takes: two below the last rate, the last rate, one failed
/// doubling and the refinement.
pub const TYPICAL_STEPS_AFTER: u32 = START_DOUBLINGS_BELOW + 2 + REFINE_STEPS;

/// Where a run's ramp starts: [`FIRST_BPS`] in the first run (or after a run that passed
/// nothing), else [`START_DOUBLINGS_BELOW`] doublings below the previous run's highest passing
/// rate, to a whole Mbit/s (at least [`FIRST_BPS`]). Those first steps still send well below
/// the bracket through the same code, so a run keeps warming itself, and it skips the doublings
/// from 50 Mbit/s that the first run already showed pass.
pub fn start_after(last_pass: Option<u64>) -> u64 {
    match last_pass {
        Some(p) if p > 0 => {
            let quarter = p >> START_DOUBLINGS_BELOW;
            (quarter / 1_000_000 * 1_000_000).clamp(FIRST_BPS, MAX_BPS)
        }
        _ => FIRST_BPS,
    }
}

/// The ramp's state: which rate to try next, and what the tried ones showed. Pure, so the search
/// is tested without a network.
#[derive(Debug, Clone, Default)]
pub struct Ramp {
    /// Highest rate that passed (0: none yet).
    pub pass: u64,
    /// Lowest rate that failed.
    pub fail: Option<u64>,
    doublings: u32,
    refines: u32,
    /// The first rate tried (0: [`FIRST_BPS`]).
    first: u64,
}

/// How a finished ramp ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// A step failed and the bracket [pass, fail) was refined: a measurement at that resolution.
    Bracketed { pass: u64, fail: u64 },
    /// Every step passed up to the last one (or the time bound): the rate is at least `pass`.
    AtLeast { pass: u64, why: String },
    /// Even the lowest rate tried failed: the rate is below `fail`.
    Below { fail: u64 },
}

impl Ramp {
    /// A ramp whose first step is `first` (within [`FIRST_BPS`]..=[`MAX_BPS`]).
    pub fn starting_at(first: u64) -> Ramp {
        Ramp {
            first: first.clamp(FIRST_BPS, MAX_BPS),
            ..Ramp::default()
        }
    }

    /// The first rate tried.
    pub fn first(&self) -> u64 {
        if self.first == 0 {
            FIRST_BPS
        } else {
            self.first
        }
    }

    /// The next rate to try, or None when the ramp is done.
    pub fn next(&self) -> Option<u64> {
        let doubled = |d: u32| self.first().saturating_mul(1u64 << d.min(40));
        match self.fail {
            // Doubling, the last step at most MAX_BPS: done once a step reached it.
            None if self.doublings == 0 || doubled(self.doublings - 1) < MAX_BPS => {
                Some(doubled(self.doublings).min(MAX_BPS))
            }
            None => None,
            Some(_) if self.refines >= REFINE_STEPS => None,
            // Nothing passed yet: halve downwards.
            Some(f) if self.pass == 0 => Some(f / 2).filter(|&r| r > 0),
            // Geometric middle of the bracket, rounded to a whole Mbit/s.
            Some(f) => {
                let mid = ((self.pass as f64 * f as f64).sqrt() / 1e6).round() as u64 * 1_000_000;
                Some(mid).filter(|&m| m > self.pass && m < f)
            }
        }
    }

    /// Record whether `rate` passed.
    pub fn record(&mut self, rate: u64, passed: bool) {
        if self.fail.is_none() {
            self.doublings += 1;
        } else {
            self.refines += 1;
        }
        if passed {
            self.pass = self.pass.max(rate);
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
    }

    /// How the ramp ended (`stopped_early`: the time bound ended it before `next` said done).
    pub fn ended(&self, stopped_early: bool) -> Ended {
        match self.fail {
            Some(f) if self.pass == 0 => Ended::Below { fail: f },
            Some(f) => Ended::Bracketed {
                pass: self.pass,
                fail: f,
            },
            None => Ended::AtLeast {
                pass: self.pass,
                why: if stopped_early {
                    format!(
                        "the run's time bound ended the ramp before any step lost a datagram or \
                         limited the sender (last step passed: {:.3} Gbit/s)",
                        self.pass as f64 / 1e9
                    )
                } else {
                    format!(
                        "every step up to the last ({:.1} Gbit/s) passed without loss",
                        self.pass as f64 / 1e9
                    )
                },
            },
        }
    }
}

pub struct UdpRamp {
    info: Info,
    opts: NetOptions,
    /// The previous run's highest passing rate, where the next run's ramp starts from
    /// ([`start_after`]).
    last_pass: std::sync::Mutex<Option<u64>>,
}

impl UdpRamp {
    pub fn new(opts: &NetOptions) -> UdpRamp {
        UdpRamp {
            info: Info {
                id: "net/udp_max_rate".into(),
                suite: "net",
                title: format!(
                    "Highest loss-free UDP rate ({} B datagrams)",
                    opts.udp_size()
                ),
                method: format!(
                    "A ramp of paced UDP streams (as net/udp_stream, --size datagrams), each step \
                     lasting a quarter of the run's measuring time (at least 50 ms): rates double \
                     from 50 Mbit/s in a benchmark's first run, and in each later run from two \
                     doublings below the previous run's highest passing rate (fact start_bit_s), \
                     until a step fails — it loses a datagram (by sequence number) \
                     or its sender reaches under 95 % of the rate — then the bracket between the \
                     last passing and the first failing rate is halved geometrically {REFINE_STEPS} \
                     times (≈ 9 % resolution, the bracket is in the record). The metric is the \
                     highest passing rate. When no step failed up to the last (102.4 Gbit/s) or \
                     the run's time bound, the figure is a lower bound, printed '≥' and never \
                     compared as a measurement; when even the lowest rate failed, an upper bound \
                     '≤'. Whether the failing step lost datagrams or limited the sender is \
                     recorded (ramp_stopped_by)."
                ),
                metrics: vec![MetricSpec {
                    name: "max_lossfree_gbit_s",
                    unit: Unit::GigabitsPerSecond,
                    better: Better::Higher,
                    description: "highest offered rate received without loss, Gbit/s",
                }],
            },
            opts: opts.clone(),
            last_pass: std::sync::Mutex::new(None),
        }
    }
}

/// One step's duration.
fn step_time(run_time: Duration) -> Duration {
    (run_time / 4).max(Duration::from_millis(50))
}

/// Set-up time of one step (start, ready, drain, report), beside its streaming time.
const STEP_SETUP: Duration = Duration::from_millis(25);

impl Benchmark for UdpRamp {
    fn info(&self) -> &Info {
        &self.info
    }

    /// The first run tries about [`TYPICAL_STEPS`] rates, each later one about
    /// [`TYPICAL_STEPS_AFTER`]; each step a quarter of the run time (at least 50 ms) plus its
    /// set-up.
    fn estimate_s(&self, e: &crate::bench::Estimate) -> f64 {
        let step = step_time(e.run_time).as_secs_f64() + STEP_SETUP.as_secs_f64();
        let runs = e.all_runs();
        if runs <= 0.0 {
            return 0.0;
        }
        (TYPICAL_STEPS as f64 + (runs - 1.0) * TYPICAL_STEPS_AFTER as f64) * step
    }

    /// Every run opens its own peer and starts its ramp well below its bracket, doubling (at
    /// 50 Mbit/s, or two doublings below the previous run's highest passing rate): its first
    /// steps send through the same sockets and code first, which is what a harness warm-up run
    /// would do.
    fn warms_itself(&self) -> bool {
        true
    }

    /// The next run (after an `ab` arm switch, or a new benchmark run) ramps from 50 Mbit/s again.
    fn release(&self) {
        if let Ok(mut l) = self.last_pass.lock() {
            *l = None;
        }
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let mut peer = Peer::open(&self.opts, ctx)?;
        let size = self.opts.udp_size();
        let step = step_time(ctx.run_time);
        let last = self.last_pass.lock().ok().and_then(|l| *l);
        let mut ramp = Ramp::starting_at(start_after(last));
        let mut steps = Vec::new();
        let mut stopped_by = "";
        let mut stopped_early = false;
        while let Some(rate) = ramp.next() {
            // Room for this step (twice its set-up, for the drain) before the run's bound.
            if Instant::now() + step + 2 * STEP_SETUP >= ctx.deadline {
                stopped_early = true;
                break;
            }
            let (sent, report, _) =
                udp_test(&mut peer, ctx, size, rate, step, Duration::ZERO, false)?;
            let u = report.udp.expect("checked in udp_test");
            let achieved = sent.bytes as f64 * 8.0 / sent.wall_s.max(1e-9);
            let lost = u.lost > 0 || sent.send_errors > 0;
            let slow = achieved < SENDER_SHARE * rate as f64;
            steps.push(json!({
                "rate_bit_s": rate, "sender_bit_s": achieved, "loss_pct": u.loss_pct,
                "lost": u.lost, "sent": sent.datagrams, "passed": !lost && !slow,
            }));
            if (lost || slow) && ramp.fail.is_none_or(|f| rate < f) {
                stopped_by = if lost { "loss" } else { "sender-limited" };
            }
            ramp.record(rate, !lost && !slow);
        }
        let out = peer_facts(RunOutput::default(), &peer);
        peer.close();
        if let Ok(mut l) = self.last_pass.lock() {
            *l = (ramp.pass > 0).then_some(ramp.pass);
        }
        let out = out
            .fact("steps", serde_json::Value::Array(steps))
            .fact("start_bit_s", ramp.first())
            .fact(
                "start_rule",
                match last {
                    Some(p) if p > 0 => format!(
                        "two doublings below the previous run's highest passing rate ({:.3} Gbit/s)",
                        p as f64 / 1e9
                    ),
                    _ => "50 Mbit/s: the benchmark's first run, or the previous one passed no rate"
                        .to_string(),
                },
            );
        Ok(match ramp.ended(stopped_early) {
            Ended::Bracketed { pass, fail } => out
                .fact("ramp_stopped_by", stopped_by)
                .fact("bracket_bit_s", json!([pass, fail]))
                .metric("max_lossfree_gbit_s", vec![pass as f64 / 1e9]),
            Ended::AtLeast { pass, why } => out
                .fact(
                    "ramp_stopped_by",
                    if stopped_early {
                        "time bound"
                    } else {
                        "last step"
                    },
                )
                .metric("max_lossfree_gbit_s", vec![pass as f64 / 1e9])
                .bounded("max_lossfree_gbit_s", BoundKind::AtLeast, why),
            Ended::Below { fail } => out
                .fact("ramp_stopped_by", stopped_by)
                .metric("max_lossfree_gbit_s", vec![fail as f64 / 1e9])
                .bounded(
                    "max_lossfree_gbit_s",
                    BoundKind::AtMost,
                    format!(
                        "even the lowest rate tried ({:.1} Mbit/s) failed: the loss-free rate is \
                         below it",
                        fail as f64 / 1e6
                    ),
                ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive the ramp against a path that passes every rate up to `limit` (inclusive).
    fn drive(limit: u64) -> (Vec<u64>, Ended) {
        let mut r = Ramp::default();
        let mut tried = Vec::new();
        while let Some(rate) = r.next() {
            assert!(!tried.contains(&rate), "rate {rate} tried twice: {tried:?}");
            tried.push(rate);
            r.record(rate, rate <= limit);
            assert!(tried.len() < 40, "ramp does not end: {tried:?}");
        }
        (tried, r.ended(false))
    }

    #[test]
    fn a_failing_step_brackets_the_rate_and_the_bracket_is_refined() {
        let (tried, end) = drive(2_500_000_000);
        // Doublings up to 3.2 G (fails), then 3 refinements inside [1.6 G, 3.2 G).
        assert_eq!(
            &tried[..7],
            &[50, 100, 200, 400, 800, 1600, 3200].map(|m| m * 1_000_000)
        );
        assert_eq!(tried.len(), 7 + REFINE_STEPS as usize);
        match end {
            Ended::Bracketed { pass, fail } => {
                assert!(
                    pass <= 2_500_000_000 && fail > 2_500_000_000,
                    "{pass} {fail}"
                );
                // Three geometric halvings of a factor-2 bracket leave 2^(1/8) (± rounding).
                assert!((fail as f64 / pass as f64) < 1.1, "{pass} {fail}");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_ramp_that_never_fails_is_a_lower_bound_not_a_measurement() {
        let (tried, end) = drive(u64::MAX);
        assert_eq!(tried.len(), MAX_DOUBLINGS as usize + 1);
        assert_eq!(*tried.last().unwrap(), FIRST_BPS << MAX_DOUBLINGS);
        match end {
            Ended::AtLeast { pass, why } => {
                assert_eq!(pass, FIRST_BPS << MAX_DOUBLINGS);
                assert!(why.contains("102.4 Gbit/s"), "{why}");
            }
            e => panic!("{e:?}"),
        }
        // Stopped by time before any failure: still a bound, and it says so.
        let mut r = Ramp::default();
        r.record(FIRST_BPS, true);
        match r.ended(true) {
            Ended::AtLeast { why, .. } => assert!(why.contains("time bound"), "{why}"),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_later_run_starts_two_doublings_below_the_last_pass_and_finds_the_same_bracket() {
        assert_eq!(start_after(None), FIRST_BPS);
        assert_eq!(start_after(Some(0)), FIRST_BPS);
        assert_eq!(start_after(Some(100_000_000)), FIRST_BPS);
        assert_eq!(start_after(Some(8_300_000_001)), 2_075_000_000);
        assert_eq!(start_after(Some(u64::MAX)), MAX_BPS);
        let limit = 8_000_000_000;
        let (first, end) = drive(limit);
        let Ended::Bracketed { pass, .. } = end else {
            panic!("{end:?}")
        };
        let mut r = Ramp::starting_at(start_after(Some(pass)));
        let mut tried = Vec::new();
        while let Some(rate) = r.next() {
            tried.push(rate);
            r.record(rate, rate <= limit);
        }
        // Two passing steps below the last pass, then the doubling that fails, then the same
        // refinement: fewer steps, the same resolution.
        assert_eq!(tried.len() as u32, TYPICAL_STEPS_AFTER, "{tried:?}");
        assert!(tried.len() < first.len(), "{tried:?} vs {first:?}");
        assert!(tried[0] < limit / 2 && tried[1] < limit, "{tried:?}");
        match r.ended(false) {
            Ended::Bracketed { pass, fail } => {
                assert!(pass <= limit && fail > limit, "{pass} {fail}");
                assert!((fail as f64 / pass as f64) < 1.1, "{pass} {fail}");
            }
            e => panic!("{e:?}"),
        }
        // A start that is not 50 Mbit/s × 2^k still ends its doublings at 102.4 Gbit/s.
        let mut r = Ramp::starting_at(3_000_000_000);
        let mut last = 0;
        while let Some(rate) = r.next() {
            last = rate;
            r.record(rate, true);
        }
        assert_eq!(last, MAX_BPS);
        assert!(matches!(r.ended(false), Ended::AtLeast { pass, .. } if pass == MAX_BPS));
    }

    #[test]
    fn a_path_that_fails_the_first_rate_is_an_upper_bound() {
        let (tried, end) = drive(1_000_000);
        assert_eq!(tried[0], FIRST_BPS);
        assert_eq!(tried.len(), 1 + REFINE_STEPS as usize);
        assert_eq!(
            end,
            Ended::Below {
                fail: FIRST_BPS >> REFINE_STEPS
            }
        );
        // Passing somewhere below the first rate brackets it.
        // 50 fails; 25 passes; 35 (the geometric middle) fails; 30 passes.
        let (tried, end) = drive(30_000_000);
        assert_eq!(tried, [50, 25, 35, 30].map(|m| m * 1_000_000));
        assert_eq!(
            end,
            Ended::Bracketed {
                pass: 30_000_000,
                fail: 35_000_000
            }
        );
    }
}
