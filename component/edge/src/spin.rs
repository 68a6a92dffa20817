//! Spin as this crate stands in for it (Spin is not published to a registry this project
//! builds from): the imports of Spin's `platform` world, and the behaviour of the parts
//! of Spin the guard uses.
//!
//! - **Imports.** Spin's `platform` world (`spin:up`, `wit/world.wit` in the Spin
//!   repository) includes `wasi:cli/imports@0.2.6`, `wasi:http/outgoing-handler@0.2.6`
//!   and `wasi:keyvalue/imports@0.2.0-draft2`, besides Spin's own interfaces. Spin runs
//!   on wasmtime, whose linker satisfies an import at `0.2.x` with a definition at
//!   `0.2.y` (same package and interface, same nonzero minor version) and a prerelease
//!   (`-draft2`) only with the same prerelease: [`provides`] is that rule over
//!   [`PLATFORM`].
//! - **Key-value.** Only the labels the manifest grants (`key_value_stores`) open;
//!   Spin's default store compares values on `swap` and upserts when the handle read
//!   nothing ([`crate::KeyValue::spin`]).
//! - **Outbound HTTP.** Only the origins in `allowed_outbound_hosts` may be called; any
//!   other call fails with `HTTP-request-denied` ([`crate::Options::allowed_outbound`]).

/// The WASI interfaces of Spin's `platform` world, at the versions it declares.
pub const PLATFORM: &[&str] = &[
    // wasi:cli/imports@0.2.6
    "wasi:cli/environment@0.2.6",
    "wasi:cli/exit@0.2.6",
    "wasi:cli/stdin@0.2.6",
    "wasi:cli/stdout@0.2.6",
    "wasi:cli/stderr@0.2.6",
    "wasi:cli/terminal-input@0.2.6",
    "wasi:cli/terminal-output@0.2.6",
    "wasi:cli/terminal-stdin@0.2.6",
    "wasi:cli/terminal-stdout@0.2.6",
    "wasi:cli/terminal-stderr@0.2.6",
    "wasi:clocks/monotonic-clock@0.2.6",
    "wasi:clocks/wall-clock@0.2.6",
    "wasi:filesystem/types@0.2.6",
    "wasi:filesystem/preopens@0.2.6",
    "wasi:io/error@0.2.6",
    "wasi:io/poll@0.2.6",
    "wasi:io/streams@0.2.6",
    "wasi:random/random@0.2.6",
    "wasi:random/insecure@0.2.6",
    "wasi:random/insecure-seed@0.2.6",
    "wasi:sockets/network@0.2.6",
    "wasi:sockets/instance-network@0.2.6",
    "wasi:sockets/udp@0.2.6",
    "wasi:sockets/udp-create-socket@0.2.6",
    "wasi:sockets/tcp@0.2.6",
    "wasi:sockets/tcp-create-socket@0.2.6",
    "wasi:sockets/ip-name-lookup@0.2.6",
    // wasi:http/outgoing-handler@0.2.6 and the types it uses
    "wasi:http/types@0.2.6",
    "wasi:http/outgoing-handler@0.2.6",
    // wasi:keyvalue/imports@0.2.0-draft2
    "wasi:keyvalue/store@0.2.0-draft2",
    "wasi:keyvalue/atomics@0.2.0-draft2",
    "wasi:keyvalue/batch@0.2.0-draft2",
];

/// Whether a component's `import` is satisfied by an interface of [`PLATFORM`].
pub fn provides(import: &str) -> bool {
    PLATFORM.iter().any(|provided| compatible(import, provided))
}

fn compatible(import: &str, provided: &str) -> bool {
    let (Some((name, version)), Some((provided_name, provided_version))) =
        (import.split_once('@'), provided.split_once('@'))
    else {
        return import == provided;
    };
    if name != provided_name {
        return false;
    }
    if version.contains('-') || provided_version.contains('-') {
        return version == provided_version;
    }
    // 0.2.x and 0.2.y match; 1.x.y and 1.z.w match.
    let track = |v: &str| -> Option<(u64, u64)> {
        let mut parts = v.split('.').map(str::parse::<u64>);
        let major = parts.next()?.ok()?;
        let minor = parts.next()?.ok()?;
        Some(if major == 0 { (0, minor) } else { (major, 0) })
    };
    matches!((track(version), track(provided_version)), (Some(a), Some(b)) if a == b && a != (0, 0))
}

#[cfg(test)]
mod tests {
    use super::provides;

    #[test]
    fn versions_match_as_wasmtimes_linker_matches_them() {
        assert!(provides("wasi:http/types@0.2.12"));
        assert!(provides("wasi:http/types@0.2.0"));
        assert!(!provides("wasi:http/types@0.3.0"));
        assert!(provides("wasi:keyvalue/atomics@0.2.0-draft2"));
        assert!(!provides("wasi:keyvalue/atomics@0.2.0-draft"));
        assert!(!provides("tripgate:breaker/circuit-breaker@0.3.0"));
    }
}
