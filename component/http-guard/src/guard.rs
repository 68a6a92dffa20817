//! The breaker around the upstream call, its state carried between instances.
//!
//! Every instance serves one request, so each request restores the breaker of its
//! upstream's authority from the store, decides, and writes back with compare-and-swap:
//!
//! 1. **Admission.** Read the value, `restore`, `acquire-keyed`. A plain admission in a closed
//!    breaker changes nothing another instance needs, so nothing is written, unless
//!    nothing is stored yet: then the fresh state is written first, so that every
//!    outcome's write is conditional on a value that exists. (On a store whose swap on an
//!    absent key is a plain upsert, as Spin's default store's is, two first requests
//!    would otherwise overwrite each other's outcomes.) An admission
//!    that caused transitions or is a half-open probe is written *before* the call: on a
//!    conflict the guard reads again and decides again (no call has been made yet). The
//!    export of a half-open breaker with its probe out reads as open until that probe
//!    would time out (`restored`), so the next instances reject until this request
//!    records: across instances at most one probe is out at a time.
//!    A rejection answers 503 with `Retry-After`; it writes only if it caused transitions.
//! 2. **The call**, under the deadline, classified: the status, a timeout, a connection
//!    error, another failure.
//! 3. **Record**, before the answer goes out (so a client that has the answer to one
//!    request sees its effect in the next). If the stored value is still the one this
//!    breaker came from, the outcome is recorded with its ticket (its duration counts)
//!    and written with compare-and-swap. If another instance wrote in between, the newest
//!    value is restored instead, and the outcome counts there only if that breaker is
//!    still in the epoch the call was admitted in (a call admitted before a transition is
//!    stale, as in one instance); it is then recorded as a call admitted and ended now.
//!    A conflict on the swap starts the step again, at most `ATTEMPTS` times; past that
//!    the outcome is not counted.
//!
//! A store that fails (cannot open, read or write) leaves the guard deciding with a
//! fresh breaker it does not keep: the guard fails open rather than refusing traffic
//! because of its own bookkeeping, and says so in `x-tripgate-unguarded` with the
//! store's error (a bucket the host does not grant is `access denied`). A call the host
//! denies (`HTTP-request-denied`) is no outcome of the upstream's: it is not recorded.

use wasip2::clocks::monotonic_clock;
use wasip2::http::types::{IncomingRequest, ResponseOutparam};

use crate::bindings::tripgate::breaker::circuit_breaker::{
    self as breaker, AdmissionNotes, Breaker, Config, KeyedAdmission, KeyedRejection, Outcome,
    RejectReason, Rejection, State, Ticketed,
};
use crate::config::{BreakerSettings, Settings, Upstream};
use crate::forward::{self, Sent};
use crate::state::{self, Place, Read, Unwritten};

/// Reads and swaps one step may take before it gives up.
const ATTEMPTS: u32 = 8;

pub fn guarded(
    request: IncomingRequest,
    out: ResponseOutparam,
    settings: &Settings,
    upstream: &Upstream,
) {
    let prepared = match forward::prepare(request) {
        Ok(prepared) => prepared,
        Err(refused) => return forward::respond(out, refused.status, &refused.message, &[]),
    };
    let config = config(&settings.breaker);
    let started = monotonic_clock::now();
    // The steps' times for `x-tripgate-cost`, read only when asked for: every clock read
    // is a host call.
    let lap = || settings.costs.then(monotonic_clock::now);
    // Fails open: without a store the breaker is this request's alone.
    let (place, mut unguarded) = match Place::open(&settings.bucket, &upstream.authority) {
        Ok(place) => (Some(place), None),
        Err(problem) => (None, Some(problem)),
    };

    let mut loaded = None;
    let mut attempt = 0;
    let (admitted, seen, held) = loop {
        attempt += 1;
        let now = if attempt == 1 {
            started
        } else {
            monotonic_clock::now()
        };
        let read = place.as_ref().and_then(|place| match place.read() {
            Ok(read) => Some(read),
            Err(problem) => {
                unguarded = Some(format!("reading the breaker's state: {problem}"));
                None
            }
        });
        let restored = state::restore(read.as_ref().and_then(|r| r.value.as_deref()), &config, now);
        if loaded.is_none() {
            loaded = lap();
        }
        let (breaker, key) = match restored {
            Ok(restored) => restored,
            Err(error) => {
                let message = format!(
                    "tripgate: the breaker settings are invalid: {}",
                    error.message
                );
                return forward::respond(out, 500, &message, &[]);
            }
        };
        // The keyed hot path: no permit resource to make, lend and drop, and no list
        // of transitions to return (`wit/breaker.wit`).
        match breaker::acquire_keyed(key, now) {
            KeyedAdmission::UnknownKey => {
                // One breaker per instance: its key always names it.
                let message = "tripgate: the breaker's key names no breaker in its instance";
                return forward::respond(out, 500, message, &[]);
            }
            KeyedAdmission::Rejected(KeyedRejection {
                rejection,
                transitioned,
            }) => {
                if let (true, Some(place), Some(read)) = (transitioned, &place, read) {
                    // Best effort: the next request makes the same transition if this
                    // write loses.
                    let _ = place.swap(read, &breaker, now);
                }
                return reject(out, upstream, &rejection);
            }
            KeyedAdmission::Admitted(ticketed) => {
                let admitted = Admitted {
                    breaker,
                    key,
                    ticketed,
                };
                let (Some(place), Some(read)) = (&place, read) else {
                    break (admitted, None, None);
                };
                let notes = admitted.ticketed.notes;
                if notes.is_empty() && read.value.is_some() {
                    // The read stays held: the outcome's write is conditional on it.
                    break (admitted, read.value.clone(), Some(read));
                }
                match place.swap(read, &admitted.breaker, now) {
                    Ok(written) => break (admitted, Some(written), None),
                    Err(Unwritten::Conflict) if attempt < ATTEMPTS => continue,
                    Err(Unwritten::Conflict) => {
                        let message = format!(
                            "tripgate: the breaker of {} changed {ATTEMPTS} times while this request was deciding",
                            upstream.authority
                        );
                        return forward::respond(
                            out,
                            503,
                            &message,
                            &[("retry-after", "1".into())],
                        );
                    }
                    Err(Unwritten::Failed) => break (admitted, None, None),
                }
            }
        }
    };

    let decided = lap();
    let probe = admitted.ticketed.notes.contains(AdmissionNotes::PROBE);
    let sent = forward::send(&prepared, upstream, settings.timeout, probe);
    let outcome = match &sent {
        Sent::Answered(response) => Some(Outcome::Status(response.status())),
        Sent::Timeout => Some(Outcome::Timeout),
        Sent::Connection(_) => Some(Outcome::ConnectionError),
        Sent::Failure(_) => Some(Outcome::Failure),
        Sent::Denied => None,
    };
    let answered = lap();
    if let (Some(place), Some(outcome)) = (&place, outcome) {
        record(place, &config, admitted, outcome, seen.as_deref(), held);
    }
    let mut extra = Vec::new();
    if let Some(problem) = unguarded {
        extra.push((
            "x-tripgate-unguarded",
            format!("the store failed: {problem}"),
        ));
    }
    if let (Some(loaded), Some(decided), Some(answered)) = (loaded, decided, answered) {
        let cost = format!(
            "load={};acquire={};record={}",
            loaded.saturating_sub(started),
            decided.saturating_sub(loaded),
            monotonic_clock::now().saturating_sub(answered)
        );
        extra.push(("x-tripgate-cost", cost));
    }
    answer(out, upstream, sent, settings.timeout, &extra);
}

/// An admitted call: its breaker, the breaker's key and the ticket.
struct Admitted {
    breaker: Breaker,
    key: u32,
    ticketed: Ticketed,
}

/// Step 3: the outcome into the newest state (see the module's docs). `held`: the read
/// the admission decided on, when it wrote nothing; the first swap is conditional on it
/// (a read of its own would see the same value unless another instance wrote, and then
/// the swap fails the same way).
fn record(
    place: &Place,
    config: &Config,
    admitted: Admitted,
    outcome: Outcome,
    seen: Option<&[u8]>,
    mut held: Option<Read>,
) {
    let epoch = admitted.ticketed.epoch;
    let mut own = Some(admitted);
    for _ in 0..ATTEMPTS {
        let now = monotonic_clock::now();
        let read = match held.take() {
            Some(read) => read,
            None => match place.read() {
                Ok(read) => read,
                Err(_) => return,
            },
        };
        if read.value.as_deref() == seen {
            if let Some(Admitted {
                breaker,
                key,
                ticketed,
            }) = own.take()
            {
                if breaker::record_keyed(key, ticketed.ticket, outcome, now).is_err() {
                    return;
                }
                match place.swap(read, &breaker, now) {
                    Ok(_) | Err(Unwritten::Failed) => return,
                    Err(Unwritten::Conflict) => continue,
                }
            }
        }
        // This instance's breaker is stale: nobody keeps it.
        own = None;
        if !replay(place, config, read, epoch, &outcome, now) {
            return;
        }
    }
}

/// The outcome recorded on the newest state `read`, if that breaker is still in `epoch`.
/// `true`: the swap lost a race, try again.
fn replay(
    place: &Place,
    config: &Config,
    read: Read,
    epoch: u64,
    outcome: &Outcome,
    now: u64,
) -> bool {
    let Ok((breaker, key)) = state::restore(read.value.as_deref(), config, now) else {
        return false;
    };
    let KeyedAdmission::Admitted(ticketed) = breaker::acquire_keyed(key, now) else {
        // The breaker moved on (opened, is probing): a call of an earlier epoch is stale.
        return false;
    };
    if ticketed.epoch != epoch
        || breaker::record_keyed(key, ticketed.ticket, *outcome, now).is_err()
    {
        return false;
    }
    matches!(place.swap(read, &breaker, now), Err(Unwritten::Conflict))
}

fn answer(
    out: ResponseOutparam,
    upstream: &Upstream,
    sent: Sent,
    timeout: u64,
    extra: &[(&str, String)],
) {
    match sent {
        Sent::Answered(response) => forward::relay(out, response, extra),
        Sent::Timeout => forward::respond(
            out,
            504,
            &format!(
                "{} did not answer within {} ms",
                upstream.authority,
                timeout / 1_000_000
            ),
            extra,
        ),
        Sent::Denied => forward::respond(out, 502, &forward::denied(upstream), extra),
        Sent::Connection(problem) | Sent::Failure(problem) => forward::respond(
            out,
            502,
            &format!("{} failed: {problem}", upstream.authority),
            extra,
        ),
    }
}

fn reject(out: ResponseOutparam, upstream: &Upstream, rejection: &Rejection) {
    // Whole seconds, rounded up, at least 1: HTTP's Retry-After has no finer unit, and 0
    // would invite an immediate retry that the breaker turns away.
    let seconds = rejection.retry_after.div_ceil(1_000_000_000).max(1);
    let state = match rejection.state {
        State::Closed => "closed",
        State::Open => "open",
        State::HalfOpen => "half-open",
        State::Isolated => "isolated",
        State::Disabled => "disabled",
    };
    let reason = match rejection.reason {
        RejectReason::Open => "open",
        RejectReason::Probing => "probing",
        RejectReason::Isolated => "isolated",
        RejectReason::Saturated => "saturated",
        RejectReason::ProbingElsewhere => "probing-elsewhere",
    };
    forward::respond(
        out,
        503,
        &format!(
            "tripgate: the breaker of {} rejected the call ({state}, {reason}); retry after {seconds} s",
            upstream.authority
        ),
        &[
            ("retry-after", seconds.to_string()),
            ("x-tripgate", format!("rejected; state={state}; reason={reason}")),
        ],
    );
}

/// The breaker's configuration: the environment's settings over the core's defaults.
fn config(settings: &BreakerSettings) -> Config {
    Config {
        failure_threshold: settings.failure_threshold,
        min_calls: settings.min_calls,
        failure_rate: settings.failure_rate,
        slow_call_rate: None,
        // Hang detection needs the calls in flight, which no instance sees but its own.
        slow_call_duration: None,
        window: settings.window,
        buckets: None,
        window_calls: None,
        cooldown: settings.cooldown,
        backoff_factor: None,
        max_cooldown: None,
        jitter_percent: None,
        jitter_seed: None,
        max_in_flight: None,
        half_open_max_probes: settings.half_open_max_probes,
        half_open_required_successes: settings.half_open_required_successes,
        half_open_success_rate: None,
        probe_timeout: settings.probe_timeout,
        fault_statuses: settings.fault_statuses.clone(),
        fault_grpc_codes: None,
        fleet_quorum: None,
    }
}
