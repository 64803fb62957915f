"""The offline extractor writes first-person facts under the user's name: a message's `name`, a
user id that looks like a name, else "User" (memstore/pipeline/extract_facts.py speaker_name)."""
from __future__ import annotations

import warnings

import pytest

from memstore import Memory


@pytest.mark.parametrize("user_id, want", [("alice", "Alice moved to Porto"), ("u", "User moved to Porto"),
                                           ("user-42", "User moved to Porto"), ("Jo", "Jo moved to Porto")])
def test_first_person_facts_name_the_user(tmp_path, user_id, want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = Memory(str(tmp_path / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    try:
        out = m.add("I moved to Porto last year", user_id=user_id)["results"]
        assert [r["memory"] for r in out] == [f"{want} last year"]
    finally:
        m.close()
