"""Fleet mode (``FLEET.md``): the breakers of many processes that guard one upstream act
toward it like one breaker, through Redis. One member's trip opens every member for the
same remaining cooldown, one probe round runs fleet-wide under a lease in Redis, and its
end closes or re-opens everyone. Rust and Node members share a fleet with Python ones.

    import tripgate
    from tripgate.fleet import FleetStore

    store = FleetStore.connect("redis://127.0.0.1:6379", key=SHARED_KEY, member=HOSTNAME)
    breaker = tripgate.CircuitBreaker(name="payments", fleet_quorum=2)
    fleet = store.join("payments", breaker)   # use the breaker as always
    fleet.status(); fleet.leave(); store.close()

Every decision is the core's member protocol (``tripgate._native.FleetMember``): what to
ask Redis, when, and what the answers mean. This module only moves bytes between it and
redis-py (an optional dependency: ``pip install tripgate[redis]``), in one background
thread per store with one command connection and one pub/sub connection. ``acquire`` and
``record`` never wait on it. While Redis is unreachable or slower than ``store_timeout``,
every member is degraded and its breaker decides alone; once Redis answers, each member
reads its fleet back before anything else.

The store's thread is ``_fleet_thread``; what it asks of redis-py, ``_fleet_redis``.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
import types
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set

from . import _fleet_redis, _native
from ._errors import option_error
from ._fleet_thread import Entry, StoreThread

if TYPE_CHECKING:
    from .registry import Registry

__all__ = ["FleetStore", "Fleet", "FleetStatus"]


@dataclasses.dataclass(frozen=True)
class FleetStatus:
    """A member now. ``holder``: who holds the probe lease when this member does (its
    member id and its random session, 32 hex digits: processes that share a member name
    never share a lease). ``connected``: the store answers, the fleet's channel is subscribed
    and its keys were read back (the breaker follows the fleet); ``degraded``: the
    opposite (the breaker decides alone). ``connects`` and ``disconnects`` count the
    store's sessions. ``counts``: what the member protocol counted (``received``,
    ``applied``, ``published``, ``reconciles``, ``leases``, ``repairs``, ``refused``, and
    ``ignored`` by reason: ``garbage``, ``wrong-fleet``, ``unsigned``, ``forged``,
    ``stale``, ``malformed-generation``)."""

    member_id: str
    holder: str
    name: str
    connected: bool
    degraded: bool
    lease_held: bool
    connects: int
    disconnects: int
    counts: Dict[str, Any]

    def ignored(self, reason: str) -> int:
        count: int = self.counts["ignored"][reason]
        return count


class Fleet:
    """A breaker's membership of a fleet (``store.join(name, breaker)``)."""

    def __init__(self, store: FleetStore, entry: Entry) -> None:
        self._store = store
        self._entry = entry

    @property
    def name(self) -> str:
        return self._entry.name

    @property
    def store(self) -> FleetStore:
        return self._store

    @property
    def breaker(self) -> _native.Breaker:
        return self._entry.member.breaker

    def status(self) -> FleetStatus:
        entry, store = self._entry, self._store
        member = entry.member
        connected = member.synced and not entry.left
        return FleetStatus(
            member_id=store.member_id,
            holder=member.holder,
            name=entry.name,
            connected=connected,
            degraded=not connected,
            lease_held=member.lease_held and not entry.left,
            connects=store._thread.connects,
            disconnects=store._thread.disconnects,
            counts=member.counts(),
        )

    def ready(self, timeout: Optional[float] = 5.0) -> bool:
        """Waits until the member follows its fleet (connected, subscribed, its fleet's
        state read back): True, or False after ``timeout`` seconds."""
        return self._entry.ready.wait(timeout)

    def leave(self) -> None:
        """Leaves the fleet: the breaker is a local one when this returns, and a lease it
        held is given back in the background. Idempotent."""
        self._store._leave(self._entry)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()

    def __repr__(self) -> str:
        state = "left" if self._entry.left else ("connected" if self._entry.member.synced else "degraded")
        return f"<Fleet {self._entry.name!r} {state}>"


class FleetStore:
    """A process's link to its Redis, shared by every fleet its breakers join: one
    background thread, one command connection, one pub/sub connection. Use
    ``FleetStore.connect(url, ...)``."""

    @classmethod
    def connect(
        cls,
        url: Optional[str] = None,
        *,
        nodes: Optional[Sequence[str]] = None,
        key: Optional[bytes | str] = None,
        member: Optional[str] = None,
        reconcile_interval: Optional[float] = None,
        store_timeout: Optional[float] = None,
        max_backoff: Optional[float] = None,
        tls_root_cert: Optional[str | bytes] = None,
    ) -> FleetStore:
        """Checks the options (errors name the option: ``error.option``) and starts the
        store's thread. It returns at once: the connection is made in the background, and
        until it is, every member decides on its own.

        - ``url``: ``redis://[user:password@]host:port``, ``rediss://…`` (TLS) or
          ``unix:///path``; database 0 only.
        - ``nodes``: instead of ``url``, a Redis Cluster's node URLs (any of its nodes; the
          first one's user, password and TLS reach every node). A fleet's keys and
          channels share its name's slot, and its events go over sharded pub/sub
          (``SSUBSCRIBE``, ``SPUBLISH``) on that slot's master.
        - ``key``: the shared HMAC key (bytes or str, at least 16 bytes): messages and
          votes are signed, and unsigned or forged ones ignored.
        - ``member``: this process's stable name (a pod or host name), from which its
          member id is derived, so a restarted process keeps its vote; default random.
        - ``reconcile_interval`` (1 s), ``store_timeout`` (0.25 s), ``max_backoff`` (1 s):
          seconds, within the core's bounds.
        - ``tls_root_cert``: for ``rediss://``, the PEM certificate (str or bytes) of the
          CA that signed the server's, when the system's roots do not trust it."""
        redis = _fleet_redis.load()
        urls = _fleet_redis.check_urls(redis, url, nodes)
        tls = _fleet_redis.tls_options(urls[0], tls_root_cert)
        options = _native.fleet_options(
            reconcile_interval=reconcile_interval,
            store_timeout=store_timeout,
            max_backoff=max_backoff,
            key=key,
            member=member,
        )
        return cls(redis, urls, nodes is not None, options, tls, _token=_TOKEN)

    def __init__(
        self,
        redis: types.ModuleType,
        urls: List[str],
        cluster: bool,
        options: Dict[str, Any],
        tls: Dict[str, str],
        *,
        _token: object = None,
    ) -> None:
        if _token is not _TOKEN:
            raise TypeError("use FleetStore.connect(url, ...)")
        self._redis = redis
        self._urls = urls
        self._url = ",".join(urls)
        self._cluster = cluster
        self._tls = tls
        self._options = options
        self._key = options["key"]
        # Without a stable name, a random id: each process its own, a forked one too.
        self._named = bool(options["member_id"])
        self.member_id: str = options["member_id"] or _random_member_id()
        self._reconcile_ns: int = options["reconcile_interval_ns"]
        # The fleets joined, by name: what a forked child joins again.
        self._fleets: Dict[str, Fleet] = {}
        self._names_lock = threading.Lock()
        self._closed = False
        self._thread = self._start_thread()
        _STORES.add(self)

    def _start_thread(self) -> StoreThread:
        options = self._options
        backoff = _native.FleetBackoff(options["max_backoff_ns"], int(self.member_id, 16))
        return StoreThread(self._redis, self._urls, self._cluster, self._tls, options["store_timeout_ns"], backoff)

    @property
    def last_error(self) -> Optional[str]:
        """Why the store was last given up on (a failed or slow command, a dropped
        connection), for logs; None until then."""
        return self._thread.last_error

    @property
    def connected(self) -> bool:
        """The store answers (its session is up)."""
        return self._thread.up

    @property
    def warning(self) -> Optional[str]:
        """Why this store may break fleet mode's bound of K probes, as found when the
        session began (also logged once): its eviction policy may evict the probe lease (an
        ``allkeys-*`` ``maxmemory-policy`` with a ``maxmemory`` limit). None if it keeps the
        lease, or does not let this user read its config (``CONFIG GET``)."""
        return self._thread.warning

    def join(self, name: str, breaker: _native.Breaker) -> Fleet:
        """Makes ``breaker`` (a ``CircuitBreaker`` with ``fleet_quorum``) a member of fleet
        ``name`` (1-128 characters of ``A-Z a-z 0-9 . _ - :``). Refused for a breaker that
        is a member already and for a fleet this store has a member of (one breaker per
        fleet and process: a second would share its member id, lease and votes)."""
        if self._closed:
            raise RuntimeError("the store is closed")
        if not isinstance(breaker, _native.Breaker):
            raise option_error(TypeError, "breaker", f"breaker must be a tripgate.CircuitBreaker, not {type(breaker).__name__}")
        _check_name(name)
        with self._names_lock:
            if name in self._fleets:
                raise option_error(
                    ValueError,
                    "name",
                    f"this store has a member of fleet {name!r} already (one breaker per fleet and process)",
                )
            fleet = Fleet(self, self._member(name, breaker))
            self._fleets[name] = fleet
        self._thread.request("join", fleet._entry)
        return fleet

    def _member(self, name: str, breaker: _native.Breaker) -> Entry:
        member = _native.FleetMember(breaker, name, self.member_id, self._reconcile_ns, self._key, sharded=self._cluster)
        member.join(self._thread.waker)
        return Entry(name, member)

    def join_registry(self, registry: Registry) -> List[Fleet]:
        """Joins every breaker of a ``tripgate.Registry`` that has ``fleet_quorum``, each to
        the fleet of its name in the registry; the others are left alone. All or none: a
        name or a breaker that cannot join raises, and the ones joined before it leave
        again. Breakers the registry makes later join with ``join``. Returns the
        ``Fleet``s."""
        pairs = [(name, breaker) for name, breaker in registry.items() if breaker.fleet_status()["enabled"]]
        for name, _ in pairs:
            _check_name(name)
        joined: List[Fleet] = []
        try:
            for name, breaker in pairs:
                joined.append(self.join(name, breaker))
        except BaseException:
            for fleet in joined:
                fleet.leave()
            raise
        return joined

    def close(self, timeout: Optional[float] = None) -> None:
        """Leaves every fleet (the breakers go on as local ones, leases are given back)
        and closes the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _STORES.discard(self)
        self._thread.stop(timeout)

    def __enter__(self) -> FleetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<FleetStore {_fleet_redis.redact(self._url)!r} member {self.member_id} {'up' if self._thread.up else 'down'}>"

    def _leave(self, entry: Entry) -> None:
        if entry.left:
            return
        entry.left = True
        entry.ready.clear()
        entry.member.leave()
        # Queued before the name is free: a join of the same fleet that follows subscribes
        # after this leave unsubscribes.
        self._thread.request("leave", entry)
        with self._names_lock:
            fleet = self._fleets.get(entry.name)
            if fleet is not None and fleet._entry is entry:
                del self._fleets[entry.name]

    def _forked(self) -> None:
        """In a child just forked: the parent's thread is not here and its connections are
        the parent's. The child gets a thread and connections of its own, and each fleet
        joined a member made anew (fresh protocol state; the breaker deciding alone until
        the child's store answers). The parent's sockets are closed in the child, never
        used, never shut down."""
        # A lock a parent's thread held at the fork is held for good here.
        self._names_lock = threading.Lock()
        if self._closed:
            return
        old = self._thread
        if not self._named:
            self.member_id = _random_member_id()
        self._thread = self._start_thread()
        for fleet in list(self._fleets.values()):
            entry = fleet._entry
            if entry.left:
                continue
            entry.member.forked()
            fleet._entry = self._member(entry.name, entry.member.breaker)
            self._thread.request("join", fleet._entry)
        old.forsake()


def _check_name(name: object) -> None:
    if not _native.fleet_valid_name(name):
        kind = ValueError if isinstance(name, str) else TypeError
        raise option_error(kind, "name", f"name must be 1-128 characters of A-Z a-z 0-9 . _ - : (got {name!r:.60})")


def _random_member_id() -> str:
    # Never all zeros: the wire's ids are not 0.
    return secrets.token_hex(8).replace("0000000000000000", "0000000000000001")


_TOKEN = object()
# Every store of the process not closed, for a forked child to carry on with (a store's
# thread runs until close(), whether or not its store is still referenced).
_STORES: Set[FleetStore] = set()


# The stores whose threads a fork in progress holds between turns.
_HELD: List[FleetStore] = []


def _before_fork() -> None:
    # A thread copied into the child mid-turn could leave it a module half imported (the
    # parent's first connect imports lazily) or a lock held for good: the fork waits for
    # each store's thread to finish its turn (at most a store timeout).
    for store in list(_STORES):
        if store._thread.hold():
            _HELD.append(store)


def _after_fork_in_parent() -> None:
    while _HELD:
        _HELD.pop()._thread.release()


def _after_fork_in_child() -> None:
    # The parent's threads are not here: what they held is the forsaken threads' own.
    _HELD.clear()
    for store in list(_STORES):
        store._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
