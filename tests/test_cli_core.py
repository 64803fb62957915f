"""`python -m memstore.cli` add / search / list / history / delete, run as real subprocesses on a
real store; errors come out as advice on stderr with a non-zero exit code."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memstore

REPO = Path(memstore.__file__).resolve().parent.parent


def cli(*args: str, env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    base = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    base.pop("MEMSTORE_PATH", None)
    return subprocess.run([sys.executable, "-m", "memstore.cli", *args], capture_output=True, text=True,
                          env={**base, **(env or {})}, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cli") / "cli.duckdb")


@pytest.fixture(scope="module")
def added(store):
    out = cli("add", "I'm vegetarian and I live in Boston", "--store", store, "--user", "alice")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("ADD") for line in lines)
    return {line.split(None, 2)[2]: line.split(None, 2)[1] for line in lines}


def test_add_prints_what_was_stored(added):
    assert set(added) == {"Alice is vegetarian", "Alice lives in Boston"}


def test_add_raw_json_and_duplicate(store, added):
    out = cli("add", "Met Bob at the jazz club", "--raw", "--json", "--store", store, "--user", "alice")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [r["memory"] for r in data["results"]] == ["Met Bob at the jazz club"]
    again = cli("add", "I live in Boston", "--store", store, "--user", "alice")
    assert again.returncode == 0 and again.stdout.strip() == ""
    assert "nothing new stored" in again.stderr and "1 duplicate" in again.stderr


def test_search_and_list(store, added):
    out = cli("search", "Boston", "--store", store, "--user", "alice", "--json")
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert results[0]["id"] == added["Alice lives in Boston"] and results[0]["memory"] == "Alice lives in Boston"
    listed = cli("list", "--store", store, "--user", "alice")
    assert listed.returncode == 0, listed.stderr
    for text, mid in added.items():
        assert f"{mid}  {text}" in listed.stdout


def test_history_then_delete(store, added):
    mid = added["Alice is vegetarian"]
    hist = cli("history", mid, "--store", store)
    assert hist.returncode == 0 and "ADD" in hist.stdout and "Alice is vegetarian" in hist.stdout
    gone = cli("delete", mid, "--store", store)
    assert gone.returncode == 0 and "deleted" in gone.stdout.lower()
    hist = cli("history", mid, "--store", store, "--json")
    assert [e["event"] for e in json.loads(hist.stdout)] == ["ADD", "DELETE"]
    again = cli("delete", mid, "--store", store)
    assert again.returncode == 1 and "no memory with id" in again.stderr and "Traceback" not in again.stderr


def test_errors_become_advice(store, added):
    out = cli("search", "Boston", "--store", store)
    assert out.returncode != 0 and "user_id" in out.stderr and "Traceback" not in out.stderr
    out = cli("add", "I like tea", "--store", store)
    assert out.returncode != 0 and "user_id" in out.stderr and "Traceback" not in out.stderr
    out = cli("list", "--store", store, "--user", "nobody")
    assert out.returncode == 0 and out.stdout == ""
    assert "memstore ingest" in out.stderr and "nobody" in out.stderr


def test_store_from_env_var(tmp_path):
    path = str(tmp_path / "env.duckdb")
    out = cli("add", "I work at Acme", "--user", "carol", env={"MEMSTORE_PATH": path})
    assert out.returncode == 0, out.stderr
    with memstore.Memory(path, config={"read_only": True}) as m:
        assert [r["memory"] for r in m.get_all(user_id="carol")["results"]] == ["Carol works at Acme"]
