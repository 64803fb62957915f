"""Hypothesis round trips: add(infer=False) → get returns the same text and metadata, whatever the
characters (quotes, SQL-ish strings, control characters, any printable unicode)."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import Memory
from memstore.core.errors import IdentityError
from memstore.core.identity import RESERVED_METADATA_KEYS
from memstore.core.scope_rule import canonical_id

SQLISH = ["'; DROP TABLE memories; --", "\" OR 1=1 --", "Robert'); DELETE FROM history;--", "$user_id", "?", "%s",
          "{dim}", "/*WHERE*/", "\\", "NULL", "u=alice|a=|r="]

texts = st.one_of(
    st.sampled_from(SQLISH),
    st.text(min_size=1, max_size=200),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).map(lambda s: s + " 'x'"),
    st.builds(lambda a, b: f"{a} {b}", st.sampled_from(SQLISH), st.text(max_size=40)),
).filter(lambda s: s.strip())

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**63, max_value=2**63 - 1),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30),
                         st.sampled_from(SQLISH))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=10)
metadata = st.dictionaries(st.one_of(st.text(min_size=1, max_size=20), st.sampled_from(SQLISH))
                           .filter(lambda k: k not in RESERVED_METADATA_KEYS), json_values, max_size=5)

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _store(path: Path, config: dict | None = None) -> Memory:
    """One store per test function: @given wraps an inner function, so Hypothesis runs all its
    examples inside one test call and the function-scoped tmp_path is safe to use."""
    return Memory(str(path), config=config)


def test_add_then_get_round_trips_text_and_metadata(tmp_path):
    m = _store(tmp_path / "rt.duckdb")
    users = (f"user-{i}" for i in itertools.count())  # fresh scope per example: no dedupe across examples

    @SETTINGS
    @given(text=texts, meta=metadata)
    def check(text, meta):
        user = next(users)
        out = m.add(text, user_id=user, infer=False, metadata=meta)
        assert [r["memory"] for r in out["results"]] == [text.strip()]
        got = m.get(out["results"][0]["id"])
        assert got["memory"] == text.strip()
        assert got["metadata"] == meta
        assert got["user_id"] == user
        listed = m.get_all(user_id=user)["results"]
        assert [(r["id"], r["memory"], r["metadata"]) for r in listed] == [(got["id"], got["memory"], meta)]
        assert m.db.scalar("SELECT content FROM messages WHERE user_id = ?", [user]) == text

    try:
        check()
        # the store's tables are all still there after the SQL-ish inputs
        assert m.db.scalar("SELECT count(*) FROM memories") >= 1
        assert m.db.scalar("SELECT count(*) FROM history") == m.db.scalar("SELECT count(*) FROM memories")
    finally:
        m.close()


def test_identity_values_round_trip_and_stay_separate(tmp_path):
    m = _store(tmp_path / "ids.duckdb", {"embedder": {"provider": "hashing"}})  # identity plumbing only
    seen: dict[tuple, str] = {}
    ident = st.one_of(st.none(), st.sampled_from(["a", "a|b", "a=b", "a\\", "|", "="] + SQLISH),
                      st.text(min_size=1, max_size=12).filter(lambda s: s.strip() and "\x00" not in s))

    @SETTINGS
    @given(user=ident, agent=ident, run=ident)
    def check(user, agent, run):
        if user is None and agent is None and run is None:
            return
        try:       # the one scope rule: trimmed + NFC; control and format characters refused
            key = tuple(canonical_id(v, k) if v else None for k, v in zip(("user_id", "agent_id", "run_id"),
                                                                           (user, agent, run)))
        except IdentityError:
            with pytest.raises(IdentityError):
                m.add("refused", user_id=user, agent_id=agent, run_id=run, infer=False)
            return
        text = f"memory of {key!r}"
        out = m.add(text, user_id=user, agent_id=agent, run_id=run, infer=False)
        if key in seen:  # the same scope again: deduplicated, never a second row (NONE: the source kept)
            assert [(r["event"], r["id"]) for r in out["results"]] == [("NONE", seen[key])]
            return
        assert len(out["results"]) == 1
        seen[key] = out["results"][0]["id"]
        got = m.get(seen[key])
        assert (got.get("user_id"), got.get("agent_id"), got.get("run_id")) == key
        exact = {k: v for k, v in zip(("user_id", "agent_id", "run_id"), key) if v is not None}
        stored = {(r["user_id"], r["agent_id"], r["run_id"]) for r in
                  m.db.dicts("t", [seen[key]], sql="SELECT user_id, agent_id, run_id FROM memories WHERE id = ?")}
        assert stored == {key}
        # different triples never share a scope key
        assert m.db.scalar("SELECT count(DISTINCT scope_key) FROM memories") == len(seen)
        assert exact  # at least one identity key

    try:
        check()
    finally:
        m.close()
