// The error table's vector (tests/vectors/errors/errors.json) on the package's classifier,
// `classifyError`: each case's error built as a JS error (an errno name or a library's code
// as its `code`, its kind as its `name`, a status as `status`, a gRPC code as a grpc-js
// ServiceError, a chain through `cause`). Runs in Node, in Deno and inside workerd: no
// import but what it is given.

/** An outcome as `classifyError` returns it (`'timeout'`, `503`, `{ grpc: 14 }`), by name. */
function outcomeName(outcome) {
  if (typeof outcome === 'number') return `status:${outcome}`;
  if (typeof outcome === 'object' && outcome !== null) return `grpc:${outcome.grpc}`;
  return outcome;
}

/** The case's error as a JS error, or a string saying why JS errors cannot carry it. */
function build(spec) {
  const cause = spec.cause === undefined ? undefined : build(spec.cause);
  if (typeof cause === 'string') return cause;
  const error = cause === undefined ? new Error('failed') : new Error('failed', { cause });
  if (spec.errno !== undefined) error.code = spec.errno;
  if (spec.code !== undefined) {
    if (spec.errno !== undefined) return 'a JS error has one code';
    error.code = spec.code;
  }
  if (spec.kind !== undefined) {
    if (spec.kind.length !== 1) return 'a JS error has one name';
    error.name = spec.kind[0];
  }
  if (spec.status !== undefined) error.status = spec.status;
  if (spec.grpc !== undefined) Object.assign(error, { code: spec.grpc, details: 'failed', metadata: {} });
  return error;
}

/**
 * Runs every case; returns `{ ran, skipped, failed }` (`skipped` and `failed` as lines).
 * `maxCauses`: the package's depth, which must be the vector's.
 */
export function runErrorsVector(vector, classifyError) {
  const result = { ran: 0, skipped: [], failed: [] };
  for (const { why, error, outcome } of vector.cases) {
    const built = build(error);
    if (typeof built === 'string') {
      result.skipped.push(`${why}: ${built}`);
      continue;
    }
    result.ran += 1;
    const got = outcomeName(classifyError(built));
    if (got !== outcome) result.failed.push(`${why}: got ${got}, expected ${outcome}`);
  }
  return result;
}
