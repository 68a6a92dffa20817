"""An asyncio event loop on a fake clock: when nothing is ready, it jumps its clock to the
next timer instead of waiting, so a test's timeouts expire at once and in order."""

import asyncio
import selectors


class _JumpSelector:
    def __init__(self, loop_time):
        self._inner = selectors.DefaultSelector()
        self._time = loop_time

    def select(self, timeout=None):
        ready = self._inner.select(0)
        if ready or timeout is None or timeout <= 0:
            return ready if ready or timeout is not None else self._inner.select(None)
        self._time.now += timeout
        return []

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Time:
    now = 1000.0


class FakeTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self):
        self._fake = _Time()
        super().__init__(_JumpSelector(self._fake))

    def time(self):
        return self._fake.now


def run(coro):
    loop = FakeTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
