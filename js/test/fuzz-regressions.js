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

/** Whole `execute` scenarios (see `scenarioArb` in fuzz.test.js). */
export const executeExamples = [];
