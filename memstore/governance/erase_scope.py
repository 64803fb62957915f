"""Delete every row of a scope from every table, in ONE transaction.

Tables are found from the catalog, not from a fixed list, so a table another feature adds later
(a search log, an alias table) is erased too as long as it names its rows the memstore way:

- a table with the identity columns (user_id / agent_id / run_id) loses the rows of the scope;
- a table with `scope_key` loses rows of any scope key the scope used;
- a table with `memory_id` / `src_id` / `dst_id` loses rows naming an erased memory;
- `entities` loses the entities no remaining posting names: those only the erased scope used
  (shared ones stay) and any an earlier delete left orphaned; then a table with `entity_id`
  loses rows naming an erased entity.
Tables matching none of these are reported as `untouched` (the byte scan then shows whether they
kept anything). Memories of other scopes that an erased memory had superseded become current again,
as with delete().

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "e.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> _ = m.add("I adore Zanzibar", user_id="ann", infer=False)
>>> out = erase_scope(m._rt, {"user_id": "ann"})
>>> out.rows_removed["memories"], m.db.scalar("SELECT count(*) FROM history")
(1, 0)
>>> m.close()
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from memstore.core.identity import IDENTITY_KEYS
from memstore.governance.catalog import (
    BOOKKEEPING_TABLES,
    MEMORY_REF_COLUMNS,
    identity_condition,
    quote_ident,
    relation,
    table_columns,
    table_label,
)
from memstore.governance.verify_erasure import pick_needles
from memstore.store.database import registered
from memstore.store.unit import write_unit

if TYPE_CHECKING:
    from memstore.runtime import Runtime
    from memstore.store.database import Database


@dataclass
class ErasedScope:
    """What one erasure removed. `needles` is personal content: used for verification, never stored."""

    scope: dict[str, str]
    rows_removed: dict[str, int] = field(default_factory=dict)
    memory_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    scope_keys: list[str] = field(default_factory=list)
    untouched: list[str] = field(default_factory=list)
    needles: list[str] = field(default_factory=list)


def erase_scope(rt: Runtime, scope: dict[str, str],
                before_commit: Callable[[ErasedScope], None] | None = None) -> ErasedScope:
    """Delete the scope's rows everywhere (one transaction) and return counts, ids and needles.
    `before_commit(out)` runs inside the transaction after the deletes (forget journals there)."""
    db = rt.db
    out = ErasedScope(scope=dict(scope))
    params = {k: scope.get(k) for k in IDENTITY_KEYS}
    named = {k: v for k, v in scope.items() if v is not None}
    tables = {t: cols for t, cols in table_columns(db).items() if t not in BOOKKEEPING_TABLES}
    with write_unit(db, "forget"):
        texts = [r[0] for r in db.rows("queries/erase_scope_texts", params)]
        out.memory_ids = _collect(db, tables, named, [("memories", "id"), ("history", "memory_id")])
        keyed = [(t, "scope_key") for (s, t), cols in tables.items() if "scope_key" in cols and s == "main"]
        out.scope_keys = _collect(db, tables, named, keyed)
        with registered(db, "erase_memory_ids", pa.table({"id": pa.array(out.memory_ids, pa.string())})), \
                registered(db, "erase_scope_keys", pa.table({"scope_key": pa.array(out.scope_keys, pa.string())})):
            db.run("queries/erase_reset_superseded", writes=True)
            entity_tables = []
            for (schema, table), cols in sorted(tables.items()):
                if (schema, table) == ("main", "entities"):
                    continue
                conds = _conditions(named, cols)
                if "entity_id" in cols and table != "entity_postings":
                    entity_tables.append(((schema, table), conds))
                    continue
                if not conds:
                    out.untouched.append(table_label(schema, table))
                    continue
                _delete(db, out, schema, table, conds, named)
            erased = db.rows("queries/erase_orphan_entities") if ("main", "entities") in tables else []
            out.entity_ids = [r[0] for r in erased]
            names = [r[1] for r in erased]
            if ("main", "entities") in tables:
                out.rows_removed["entities"] = len(erased)
            with registered(db, "erase_entity_ids", pa.table({"id": pa.array(out.entity_ids, pa.string())})):
                for (schema, table), conds in entity_tables:
                    _delete(db, out, schema, table, conds + ['"entity_id" IN (SELECT id FROM erase_entity_ids)'], named)
        out.needles = pick_needles(texts + names, [v for _, v in sorted(named.items())])
        if before_commit is not None:
            before_commit(out)
    return out


def _conditions(scope: dict[str, str], cols: dict[str, str]) -> list[str]:
    conds = []
    ident = identity_condition(scope, cols)
    if ident:
        conds.append(f"({ident})")
    if "scope_key" in cols:
        conds.append('"scope_key" IN (SELECT scope_key FROM erase_scope_keys)')
    for c in MEMORY_REF_COLUMNS:
        if c in cols:
            conds.append(f"{quote_ident(c)} IN (SELECT id FROM erase_memory_ids)")
    if "id" in cols and "memory" in cols:  # memories (and anything shaped like it)
        conds.append('"id" IN (SELECT id FROM erase_memory_ids)')
    return conds


def _delete(db: Database, out: ErasedScope, schema: str, table: str, conds: list[str], named: dict[str, str]) -> None:
    sql = f"DELETE FROM {relation(schema, table)} WHERE " + " OR ".join(conds)
    used = {k: v for k, v in named.items() if f"${k}" in sql}
    n = db.run(f"forget:{table}", used or None, sql=sql).fetchone()[0]
    key = table_label(schema, table)
    out.rows_removed[key] = out.rows_removed.get(key, 0) + int(n)


def _collect(db: Database, tables: dict, named: dict[str, str], pairs: list[tuple[str, str]]) -> list[str]:
    """Distinct values of column `col` over the scope's rows of each (table, col) in `pairs`."""
    values: dict[str, None] = {}
    for table, col in pairs:
        cols = tables.get(("main", table))
        if not cols or col not in cols:
            continue
        cond = identity_condition(named, cols)
        if cond is None:
            continue
        sql = f"SELECT DISTINCT {quote_ident(col)} FROM {quote_ident(table)} WHERE {cond}"
        for (v,) in db.rows(f"forget:collect:{table}", named, sql=sql):
            if v is not None:
                values.setdefault(v, None)
    return list(values)
