// The members' deadlines, earliest first: a binary min-heap of [at, entry]. A member that
// rebooks its deadline leaves the old one in the heap; the store skips it when it comes up
// (`entry.scheduled` no longer matches), which is cheaper than finding and removing it.

export class Deadlines {
  #heap = [];

  /** The earliest deadline, or Infinity. */
  get next() {
    return this.#heap.length > 0 ? this.#heap[0][0] : Infinity;
  }

  push(at, entry) {
    const heap = this.#heap;
    heap.push([at, entry]);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent][0] <= heap[i][0]) break;
      [heap[parent], heap[i]] = [heap[i], heap[parent]];
      i = parent;
    }
  }

  /** Removes and returns the earliest [at, entry]. */
  pop() {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && heap[l][0] < heap[m][0]) m = l;
        if (r < heap.length && heap[r][0] < heap[m][0]) m = r;
        if (m === i) break;
        [heap[m], heap[i]] = [heap[i], heap[m]];
        i = m;
      }
    }
    return top;
  }
}
