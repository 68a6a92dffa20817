//! The metrics exposition for JS: the core's table of families and series
//! ([`tripgate_core::exposition`]), handed over once as JSON, and each breaker's values
//! in series order, as numbers. The npm package's Prometheus text, prom-client and
//! OpenTelemetry exporters (js/src/exposition.js, prometheus.js, otel.js) take every
//! name, label and value from here, so they expose what the Rust hosts expose.

use core::fmt::Write;

use tripgate_core::exposition::{self, Family, BREAKER_LABEL, SERIES};
use wasm_bindgen::prelude::*;

use crate::breaker::Breaker;

/// Writes `items` as a JSON array of quoted strings. Every name, label value and help
/// text of the table is ASCII with no quote or backslash (the core's tests check the
/// help texts; names and label values are kebab- or snake-case), so none needs escaping.
fn strings<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{item}\"");
    }
    out.push(']');
}

/// The families as JSON: `breakerLabel`, `series` (how many values
/// [`Breaker::exposition`] writes) and `families`, in exposition order, each
/// `{ name, stem, type, help, unit, labels, series }` (`unit` null when it has none,
/// `series` the label values of each series, in value order).
#[wasm_bindgen]
pub fn exposition_table() -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\"breakerLabel\":\"{BREAKER_LABEL}\",\"series\":{SERIES},\"families\":["
    );
    for (i, &family) in Family::ALL.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"name\":\"{}\",\"stem\":\"{}\",\"type\":\"{}\",\"help\":\"{}\",\"unit\":",
            family.name(),
            family.stem(),
            family.kind().name(),
            family.help()
        );
        match family.unit() {
            Some(unit) => {
                let _ = write!(out, "\"{unit}\"");
            }
            None => out.push_str("null"),
        }
        out.push_str(",\"labels\":");
        strings(&mut out, family.labels().iter().copied());
        out.push_str(",\"series\":[");
        for (j, series) in family.series().enumerate() {
            if j > 0 {
                out.push(',');
            }
            strings(&mut out, series.labels().map(|(_, value)| value));
        }
        out.push_str("]}");
    }
    out.push_str("]}");
    out
}

#[wasm_bindgen]
impl Breaker {
    /// Fills `out` (the table's `series` numbers) with this breaker's value of every
    /// series at `now_ms`, in the table's order: what a scrape exposes, read in one call
    /// from the core's snapshot and fleet status. Changes nothing.
    pub fn exposition(&self, now_ms: f64, out: &mut [f64]) {
        let (core, now) = self.core_at(now_ms);
        let reading = core.reading(now);
        for (slot, (_, value)) in out.iter_mut().zip(exposition::samples(&reading)) {
            *slot = value.as_f64();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_series_once() {
        let json = exposition_table();
        assert!(json.starts_with("{\"breakerLabel\":\"breaker\","), "{json}");
        assert!(json.contains(
            "{\"name\":\"tripgate_rejections_total\",\"stem\":\"tripgate_rejections\",\
             \"type\":\"counter\""
        ));
        assert!(json.contains("\"unit\":\"seconds\""));
        // One `[...]` of label values per series, plus each family's `labels` and
        // `series` arrays and the families array itself.
        let arrays = json.matches('[').count();
        assert_eq!(arrays, SERIES + 2 * Family::ALL.len() + 1, "{json}");
    }
}
