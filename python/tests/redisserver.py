"""A real redis-server for the fleet tests: Debian's binary (``REDIS_SERVER`` overrides it,
else ``PATH``, else /usr/bin), on a free port of 127.0.0.1, persistence off, killed at
the end. Also what the tests read back from it and what they wait for."""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

# What clients send (as FLEET.md § 14 counts them): a script's own commands are part of
# its one round trip.
SENT = ("evalsha", "eval", "script|load", "incr", "subscribe", "unsubscribe", "hello", "ping", "client|setinfo")


def binary():
    found = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
    if found is None and os.path.exists("/usr/bin/redis-server"):
        found = "/usr/bin/redis-server"
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            answer = s.recv(64)
    except OSError:
        return False
    return answer.startswith((b"+PONG", b"-NOAUTH"))


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


class RedisServer:
    def __init__(self, *extra, tls=None, port=None):
        """``tls``: ``(certificate, key)`` files: it then speaks TLS only (``rediss://``),
        not asking clients for certificates. ``port``: its port, else a free one."""
        self.binary = binary()
        if self.binary is None:
            pytest.fail("redis-server is not installed: apt-get install redis-server (scripts/test.sh does)")
        self.port = port or free_port()
        self.extra = [str(e) for e in extra]
        self.tls = tls is not None
        if self.tls:
            cert, key = tls
            self.extra += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(cert),
                           "--tls-key-file", str(key), "--tls-auth-clients", "no"]
        self.process = None
        self.restart()

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def restart(self):
        """(Re)starts it on the same port, empty, and waits until it answers."""
        self.kill()
        self.process = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no", *self.extra],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while not (accepts(self.port) if self.tls else ping(self.port)):
            if self.process.poll() is not None:
                pytest.fail(f"redis-server exited: {self.process.returncode}")
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server on port {self.port} did not answer within 5 s")
            time.sleep(0.01)

    def kill(self):
        """SIGKILL: no shutdown, as a crash would."""
        if self.process is not None:
            self.pause(False)
            self.process.kill()
            self.process.wait()
            self.process = None

    def pause(self, paused):
        """SIGSTOP or SIGCONT: a store that hangs."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)

    def commands_sent(self):
        info = self.client().info("commandstats")
        return sum(stats["calls"] for name, stats in info.items() if name.removeprefix("cmdstat_") in SENT)


def eventually(what, condition, timeout=5.0, detail=None):
    """Polls ``condition`` every millisecond until it holds: what Redis and the store's
    thread do takes real time. Fails with ``what`` (and ``detail()``) after ``timeout``
    seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for: {what}" + (f"\n{detail()}" if detail else ""))
        time.sleep(0.001)
