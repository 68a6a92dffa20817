"""What fleet mode asks of redis-py (an optional dependency, loaded when a store is made):
the URL's check, the client's options, the one command a member asks for at a time (the
core's Lua scripts by hash, or ``INCR``), and how a failed command is read: Redis refusing
what a key holds, or the store down."""

from __future__ import annotations

import hashlib
import re
import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _native
from ._errors import option_error

SCRIPTS = {name: text.encode() for name, text in _native.fleet_scripts().items()}
# Script names, not secrets: the hash Redis keys its script cache by.
SHAS = {name: hashlib.sha1(text, usedforsecurity=False).hexdigest() for name, text in SCRIPTS.items()}

# A member's command: (script or "INCR", keys, arguments).
Call = Tuple[str, Tuple[str, ...], Tuple[Any, ...]]


def redact(text: object) -> str:
    """A URL (or a message that quotes one) with any password replaced."""
    return re.sub(r"(\w+://[^:@/\s]*):[^@/\s]*@", r"\1:***@", str(text))


def load() -> types.ModuleType:
    try:
        import redis  # noqa: PLC0415
        import redis.backoff  # noqa: PLC0415
        import redis.cluster  # noqa: PLC0415
        import redis.connection  # noqa: PLC0415
        import redis.exceptions  # noqa: PLC0415
        import redis.retry  # noqa: PLC0415
    except ImportError as error:
        raise ImportError(
            "tripgate.fleet needs redis-py: pip install 'tripgate[redis]'"
        ) from error
    return redis


def check_url(redis: types.ModuleType, url: object, option: str = "url") -> None:
    if not isinstance(url, str):
        raise option_error(TypeError, option, f"{option} must be a str such as redis://127.0.0.1:6379, not {type(url).__name__}")
    try:
        parsed = redis.connection.parse_url(url)
    except ValueError as error:
        raise option_error(ValueError, option, f"{option} {redact(url)!r} does not parse: {error}") from None
    db = parsed.get("db", 0)
    if db not in (0, "0"):
        raise option_error(
            ValueError,
            option,
            f"{option} {redact(url)!r} names database {db}: fleet mode runs on database 0 only (Redis pub/sub "
            "ignores the database, so fleets on two databases would hear each other); give "
            "each environment its own server or fleet names",
        )


def check_urls(redis: types.ModuleType, url: object, nodes: Optional[Sequence[str]]) -> List[str]:
    """The store's URLs: ``[url]``, or a cluster's ``nodes``, each checked."""
    if nodes is None:
        if url is None:
            raise option_error(TypeError, "url", "give url (one Redis) or nodes (a Redis Cluster's node URLs)")
        check_url(redis, url)
        return [str(url)]
    if url is not None:
        raise option_error(ValueError, "nodes", "give url or nodes, not both")
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence):
        raise option_error(TypeError, "nodes", f"nodes must be a list of node URLs, not {type(nodes).__name__}")
    if not nodes:
        raise option_error(ValueError, "nodes", "nodes must name at least one of the cluster's nodes")
    for node in nodes:
        check_url(redis, node, "nodes")
        if str(node).startswith("unix:"):
            raise option_error(ValueError, "nodes", f"a cluster's nodes are reached over TCP, not {redact(node)!r}")
    return [str(node) for node in nodes]


def tls_options(url: str, tls_root_cert: object) -> Dict[str, str]:
    """The client's TLS options for ``tls_root_cert`` (None: the system's roots)."""
    if tls_root_cert is None:
        return {}
    if not isinstance(tls_root_cert, (str, bytes)):
        raise option_error(TypeError, "tls_root_cert", f"tls_root_cert must be PEM text (str or bytes), not {type(tls_root_cert).__name__}")
    if not url.startswith("rediss://"):
        raise option_error(ValueError, "tls_root_cert", "tls_root_cert is only for rediss:// URLs")
    pem = tls_root_cert.decode("ascii", "replace") if isinstance(tls_root_cert, bytes) else tls_root_cert
    return {"ssl_ca_data": pem}


def client(redis: types.ModuleType, url: str, timeout: float, tls: Dict[str, str]) -> Any:
    """A client whose every command gives up after ``timeout`` seconds and never retries:
    reconnects are the member's, with its backoff and a read back first."""
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        health_check_interval=0,
        **tls,
    )


def cluster_client(redis: types.ModuleType, urls: List[str], timeout: float, tls: Dict[str, str]) -> Any:
    """A Redis Cluster client that finds the cluster from ``urls`` and reaches every node
    with the first URL's user, password and TLS; like ``client``, it never retries, and
    follows a slot that moved only once."""
    first = redis.connection.parse_url(urls[0])
    startup = []
    for url in urls:
        parsed = redis.connection.parse_url(url)
        startup.append(redis.cluster.ClusterNode(parsed.get("host", "127.0.0.1"), parsed.get("port", 6379)))
    auth = {k: first[k] for k in ("username", "password") if first.get(k)}
    if urls[0].startswith("rediss://"):
        auth["ssl"] = True
    return redis.cluster.RedisCluster(
        startup_nodes=startup,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        health_check_interval=0,
        **auth,
        **tls,
    )


def node_client(redis: types.ModuleType, cluster: Any, channel: str, timeout: float, tls: Dict[str, str], url: str) -> Any:
    """A plain client of the master serving ``channel``'s slot (for its sharded pub/sub),
    with the first URL's user, password and TLS."""
    node = cluster.get_node_from_key(channel)
    first = redis.connection.parse_url(url)
    auth = {k: first[k] for k in ("username", "password") if first.get(k)}
    if url.startswith("rediss://"):
        auth["ssl"] = True
    return redis.Redis(
        host=node.host,
        port=node.port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        health_check_interval=0,
        **auth,
        **tls,
    ), node.name


def refresh_slots(cluster: Any) -> None:
    """Reads a Redis Cluster's slot map anew (a slot moved to another master)."""
    cluster.nodes_manager.initialize()


def run(redis: types.ModuleType, client: Any, call: Call) -> Any:
    """Redis's raw reply to a member's command: a script by its hash, sent whole when the
    server's script cache does not have it."""
    script, keys, args = call
    if script == "INCR":
        return client.execute_command("INCR", *keys)
    try:
        return client.execute_command("EVALSHA", SHAS[script], len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        return client.execute_command("EVAL", SCRIPTS[script], len(keys), *keys, *args)


def error_reply(redis: types.ModuleType, error: BaseException) -> Optional[str]:
    """The store's error reply as it wrote it (``CODE detail``), for the core to read
    (``FleetMember.fault``); None for anything else (unreachable, slow: an outage).
    redis-py keeps the code of the errors it has a class for in ``status_code`` and drops
    it from the text."""
    if not isinstance(error, redis.exceptions.ResponseError):
        return None
    code: Optional[str] = getattr(error, "status_code", None)
    return f"{code} {error}" if code else str(error)


def eviction_warning(client: Any) -> Optional[str]:
    """The core's warning if the store's eviction policy may evict the probe lease; None if
    it keeps it, or does not let this user read its config (``CONFIG GET``)."""
    try:
        policy = _config(client, "maxmemory-policy")
        maxmemory = int(_config(client, "maxmemory"))
    except Exception:  # noqa: BLE001 - denied, unknown or odd: nothing known
        return None
    warning: Optional[str] = _native.fleet_eviction(policy, maxmemory)
    return warning


def _config(client: Any, name: str) -> str:
    reply = client.execute_command("CONFIG", "GET", name)
    # A cluster client answers for each node: any will do, they share a configuration.
    while isinstance(reply, dict) and name not in reply:
        reply = next(iter(reply.values()))
    if isinstance(reply, dict):
        reply = reply[name]
    elif isinstance(reply, (list, tuple)):
        reply = reply[1]
    return reply.decode() if isinstance(reply, bytes) else str(reply)
