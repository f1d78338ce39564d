//! Thread creation: spawn a thread running an empty closure and join it.

use crate::bench::{Benchmark, Info, MetricSpec, RunOutput, os_err};
use crate::record::BenchError;
use crate::timing::{BatchOptions, RunContext};
use crate::units::{Better, Unit};

pub struct ThreadCreate {
    info: Info,
}

impl ThreadCreate {
    pub fn new() -> Self {
        ThreadCreate {
            info: Info {
                id: "proc/thread_create".into(),
                suite: "proc",
                title: "Thread creation: spawn + join".into(),
                method: "Batches of: std::thread::Builder::new().spawn(empty closure) (what \
                         std::thread::spawn does, with the error returned instead of a panic), \
                         then join. Time per create+run+exit+join = batch time / threads − one \
                         clock read per batch. The stack is std's default (2 MiB unless \
                         RUST_MIN_STACK is set; recorded), mapped lazily by the OS."
                    .into(),
                metrics: vec![MetricSpec {
                    name: "create_join",
                    unit: Unit::Nanoseconds,
                    better: Better::Lower,
                    description: "time per thread spawn (empty closure) + join",
                }],
            },
        }
    }
}

impl Default for ThreadCreate {
    fn default() -> Self {
        Self::new()
    }
}

impl Benchmark for ThreadCreate {
    fn info(&self) -> &Info {
        &self.info
    }

    fn run(&self, ctx: &RunContext) -> Result<RunOutput, BenchError> {
        let samples = ctx.time_batches(BatchOptions::default(), |n| {
            for _ in 0..n {
                std::thread::Builder::new()
                    .spawn(|| {})
                    .map_err(|e| os_err("spawn thread", e))?
                    .join()
                    .map_err(|_| BenchError::failed("an empty thread panicked"))?;
            }
            Ok(())
        })?;
        let stack = match std::env::var("RUST_MIN_STACK") {
            Ok(v) => format!("RUST_MIN_STACK={v}"),
            Err(_) => "std default (2 MiB)".to_string(),
        };
        Ok(RunOutput::default()
            .metric("create_join", samples)
            .fact("api", "std::thread::Builder::spawn + JoinHandle::join")
            .fact("stack", stack))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::testutil::quick;

    #[test]
    fn measures() {
        let out = quick(|ctx| ThreadCreate::new().run(ctx)).unwrap();
        let (name, s) = &out.samples[0];
        assert_eq!(*name, "create_join");
        assert!(!s.is_empty() && s.iter().all(|&v| v > 0.0), "{s:?}");
    }
}
