// Hostile values for the property tests (fuzz.test.js) and their committed
// counterexamples (fuzz-regressions.js).
import fc from 'fast-check';

/**
 * Objects whose properties fight back: throwing getters, Proxies, no prototype. They are
 * generated as markers and built inside the property (`materialize`): fast-check reads
 * the values it prints and clones, and a throwing getter would break its own report.
 */
export class Hostile {
  constructor(kind) {
    this.kind = kind;
  }

  [fc.toStringMethod]() {
    return `hostile(${this.kind})`;
  }
}

export function build(kind) {
  switch (kind) {
    case 'getter':
      return Object.defineProperties({}, Object.fromEntries(['status', 'statusCode', 'grpc', 'code', 'name', 'cause', 'errors', 'type']
        .map((key) => [key, { get() { throw new Error(`getter ${key}`); }, enumerable: true }])));
    case 'option-getters':
      return Object.defineProperties({}, Object.fromEntries(['timeoutMs', 'clock', 'failureThreshold']
        .map((key) => [key, { get() { throw new Error(`getter ${key}`); }, enumerable: true }])));
    case 'proxy':
      // Throws for every string key (what the package reads); symbol keys stay ordinary
      // so that fast-check can still clone and print the value.
      return new Proxy({}, {
        get(target, key) {
          if (typeof key === 'symbol') return undefined;
          throw new Error(`proxy get ${key}`);
        },
        has(target, key) {
          if (typeof key === 'symbol') return false;
          throw new Error(`proxy has ${key}`);
        },
        getOwnPropertyDescriptor(target, key) {
          if (typeof key === 'symbol') return undefined;
          throw new Error(`proxy descriptor ${key}`);
        },
        ownKeys() {
          throw new Error('proxy keys');
        },
      });
    case 'revoked': {
      // Every operation on it throws, `typeof` aside: built here, never printed.
      const { proxy, revoke } = Proxy.revocable(new Error('x'), {});
      revoke();
      return proxy;
    }
    case 'null-proto':
      return Object.create(null);
    case 'response-error':
      return Response.error();
    case 'response':
      return new Response(null, { status: 503 });
    case 'opaque':
      return { status: 0, type: 'opaque' };
    case 'status-string':
      return { status: '503' };
    default:
      return Object.freeze(Object.assign(new Error('x'), { code: 'ECONNRESET', cause: { status: 'nope' } }));
  }
}

export const HOSTILE_KINDS = ['getter', 'option-getters', 'proxy', 'revoked', 'null-proto', 'response-error', 'response', 'opaque', 'status-string', 'frozen-error'];

/**
 * A copy of a generated value with its hostile markers built, inside arrays and plain
 * (or prototype-less) objects too. A copy: fast-check reuses its values while shrinking.
 */
export function materialize(value) {
  if (value instanceof Hostile) return build(value.kind);
  if (Array.isArray(value)) return value.map(materialize);
  if (typeof value !== 'object' || value === null) return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const copy = Object.create(proto);
  for (const key of Object.keys(value)) {
    Object.defineProperty(copy, key, { value: materialize(value[key]), enumerable: true, configurable: true, writable: true });
  }
  return copy;
}

