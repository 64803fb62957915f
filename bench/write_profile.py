"""How bench/write_path.py measures the write path: process CPU per pipeline step and per write
unit (BEGIN to COMMIT), every statement on the cursor with the step it ran in, and DuckDB's floor
(each add's statements replayed alone, with no pipeline around them).

    from write_profile import StatementLog, track_step_cpu      # see write_path.run_size
"""
from __future__ import annotations

import re
import time

import numpy as np

from memstore import Memory
from memstore.store.database import Database

WRITE_STEPS_CPU = ("dedupe_facts", "supersede_by_slot", "build_rows", "commit_rows")


def record_writes(m: Memory) -> list[list[tuple[str, tuple]]]:
    """From now on, every insert_values / write statement of the Database, per add (the caller
    appends a new list before each add, and None to stop): what replay_floor runs again."""
    log: list[list[tuple[str, tuple]]] = []
    db = m.db
    insert_values, run = db.insert_values, db.run

    def rec_insert(table: str, cols: dict) -> None:
        if log and log[-1] is not None:
            log[-1].append(("insert_values", (table, {k: list(v) for k, v in cols.items()})))
        insert_values(table, cols)

    def rec_run(name: str, params=None, **kw):
        if kw.get("writes") and log and log[-1] is not None:
            log[-1].append(("run", (name, params)))
        return run(name, params, **kw)
    db.insert_values, db.run = rec_insert, rec_run
    return log


def replay_floor(m: Memory, recorded: list[list[tuple[str, tuple]]]) -> dict:
    """DuckDB's own floor for this write: each add's statements replayed back to back in one
    transaction (same rows, fresh ids; BEGIN + statements + COMMIT), with no pipeline around them.
    Also the cost of an empty statement (SELECT 1) and of a one-row, one-column INSERT."""
    db = m.db
    db.insert_values, db.run = Database.insert_values.__get__(db), Database.run.__get__(db)
    con = db.con
    walls, cpus = [], []
    for calls in recorded:
        fresh = []
        for kind, (name, arg) in calls:
            if kind == "insert_values" and "id" in arg:
                arg = dict(arg, id=[f"{i}-replay" for i in arg["id"]])
            fresh.append((kind, name, arg))
        t, c = time.perf_counter(), time.process_time()
        con.execute("BEGIN")
        for kind, name, arg in fresh:
            if kind == "insert_values":
                db.insert_values(name, arg)
            else:
                db.run(name, arg, writes=True)
        con.execute("COMMIT")
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    db.scope_cache.invalidate()
    con.execute("CREATE TEMP TABLE IF NOT EXISTS _floor (x VARCHAR)")
    empty, one = [], []
    for i in range(200):
        t = time.perf_counter()
        con.execute("SELECT 1")
        empty.append(time.perf_counter() - t)
        t = time.perf_counter()
        con.execute("INSERT INTO _floor VALUES (?)", [str(i)])
        one.append(time.perf_counter() - t)
    return {"wall": walls, "cpu": cpus, "statements": float(np.mean([len(c) for c in recorded])) + 2,
            "select1": float(np.median(empty)), "insert1": float(np.median(one))}


class _StepCPU(dict):
    """Process CPU seconds per pipeline step, from the step:* checkpoints (robust when the machine is
    shared: wall time counts waiting for a core, CPU time does not)."""

    current: str | None = None
    started: float = 0.0
    unit_cpu: float = 0.0       # the write units' process CPU, BEGIN to COMMIT (steps included)
    in_unit: bool = False       # inside a write unit (its BEGIN/COMMIT run outside any step)

    def enter(self, step: str) -> None:
        now = time.process_time()
        self.finish(now)
        self.current, self.started = step, now

    def finish(self, now: float | None = None) -> None:
        now = time.process_time() if now is None else now
        if self.current:
            self[self.current] = self.get(self.current, 0.0) + now - self.started
        self.current = None

    def clear(self) -> None:
        super().clear()
        self.current = None
        self.unit_cpu = 0.0


def track_step_cpu(m: Memory) -> _StepCPU:
    """Time every pipeline step (the step tuples of memstore/pipeline/add.py, wrapped). What add()
    runs side by side (memstore/pipeline/beside.py: spaCy and the embedder) then runs in turn, so
    each step's process CPU is its own."""
    import memstore.pipeline.add as add_pipeline
    import memstore.pipeline.beside as beside

    acc = _StepCPU()
    beside.IN_TURN = True       # one step at a time: each step's process CPU is its own

    def timed(step):
        def run(*args, **kwargs):
            acc.enter(step.__name__)
            try:
                return step(*args, **kwargs)
            finally:
                acc.finish()
        run.__name__ = step.__name__
        return run

    for name in ("TEXT_STEPS", "MODEL_STEPS", "WRITE_STEPS"):
        setattr(add_pipeline, name, tuple(timed(s) for s in getattr(add_pipeline, name)))
    write_unit = add_pipeline._write_unit

    def unit(*args, **kwargs):
        c = time.process_time()
        acc.in_unit = True
        try:
            return write_unit(*args, **kwargs)
        finally:
            acc.in_unit = False
            acc.unit_cpu += time.process_time() - c
    add_pipeline._write_unit = unit
    return acc


class StatementLog:
    """Every statement on this thread's cursor: process CPU and wall time, the pipeline step it ran
    in, and the name the Database tracer gives it (BEGIN/COMMIT are not traced: named by their SQL)."""

    def __init__(self, m: Memory, steps: _StepCPU) -> None:
        self.entries: list[dict] = []
        entries, db = self.entries, m.db
        cur = db.con

        class Timed:
            def __getattr__(self, name: str):
                return getattr(cur, name)

            def execute(self, sql: str, *args):
                c, w = time.process_time(), time.perf_counter()
                try:
                    return cur.execute(sql, *args)
                finally:
                    entries.append({"sql": sql, "cpu": time.process_time() - c, "wall": time.perf_counter() - w,
                                    "step": steps.current or ("write_unit" if steps.in_unit else None),
                                    "name": None})

            def from_arrow(self, data):
                c, w = time.process_time(), time.perf_counter()      # the relation's making counts too
                rel = cur.from_arrow(data)

                class TimedRelation:
                    def insert_into(self, table: str) -> None:
                        try:
                            rel.insert_into(table)
                        finally:
                            entries.append({"sql": f"INSERT INTO {table} FROM arrow relation",
                                            "cpu": time.process_time() - c, "wall": time.perf_counter() - w,
                                            "step": steps.current or ("write_unit" if steps.in_unit else None),
                                            "name": None})
                return TimedRelation()

        def trace(name: str, sql: str, params, seconds: float) -> None:
            if entries and entries[-1]["name"] is None and entries[-1]["sql"] == sql:
                entries[-1]["name"] = name
        db.trace = trace
        db._local.cur = Timed()

    def take(self) -> list[dict]:
        out = [{"name": e["name"] or _sql_head(e["sql"]), "table": _sql_table(e["sql"]), "step": e["step"],
                "cpu": e["cpu"], "wall": e["wall"]} for e in self.entries]
        self.entries.clear()
        return out


_TABLE = re.compile(r'\b(?:INSERT\s+INTO|DELETE\s+FROM|UPDATE|FROM|JOIN)\s+"?(\w+)', re.IGNORECASE)


def _sql_table(sql: str) -> str:
    body = "\n".join(ln for ln in sql.splitlines() if not ln.lstrip().startswith("--"))
    hit = _TABLE.search(body)
    return hit.group(1) if hit else "-"


def _sql_head(sql: str) -> str:
    line = next((ln.strip() for ln in sql.splitlines() if ln.strip() and not ln.lstrip().startswith("--")), sql)
    return line.split()[0].upper() if line.split() else "?"


def statement_profile(entries: list[dict], adds: int, *, store_side: bool = True) -> list[tuple]:
    """(table, statement, step, calls per add, CPU ms per call p50, CPU ms per add, wall ms per add)
    for the statements run under the write lock (or outside it), costliest table first."""
    groups: dict[tuple, list[dict]] = {}
    for e in entries:
        if (e["step"] in WRITE_STEPS_CPU or e["step"] in ("commit_adds", "write_unit")) == store_side:
            groups.setdefault((e["table"], e["name"], e["step"]), []).append(e)
    rows = [(t, nm, st, len(es) / adds, float(np.median([e["cpu"] for e in es])) * 1000,
             sum(e["cpu"] for e in es) / adds * 1000, sum(e["wall"] for e in es) / adds * 1000)
            for (t, nm, st), es in groups.items()]
    by_table: dict[str, float] = {}
    for r in rows:
        by_table[r[0]] = by_table.get(r[0], 0.0) + r[5]
    return sorted(rows, key=lambda r: (-by_table[r[0]], -r[5]))


def print_statements(entries: list[dict], adds: int, title: str, step_cpu_ms: float | None, *,
                     store_side: bool = True) -> None:
    rows = statement_profile(entries, adds, store_side=store_side)
    if not rows:
        return
    print(f"\nstatements per add, {title} (process CPU; per table, costliest first):")
    print(f"  {'table':<18}{'statement':<34}{'step':<19}{'calls/add':>9}{'ms/call':>9}{'ms/add':>8}{'wall/add':>9}")
    table = None
    for t, name, step, calls, per_call, per_add, wall in rows:
        print(f"  {t if t != table else '':<18}{name[:33]:<34}{(step or '-')[:18]:<19}{calls:>9.2f}{per_call:>9.2f}"
              f"{per_add:>8.2f}{wall:>9.2f}")
        table = t
    total = sum(r[5] for r in rows)
    note = f" (the unit's process CPU p50 is {step_cpu_ms:.2f} ms: the rest is Python around the statements)" \
        if step_cpu_ms is not None else ""
    print(f"  {'all statements':<80}{total:>8.2f}{sum(r[6] for r in rows):>9.2f}{note}")
