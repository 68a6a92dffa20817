// A breaker's listeners: `transition` (every one), the state entered (`open`,
// `half-open`, ...), `clock-error` (a clock reading that was not observed) and
// `listener-error` (a listener threw).

import { describe } from './errors.js';
import { onInstall } from './tables.js';

let events = new Set();
onInstall((t) => {
  events = new Set(['transition', 'clock-error', 'listener-error', ...t.states]);
});

/**
 * `once` wrappers -> the listener each wraps. Kept here, not on the wrapper: `off` then
 * reads no property of a listener, which may be a revoked Proxy of a function.
 */
const onceListeners = new WeakMap();

export class Listeners {
  /** event name -> listeners, or null while nobody listens. */
  #map = null;
  /** Listener calls that threw. */
  errors = 0;

  on(event, listener) {
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    if (!events.has(event)) {
      // `describe`, not String(): the name may be a value whose conversion throws.
      throw new TypeError(`unknown event ${describe(event)}: expected ${[...events].join(', ')}`);
    }
    this.#map ??= new Map();
    const list = this.#map.get(event);
    if (list === undefined) this.#map.set(event, [listener]);
    else list.push(listener);
  }

  once(event, listener) {
    const wrapper = (payload) => {
      this.off(event, wrapper);
      listener(payload);
    };
    onceListeners.set(wrapper, listener);
    this.on(event, wrapper);
  }

  off(event, listener) {
    const list = this.#map?.get(event);
    if (list === undefined) return;
    const i = list.findIndex((l) => l === listener || onceListeners.get(l) === listener);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.#map.delete(event);
    if (this.#map.size === 0) this.#map = null;
  }

  /** Whether anybody listens at all (the breaker then skips building payloads). */
  get any() {
    return this.#map !== null;
  }

  has(event) {
    return this.#map?.has(event) === true;
  }

  /**
   * Calls the listeners of `event`, each with `payload`. One that throws stops neither
   * the others nor the breaker call that caused the event, and is never rethrown (an
   * uncaught exception would end a Node process): it is counted and handed to the
   * `listener-error` listeners as `{ error, event, payload }`. A `listener-error`
   * listener that throws is counted too, and not reported again.
   */
  emit(event, payload) {
    const list = this.#map?.get(event);
    if (list === undefined) return;
    for (const listener of [...list]) {
      try {
        listener(payload);
      } catch (error) {
        this.errors++;
        if (event !== 'listener-error') this.emit('listener-error', { error, event, payload });
      }
    }
  }
}
