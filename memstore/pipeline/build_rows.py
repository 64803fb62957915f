"""Step 7: turn the state into one Arrow table per table (pure; the builders live in
memstore/store/rows.py, shared by every write path)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memstore.core.model import AddState
from memstore.store.rows import add_tables

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.writer import Writer


def build_rows(state: AddState, rt: Runtime, w: Writer) -> AddState:
    t0 = time.perf_counter()
    state.tables = add_tables(state, rt.config.history, rt.db.dim)
    state.tables.update(state.extra_rows)       # e.g. ingest_log rows of an ingest batch
    state.timings["build"] = time.perf_counter() - t0
    return state
