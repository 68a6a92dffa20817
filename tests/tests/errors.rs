//! The error table's vector (`tests/vectors/errors/errors.json`) on the Rust hosts'
//! classifier, `error_outcome` (the native breaker, its tower layer and the wasmtime host
//! all classify errors by it): each case's error is built as a Rust error (an `io::Error`
//! for an errno name or an `io::ErrorKind`, a chain through `source()`) and classified.
//!
//! Rust errors carry no error codes of a client library, no statuses and no gRPC codes
//! (a Rust host reads those off response types, through `Classify`), and a kind only when it
//! is an `io::ErrorKind`: those cases are skipped, and counted.

use std::error::Error;
use std::fmt;
use std::io::{self, ErrorKind};

use serde_json::Value;
use tripgate::{error_outcome, Outcome};

/// Errno names Node reports that no platform's errno defines.
const NOT_ERRNO: [&str; 2] = ["ENOTFOUND", "EAI_AGAIN"];

/// The number of errno `name`: the host's translation, which must know every errno name
/// of the table; two the table does not name, for the cases that say nothing.
fn errno(name: &str) -> Option<i32> {
    match name {
        "ENOENT" => Some(libc::ENOENT),
        "EACCES" => Some(libc::EACCES),
        name => tripgate_host::errno_code(name),
    }
}

/// Every stable `io::ErrorKind` a case may name.
const KINDS: [ErrorKind; 24] = [
    ErrorKind::NotFound,
    ErrorKind::PermissionDenied,
    ErrorKind::ConnectionRefused,
    ErrorKind::ConnectionReset,
    ErrorKind::HostUnreachable,
    ErrorKind::NetworkUnreachable,
    ErrorKind::ConnectionAborted,
    ErrorKind::NotConnected,
    ErrorKind::AddrInUse,
    ErrorKind::AddrNotAvailable,
    ErrorKind::NetworkDown,
    ErrorKind::BrokenPipe,
    ErrorKind::AlreadyExists,
    ErrorKind::WouldBlock,
    ErrorKind::InvalidInput,
    ErrorKind::InvalidData,
    ErrorKind::TimedOut,
    ErrorKind::WriteZero,
    ErrorKind::Interrupted,
    ErrorKind::Unsupported,
    ErrorKind::UnexpectedEof,
    ErrorKind::OutOfMemory,
    ErrorKind::ResourceBusy,
    ErrorKind::Other,
];

/// An error that says nothing itself, around its cause.
#[derive(Debug)]
struct Wrapper(Option<Box<dyn Error + Send + Sync>>);

impl fmt::Display for Wrapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("wrapped")
    }
}

impl Error for Wrapper {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// The case's error as a Rust error, or why Rust errors cannot carry it.
fn build(error: &Value) -> Result<Box<dyn Error + Send + Sync>, String> {
    let fields = error.as_object().ok_or("an error is an object")?;
    let cause = match fields.get("cause") {
        Some(cause) => Some(build(cause)?),
        None => None,
    };
    let own: Vec<&str> = fields
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "cause")
        .collect();
    match own.as_slice() {
        [] => Ok(Box::new(Wrapper(cause))),
        ["errno"] if cause.is_none() => {
            let name = fields["errno"].as_str().ok_or("errno is a name")?;
            match errno(name) {
                Some(code) => Ok(Box::new(io::Error::from_raw_os_error(code))),
                None if NOT_ERRNO.contains(&name) => Err(format!("{name} is no errno")),
                None => panic!("errno {name}: the host's translation lacks it"),
            }
        }
        ["kind"] if cause.is_none() => {
            let names = fields["kind"].as_array().ok_or("kind is a list")?;
            let [name] = names.as_slice() else {
                return Err("a Rust error is of one io::ErrorKind".into());
            };
            let name = name.as_str().ok_or("a kind is a name")?;
            KINDS
                .iter()
                .find(|k| format!("{k:?}") == name)
                .map(|&k| Box::new(io::Error::from(k)) as Box<dyn Error + Send + Sync>)
                .ok_or_else(|| format!("{name} is no io::ErrorKind"))
        }
        keys => Err(format!("a Rust error carries no {keys:?} of its own")),
    }
}

fn outcome_name(outcome: Outcome) -> String {
    match outcome {
        Outcome::Status(s) => format!("status:{}", s.get()),
        Outcome::Grpc(g) => format!("grpc:{}", g.get()),
        other => other.kind().name().to_string(),
    }
}

#[test]
fn the_error_table_vector_passes_on_the_rust_hosts() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/errors/errors.json");
    let vector: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        vector["max-causes"].as_u64(),
        Some(tripgate_core::MAX_CAUSES as u64)
    );
    let (mut ran, mut skipped, mut failed) = (0, Vec::new(), Vec::new());
    for case in vector["cases"].as_array().unwrap() {
        let why = case["why"].as_str().unwrap();
        match build(&case["error"]) {
            Err(reason) => skipped.push(format!("{why}: {reason}")),
            Ok(error) => {
                ran += 1;
                let got = outcome_name(error_outcome(error.as_ref(), |_| false));
                if got != case["outcome"].as_str().unwrap() {
                    failed.push(format!("{why}: got {got}, expected {}", case["outcome"]));
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {ran} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    // What Rust errors can carry: every errno and io::ErrorKind case, and chains of them.
    assert!(ran >= 30, "ran {ran}; skipped:\n{}", skipped.join("\n"));
    eprintln!("ran {ran}, skipped {}: {skipped:#?}", skipped.len());
}
