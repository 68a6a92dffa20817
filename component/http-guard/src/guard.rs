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
    self as breaker, AdmissionNotes, Breaker, Class, Config, KeyedAdmission, KeyedRecord,
    KeyedRejection, Outcome, RecordError, RejectReason, Rejection, State, Ticketed,
};
use crate::config::{BreakerSettings, Settings, Upstream};
use crate::forward::{self, Sent};
use crate::request::Head;
use crate::state::{self, Place, Read, Restored, Unwritten};

/// Reads and swaps one step may take before it gives up.
const ATTEMPTS: u32 = 8;

pub fn guarded(
    request: IncomingRequest,
    out: ResponseOutparam,
    settings: &Settings,
    upstream: &Upstream,
) {
    let started = monotonic_clock::now();
    // The head only: the body is read once the breaker has let the call through.
    let head = match Head::read(request) {
        Ok(head) => head,
        Err(refused) => return forward::respond(out, refused.status, &refused.message, &[]),
    };
    let mut guarding = Guarding::new(settings, upstream, started);
    let Admission {
        admitted,
        seen,
        held,
    } = match guarding.decide() {
        Decided::Admitted(admission) => admission,
        Decided::Rejected(rejection) => return reject(out, upstream, &rejection),
        Decided::Refused(status, message, headers) => {
            return forward::respond(out, status, &message, &headers)
        }
    };
    let decided = guarding.lap();
    let probe = admitted.ticketed.notes.contains(AdmissionNotes::PROBE);
    let deadline = started.saturating_add(settings.body_timeout);
    let prepared = match head.read_body(deadline, settings.body_timeout) {
        Ok(prepared) => prepared,
        Err(refused) => {
            // The client's doing, no evidence about the upstream; a probe's slot is given
            // back (a plain admission wrote nothing and holds nothing).
            if let (true, Some(place)) = (probe, &guarding.place) {
                let config = &guarding.config;
                record(
                    place,
                    config,
                    admitted,
                    Outcome::Cancelled,
                    seen.as_deref(),
                    held,
                );
            }
            return forward::respond(out, refused.status, &refused.message, &[]);
        }
    };
    let sent = forward::send(&prepared, upstream, settings.timeout, probe);
    let outcome = match &sent {
        Sent::Answered(answer) => Some(Outcome::Status(answer.response.status())),
        Sent::Timeout => Some(Outcome::Timeout),
        Sent::Connection(_) => Some(Outcome::ConnectionError),
        Sent::Failure(_) => Some(Outcome::Failure),
        Sent::Denied => None,
    };
    let answered = guarding.lap();
    if let (Some(place), Some(outcome)) = (&guarding.place, outcome) {
        let config = &guarding.config;
        record(place, config, admitted, outcome, seen.as_deref(), held);
    }
    let extra = guarding.headers(decided, answered);
    answer(out, upstream, sent, settings.timeout, &extra);
}

/// One request's breaker: its configuration, its place in the store, and what the answer
/// must say about them.
struct Guarding<'a> {
    settings: &'a Settings,
    upstream: &'a Upstream,
    config: Config,
    place: Option<Place>,
    /// Why the guard is deciding without its store, if it is.
    unguarded: Option<String>,
    started: u64,
    /// When the state was loaded (`TRIPGATE_COSTS` only).
    loaded: Option<u64>,
}

/// What step 1 came to.
enum Decided {
    Admitted(Admission),
    Rejected(Rejection),
    /// An answer other than a rejection: status, message, headers.
    Refused(u16, String, Vec<(&'static str, String)>),
}

/// An admitted call, with the value its breaker came from (`seen`) and, when the
/// admission wrote nothing, the read the outcome's write is conditional on (`held`).
struct Admission {
    admitted: Admitted,
    seen: Option<Vec<u8>>,
    held: Option<Read>,
}

impl Admission {
    fn of(admitted: Admitted, seen: Option<Vec<u8>>, held: Option<Read>) -> Attempt {
        Attempt::Decided(Decided::Admitted(Admission {
            admitted,
            seen,
            held,
        }))
    }
}

/// One try of step 1: decided, or a lost swap to try again.
enum Attempt {
    Decided(Decided),
    Conflict,
}

impl<'a> Guarding<'a> {
    fn new(settings: &'a Settings, upstream: &'a Upstream, started: u64) -> Self {
        // Fails open: without a store the breaker is this request's alone.
        let (place, unguarded) = match Place::open(&settings.bucket, &upstream.authority) {
            Ok(place) => (Some(place), None),
            Err(problem) => (None, Some(problem)),
        };
        Guarding {
            settings,
            upstream,
            config: config(&settings.breaker),
            place,
            unguarded,
            started,
            loaded: None,
        }
    }

    /// The time now, for `x-tripgate-cost`, read only when asked for: every clock read is
    /// a host call.
    fn lap(&self) -> Option<u64> {
        self.settings.costs.then(monotonic_clock::now)
    }

    /// Step 1 (see the module's docs), tried again on a lost swap, at most `ATTEMPTS`
    /// times.
    fn decide(&mut self) -> Decided {
        for attempt in 1..=ATTEMPTS {
            let now = if attempt == 1 {
                self.started
            } else {
                monotonic_clock::now()
            };
            if let Attempt::Decided(decided) = self.attempt(now) {
                return decided;
            }
        }
        let message = format!(
            "tripgate: the breaker of {} changed {ATTEMPTS} times while this request was deciding",
            self.upstream.authority
        );
        Decided::Refused(503, message, vec![("retry-after", "1".into())])
    }

    fn attempt(&mut self, now: u64) -> Attempt {
        let read = self.place.as_ref().and_then(|place| match place.read() {
            Ok(read) => Some(read),
            Err(problem) => {
                self.unguarded = Some(format!("reading the breaker's state: {problem}"));
                None
            }
        });
        let value = read.as_ref().and_then(|r| r.value.as_deref());
        let restored = state::restore(value, &self.config, now, self.settings.clock_skew);
        if self.loaded.is_none() {
            self.loaded = self.lap();
        }
        let Restored {
            breaker,
            key,
            ahead,
        } = match restored {
            Ok(restored) => restored,
            Err(error) => {
                let message = format!(
                    "tripgate: the breaker settings are invalid: {}",
                    error.message
                );
                return Attempt::Decided(Decided::Refused(500, message, Vec::new()));
            }
        };
        let place = self.place.as_ref();
        // The keyed hot path: no permit resource to make, lend and drop, and no list
        // of transitions to return (`wit/breaker.wit`).
        let mut admission = breaker::acquire_keyed(key, now);
        if let KeyedAdmission::Rejected(KeyedRejection { rejection, .. }) = &admission {
            if matches!(rejection.reason, RejectReason::Isolated) {
                // See `released`: the outcome's write stores the release.
                let _ = breaker.release(now);
                admission = breaker::acquire_keyed(key, now);
            }
        }
        let ticketed = match admission {
            KeyedAdmission::Admitted(ticketed) => ticketed,
            KeyedAdmission::UnknownKey => {
                // One breaker per instance: its key always names it.
                let message = "tripgate: the breaker's key names no breaker in its instance";
                return Attempt::Decided(Decided::Refused(500, message.into(), Vec::new()));
            }
            KeyedAdmission::Rejected(KeyedRejection {
                rejection,
                transitioned,
            }) => {
                if let (true, Some(place), Some(read)) = (transitioned || ahead, place, read) {
                    // Best effort: the next request makes the same transition (or finds
                    // the stamp ahead of its clock again) if this write loses.
                    let _ = place.swap(read, &breaker, now);
                }
                return Attempt::Decided(Decided::Rejected(rejection));
            }
        };
        let admitted = Admitted {
            breaker,
            key,
            ticketed,
        };
        let (Some(place), Some(read)) = (place, read) else {
            return Admission::of(admitted, None, None);
        };
        if ticketed.notes.is_empty() && read.value.is_some() {
            // The read stays held: the outcome's write is conditional on it.
            let seen = read.value.clone();
            return Admission::of(admitted, seen, Some(read));
        }
        match place.swap(read, &admitted.breaker, now) {
            Ok(written) => Admission::of(admitted, Some(written), None),
            Err(Unwritten::Conflict) => Attempt::Conflict,
            Err(Unwritten::Failed) => Admission::of(admitted, None, None),
        }
    }

    /// The answer's own headers: why the store was not used, and the steps' costs.
    fn headers(&self, decided: Option<u64>, answered: Option<u64>) -> Vec<(&'static str, String)> {
        let mut extra = Vec::new();
        if let Some(problem) = &self.unguarded {
            extra.push((
                "x-tripgate-unguarded",
                format!("the store failed: {problem}"),
            ));
        }
        if let (Some(loaded), Some(decided), Some(answered)) = (self.loaded, decided, answered) {
            let cost = format!(
                "load={};acquire={};record={}",
                loaded.saturating_sub(self.started),
                decided.saturating_sub(loaded),
                monotonic_clock::now().saturating_sub(answered)
            );
            extra.push(("x-tripgate-cost", cost));
        }
        extra
    }
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
                let Ok(recorded) = record_keyed(key, ticketed.ticket, outcome, now) else {
                    return;
                };
                if matches!(recorded.class, Class::Fault) {
                    released(&breaker, key, outcome, now);
                }
                match place.swap(read, &breaker, now) {
                    Ok(_) | Err(Unwritten::Failed) => return,
                    Err(Unwritten::Conflict) => continue,
                }
            }
        }
        // This instance's breaker is stale: nobody keeps it. A neutral outcome has
        // nothing to count on the newer state.
        own = None;
        if matches!(outcome, Outcome::Cancelled)
            || !replay(place, config, read, epoch, &outcome, now)
        {
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
    // No skew: the time since the newest write only ages its window here.
    let Ok(Restored { breaker, key, .. }) = state::restore(read.value.as_deref(), config, now, 0)
    else {
        return false;
    };
    let KeyedAdmission::Admitted(ticketed) = breaker::acquire_keyed(key, now) else {
        // The breaker moved on (opened, is probing): a call of an earlier epoch is stale.
        return false;
    };
    if ticketed.epoch != epoch || record_keyed(key, ticketed.ticket, *outcome, now).is_err() {
        return false;
    }
    matches!(place.swap(read, &breaker, now), Err(Unwritten::Conflict))
}

/// The guard has no operator calls (`isolate`, `disable`, `release`), so it could never
/// leave those states: a stored isolated breaker would turn every call away, a disabled
/// one let every call through untripped, until someone edited the store. It releases
/// them where they show, at no cost to other calls: an isolated breaker when it rejects
/// as isolated (in `Guarding::attempt`), a disabled one when it records a fault, here,
/// which then counts in the released breaker as a call admitted and ended now.
fn released(breaker: &Breaker, key: u32, outcome: Outcome, now: u64) {
    if !matches!(breaker.state(now), State::Disabled) {
        return;
    }
    let _ = breaker.release(now);
    if let KeyedAdmission::Admitted(ticketed) = breaker::acquire_keyed(key, now) {
        let _ = record_keyed(key, ticketed.ticket, outcome, now);
    }
}

/// `record-keyed`, with an answer whose status is no HTTP status (HTTP libraries pass
/// 600-999) recorded as the failure it is (SPEC.md § Outcomes): the core refuses the
/// status and leaves the ticket out for this second record.
fn record_keyed(key: u32, ticket: u64, outcome: Outcome, now: u64) -> Result<KeyedRecord, ()> {
    match breaker::record_keyed(key, ticket, outcome, now) {
        Err(RecordError::InvalidStatus(_)) => {
            breaker::record_keyed(key, ticket, Outcome::Failure, now).map_err(drop)
        }
        recorded => recorded.map_err(drop),
    }
}

fn answer(
    out: ResponseOutparam,
    upstream: &Upstream,
    sent: Sent,
    timeout: u64,
    extra: &[(&str, String)],
) {
    match sent {
        Sent::Answered(answer) => forward::relay(out, answer, extra),
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
        // Shadow mode's counts live in the breaker and leave no trace in its export: an
        // instance made per request would drop them with it. The guard enforces.
        shadow: None,
    }
}
