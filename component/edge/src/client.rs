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
        match self.try_get(path) {
            Ok(answer) => Ok(answer),
            Err(_) if self.stream.is_none() => self.try_get(path),
            Err(error) => Err(error),
        }
    }

    fn try_get(&mut self, path: &str) -> Result<Answer> {
        let reused = self.stream.is_some();
        let result = self.exchange(path);
        if result.is_err() {
            self.stream = None;
            if reused {
                // The server may have closed an idle connection: say so to `get`.
                return self.exchange(path).inspect_err(|_| self.stream = None);
            }
        }
        result
    }

    fn exchange(&mut self, path: &str) -> Result<Answer> {
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
        write!(
            reader.get_mut(),
            "GET {path} HTTP/1.1\r\nhost: {}\r\n\r\n",
            self.addr
        )?;
        reader.get_mut().flush()?;
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
        if find("connection").is_some_and(|v| v.eq_ignore_ascii_case("close")) {
            self.stream = None;
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }
}
