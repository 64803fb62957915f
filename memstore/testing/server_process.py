"""A real `memstore serve` subprocess on 127.0.0.1 for tests and benchmarks.

>>> # with ServerProcess(tmp / "s.duckdb", config={"embedder": {"provider": "hashing"}}) as srv:
>>> #     m = srv.client(); m.add("I live in Lisbon", user_id="ana")
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from memstore.wire.discovery import live_server, read_token, server_file


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """Start `python -m memstore.cli serve` on `store`; `.url`, `.token`, `.client()`, `.kill()`."""

    def __init__(self, store: Any, *, config: dict[str, Any] | None = None, port: int | None = None,
                 args: list[str] | None = None, env: dict[str, str] | None = None, startup_s: float = 120.0) -> None:
        self.store = os.path.abspath(os.fspath(store))
        self.config = config
        self.port = port or free_port()
        self.args = list(args or [])
        self.env = env
        self.startup_s = startup_s
        self.proc: subprocess.Popen | None = None
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.store + ".server.log"

    def start(self) -> ServerProcess:
        os.makedirs(os.path.dirname(self.store), exist_ok=True)
        # test servers do their model work in-process unless a test asks for workers: a pool per
        # server would load spaCy once more per core in every server a test starts
        workers = [] if any(a.startswith("--workers") for a in self.args) else ["--workers", "0"]
        # and in one process (serve's default, --fronts auto, starts a front a core: slower to start,
        # and tests/test_fronts.py covers it); MEMSTORE_TEST_FRONTS=N runs the suite through fronts
        if not any(a.startswith(("--fronts", "--shard")) for a in self.args):
            workers += ["--fronts", os.environ.get("MEMSTORE_TEST_FRONTS") or "0"]
        cmd = [sys.executable, "-m", "memstore.cli", "serve", "--store", self.store, "--port", str(self.port),
               *workers, *self.args]
        if self.config is not None:
            cmd += ["--config", json.dumps(self.config)]
        env = {**os.environ, **(self.env or {})}
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memstore serve exited with {self.proc.returncode}:\n{self.log()}")
            if os.path.exists(server_file(self.store)) and live_server(self.store, timeout=1.0):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"memstore serve did not come up in {self.startup_s:.0f} s:\n{self.log()}")

    @property
    def token(self) -> str | None:
        return read_token(self.store)

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return fh.read()[-5000:]
        except OSError:
            return ""

    def client(self) -> Any:
        from memstore.api.http_client import MemoryClient

        return MemoryClient(self.url, token=self.token, store=self.store)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (graceful: the server commits what is queued and removes its announcement)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: no clean-up at all (the announcement file stays behind, stale)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self._log.close()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
