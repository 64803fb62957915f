"""Database.snapshot never leaves this thread's cursor inside a transaction: not when its body fails,
and not when its COMMIT fails (a transaction left open there made every later CHECKPOINT of a served
store fail with StoreBusyError, and a later snapshot on the thread could not BEGIN)."""
from __future__ import annotations

import pytest

from memstore.core.errors import QueryError
from memstore.store.database import Database


def test_a_failed_commit_rolls_the_snapshot_back(tmp_path):
    db = Database(str(tmp_path / "s.duckdb"), dim=4, embedder="test")
    real_run = db.run

    def run(name, *args, **kwargs):
        if name.endswith(":commit"):
            raise QueryError(name, "COMMIT", None, RuntimeError("injected: the commit failed"))
        return real_run(name, *args, **kwargs)

    db.run = run  # type: ignore[method-assign]
    with pytest.raises(QueryError, match="injected"):
        with db.snapshot("export"):
            assert db.scalar("SELECT count(*) FROM memories") == 0
    db.run = real_run  # type: ignore[method-assign]
    with db.snapshot("again"):                      # BEGIN works: nothing was left open
        assert db.scalar("SELECT count(*) FROM memories") == 0
    db.run("checkpoint", sql="CHECKPOINT")
    db.close()


def test_a_failed_body_rolls_the_snapshot_back(tmp_path):
    db = Database(str(tmp_path / "b.duckdb"), dim=4, embedder="test")
    with pytest.raises(ZeroDivisionError):
        with db.snapshot("export"):
            1 / 0  # noqa: B018
    with db.snapshot("again"):
        assert db.scalar("SELECT count(*) FROM memories") == 0
    db.close()
