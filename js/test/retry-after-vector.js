// The Retry-After vector (tests/vectors/retry-after/retry-after.json) on the package's
// public `retryAfter`: each case's header value read on its own (`http` against the case's
// wall clock, `grpcPushback`), and as a fetch `Response` carrying it (`of`, what `execute`
// and `record` read), and the statuses a `Retry-After` counts on (`applies`). Runs in Node,
// in Deno and inside workerd: no import but what it is given.

/** Runs every case; returns `{ ran, failed }` (`failed` as lines). */
export function runRetryAfterVector(vector, retryAfter) {
  const result = { ran: 0, failed: [] };
  const check = (what, got, want) => {
    if (!Object.is(got, want)) result.failed.push(`${what}: got ${got}, expected ${want}`);
  };
  for (const { name, header, value, 'unix-now': unixNow, ms } of vector.cases) {
    result.ran += 1;
    const nowMs = unixNow * 1000;
    const what = `${name} (${header}: ${JSON.stringify(value)})`;
    if (header === 'retry-after') {
      check(what, retryAfter.http(value, nowMs), ms);
      // On a 503 the answer asks what its header says; on a 500 it asks nothing.
      check(`${what} on a 503`, retryAfter.of(response(503, header, value), nowMs), ms ?? 0);
      check(`${what} on a 500`, retryAfter.of(response(500, header, value), nowMs), 0);
    } else if (header === 'grpc-retry-pushback-ms') {
      check(what, retryAfter.grpcPushback(value), ms);
      check(`${what} on a 200`, retryAfter.of(response(200, header, value), nowMs), ms ?? 0);
    } else {
      result.failed.push(`${what}: unknown header`);
    }
  }
  const listed = vector['applies-to-statuses'];
  for (let status = 100; status <= 599; status++) {
    check(`applies(${status})`, retryAfter.applies(status), listed.includes(status));
  }
  return result;
}

/** A fetch `Response` with one header (the runtime's own `Headers`). */
function response(status, header, value) {
  return new Response(null, { status, headers: { [header]: value } });
}
