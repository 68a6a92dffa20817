// Timeouts for `execute`: every pending deadline, whatever its length, in one queue under
// one timer, so that what is kept follows the calls in flight.
//
// The queue is a binary min-heap of entries by deadline, shared by every breaker. One
// timer is armed for the earliest deadline, instead of a `setTimeout`/`clearTimeout` pair
// per call (~400 ns on Node 24); a call that settles is marked done and left where it is,
// costing nothing more. The queue is emptied the moment no entry is pending, and
// compacted when its finished entries outnumber the pending ones four to one (past
// 1,024 entries), so it holds about the calls in flight, however many distinct lengths
// the calls ask for. While nothing is pending the timer is unref'd, so it never keeps a
// process alive; if it fires with nothing pending it goes away. It is re-armed only for a
// deadline earlier than the one it waits for (calls with one timeout length arrive in
// deadline order, so they never re-arm it). Delays beyond setTimeout's 2^31 - 1 ms limit
// are armed in steps of at most that.

/** setTimeout's largest delay; longer ones overflow to 1 ms (and Node warns). */
const MAX_DELAY = 2 ** 31 - 1;
/** Entries the queue may hold before finished ones are swept out (see `settled`). */
const SWEEP_FLOOR = 1024;

/** Entries (`{ deadline, done, expire() }`), a min-heap on `deadline`. */
let heap = [];
/** Entries in `heap` not yet done. */
let pending = 0;
/** The timer, the `performance.now()` instant it fires at, and whether it is ref'd. */
let timer;
let armedFor = Infinity;
let refed = false;
/** While `fire` runs: it arms the timer itself when it is done. */
let firing = false;

function siftUp(items, i) {
  const entry = items[i];
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (items[parent].deadline <= entry.deadline) break;
    items[i] = items[parent];
    i = parent;
  }
  items[i] = entry;
}

function siftDown(items, i) {
  const entry = items[i];
  const n = items.length;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && items[child + 1].deadline < items[child].deadline) child++;
    if (items[child].deadline >= entry.deadline) break;
    items[i] = items[child];
    i = child;
  }
  items[i] = entry;
}

/** Removes the earliest entry. */
function popHead() {
  const last = heap.pop();
  if (heap.length > 0) {
    heap[0] = last;
    siftDown(heap, 0);
  }
}

function arm(now) {
  const deadline = heap[0].deadline;
  const delay = Math.min(MAX_DELAY, Math.max(1, Math.ceil(deadline - now)));
  if (timer !== undefined) clearTimeout(timer);
  timer = setTimeout(fire, delay);
  armedFor = now + delay;
  refed = true;
}

function fire() {
  timer = undefined;
  armedFor = Infinity;
  refed = false;
  const now = performance.now();
  firing = true;
  try {
    // `expire` settles its call, which may empty or compact the queue: re-read the head.
    while (heap.length > 0) {
      const head = heap[0];
      if (!head.done && head.deadline > now) break;
      popHead();
      if (head.done) continue;
      try {
        head.expire();
      } catch (error) {
        // Never from this package (expire settles without throwing); whatever it is,
        // the other calls must still time out.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  } finally {
    firing = false;
    if (heap.length > 0) arm(now);
  }
}

/**
 * Queues `entry` (`{ done, expire() }`; `deadline` is set here) to expire `ms` from now
 * unless it is marked done first; call `settled()` once when marking it done.
 */
export function addDeadline(ms, entry) {
  const now = performance.now();
  const deadline = now + ms;
  entry.deadline = deadline;
  heap.push(entry);
  siftUp(heap, heap.length - 1);
  pending++;
  if (firing) return;
  // A timer late by less than a millisecond is within setTimeout's own precision.
  if (timer === undefined || deadline < armedFor - 1) {
    arm(now);
  } else if (!refed) {
    refed = true;
    timer.ref?.();
  }
}

/** Called once for each entry marked done. */
export function settled() {
  pending--;
  if (pending === 0) {
    heap = [];
    if (refed && timer !== undefined) {
      refed = false;
      timer.unref?.();
    }
  } else if (heap.length > SWEEP_FLOOR && heap.length > 5 * pending) {
    heap = heap.filter((entry) => !entry.done);
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  }
}
