//! The proxying itself, breaker or not: the incoming request sent on to its upstream
//! through `wasi:http/outgoing-handler` under a deadline, and the answer relayed back.

use std::io::{Read, Write};

use wasip2::clocks::monotonic_clock;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingRequest, IncomingResponse, Method, OutgoingBody,
    OutgoingRequest, OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use wasip2::io::poll;

use crate::config::Upstream;

/// The largest request body the guard forwards (it reads it whole before sending).
const MAX_REQUEST_BODY: usize = 8 << 20;

/// What became of a call to the upstream.
pub enum Sent {
    /// The upstream answered (any status).
    Answered(IncomingResponse),
    /// No answer within the deadline.
    Timeout,
    /// The connection could not be made, was refused, or broke.
    Connection(String),
    /// The host did not let the call leave (its outbound allow-list: Spin's
    /// `allowed_outbound_hosts`, say). Nothing about the upstream: not an outcome.
    Denied,
    /// Anything else (a protocol error, a host refusal).
    Failure(String),
}

/// A request the guard cannot forward: answered at once with this status.
pub struct Refused {
    pub status: u16,
    pub message: String,
}

/// The parts of the incoming request to send on, read before any breaker decision so
/// that a bad request never costs the breaker a permit.
pub struct Prepared {
    method: Method,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

/// Reads the request: method, path, headers and body.
pub fn prepare(request: IncomingRequest) -> Result<Prepared, Refused> {
    let method = request.method();
    let path = request.path_with_query().unwrap_or_else(|| "/".into());
    let headers = request
        .headers()
        .entries()
        .into_iter()
        // The guard sets the upstream's host, and marks probes itself.
        .filter(|(name, _)| {
            !name.eq_ignore_ascii_case("host") && !name.eq_ignore_ascii_case("x-tripgate-probe")
        })
        .collect();
    let body = request.consume().map_err(|()| Refused {
        status: 500,
        message: "the request's body was taken already".into(),
    })?;
    let body = read_all(body, MAX_REQUEST_BODY).map_err(|problem| Refused {
        status: if problem == TOO_LARGE { 413 } else { 400 },
        message: format!("reading the request body: {problem}"),
    })?;
    Ok(Prepared {
        method,
        path,
        headers,
        body,
    })
}

const TOO_LARGE: &str = "larger than the guard forwards";

fn read_all(body: IncomingBody, limit: usize) -> Result<Vec<u8>, &'static str> {
    let mut bytes = Vec::new();
    {
        let mut stream = body.stream().map_err(|()| "no stream")?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = Read::read(&mut stream, &mut chunk).map_err(|_| "the stream failed")?;
            if n == 0 {
                break;
            }
            if bytes.len() + n > limit {
                return Err(TOO_LARGE);
            }
            bytes.extend_from_slice(&chunk[..n]);
        }
    }
    drop(IncomingBody::finish(body));
    Ok(bytes)
}

/// Sends `request` to `upstream` and waits for the answer's head, at most `timeout` ns.
/// `probe` marks the request with `x-tripgate-probe: 1` (a half-open probe).
pub fn send(request: &Prepared, upstream: &Upstream, timeout: u64, probe: bool) -> Sent {
    let headers = Fields::new();
    for (name, value) in &request.headers {
        // Headers the host forbids (hop-by-hop ones) are left out rather than refused.
        let _ = headers.append(name, value);
    }
    if probe {
        let _ = headers.set("x-tripgate-probe", &[b"1".to_vec()]);
    }
    let outgoing = OutgoingRequest::new(headers);
    let scheme = if upstream.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let set = outgoing.set_method(&request.method).is_ok()
        && outgoing.set_scheme(Some(&scheme)).is_ok()
        && outgoing.set_authority(Some(&upstream.authority)).is_ok()
        && outgoing.set_path_with_query(Some(&request.path)).is_ok();
    if !set {
        return Sent::Failure(
            "the host refused the request's method, scheme, authority or path".into(),
        );
    }
    let Ok(body) = outgoing.body() else {
        return Sent::Failure("the outgoing request has no body".into());
    };
    let options = RequestOptions::new();
    // A host that does not support a deadline refuses to set it: the guard's own timer
    // below still holds.
    let _ = options.set_connect_timeout(Some(timeout));
    let _ = options.set_first_byte_timeout(Some(timeout));
    let _ = options.set_between_bytes_timeout(Some(timeout));
    let started = monotonic_clock::now();
    let future = match outgoing_handler::handle(outgoing, Some(options)) {
        Ok(future) => future,
        Err(code) => return classify(code),
    };
    if let Err(problem) = write_body(body, &request.body) {
        return Sent::Connection(problem);
    }
    let deadline = monotonic_clock::subscribe_instant(started.saturating_add(timeout));
    let ready = future.subscribe();
    loop {
        // `get` hands the answer over once: it is read once per wake-up.
        if let Some(answer) = future.get() {
            return match answer {
                Ok(Ok(response)) => Sent::Answered(response),
                Ok(Err(code)) => classify(code),
                Err(()) => Sent::Failure("the response was taken already".into()),
            };
        }
        if deadline.ready() {
            // Dropping the future cancels the call.
            return Sent::Timeout;
        }
        poll::poll(&[&ready, &deadline]);
    }
}

fn write_body(body: OutgoingBody, bytes: &[u8]) -> Result<(), String> {
    if !bytes.is_empty() {
        let mut stream = body.write().map_err(|()| "no request stream".to_string())?;
        Write::write_all(&mut stream, bytes)
            .and_then(|()| Write::flush(&mut stream))
            .map_err(|e| format!("writing the request body: {e}"))?;
    }
    OutgoingBody::finish(body, None).map_err(|code| format!("{code:?}"))
}

/// What a 502 says when the host denied the call.
pub fn denied(upstream: &Upstream) -> String {
    format!(
        "tripgate: the host denied the call to {0} (HTTP-request-denied): allow {1}://{0} in its outbound list (Spin: `allowed_outbound_hosts`)",
        upstream.authority,
        if upstream.https { "https" } else { "http" }
    )
}

/// The core's classes of failure, from the host's error codes.
fn classify(code: ErrorCode) -> Sent {
    match code {
        ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout
        | ErrorCode::HttpResponseTimeout
        | ErrorCode::DnsTimeout => Sent::Timeout,
        ErrorCode::DnsError(_)
        | ErrorCode::DestinationNotFound
        | ErrorCode::DestinationUnavailable
        | ErrorCode::DestinationIpProhibited
        | ErrorCode::DestinationIpUnroutable
        | ErrorCode::ConnectionRefused
        | ErrorCode::ConnectionTerminated
        | ErrorCode::ConnectionLimitReached
        | ErrorCode::TlsProtocolError
        | ErrorCode::TlsCertificateError
        | ErrorCode::TlsAlertReceived(_)
        | ErrorCode::HttpResponseIncomplete => Sent::Connection(format!("{code:?}")),
        ErrorCode::HttpRequestDenied => Sent::Denied,
        other => Sent::Failure(format!("{other:?}")),
    }
}

/// Sends the upstream's answer back: its status, its headers (less those the host
/// forbids) and `extra` ones, and its body.
pub fn relay(out: ResponseOutparam, response: IncomingResponse, extra: &[(&str, String)]) {
    let headers = Fields::new();
    for (name, value) in response.headers().entries() {
        let _ = headers.append(&name, &value);
    }
    for (name, value) in extra {
        let _ = headers.set(name, &[value.as_bytes().to_vec()]);
    }
    let outgoing = OutgoingResponse::new(headers);
    let _ = outgoing.set_status_code(response.status());
    let Ok(body) = outgoing.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(outgoing));
    let Ok(incoming) = response.consume() else {
        drop(OutgoingBody::finish(body, None));
        return;
    };
    let copied = (|| -> Result<(), ()> {
        let mut from = incoming.stream()?;
        let mut to = body.write()?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = Read::read(&mut from, &mut chunk).map_err(|_| ())?;
            if n == 0 {
                return Write::flush(&mut to).map_err(|_| ());
            }
            Write::write_all(&mut to, &chunk[..n]).map_err(|_| ())?;
        }
    })();
    drop(IncomingBody::finish(incoming));
    if copied.is_ok() {
        drop(OutgoingBody::finish(body, None));
    }
    // On a broken copy the body is dropped unfinished: the host ends the response as
    // incomplete rather than passing a truncated body off as whole.
}

/// Answers with `status`, a plain-text `message` and `headers`.
pub fn respond(out: ResponseOutparam, status: u16, message: &str, headers: &[(&str, String)]) {
    let fields = Fields::new();
    let _ = fields.set("content-type", &[b"text/plain; charset=utf-8".to_vec()]);
    for (name, value) in headers {
        let _ = fields.set(name, &[value.as_bytes().to_vec()]);
    }
    let response = OutgoingResponse::new(fields);
    let _ = response.set_status_code(status);
    let Ok(body) = response.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(response));
    if let Ok(mut stream) = body.write() {
        let _ = Write::write_all(&mut stream, message.as_bytes())
            .and_then(|()| Write::write_all(&mut stream, b"\n"))
            .and_then(|()| Write::flush(&mut stream));
    }
    drop(OutgoingBody::finish(body, None));
}
