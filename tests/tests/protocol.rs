//! The core's fleet member protocol runs every protocol vector (`tests/vectors/protocol/`).

#[test]
fn every_protocol_vector_passes_on_the_core() {
    let ran = tripgate_vectors::protocol::run_protocol_vectors().unwrap();
    println!("{ran} protocol vectors");
}

/// A member whose breaker is reconfigured votes within the new cooldown and announces an
/// opening of the new length: protocol vector 02 with the cooldown shortened from 5 s to
/// 2 s before the trip.
#[test]
fn a_retuned_member_votes_and_publishes_by_the_new_cooldown() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("vectors/protocol/02-a-trip-votes-and-opens-the-fleet-at-quorum.json");
    let parsed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut retimed = parsed.to_string();
    for (from, to) in [
        (r#""window-ms":5000"#, r#""window-ms":2000"#),
        (r#""5000","64""#, r#""2000","64""#),
        ("open 4998", "open 1998"),
        (r#""expire-ms":4998"#, r#""expire-ms":1998"#),
        (r#""4998","PUBLISH""#, r#""1998","PUBLISH""#),
        (
            r#""cooldown-remaining-ms":4990"#,
            r#""cooldown-remaining-ms":1990"#,
        ),
    ] {
        assert!(retimed.contains(from), "vector 02 no longer has {from}");
        retimed = retimed.replace(from, to);
    }
    let mut vector: serde_json::Value = serde_json::from_str(&retimed).unwrap();
    let reconfigure = serde_json::json!({
        "at": 50, "op": "reconfigure", "config": {"fleet-quorum": 1, "cooldown-ms": 2000}
    });
    vector["steps"]
        .as_array_mut()
        .unwrap()
        .insert(2, reconfigure);
    tripgate_vectors::protocol::run_protocol_vector(&vector).unwrap();
}
