//! Builds the guard and composes it with the shipped tripgate component.
//!
//! 1. The shipped component, `component/wasmtime/tripgate.wasm` (what `tripgate-wasmtime`
//!    embeds and `tripgate-artifacts` builds, stripped), or `TRIPGATE_COMPONENT` when set.
//! 2. The guard, `component/http-guard`, built by `tripgate-artifacts` for `wasm32-wasip2`
//!    in the `wasm` profile, and again with its `bare` feature (no breaker, no store: the
//!    baseline) and with its `draft` feature (`wasi:keyvalue@0.2.0-draft`), each in a
//!    target directory of its own, so no build undoes another's. The script reruns when a
//!    file one of those builds read changes, or the tripgate component's bytes do.
//! 3. wac-graph plugs the tripgate component's `tripgate:breaker/circuit-breaker` export
//!    into the guard's import (what `wac plug` does) and encodes one component, validated.
//!
//! 4. Each of the three is measured: the linear memories and tables one instance of it
//!    takes from wasmtime's pooling allocator (`footprint`).
//!
//! `OUT_DIR` then holds `guard.wasm` and `guard-draft.wasm` (composed) and `bare.wasm`,
//! and `footprint.rs` with their measures; the library embeds them.

use std::env;
use std::path::{Path, PathBuf};

use tripgate_artifacts::Guest;

fn main() {
    if let Err(message) = run() {
        eprintln!("tripgate-edge: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("no manifest dir")?);
    let workspace = manifest.join("../..");
    // `OUT_DIR` is `<target>/<profile>/build/<crate>-<hash>/out`.
    let target_dir = out
        .ancestors()
        .nth(4)
        .ok_or("cannot find the target directory from OUT_DIR")?
        .to_path_buf();
    println!("cargo:rerun-if-env-changed=TRIPGATE_COMPONENT");

    let Guests {
        tripgate,
        guard,
        bare,
        draft,
    } = guests(&workspace, &target_dir)?;
    let read =
        |path: &Path| std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()));
    let composed = |guard: &Path| {
        compose(read(&tripgate)?, read(guard)?).map_err(|e| {
            format!(
                "composing {} into {}: {e:#}",
                tripgate.display(),
                guard.display()
            )
        })
    };
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(out.join(name), bytes)
            .map_err(|e| format!("writing {}: {e}", out.join(name).display()))
    };
    let mut measured = String::new();
    for (name, bytes) in [
        ("guard", composed(&guard)?),
        ("guard-draft", composed(&draft)?),
        ("bare", read(&bare)?),
    ] {
        let counts = footprint(&bytes).map_err(|e| format!("measuring {name}: {e}"))?;
        measured.push_str(&format!(
            "/// One instance of `{name}.wasm`.\npub const {}_FOOTPRINT: Footprint = Footprint {{ memories: {}, tables: {} }};\n",
            name.replace('-', "_").to_uppercase(),
            counts.memories,
            counts.tables
        ));
        write(&format!("{name}.wasm"), &bytes)?;
    }
    write("footprint.rs", measured.as_bytes())
}

/// The built components: the shipped tripgate component, and the guard in its three
/// builds.
struct Guests {
    tripgate: PathBuf,
    guard: PathBuf,
    bare: PathBuf,
    draft: PathBuf,
}

/// Builds what `Guests` holds (steps 1 and 2), each build in a target directory of its
/// own, and has cargo run this script again when a file one of them read changes, or the
/// tripgate component's bytes do (an edit elsewhere builds nothing again).
fn guests(workspace: &Path, target_dir: &Path) -> Result<Guests, String> {
    // The tripgate component as shipped (`tripgate-wasmtime` embeds these bytes, and
    // `tripgate-artifacts check` keeps them what the sources build), or another build of it.
    let tripgate = match env::var_os("TRIPGATE_COMPONENT") {
        Some(path) => PathBuf::from(path),
        None => workspace.join("component/wasmtime/tripgate.wasm"),
    };
    println!("cargo:rerun-if-changed={}", tripgate.display());
    let build = |features: &'static [&'static str], dir: PathBuf| -> Result<PathBuf, String> {
        let guest = Guest {
            package: "tripgate-http-guard",
            dir: "component/http-guard",
            profile: "wasm",
            features,
        };
        let built = guest.build(workspace, &dir)?;
        built.rerun_if_changed();
        Ok(built.wasm)
    };
    let own = |feature: &str| target_dir.join(format!("tripgate-edge-{feature}"));
    Ok(Guests {
        tripgate,
        guard: build(&[], target_dir.to_path_buf())?,
        bare: build(&["bare"], own("bare"))?,
        draft: build(&["draft"], own("draft"))?,
    })
}

/// The slots one instance of a component takes from a pooling allocator.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    memories: u32,
    tables: u32,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.memories += other.memories;
        self.tables += other.tables;
    }
}

/// A module or component being read; `None` in an index space: one that came by import or
/// alias, which cannot be measured here.
enum Frame {
    Module(Counts),
    Component {
        modules: Vec<Option<Counts>>,
        components: Vec<Option<Counts>>,
        total: Counts,
    },
}

/// Counts the memories and tables instantiating the component `bytes` makes, as
/// wasmtime's pooling allocator counts them (`validate_component`): each module
/// instantiation's defined memories and tables, through nested components. (The
/// allocator also counts core instances, wasmtime's own adapter modules among them; those
/// are a count, not slots, and the server does not bound them separately.)
fn footprint(bytes: &[u8]) -> Result<Counts, Box<dyn std::error::Error>> {
    use wasmparser::{Encoding, Parser, Payload};
    let mut stack: Vec<Frame> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::Version { encoding, .. } => stack.push(match encoding {
                Encoding::Module => Frame::Module(Counts::default()),
                Encoding::Component => Frame::Component {
                    modules: Vec::new(),
                    components: Vec::new(),
                    total: Counts::default(),
                },
            }),
            Payload::End(_) => {
                let done = stack.pop().ok_or("an end without a start")?;
                match (done, stack.last_mut()) {
                    (Frame::Component { total, .. }, None) => return Ok(total),
                    (Frame::Module(counts), Some(Frame::Component { modules, .. })) => {
                        modules.push(Some(counts))
                    }
                    (Frame::Component { total, .. }, Some(Frame::Component { components, .. })) => {
                        components.push(Some(total))
                    }
                    _ => return Err("not a component".into()),
                }
            }
            payload => measure(stack.last_mut().ok_or("no component")?, payload)?,
        }
    }
    Err("the component does not end".into())
}

/// One section's part of `frame`'s measure.
fn measure(
    frame: &mut Frame,
    payload: wasmparser::Payload<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    use wasmparser::{ComponentInstance, Instance, Payload};
    match frame {
        Frame::Module(counts) => match payload {
            Payload::MemorySection(memories) => counts.memories += memories.count(),
            Payload::TableSection(tables) => counts.tables += tables.count(),
            _ => {}
        },
        Frame::Component {
            modules,
            components,
            total,
        } => match payload {
            Payload::InstanceSection(instances) => {
                for instance in instances {
                    if let Instance::Instantiate { module_index, .. } = instance? {
                        total.add(instantiated(modules, module_index)?);
                    }
                }
            }
            Payload::ComponentInstanceSection(instances) => {
                for instance in instances {
                    if let ComponentInstance::Instantiate {
                        component_index, ..
                    } = instance?
                    {
                        total.add(instantiated(components, component_index)?);
                    }
                }
            }
            Payload::ComponentAliasSection(aliases) => {
                for alias in aliases {
                    unmeasured(modules, components, aliased(&alias?));
                }
            }
            Payload::ComponentImportSection(imports) => {
                for import in imports {
                    unmeasured(modules, components, imported(&import?.ty));
                }
            }
            _ => {}
        },
    }
    Ok(())
}

/// What the entry `index` of an index space takes when instantiated.
fn instantiated(space: &[Option<Counts>], index: u32) -> Result<Counts, String> {
    usize::try_from(index)
        .ok()
        .and_then(|index| space.get(index).copied().flatten())
        .ok_or_else(|| {
            format!(
                "it instantiates entry {index}, imported or aliased, which cannot be measured here"
            )
        })
}

/// Which index space an alias or an import adds an entry to, if a measured one.
enum Space {
    Modules,
    Components,
}

/// Adds an entry that cannot be measured to `space`.
fn unmeasured(
    modules: &mut Vec<Option<Counts>>,
    components: &mut Vec<Option<Counts>>,
    space: Option<Space>,
) {
    match space {
        Some(Space::Modules) => modules.push(None),
        Some(Space::Components) => components.push(None),
        None => {}
    }
}

fn aliased(alias: &wasmparser::ComponentAlias<'_>) -> Option<Space> {
    use wasmparser::{
        ComponentAlias, ComponentExternalKind as Kind, ComponentOuterAliasKind as Outer,
    };
    match alias {
        ComponentAlias::Outer {
            kind: Outer::CoreModule,
            ..
        }
        | ComponentAlias::InstanceExport {
            kind: Kind::Module, ..
        } => Some(Space::Modules),
        ComponentAlias::Outer {
            kind: Outer::Component,
            ..
        }
        | ComponentAlias::InstanceExport {
            kind: Kind::Component,
            ..
        } => Some(Space::Components),
        _ => None,
    }
}

fn imported(ty: &wasmparser::ComponentTypeRef) -> Option<Space> {
    match ty {
        wasmparser::ComponentTypeRef::Module(_) => Some(Space::Modules),
        wasmparser::ComponentTypeRef::Component(_) => Some(Space::Components),
        _ => None,
    }
}

/// `wac plug`: the tripgate component's exports into the guard's matching imports.
fn compose(tripgate: Vec<u8>, guard: Vec<u8>) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    use wac_graph::types::Package;
    use wac_graph::{plug, CompositionGraph, EncodeOptions};

    let mut graph = CompositionGraph::new();
    let tripgate = Package::from_bytes("tripgate:breaker", None, tripgate, graph.types_mut())?;
    let tripgate = graph.register_package(tripgate)?;
    let guard = Package::from_bytes("tripgate:http-guard", None, guard, graph.types_mut())?;
    let guard = graph.register_package(guard)?;
    plug(&mut graph, vec![tripgate], guard)?;
    Ok(graph.encode(EncodeOptions::default())?)
}
