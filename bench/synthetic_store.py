"""Build a synthetic store fast (bulk Arrow inserts into every table) for latency benchmarks.

    from synthetic_store import build_store
    build_store("bench.duckdb", n_memories=100_000, n_users=1_000)
"""
from __future__ import annotations

import datetime as dt
import hashlib
import time

import numpy as np
import pyarrow as pa

from memstore.ids import entity_id
from memstore.store.database import Database, vectors_table

VOCAB_SIZE = 20_000
N_ENTITIES = 5_000


def _words(rng: np.random.Generator, n: int) -> np.ndarray:
    # Zipf-like term frequencies, as in real text
    return np.minimum(rng.zipf(1.3, n), VOCAB_SIZE) - 1


def build_store(path: str, n_memories: int, n_users: int, dim: int = 384, seed: int = 7,
                chunk: int = 50_000, log=print, by_scope: bool = False,  # noqa: ANN001
                memory_limit: str | None = "1GB") -> Database:
    """Random users in append order (a store grown by adds), or with `by_scope` each user's rows
    written together (a bulk import sorted by scope, the layout a re-cluster leaves: the lean way
    to a 10M store, no re-cluster needed)."""
    rng = np.random.default_rng(seed)
    db = Database(path, dim=dim, embedder="synthetic", memory_limit=memory_limit)
    t0 = time.perf_counter()
    now = dt.datetime(2026, 1, 1)
    ents = [f"entity{i}" for i in range(N_ENTITIES)]
    db.insert_arrow("entities", pa.table({"id": [entity_id(e) for e in ents], "name": ents, "norm": ents,
                                          "label": ["PROPN"] * N_ENTITIES,
                                          "created_at": pa.array([now] * N_ENTITIES, pa.timestamp("us"))}))
    eids = np.array([entity_id(e) for e in ents])
    names = np.array(sorted(f"user{u}" for u in range(n_users)))
    for start in range(0, n_memories, chunk):
        n = min(chunk, n_memories - start)
        idx = np.arange(start, start + n)
        if by_scope:        # user names in their sort order (user10 before user2), as a re-cluster writes them
            users = names[idx * n_users // n_memories]
        else:
            users = np.array([f"user{u}" for u in rng.integers(0, n_users, n)])
        vec = rng.standard_normal((n, dim)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        ids = [f"m{i:08d}" for i in idx]
        n_terms = rng.integers(4, 12, n)
        term_mem = np.repeat(np.arange(n), n_terms)
        terms = _words(rng, int(n_terms.sum()))
        texts = [""] * n
        for j, t in zip(term_mem, terms):
            texts[j] += f"w{t} "
        scope = np.array([f"u={u}|a=|r=" for u in users])
        db.insert_arrow("memories", vectors_table(
            vec, dim, id=ids, memory=[t.strip() for t in texts],
            hash=[hashlib.md5(t.encode()).hexdigest() for t in texts], user_id=users, scope_key=scope,
            doc_len=pa.array(n_terms, pa.int32()),
            created_at=pa.array([now - dt.timedelta(minutes=int(i)) for i in idx], pa.timestamp("us"))))
        db.insert_arrow("keyword_postings", pa.table({
            "memory_id": np.array(ids)[term_mem], "scope_key": scope[term_mem], "user_id": users[term_mem],
            "term": [f"w{t}" for t in terms], "tf": pa.array(np.ones(len(terms), np.int32))}))
        n_ent = rng.integers(1, 4, n)
        ent_mem = np.repeat(np.arange(n), n_ent)
        ent_pick = np.minimum(rng.zipf(1.5, int(n_ent.sum())), N_ENTITIES) - 1
        db.insert_arrow("entity_postings", pa.table({
            "entity_id": eids[ent_pick], "memory_id": np.array(ids)[ent_mem], "scope_key": scope[ent_mem],
            "user_id": users[ent_mem]}))
        log(f"  {start + n:>9,} memories  {time.perf_counter() - t0:6.1f} s")
    if by_scope:        # sorted by user as it was written: the re-cluster has nothing to do
        db.run("queries/set_clustered_rows", {"rows": n_memories}, writes=True)
    db.con.execute("CHECKPOINT")
    return db
