"""How long `forget` takes for one user with 10k memories in a store of 1M memories, split into
delete / exports / rewrite / verify, and what it takes to make the bytes unrecoverable.

    python bench/erasure.py                          # 1M memories (3.2 GiB), victim with 10k
    python bench/erasure.py --memories 200000        # smaller store, ~2 minutes
    python bench/erasure.py --scaling 100000,300000  # forget time at several store sizes

The store is bulk-filled through Arrow inserts into every table a real store fills: memories (with
random unit vectors), keyword postings (Zipf-distributed terms), entities and entity postings,
memory links, history (an ADD event with text per memory), messages and extraction runs. Two
victims get the same number of memories with marker strings only they wrote:
  1. victim A is forgotten with scrub=False (DELETE + CHECKPOINT only): the byte scan shows how many
     of their strings are still in the file — the measurement that makes the rewrite necessary;
  2. victim B is forgotten normally (delete → rewrite → verify): the timed path. The rewrite also
     removes A's leftovers, which a final independent scan confirms.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore import Memory
from memstore.core.ids import entity_id
from memstore.governance.verify_erasure import scan_files, store_files
from memstore.store.write_values import vectors_table

DIM = 384
VOCAB = 20_000
N_ENTITIES = 20_000
NOW = dt.datetime(2026, 1, 1)
SYL = np.array(["ka", "lo", "mi", "ren", "sa", "to", "vi", "dul", "an", "per", "qua", "zo", "bel", "gri", "nu", "tem"])


def vocabulary(rng: np.random.Generator) -> np.ndarray:
    """Pronounceable lowercase words (2–4 syllables)."""
    words = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(SYL, rng.integers(2, 5))))
    return np.array(sorted(words))


def uuids(n: int) -> np.ndarray:
    return np.array([str(uuid.uuid4()) for _ in range(n)])


def fill_chunk(m: Memory, rng: np.random.Generator, vocab: np.ndarray, ents: np.ndarray, eids: np.ndarray,
               users: np.ndarray, marker: dict[str, str]) -> None:
    """Insert len(users) memories (one per entry of `users`) and their rows in every table."""
    db, n = m.db, len(users)
    scope = np.array([f"u={u}|a=|r=" for u in users])
    ids = uuids(n)
    msg_ids = uuids(n)
    run_ids = uuids(n)
    # text: 6-12 Zipf-distributed words; a victim's memory also carries its marker word
    n_words = rng.integers(6, 13, n)
    owner = np.repeat(np.arange(n), n_words)
    words = np.minimum(rng.zipf(1.25, int(n_words.sum())), VOCAB) - 1
    texts = pc.binary_join(pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(n_words)]).astype(np.int32)), pa.array(vocab[words])), " ")
    texts = np.array(texts.to_pylist(), dtype=object)
    for i, u in enumerate(users):
        if u in marker:
            texts[i] = f"{marker[u]} {i} {texts[i]}"
    # keyword postings: unique (memory, term) with tf
    code = owner.astype(np.int64) * VOCAB + words
    uniq, tf = np.unique(code, return_counts=True)
    p_mem, p_term = uniq // VOCAB, uniq % VOCAB
    doc_len = np.bincount(owner, minlength=n).astype(np.int32)
    vec = rng.standard_normal((n, DIM)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    created = pa.array([NOW - dt.timedelta(seconds=int(s)) for s in rng.integers(0, 3e7, n)], pa.timestamp("us"))
    meta = np.array([None] * n, dtype=object)
    for i, u in enumerate(users):
        if u in marker:
            meta[i] = f'{{"note": "{marker[u]}-meta"}}'
    with db.transaction("bench:fill"):
        db.insert_arrow("memories", vectors_table(
            vec, DIM, id=ids, memory=texts, hash=[hashlib.md5(t.encode()).hexdigest() for t in texts],
            user_id=users, scope_key=scope, role=pa.array(["user"] * n), attributed_to=pa.array(["User"] * n),
            metadata=pa.array(meta, pa.string()), doc_len=doc_len, created_at=created, updated_at=created,
            valid_from=created, source_message_ids=pa.array([[x] for x in msg_ids], pa.list_(pa.string())),
            extraction_run_id=run_ids))
        db.insert_arrow("keyword_postings", pa.table({
            "memory_id": ids[p_mem], "scope_key": scope[p_mem], "user_id": users[p_mem],
            "term": vocab[p_term], "tf": tf.astype(np.int32)}))
        n_ent = rng.integers(0, 4, n)
        e_mem = np.repeat(np.arange(n), n_ent)
        e_pick = np.minimum(rng.zipf(1.4, int(n_ent.sum())), N_ENTITIES) - 1
        pairs = np.unique(e_mem.astype(np.int64) * N_ENTITIES + e_pick)
        e_mem, e_pick = pairs // N_ENTITIES, pairs % N_ENTITIES
        db.insert_arrow("entity_postings", pa.table({
            "entity_id": eids[e_pick], "memory_id": ids[e_mem], "scope_key": scope[e_mem], "user_id": users[e_mem]}))
        # ~10% of memories link to another memory of the same user (neighbours after sorting by user)
        order = np.argsort(users, kind="stable")
        src, dst = order[1:], order[:-1]
        keep = (users[src] == users[dst]) & (rng.random(len(src)) < 0.1)
        src, dst = src[keep], dst[keep]
        db.insert_arrow("memory_links", pa.table({
            "src_id": ids[src], "dst_id": ids[dst], "kind": ["related"] * len(src), "scope_key": scope[src],
            "user_id": users[src], "created_at": pa.array([NOW] * len(src), pa.timestamp("us"))}))
        db.insert_arrow("history", pa.table({
            "id": uuids(n), "memory_id": ids, "event": ["ADD"] * n, "new_memory": texts, "user_id": users,
            "scope_key": scope, "role": ["user"] * n, "created_at": created}))
        db.insert_arrow("messages", pa.table({
            "id": msg_ids, "scope_key": scope, "user_id": users, "role": ["user"] * n,
            "content": ["I said: " + t for t in texts], "created_at": created}))
        db.insert_arrow("extraction_runs", pa.table({
            "id": run_ids, "scope_key": scope, "user_id": users, "extractor": ["llm"] * n,
            "input_message_ids": pa.array([[x] for x in msg_ids], pa.list_(pa.string())), "status": ["ok"] * n,
            "n_facts": np.ones(n, np.int32), "n_added": np.ones(n, np.int32),
            "facts": [f'[{{"text": "{t}", "outcome": "added"}}]' for t in texts], "created_at": created}))


def build(path: str, n_memories: int, n_victim: int, seed: int = 5, chunk: int = 100_000) -> dict:
    rng = np.random.default_rng(seed)
    m = Memory(path, config={"embedder": {"provider": "hashing", "dims": DIM}})
    vocab = vocabulary(rng)
    ents = np.array([f"Entity{''.join(rng.choice(SYL, 3))}{i}" for i in range(N_ENTITIES)])
    eids = np.array([entity_id(e.lower()) for e in ents])
    victims = {"victim-a": "Qzorvantheme", "victim-b": "Xyloquaffrit"}
    with m.db.transaction("bench:entities"):
        m.db.insert_arrow("entities", pa.table({
            "id": eids, "name": ents, "norm": np.char.lower(ents), "label": ["PERSON"] * N_ENTITIES,
            "created_at": pa.array([NOW] * N_ENTITIES, pa.timestamp("us"))}))
        # entities only the victims use (their names must disappear with them)
        own = [f"{w}Pet{k}" for w in victims.values() for k in range(3)]
        m.db.insert_arrow("entities", pa.table({
            "id": [entity_id(o.lower()) for o in own], "name": own, "norm": [o.lower() for o in own],
            "label": ["PERSON"] * len(own), "created_at": pa.array([NOW] * len(own), pa.timestamp("us"))}))
    n_users = max(1, (n_memories - 2 * n_victim) // 1000)
    owners = np.concatenate([np.array([f"user{u:05d}" for u in rng.integers(0, n_users, n_memories - 2 * n_victim)]),
                             np.repeat(list(victims), n_victim)])
    rng.shuffle(owners)
    t0 = time.perf_counter()
    for start in range(0, n_memories, chunk):
        fill_chunk(m, rng, vocab, ents, eids, owners[start:start + chunk], victims)
        print(f"  filled {min(start + chunk, n_memories):>9,} memories  {time.perf_counter() - t0:6.1f} s", flush=True)
    with m.db.transaction("bench:victim-entities"):
        for v, w in victims.items():
            m.db.run("bench", {"u": v, "e": [entity_id(f"{w}Pet{k}".lower()) for k in range(3)]}, sql=(
                "INSERT INTO entity_postings SELECT unnest($e), id, scope_key, user_id, NULL, NULL "
                "FROM (SELECT id, scope_key, user_id FROM memories WHERE user_id = $u LIMIT 3)"))
    m.db.con.execute("CHECKPOINT")
    return {"memory": m, "victims": victims, "build_s": time.perf_counter() - t0}


def rows(m: Memory) -> dict[str, int]:
    tables = [r[0] for r in m.db.rows("t", sql="SELECT table_name FROM duckdb_tables() "
                                                "WHERE database_name = current_database()")]
    return {t: m.db.scalar(f'SELECT count(*) FROM "{t}"') for t in tables}


def run(n_memories: int, n_victim: int, workdir: str, detail: bool = True) -> dict:
    path = os.path.join(workdir, f"erasure-{n_memories}.duckdb")
    for f in Path(workdir).glob(f"erasure-{n_memories}.duckdb*"):
        f.unlink()
    print(f"building a store of {n_memories:,} memories (2 victims × {n_victim:,}) at {path}", flush=True)
    built = build(path, n_memories, n_victim)
    m, victims = built["memory"], built["victims"]
    size = os.path.getsize(path)
    if detail:
        print(f"built in {built['build_s']:.0f} s: {size / 2**30:.2f} GiB; rows: "
              + ", ".join(f"{t} {n:,}" for t, n in rows(m).items() if n))
    markers = {v: [w, f"{w}-meta", f"{w}Pet0", w.lower(), v] for v, w in victims.items()}
    out: dict = {"memories": n_memories, "victim_memories": n_victim, "file_bytes": size, "build_s": built["build_s"]}

    # 1) DELETE + CHECKPOINT only: what is left in the file?
    t = time.perf_counter()
    ra = m.forget(user_id="victim-a", scrub=False)
    m.db.con.execute("CHECKPOINT")
    m.db.con.execute("FORCE CHECKPOINT")
    out["delete_only_s"] = time.perf_counter() - t
    left = scan_files(store_files(path), markers["victim-a"])
    out["leftover_hits_after_delete_checkpoint"] = sum(left.values())
    out["receipt_a_verified"] = ra["verified"]

    # 2) the real thing, timed by the receipt (CPU time too: on a shared machine wall time is
    # mostly waiting for a core)
    t, cpu = time.perf_counter(), time.process_time()
    rb = m.forget(user_id="victim-b")
    out["forget_s"] = time.perf_counter() - t
    out["forget_cpu_s"] = time.process_time() - cpu
    out["load_avg"] = os.getloadavg()[0]
    out["timings_ms"] = rb["timings_ms"]
    out["verified"] = rb["verified"]
    out["rows_removed"] = rb["rows_removed"]
    out["bytes_after"] = os.path.getsize(path)
    out["needles_checked"] = rb["verification"]["needles_checked"]
    # independent scan for both victims' markers after the rewrite
    final = scan_files(store_files(path), markers["victim-a"] + markers["victim-b"])
    out["hits_after_rewrite"] = sum(final.values())
    probe = m.search("kalo", user_id="user00001")["results"]
    out["other_user_searchable"] = bool(probe)
    m.close()
    return out


def report(r: dict) -> None:
    t = r["timings_ms"]
    print(f"\nstore {r['memories']:,} memories ({r['file_bytes'] / 2**30:.2f} GiB), "
          f"victim {r['victim_memories']:,} memories")
    print(f"  DELETE + CHECKPOINT + FORCE CHECKPOINT only: {r['delete_only_s']:.1f} s, "
          f"{r['leftover_hits_after_delete_checkpoint']:,} marker occurrences still in the file → rewrite needed "
          f"(receipt verified={r['receipt_a_verified']})")
    print(f"  forget (scrub): {r['forget_s']:.1f} s total = delete {t['delete'] / 1000:.1f} s + exports "
          f"{t['exports'] / 1000:.1f} s + rewrite {t['rewrite'] / 1000:.1f} s + verify {t['verify'] / 1000:.1f} s; "
          f"verified={r['verified']} ({r['needles_checked']} strings); CPU time {r['forget_cpu_s']:.1f} s "
          f"(load average {r['load_avg']:.1f} on {os.cpu_count()} cores)")
    removed = ", ".join(f"{k} {v:,}" for k, v in r["rows_removed"].items() if v)
    print(f"  rows removed: {removed}")
    print(f"  after rewrite: {r['bytes_after'] / 2**30:.2f} GiB, independent scan hits for both victims: "
          f"{r['hits_after_rewrite']}, other user searchable: {r['other_user_searchable']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=1_000_000)
    ap.add_argument("--victim", type=int, default=10_000, help="memories of each victim")
    ap.add_argument("--scaling", default="", help="comma-separated store sizes to time forget at")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed after)")
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix="bench-erasure-")
    try:
        sizes = [int(s) for s in args.scaling.split(",") if s] or [args.memories]
        results = []
        for n in sizes:
            r = run(n, args.victim, workdir, detail=True)
            report(r)
            results.append(r)
            for f in Path(workdir).glob(f"erasure-{n}.duckdb*"):
                f.unlink()
        if len(results) > 1:
            print("\nscaling (forget with rewrite):")
            for r in results:
                t = r["timings_ms"]
                print(f"  {r['memories']:>9,} memories {r['file_bytes'] / 2**30:6.2f} GiB: "
                      f"forget {r['forget_s']:6.1f} s (delete {t['delete'] / 1000:.1f}, "
                      f"rewrite {t['rewrite'] / 1000:.1f}, verify {t['verify'] / 1000:.1f})")
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
