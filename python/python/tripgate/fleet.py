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
        self._url = ",".join(urls)
        self._cluster = cluster
        self._key = options["key"]
        # Without a stable name, a random id (never all zeros: the wire's ids are not 0).
        self.member_id: str = options["member_id"] or secrets.token_hex(8).replace("0000000000000000", "0000000000000001")
        self._reconcile_ns: int = options["reconcile_interval_ns"]
        self._names: Set[str] = set()
        self._names_lock = threading.Lock()
        self._closed = False
        backoff = _native.FleetBackoff(options["max_backoff_ns"], int(self.member_id, 16))
        self._thread = StoreThread(redis, urls, cluster, tls, options["store_timeout_ns"], backoff)

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
        if not _native.fleet_valid_name(name):
            kind = ValueError if isinstance(name, str) else TypeError
            raise option_error(kind, "name", f"name must be 1-128 characters of A-Z a-z 0-9 . _ - : (got {name!r:.60})")
        with self._names_lock:
            if name in self._names:
                raise option_error(
                    ValueError,
                    "name",
                    f"this store has a member of fleet {name!r} already (one breaker per fleet and process)",
                )
            member = _native.FleetMember(
                breaker, name, self.member_id, self._reconcile_ns, self._key, sharded=self._cluster
            )
            member.join(self._thread.waker)
            self._names.add(name)
        entry = Entry(name, member)
        fleet = Fleet(self, entry)
        self._thread.request("join", entry)
        return fleet

    def join_registry(self, registry: Registry) -> List[Fleet]:
        """Joins every breaker of a ``tripgate.Registry`` that has ``fleet_quorum``, each to
        the fleet of its name in the registry; the others are left alone. Breakers the
        registry makes later join with ``join``. Returns the ``Fleet``s."""
        return [self.join(name, breaker) for name, breaker in registry.items() if breaker.fleet_status()["enabled"]]

    def close(self, timeout: Optional[float] = None) -> None:
        """Leaves every fleet (the breakers go on as local ones, leases are given back)
        and closes the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
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
            self._names.discard(entry.name)


_TOKEN = object()
