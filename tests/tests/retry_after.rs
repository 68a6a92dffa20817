//! The shared Retry-After vector (`tests/vectors/retry-after/retry-after.json`) on the
//! core's reading (`tripgate_core::retry_after`), and on the Rust hosts' header reading
//! (`tripgate_host::stay_away`), which every Rust host's guarded call and the tower layer
//! use.

use std::path::PathBuf;

use serde_json::Value;
use tripgate_core::{retry_after, MILLISECOND};
use tripgate_host::stay_away;

fn vector() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors/retry-after/retry-after.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn every_case_reads_as_the_vector_says() {
    let vector = vector();
    let cases = vector["cases"].as_array().unwrap();
    for case in cases {
        let (value, now) = (
            case["value"].as_str().unwrap(),
            case["unix-now"].as_u64().unwrap(),
        );
        let read = match case["header"].as_str().unwrap() {
            "retry-after" => retry_after::http(value, now),
            _ => retry_after::grpc_pushback(value),
        };
        assert_eq!(
            read.map(|ns| ns / MILLISECOND),
            case["ms"].as_u64(),
            "{}: {value:?}",
            case["name"]
        );
    }
    assert!(cases.len() >= 20);
}

#[test]
fn only_429_and_503_carry_a_retry_after_the_breaker_honours() {
    let listed: Vec<u64> = vector()["applies-to-statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    for status in 100..=599u16 {
        assert_eq!(
            retry_after::applies(status),
            listed.contains(&u64::from(status)),
            "{status}"
        );
    }
}

/// The hosts' reading of a response's headers: `Retry-After` on a 429 or a 503 (not on a
/// redirect or a 500), else gRPC's pushback.
#[test]
fn a_host_reads_the_headers_by_the_same_rules() {
    let headers = |retry_after: Option<&'static str>, pushback: Option<&'static str>| {
        move |name: &str| match name {
            "retry-after" => retry_after,
            "grpc-retry-pushback-ms" => pushback,
            _ => None,
        }
    };
    let second = 1_000 * MILLISECOND;
    assert_eq!(
        stay_away::from_headers(503, headers(Some("30"), None)),
        30 * second
    );
    assert_eq!(
        stay_away::from_headers(429, headers(Some("2"), Some("900"))),
        2 * second
    );
    assert_eq!(stay_away::from_headers(302, headers(Some("30"), None)), 0);
    assert_eq!(stay_away::from_headers(500, headers(Some("30"), None)), 0);
    assert_eq!(
        stay_away::from_headers(200, headers(None, Some("250"))),
        250 * MILLISECOND
    );
    assert_eq!(stay_away::from_headers(503, headers(Some("soon"), None)), 0);
}
