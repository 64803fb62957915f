"""mem0 import throughput: a generated mem0-format store (Qdrant local mode, mem0's payload layout,
history.db with an ADD row per memory and some UPDATEs) imported into a new memstore file.

    python bench/import_mem0.py                       # 5000 memories over 50 users
    python bench/import_mem0.py --memories 20000 --users 200

Prints memories/s (wall and CPU) for a re-embedding import (bundled MiniLM) and for
--keep-vectors (384-d vectors: no embedding), with the load average.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import Memory
from memstore.integrations.mem0_fixture import mem0_payload, write_mem0_store

VERBS = ["Likes", "Visited", "Works with", "Is learning", "Bought a book about", "Wants to try", "Dislikes"]
THINGS = ["jazz", "Lisbon", "sourdough bread", "rock climbing", "the Rust language", "chess openings", "Kyoto",
          "gardening", "road cycling", "opera", "Thai curry", "woodworking", "Portuguese", "astronomy"]


def build(folder: str, n: int, users: int) -> tuple[str, str]:
    rng = np.random.default_rng(0)
    points, history = [], []
    for i in range(n):
        pid = str(uuid.uuid4())
        text = f"{VERBS[i % len(VERBS)]} {THINGS[(i // len(VERBS)) % len(THINGS)]} (note {i})"
        t = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00+00:00"
        v = rng.normal(size=384).astype(np.float32)
        points.append((pid, (v / np.linalg.norm(v)).tolist(),
                       mem0_payload(text, created_at=t, user_id=f"user{i % users}", category=THINGS[i % 5])))
        history.append({"id": str(uuid.uuid4()), "memory_id": pid, "event": "ADD", "new_memory": text, "created_at": t})
        if i % 10 == 0:
            history.append({"id": str(uuid.uuid4()), "memory_id": pid, "event": "UPDATE", "old_memory": text + "?",
                            "new_memory": text, "created_at": t})
    qdir, hist = os.path.join(folder, "qdrant"), os.path.join(folder, "history.db")
    write_mem0_store(qdir, hist, points, dim=384, history=history)
    return qdir, hist


def run(label: str, qdir: str, hist: str, store: str, keep: bool) -> None:
    with Memory(store) as m:
        m.search("warm up", user_id="user0")       # load the embedder and spaCy outside the timing
        w0, c0 = time.perf_counter(), time.process_time()
        r = m.import_mem0(qdir, history=hist, keep_vectors=keep)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        again = m.import_mem0(qdir, history=hist, keep_vectors=keep)
        bad = m.doctor().filter(m.doctor()["severity"] == "error").height
    print(f"{label:<14} imported {r['imported']:>6} of {r['read']} in {wall:6.1f} s = {r['imported'] / wall:7.0f} "
          f"memories/s wall, {r['imported'] / cpu:7.0f}/s CPU; history rows {r['history_imported']}; "
          f"vectors {r['vectors']}; re-run imported {again['imported']} ({again['seconds']:.1f} s); "
          f"doctor errors {bad}; load average {os.getloadavg()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=5000)
    ap.add_argument("--users", type=int, default=50)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mem0-import-")
    t0 = time.perf_counter()
    qdir, hist = build(tmp, args.memories, args.users)
    print(f"built a mem0 store of {args.memories} memories over {args.users} users in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    run("re-embed", qdir, hist, os.path.join(tmp, "a.duckdb"), keep=False)
    run("keep-vectors", qdir, hist, os.path.join(tmp, "b.duckdb"), keep=True)


if __name__ == "__main__":
    main()
