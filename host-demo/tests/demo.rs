//! The brownout demo end to end: runs the real binary (`host-demo`) on a compressed
//! timeline with `--json`, and checks the acceptance rules against the demo's own
//! measurements: the numbers come from the upstream's, the caller's and the load
//! generator's counters, never from this test's clock.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const HEALTHY: usize = 0;
const HANG: usize = 1;
const STORM: usize = 2;
const FLOOD: usize = 3;
const RECOVERY: usize = 4;

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host-demo"))
        .args(args)
        .output()
        .expect("the demo binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tripgate-demo-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut at = v;
    for key in path {
        at = &at[*key];
    }
    at.as_f64()
        .unwrap_or_else(|| panic!("{} is not a number in {v}", path.join(".")))
}

#[test]
fn compressed_brownout_meets_the_acceptance_rules() {
    let dir = scratch("run");
    let svg = dir.join("brownout.svg");
    let svg_arg = svg.to_str().unwrap();
    // Half the default timeline: 10 s of scenario per run. The upstream route's rate
    // doubles, so arrivals x timeout against the 32 workers is the full demo's; the
    // unrelated route (50/s, 50 ms of work each) is the yardstick and stays as it is.
    let output = demo(&["--scale", "0.5", "--json", "--quiet", "--out", svg_arg]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the demo failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON on stdout ({e}); stderr:\n{stderr}"));
    // Every diagnostic below shows the demo's own tables too.
    let context = format!("the demo's report:\n{stderr}");

    let runs = v["runs"].as_array().expect("runs");
    let run = |mode: &str| {
        runs.iter()
            .find(|r| r["mode"] == mode)
            .unwrap_or_else(|| panic!("no {mode} run"))
    };
    let (plain, guarded) = (run("timeout-only"), run("tripgate"));
    let pool = f(&v, &["options", "pool"]);
    let k = f(&v, &["options", "k"]);
    let threshold = f(&v, &["options", "threshold"]);
    let phase = |r: &Value, i: usize| r["phases"][i].clone();

    // Same seeds: both runs sent the same number of requests.
    assert_eq!(plain["requests"], guarded["requests"], "{context}");

    // With tripgate the unrelated route does not notice the hang...
    let healthy_p99 = f(&phase(guarded, HEALTHY), &["local", "p99_ms"]);
    let hang_p99 = f(&phase(guarded, HANG), &["local", "p99_ms"]);
    assert!(
        hang_p99 <= 2.0 * healthy_p99,
        "tripgate: unrelated p99 {hang_p99} ms in the hang vs {healthy_p99} ms healthy\n{context}"
    );
    assert_eq!(
        f(&phase(guarded, HANG), &["local", "failed"]),
        0.0,
        "{context}"
    );
    // ...and the pool never saturates, in any phase.
    for i in 0..6 {
        let p = phase(guarded, i);
        assert!(
            f(&p, &["pool_peak"]) < pool,
            "tripgate pool saturated in phase {i}\n{context}"
        );
        assert_eq!(
            f(&p, &["shed"]),
            0.0,
            "tripgate shed requests in phase {i}\n{context}"
        );
    }

    // Without it the pool saturates and the unrelated route stalls or fails.
    let hang = phase(plain, HANG);
    assert_eq!(f(&hang, &["pool_peak"]), pool, "{context}");
    let plain_healthy_p99 = f(&phase(plain, HEALTHY), &["local", "p99_ms"]);
    let stalls = f(&hang, &["local", "p99_ms"]) > 2.0 * plain_healthy_p99;
    let fails = f(&hang, &["local", "error_rate"]) >= 0.01;
    assert!(
        stalls || fails,
        "timeout-only: the unrelated route was fine\n{context}"
    );

    // During recovery the upstream never sees more than K probes at once (and it does
    // see probes: the cold start trips the breaker).
    let recovery = phase(guarded, RECOVERY);
    assert!(f(&recovery, &["upstream_peak_probes"]) <= k, "{context}");
    assert!(f(&recovery, &["upstream_probes"]) >= 1.0, "{context}");
    // In every phase, in fact.
    for i in 0..6 {
        assert!(
            f(&phase(guarded, i), &["upstream_peak_probes"]) <= k,
            "phase {i}\n{context}"
        );
    }

    // The 404 flood trips nothing, and it really went through a closed breaker.
    let flood = phase(guarded, FLOOD);
    assert_eq!(f(&flood, &["trips_caused"]), 0.0, "{context}");
    assert!(
        f(&flood, &["recorded_404_closed"]) >= 2.0 * threshold,
        "{context}"
    );
    for r in runs {
        for p in r["phases"].as_array().unwrap() {
            for t in p["transitions"].as_array().unwrap() {
                assert!(
                    !(t["to"] == "open" && t["cause_phase"] == FLOOD as u64),
                    "a 404 answer tripped the breaker: {t}\n{context}"
                );
            }
        }
    }

    // The breaker kept the 503 storm off the upstream.
    let storm_plain = f(&phase(plain, STORM), &["upstream_received"]);
    let storm_guarded = f(&phase(guarded, STORM), &["upstream_received"]);
    assert!(storm_guarded * 4.0 < storm_plain, "{context}");

    // The demo's own verdicts agree, and it drew the picture where it said.
    assert_eq!(v["all_pass"], true, "{context}");
    assert_eq!(
        v["picture"].as_str().map(PathBuf::from),
        Some(svg.canonicalize().unwrap())
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.starts_with("<svg") && picture.contains("tripgate"),
        "{picture:.200}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn help_and_bad_options() {
    let help = demo(&["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--component PATH"));

    let bad = demo(&["--pool", "0"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--pool"));
}

#[test]
fn a_missing_component_is_a_clear_error() {
    let dir = scratch("missing");
    let missing = dir.join("nope.wasm");
    let out = demo(&["--component", missing.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nope.wasm") && stderr.contains("cargo build -p tripgate-component"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
