//! A small blocking HTTP/1.1 client for the tests and the benchmark: one request per
//! call on a kept-alive connection, the whole answer read (`Content-Length` or chunked).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

/// An answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The first value of `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A connection to one server.
pub struct Client {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Self {
        Client { addr, stream: None }
    }

    /// `GET path`, reconnecting once if the kept-alive connection was closed.
    pub fn get(&mut self, path: &str) -> Result<Answer> {
        self.send(&Request::get(path))
    }

    /// `POST path` with `body` (and its `content-length`).
    pub fn post(&mut self, path: &str, body: &[u8]) -> Result<Answer> {
        self.send(&Request {
            method: "POST",
            path,
            body,
        })
    }

    fn send(&mut self, request: &Request<'_>) -> Result<Answer> {
        match self.try_send(request) {
            Ok(answer) => Ok(answer),
            Err(_) if self.stream.is_none() => self.try_send(request),
            Err(error) => Err(error),
        }
    }

    fn try_send(&mut self, request: &Request<'_>) -> Result<Answer> {
        let reused = self.stream.is_some();
        let result = self.exchange(request);
        if result.is_err() {
            self.stream = None;
            if reused {
                // The server may have closed an idle connection: say so to `send`.
                return self.exchange(request).inspect_err(|_| self.stream = None);
            }
        }
        result
    }

    fn exchange(&mut self, request: &Request<'_>) -> Result<Answer> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(self.addr)
                .with_context(|| format!("connecting to {}", self.addr))?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(30)))?;
            self.stream = Some(BufReader::new(stream));
        }
        let reader = self
            .stream
            .as_mut()
            .ok_or_else(|| anyhow!("no connection"))?;
        let Request { method, path, body } = *request;
        let length = if method == "GET" {
            String::new()
        } else {
            format!("content-length: {}\r\n", body.len())
        };
        write!(
            reader.get_mut(),
            "{method} {path} HTTP/1.1\r\nhost: {}\r\n{length}\r\n",
            self.addr
        )?;
        // A server that answers before reading the body may close while it is sent: the
        // answer is read all the same, and the connection is not used again.
        let sent = reader.get_mut().write_all(body).is_ok();
        let _ = reader.get_mut().flush();
        let answer = read_answer(reader)?;
        if !sent
            || answer
                .header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"))
        {
            self.stream = None;
        }
        Ok(answer)
    }
}

/// One request: its method, path and body.
#[derive(Clone, Copy)]
struct Request<'a> {
    method: &'a str,
    path: &'a str,
    body: &'a [u8],
}

impl<'a> Request<'a> {
    fn get(path: &'a str) -> Self {
        Request {
            method: "GET",
            path,
            body: &[],
        }
    }
}

/// Reads one answer from `reader`: the status line, the headers and the body.
pub fn read_answer(reader: &mut BufReader<TcpStream>) -> Result<Answer> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        bail!("the connection closed before an answer");
    }
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| anyhow!("not an HTTP status line: {line:?}"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let text = line.trim_end();
        if text.is_empty() {
            break;
        }
        if let Some((name, value)) = text.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value): &(String, String)| value.clone())
    };
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16)
                .map_err(|_| anyhow!("bad chunk size {line:?}"))?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            chunk.truncate(size);
            body.extend_from_slice(&chunk);
        }
    } else if let Some(length) = find("content-length") {
        let length: usize = length.parse().map_err(|_| anyhow!("bad content-length"))?;
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    Ok(Answer {
        status,
        headers,
        body,
    })
}
