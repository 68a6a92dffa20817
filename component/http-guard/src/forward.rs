//! The proxying itself, breaker or not: the request sent on to its upstream through
//! `wasi:http/outgoing-handler` under a deadline, and the answer relayed back.

use std::io::{Read, Write};

use wasip2::clocks::monotonic_clock;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingBody, IncomingResponse, OutgoingBody,
    OutgoingRequest, OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use wasip2::io::poll::{self, Pollable};
use wasip2::io::streams::OutputStream;

use crate::config::Upstream;
use crate::request::Prepared;

/// What became of a call to the upstream.
pub enum Sent {
    /// The upstream answered (any status), perhaps before it had the whole body.
    Answered(Answer),
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

/// The upstream's answer, and the rest of the request body if it answered before taking
/// it all.
pub struct Answer {
    pub response: IncomingResponse,
    /// Kept open, unfinished, until the answer is relayed: dropped earlier, it would
    /// abort the connection the answer's body is still arriving on.
    unsent: Option<Unsent>,
}

/// A request body the upstream answered before it was all written.
struct Unsent {
    // Declared before the body it writes to, so it is dropped first.
    _stream: OutputStream,
    _body: OutgoingBody,
}

/// How the upload of the request body ended.
enum Upload {
    Done,
    /// The upstream answered first: the rest is not sent.
    Answered(Unsent),
    /// The deadline passed.
    TimedOut,
    /// The host or the connection refused the rest (the upstream may have answered).
    Failed,
}

/// Sends `request` to `upstream` and waits for the answer's head, at most `timeout` ns
/// for all of it: connecting, the body, the first byte. `probe` marks the request with
/// `x-tripgate-probe: 1` (a half-open probe). An answer that comes while the body is on
/// its way, or after writing it failed, is the answer: the upstream decided (a 401 or a
/// 413 before reading an upload), and it is judged by its status.
pub fn send(request: &Prepared, upstream: &Upstream, timeout: u64, probe: bool) -> Sent {
    let outgoing = match outgoing(request, upstream, probe) {
        Ok(outgoing) => outgoing,
        Err(problem) => return Sent::Failure(problem),
    };
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
    let deadline = monotonic_clock::subscribe_instant(started.saturating_add(timeout));
    let unsent = match upload(body, &request.body, &future, &deadline) {
        Upload::Answered(unsent) => Some(unsent),
        Upload::TimedOut => return Sent::Timeout,
        Upload::Done | Upload::Failed => None,
    };
    match wait(&future, &deadline) {
        Waited::Response(response) => Sent::Answered(Answer { response, unsent }),
        Waited::Sent(sent) => sent,
    }
}

/// The outgoing request: `request`'s method, path and headers, for `upstream`.
fn outgoing(
    request: &Prepared,
    upstream: &Upstream,
    probe: bool,
) -> Result<OutgoingRequest, String> {
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
    if set {
        Ok(outgoing)
    } else {
        Err("the host refused the request's method, scheme, authority or path".into())
    }
}

/// Writes `bytes` as the request body without blocking: as much as the host takes at a
/// time, until all is written, the upstream answers, or the deadline passes.
fn upload(
    body: OutgoingBody,
    bytes: &[u8],
    future: &FutureIncomingResponse,
    deadline: &Pollable,
) -> Upload {
    if bytes.is_empty() {
        // Nothing to write: no stream, no waiting.
        return match OutgoingBody::finish(body, None) {
            Ok(()) => Upload::Done,
            Err(_) => Upload::Failed,
        };
    }
    let Ok(stream) = body.write() else {
        return Upload::Failed;
    };
    let answered = future.subscribe();
    let writable = stream.subscribe();
    let mut rest = bytes;
    let mut flushed = false;
    while !flushed {
        if answered.ready() && !rest.is_empty() {
            drop(writable);
            return Upload::Answered(Unsent {
                _stream: stream,
                _body: body,
            });
        }
        if deadline.ready() {
            return Upload::TimedOut;
        }
        match stream.check_write() {
            // An answer that came while the last bytes flush is read after the flush.
            Ok(0) if answered.ready() => drop(poll::poll(&[&writable, deadline])),
            Ok(0) => drop(poll::poll(&[&writable, &answered, deadline])),
            Ok(_) if rest.is_empty() => flushed = true,
            Ok(room) => {
                let n = rest.len().min(usize::try_from(room).unwrap_or(usize::MAX));
                let (now, later) = rest.split_at(n);
                if stream.write(now).is_err() {
                    return Upload::Failed;
                }
                rest = later;
                if rest.is_empty() && stream.flush().is_err() {
                    return Upload::Failed;
                }
            }
            Err(_) => return Upload::Failed,
        }
    }
    drop(writable);
    drop(stream);
    match OutgoingBody::finish(body, None) {
        Ok(()) => Upload::Done,
        Err(_) => Upload::Failed,
    }
}

/// What waiting for the answer's head gave.
enum Waited {
    Response(IncomingResponse),
    Sent(Sent),
}

fn wait(future: &FutureIncomingResponse, deadline: &Pollable) -> Waited {
    let ready = future.subscribe();
    loop {
        // `get` hands the answer over once: it is read once per wake-up.
        if let Some(answer) = future.get() {
            return match answer {
                Ok(Ok(response)) => Waited::Response(response),
                Ok(Err(code)) => Waited::Sent(classify(code)),
                Err(()) => Waited::Sent(Sent::Failure("the response was taken already".into())),
            };
        }
        if deadline.ready() {
            // Dropping the future cancels the call.
            return Waited::Sent(Sent::Timeout);
        }
        poll::poll(&[&ready, deadline]);
    }
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
pub fn relay(out: ResponseOutparam, answer: Answer, extra: &[(&str, String)]) {
    let Answer { response, unsent } = answer;
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
    drop(unsent);
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
