// The core's tables — state, reason, reject-reason, class, outcome-kind and config-field
// names with their codes — and the numbers of the wasm interface, read once from the wasm
// module when an entry point installs it (js/crate/src/tables.rs). None is written here:
// a case added to the core reaches JS through them.

/** @type {any} the wasm-bindgen module, installed by the entry point (node.js or web.js). */
export let wasm = null;
/** @type {any} the parsed tables. */
export let tables = null;

// Filled in place at install, so that they can be exported before the web entry's
// `initSync`; frozen once filled.
export const states = [];
export const transitionReasons = [];
export const rejectReasons = [];
/** The config fields: `{ name, option, kind }` (core name, JS option, how it is read). */
export const configFields = [];
/** Rejection codes `acquire()` returns: `OPEN` -1, `PROBING` -2, ... (`-(1 + code)`). */
export const Rejected = {};

const hooks = [];

/** Runs `hook(tables)` once the tables are known (modules derive their constants). */
export function onInstall(hook) {
  if (tables !== null) hook(tables);
  else hooks.push(hook);
}

/** Called by the entry points once the wasm module is ready. */
export function install(bindings) {
  wasm = bindings;
  if (tables !== null) return;
  const t = JSON.parse(bindings.tables());
  t.readingLimitMs = bindings.reading_limit_ms();
  tables = t;
  fill(states, t.states);
  fill(transitionReasons, t.reasons);
  fill(rejectReasons, t.rejectReasons);
  fill(configFields, t.fields.map((field) => Object.freeze(field)));
  t.rejectReasons.forEach((name, code) => {
    Rejected[name.toUpperCase().replaceAll('-', '_')] = -1 - code;
  });
  Object.freeze(Rejected);
  for (const hook of hooks.splice(0)) hook(t);
}

function fill(target, values) {
  target.push(...values);
  Object.freeze(target);
}
