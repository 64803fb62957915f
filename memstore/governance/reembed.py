"""Re-embed a store with another embedding model (`memstore reembed`, `Memory.reembed`).

    1. a job row (`reembed_jobs`); a job to the same model that did not finish is resumed;
    2. batch by batch, in scope order, the new model's vector of every memory goes to
       `reembed_vectors` (one small transaction a batch: a crash loses at most one batch). The store
       keeps answering with the OLD vectors and the old model meanwhile: every scope consistent;
    3. the swap, under the write lock (no add can land in between): the memories added or updated
       since are embedded, then ONE transaction copies every new vector into `memories`, records the
       new embedder in `store_meta`, closes the job and clears its vectors. The scope cache and the
       search snapshots follow that commit (their generation moves), the analyst HNSW index is
       dropped before and rebuilt after, and the runtime switches to the new model with a seqlock
       (`Runtime.model_epoch`): a search that ran across the swap runs again, so no search mixes a
       query of one model with vectors of the other.

`embed` may be given (the Ray path: memstore/on_ray/reembed.py runs the model on Ray actors); by
default the new embedder runs here. Every vector the store keeps is `memories.embedding` (the scope
cache, the snapshots and the HNSW index are built from it).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from memstore.core.errors import ConfigError
from memstore.core.ids import new_id
from memstore.core.timeutil import utcnow
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.runtime import Runtime

Embed = Callable[[list[str]], Any]



def check_target(rt: Runtime, name: str, dim: int) -> None:
    """A model of another size cannot take the place of the store's vectors in place."""
    if dim != rt.db.dim:
        raise ConfigError(f"{name!r} makes {dim}-d vectors, this store holds {rt.db.dim}-d ones",
                          key="embedder", hint="re-embedding in place keeps the vector size; for another size "
                          "export_parquet the store and import it into a new store opened with the new embedder")


def job_for(rt: Runtime, name: str) -> str:
    """The running job to `name` (resumed), else a new one."""
    row = rt.db.rows("reembed:find", {"to": name},
                     sql="SELECT id FROM reembed_jobs WHERE embedder_to = $to AND status = 'running' "
                         "ORDER BY started_at DESC LIMIT 1")
    if row:
        return row[0][0]
    job = new_id()
    with write_unit(rt.db, "reembed:start"):
        rt.db.run("reembed:insert_job", {"id": job, "src": rt.db.meta("embedder"), "to": name, "at": utcnow()},
                  sql="INSERT INTO reembed_jobs (id, embedder_from, embedder_to, status, started_at) "
                      "VALUES ($id, $src, $to, 'running', $at)")
    return job


def embed_batch(rt: Runtime, job: str, embed: Embed, n: int) -> int:
    """Embed up to `n` memories of `job` still without a new vector; stores them; returns how many."""
    todo = rt.db.arrow("queries/reembed_todo", {"job": job, "n": n})
    if todo.num_rows == 0:
        return 0
    vecs = np.asarray(embed(todo.column("text").to_pylist()), dtype=np.float32)
    if vecs.shape != (todo.num_rows, rt.db.dim):
        raise ConfigError(f"the new embedder gave vectors of shape {vecs.shape}, expected ({todo.num_rows}, "
                          f"{rt.db.dim})", key="embedder")
    rows = pa.table({"job_id": [job] * todo.num_rows, "memory_id": todo.column("id"), "hash": todo.column("hash"),
                     "scope_key": todo.column("scope_key"), "user_id": todo.column("user_id"),
                     "agent_id": todo.column("agent_id"), "run_id": todo.column("run_id"),
                     "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), rt.db.dim)})
    with write_unit(rt.db, "reembed:batch"):
        rt.db.insert_arrow("reembed_vectors", rows)
    return todo.num_rows


def reembed_store(rt: Runtime, embedder: Any, *, embed: Embed | None = None, batch: int = 512,
                  progress: Callable[[int, int], None] | None = None, stop_after: int | None = None) -> dict[str, Any]:
    """Re-embed every memory with `embedder` (its `name` is recorded; `embed`, default
    `embedder.embed`, makes the vectors). Resumable. `progress(done, total)` after each batch;
    `stop_after` batches (tests: a job cut short, as a crash would). Returns the job's figures."""
    from memstore.store.optimize import INDEX_NAME, ensure_hnsw

    name = embedder.name
    check_target(rt, name, embedder.dim)
    embed = embed or embedder.embed
    db = rt.db
    t0 = time.perf_counter()
    job = job_for(rt, name)
    total = db.scalar("SELECT count(*) FROM memories")
    done = db.scalar("SELECT count(*) FROM reembed_vectors WHERE job_id = ?", [job])
    resumed = done
    batches = 0
    while True:
        if stop_after is not None and batches >= stop_after:
            return {"job": job, "status": "running", "embedded": done, "memories": total, "resumed_from": resumed}
        n = embed_batch(rt, job, embed, batch)
        if n == 0:
            break
        done += n
        batches += 1
        if progress is not None:
            progress(done, total)
    with db.write_lock:                      # no add or update commits until the swap is done
        caught_up = 0
        while (n := embed_batch(rt, job, embed, batch)):
            caught_up += n
        had_hnsw = bool(db.scalar("SELECT count(*) FROM duckdb_indexes() WHERE index_name = ?", [INDEX_NAME]))
        rt.model_epoch += 1                  # odd: searches wait for the swap
        try:
            if had_hnsw:
                db.run("queries/admin/drop_hnsw_index")
            with write_unit(db, "reembed:swap"):
                swapped = db.run("queries/reembed_swap", {"job": job}).fetchone()[0]
                db.run("reembed:meta", {"name": name}, sql="UPDATE store_meta SET value = $name WHERE key = 'embedder'")
                db.run("reembed:finish", {"id": job, "n": swapped, "at": utcnow()},
                       sql="UPDATE reembed_jobs SET status = 'done', memories = $n, finished_at = $at WHERE id = $id")
                db.run("reembed:clear", {"id": job}, sql="DELETE FROM reembed_vectors WHERE job_id = $id")
            rt.embedder = embedder
        finally:
            rt.model_epoch += 1              # even again: the model and the vectors agree
            if had_hnsw:
                ensure_hnsw(db)
    db.invalidate_caches()
    return {"job": job, "status": "done", "embedder": name, "memories": int(swapped), "embedded": done + caught_up,
            "caught_up": caught_up, "resumed_from": resumed, "hnsw_rebuilt": had_hnsw,
            "seconds": round(time.perf_counter() - t0, 3)}
