// Interleaved timing rounds, shared by the benches that compare ops in one process.

/** The middle of sorted samples. */
export const median = (sorted) => sorted[sorted.length >> 1];
/** The fastest of sorted samples: what the op costs when nothing else on the machine gets in. */
export const fastest = (sorted) => sorted[0];

/** Iterations of `op` that take about `roundMs`. */
async function calibrate(op, isAsync, roundMs) {
  let n = 1000;
  for (;;) {
    const t0 = performance.now();
    if (isAsync) for (let i = 0; i < n; i++) await op();
    else for (let i = 0; i < n; i++) op();
    const dt = performance.now() - t0;
    if (dt > roundMs / 4) return Math.max(1000, Math.round((n * roundMs) / dt));
    n *= 4;
  }
}

/**
 * Times several ops in interleaved rounds (A B C A B C ...), so that drift in the
 * machine's load hits them alike; returns each op's ns per op over its rounds, sorted, by
 * name. `ops`: { name: [op, isAsync] }.
 */
export async function rounds(ops, count, roundMs) {
  const entries = Object.entries(ops);
  const counts = [];
  for (const [, [op, isAsync]] of entries) counts.push(await calibrate(op, isAsync, roundMs));
  const samples = entries.map(() => []);
  for (let r = 0; r < count; r++) {
    for (let k = 0; k < entries.length; k++) {
      const [op, isAsync] = entries[k][1];
      const n = counts[k];
      const t0 = performance.now();
      if (isAsync) for (let i = 0; i < n; i++) await op();
      else for (let i = 0; i < n; i++) op();
      samples[k].push(((performance.now() - t0) * 1e6) / n);
    }
  }
  const result = {};
  entries.forEach(([name], k) => {
    result[name] = samples[k].sort((a, b) => a - b);
  });
  return result;
}

/** `rounds`, each op's median ns per op by name. */
export async function compare(ops, count, roundMs) {
  const sorted = await rounds(ops, count, roundMs);
  return Object.fromEntries(Object.entries(sorted).map(([name, samples]) => [name, median(samples)]));
}
