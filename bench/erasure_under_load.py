"""Reads and writes while the store's file is rewritten under them (issue 44): one served store,
N client threads doing search / add / delete through HTTP while another thread runs `forget` and
`scrub` (each rewrites the file and reopens the connection) in a loop. Prints the answers by route
and status, the error types seen, and whether every acknowledged add is still there (unless its
scope was forgotten or it was deleted).

    python bench/erasure_under_load.py                    # 8 clients, 60 s
    python bench/erasure_under_load.py --clients 8 --seconds 20

Every answer must be a success or a typed retryable error (409 StoreBusyError / 503 with
`retry_after`); a 500, or a 4xx that blames the request, is a bug. Exit status 1 if one was seen or
an acknowledged memory was lost.
"""
from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore.testing.server_process import ServerProcess  # noqa: E402

CONFIG = {"embedder": {"provider": "hashing"}}
RETRYABLE = {"StoreBusyError", "ServerUnavailableError"}


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: collections.Counter = collections.Counter()
        self.bad: list[str] = []

    def note(self, route: str, status: int, body: bytes) -> dict | None:
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        err = data.get("error") if isinstance(data, dict) and isinstance(data.get("error"), dict) else None
        kind = err.get("type") if err else ""
        with self.lock:
            self.counts[(route, status, kind)] += 1
            ok = status < 300 or (kind in RETRYABLE and status in (409, 503))
            if not ok:
                self.bad.append(f"{route} {status} {kind}: {(err or {}).get('message', body[:200])!s:.300}")
        return data


def call(port: int, token: str, method: str, path: str, body: object | None, tally: Tally, route: str) -> dict | None:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        con.request(method, path, body=payload, headers={"Authorization": f"Bearer {token}",
                                                         "Content-Type": "application/json"})
        resp = con.getresponse()
        return tally.note(route, resp.status, resp.read())
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--store", default=None, help="store path (default: a temp folder)")
    ap.add_argument("--preload", type=int, default=3000, help="memories stored before serving (others' scopes)")
    args = ap.parse_args()
    store = args.store or os.path.join(tempfile.mkdtemp(prefix="memstore-erasure-load-"), "load.duckdb")
    if args.preload and not os.path.exists(store):
        from memstore import Memory

        m = Memory(store, config=CONFIG)
        for u in range(20):
            m.add([{"role": "user", "content": f"background user {u} fact {i} about coffee and trains number {i}"}
                   for i in range(args.preload // 20)], user_id=f"bg{u}", infer=False)
        m.close()
    tally = Tally()
    acked: dict[str, str] = {}            # memory id -> user, of adds answered 200 and not deleted
    deleted: set[str] = set()
    forgotten: set[str] = set()
    lock = threading.Lock()
    with ServerProcess(store, config=CONFIG) as srv:
        token, port = srv.token, srv.port
        stop = time.monotonic() + args.seconds

        def client(n: int) -> None:
            rng = random.Random(n)
            i = 0
            while time.monotonic() < stop:
                i += 1
                user = f"u{n}-{rng.randrange(3)}"
                op = rng.random()
                if op < 0.45:
                    call(port, token, "POST", "/search", {"query": f"fact {rng.randrange(50)}", "user_id": user},
                         tally, "search")
                elif op < 0.85:
                    out = call(port, token, "POST", "/v1/add", {"args": [f"{user} fact {i} about tea number {i}"],
                                                                "kwargs": {"user_id": user, "infer": False}},
                               tally, "add")
                    for r in (out or {}).get("results", []) if isinstance(out, dict) else []:
                        with lock:
                            acked[r["id"]] = user
                else:
                    with lock:
                        mine = [k for k, u in acked.items() if u.startswith(f"u{n}-") and k not in deleted]
                    if mine:
                        mid = rng.choice(mine)
                        out = call(port, token, "DELETE", f"/memories/{mid}", None, tally, "delete")
                        if isinstance(out, dict) and "error" not in out:
                            with lock:
                                deleted.add(mid)

        def eraser() -> None:
            k = 0
            while time.monotonic() < stop:
                k += 1
                victim = f"victim{k}"
                call(port, token, "POST", "/v1/add", {"args": [f"secret Zorblax{k} note"],
                                                      "kwargs": {"user_id": victim, "infer": False}}, tally, "add")
                call(port, token, "POST", "/v1/forget", {"kwargs": {"user_id": victim}}, tally, "forget")
                forgotten.add(victim)
                call(port, token, "POST", "/v1/scrub", {}, tally, "scrub")

        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        threads.append(threading.Thread(target=eraser))
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        # nothing acknowledged is lost
        with lock:
            expected = {mid for mid, user in acked.items() if mid not in deleted and user not in forgotten}
        present = set()
        users = sorted({u for u in acked.values()})
        for user in users:
            out = call(port, token, "GET", f"/memories?user_id={user}&limit=100000", None, Tally(), "get_all")
            present |= {r["id"] for r in (out or {}).get("results", [])}
        lost = expected - present
    print(f"load: {os.getloadavg()[0]:.2f} (1-min) after {elapsed:.0f} s, {args.clients} clients + 1 forget/scrub loop")
    print(f"{'route':8} {'status':>6} {'error type':24} {'count':>7}")
    for (route, status, kind), n in sorted(tally.counts.items()):
        print(f"{route:8} {status:>6} {kind or '-':24} {n:>7}")
    print(f"acknowledged adds kept: {len(expected) - len(lost)}/{len(expected)}; lost: {len(lost)}")
    for line in tally.bad[:20]:
        print("NOT TYPED/RETRYABLE:", line)
    return 1 if tally.bad or lost else 0


if __name__ == "__main__":
    sys.exit(main())
