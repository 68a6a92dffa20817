// An upstream for the edge tests (and test/retry-after.test.js), served by node:http on
// 127.0.0.1: answers `status` with `headers`, counts the requests that reach it, and can
// hold answers until the test releases them.
import http from 'node:http';

export class Upstream {
  status = 200;
  /** Headers of every answer, besides content-type and x-upstream. */
  headers = {};
  hits = 0;
  /** While true, requests wait in `held` until `release()`. */
  hold = false;
  held = [];
  /** Headers of the last request that arrived. */
  lastHeaders = null;
  #server = null;
  #waiters = [];

  async start() {
    this.#server = http.createServer((req, res) => {
      this.hits++;
      this.lastHeaders = req.headers;
      const answer = () => {
        res.writeHead(this.status, { 'content-type': 'text/plain', 'x-upstream': 'yes', ...this.headers });
        res.end(`upstream ${this.status}`);
      };
      if (this.hold) this.held.push(answer);
      else answer();
      this.#wake();
    });
    this.#server.keepAliveTimeout = 100;
    await new Promise((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url() {
    return `http://127.0.0.1:${this.#server.address().port}`;
  }

  /** Resolves once `hits` reaches `n`. */
  reached(n) {
    if (this.hits >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }

  #wake() {
    this.#waiters = this.#waiters.filter((w) => (this.hits >= w.n ? (w.resolve(), false) : true));
  }

  /** Answers every held request now. */
  release() {
    const held = this.held;
    this.held = [];
    this.hold = false;
    for (const answer of held) answer();
  }

  async stop() {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
