"""Expiration: hidden from reads by default, shown on request, purged physically with an EXPIRE
history event (text-free under history="redacted"), in one transaction."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.core.errors import StoreWriteError

PAST, FUTURE = "2020-01-01", "2999-01-01"


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    mem = Memory(str(tmp_path_factory.mktemp("exp") / "e.duckdb"))
    yield mem
    mem.close()


def texts(out: dict) -> set[str]:
    return {r["memory"] for r in out["results"]}


def rows_naming(m: Memory, mid: str) -> dict[str, int]:
    return {t: m.db.scalar(f"SELECT count(*) FROM {t} WHERE {c}", [mid] * c.count("?")) for t, c in (
        ("memories", "id = ?"), ("entity_postings", "memory_id = ?"), ("keyword_postings", "memory_id = ?"),
        ("memory_links", "src_id = ? OR dst_id = ?"))}


def test_expired_memories_are_hidden_unless_asked(m):
    m.add("I'm staying at the Hilton in Paris", user_id="ann", timestamp="2019-12-20", expiration_date=PAST)
    m.add("I love hiking", user_id="ann", expiration_date=FUTURE)
    assert texts(m.get_all(user_id="ann")) == {"Ann loves hiking"}
    assert "Ann is staying at the Hilton in Paris" not in texts(m.search("Hilton Paris", user_id="ann"))
    shown = {r["memory"]: r["status"] for r in m.get_all(user_id="ann", show_expired=True)["results"]}
    assert shown == {"Ann loves hiking": "current", "Ann is staying at the Hilton in Paris": "expired"}
    hit = m.search("Hilton Paris", user_id="ann", show_expired=True)["results"][0]
    assert (hit["memory"], hit["status"]) == ("Ann is staying at the Hilton in Paris", "expired")
    # as_of before the expiry: it was current then
    assert "Ann is staying at the Hilton in Paris" in texts(m.get_all(user_id="ann", as_of="2019-12-25"))
    tl = m.timeline(user_id="ann")
    paris = tl.filter(tl["memory"].str.contains("Paris")).row(0, named=True)
    assert paris["status"] == "expired" and paris["valid_to"].isoformat() == "2020-01-01T00:00:00"


def test_update_can_expire_a_memory(m):
    mid = m.add("I drive a red Tesla", user_id="ben")["results"][0]["id"]
    m.update(mid, expiration_date=PAST)
    assert texts(m.get_all(user_id="ben")) == set()
    assert m.get(mid)["status"] == "expired"


def test_restating_an_expired_fact_stores_it_again(m):
    m.add("I'm in Lisbon", user_id="cat", expiration_date=PAST)
    out = m.add("I'm in Lisbon", user_id="cat")
    assert [r["event"] for r in out["results"]] == ["ADD"]
    assert texts(m.get_all(user_id="cat")) == {"Cat is in Lisbon"}


def test_purge_removes_rows_and_keeps_what_readers_see(m):
    m.add("I live in Boston", user_id="dan", timestamp="2023-01-01")
    temp = m.add("I live in Oslo", user_id="dan", timestamp="2023-02-01", expiration_date=PAST)["results"]
    oslo = next(r["id"] for r in temp if r["event"] == "ADD")
    m.add("I'm in Rome", user_id="eve", expiration_date=PAST)                       # another scope
    boston = next(r for r in m.get_all(user_id="dan", include_superseded=True)["results"] if "Boston" in r["memory"])
    assert boston["superseded_by"] == oslo and rows_naming(m, oslo)["keyword_postings"] > 0
    before = [texts(m.get_all(user_id="dan", **kw)) for kw in ({}, {"include_superseded": True})]

    dry = m.purge_expired(user_id="dan", dry_run=True)
    assert (dry["purged"], dry["ids"]) == (0, [oslo]) and m.get(oslo) is not None
    out = m.purge_expired(user_id="dan", actor_id="ops")
    assert (out["purged"], out["ids"]) == (1, [oslo])
    assert rows_naming(m, oslo) == {"memories": 0, "entity_postings": 0, "keyword_postings": 0, "memory_links": 0}
    assert [texts(m.get_all(user_id="dan", **kw)) for kw in ({}, {"include_superseded": True})] == before
    kept = m.get(boston["id"])
    assert kept["status"] == "superseded" and kept["superseded_by"] is None     # no row names the purged id
    events = m.history(oslo)
    assert [(e["event"], e["actor_id"]) for e in events] == [("ADD", None), ("EXPIRE", "ops")]
    assert events[-1]["old_memory"] == "Dan lives in Oslo"                      # history="full" keeps text
    assert texts(m.get_all(user_id="eve", show_expired=True)) == {"Eve is in Rome"}   # scope respected
    assert m.purge_expired()["purged"] >= 1                                     # all scopes
    assert texts(m.get_all(user_id="eve", show_expired=True)) == set()


def test_purge_is_one_transaction(m):
    mid = m.add("I'm at a conference in Berlin", user_id="fin", expiration_date=PAST)["results"][0]["id"]
    m.db.faults.add("write:purge_memories")
    try:
        with pytest.raises(StoreWriteError):
            m.purge_expired(user_id="fin")
    finally:
        m.db.faults.clear()
    assert m.get(mid) is not None and rows_naming(m, mid)["keyword_postings"] > 0
    assert [e["event"] for e in m.history(mid)] == ["ADD"]


def test_redacted_history_keeps_an_expire_event_without_text(tmp_path):
    with Memory(str(tmp_path / "r.duckdb"), config={"history": "redacted"}) as m:
        mid = m.add("My passport number is X123", user_id="gil", expiration_date=PAST)["results"][0]["id"]
        assert m.purge_expired(user_id="gil")["ids"] == [mid]
        events = m.history(mid)
        assert [e["event"] for e in events] == ["ADD", "EXPIRE"]
        assert all(e["old_memory"] is None and e["new_memory"] is None for e in events)
        assert m.db.scalar("SELECT count(*) FROM history WHERE contains(coalesce(old_memory, '') || "
                           "coalesce(new_memory, ''), 'X123')") == 0
