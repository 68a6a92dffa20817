//! `/metrics` while the demo runs: the tripgate run's breaker (named `upstream`) through
//! `tripgate_wasmtime::prometheus`, in the Prometheus text format, on a plain thread
//! that answers one connection at a time (a scraper, or curl, is all it serves). Between
//! runs, and in the timeout-only run, there is no breaker and the page is empty.

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use tripgate_wasmtime::prometheus::{client, Exposition};
use tripgate_wasmtime::Breaker;

use crate::http;

/// The breaker the page shows, swapped in and out by the runs.
pub type Shown = Arc<Mutex<Option<Breaker>>>;

/// The label every series carries.
pub const BREAKER_NAME: &str = "upstream";

/// A running `/metrics` endpoint.
pub struct MetricsServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The breaker it shows.
    pub shown: Shown,
}

impl MetricsServer {
    /// Binds `addr` and serves until the process ends.
    pub fn start(addr: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("binding the /metrics endpoint on {addr}"))?;
        let addr = listener.local_addr()?;
        let shown: Shown = Arc::default();
        let mut registry = client::registry::Registry::default();
        let seen = Arc::clone(&shown);
        registry.register_collector(Box::new(Exposition::new().collector(move || {
            // Clone the breaker out so the slot's lock is not held while it is read.
            let breaker = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
            breaker
                .and_then(|b| b.reading().ok())
                .map(|reading| vec![(BREAKER_NAME.to_string(), reading)])
                .unwrap_or_default()
        })));
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { continue };
                    // A scraper that misbehaves only loses its own answer.
                    let _ = serve(&mut stream, &registry);
                }
            })?;
        Ok(Self { addr, shown })
    }

    /// Shows `breaker` (or none) from now on.
    pub fn show(&self, breaker: Option<Breaker>) {
        *self.shown.lock().unwrap_or_else(|p| p.into_inner()) = breaker;
    }
}

fn serve(stream: &mut std::net::TcpStream, registry: &client::registry::Registry) -> Result<()> {
    let path = http::read_request_path(stream, Duration::from_secs(2))?;
    if path != "/metrics" {
        http::respond(stream, 404, "Not Found", &[], "only /metrics here\n")?;
        return Ok(());
    }
    let mut text = String::new();
    client::encoding::prometheus_text::encode(&mut text, registry)
        .context("encoding the metrics")?;
    // `text/plain` (what `respond` sends) is what Prometheus reads as its text format.
    http::respond(stream, 200, "OK", &[], &text)?;
    Ok(())
}
