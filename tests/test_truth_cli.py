"""`memstore contradictions / resolve / timeline / purge-expired` on a real store file."""
from __future__ import annotations

import json

import pytest

from memstore import Memory
from memstore.cli import main


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "cli.duckdb")
    with Memory(path, config={"slot_supersession": "off"}) as m:
        m.add("I live in Boston", user_id="alice", timestamp="2023-01-01")
        m.add("I moved to Seattle", user_id="alice", timestamp="2023-05-01")
        m.add("I'm at a hotel in Rome", user_id="alice", expiration_date="2020-01-01")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_contradictions_resolve_timeline(store, capsys):
    code, out, _ = run(capsys, "contradictions", "--user", "alice", "--store", store, "--json")
    rows = json.loads(out)
    assert code == 0 and [(r["kind"], r["older_memory"], r["newer_memory"]) for r in rows] == \
        [("same_slot", "Alice lives in Boston", "Alice moved to Seattle")]
    code, out, _ = run(capsys, "contradictions", "--user", "alice", "--store", store)
    assert "same subject and slot lives_in: boston vs seattle" in out

    code, out, _ = run(capsys, "resolve", rows[0]["newer_id"], "--supersede", rows[0]["older_id"],
                       "--actor", "ops", "--store", store)
    assert code == 0 and "superseded 1" in out
    code, _, err = run(capsys, "contradictions", "--user", "alice", "--store", store)
    assert code == 0 and "no contradictions" in err

    code, out, _ = run(capsys, "timeline", "--user", "alice", "--store", store)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert "superseded" in lines[0] and "Alice lives in Boston" in lines[0] and "[lives_in]" in lines[0]
    code, out, _ = run(capsys, "timeline", "--user", "alice", "--slot", "lives_in", "--csv", "--store", store)
    assert out.splitlines()[0].startswith("id,memory,") and len(out.splitlines()) == 3


def test_purge_expired(store, capsys):
    code, out, err = run(capsys, "purge-expired", "--dry-run", "--store", store)
    assert code == 0 and len(out.split()) == 1 and "would purge 1" in err
    code, out, err = run(capsys, "purge-expired", "--user", "alice", "--actor", "ops", "--store", store)
    assert code == 0 and "purged 1" in err
    with Memory(store) as m:
        assert m.get(out.strip()) is None
        assert [e["event"] for e in m.history(out.strip())] == ["ADD", "EXPIRE"]


def test_errors_become_advice(store, capsys):
    code, _, err = run(capsys, "contradictions", "--store", store)
    assert code == 2 and "--user" in err
    code, _, err = run(capsys, "resolve", "no-such-id", "--supersede", "x", "--store", store)
    assert code == 1 and "no memory with id 'no-such-id'" in err
    code, _, err = run(capsys, "resolve", "no-such-id", "--store", store)
    assert code == 1 and "nothing to resolve" in err
