"""One write door: no module outside memstore/store/ opens a transaction, and every unit of work
names an operation of `memstore.store.unit.WRITE_OPERATIONS` (so that list is every kind of write)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memstore.store.unit import WRITE_OPERATIONS, write_unit

ROOT = Path(__file__).resolve().parent.parent / "memstore"


def _calls(attr: str) -> list[tuple[Path, ast.Call]]:
    out = []
    for p in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                if name == attr:
                    out.append((p, node))
    return out


def test_no_transaction_outside_the_store() -> None:
    outside = [f"{p.relative_to(ROOT.parent)}:{c.lineno}" for p, c in _calls("transaction")
               if p.relative_to(ROOT).parts[0] != "store"]
    assert outside == [], "open units with memstore.store.unit.write_unit, not db.transaction"


def _literal_ops() -> set[str]:
    ops = set()
    for _, call in _calls("write_unit"):
        if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
            ops.add(call.args[1].value.split(":", 1)[0])
    for _, call in _calls("unit"):
        if call.args and isinstance(call.args[0], ast.Constant):
            ops.add(call.args[0].value.split(":", 1)[0])
    for _, call in _calls("commit"):
        for kw in call.keywords:
            if kw.arg == "step" and isinstance(kw.value, ast.Constant):
                ops.add(kw.value.value)
    return ops


def test_every_named_unit_is_a_registered_operation() -> None:
    assert _literal_ops() - set(WRITE_OPERATIONS) == set()


def test_every_registered_operation_is_used() -> None:
    # "commit" is the writer's default step name (a plain add)
    assert set(WRITE_OPERATIONS) - _literal_ops() - {"commit"} == set()


def test_an_unknown_operation_is_refused_before_any_write(tmp_path: Path) -> None:
    from memstore.store.database import Database

    db = Database(str(tmp_path / "s.duckdb"), dim=2, embedder="t")
    with pytest.raises(ValueError, match="not a write operation"):
        with write_unit(db, "drop_everything"):
            pass
    assert not db.in_transaction
    db.close()
