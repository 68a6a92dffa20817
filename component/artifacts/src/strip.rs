//! The shipped component's one change from what the linker writes.

/// The component without its `component-name` custom section: the names of its types and
/// functions for debuggers (about 4.5 KB), which the linker writes and no host needs, as
/// `strip = true` leaves out the core module's own. `wasmparser` walks the top-level
/// sections (a nested module or component is one section, stepped over whole) and
/// `wasm-encoder` writes every other one back as it was.
pub(crate) fn without_debug_names(component: &[u8]) -> Result<Vec<u8>, String> {
    use wasmparser::{Chunk, Parser, Payload};
    let malformed = |e: wasmparser::BinaryReaderError| e.to_string();
    let mut out = wasm_encoder::Component::new();
    let mut parser = Parser::new(0);
    let mut rest = component;
    loop {
        let (consumed, payload) = match parser.parse(rest, true).map_err(malformed)? {
            Chunk::Parsed { consumed, payload } => (consumed, payload),
            Chunk::NeedMoreData(_) => return Err("the component ends early".into()),
        };
        rest = rest
            .get(consumed..)
            .ok_or("the parser overran the component")?;
        let nested = match &payload {
            Payload::End(_) => break,
            Payload::CustomSection(custom) if custom.name() == "component-name" => continue,
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => Some(unchecked_range.end.saturating_sub(unchecked_range.start)),
            _ => None,
        };
        if let Some((id, range)) = payload.as_section() {
            let data = component
                .get(range.start as usize..range.end as usize)
                .ok_or("a section runs past the component's end")?;
            out.section(&wasm_encoder::RawSection { id, data });
        }
        if let Some(len) = nested {
            // Copied whole above: step over its bytes instead of feeding them to its own
            // parser; the parent parser resumes after it.
            let len = usize::try_from(len).map_err(|e| e.to_string())?;
            rest = rest
                .get(len..)
                .ok_or("a nested section runs past the end")?;
        }
    }
    Ok(out.finish())
}
