"""A client process for load tests and `bench/server.py`: runs random operations against a store's
server for a while and logs every acknowledged result, one JSON line each (flushed per line, so a
log survives the server being killed).

    python -m memstore.testing.load_worker STORE LOG --worker 3 --seconds 30 [--mix add,search,get_all,delete]
"""
from __future__ import annotations

import argparse
import json
import random
import time

from memstore.core.errors import MemstoreError, ServerUnavailableError

OPS = ("add_raw", "add_infer", "search", "get_all", "delete")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("log")
    ap.add_argument("--worker", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--mix", default=",".join(OPS))
    ap.add_argument("--shared-user", default="shared")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args(argv)
    from memstore.api.connect import client_for

    rnd = random.Random(a.seed if a.seed is not None else a.worker)
    ops = a.mix.split(",")
    own = f"worker-{a.worker}"
    mine: list[tuple[str, str]] = []           # (id, user) of adds this worker may delete
    m = None
    deadline = time.monotonic() + a.seconds
    n = 0
    with open(a.log, "a", encoding="utf-8") as log:
        def emit(**rec: object) -> None:
            rec.update(worker=a.worker, t=time.time())
            log.write(json.dumps(rec) + "\n")
            log.flush()

        while time.monotonic() < deadline:
            if m is None:
                m = client_for(a.store)
                if m is None:                   # the server is restarting: wait for its announcement
                    time.sleep(0.2)
                    continue
            op = rnd.choice(ops)
            user = own if rnd.random() < 0.75 else a.shared_user
            n += 1
            t0 = time.perf_counter()
            try:
                if op == "add_raw":
                    text = f"note {a.worker}-{n}: item {rnd.randrange(10**9)} for {user}"
                    emit(op="try_add", text=text, user=user)
                    out = m.add(text, user_id=user, infer=False)
                    ids = [r["id"] for r in out["results"] if r["event"] == "ADD"]
                    emit(op="acked_add", text=text, user=user, ids=ids, ms=(time.perf_counter() - t0) * 1e3)
                    mine += [(i, user) for i in ids]
                    seen = m.get(ids[0]) if ids else None      # read your own write
                    emit(op="read_own", ok=bool(seen and seen["memory"] == text), id=ids[0] if ids else None)
                elif op == "add_infer":
                    text = f"I like {rnd.choice(['tea', 'jazz', 'chess', 'rain', 'maps'])} number {a.worker}x{n}"
                    out = m.add(text, user_id=user)
                    ids = [r["id"] for r in out["results"] if r["event"] == "ADD"]
                    emit(op="acked_infer", text=text, user=user, ids=ids, ms=(time.perf_counter() - t0) * 1e3)
                    mine += [(i, user) for i in ids]
                elif op == "search":
                    m.search("what does the user like", user_id=user, top_k=5)
                    emit(op="search", ms=(time.perf_counter() - t0) * 1e3)
                elif op == "get_all":
                    m.get_all(user_id=user, top_k=20)
                    emit(op="get_all", ms=(time.perf_counter() - t0) * 1e3)
                elif op == "delete" and mine:
                    mid, _ = mine.pop(rnd.randrange(len(mine)))
                    emit(op="try_delete", id=mid)      # a delete cut off by a kill may have committed
                    m.delete(mid)
                    emit(op="acked_delete", id=mid, ms=(time.perf_counter() - t0) * 1e3)
            except ServerUnavailableError as exc:
                emit(op="unavailable", during=op, error=str(exc)[:200])
                m.close()
                m = None
                time.sleep(0.2)
            except MemstoreError as exc:
                emit(op="error", during=op, type=type(exc).__name__, error=str(exc)[:300])
    if m is not None:
        m.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
