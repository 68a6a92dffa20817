// Counterexamples the property tests (fuzz.test.js) found, shrunk, kept as fixed cases:
// every normal test run replays them before its random ones (fast-check `examples`).
// Hostile values are markers (hostile.js), built inside the property.
import { Hostile } from './hostile.js';

/** Constructor options. */
export const optionExamples = [
  // An options object whose getters throw: the getter's own Error escaped the constructor
  // (reading `status` to show it in "unknown option status"), instead of a TypeError naming
  // the option. Fixed in options.js (`own`).
  [new Hostile('getter')],
  // The same for a known option (`timeoutMs`, `clock`) whose getter throws.
  [new Hostile('option-getters')],
];

/** Outcomes for `record`, `classifyResult` and `classifyError`. */
export const outcomeExamples = [];

/** Sequences of the two-step API, with K and shadow mode (see `opArb` in fuzz.test.js). */
export const permitExamples = [
  // Not a package defect: the harness read a probe's epoch at a later instant than the
  // one it was admitted at (a probe timeout fell between), so it expected the probe's own
  // outcome, stale by then, to count. Kept: it checks a probe recorded after its round
  // timed out is stale.
  [[{ op: 'acquire' }, { op: 'clock', by: 0 }, { op: 'record', pick: 0, outcome: 'timeout' }, { op: 'acquire' },
    { op: 'record', pick: 0, outcome: 'timeout' }, { op: 'record', pick: 0, outcome: 'timeout' },
    { op: 'clock', by: 1000 }, { op: 'clock', by: 500 }, { op: 'record', pick: 0, outcome: 200 }], 1, false],
];

/** Whole `execute` scenarios (see `scenarioArb` in fuzz.test.js). */
export const executeExamples = [];
