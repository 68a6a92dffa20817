//! tripgate-http-guard: a `wasi:http` 0.2 reverse proxy whose upstream calls go through a
//! tripgate circuit breaker, one per upstream authority.
//!
//! The breaker is not linked in: the guard imports `tripgate:breaker/circuit-breaker`,
//! and a composition tool (wac; `component/edge/build.rs`) plugs the shipped tripgate
//! component into that import. Runtimes that serve `wasi:http` start an instance per
//! request, so each breaker's state lives in a `wasi:keyvalue@0.2.0-draft2` bucket between
//! requests (`state.rs`, `guard.rs`).
//!
//! With the `draft` feature the guard imports `wasi:keyvalue@0.2.0-draft` instead, which
//! has no compare-and-swap: its conditional writes are built from `increment`
//! (`state/versioned.rs`). With the `bare` feature the same handler is built without the
//! breaker and without the store: the baseline the breaker's cost is measured against.
//!
//! Nothing here unwraps or indexes: every failure is an answer (a 4xx or 5xx with the
//! reason in its body), never a trap.

mod config;
mod forward;
#[cfg(not(feature = "bare"))]
mod guard;
mod request;
#[cfg(not(feature = "bare"))]
mod state;

#[cfg(not(any(feature = "bare", feature = "draft")))]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/breaker.wit", "wit/keyvalue.wit", "wit/guard.wit"],
        world: "tripgate:http-guard/guard",
        generate_all,
    });
}

#[cfg(all(feature = "draft", not(feature = "bare")))]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/breaker.wit", "wit/draft/keyvalue.wit", "wit/draft/guard.wit"],
        world: "tripgate:http-guard/guard",
        generate_all,
    });
}

use wasip2::http::types::{IncomingRequest, ResponseOutparam};

use config::Settings;

struct Handler;

wasip2::http::proxy::export!(Handler);

impl wasip2::exports::http::incoming_handler::Guest for Handler {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let settings = match Settings::from_vars(&wasip2::cli::environment::get_environment()) {
            Ok(settings) => settings,
            Err(error) => {
                return forward::respond(out, 500, &format!("tripgate: {error}"), &[]);
            }
        };
        let path = request.path_with_query().unwrap_or_default();
        let Some(upstream) = settings.route(&path).cloned() else {
            return forward::respond(
                out,
                404,
                &format!("tripgate: no upstream for `{path}` ({})", config::UPSTREAMS),
                &[],
            );
        };
        #[cfg(not(feature = "bare"))]
        guard::guarded(request, out, &settings, &upstream);
        #[cfg(feature = "bare")]
        bare(request, out, &settings, &upstream);
    }
}

/// The same proxying with no breaker: the baseline.
#[cfg(feature = "bare")]
fn bare(
    request: IncomingRequest,
    out: ResponseOutparam,
    settings: &Settings,
    upstream: &config::Upstream,
) {
    let started = wasip2::clocks::monotonic_clock::now();
    let prepared = match request::Head::read(request).and_then(|head| {
        head.read_body(
            started.saturating_add(settings.body_timeout),
            settings.body_timeout,
        )
    }) {
        Ok(prepared) => prepared,
        Err(refused) => return forward::respond(out, refused.status, &refused.message, &[]),
    };
    match forward::send(&prepared, upstream, settings.timeout, false) {
        forward::Sent::Answered(answer) => forward::relay(out, answer, &[]),
        forward::Sent::Timeout => {
            forward::respond(out, 504, "the upstream did not answer in time", &[])
        }
        forward::Sent::Denied => forward::respond(out, 502, &forward::denied(upstream), &[]),
        forward::Sent::Connection(problem) | forward::Sent::Failure(problem) => {
            forward::respond(out, 502, &format!("the upstream failed: {problem}"), &[])
        }
    }
}
