"""A real three-master Redis Cluster for the fleet tests: three redis-servers
(redisserver.py) with ``--cluster-enabled yes``, joined by ``redis-cli --cluster create``,
each node's config in a temporary folder so a restarted node rejoins as itself. With
``replicas=1``, each master has a replica, and ``fail_over`` promotes one as an operator's
``CLUSTER FAILOVER`` does."""

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
    def __init__(self, folder, replicas=0):
        cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
        self.nodes = []
        for i in range(3 * (1 + replicas)):
            config = folder / f"nodes-{i}.conf"
            self.nodes.append(RedisServer(
                "--cluster-enabled", "yes", "--cluster-config-file", config, "--cluster-node-timeout", "1000",
                # A replica's full sync writes an RDB file: into the folder, not the tests'.
                "--dir", folder, "--dbfilename", f"dump-{i}.rdb",
                port=bus_port_free(),
            ))
        addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
        made = subprocess.run(
            [cli, "--cluster", "create", *addresses, "--cluster-replicas", str(replicas), "--cluster-yes"],
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

    def serving(self, key):
        """The master (a RedisServer) serving ``key``'s slot and its replicas, as the
        cluster tells it."""
        slot = self.nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key)
        for start, end, master, *replicas in self.nodes[0].client().execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                ports = [master[1], *(r[1] for r in replicas)]
                return [next(n for n in self.nodes if n.port == port) for port in ports]
        raise AssertionError(f"no master serves slot {slot}")

    def node_of(self, key):
        """The node (a RedisServer) serving ``key``'s slot."""
        return self.serving(key)[0]

    def fail_over(self, key, timeout=20.0):
        """Promotes a replica of ``key``'s master (``CLUSTER FAILOVER`` on it, as an
        operator does) and waits until every node agrees it serves the slot. The new
        master."""
        deadline = time.monotonic() + timeout
        while not self._replica_in_sync(key):
            if time.monotonic() > deadline:
                pytest.fail(f"no replica of {key}'s master was in sync within {timeout} s")
            time.sleep(0.05)
        old, replica, *_ = self.serving(key)
        replica.client().execute_command("CLUSTER", "FAILOVER")
        while True:
            try:
                agreed = all(self._master_port(n, key) == replica.port for n in self.nodes)
            except Exception:  # noqa: BLE001 - a node between roles
                agreed = False
            if agreed and self.ok():
                return replica
            if time.monotonic() > deadline:
                pytest.fail(f"the replica on {replica.port} did not take over from {old.port} within {timeout} s")
            time.sleep(0.05)

    def _replica_in_sync(self, key):
        serving = self.serving(key)
        if len(serving) < 2:
            return False
        role = serving[1].client().execute_command("ROLE")
        return role[0] == b"slave" and role[3] == b"connected"

    @staticmethod
    def _master_port(node, key):
        slot = node.client().execute_command("CLUSTER", "KEYSLOT", key)
        for start, end, master, *_ in node.client().execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                return master[1]
        return None

    def stop(self):
        for n in self.nodes:
            n.kill()
