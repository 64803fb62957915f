"""A served store under load while its file is rewritten (issue 44): N client threads doing search /
add / delete through HTTP while one thread runs `forget` and `scrub` (each rewrites the file and
reopens the connection) in a loop. Used by tests/test_erasure_under_load.py and
bench/erasure_under_load.py.

Every answer must be a success or a typed retryable error (409 StoreBusyError / 503
ServerUnavailableError, with `retry_after`); every add answered 200 must still be there afterwards
unless it was deleted or its scope forgotten.
"""
from __future__ import annotations

import collections
import http.client
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from memstore.testing.server_process import ServerProcess

CONFIG = {"embedder": {"provider": "hashing"}}
RETRYABLE = {"StoreBusyError", "ServerUnavailableError"}


@dataclass
class LoadReport:
    """Answers by (route, status, error type), the ones that were neither success nor typed
    retryable, and the acknowledged adds that were lost."""

    counts: collections.Counter = field(default_factory=collections.Counter)
    bad: list[str] = field(default_factory=list)
    expected: int = 0
    lost: list[str] = field(default_factory=list)
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def note(self, route: str, status: int, body: bytes, headers: dict[str, str]) -> Any:
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        err = data.get("error") if isinstance(data, dict) and isinstance(data.get("error"), dict) else None
        kind = str(err.get("type")) if err else ""
        retryable = kind in RETRYABLE and status in (409, 503) and "retry-after" in headers
        with self.lock:
            self.counts[(route, status, kind)] += 1
            if not (status < 300 or retryable):
                self.bad.append(f"{route} {status} {kind}: {str((err or {}).get('message', body[:200]))[:300]}")
        return data

    def table(self) -> str:
        lines = [f"{'route':8} {'status':>6} {'error type':24} {'count':>7}"]
        for (route, status, kind), n in sorted(self.counts.items()):
            lines.append(f"{route:8} {status:>6} {kind or '-':24} {n:>7}")
        return "\n".join(lines)


def _call(port: int, token: str, method: str, path: str, body: Any, report: LoadReport, route: str) -> Any:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        con.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        resp = con.getresponse()
        return report.note(route, resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()})
    finally:
        con.close()


def preload(store: str, memories: int) -> None:
    """Other scopes' memories, so reads and the rewrite have something to chew on."""
    from memstore import Memory

    m = Memory(store, config=CONFIG)
    try:
        for u in range(20):
            m.add([{"role": "user", "content": f"background user {u} fact {i} about coffee and trains number {i}"}
                   for i in range(max(1, memories // 20))], user_id=f"bg{u}", infer=False)
    finally:
        m.close()


def run_load(store: str, *, clients: int = 8, seconds: float = 60.0, preload_memories: int = 3000,
             server_args: list[str] | None = None) -> LoadReport:
    """Serve `store`, drive it (see module doc) for `seconds`, check nothing acknowledged is lost."""
    if preload_memories and not os.path.exists(store):
        preload(store, preload_memories)
    report = LoadReport()
    acked: dict[str, str] = {}
    deleted: set[str] = set()
    forgotten: set[str] = set()
    lock = threading.Lock()
    with ServerProcess(store, config=CONFIG, args=server_args) as srv:
        token, port = srv.token or "", srv.port
        stop = time.monotonic() + seconds

        def client(n: int) -> None:
            rng = random.Random(n)
            i = 0
            while time.monotonic() < stop:
                i += 1
                user = f"u{n}-{rng.randrange(3)}"
                op = rng.random()
                if op < 0.45:
                    _call(port, token, "POST", "/search", {"query": f"fact {rng.randrange(50)}", "user_id": user},
                          report, "search")
                elif op < 0.85:
                    out = _call(port, token, "POST", "/v1/add", {"args": [f"{user} fact {i} about tea number {i}"],
                                                                 "kwargs": {"user_id": user, "infer": False}},
                                report, "add")
                    if isinstance(out, dict) and "error" not in out:
                        with lock:
                            acked.update({r["id"]: user for r in out.get("results", [])})
                else:
                    with lock:
                        mine = [k for k, u in acked.items() if u.startswith(f"u{n}-") and k not in deleted]
                    if mine:
                        mid = rng.choice(mine)
                        out = _call(port, token, "DELETE", f"/memories/{mid}", None, report, "delete")
                        if isinstance(out, dict) and "error" not in out:
                            with lock:
                                deleted.add(mid)

        def eraser() -> None:
            k = 0
            while time.monotonic() < stop:
                k += 1
                victim = f"victim{k}"
                _call(port, token, "POST", "/v1/add", {"args": [f"secret Zorblax{k} note"],
                                                       "kwargs": {"user_id": victim, "infer": False}}, report, "add")
                with lock:
                    forgotten.add(victim)
                _call(port, token, "POST", "/v1/forget", {"kwargs": {"user_id": victim}}, report, "forget")
                _call(port, token, "POST", "/v1/scrub", {}, report, "scrub")

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        threads.append(threading.Thread(target=eraser))
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        report.seconds = time.monotonic() - t0
        expected = {mid for mid, user in acked.items() if mid not in deleted and user not in forgotten}
        present: set[str] = set()
        for user in sorted(set(acked.values()) - forgotten):
            out = _call(port, token, "GET", f"/memories?user_id={user}&limit=100000", None, LoadReport(), "get_all")
            present |= {r["id"] for r in (out or {}).get("results", [])}
        report.expected, report.lost = len(expected), sorted(expected - present)
    return report
