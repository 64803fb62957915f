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

from memstore.core.ids import entity_id
from memstore.store.database import Database
from memstore.store.recluster import mark_sorted
from memstore.store.write_values import vectors_table

VOCAB_SIZE = 20_000
N_ENTITIES = 5_000


def _words(rng: np.random.Generator, n: int) -> np.ndarray:
    # Zipf-like term frequencies, as in real text
    return np.minimum(rng.zipf(1.3, n), VOCAB_SIZE) - 1


def build_store(path: str, n_memories: int, n_users: int, dim: int = 384, seed: int = 7,
                chunk: int = 50_000, log=print, by_scope: bool = False,
                memory_limit: str | None = "512MB") -> Database:
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
        _append_chunk(db, rng, [f"m{i:08d}" for i in idx], users, eids, dim,
                      [now - dt.timedelta(minutes=int(i)) for i in idx])
        log(f"  {start + n:>9,} memories  {time.perf_counter() - t0:6.1f} s")
    if by_scope:        # sorted by user as it was written: one sorted run, the next pass sorts only the tail
        mark_sorted(db)
    db.con.execute("CHECKPOINT")
    return db


def _append_chunk(db: Database, rng: np.random.Generator, ids: list[str], users: np.ndarray, eids: np.ndarray,
                  dim: int, created: list[dt.datetime]) -> None:
    """Memories `ids` of `users` (in that order) with their keyword and entity postings."""
    n = len(ids)
    vec = rng.standard_normal((n, dim)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
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
        created_at=pa.array(created, pa.timestamp("us"))))
    db.insert_arrow("keyword_postings", pa.table({
        "memory_id": np.array(ids)[term_mem], "scope_key": scope[term_mem], "user_id": users[term_mem],
        "term": [f"w{t}" for t in terms], "tf": pa.array(np.ones(len(terms), np.int32))}))
    n_ent = rng.integers(1, 4, n)
    ent_mem = np.repeat(np.arange(n), n_ent)
    ent_pick = np.minimum(rng.zipf(1.5, int(n_ent.sum())), N_ENTITIES) - 1
    db.insert_arrow("entity_postings", pa.table({
        "entity_id": eids[ent_pick], "memory_id": np.array(ids)[ent_mem], "scope_key": scope[ent_mem],
        "user_id": users[ent_mem]}))


def append_tail(path: str, n: int, n_users: int, dim: int = 384, seed: int = 11, chunk: int = 50_000,
                memory_limit: str | None = "512MB") -> None:
    """Append `n` memories of random users (append order: what adds leave after a re-cluster) to a
    store sorted by scope, whose sorted run is recorded first if no pass recorded one (the builders
    write in scope order)."""
    from memstore.store.cluster_runs import read_runs

    db = Database(path, dim=dim, embedder="synthetic", memory_limit=memory_limit)
    if not read_runs(db):
        mark_sorted(db)
    rng = np.random.default_rng(seed)
    eids = np.array([entity_id(f"entity{i}") for i in range(N_ENTITIES)])
    now = dt.datetime(2026, 6, 1)
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        users = np.array([f"user{u}" for u in rng.integers(0, n_users, k)])
        _append_chunk(db, rng, [f"t{i:08d}" for i in range(start, start + k)], users, eids, dim,
                      [now + dt.timedelta(seconds=int(i)) for i in range(start, start + k)])
    db.con.execute("CHECKPOINT")
    db.close()


def build_store_sql(path: str, n_memories: int, n_users: int, dim: int = 384, chunk: int = 1_000_000,
                    log=print, memory_limit: str | None = "512MB") -> Database:
    """The lean builder (10M and up): the same tables as build_store, sorted by scope as a
    re-cluster leaves them, generated inside DuckDB (no Python per row): Zipf-like terms (inverse
    transform), 1-3 entities a memory, vectors drawn from 4,096 random ones (latency, not recall)."""
    db = Database(path, dim=dim, embedder="synthetic", memory_limit=memory_limit)
    t0 = time.perf_counter()
    now = dt.datetime(2026, 1, 1)
    ents = [f"entity{i}" for i in range(N_ENTITIES)]
    db.insert_arrow("entities", pa.table({"id": [entity_id(e) for e in ents], "name": ents, "norm": ents,
                                          "label": ["PROPN"] * N_ENTITIES,
                                          "created_at": pa.array([now] * N_ENTITIES, pa.timestamp("us"))}))
    con = db.con
    con.execute("SELECT setseed(0.7)")
    con.execute(f"CREATE TEMP TABLE _vec AS SELECT i, list_transform(range({dim}), x -> (random() - 0.5)::FLOAT)"
                f"::FLOAT[{dim}] AS v FROM range(4096) t(i)")
    con.execute("CREATE TEMP TABLE _ent AS SELECT row_number() OVER () - 1 AS k, id FROM (SELECT id FROM entities "
                "ORDER BY CAST(substr(name, 7) AS INTEGER))")
    con.execute(f"CREATE TEMP TABLE _users AS SELECT row_number() OVER (ORDER BY u) - 1 AS k, u FROM "
                f"(SELECT 'user' || i AS u FROM range({n_users}) t(i))")
    for start in range(0, n_memories, chunk):
        n = min(chunk, n_memories - start)
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE _chunk AS
            SELECT i, users.us[i * {n_users} // {n_memories} + 1] AS u,
                   list_transform(range(4 + (hash(i) % 8)::INT),
                                  j -> 'w' || least(floor(pow(random(), -1 / 0.3)), {VOCAB_SIZE})::INT - 1) AS terms
            FROM range({start}, {start + n}) t(i), (SELECT list(u ORDER BY k) AS us FROM _users) users""")
        con.execute("""
            INSERT INTO memories (id, memory, hash, embedding, user_id, scope_key, doc_len, created_at)
            SELECT printf('m%09d', i), array_to_string(terms, ' '), md5(array_to_string(terms, ' ')),
                   vecs.vs[i % 4096 + 1], u, 'u=' || u || '|a=|r=', len(terms),
                   TIMESTAMP '2026-01-01' - to_minutes(i)
            FROM _chunk, (SELECT list(v ORDER BY i) AS vs FROM _vec) vecs""")
        con.execute("""
            INSERT INTO keyword_postings (memory_id, scope_key, user_id, term, tf)
            SELECT printf('m%09d', i), 'u=' || u || '|a=|r=', u, unnest(terms), 1 FROM _chunk""")
        con.execute(f"""
            INSERT INTO entity_postings (entity_id, memory_id, scope_key, user_id)
            SELECT ents.ids[1 + least(floor(pow(random(), -1 / 0.5)), {N_ENTITIES})::INT - 1], m, s, u FROM (
                SELECT printf('m%09d', i) AS m, 'u=' || u || '|a=|r=' AS s, u, unnest(range(1 + (hash(i + 1) % 3)::INT))
                FROM _chunk) c, (SELECT list(id ORDER BY k) AS ids FROM _ent) ents""")
        con.execute("CHECKPOINT")
        log(f"  {start + n:>11,} memories  {time.perf_counter() - t0:6.1f} s")
    mark_sorted(db)     # sorted by user as it was written: one sorted run, the next pass sorts only the tail
    con.execute("CHECKPOINT")
    return db
