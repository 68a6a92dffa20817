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
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import heapq
import itertools
import logging
import re
import secrets
import selectors
import threading
import time
import types
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple, Type, TypeVar

from . import _native

if TYPE_CHECKING:
    from .registry import Registry

__all__ = ["FleetStore", "Fleet", "FleetStatus"]

_log = logging.getLogger("tripgate")
_E = TypeVar("_E", bound=Exception)

_SCRIPTS = {name: text.encode() for name, text in _native.fleet_scripts().items()}
# Script names, not secrets: the hash Redis keys its script cache by.
_SHAS = {name: hashlib.sha1(text, usedforsecurity=False).hexdigest() for name, text in _SCRIPTS.items()}
_slots = itertools.count(1)


def _error(kind: Type[_E], option: str, message: str) -> _E:
    error = kind(message)
    error.option = option  # type: ignore[attr-defined]
    return error


def _redact(text: object) -> str:
    """A URL (or a message that quotes one) with any password replaced."""
    return re.sub(r"(\w+://[^:@/\s]*):[^@/\s]*@", r"\1:***@", str(text))


def _redis() -> types.ModuleType:
    try:
        # An optional dependency, loaded when used.
        import redis  # noqa: PLC0415
        import redis.backoff  # noqa: PLC0415
        import redis.connection  # noqa: PLC0415
        import redis.exceptions  # noqa: PLC0415
        import redis.retry  # noqa: PLC0415
    except ImportError as error:
        raise ImportError(
            "tripgate.fleet needs redis-py: pip install 'tripgate[redis]'"
        ) from error
    return redis


def _check_url(redis: types.ModuleType, url: object) -> None:
    if not isinstance(url, str):
        raise _error(TypeError, "url", f"url must be a str such as redis://127.0.0.1:6379, not {type(url).__name__}")
    try:
        parsed = redis.connection.parse_url(url)
    except ValueError as error:
        raise _error(ValueError, "url", f"url {_redact(url)!r} does not parse: {error}") from None
    db = parsed.get("db", 0)
    if db not in (0, "0"):
        raise _error(
            ValueError,
            "url",
            f"url names database {db}: fleet mode runs on database 0 only (Redis pub/sub "
            "ignores the database, so fleets on two databases would hear each other); give "
            "each environment its own server or fleet names",
        )


def _refused(redis: types.ModuleType, error: BaseException) -> bool:
    """Whether Redis refused a command for what a key holds (``ERR``, ``WRONGTYPE``): the
    store is up, holding bad data. Anything else (unreachable, slow, read-only, out of
    memory, denied by its ACL) is an outage."""
    if type(error) is not redis.exceptions.ResponseError:
        return False
    text = str(error)
    code: Optional[str] = getattr(error, "status_code", None)
    if code is not None:
        return code == "ERR"
    if text.startswith("WRONGTYPE"):
        return True
    # redis-py drops an ``ERR`` prefix and keeps every other error code.
    first = text.split(" ", 1)[0]
    return not (first.isupper() and first.isalpha())


@dataclasses.dataclass(frozen=True)
class FleetStatus:
    """A member now. ``connected``: the store answers, the fleet's channel is subscribed
    and its keys were read back (the breaker follows the fleet); ``degraded``: the
    opposite (the breaker decides alone). ``connects`` and ``disconnects`` count the
    store's sessions. ``counts``: what the member protocol counted (``received``,
    ``applied``, ``published``, ``reconciles``, ``leases``, ``repairs``, ``refused``, and
    ``ignored`` by reason: ``garbage``, ``wrong-fleet``, ``unsigned``, ``forged``,
    ``stale``, ``malformed-generation``)."""

    member_id: str
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


class _Entry:
    __slots__ = ("slot", "name", "member", "fleet", "channel", "scheduled", "subscribing", "left", "ready")

    def __init__(self, name: str, member: _native.FleetMember) -> None:
        self.slot = next(_slots)
        self.name = name
        self.member = member
        self.fleet: Optional[Fleet] = None
        self.channel = member.keys["channel"].encode()
        self.scheduled: Optional[int] = None
        # When the subscription's confirmation is due (the adapter's ns), while waited for.
        self.subscribing: Optional[int] = None
        self.left = False
        self.ready = threading.Event()


class Fleet:
    """A breaker's membership of a fleet (``store.join(name, breaker)``)."""

    def __init__(self, store: FleetStore, entry: _Entry) -> None:
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
            name=entry.name,
            connected=connected,
            degraded=not connected,
            lease_held=member.lease_held and not entry.left,
            connects=store._connects,
            disconnects=store._disconnects,
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
        url: str,
        *,
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
        - ``key``: the shared HMAC key (bytes or str, at least 16 bytes): messages and
          votes are signed, and unsigned or forged ones ignored.
        - ``member``: this process's stable name (a pod or host name), from which its
          member id is derived, so a restarted process keeps its vote; default random.
        - ``reconcile_interval`` (1 s), ``store_timeout`` (0.25 s), ``max_backoff`` (1 s):
          seconds, within the core's bounds.
        - ``tls_root_cert``: for ``rediss://``, the PEM certificate (str or bytes) of the
          CA that signed the server's, when the system's roots do not trust it."""
        redis = _redis()
        _check_url(redis, url)
        tls: Dict[str, str] = {}
        if tls_root_cert is not None:
            if not isinstance(tls_root_cert, (str, bytes)):
                raise _error(TypeError, "tls_root_cert", f"tls_root_cert must be PEM text (str or bytes), not {type(tls_root_cert).__name__}")
            if not url.startswith("rediss://"):
                raise _error(ValueError, "tls_root_cert", "tls_root_cert is only for rediss:// URLs")
            pem = tls_root_cert.decode("ascii", "replace") if isinstance(tls_root_cert, bytes) else tls_root_cert
            tls["ssl_ca_data"] = pem
        options = _native.fleet_options(
            reconcile_interval=reconcile_interval,
            store_timeout=store_timeout,
            max_backoff=max_backoff,
            key=key,
            member=member,
        )
        return cls(redis, url, options, tls, _token=_TOKEN)

    def __init__(self, redis: types.ModuleType, url: str, options: Dict[str, Any], tls: Dict[str, str], *, _token: object = None) -> None:
        if _token is not _TOKEN:
            raise TypeError("use FleetStore.connect(url, ...)")
        self._redis = redis
        self._url = url
        self._tls = tls
        self._key = options["key"]
        # Without a stable name, a random id (never all zeros: the wire's ids are not 0).
        self.member_id: str = options["member_id"] or secrets.token_hex(8).replace("0000000000000000", "0000000000000001")
        self._reconcile_ns: int = options["reconcile_interval_ns"]
        self._timeout_ns: int = options["store_timeout_ns"]
        self._backoff = _native.FleetBackoff(options["max_backoff_ns"], int(self.member_id, 16))
        self._waker = _native.FleetWaker()
        self._requests: collections.deque[Tuple[str, Any]] = collections.deque()  # (kind, entry or None)
        self._names: Set[str] = set()
        self._names_lock = threading.Lock()
        self._members: Dict[int, _Entry] = {}
        self._channels: Dict[bytes, _Entry] = {}
        self._timers: List[Tuple[int, int, _Entry]] = []
        self._seq = itertools.count()
        self._client: Any = None
        self._pubsub: Any = None
        self._pubsub_sock: Any = None
        self._up = False
        self._retry_at = 0
        self._connects = 0
        self._disconnects = 0
        self._last_error: Optional[str] = None
        self._closed = False
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._waker.fileno(), selectors.EVENT_READ, "wake")
        self._thread = threading.Thread(target=self._run, name="tripgate-fleet", daemon=True)
        self._thread.start()

    @property
    def last_error(self) -> Optional[str]:
        """Why the store was last given up on (a failed or slow command, a dropped
        connection), for logs; None until then."""
        return self._last_error

    @property
    def connected(self) -> bool:
        """The store answers (its session is up)."""
        return self._up

    def join(self, name: str, breaker: _native.Breaker) -> Fleet:
        """Makes ``breaker`` (a ``CircuitBreaker`` with ``fleet_quorum``) a member of fleet
        ``name`` (1-128 characters of ``A-Z a-z 0-9 . _ - :``). Refused for a breaker that
        is a member already and for a fleet this store has a member of (one breaker per
        fleet and process: a second would share its member id, lease and votes)."""
        if self._closed:
            raise RuntimeError("the store is closed")
        if not isinstance(breaker, _native.Breaker):
            raise _error(TypeError, "breaker", f"breaker must be a tripgate.CircuitBreaker, not {type(breaker).__name__}")
        if not _native.fleet_valid_name(name):
            kind = ValueError if isinstance(name, str) else TypeError
            raise _error(kind, "name", f"name must be 1-128 characters of A-Z a-z 0-9 . _ - : (got {name!r:.60})")
        with self._names_lock:
            if name in self._names:
                raise _error(
                    ValueError,
                    "name",
                    f"this store has a member of fleet {name!r} already (one breaker per fleet and process)",
                )
            member = _native.FleetMember(breaker, name, self.member_id, self._reconcile_ns, self._key)
            member.join(self._waker)
            self._names.add(name)
        entry = _Entry(name, member)
        entry.fleet = Fleet(self, entry)
        self._request("join", entry)
        return entry.fleet

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
        self._request("close", None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout if timeout is not None else 5 * self._timeout_ns / 1e9 + 1)

    def __enter__(self) -> FleetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<FleetStore {_redact(self._url)!r} member {self.member_id} {'up' if self._up else 'down'}>"

    # ---- requests from other threads --------------------------------------------------

    def _request(self, kind: str, entry: Optional[_Entry]) -> None:
        self._requests.append((kind, entry))
        self._waker.wake()

    def _leave(self, entry: _Entry) -> None:
        if entry.left:
            return
        entry.left = True
        entry.ready.clear()
        entry.member.leave()
        # Queued before the name is free: a join of the same fleet that follows subscribes
        # after this leave unsubscribes.
        self._request("leave", entry)
        with self._names_lock:
            self._names.discard(entry.name)

    # ---- the thread ----------------------------------------------------------------------

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
        False once the store is closed."""
        self._waker.drain()
        while self._requests:
            kind, entry = self._requests.popleft()
            if kind == "close":
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
        self._timers_due(time.monotonic_ns())
        self._selector.select(self._wait())
        return True

    def _wait(self) -> Optional[float]:
        """Seconds until the next deadline, reconnect or subscription check; None: none."""
        at = []
        if self._timers:
            at.append(self._timers[0][0])
        if self._client is None:
            at.append(self._retry_at)
        at.extend(e.subscribing for e in self._members.values() if e.subscribing is not None)
        if not at:
            return None
        return max(0.0, (min(at) - time.monotonic_ns()) / 1e9)

    def _enter(self, entry: _Entry) -> None:
        if entry.left:
            return
        self._members[entry.slot] = entry
        self._channels[entry.channel] = entry
        if self._up:
            self._subscribe(entry)

    def _forget(self, entry: _Entry) -> None:
        self._members.pop(entry.slot, None)
        if self._channels.get(entry.channel) is entry:
            del self._channels[entry.channel]
        entry.scheduled = None
        release = entry.member.leave_command()
        if not self._up:
            return
        try:
            self._pubsub.unsubscribe(entry.channel)
            if release is not None:
                self._call(release[2])
        except Exception as error:  # noqa: BLE001 - its last words: nobody waits for them
            if not isinstance(error, self._redis.exceptions.ResponseError):
                self._lost(error)

    def _shut(self) -> None:
        while self._requests:
            kind, entry = self._requests.popleft()
            if kind == "join":
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
            self._client = redis.Redis.from_url(
                self._url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                # Reconnects are the member's: with its backoff, and a read back first.
                retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
                health_check_interval=0,
                **self._tls,
            )
            self._client.ping()
        except Exception as error:  # noqa: BLE001 - any failure is the store down
            self._down(error)
            return
        self._pubsub = self._client.pubsub()
        self._up = True
        self._connects += 1
        self._backoff.up(time.monotonic_ns())
        for entry in list(self._members.values()):
            self._subscribe(entry)

    def _subscribe(self, entry: _Entry) -> None:
        if not self._up:
            return
        try:
            self._pubsub.subscribe(entry.channel)
        except Exception as error:  # noqa: BLE001
            self._lost(error)
            return
        entry.subscribing = time.monotonic_ns() + self._timeout_ns
        sock = getattr(self._pubsub.connection, "_sock", None)
        if sock is not None and sock is not self._pubsub_sock:
            if self._pubsub_sock is not None:
                self._selector.unregister(self._pubsub_sock)
            self._selector.register(sock, selectors.EVENT_READ, "pubsub")
            self._pubsub_sock = sock

    def _subscriptions_due(self, now: int) -> None:
        for entry in list(self._members.values()):
            if entry.subscribing is not None and now >= entry.subscribing:
                self._lost(TimeoutError("the store did not confirm a subscription within store_timeout"))
                return

    def _pump(self) -> None:
        """Every message the pub/sub connection holds (buffered ones included, so that the
        select that follows waits only for new ones). A message is read only once some of
        it is there, and then within ``store_timeout``: a long one may arrive in parts."""
        while self._up and self._pubsub is not None and self._pubsub_sock is not None:
            try:
                if not self._pubsub.connection.can_read(timeout=0):
                    return
                message = self._pubsub.get_message(timeout=self._timeout_ns / 1e9)
            except Exception as error:  # noqa: BLE001
                self._lost(error)
                return
            if message is None:
                return
            entry = self._channels.get(message.get("channel"))
            if entry is None:
                continue
            kind = message.get("type")
            if kind == "message":
                self._step(entry, "message", message["data"])
            elif kind == "subscribe" and entry.subscribing is not None:
                entry.subscribing = None
                self._step(entry, "up")

    def _lost(self, error: BaseException) -> None:
        """The session is over: every member decides locally, and the store is tried again
        after the core's backoff (which a session that failed at once does not restart)."""
        if self._client is not None:
            self._down(error)

    def _down(self, error: BaseException) -> None:
        self._last_error = _redact(f"{type(error).__name__}: {error}")
        if self._up:
            self._disconnects += 1
        now = time.monotonic_ns()
        self._retry_at = now + self._backoff.down(now)
        self._drop()
        for entry in list(self._members.values()):
            entry.subscribing = None
            self._step(entry, "down")

    def _drop(self) -> None:
        self._up = False
        if self._pubsub_sock is not None:
            try:
                self._selector.unregister(self._pubsub_sock)
            except (KeyError, ValueError):
                pass
            self._pubsub_sock = None
        for closing in (self._pubsub, self._client):
            if closing is not None:
                try:
                    closing.close()
                except Exception:  # noqa: BLE001, S110 - closed already, or never opened
                    pass
        self._pubsub = None
        self._client = None

    def _call(self, call: Tuple[str, Tuple[str, ...], Tuple[Any, ...]]) -> Any:
        script, keys, args = call
        client = self._client
        if script == "INCR":
            return client.execute_command("INCR", *keys)
        try:
            return client.execute_command("EVALSHA", _SHAS[script], len(keys), *keys, *args)
        except self._redis.exceptions.NoScriptError:
            return client.execute_command("EVAL", _SCRIPTS[script], len(keys), *keys, *args)

    # ---- members -----------------------------------------------------------------------

    def _step(self, entry: _Entry, kind: str, data: Any = None) -> None:
        """Feeds ``kind`` to a member's protocol and runs the commands it asks for, one at
        a time, until it asks for none; then books its deadline."""
        if entry.left:
            return
        member = entry.member
        command = member.step(kind, time.monotonic_ns(), data)
        while command is not None and self._up:
            try:
                reply = self._call(command[2])
            except Exception as error:  # noqa: BLE001
                if not _refused(self._redis, error):
                    self._lost(error)
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


_TOKEN = object()
