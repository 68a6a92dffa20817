//! Turning fuzz bytes into the breaker's inputs: outcomes, clock readings, durations,
//! configurations and snapshot bytes, biased towards the values where rules change.

use arbitrary::{Result, Unstructured};
use tripgate_core::{Config, Outcome, MILLISECOND, SECOND};

/// Half the circle of instants: a reading this far ahead of the latest is behind it.
pub const HALF_CIRCLE: u64 = 1 << 63;

/// Values where integer rules and conversions change.
const EDGES: [u64; 12] = [
    0,
    1,
    2,
    63,
    64,
    65,
    255,
    256,
    u16::MAX as u64,
    u32::MAX as u64,
    (u32::MAX as u64) + 1,
    u64::MAX,
];

/// A number of any size, often one of the [`EDGES`].
pub fn number(u: &mut Unstructured<'_>) -> Result<u64> {
    if u.ratio(1, 3)? {
        Ok(*u.choose(&EDGES)?)
    } else {
        u.arbitrary()
    }
}

/// A duration: nanoseconds, milliseconds, seconds or hours, or any number.
pub fn duration(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match u.int_in_range(0..=9)? {
        0..=1 => u.int_in_range(0..=2_000)?,
        2..=4 => u.int_in_range(0..=2_000)? * MILLISECOND,
        5..=7 => u.int_in_range(0..=120)? * SECOND,
        8 => u.int_in_range(1..=6)? * 3600 * SECOND,
        _ => number(u)?,
    })
}

/// An outcome the core accepts (statuses 100–599, gRPC codes 0–16).
pub fn outcome(u: &mut Unstructured<'_>) -> Result<Outcome> {
    Ok(match u.int_in_range(0..=9)? {
        0 => Outcome::Success,
        1 | 2 => Outcome::status(u.int_in_range(100..=599)?).unwrap_or(Outcome::Failure),
        3 => Outcome::status(*u.choose(&[500, 502, 503, 504, 429, 404, 408])?)
            .unwrap_or(Outcome::Failure),
        4 => Outcome::grpc(u.int_in_range(0..=16)?).unwrap_or(Outcome::Failure),
        5 => Outcome::Timeout,
        6 => Outcome::ConnectionError,
        7 => Outcome::Failure,
        8 => Outcome::Cancelled,
        _ => Outcome::Ignored,
    })
}

/// A clock reading given the latest instant the breaker has seen: usually a little
/// later, sometimes the same, earlier (a clock that stepped back), absurdly far (a reading
/// in the wrong unit, a saturated conversion), or any value at all.
pub fn reading(u: &mut Unstructured<'_>, latest: u64) -> Result<u64> {
    Ok(match u.int_in_range(0..=15)? {
        0..=8 => latest.wrapping_add(duration(u)?),
        9 | 10 => latest,
        11 => latest.wrapping_sub(duration(u)?),
        12 => latest
            .wrapping_add(HALF_CIRCLE)
            .wrapping_add(u.arbitrary()?),
        13 => u64::MAX,
        _ => u.arbitrary()?,
    })
}

/// The instant a breaker whose latest reading is `latest` uses for `reading` (the rule of
/// SPEC.md and `time.rs`: a reading is observed only when it is ahead of the latest by less
/// than half the circle).
pub fn observed(latest: u64, reading: u64) -> u64 {
    if reading.wrapping_sub(latest) < HALF_CIRCLE {
        reading
    } else {
        latest
    }
}

/// A configuration with every field arbitrary but mostly valid, so that both the rules
/// and the breakers they admit get explored.
pub fn config(u: &mut Unstructured<'_>) -> Result<Config> {
    let failure_threshold = count(u, 10)?;
    let min_calls = count(u, 10)?;
    let buckets = if wild(u)? {
        u.arbitrary()?
    } else {
        u.int_in_range(1..=64)?
    };
    let window = positive(u)?.max(if wild(u)? { 0 } else { u64::from(buckets) });
    let cooldown = positive(u)?;
    let mut c = Config {
        failure_threshold,
        min_calls,
        failure_rate: percent(u)?,
        slow_call_rate: percent(u)?,
        slow_call_duration: if u.ratio(1, 3)? {
            Some(positive(u)?)
        } else {
            None
        },
        window,
        buckets,
        window_calls: if u.ratio(1, 4)? {
            Some(if wild(u)? {
                u.arbitrary()?
            } else {
                u.int_in_range(min_calls.min(1024) as u16..=1024)?
            })
        } else {
            None
        },
        cooldown,
        backoff_factor: backoff_factor(u)?,
        max_cooldown: if u.ratio(1, 3)? {
            Some(if wild(u)? {
                number(u)?
            } else {
                cooldown.saturating_add(duration(u)?)
            })
        } else {
            None
        },
        jitter_percent: if u.ratio(1, 4)? {
            if wild(u)? {
                u.arbitrary()?
            } else {
                u.int_in_range(0..=100)?
            }
        } else {
            0
        },
        jitter_seed: u.arbitrary()?,
        max_in_flight: if u.ratio(1, 4)? {
            Some(count(u, 8)?)
        } else {
            None
        },
        half_open_max_probes: if wild(u)? {
            u.arbitrary()?
        } else {
            u.int_in_range(1..=64)?
        },
        half_open_required_successes: count(u, 6)?,
        half_open_success_rate: percent(u)?,
        probe_timeout: positive(u)?,
        ..Config::default()
    };
    if u.ratio(1, 6)? {
        fault_sets(u, &mut c)?;
    }
    Ok(c)
}

/// Whether a field breaks its rule this time: often enough to test validation, rarely
/// enough that most configs are accepted.
fn wild(u: &mut Unstructured<'_>) -> Result<bool> {
    u.ratio(1, 24)
}

/// A count from 1 to `hi`, or now and then any number.
fn count(u: &mut Unstructured<'_>, hi: u32) -> Result<u32> {
    if wild(u)? {
        Ok(number(u)? as u32)
    } else {
        u.int_in_range(1..=hi)
    }
}

/// No percentage, or one from 1 to 100, or now and then any byte.
fn percent(u: &mut Unstructured<'_>) -> Result<Option<u8>> {
    if !u.arbitrary()? {
        return Ok(None);
    }
    Ok(Some(if wild(u)? {
        u.arbitrary()?
    } else {
        u.int_in_range(1..=100)?
    }))
}

/// A duration of at least 1 ns, or now and then any number.
fn positive(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(if wild(u)? {
        number(u)?
    } else {
        duration(u)?.max(1)
    })
}

/// Mostly no backoff, sometimes a valid factor, sometimes any float or an invalid one.
fn backoff_factor(u: &mut Unstructured<'_>) -> Result<f64> {
    Ok(match u.int_in_range(0..=7)? {
        0..=3 => 1.0,
        4 => *u.choose(&[1.5, 2.0, 1000.0])?,
        5 => 1.0 + f64::from(u.int_in_range(0..=999_000u32)?) / 1000.0,
        6 => f64::from_bits(u.arbitrary()?),
        _ => *u.choose(&[0.0, 0.999, 1000.001, f64::NAN, f64::INFINITY, -1.0])?,
    })
}

/// Other fault sets: codes outside 100–599 are ignored by `with`.
fn fault_sets(u: &mut Unstructured<'_>, c: &mut Config) -> Result<()> {
    for _ in 0..u.int_in_range(0..=6)? {
        let code: u16 = u.int_in_range(0..=700)?;
        c.fault_statuses = if u.arbitrary()? {
            c.fault_statuses.with(code)
        } else {
            c.fault_statuses.without(code)
        };
        let grpc: u8 = u.int_in_range(0..=20)?;
        c.fault_grpc_codes = if u.arbitrary()? {
            c.fault_grpc_codes.with(grpc)
        } else {
            c.fault_grpc_codes.without(grpc)
        };
    }
    Ok(())
}

/// FNV-1a, 32 bits: the checksum that ends an exported state (its format is documented in
/// the core's `snapshot.rs`), so crafted bytes can get past the checksum to the fields.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// `body` with a valid checksum appended.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let checksum = fnv1a(&body);
    body.extend_from_slice(&checksum.to_le_bytes());
    body
}

/// Bytes to import, from one of: any bytes; a valid export damaged in a few places and
/// resealed (so the damage reaches the field checks) or not; a valid export cut short or
/// extended and resealed; any body behind the export's own header, resealed.
pub fn snapshot(u: &mut Unstructured<'_>, export: &[u8]) -> Result<Vec<u8>> {
    let mut bytes = match u.int_in_range(0..=5)? {
        0 => {
            let len = u.int_in_range(0..=1100)?;
            return Ok(u.bytes(len.min(u.len()))?.to_vec());
        }
        1 => return Ok(export.to_vec()),
        2 | 3 => export[..export.len().saturating_sub(4)].to_vec(),
        4 => {
            let mut body = export[..export.len().saturating_sub(4)].to_vec();
            let cut = u.int_in_range(0..=body.len())?;
            body.truncate(cut);
            let extra = u.int_in_range(0..=16)?;
            body.extend_from_slice(u.bytes(extra.min(u.len()))?);
            body
        }
        _ => {
            // Magic, version and window shape (15 bytes), then anything.
            let mut body = export[..export.len().min(15)].to_vec();
            let len = u.int_in_range(0..=1100)?;
            body.extend_from_slice(u.bytes(len.min(u.len()))?);
            body
        }
    };
    // Damage: overwrite a few bytes, or a whole little-endian field with an edge value.
    for _ in 0..u.int_in_range(0..=4)? {
        if bytes.is_empty() {
            break;
        }
        let at = u.int_in_range(0..=bytes.len() - 1)?;
        if u.arbitrary()? {
            bytes[at] = u.arbitrary()?;
        } else {
            let value = number(u)?.to_le_bytes();
            let width = *u.choose(&[1usize, 2, 4, 8])?;
            for (i, b) in value.iter().take(width).enumerate() {
                if let Some(slot) = bytes.get_mut(at + i) {
                    *slot = *b;
                }
            }
        }
    }
    Ok(if u.ratio(7, 8)? { seal(bytes) } else { bytes })
}
