"""`Database.column_types` from several threads at once: each thread gets its own table's columns.

At server start the lake publisher and the writer thread both asked for column types; the query ran
on the shared connection, so one thread could fetch the other's result and cache it under its own
table name (an add then failed with KeyError 'id'). Every thread must see the right columns, and
the cache must hold the right ones afterwards.
"""
from __future__ import annotations

import threading

from memstore.store.database import Database

TABLES = ("memories", "history", "entities", "entity_postings", "keyword_postings", "memory_links",
          "extraction_runs", "messages")


def expected(db: Database) -> dict[str, dict[str, str]]:
    return {t: dict(db.rows("test:columns", [t], sql="SELECT column_name, data_type FROM information_schema.columns "
                                                     "WHERE table_name = ? AND table_schema = 'main' "
                                                     "ORDER BY ordinal_position")) for t in TABLES}


def test_column_types_from_many_threads_are_each_tables_own(tmp_path):
    db = Database(str(tmp_path / "s.duckdb"), dim=4, embedder="test")
    want = expected(db)
    wrong: list[tuple[str, list[str]]] = []
    errors: list[BaseException] = []
    for _ in range(30):
        db._columns.clear()                      # every round starts cold, as a freshly opened store
        start = threading.Barrier(len(TABLES))

        def ask(table: str) -> None:
            try:
                start.wait()
                got = db.column_types(table)
                if got != want[table]:
                    wrong.append((table, list(got)[:3]))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(t,)) for t in TABLES]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors[:3]
        assert not wrong, wrong[:5]
        assert {t: db.column_types(t) for t in TABLES} == want
    db.close()
