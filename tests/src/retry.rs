//! The shared retry vector (`tests/vectors/retry/retry.json`), run on any host's retry
//! decisions: the core's (`tests/tests/retry.rs`) and the component's `retry-budget`
//! (`component/wasmtime/tests/retry.rs`). A host gives a [`Decider`] per case.

use std::path::PathBuf;

use anyhow::{anyhow, ensure, Context, Result};
use serde_json::Value;
use tripgate_core::retry::{Next, RetryPolicy};
use tripgate_core::{Class, Nanos, MILLISECOND};

/// One budget and its policy, in a host: what the vector drives.
pub trait Decider {
    /// A call's first attempt was admitted.
    fn deposit(&mut self);
    /// What to do after attempt `attempt`.
    fn next(&mut self, attempt: u8, class: Class, retry_after: Nanos, now: Nanos) -> Next;
}

fn vector() -> Result<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors/retry/retry.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// A case's policy: the vector's defaults with the case's fields over them.
fn policy(defaults: &Value, given: &Value) -> Result<RetryPolicy> {
    let field = |name: &str| {
        given
            .get(name)
            .or_else(|| defaults.get(name))
            .and_then(Value::as_u64)
            .ok_or_else(|| anyhow!("no whole {name}"))
    };
    Ok(RetryPolicy {
        max_attempts: u8::try_from(field("max-attempts")?)?,
        base_delay: field("base-delay-ms")? * MILLISECOND,
        max_delay: field("max-delay-ms")? * MILLISECOND,
        budget_percent: u16::try_from(field("budget-percent")?)?,
        min_retries_per_second: u32::try_from(field("min-retries-per-second")?)?,
        seed: field("seed")?,
    })
}

/// A decision as the vector writes it: `{"retry-ns": wait}` or `{"stop": reason}`.
fn written(next: Next) -> Value {
    match next {
        Next::Retry(wait) => serde_json::json!({ "retry-ns": wait }),
        Next::Stop(stop) => serde_json::json!({ "stop": stop.name() }),
    }
}

/// Runs every case on the deciders `make` gives (one per case, for its policy); the
/// number of cases.
pub fn run_retry_vector(mut make: impl FnMut(RetryPolicy) -> Box<dyn Decider>) -> Result<usize> {
    let vector = vector()?;
    let cases = vector["cases"].as_array().context("cases")?;
    for case in cases {
        let mut decider = make(policy(&vector["defaults"], &case["policy"])?);
        for (i, step) in case["steps"]
            .as_array()
            .context("steps")?
            .iter()
            .enumerate()
        {
            let number = |key: &str| step[key].as_u64().ok_or_else(|| anyhow!("no {key}"));
            if step["op"] == "deposit" {
                for _ in 0..number("count")? {
                    decider.deposit();
                }
                continue;
            }
            let class = match step["class"].as_str() {
                Some("fault") => Class::Fault,
                Some("success") => Class::Success,
                _ => Class::Neutral,
            };
            let next = decider.next(
                u8::try_from(number("attempt")?)?,
                class,
                number("retry-after-ms")? * MILLISECOND,
                number("at-ms")? * MILLISECOND,
            );
            let got = written(next);
            ensure!(
                got == step["expect"],
                "{}: step {i}: got {got}",
                case["name"]
            );
        }
    }
    Ok(cases.len())
}
