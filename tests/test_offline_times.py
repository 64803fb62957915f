"""Time phrases of an add() with no timestamp are read against the moment it is stored: "this
week" expires, "last month" dates the fact (before, they were read against nothing: no expiry, the
storage time as valid_from, and the phrase left in the text as the only trace)."""
from __future__ import annotations

import datetime as dt

import pytest

from memstore import Memory


@pytest.fixture
def m(tmp_path):
    store = Memory(str(tmp_path / "t.duckdb"))
    yield store
    store.close()


def _by_text(m: Memory, user: str) -> dict[str, dict]:
    return {r["memory"]: r for r in m.get_all(user_id=user)["results"]}


def test_relative_times_without_a_timestamp_are_read_against_now(m):
    before = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    for text in ("I am in Lisbon this week", "I moved to Porto last month", "I like green tea"):
        m.add(text, user_id="ana")
    rows = _by_text(m, "ana")
    lisbon = next(r for t, r in rows.items() if "Lisbon" in t)
    porto = next(r for t, r in rows.items() if "Porto" in t)
    tea = next(r for t, r in rows.items() if "tea" in t)
    until = dt.datetime.fromisoformat(lisbon["expiration_date"])
    assert before < until <= before + dt.timedelta(days=8)          # the end of this week
    moved = dt.datetime.fromisoformat(porto["valid_from"])
    assert abs((before - dt.timedelta(days=30)) - moved) < dt.timedelta(days=1)
    assert tea["valid_from"] == tea["created_at"] and tea["expiration_date"] is None


def test_a_given_timestamp_still_sets_the_reference(m):
    at = dt.datetime(2025, 5, 10, 12)
    m.add("I moved to Porto last month", user_id="bo", timestamp=at)
    m.add("I am in Lisbon this week", user_id="bo", timestamp=at)
    rows = _by_text(m, "bo")
    porto = next(r for t, r in rows.items() if "Porto" in t)
    assert dt.datetime.fromisoformat(porto["valid_from"]).date() == dt.date(2025, 4, 10)
    # the trip ended long ago: an expired memory is not current
    assert not any("Lisbon" in t for t in rows)
    assert any("Lisbon" in r["memory"] for r in m.get_all(user_id="bo", show_expired=True)["results"])
