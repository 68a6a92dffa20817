//! Runs the fleet protocol vectors (`tests/vectors/protocol/`, format in
//! `tests/vectors/README.md`) against the core's member protocol, with a core `Breaker` as
//! its breaker and the core's `SharedKey` as its signer: what every Rust fleet adapter executes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, bail, ensure, Context, Result};
use serde_json::{json, Map, Value};
use tripgate_core::fleet::protocol::{Command, Input, Link, Protocol, Reply, Settings, View};
use tripgate_core::fleet::wire::{self, Signer};
use tripgate_core::fleet::SharedKey;
use tripgate_core::{
    Announcement, Breaker, Config, FleetApplied, FleetEvent, Nanos, Permit, MILLISECOND,
};

use crate::{VectorConfig, VectorOutcome};

/// The core breaker at a host's `now`: the protocol's link.
pub struct CoreLink<'a> {
    /// The breaker.
    pub breaker: &'a mut Breaker,
    /// The instant every call is made at.
    pub now: Nanos,
}

impl Link for CoreLink<'_> {
    fn view(&mut self) -> View {
        let m = self.breaker.metrics(self.now);
        View {
            state: m.state,
            status: self.breaker.fleet_status(self.now),
            probes_out: m.probes_out,
            cooldown_remaining: m.cooldown_remaining,
            admitted: m.admitted_total,
        }
    }
    fn take_announcement(&mut self) -> Option<Announcement> {
        self.breaker.fleet_take_announcement()
    }
    fn apply(&mut self, event: FleetEvent) -> FleetApplied {
        self.breaker.fleet_apply(event, self.now).0
    }
    fn votes(&mut self, votes: &[(u64, Nanos)]) -> bool {
        self.breaker.fleet_votes(votes, self.now)
    }
    fn store(&mut self, reachable: bool, lease: Option<Nanos>) {
        self.breaker.fleet_degraded(!reachable, self.now);
        self.breaker.fleet_lease(lease, self.now);
    }
}

/// A command as the vectors spell it: `{"read": {}}`, `{"publish": {"line": …}}`, ….
pub fn command_json(command: &Command) -> Value {
    match command {
        Command::Read => json!({"read": {}}),
        Command::Vote { entry, window_ms } => {
            json!({"vote": {"entry": entry, "window-ms": window_ms}})
        }
        Command::NextGeneration => json!({"next-generation": {}}),
        Command::Publish { line, expire_ms } => {
            json!({"publish": {"line": line, "expire-ms": expire_ms}})
        }
        Command::TakeLease { holder, ms } => json!({"take-lease": {"holder": holder, "ms": ms}}),
        Command::RenewLease { holder, ms } => {
            json!({"renew-lease": {"holder": holder, "ms": ms}})
        }
        Command::ReleaseLease { holder, notice } => {
            json!({"release-lease": {"holder": holder, "notice": notice}})
        }
        Command::Repair { floor } => json!({"repair": {"floor": floor}}),
    }
}

/// The protocol vector files.
pub fn protocol_files() -> Result<Vec<PathBuf>> {
    crate::json_files("vectors/protocol")
}

/// Runs every protocol vector; how many ran.
pub fn run_protocol_vectors() -> Result<usize> {
    let files = protocol_files()?;
    ensure!(!files.is_empty(), "no protocol vectors found");
    let mut failures = Vec::new();
    for file in &files {
        let outcome = std::fs::read_to_string(file)
            .map_err(anyhow::Error::from)
            .and_then(|text| serde_json::from_str::<Value>(&text).map_err(anyhow::Error::from))
            .and_then(|vector| run_protocol_vector(&vector));
        if let Err(error) = outcome {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            failures.push(format!("{name}: {error:#}"));
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} protocol vectors failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    Ok(files.len())
}

fn text<'a>(value: &'a Value, field: &str) -> Result<&'a str> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("`{field}` must be a string"))
}

fn ms(value: &Value, field: &str) -> Result<Nanos> {
    value
        .get(field)
        .and_then(Value::as_u64)
        .map(|ms| ms * MILLISECOND)
        .ok_or_else(|| anyhow!("`{field}` must be whole milliseconds"))
}

/// One protocol vector.
pub fn run_protocol_vector(vector: &Value) -> Result<()> {
    let config = core_config(vector)?;
    let member = vector.get("member").ok_or_else(|| anyhow!("no `member`"))?;
    let signer = member
        .get("key")
        .and_then(Value::as_str)
        .map(SharedKey::new);
    let signer: Option<&dyn Signer> = signer.as_ref().map(|s| s as &dyn Signer);
    let settings = member_settings(member, &config)?;
    let mut breaker = Breaker::new(config, 0).map_err(|e| anyhow!("{e}"))?;
    let mut protocol = Protocol::new(settings);
    let mut permits: BTreeMap<String, Permit> = BTreeMap::new();
    let steps = vector
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("no `steps`"))?;
    for (i, step) in steps.iter().enumerate() {
        let now = ms(step, "at")?;
        let context = || format!("step {i} ({step})");
        let op = text(step, "op").with_context(context)?;
        let mut link = CoreLink {
            breaker: &mut breaker,
            now,
        };
        // Owned bytes the borrowed inputs point into.
        let (mut event, mut generation, mut line, mut votes) = (None, None, None, Vec::new());
        let input = match op {
            "up" => Some(Input::Up),
            "down" => Some(Input::Down),
            "changed" => Some(Input::Changed),
            "tick" => Some(Input::Tick),
            "message" => {
                line = Some(
                    text(step, "line")
                        .with_context(context)?
                        .as_bytes()
                        .to_vec(),
                );
                None
            }
            "reply" => None,
            "acquire" | "record" => {
                breaker_op(op, step, link.breaker, &mut permits, now).with_context(context)?;
                None
            }
            "reconfigure" => {
                reconfigure(step, link.breaker, &mut protocol, now).with_context(context)?;
                None
            }
            other => bail!("{}: unknown op {other}", context()),
        };
        let reply = if op == "reply" {
            let reply = step
                .get("reply")
                .ok_or_else(|| anyhow!("{}: no reply", context()))?;
            Some(parse_reply(reply, &mut event, &mut generation, &mut votes)?)
        } else {
            None
        };
        let input = match (input, reply, &line) {
            (Some(input), _, _) => Some(input),
            (None, Some(reply), _) => Some(Input::Reply(reply)),
            (None, None, Some(line)) => Some(Input::Message(line)),
            (None, None, None) => None,
        };
        if let Some(input) = input {
            protocol.handle(input, &mut link, signer, now);
        }
        let command = protocol.poll();
        check(step, &protocol, &mut link, command.as_ref()).with_context(context)?;
    }
    Ok(())
}

/// The core config a vector or a step gives (`config`; absent fields take defaults).
fn core_config(holder: &Value) -> Result<Config> {
    let empty = Map::new();
    let json = holder
        .get("config")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    VectorConfig::parse(json)?
        .to_core()
        .map_err(|e| anyhow!("{e}"))
}

/// A new config for the breaker (`config`, whole), and its cooldown and probe timeout
/// handed to the protocol, as an adapter hands them over before each step.
fn reconfigure(
    step: &Value,
    breaker: &mut Breaker,
    protocol: &mut Protocol,
    now: Nanos,
) -> Result<()> {
    let empty = Map::new();
    let json = step
        .get("config")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let config = VectorConfig::parse(json)?
        .to_core()
        .map_err(|e| anyhow!("{e}"))?;
    breaker
        .reconfigure(config, now)
        .map_err(|e| anyhow!("{e}"))?;
    protocol.retune(config.cooldown, config.probe_timeout);
    Ok(())
}

/// The member's settings from the vector's `member` and the breaker's configuration.
fn member_settings(member: &Value, config: &Config) -> Result<Settings> {
    Ok(Settings {
        name: text(member, "name")?.to_string(),
        member: wire::parse_member(text(member, "id")?.as_bytes())
            .ok_or_else(|| anyhow!("`id` must be 16 hex digits"))?,
        session: wire::parse_member(text(member, "session")?.as_bytes())
            .ok_or_else(|| anyhow!("`session` must be 16 hex digits"))?,
        reconcile_interval: ms(member, "reconcile-interval-ms")?,
        cooldown: config.cooldown,
        probe_timeout: config.probe_timeout,
    })
}

/// A step that calls the breaker itself, as the member's host does around the protocol.
fn breaker_op(
    op: &str,
    step: &Value,
    breaker: &mut Breaker,
    permits: &mut BTreeMap<String, Permit>,
    now: Nanos,
) -> Result<()> {
    if op == "acquire" {
        let decision = breaker.acquire(now).decision;
        let admitted = decision.is_ok();
        if let (Ok(permit), Some(name)) = (decision, step.get("permit").and_then(Value::as_str)) {
            permits.insert(name.to_string(), permit);
        }
        if let Some(want) = step.get("admitted").and_then(Value::as_bool) {
            ensure!(admitted == want, "admitted {admitted}");
        }
        return Ok(());
    }
    let name = text(step, "permit")?;
    let permit = permits
        .remove(name)
        .ok_or_else(|| anyhow!("no permit {name}"))?;
    let outcome = VectorOutcome::parse(text(step, "outcome")?)?
        .to_core()
        .map_err(|e| anyhow!("{e}"))?;
    let _ = breaker.record(permit, outcome, now);
    Ok(())
}

fn parse_reply<'a>(
    reply: &Value,
    event: &'a mut Option<Vec<u8>>,
    generation: &'a mut Option<Vec<u8>>,
    votes: &'a mut Vec<(Vec<u8>, u64)>,
) -> Result<Reply<'a>> {
    let object = reply
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| anyhow!("a reply is an object of one kind"))?;
    let (kind, body) = object.iter().next().ok_or_else(|| anyhow!("empty reply"))?;
    let bytes = |field: &str| -> Option<Vec<u8>> {
        body.get(field)
            .and_then(Value::as_str)
            .map(|s| s.as_bytes().to_vec())
    };
    Ok(match kind.as_str() {
        "read" => {
            *event = bytes("event");
            *generation = bytes("generation");
            Reply::Read {
                event: event.as_deref(),
                event_ttl_ms: body
                    .get("event-ttl-ms")
                    .and_then(Value::as_i64)
                    .unwrap_or(-2),
                generation: generation.as_deref(),
            }
        }
        "voted" => {
            for vote in body
                .get("votes")
                .and_then(Value::as_array)
                .ok_or_else(|| anyhow!("`votes` must be a list"))?
            {
                let entry = vote.get(0).and_then(Value::as_str).unwrap_or_default();
                let at = vote.get(1).and_then(Value::as_u64).unwrap_or_default();
                votes.push((entry.as_bytes().to_vec(), at));
            }
            Reply::Voted {
                now_ms: body
                    .get("now-ms")
                    .and_then(Value::as_u64)
                    .unwrap_or_default(),
                votes: votes.iter().map(|(e, at)| (e.as_slice(), *at)).collect(),
            }
        }
        "generation" => Reply::Generation(
            body.as_i64()
                .ok_or_else(|| anyhow!("`generation` is a number"))?,
        ),
        "published" => Reply::Published,
        "lease" => Reply::Lease {
            held: body
                .get("held")
                .and_then(Value::as_bool)
                .unwrap_or_default(),
            ttl_ms: body
                .get("ttl-ms")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
        },
        "renewed" => Reply::Renewed(body.as_bool().unwrap_or_default()),
        "released" => Reply::Released,
        "repaired" => Reply::Repaired,
        "refused" => Reply::Refused,
        other => bail!("unknown reply {other}"),
    })
}

/// Checks a step's expectations: the command it asked for (`null`: none), and optionally
/// the deadline, the lease, the breaker's state and fleet status, and counts.
fn check(
    step: &Value,
    protocol: &Protocol,
    link: &mut CoreLink<'_>,
    command: Option<&Command>,
) -> Result<()> {
    let Some(expect) = step.get("expect") else {
        return Ok(());
    };
    let expect = expect
        .as_object()
        .ok_or_else(|| anyhow!("`expect` must be an object"))?;
    let got = command.map(command_json).unwrap_or(Value::Null);
    if let Some(want) = expect.get("command") {
        ensure!(&got == want, "command: got {got}, expected {want}");
    } else {
        ensure!(got.is_null(), "an unexpected command: {got}");
    }
    if let Some(want) = expect.get("call") {
        check_call(want, protocol, command)?;
    }
    if let Some(want) = expect.get("deadline-ms") {
        let got = protocol.deadline().map(|d| d / MILLISECOND);
        ensure!(
            want.as_u64() == got,
            "deadline: got {got:?} ms, expected {want}"
        );
    }
    if let Some(want) = expect.get("lease-held").and_then(Value::as_bool) {
        ensure!(
            protocol.lease_held() == want,
            "lease-held: got {}",
            protocol.lease_held()
        );
    }
    let view = link.view();
    if let Some(want) = expect.get("state").and_then(Value::as_str) {
        ensure!(
            view.state.name() == want,
            "state: got {}",
            view.state.name()
        );
    }
    if let Some(want) = expect.get("breaker-lease").and_then(Value::as_bool) {
        ensure!(
            view.status.lease_held == want,
            "the breaker's lease: got {}",
            view.status.lease_held
        );
    }
    if let Some(want) = expect.get("degraded").and_then(Value::as_bool) {
        ensure!(
            view.status.degraded == want,
            "degraded: got {}",
            view.status.degraded
        );
    }
    if let Some(want) = expect.get("generation").and_then(Value::as_u64) {
        ensure!(
            view.status.generation == want,
            "generation: got {}",
            view.status.generation
        );
    }
    if let Some(want) = expect.get("cooldown-remaining-ms").and_then(Value::as_u64) {
        let got = view.cooldown_remaining / MILLISECOND;
        ensure!(got == want, "cooldown-remaining-ms: got {got}");
    }
    if let Some(want) = expect.get("counts").and_then(Value::as_object) {
        check_counts(protocol, want)?;
    }
    Ok(())
}

fn check_counts(protocol: &Protocol, want: &Map<String, Value>) -> Result<()> {
    let c = protocol.counts();
    for (name, value) in want {
        let got = match name.as_str() {
            "received" => c.received,
            "applied" => c.applied,
            "published" => c.published,
            "reconciles" => c.reconciles,
            "leases" => c.leases,
            "repairs" => c.repairs,
            "refused" => c.refused,
            other => match wire::Ignored::from_name(other) {
                Some(why) => c.ignored[usize::from(why.code())],
                None => bail!("unknown count {other}"),
            },
        };
        ensure!(
            Some(got) == value.as_u64(),
            "count {name}: got {got}, expected {value}"
        );
    }
    Ok(())
}

/// The command's Redis call, as the core makes it for a store that is no Cluster, against
/// the vector's `call`.
fn check_call(want: &Value, protocol: &Protocol, command: Option<&Command>) -> Result<()> {
    let call = command
        .map(|c| c.call(protocol.keys(), false))
        .ok_or_else(|| anyhow!("a call expected, but no command"))?;
    let got = json!({
        "script": call.script.map_or("INCR", |s| s.name()),
        "keys": call.keys,
        "args": call.args,
    });
    ensure!(&got == want, "call: got {got}, expected {want}");
    Ok(())
}
