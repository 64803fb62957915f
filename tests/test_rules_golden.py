"""Each rule is written once in memstore/core/rules/; where SQL applies the same rule, the golden
cases of tests/golden/rules/*.jsonl run through both (and, where a user can reach it, through
`Memory.add`), so the two cannot drift. Review a rule change as a diff of these files."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from memstore import Memory
from memstore.core.ids import content_hash, new_id
from memstore.core.rules.supersession import closed_at
from memstore.core.rules.validity import status_expr, status_of, visibility_sql
from memstore.store.database import Database
from memstore.store.unit import write_unit
from memstore.store.writer import BatchedWriter

GOLDEN = Path(__file__).parent / "golden" / "rules"


def _cases(name: str) -> list[dict]:
    return [json.loads(line) for line in (GOLDEN / name).read_text().splitlines() if line.strip()]


def _t(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def _ids(cases: list[dict]) -> list[str]:
    return [c["case"] for c in cases]


@pytest.fixture
def db(tmp_path: Path):
    d = Database(str(tmp_path / "rules.duckdb"), dim=2, embedder="t")
    yield d
    d.close()


def _memory_row(db: Database, *, text: str = "x", scope_key: str = "u=a|a=|r=", valid_from=None,
                invalidated_at=None, expiration_date=None) -> str:
    mid = new_id()
    now = dt.datetime(2026, 1, 1)
    with write_unit(db, "commit"):
        db.insert_values("memories", {
            "id": [mid], "memory": [text], "hash": [content_hash(text)], "user_id": ["a"], "agent_id": [None],
            "run_id": [None], "scope_key": [scope_key], "created_at": [now], "updated_at": [now],
            "valid_from": [valid_from], "invalidated_at": [invalidated_at], "expiration_date": [expiration_date],
            "embedding": [[1.0, 0.0]], "doc_len": [1]})
    return mid


# -- supersession: core/rules/supersession.py vs sql/queries/{supersede_memories,narrow_validity}.sql --
SUPERSESSION = _cases("supersession.jsonl")


@pytest.mark.parametrize("case", SUPERSESSION, ids=_ids(SUPERSESSION))
def test_supersession_rule(case: dict) -> None:
    got = closed_at(case["kind"], _t(case["valid_from"]), _t(case["invalidated_at"]), _t(case["at"]))
    assert got == _t(case["expected"])


@pytest.mark.parametrize("case", SUPERSESSION, ids=_ids(SUPERSESSION))
def test_supersession_sql_applies_the_same_rule(db: Database, case: dict) -> None:
    mid = _memory_row(db, valid_from=_t(case["valid_from"]), invalidated_at=_t(case["invalidated_at"]))
    sql = {"supersede": "queries/supersede_memories", "narrow": "queries/narrow_validity"}[case["kind"]]
    with write_unit(db, "resolve"):
        closed = db.rows(sql, {"scope_key": "u=a|a=|r=", "ids": [mid], "at": _t(case["at"]), "new_id": "n",
                               "now": dt.datetime(2026, 1, 2)}, writes=True)
    stored = db.scalar("SELECT invalidated_at FROM memories WHERE id = ?", [mid])
    if case["expected"] is None:
        assert closed == [] and stored == _t(case["invalidated_at"])
    else:
        assert [r[0] for r in closed] == [mid] and stored == _t(case["expected"])


@pytest.mark.parametrize("case", [c for c in SUPERSESSION if c["kind"] == "narrow"],
                         ids=_ids([c for c in SUPERSESSION if c["kind"] == "narrow"]))
def test_a_batched_writer_narrows_as_the_sql_does(db: Database, case: dict) -> None:
    """The group commit's writer narrows a stored memory it read for a late fact without the SQL
    (its closure joins the unit's one closing statement): the same rule, the same stored result."""
    mid = _memory_row(db, valid_from=_t(case["valid_from"]), invalidated_at=_t(case["invalidated_at"]))
    db.run("t", {"id": mid}, sql="UPDATE memories SET subject = 'ana', slot = 'lives_in' WHERE id = $id", writes=True)
    w = BatchedWriter(db)
    now = dt.datetime(2026, 6, 1)
    with w.unit("commit"):
        assert [r[0] for r in w.slot_history("u=a|a=|r=", "ana|lives_in", now)] == [mid]
        closed = w.close("narrow", scope_key="u=a|a=|r=", ids=[mid], at=_t(case["at"]), new_id="n", now=now)
    stored = db.scalar("SELECT invalidated_at FROM memories WHERE id = ?", [mid])
    if case["expected"] is None:
        assert closed == [] and stored == _t(case["invalidated_at"])
    else:
        assert closed == [(mid, "x")] and stored == _t(case["expected"])


def test_supersession_through_add_closes_where_the_replacement_begins(tmp_path: Path) -> None:
    """End to end: the rule as a user meets it (timeline's valid_to)."""
    with Memory(str(tmp_path / "e.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        m.add("I live in Lisbon", user_id="ana", timestamp="2026-01-01")
        m.add("I moved to Porto", user_id="ana", timestamp="2026-03-01")
        tl = m.timeline(user_id="ana").sort("valid_from")
    lisbon = tl.filter(pl.col("memory").str.contains("Lisbon")).row(0, named=True)
    assert lisbon["status"] == "superseded"
    assert lisbon["valid_to"] == closed_at("supersede", _t("2026-01-01"), None, _t("2026-03-01"))


# -- status: one definition of current / superseded / expired ----------------------------------------
STATUS = _cases("status.jsonl")


@pytest.mark.parametrize("case", STATUS, ids=_ids(STATUS))
def test_status_rule_python_polars_and_sql_agree(db: Database, case: dict) -> None:
    inv, exp, now = _t(case["invalidated_at"]), _t(case["expiration_date"]), _t(case["now"])
    assert status_of(inv, exp, now) == case["expected"]
    frame = pl.DataFrame({"invalidated_at": [inv], "expiration_date": [exp]},
                         schema={"invalidated_at": pl.Datetime("us"), "expiration_date": pl.Datetime("us")})
    assert frame.select(status_expr(now).alias("s"))["s"][0] == case["expected"]
    mid = _memory_row(db, invalidated_at=inv, expiration_date=exp)
    visible = db.scalar(f"SELECT count(*) FROM memories m WHERE m.id = $id AND {visibility_sql()}",
                        {"id": mid, "now": now})
    assert bool(visible) == (case["expected"] == "current")


# -- dedupe: the same memory = same normalised text among the scope's current memories ----------------
DEDUPE = _cases("dedupe.jsonl")
PAST, FUTURE = dt.datetime(2000, 1, 1), dt.datetime(2100, 1, 1)


@pytest.mark.parametrize("case", DEDUPE, ids=_ids(DEDUPE))
def test_dedupe_sql_matches_only_current_twins(db: Database, case: dict) -> None:
    ids = [_memory_row(db, text=s["text"], invalidated_at=PAST if s.get("superseded") else None,
                       expiration_date=PAST if s.get("expired") else None) for s in case["stored"]]
    found = dict(db.rows("queries/dedupe_hash", {"scope_key": "u=a|a=|r=", "now": dt.datetime.now(),
                                                 "hashes": [content_hash(case["new"])]}))
    want = None if case["expected"] is None else ids[case["expected"]]
    assert found.get(content_hash(case["new"])) == want


@pytest.mark.parametrize("case", DEDUPE, ids=_ids(DEDUPE))
def test_dedupe_through_add_agrees(tmp_path: Path, case: dict) -> None:
    """The write path decides with the scope cache (Python); it must agree with the SQL above."""
    import time

    with Memory(str(tmp_path / "d.duckdb"), config={"embedder": {"provider": "hashing"}}) as m:
        ids: dict[int, str] = {}
        expiring = [i for i, s in enumerate(case["stored"]) if s.get("expired")]
        for i in expiring:          # stored first, so they have expired before their twins are added
            until = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(seconds=1)
            ids[i] = m.add(case["stored"][i]["text"], user_id="a", infer=False, expiration_date=until)["results"][0]["id"]
        if expiring:
            time.sleep(1.2)
        for i, s in enumerate(case["stored"]):
            if i in ids:
                continue
            ids[i] = m.add(s["text"], user_id="a", infer=False)["results"][0]["id"]
            if s.get("superseded"):
                newer = m.add(f"{s['text']} (newer)", user_id="a", infer=False)["results"][0]["id"]
                m.resolve(keep=newer, supersede=[ids[i]])
        out = m.add(case["new"], user_id="a", infer=False)
    if case["expected"] is None:
        assert [r["event"] for r in out["results"]] == ["ADD"]
    else:
        # one memory, this occurrence recorded as one more of its sources (event NONE)
        assert [r["event"] for r in out["results"]] == ["NONE"] and out["extraction"]["deduplicated"] == 1
