//! The client's request: its head read at once, its body only once the breaker has let
//! the call through, and only for so long (`TRIPGATE_BODY_TIMEOUT_MS`). So an open
//! breaker turns a request away without waiting for its body, and a client that never
//! finishes sending one holds its instance no longer than the body deadline.

use wasip2::clocks::monotonic_clock::{self, Instant};
use wasip2::http::types::{IncomingBody, IncomingRequest, Method};
use wasip2::io::poll;
use wasip2::io::streams::StreamError;

/// The largest request body the guard forwards (it holds it whole before sending).
const MAX_REQUEST_BODY: usize = 8 << 20;

/// A request the guard cannot forward: answered at once with this status.
pub struct Refused {
    pub status: u16,
    pub message: String,
}

/// A request whose head is read and whose body is not yet.
pub struct Head {
    method: Method,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
    // Declared before the request it came from, so it is dropped first.
    body: IncomingBody,
    _request: IncomingRequest,
}

/// The parts of the request to send on.
pub struct Prepared {
    pub method: Method,
    pub path: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Head {
    /// Reads the request's method, path and headers, and takes its body unread.
    pub fn read(request: IncomingRequest) -> Result<Head, Refused> {
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
            message: "tripgate: the request's body was taken already".into(),
        })?;
        Ok(Head {
            method,
            path,
            headers,
            body,
            _request: request,
        })
    }

    /// Reads the body, which must arrive whole by `deadline` (`timeout` ns after the
    /// request came, for the message).
    pub fn read_body(self, deadline: Instant, timeout: u64) -> Result<Prepared, Refused> {
        let Head {
            method,
            path,
            headers,
            body,
            _request,
        } = self;
        let body = read_all(body, deadline).map_err(|problem| Refused {
            status: problem.status(),
            message: match problem {
                BodyProblem::TooLarge => format!(
                    "tripgate: the request body is larger than the guard forwards ({MAX_REQUEST_BODY} bytes)"
                ),
                BodyProblem::TimedOut => format!(
                    "tripgate: the request body did not arrive within {} ms (TRIPGATE_BODY_TIMEOUT_MS)",
                    timeout / 1_000_000
                ),
                BodyProblem::Failed => "tripgate: reading the request body failed".into(),
            },
        })?;
        Ok(Prepared {
            method,
            path,
            headers,
            body,
        })
    }
}

/// Why a body could not be read.
enum BodyProblem {
    TooLarge,
    TimedOut,
    Failed,
}

impl BodyProblem {
    fn status(&self) -> u16 {
        match self {
            Self::TooLarge => 413,
            Self::TimedOut => 408,
            Self::Failed => 400,
        }
    }
}

/// The whole body, read without blocking past `deadline`.
fn read_all(body: IncomingBody, deadline: Instant) -> Result<Vec<u8>, BodyProblem> {
    let mut bytes = Vec::new();
    {
        let stream = body.stream().map_err(|()| BodyProblem::Failed)?;
        // Made at the first wait only (a body that has arrived needs none), after the
        // stream they watch, so dropped before it.
        let mut waiting = None;
        loop {
            match stream.read(64 << 10) {
                Ok(chunk) if chunk.is_empty() => {
                    let (readable, timer) = waiting.get_or_insert_with(|| {
                        let timer = monotonic_clock::subscribe_instant(deadline);
                        (stream.subscribe(), timer)
                    });
                    if timer.ready() {
                        return Err(BodyProblem::TimedOut);
                    }
                    poll::poll(&[&*readable, &*timer]);
                }
                Ok(chunk) => {
                    if bytes.len() + chunk.len() > MAX_REQUEST_BODY {
                        return Err(BodyProblem::TooLarge);
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(_)) => return Err(BodyProblem::Failed),
            }
        }
    }
    drop(IncomingBody::finish(body));
    Ok(bytes)
}
