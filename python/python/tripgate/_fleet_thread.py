"""A fleet store's thread: it tells each member what happened (the store up or down, a
message, a reply, the breaker's wake-up, a deadline), runs the one Redis call the member
asks for at a time, and sleeps in ``select`` until something happens. It holds the
store's connections (commands, and pub/sub: one, or on a Redis Cluster one per master
that serves a fleet's slot, for its sharded channels); nothing else touches them. Every
decision is the member protocol's (``tripgate._native.FleetMember``)."""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import selectors
import threading
import time
import types
from typing import Any, Dict, List, Optional, Tuple

from . import _fleet_redis, _native

_log = logging.getLogger("tripgate")
_slots = itertools.count(1)
# A slot given up (SUNSUBSCRIBE) may be named by a node that has not heard of the change
# yet: the map is asked again this often, for at most this long, before the session ends.
_MAP_RETRY_NS = 10_000_000
_MAP_WAIT_NS = 2_000_000_000


class StoreFault(Exception):
    """An error reply that ends the session (the store's ACL denies a command, or it
    cannot serve now): its message is the core's explanation."""


class Entry:
    """A member as the thread keeps it."""

    __slots__ = (
        "slot", "name", "member", "channel", "own", "pubsub", "scheduled", "subscribing", "moved", "left", "ready",
    )

    def __init__(self, name: str, member: _native.FleetMember) -> None:
        self.slot = next(_slots)
        self.name = name
        self.member = member
        self.channel = member.keys["channel"].encode()
        # Its own channel, where a holder's release wakes it alone.
        self.own = member.keys["own_channel"].encode()
        # The pub/sub connection its channels are subscribed on, this session.
        self.pubsub: Any = None
        self.scheduled: Optional[int] = None
        # When the subscription's confirmation is due (the adapter's ns), while waited for.
        self.subscribing: Optional[int] = None
        # Its slot moved: the connection that gave it up, when to ask the cluster's map
        # again, and when to give up asking (the adapter's ns).
        self.moved: Optional[Tuple[Any, int, int]] = None
        self.left = False
        self.ready = threading.Event()


class StoreThread:
    """The thread of one ``FleetStore`` and what it holds. ``request`` is the one way in
    from other threads; ``up``, ``connects``, ``disconnects`` and ``last_error`` are read
    from anywhere."""

    def __init__(
        self,
        redis: types.ModuleType,
        urls: List[str],
        cluster: bool,
        tls: Dict[str, str],
        timeout_ns: int,
        backoff: _native.FleetBackoff,
    ) -> None:
        self._redis = redis
        self._urls = urls
        self._cluster = cluster
        self._tls = tls
        self._timeout_ns = timeout_ns
        self._backoff = backoff
        self.waker = _native.FleetWaker()
        self._requests: collections.deque[Tuple[str, Optional[Entry]]] = collections.deque()
        self._members: Dict[int, Entry] = {}
        self._channels: Dict[bytes, Entry] = {}
        self._timers: List[Tuple[int, int, Entry]] = []
        self._seq = itertools.count()
        self._client: Any = None
        # Pub/sub connections by node ("" for a single server), and the socket each reads.
        self._pubsubs: Dict[str, Any] = {}
        self._socks: Dict[int, Any] = {}
        self.up = False
        self.warning: Optional[str] = None
        self._retry_at = 0
        self.connects = 0
        self.disconnects = 0
        self.last_error: Optional[str] = None
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.waker.fileno(), selectors.EVENT_READ, "wake")
        self._turning = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="tripgate-fleet", daemon=True)
        self._thread.start()

    def request(self, kind: str, entry: Optional[Entry]) -> None:
        """Queues ``join``, ``leave`` (with the entry) or ``close`` for the thread."""
        self._requests.append((kind, entry))
        self.waker.wake()

    def stop(self, timeout: Optional[float]) -> None:
        """Asks the thread to leave every fleet and close; waits for it up to ``timeout``
        seconds (None: a few store timeouts), unless called from the thread itself."""
        self.request("close", None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout if timeout is not None else 5 * self._timeout_ns / 1e9 + 1)

    def forsake(self) -> None:
        """In a child just forked: lets go of what this thread held in the parent. The
        thread is not in the child, and its sockets and selector are the parent's too, so
        the child's copies are closed here: never read, written, unregistered or shut
        down (which would break them for the parent)."""
        for sock in self._socks.values():
            try:
                sock.close()
            except OSError:
                pass
        self._socks.clear()
        self._pubsubs.clear()
        self._client = None
        self._members.clear()
        self._channels.clear()
        self._timers.clear()
        self._requests.clear()
        # Closes the child's handle of the parent's epoll (or whatever the selector is),
        # without a word to it.
        self._selector.close()

    def _run(self) -> None:
        while True:
            try:
                if not self._turn():
                    break
            except SystemExit:
                break
            except BaseException as error:  # noqa: BLE001 - the guarded service must go on
                _log.error("tripgate: the fleet store's thread failed; its members decide alone until it reconnects", exc_info=error)
                self._lost(error)
                # A failure that repeats must not spin the thread or flood the log.
                time.sleep(0.1)
        self._shut()

    def _turn(self) -> bool:
        """One turn of the loop: what woke the thread, then sleep until something happens.
        False once the store is closed. The work is done holding ``_turning``, so that a
        fork waits for it (``hold``) and never copies this thread mid-import, mid-command
        or holding a lock into a child; the sleep is not."""
        with self._turning:
            if not self._work():
                return False
            wait = self._wait()
        self._selector.select(wait)
        return True

    def hold(self) -> bool:
        """Before a fork: waits until this thread is between turns and keeps it there until
        ``release``. False (nothing held) when called from this thread itself."""
        if threading.current_thread() is self._thread:
            return False
        self._turning.acquire()
        return True

    def release(self) -> None:
        """After a fork, in the parent: the thread carries on."""
        self._turning.release()

    def _work(self) -> bool:
        self.waker.drain()
        while self._requests:
            kind, entry = self._requests.popleft()
            if kind == "close" or entry is None:
                return False
            if kind == "join":
                self._enter(entry)
            else:
                self._forget(entry)
        for entry in list(self._members.values()):
            if entry.member.take_woken():
                self._step(entry, "changed")
        now = time.monotonic_ns()
        if self._client is None and now >= self._retry_at:
            self._connect()
        self._pump()
        self._subscriptions_due(time.monotonic_ns())
        self._moves_due(time.monotonic_ns())
        self._timers_due(time.monotonic_ns())
        return True

    def _wait(self) -> Optional[float]:
        """Seconds until the next deadline, reconnect or subscription check; None: none."""
        at = []
        if self._timers:
            at.append(self._timers[0][0])
        if self._client is None:
            at.append(self._retry_at)
        at.extend(e.subscribing for e in self._members.values() if e.subscribing is not None)
        at.extend(e.moved[1] for e in self._members.values() if e.moved is not None)
        if not at:
            return None
        return max(0.0, (min(at) - time.monotonic_ns()) / 1e9)

    def _enter(self, entry: Entry) -> None:
        if entry.left:
            return
        self._members[entry.slot] = entry
        self._channels[entry.channel] = entry
        self._channels[entry.own] = entry
        if self.up:
            self._subscribe(entry)

    def _forget(self, entry: Entry) -> None:
        self._members.pop(entry.slot, None)
        for channel in (entry.channel, entry.own):
            if self._channels.get(channel) is entry:
                del self._channels[channel]
        entry.scheduled = None
        release = entry.member.leave_command()
        if not self.up:
            return
        try:
            pubsub, entry.pubsub = entry.pubsub, None
            if pubsub is not None:
                if self._cluster:
                    pubsub.sunsubscribe(entry.channel, entry.own)
                else:
                    pubsub.unsubscribe(entry.channel, entry.own)
            if release is not None:
                _fleet_redis.run(self._redis, self._client, release[2])
        except Exception as error:  # noqa: BLE001 - its last words: nobody waits for them
            if not isinstance(error, self._redis.exceptions.ResponseError):
                self._lost(error)

    def _shut(self) -> None:
        while self._requests:
            kind, entry = self._requests.popleft()
            if kind == "join" and entry is not None:
                entry.left = True
                entry.member.leave()
        for entry in list(self._members.values()):
            entry.left = True
            entry.member.leave()
            self._forget(entry)
        self._drop()
        self._selector.close()

    # ---- the store ---------------------------------------------------------------------

    def _connect(self) -> None:
        redis = self._redis
        timeout = self._timeout_ns / 1e9
        try:
            if self._cluster:
                self._client = _fleet_redis.cluster_client(redis, self._urls, timeout, self._tls)
            else:
                self._client = _fleet_redis.client(redis, self._urls[0], timeout, self._tls)
            self._client.ping()
        except Exception as error:  # noqa: BLE001 - any failure is the store down
            self._down(error)
            return
        warning = _fleet_redis.eviction_warning(self._client)
        if warning is not None and warning != self.warning:
            _log.warning("tripgate: %s", warning)
        self.warning = warning
        self.up = True
        self.connects += 1
        self._backoff.up(time.monotonic_ns())
        for entry in list(self._members.values()):
            self._subscribe(entry)

    def _subscribe(self, entry: Entry, pubsub: Any = None) -> None:
        if not self.up:
            return
        try:
            if pubsub is None:
                pubsub = self._pubsub_for(entry)
            # One (S)SUBSCRIBE: the first confirmation means the store holds both.
            if self._cluster:
                pubsub.ssubscribe(entry.channel, entry.own)
            else:
                pubsub.subscribe(entry.channel, entry.own)
        except Exception as error:  # noqa: BLE001
            self._lost(error)
            return
        entry.pubsub = pubsub
        entry.subscribing = time.monotonic_ns() + self._timeout_ns
        sock = getattr(pubsub.connection, "_sock", None)
        known = self._socks.get(id(pubsub))
        if sock is not None and sock is not known:
            if known is not None:
                self._selector.unregister(known)
            self._selector.register(sock, selectors.EVENT_READ, "pubsub")
            self._socks[id(pubsub)] = sock

    def _pubsub_for(self, entry: Entry) -> Any:
        """The pub/sub connection for ``entry``'s channels: the store's one, or on a
        cluster the one to the master serving its slot (made on first use)."""
        if not self._cluster:
            node = ""
            if node not in self._pubsubs:
                self._pubsubs[node] = self._client.pubsub()
            return self._pubsubs[node]
        timeout = self._timeout_ns / 1e9
        channel = entry.channel.decode()
        client, node = _fleet_redis.node_client(self._redis, self._client, channel, timeout, self._tls, self._urls[0])
        if node in self._pubsubs:
            client.close()
        else:
            self._pubsubs[node] = client.pubsub()
        return self._pubsubs[node]

    def _subscriptions_due(self, now: int) -> None:
        for entry in list(self._members.values()):
            if entry.subscribing is not None and now >= entry.subscribing:
                self._lost(TimeoutError("the store did not confirm a subscription within store_timeout"))
                return

    def _pump(self) -> None:
        """Every message the pub/sub connections hold (buffered ones included, so that the
        select that follows waits only for new ones). A message is read only once some of
        it is there, and then within ``store_timeout``: a long one may arrive in parts. A
        connection that broke (a killed server or slot master) ends the session at once."""
        for pubsub in list(self._pubsubs.values()):
            while self.up and id(pubsub) in self._socks:
                try:
                    if not pubsub.connection.can_read(timeout=0):
                        break
                    message = pubsub.get_message(timeout=self._timeout_ns / 1e9)
                except Exception as error:  # noqa: BLE001
                    self._lost(error)
                    return
                if message is None:
                    break
                entry = self._channels.get(message.get("channel"))
                if entry is None:
                    continue
                kind = message.get("type")
                if kind in ("message", "smessage"):
                    self._step(entry, "message", message["data"])
                elif (
                    kind in ("subscribe", "ssubscribe")
                    and entry.subscribing is not None
                    and message.get("channel") == entry.channel
                ):
                    entry.subscribing = None
                    self._step(entry, "up")
                elif kind == "sunsubscribe" and entry.pubsub is pubsub and entry.subscribing is None:
                    self._moved(entry, pubsub)

    def _moved(self, entry: Entry, gone: Any) -> None:
        """The node that served ``entry``'s channels gave their slot up (a failover, a
        resharding: it says so with ``SUNSUBSCRIBE`` on ``gone``). The member decides alone
        until it is subscribed on the slot's new master and has read its fleet back."""
        entry.pubsub = None
        now = time.monotonic_ns()
        entry.moved = (gone, now, now + _MAP_WAIT_NS)
        self._step(entry, "down")
        self._follow(entry)

    def _follow(self, entry: Entry) -> None:
        """Subscribes a member whose slot moved on the master the cluster's map names now,
        once that is no longer the node that gave the slot up."""
        if entry.moved is None or entry.left:
            return
        gone, _, give_up = entry.moved
        try:
            _fleet_redis.refresh_slots(self._client)
            pubsub = self._pubsub_for(entry)
        except Exception as error:  # noqa: BLE001
            self._lost(error)
            return
        now = time.monotonic_ns()
        if pubsub is gone:
            if now >= give_up:
                self._lost(TimeoutError("the cluster named no new master for a slot that moved"))
            else:
                entry.moved = (gone, now + _MAP_RETRY_NS, give_up)
            return
        entry.moved = None
        self._subscribe(entry, pubsub)

    def _moves_due(self, now: int) -> None:
        for entry in list(self._members.values()):
            if entry.moved is not None and now >= entry.moved[1]:
                self._follow(entry)

    def _lost(self, error: BaseException) -> None:
        """The session is over: every member decides locally, and the store is tried again
        after the core's backoff (which a session that failed at once does not restart)."""
        if self._client is not None:
            self._down(error)

    def _down(self, error: BaseException) -> None:
        self.last_error = _fleet_redis.redact(f"{type(error).__name__}: {error}")
        if self.up:
            self.disconnects += 1
        now = time.monotonic_ns()
        self._retry_at = now + self._backoff.down(now)
        self._drop()
        for entry in list(self._members.values()):
            entry.subscribing = None
            entry.moved = None
            self._step(entry, "down")

    def _drop(self) -> None:
        self.up = False
        for sock in self._socks.values():
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
        self._socks.clear()
        for closing in (*self._pubsubs.values(), self._client):
            if closing is not None:
                try:
                    closing.close()
                except Exception:  # noqa: BLE001, S110 - closed already, or never opened
                    pass
        self._pubsubs.clear()
        for entry in self._members.values():
            entry.pubsub = None
        self._client = None

    # ---- members -----------------------------------------------------------------------

    def _step(self, entry: Entry, kind: str, data: Any = None) -> None:
        """Feeds ``kind`` to a member's protocol and runs the commands it asks for, one at
        a time, until it asks for none; then books its deadline."""
        if entry.left:
            return
        member = entry.member
        command = member.step(kind, time.monotonic_ns(), data)
        while command is not None and self.up:
            try:
                reply = _fleet_redis.run(self._redis, self._client, command[2])
            except Exception as error:  # noqa: BLE001
                text = _fleet_redis.error_reply(self._redis, error)
                kind, explanation = member.fault(text) if text is not None else ("down", "")
                if kind != "bad-data":
                    self._lost(StoreFault(explanation) if text is not None else error)
                    return
                command = member.step("refused", time.monotonic_ns(), None)
                continue
            command = member.step("reply", time.monotonic_ns(), reply)
        if member.synced and not entry.left:
            entry.ready.set()
        else:
            entry.ready.clear()
        deadline = member.deadline
        if deadline != entry.scheduled:
            entry.scheduled = deadline
            if deadline is not None:
                heapq.heappush(self._timers, (deadline, next(self._seq), entry))

    def _timers_due(self, now: int) -> None:
        timers = self._timers
        while timers and timers[0][0] <= now:
            at, _, entry = heapq.heappop(timers)
            if entry.scheduled == at and not entry.left and entry.slot in self._members:
                entry.scheduled = None
                self._step(entry, "tick")
