//! The core's fleet member protocol runs every protocol vector (`tests/vectors/protocol/`).

#[test]
fn every_protocol_vector_passes_on_the_core() {
    let ran = tripgate_vectors::protocol::run_protocol_vectors().unwrap();
    println!("{ran} protocol vectors");
}
