// Timeouts for `execute`: one timer per timeout length instead of one per call.

/** setTimeout's largest delay; longer ones overflow to 1 ms (and Node warns). */
const MAX_DELAY = 2 ** 31 - 1;

/**
 * The calls waiting on one timeout length, in start order — which is deadline order, as
 * they share the length. One timer per queue, armed for the earliest pending deadline,
 * replaces a `setTimeout`/`clearTimeout` pair per call (~400 ns on Node 24). A call that
 * settles is marked done and skipped; finished calls at the head are dropped at once, and
 * those behind a call still pending (a hung call holds the head for its whole timeout) are
 * swept out once they outnumber the pending ones, so the queue holds about the calls in
 * flight, not every call of the last `ms`. While nothing is pending the timer is
 * unref'd, so it never keeps a process alive; when it fires on an empty queue, the queue
 * is dropped, so timeouts computed per call (a deadline minus now) cost nothing once
 * their timers have fired. Delays beyond setTimeout's limit are armed in steps of at most
 * 2^31 - 1 ms.
 */
class Deadlines {
  constructor(ms) {
    this.ms = ms;
    this.items = [];
    this.head = 0;
    /** Entries added and not yet done. */
    this.pending = 0;
    this.timer = undefined;
    this.refed = false;
    this.fire = () => this.#fire();
  }

  add(entry) {
    entry.deadline = performance.now() + this.ms;
    entry.queue = this;
    this.items.push(entry);
    this.pending++;
    if (this.timer === undefined) {
      this.#arm(this.ms);
    } else if (!this.refed) {
      this.refed = true;
      this.timer.ref?.();
    }
  }

  /** Called once for each entry marked done: drops finished entries. */
  settled() {
    this.pending--;
    const items = this.items;
    let head = this.head;
    while (head < items.length && items[head].done) head++;
    if (head === items.length) {
      items.length = 0;
      head = 0;
      if (this.refed && this.timer !== undefined) {
        this.refed = false;
        this.timer.unref?.();
      }
    } else if (items.length - head > 1024 && items.length - head > 4 * this.pending) {
      // Start order is kept, so the head is still the earliest deadline.
      this.items = items.slice(head).filter((entry) => !entry.done);
      head = 0;
    }
    this.head = head;
  }

  #arm(delayMs) {
    this.timer = setTimeout(this.fire, Math.min(MAX_DELAY, Math.max(1, Math.ceil(delayMs))));
    this.refed = true;
  }

  #fire() {
    this.timer = undefined;
    this.refed = false;
    const now = performance.now();
    try {
      // `expire` settles the call, which may move `head` or replace `items`: re-read both.
      while (this.head < this.items.length) {
        const entry = this.items[this.head];
        if (entry.done) {
          this.head++;
        } else if (entry.deadline <= now) {
          this.head++;
          try {
            entry.expire();
          } catch (error) {
            // Never from this package (expire settles without throwing); whatever it is,
            // the other calls on this queue must still time out.
            queueMicrotask(() => {
              throw error;
            });
          }
        } else {
          break;
        }
      }
    } finally {
      if (this.head < this.items.length) {
        this.#arm(this.items[this.head].deadline - now);
      } else {
        this.items.length = 0;
        this.head = 0;
        if (queues.get(this.ms) === this) queues.delete(this.ms);
      }
    }
  }
}

/** timeoutMs -> its queue, shared by every breaker. */
const queues = new Map();

/** Queues `entry` (`{ done, expire() }`) to expire `ms` from now unless done first. */
export function addDeadline(ms, entry) {
  let queue = queues.get(ms);
  if (queue === undefined) {
    queue = new Deadlines(ms);
    queues.set(ms, queue);
  }
  queue.add(entry);
}
