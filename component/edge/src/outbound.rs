//! The guests' outgoing calls: an allow-list of origins (Spin's `allowed_outbound_hosts`),
//! then a plain-`http` client of this crate's own; `https` goes to wasmtime-wasi-http's
//! default client.
//!
//! Why not the default client for `http` too: an upstream that refuses an upload answers
//! (401, 413) before reading the body and closes, and the kernel resets the connection
//! under the body still being sent. The default client then failed the call with a
//! protocol error, a fault for a 4xx: hyper fails the connection at the first write that
//! meets the reset, before it reads the answer already waiting in the socket, and the
//! default client, which drives the connection and waits for the answer's head in one
//! future, drops a head delivered in the same turn as the failure. Here a write the reset
//! refused is dropped rather than failed, so the answer is read ([`ReadsPastReset`]), and
//! a head the connection delivered in the turn it failed is the answer all the same. (On loopback, 60 such refusals of a 4 MiB upload
//! came back as the 413 in 7 to 15 cases with the default client, in 60 here.)

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio::time::error::Elapsed;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// What the guest's call comes back with: the answer, and the connection's own ending.
type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
);

/// The hooks of every instance's `wasi:http` context.
pub(crate) struct Outbound {
    /// The origins (`http://host:port`) a guest may call; `None`: any.
    pub(crate) allowed: Option<Arc<Vec<String>>>,
}

impl WasiHttpHooks for Outbound {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<dyn Future<Output = Result<Sent, HttpError>> + Send> {
        let uri = request.uri();
        let origin = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map_or("", |a| a.as_str())
        );
        if let Some(allowed) = &self.allowed {
            if !allowed.contains(&origin) {
                return Box::new(async { Err(HttpError::HttpRequestDenied) });
            }
        }
        if uri.scheme() == Some(&http::uri::Scheme::HTTPS) {
            return wasmtime_wasi_http::default_hooks().send_request(request, options, fut);
        }
        Box::new(send(request, Deadlines::of(options)))
    }
}

/// The guest's deadlines, each 10 minutes when it gives none.
#[derive(Clone, Copy)]
struct Deadlines {
    connect: Duration,
    first_byte: Duration,
    between_bytes: Duration,
}

impl Deadlines {
    fn of(options: Option<RequestOptions>) -> Self {
        const NONE_GIVEN: Duration = Duration::from_secs(600);
        let options = options.unwrap_or_default();
        Deadlines {
            connect: options.connect_timeout.unwrap_or(NONE_GIVEN),
            first_byte: options.first_byte_timeout.unwrap_or(NONE_GIVEN),
            // A zero gap would end every body before its first byte.
            between_bytes: options
                .between_bytes_timeout
                .unwrap_or(NONE_GIVEN)
                .max(Duration::from_nanos(1)),
        }
    }
}

/// One request on a connection of its own, over plain `http`.
async fn send(
    mut request: http::Request<WasiBody>,
    deadlines: Deadlines,
) -> Result<Sent, HttpError> {
    let authority = request
        .uri()
        .authority()
        .ok_or(HttpError::HttpRequestUriInvalid)?;
    let address = match authority.port_u16() {
        Some(_) => authority.to_string(),
        None => format!("{}:80", authority.host()),
    };
    let connecting = async {
        let stream = tokio::net::TcpStream::connect(&address)
            .await
            .map_err(HttpError::Connect)?;
        let stream = ReadsPastReset {
            stream,
            reset: false,
        };
        hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(HttpError::from)
    };
    let (mut sender, connection) = tokio::time::timeout(deadlines.connect, connecting)
        .await
        .map_err(|_| HttpError::ConnectionTimeout)??;
    // On the wire the target is the path: the authority went into the connection.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .map_err(|_| HttpError::HttpRequestUriInvalid)?;
    *request.uri_mut() = path;
    let mut connection = Some(Box::pin(connection));
    let mut answer = std::pin::pin!(tokio::time::timeout(
        deadlines.first_byte,
        sender.send_request(request)
    ));
    // The connection is driven here, in this task, until the head comes (handing it over
    // from a task of its own costs a wake-up on another thread per request); a head it
    // delivered in the turn it ended is the answer all the same.
    let response = std::future::poll_fn(|cx| {
        if let Poll::Ready(answered) = answer.as_mut().poll(cx) {
            return Poll::Ready(head(answered));
        }
        let Some(running) = connection.as_mut() else {
            return Poll::Pending;
        };
        let Poll::Ready(ended) = running.as_mut().poll(cx) else {
            return Poll::Pending;
        };
        connection = None;
        Poll::Ready(match answer.as_mut().poll(cx) {
            Poll::Ready(answered) => head(answered),
            Poll::Pending => {
                Err(ended.map_or_else(HttpError::from, |()| HttpError::HttpResponseIncomplete))
            }
        })
    })
    .await?;
    let response = response.map(|body| {
        Paced {
            body,
            gap: deadlines.between_bytes,
            timer: Box::pin(tokio::time::sleep(deadlines.between_bytes)),
        }
        .boxed_unsync()
    });
    // The rest of the connection (the body still going out, the answer's body coming
    // in) is the host's to run.
    let rest = async move {
        match connection {
            Some(running) => running.await.map_err(HttpError::from),
            None => Ok(()),
        }
    };
    Ok((response, Box::new(rest)))
}

/// The answer's head, or why there is none.
fn head(
    answered: Result<Result<http::Response<hyper::body::Incoming>, hyper::Error>, Elapsed>,
) -> Result<http::Response<hyper::body::Incoming>, HttpError> {
    answered
        .map_err(|_| HttpError::ConnectionReadTimeout)?
        .map_err(HttpError::from)
}

/// An answer's body that fails when no frame comes for `gap` (the guest's
/// between-bytes deadline).
struct Paced {
    body: hyper::body::Incoming,
    gap: Duration,
    timer: Pin<Box<Sleep>>,
}

impl Body for Paced {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let paced = &mut *self;
        match Pin::new(&mut paced.body).poll_frame(cx) {
            Poll::Ready(frame) => {
                paced.timer.as_mut().reset(Instant::now() + paced.gap);
                Poll::Ready(frame.map(|frame| frame.map_err(HttpError::from)))
            }
            Poll::Pending => match paced.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection whose writes, once the upstream has closed or reset it, are dropped
/// rather than failed, so the client goes on to read what the upstream sent before it
/// closed: its answer, which the kernel still holds. An upstream that refuses an upload
/// (401, 413) answers and closes without reading the rest; failing the next write would
/// fail the call before that answer is read. With nothing sent, the read fails in turn
/// and the call is a connection error, as it should be.
struct ReadsPastReset {
    stream: tokio::net::TcpStream,
    reset: bool,
}

impl ReadsPastReset {
    fn written(
        &mut self,
        result: Poll<std::io::Result<usize>>,
        len: usize,
    ) -> Poll<std::io::Result<usize>> {
        match result {
            Poll::Ready(Err(error)) if closed(&error) => {
                self.reset = true;
                Poll::Ready(Ok(len))
            }
            other => other,
        }
    }
}

/// Whether a write failed because the peer closed or reset the connection.
fn closed(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
    )
}

impl tokio::io::AsyncRead for ReadsPastReset {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for ReadsPastReset {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.reset {
            return Poll::Ready(Ok(buf.len()));
        }
        let result = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.written(result, buf.len())
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let len = bufs.iter().map(|buf| buf.len()).sum();
        if self.reset {
            return Poll::Ready(Ok(len));
        }
        let result = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.written(result, len)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.reset {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.reset {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
