"""A real three-master Redis Cluster for the fleet tests: three redis-servers
(redisserver.py) with ``--cluster-enabled yes``, joined by ``redis-cli --cluster create``,
each node's config in a temporary folder so a restarted node rejoins as itself."""

import shutil
import subprocess
import time

import pytest

from redisserver import RedisServer, free_port


def bus_port_free():
    """A free port whose cluster bus port (10 000 above it) is a port too."""
    while True:
        port = free_port()
        if port + 10_000 <= 65_535:
            return port


class RedisCluster:
    def __init__(self, folder):
        cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
        self.nodes = []
        for i in range(3):
            config = folder / f"nodes-{i}.conf"
            self.nodes.append(RedisServer(
                "--cluster-enabled", "yes", "--cluster-config-file", config, "--cluster-node-timeout", "1000",
                port=bus_port_free(),
            ))
        addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
        made = subprocess.run(
            [cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True, text=True, timeout=60,
        )
        if made.returncode != 0:
            self.stop()
            pytest.fail(f"redis-cli --cluster create failed: {made.stdout[-500:]} {made.stderr[-500:]}")
        self.wait_ok()

    @property
    def urls(self):
        return [n.url for n in self.nodes]

    def ok(self):
        try:
            return all(b"cluster_state:ok" in n.client().execute_command("CLUSTER", "INFO") for n in self.nodes)
        except Exception:  # noqa: BLE001 - a node still starting
            return False

    def wait_ok(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not self.ok():
            if time.monotonic() > deadline:
                pytest.fail(f"the cluster was not ok within {timeout} s")
            time.sleep(0.05)

    def node_of(self, key):
        """The node (a RedisServer) serving ``key``'s slot."""
        slot = self.nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key)
        for start, end, master, *_ in self.nodes[0].client().execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                port = master[1]
                return next(n for n in self.nodes if n.port == port)
        raise AssertionError(f"no master serves slot {slot}")

    def stop(self):
        for n in self.nodes:
            n.kill()
