//! The built component itself (size, imports, that it is a component) and what breakers
//! and permits cost in its memory.

mod common;

use tripgate_wasmtime::{Config, Outcome, COMPONENT};
use wasmtime::wasmparser::{Parser, Payload};

/// The shipped component's budget.
const MAX_COMPONENT_BYTES: usize = 96 * 1024;

#[test]
fn the_component_is_small_imports_nothing_and_is_a_component() {
    let bytes = COMPONENT;
    // A component's header (a core module would be 01 00 00 00 after the magic).
    assert_eq!(bytes[..8], [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]);
    assert!(bytes.len() <= MAX_COMPONENT_BYTES, "{} bytes", bytes.len());

    let (mut depth, mut component_imports, mut core_modules, mut exports) =
        (0usize, 0usize, 0usize, Vec::new());
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.unwrap() {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth -= 1,
            Payload::ComponentImportSection(section) if depth == 1 => {
                component_imports += section.count() as usize
            }
            Payload::ComponentExportSection(section) if depth == 1 => {
                for export in section {
                    exports.push(export.unwrap().name.name.to_string());
                }
            }
            Payload::ModuleSection { .. } => core_modules += 1,
            _ => {}
        }
    }
    println!(
        "embedded component: {} bytes, {component_imports} imports, exports {exports:?}, \
         {core_modules} core modules",
        bytes.len()
    );
    assert_eq!(component_imports, 0, "the world imports nothing");
    assert_eq!(exports, ["tripgate:breaker/circuit-breaker@0.3.0"]);
}

#[test]
fn bytes_per_breaker_and_per_permit_in_one_instance() {
    const BREAKERS: usize = 1_000;
    let (runtime, _clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let fresh = instance.memory_bytes();
    println!("a fresh instance has {fresh} bytes of linear memory");
    assert!(
        fresh <= 64 * 1024,
        "the 32 KiB shadow stack and the data fit in one page (component/build.rs)"
    );
    // Warm the allocator up with one breaker, so the count is of breakers, not of its
    // first heap.
    let first = instance.breaker(&Config::default()).unwrap();
    let permit = first.acquire().unwrap().decision.unwrap();
    permit.record(Outcome::Success).unwrap();
    assert_eq!(
        instance.memory_bytes(),
        fresh,
        "a breaker and its permit fit in the first page's heap (guest_runtime::heap)"
    );
    let before = instance.memory_bytes();
    let breakers: Vec<_> = (0..BREAKERS)
        .map(|_| instance.breaker(&Config::default()).unwrap())
        .collect();
    let grown = instance.memory_bytes() - before;
    // A core breaker is a fixed-size struct (64 window buckets, 64 probe slots).
    let core_size = std::mem::size_of::<tripgate_core::Breaker>();
    let per_breaker = grown / BREAKERS;

    let before = instance.memory_bytes();
    let permits: Vec<_> = breakers
        .iter()
        .flat_map(|b| (0..10).map(move |_| b.acquire().unwrap().decision.unwrap()))
        .collect();
    let per_permit = (instance.memory_bytes() - before) / permits.len();
    println!(
        "{BREAKERS} breakers grew linear memory by {grown} bytes: {per_breaker} bytes per breaker; \
         {} permits out: about {per_permit} bytes per permit (64 KiB page granularity); \
         instance memory now {} bytes; a core Breaker is {} bytes",
        permits.len(),
        instance.memory_bytes(),
        core_size
    );
    assert!(
        per_breaker >= core_size / 2 && per_breaker <= core_size + 512,
        "{per_breaker} vs {core_size}"
    );

    // Every one still answers, and freeing them lets memory be reused.
    for permit in permits {
        permit.record(Outcome::Success).unwrap();
    }
    drop(breakers);
    let reused = instance.memory_bytes();
    let again: Vec<_> = (0..BREAKERS)
        .map(|_| instance.breaker(&Config::default()).unwrap())
        .collect();
    assert_eq!(
        instance.memory_bytes(),
        reused,
        "freed breakers' memory is reused"
    );
    drop((again, first));
}
