"""`memstore serve --fronts N`: N front processes take the HTTP; the owner keeps the store.

    client ──HTTP──► front (×N, one listening socket) ── adds: validate, extract, spaCy, embed
                       │                                  searches: the query's vector
                       ├─ pickle over a Unix socket ──► owner: auth, group commit, search
                       └─ other routes, byte for byte ─► owner's own app on a Unix socket

The owner process (the only one with the store file open) binds the TCP socket, starts the fronts
with it (they all accept on it: memstore/server/front_app.py) and serves its full FastAPI app on a
Unix socket next to the store, for what the fronts pass on unchanged (MCP, uploads, analyst routes,
/docs, /health, the LangGraph store routes...). The hot routes, `POST /v1/add` and `POST
/v1/search`, cost the owner two small messages an add and one a search (`OwnerDoor`,
memstore/server/owner_rpc.py): the token is verified once per call against the token table, so a
scoped token is confined and a revoked one refused from its next call, exactly as on the owner's
own routes.

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
from collections.abc import Callable
from typing import Any

from memstore.api.stages import unpack_error
from memstore.core.errors import ConfigError, TokenRightsError
from memstore.core.identity import IDENTITY_KEYS
from memstore.server.front_search import SnapshotDoor
from memstore.server.owner_rpc import MESSAGES, Admit, Commit, Context, FailedRun, Forget, Ping, Reads, Search, Snap
from memstore.server.scoped_memory import Grant, GuardedMemory, confine

log = logging.getLogger(__name__)

FRONT_START_S = 300.0          # a front loads spaCy and the embedder before it accepts


class OwnerDoor:
    """What the owner answers its fronts: one handler per message class of
    memstore/server/owner_rpc.py (`HANDLERS`), each verifying the token it acts for once."""

    def __init__(self, memory: Any, access: Any, committer: Any) -> None:
        self.memory, self.access, self.committer = memory, access, committer
        self.stages = memory.stages                         # context, failed-run records: the store's
        self.snapshots = SnapshotDoor(memory)               # fronts search copies of hot scopes
        self.ops: Counter = Counter()                       # /health: messages answered, and their CPU (ms)
        self._ops_lock = threading.Lock()
        self._admitted: dict[int, Grant] = {}               # ticket -> the grant its add was admitted with
        self.handlers: dict[type, Callable[[Any], Any]] = {
            Admit: self._admit, Context: self._context, Commit: self._commit, Forget: self._forget,
            Search: self._search, Snap: self._snap, FailedRun: self._failed_run, Reads: self._reads, Ping: self._ping}
        assert set(self.handlers) == set(MESSAGES), "every owner message has a handler"

    def _guarded(self, authorization: str | None = None, *, grant: Grant | None = None) -> GuardedMemory:
        if grant is None:
            grant = self.access.verify(authorization)       # a revoked token is refused from its next call
        return GuardedMemory(self.memory, lambda: grant, on_tokens_changed=self.access.invalidate,
                             before_list_tokens=self.access.flush_use, door="front")

    def __call__(self, msg: Any) -> Any:
        handler = self.handlers.get(type(msg))
        if handler is None:
            raise ValueError(f"unknown request {type(msg).__name__} from a front process")
        name = type(msg).__name__.lower()
        cpu = time.thread_time()
        try:
            return handler(msg)
        finally:
            ms = (time.thread_time() - cpu) * 1e3
            with self._ops_lock:
                self.ops[name] += 1
                self.ops[f"{name}_ms"] += ms

    def _admit(self, msg: Admit) -> Any:
        guarded = self._guarded(msg.authorization)
        admitted = guarded.admit(msg.name, tuple(msg.args), msg.kwargs)
        if msg.name == "add" and self.committer is not None:
            ticket = self.committer.expect()                # the group commit waits a little for it
            with self._ops_lock:
                self._admitted[ticket] = guarded.grant      # Commit confines with it: one token check an add
            return admitted, ticket
        return admitted, None

    def _forget(self, msg: Forget) -> None:
        self._take_grant(msg.ticket)
        if self.committer is not None and msg.ticket is not None:
            self.committer.forget(msg.ticket)

    def _take_grant(self, ticket: int | None) -> Grant | None:
        if ticket is None:
            return None
        with self._ops_lock:
            return self._admitted.pop(ticket, None)

    def _search(self, msg: Search) -> Any:
        guarded = self._guarded(msg.authorization)
        args, kwargs = tuple(msg.args), dict(msg.kwargs)
        query = args[0] if args else kwargs.pop("query", None)
        return guarded.search_with_vector(msg.vector, query, *args[1:], **kwargs)

    def _snap(self, msg: Snap) -> Any:
        return self.snapshots.answer(self._guarded(msg.authorization), msg.args, msg.kwargs, msg.vector, msg.key,
                                     msg.held)

    def _commit(self, msg: Commit) -> Any:
        grant = self._take_grant(msg.ticket)
        try:
            guarded = self._guarded(msg.authorization, grant=grant)
            self._check_commit(guarded, msg.prepared)
        except BaseException:
            if self.committer is not None and msg.ticket is not None:
                self.committer.forget(msg.ticket)
            raise
        if self.committer is not None:
            return self.committer.commit(msg.prepared, msg.ticket)
        out = self.memory.commit_prepared([msg.prepared])[0]
        if isinstance(out, BaseException):
            raise out
        return out

    def _context(self, msg: Context) -> Any:
        return self.stages.context(msg.state)

    def _failed_run(self, msg: FailedRun) -> None:
        self.stages.failed(msg.state, unpack_error(msg.error))

    def _reads(self, msg: Reads) -> None:
        """What fronts answered from their snapshot copies, for the audit of reads."""
        reads = self.memory.read_log
        if reads is not None:
            reads.append(list(msg.rows))

    @staticmethod
    def _ping(msg: Ping) -> int:
        return os.getpid()

    @staticmethod
    def _check_commit(guarded: GuardedMemory, state: Any) -> None:
        """The add as admitted: a scoped token's scope and name, again, with the grant it was
        admitted with (a front is trusted with the prepared add, not with its scope)."""
        grant = guarded.grant
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
