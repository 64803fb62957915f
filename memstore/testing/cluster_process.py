"""A real cluster on 127.0.0.1 for tests and benchmarks: N `memstore serve --shard i/N` subprocesses
and one HAProxy (the Debian package) with the config `memstore cluster haproxy` prints.

>>> # with ClusterProcess(tmp, shards=3, config={"embedder": {"provider": "hashing"}}) as c:
>>> #     m = c.client(); m.add("I live in Lisbon", user_id="ana")
"""
from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from memstore.testing.server_process import ServerProcess, free_port


def haproxy_available() -> bool:
    """True when the `haproxy` binary is installed."""
    return shutil.which("haproxy") is not None


class ClusterProcess:
    """Shard servers `shard{i}.duckdb` under `root` and an HAProxy in front; `.url`, `.token`, `.client()`."""

    def __init__(self, root: Any, *, shards: int = 3, config: dict[str, Any] | None = None,
                 token: str | None = None, check_interval_ms: int = 300,
                 shard_args: list[str] | None = None) -> None:
        self.root = Path(root)
        self.shard_args = list(shard_args or [])       # more `memstore serve` arguments for every shard
        self.config = config
        self.token = token or secrets.token_urlsafe(24)
        self.check_interval_ms = check_interval_ms
        self.servers: list[ServerProcess] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.haproxy: subprocess.Popen | None = None
        self._n = shards

    # -- shards ------------------------------------------------------------------------------------
    def shard_store(self, i: int) -> Path:
        return self.root / f"shard{i}.duckdb"

    def make_shard(self, i: int, n: int, port: int | None = None) -> ServerProcess:
        """A (not yet started) server for shard i of n on its store file."""
        return ServerProcess(self.shard_store(i), config=self.config, port=port,
                             args=["--shard", f"{i}/{n}", *self.shard_args],
                             env={"MEMSTORE_TOKEN": self.token})

    def start_shards(self, n: int) -> None:
        """Start shards 0..n-1 side by side (each waits for its own server to answer)."""
        from concurrent.futures import ThreadPoolExecutor

        procs = [self.make_shard(i, n) for i in range(n)]
        with ThreadPoolExecutor(n) as pool:
            list(pool.map(lambda p: p.start(), procs))
        self.servers = procs

    def restart_shards(self, indexes: list[int], n: int) -> None:
        """`restart_shard` for several shards side by side."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(indexes)) as pool:
            list(pool.map(lambda i: self.restart_shard(i, n), indexes))

    def restart_shard(self, i: int, n: int | None = None) -> ServerProcess:
        """Stop shard i (if running) and start it again on the same port, as shard i of `n`."""
        old = self.servers[i]
        old.stop()
        new = self.make_shard(i, n or len(self.servers), port=old.port).start()
        self.servers[i] = new
        return new

    def kill_shard(self, i: int) -> None:
        """kill -9 of shard i's server."""
        self.servers[i].kill()

    # -- balancer ------------------------------------------------------------------------------------
    def config_text(self) -> str:
        from memstore.cluster.haproxy import haproxy_config

        return haproxy_config([s.url for s in self.servers], bind=f"127.0.0.1:{self.port}",
                              check_interval_ms=self.check_interval_ms)

    def start_balancer(self) -> None:
        """Start HAProxy, or reload it with the current shard list (`-sf`: the old one finishes its requests)."""
        cfg = self.root / "haproxy.cfg"
        cfg.write_text(self.config_text(), encoding="utf-8")
        old = self.haproxy
        cmd = ["haproxy", "-f", str(cfg)] + (["-sf", str(old.pid)] if old is not None else [])
        log = open(self.root / "haproxy.log", "ab")
        self.haproxy = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        self.wait_ready()
        if old is not None:
            try:
                old.wait(30)
            except subprocess.TimeoutExpired:
                old.kill()

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the balancer answers with the current shard count and every shard passes its check."""
        from memstore.api.cluster_client import cluster_layout

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            layout = cluster_layout(self.url, timeout=1.0)
            if layout and layout["shards"] == len(self.servers) and self._all_up():
                return
            time.sleep(0.1)
        raise RuntimeError(f"balancer at {self.url} not ready:\n{(self.root / 'haproxy.log').read_text()[-3000:]}")

    def _all_up(self) -> bool:
        from memstore.wire.transport import Transport, TransportError

        t = Transport(self.url, timeout=2.0)
        try:
            for i in range(len(self.servers)):
                status, _, _ = t.request("GET", "/health", headers={"X-Memstore-Shard": str(i)})
                if status != 200:
                    return False
            return True
        except TransportError:
            return False
        finally:
            t.close()

    def client(self) -> Any:
        from memstore.api.connect import connect

        return connect(self.url, token=self.token)

    def start(self) -> ClusterProcess:
        self.root.mkdir(parents=True, exist_ok=True)
        self.start_shards(self._n)
        self.start_balancer()
        return self

    def stop(self) -> None:
        if self.haproxy is not None and self.haproxy.poll() is None:
            self.haproxy.terminate()
            try:
                self.haproxy.wait(10)
            except subprocess.TimeoutExpired:
                self.haproxy.kill()
        for s in self.servers:
            s.stop()

    def __enter__(self) -> ClusterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
