// The retry vector (tests/vectors/retry/retry.json) on the package's public retries: each
// case's policy (the vector's `defaults` under it) made by `breaker.retries()` on a breaker
// whose clock the runner moves to each step's `at-ms`, then `deposit` and `next` as the
// steps say, every wait compared to the nanosecond. Runs in Node, in Deno and inside
// workerd: no import but what it is given (the package's `CircuitBreaker`).

/** A vector policy key (`base-delay-ms`) as the JS retries option (`baseDelayMs`). */
function option(key) {
  const ms = key.endsWith('-ms');
  const words = (ms ? key.slice(0, -3) : key).split('-');
  const camel = words.map((w, i) => (i === 0 ? w : w[0].toUpperCase() + w.slice(1))).join('');
  return ms ? `${camel}Ms` : camel;
}

/** The case's retries options: the defaults with the case's fields over them. */
function optionsOf(defaults, policy) {
  const options = {};
  for (const [key, value] of Object.entries({ ...defaults, ...policy })) options[option(key)] = value;
  return options;
}

/** A `next` answer as the vector writes it: `{ 'retry-ns' }` or `{ stop }`. */
function asVector(next) {
  return next.retry ? { 'retry-ns': Math.round(next.waitMs * 1e6) } : { stop: next.stop };
}

/** Runs every case; returns `{ ran, steps, failed }` (`failed` as lines). */
export function runRetryVector(vector, CircuitBreaker) {
  const result = { ran: 0, steps: 0, failed: [] };
  for (const { name, policy, steps } of vector.cases) {
    result.ran += 1;
    let nowMs = 0;
    const breaker = new CircuitBreaker({ clock: () => nowMs });
    const retries = breaker.retries(optionsOf(vector.defaults, policy));
    steps.forEach((step, i) => {
      result.steps += 1;
      if (step.op === 'deposit') {
        for (let n = 0; n < step.count; n++) retries.deposit();
        return;
      }
      nowMs = step['at-ms'];
      const got = asVector(retries.next(step.attempt, step.class, step['retry-after-ms']));
      if (JSON.stringify(got) !== JSON.stringify(step.expect)) {
        result.failed.push(`${name}, step ${i}: got ${JSON.stringify(got)}, expected ${JSON.stringify(step.expect)}`);
      }
    });
    breaker.dispose();
  }
  return result;
}
