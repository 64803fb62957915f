"""`memstore serve --fronts N`: N front processes take the HTTP; the owner keeps the store.

    client ──HTTP──► front (×N, one listening socket) ── adds: validate, extract, spaCy, embed
                       │                                  searches: the query's vector
                       ├─ pickle over a Unix socket ──► owner: auth, group commit, search
                       └─ other routes, byte for byte ─► owner's own app on a Unix socket

The owner process (the only one with the store file open) binds the TCP socket, starts the fronts
with it (they all accept on it: memstore/server/front_app.py) and serves its full FastAPI app on a
Unix socket next to the store, for what the fronts pass on unchanged (MCP, uploads, analyst routes,
/docs, /health, the LangGraph store routes...). The hot routes, `POST /v1/add` and `POST
/v1/search`, cost the owner one or two small messages each (`OwnerDoor`, memstore/server/owner_rpc.py):
every one verified against the token table, so a scoped token is confined and a revoked one refused
at once, exactly as on the owner's own routes.

A front that dies (SIGKILL, out of memory) is started again; the requests it held fail on the
client with a broken connection (the client's ServerUnavailableError: retryable). A front writes
nothing: an add is committed by the owner in one transaction or not at all.
"""
from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

from memstore.core.errors import ConfigError, TokenRightsError
from memstore.core.identity import IDENTITY_KEYS
from memstore.pipeline.workers import unpack_error
from memstore.server.front_search import SnapshotDoor
from memstore.server.query_vectors import GivenVectors, given
from memstore.server.scoped_memory import GuardedMemory, confine

log = logging.getLogger(__name__)

FRONT_START_S = 300.0          # a front loads spaCy and the embedder before it accepts


class OwnerDoor:
    """What the owner answers its fronts (see memstore/server/owner_rpc.py for the messages)."""

    def __init__(self, memory: Any, access: Any, committer: Any) -> None:
        self.memory, self.access, self.committer = memory, access, committer
        rt = memory._rt
        if not isinstance(rt.embedder, GivenVectors):
            rt.embedder = GivenVectors(rt.embedder)         # searches take the query vector a front sent
        self.snapshots = SnapshotDoor(memory)               # fronts search copies of hot scopes
        self.ops: Counter = Counter()                       # /health: messages answered, and their CPU (ms)
        self._ops_lock = threading.Lock()

    def _guarded(self, authorization: str) -> GuardedMemory:
        grant = self.access.verify(authorization)           # every call: a revoked token is refused now
        return GuardedMemory(self.memory, lambda: grant, on_tokens_changed=self.access.invalidate,
                             before_list_tokens=self.access.flush_use, door="front")

    def __call__(self, msg: tuple) -> Any:
        cpu = time.thread_time()
        try:
            return self._answer(msg)
        finally:
            ms = (time.thread_time() - cpu) * 1e3
            with self._ops_lock:
                self.ops[msg[0]] += 1
                self.ops[f"{msg[0]}_ms"] += ms

    def _answer(self, msg: tuple) -> Any:
        op = msg[0]
        if op == "admit":
            _, authorization, name, args, kwargs = msg
            admitted = self._guarded(authorization).admit(name, tuple(args), kwargs)
            if name == "add" and self.committer is not None:
                return admitted, self.committer.expect()   # the group commit waits a little for it
            return admitted, None
        if op == "forget":
            if self.committer is not None:
                self.committer.forget(msg[1])
            return None
        if op == "search":
            _, authorization, args, kwargs, vector = msg
            guarded = self._guarded(authorization)
            with given(args[0] if args else kwargs.get("query"), vector):
                return guarded.search(*args, **kwargs)
        if op == "snap":
            _, authorization, args, kwargs, vector, key, held = msg
            return self.snapshots.answer(self._guarded(authorization), args, kwargs, vector, key, held)
        if op == "commit":
            _, authorization, state, ticket = msg
            try:
                self._check_commit(self._guarded(authorization), state)
            except BaseException:
                if self.committer is not None:
                    self.committer.forget(ticket)
                raise
            if self.committer is not None:
                return self.committer.commit(state, ticket)
            out = self.memory.commit_prepared([state])[0]
            if isinstance(out, BaseException):
                raise out
            return out
        if op == "context":
            from memstore.pipeline.add import prepare_text
            from memstore.pipeline.gather_context import gather_context

            return prepare_text(msg[1], self.memory._rt, steps=(gather_context,))
        if op == "failed_run":
            from memstore.pipeline.add import _record_failed_run

            _record_failed_run(msg[1], self.memory._rt, unpack_error(msg[2]))
            return None
        if op == "reads":           # what fronts answered from their snapshot copies (the audit of reads)
            reads = self.memory.read_log
            if reads is not None:
                reads.append(list(msg[1]))
            return None
        if op == "ping":
            return os.getpid()
        raise ValueError(f"unknown request {op!r} from a front process")

    @staticmethod
    def _check_commit(guarded: GuardedMemory, state: Any) -> None:
        """The add as admitted: a scoped token's scope and name, again (the token may have changed
        between `admit` and this commit; a front is trusted, the token is checked each time)."""
        grant = guarded._grant_of()
        if grant.admin:
            return
        if grant.read_only:
            raise TokenRightsError(f"token {grant.name!r} is read-only: add() changes the store",
                                   hint="make a read-write token for writes")
        confine({k: getattr(state.scope, k) for k in IDENTITY_KEYS}, grant.scope)
        state.actor_id = grant.actor


class FrontPool:
    """The front processes of one server: started on `sock`, watched, started again if one dies."""

    def __init__(self, n: int, sock: Any, *, config: Any, rpc_path: str, owner_http: str,
                 default_prompt: str | None = None, ssl_certfile: str | None = None,
                 ssl_keyfile: str | None = None, log_level: str = "warning") -> None:
        if n < 0:
            raise ConfigError(f"fronts is {n}", hint="give a whole number of front processes >= 0", key="fronts")
        self.n, self.sock = n, sock
        self.settings = {"config": config, "fd": sock.fileno(), "rpc": rpc_path, "owner_http": owner_http,
                         "default_prompt": default_prompt, "ssl_certfile": ssl_certfile, "ssl_keyfile": ssl_keyfile,
                         "log_level": log_level, "owner_pid": os.getpid()}
        self.replaced = 0
        self._procs: list[subprocess.Popen | None] = [None] * n
        self._stopping = False
        self._lock = threading.Lock()

    def start(self) -> list[int]:
        """Start every front and wait until each has loaded its models; returns their PIDs."""
        procs = [self._spawn() for _ in range(self.n)]
        for i, p in enumerate(procs):
            self._wait_ready(p)
            self._procs[i] = p
            threading.Thread(target=self._watch, args=(i, p), name=f"memstore-front-{i}", daemon=True).start()
        return self.pids()

    def pids(self) -> list[int]:
        return sorted(p.pid for p in self._procs if p is not None and p.poll() is None)

    def _spawn(self) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "memstore.server.front_app"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, pass_fds=(self.sock.fileno(),),
                                start_new_session=True)     # a terminal's Ctrl-C is the owner's: it stops us
        assert proc.stdin is not None
        proc.stdin.write(pickle.dumps(self.settings))
        proc.stdin.close()
        return proc

    def _wait_ready(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        line = proc.stdout.readline()          # the front says "ready" once it accepts
        if line.strip() != b"ready":
            proc.kill()
            raise ConfigError(f"a front process did not start (exit code {proc.wait()})",
                              hint="see the messages above; `memstore serve --fronts 0` runs without them")

    def _watch(self, i: int, proc: subprocess.Popen) -> None:
        while True:
            proc.wait()
            with self._lock:
                if self._stopping:
                    return
            log.warning("front process %s exited with %s; starting another", proc.pid, proc.returncode)
            while True:
                try:
                    nxt = self._spawn()
                    self._wait_ready(nxt)
                    break
                except (OSError, ConfigError) as exc:
                    log.warning("could not start a front process: %s", exc)
                    time.sleep(1.0)
                    with self._lock:
                        if self._stopping:
                            return
            with self._lock:
                if self._stopping:
                    nxt.terminate()
                    return
                self._procs[i] = proc = nxt
                self.replaced += 1

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM every front (uvicorn finishes what it holds), SIGKILL what is left."""
        with self._lock:
            self._stopping = True
            procs = [p for p in self._procs if p is not None]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def private_socket_dir() -> str:
    """A folder only this user can enter, for the owner's Unix sockets."""
    return tempfile.mkdtemp(prefix="memstore-owner-")
