//! Starting member processes (Rust, Node, Python) and reading what they print.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use super::{MemberLog, COOLDOWN_MS, KEY, PROBES};
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) log: Arc<Mutex<MemberLog>>,
    pub(crate) ready: Arc<Mutex<bool>>,
}

/// The Node member, if this checkout and machine can run one.
pub(crate) fn node_member() -> Option<PathBuf> {
    let script = std::env::var_os("TRIPGATE_NODE_MEMBER").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../js/examples/fleet-member.mjs"),
        PathBuf::from,
    );
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    // The script needs the JS package built (js/pkg) and its redis client installed.
    let js = script.parent().and_then(|examples| examples.parent());
    let built = js.is_some_and(|js| {
        js.join("pkg/web/tripgate_wasm_bg.wasm").is_file() && js.join("node_modules/redis").is_dir()
    });
    (node && script.is_file() && built).then(|| script.canonicalize().unwrap_or(script))
}

#[derive(Clone, Copy)]
pub(crate) struct Plan<'a> {
    pub(crate) redis: Option<&'a str>,
    pub(crate) quorum: u8,
    pub(crate) node: Option<&'a PathBuf>,
    /// The Python member: its interpreter and script (`host-demo fleet-rounds`).
    pub(crate) python: Option<&'a (PathBuf, PathBuf)>,
    /// Every member's pause between calls and its callers, instead of the fleet demo's
    /// mixed traffic.
    pub(crate) pace: Option<(u64, usize)>,
}

impl Plan<'_> {
    /// Member `i`'s pause between calls (ms) and its number of callers.
    fn pace(&self, i: usize) -> (u64, usize) {
        self.pace.unwrap_or((pause_ms(i), usize::from(PROBES)))
    }
}

/// Which member process member `i` is: Rust, Node and Python in turn, of those the plan
/// can run (the fleet demo: Rust and Node alternating).
enum Kind<'a> {
    Rust,
    Node(&'a PathBuf),
    Python(&'a (PathBuf, PathBuf)),
}

fn kind<'a>(plan: &Plan<'a>, i: usize) -> Kind<'a> {
    let mut kinds = vec![Kind::Rust];
    kinds.extend(plan.node.map(Kind::Node));
    kinds.extend(plan.python.map(Kind::Python));
    let n = kinds.len();
    kinds.swap_remove(i % n)
}

/// The Node member's command line (its own CLI: positional arguments, then options),
/// which the Python member shares.
#[allow(clippy::too_many_arguments)]
fn script_command(
    program: &std::ffi::OsStr,
    script: &PathBuf,
    plan: &Plan,
    i: usize,
    upstream: &str,
    name: &str,
    label: &str,
    end_ms: u64,
) -> Command {
    let mut c = Command::new(program);
    let (pause, callers) = plan.pace(i);
    let rate = 1000.0 / pause as f64 * callers as f64;
    c.arg(script)
        .arg(plan.redis.unwrap_or("redis://127.0.0.1:1"))
        .arg(name)
        .arg(format!("http://{upstream}/"))
        .arg(if plan.redis.is_some() {
            plan.quorum.to_string()
        } else {
            "off".into()
        })
        .arg(KEY)
        .arg(label)
        .arg(format!("{rate:.1}"))
        // It stops itself; a little after the script's end, so the demo closes it first.
        .arg(format!("{:.1}", end_ms as f64 / 1000.0 + 1.0))
        .arg(format!("--cooldown-ms={COOLDOWN_MS}"))
        .arg(format!("--failure-threshold={THRESHOLD}"))
        .arg(format!("--probes={PROBES}"))
        .arg("--required-successes=2")
        .arg("--call-timeout-ms=1000");
    c
}

/// Members see different traffic (10 to 115 ms between calls), as a real fleet's do:
/// the busiest learns of an outage first.
fn pause_ms(i: usize) -> u64 {
    10 + 15 * i as u64
}

const THRESHOLD: u32 = 10;

pub(crate) fn spawn(
    plan: &Plan,
    i: usize,
    upstream: &str,
    name: &str,
    end_ms: u64,
) -> Result<Spawned> {
    let kind = kind(plan, i);
    let prefix = match kind {
        Kind::Rust => "r",
        Kind::Node(_) => "n",
        Kind::Python(_) => "p",
    };
    let label = format!("{prefix}{i}");
    let args = [
        ("--upstream", upstream.to_string()),
        ("--redis", plan.redis.unwrap_or("off").to_string()),
        ("--name", name.to_string()),
        ("--key", KEY.to_string()),
        ("--label", label.clone()),
        ("--quorum", plan.quorum.to_string()),
        ("--cooldown-ms", COOLDOWN_MS.to_string()),
        ("--probes", PROBES.to_string()),
        ("--successes", "2".into()),
        ("--threshold", THRESHOLD.to_string()),
        ("--callers", plan.pace(i).1.to_string()),
        ("--pause-ms", plan.pace(i).0.to_string()),
    ];
    // The Node and the Python member share one command line: a program and its script.
    let script = match kind {
        Kind::Node(script) => Some((std::ffi::OsStr::new("node"), script)),
        Kind::Python((python, script)) => Some((python.as_os_str(), script)),
        Kind::Rust => None,
    };
    let mut command = match script {
        Some((program, script)) => {
            script_command(program, script, plan, i, upstream, name, &label, end_ms)
        }
        None => {
            let mut c = Command::new(std::env::current_exe()?);
            c.arg("fleet-member");
            for (flag, value) in &args {
                c.arg(flag).arg(value);
            }
            c
        }
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting member {label}"))?;
    let stdout = child.stdout.take().context("member stdout")?;
    let log = Arc::new(Mutex::new(MemberLog {
        node: !matches!(kind, Kind::Rust),
        label,
        ..MemberLog::default()
    }));
    let ready = Arc::new(Mutex::new(false));
    let (l, r) = (Arc::clone(&log), Arc::clone(&ready));
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            read_line(&line, &l, &r);
        }
    });
    Ok(Spawned {
        stdin: child.stdin.take(),
        child,
        log,
        ready,
    })
}

fn read_line(line: &str, log: &Mutex<MemberLog>, ready: &Mutex<bool>) {
    let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
    if line.starts_with('{') {
        return read_json(line, &mut log, ready);
    }
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    match f.first().copied() {
        Some("ready") => *ready.lock().unwrap_or_else(|p| p.into_inner()) = true,
        Some("transition") if f.len() == 5 => {
            log.transitions
                .push((num(1), f[2].to_string(), f[3].to_string(), f[4].to_string()));
        }
        Some("link") if f.len() == 3 => log.links.push((num(1), f[2] == "up")),
        Some("stats") if f.len() == 6 => log.stats = Some([num(1), num(2), num(3), num(4), num(5)]),
        _ => {}
    }
}

/// A Node member's JSON line (js/examples/fleet-member.mjs; `t` in ms).
fn read_json(line: &str, log: &mut MemberLog, ready: &Mutex<bool>) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return;
    };
    let t = (v["t"].as_f64().unwrap_or(0.0) * 1000.0) as u64;
    let text = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let set_ready = || *ready.lock().unwrap_or_else(|p| p.into_inner()) = true;
    match v["type"].as_str() {
        // `start` comes once the member has joined (connected, in fleet mode).
        Some("start") => set_ready(),
        Some("degraded") => log
            .links
            .push((t, v["degraded"] == serde_json::Value::Bool(false))),
        Some("transition") => log
            .transitions
            .push((t, text("from"), text("to"), text("reason"))),
        Some("summary") => {
            let n = |k: &str| v[k].as_u64().unwrap_or(0);
            let rejected = v["rejected"].as_object().map_or(0, |r| {
                r.values().filter_map(serde_json::Value::as_u64).sum()
            });
            // It counts decisions over 1 ms; one that waited on the store would take at
            // least store-timeout (250 ms), as the Rust member counts: none did if its
            // slowest was faster, else count all its slow ones.
            let slowest_us = v["max_decision_us"].as_f64().unwrap_or(0.0) as u64;
            let waited = if slowest_us >= 250_000 {
                n("decisions_over_1ms")
            } else {
                0
            };
            log.stats = Some([n("sent"), rejected, waited, slowest_us, 0]);
        }
        _ => {}
    }
}
