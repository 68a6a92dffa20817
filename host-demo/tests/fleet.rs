//! The fleet demo end to end: the real binary, a real redis-server (or a three-master
//! Redis Cluster), eight member processes. The demo checks FLEET.md's bounds against its
//! own counts and exits non-zero when one breaks; these tests also read the table it prints.

use std::process::Command;
use std::sync::Mutex;

/// One demo at a time: each runs eight member processes on real time, and two at once on
/// a small machine would blur the timings they report.
static ONE_DEMO: Mutex<()> = Mutex::new(());

#[test]
fn the_fleet_demo_holds_fleet_mode_s_bounds() {
    run_demo(&[], "redis-server killed mid-run");
}

#[test]
fn the_fleet_demo_on_a_redis_cluster_holds_them_through_its_master_s_outage() {
    run_demo(
        &["--cluster"],
        "the Redis Cluster master of the fleet's slot killed mid-run",
    );
}

fn run_demo(extra: &[&str], outage_line: &str) {
    let _one = ONE_DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!(
        "tripgate-fleet-demo-{}-{}.svg",
        std::process::id(),
        extra.len()
    ));
    let run = Command::new(env!("CARGO_BIN_EXE_host-demo"))
        .arg("fleet")
        .args(extra)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("the demo binary runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the demo failed:\n{stdout}\n{stderr}");
    // tests/run-all.sh builds the JS package first and sets this: the fleet must then mix
    // Rust and Node members, so they are shown to open and close each other.
    if std::env::var_os("TRIPGATE_FLEET_MIXED").is_some() {
        assert!(
            stderr.contains("Rust and Node alternating"),
            "a mixed fleet was asked for, but the demo ran without Node members:\n{stderr}"
        );
    }
    let row = |starts: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(starts))
            .unwrap_or_else(|| panic!("no {starts:?} row in:\n{stdout}"))
            .to_string()
    };
    let numbers = |line: &str| -> Vec<u64> {
        line.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    // Off and on, the last two numbers of the row.
    let failing = numbers(&row("failing calls"));
    let (off, on) = (failing[failing.len() - 2], failing[failing.len() - 1]);
    assert!(
        on < off,
        "fleet mode should spare the upstream failing calls: {off} vs {on}"
    );
    let probes = numbers(&row("peak concurrent probes"));
    assert!(
        probes[probes.len() - 1] <= 2,
        "more than K probes fleet-wide: {probes:?}"
    );
    let waited = row("calls that waited");
    let after_colon = waited.split(':').nth(1).unwrap_or("").trim_start();
    assert!(after_colon.starts_with("0 of"), "{waited}");
    assert!(
        row("Q = 2").ends_with("other members opened: 0 of 7"),
        "{stdout}"
    );
    assert!(stdout.contains(outage_line), "{stdout}");
    let svg = std::fs::read_to_string(&out).expect("the timeline was written");
    assert!(svg.starts_with("<svg") && svg.contains("fleet mode on"));
    let _ = std::fs::remove_file(out);
}
