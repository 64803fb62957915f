"""Every public method of `Memory`, called with bad arguments, raises a MemstoreError whose message
names what was wrong and says what to do; the error is still the builtin a caller may catch
(`except ValueError` / `TypeError` / `KeyError` / `FileNotFoundError` keep working)."""
from __future__ import annotations

import os

import pytest

from memstore import Memory
from memstore.core.errors import MemstoreError, QueryError

U = {"user_id": "alice"}
MID = "<mid>"          # replaced by a stored memory's id
# (method, args, kwargs, builtin the error must also be, word the message must contain)
CASES = [
    ("add", (None,), U, ValueError, "messages"),
    ("add", ([],), U, ValueError, "messages"),
    ("add", ("hi",), {"user_id": 42}, ValueError, "user_id"),
    ("add", ("hi",), {}, ValueError, "user_id"),
    ("add", ("hi",), {**U, "metadata": "x"}, ValueError, "metadata"),
    ("add", ("hi",), {**U, "timestamp": "not a date"}, ValueError, "timestamp"),
    ("add", ("hi",), {**U, "foo": 1}, TypeError, "foo"),
    ("prepare_add", (None,), U, ValueError, "messages"),
    ("prepare_add", ("hi",), {}, ValueError, "user_id"),
    ("prepare_models", ("not a list",), {}, TypeError, "prepared"),
    ("commit_prepared", ([{"memory": "x"}],), {}, TypeError, "prepared"),
    ("start_workers", ("two",), {}, TypeError, "workers"),
    ("start_workers", (-1,), {}, TypeError, "workers"),
    ("search", (None,), U, ValueError, "query"),
    ("search_with_vector", ([[1.0]], None), U, ValueError, "query"),
    ("search", ("",), U, ValueError, "query"),
    ("search", ("x",), {**U, "top_k": "ten"}, ValueError, "top_k"),
    ("search", ("x",), {**U, "threshold": "x"}, ValueError, "threshold"),
    ("search", ("x",), {**U, "filters": "x"}, ValueError, "filters"),
    ("search", ("x",), {**U, "filters": {"a": {"$bad": 1}}}, ValueError, "$bad"),
    ("search", ("x",), {**U, "channels": ("bogus",)}, ValueError, "channel"),
    ("search", ("x",), {**U, "weights": {"bogus": 1}}, ValueError, "weight"),
    ("search", ("x",), {}, ValueError, "identity"),
    ("get", (42,), {}, ValueError, "memory_id"),
    ("get_all", (), {**U, "top_k": "x"}, ValueError, "top_k"),
    ("get_all", (), {**U, "top_k": -1}, ValueError, "top_k"),
    ("get_all", (), {**U, "filters": 42}, ValueError, "filters"),
    ("get_all", (), {**U, "as_of": "garbage"}, ValueError, "as_of"),
    ("update", ("missing",), {"text": "x"}, KeyError, "missing"),
    ("update", (MID,), {"text": ""}, ValueError, "text"),
    ("update", (MID,), {"expiration_date": "garbage"}, ValueError, "expiration_date"),
    ("delete", ("missing",), {}, KeyError, "missing"),
    ("delete_all", (), {}, ValueError, "user_id"),
    ("history", (None,), {}, ValueError, "memory_id"),
    ("resolve", (None,), {}, ValueError, "keep"),
    ("resolve", (MID,), {"supersede": 42}, ValueError, "supersede"),
    ("forget", (), {}, ValueError, "user_id"),
    ("set_retention", ("bogus", 3), {}, ValueError, "bogus"),
    ("set_retention", ("messages", -1), {}, ValueError, "retain_days"),
    ("clear_retention", (None,), {}, ValueError, "target"),
    ("apply_retention", (), {"now": "garbage"}, ValueError, "now"),
    ("purge_expired", (), {"user_id": 42}, ValueError, "user_id"),
    ("export_parquet", (42,), {}, ValueError, "directory"),
    ("export_parquet", ("<new>",), {"partition_by": "bogus"}, ValueError, "partition_by"),
    ("export_parquet", ("<new>",), {"scope": "x"}, ValueError, "scope"),
    ("import_mem0", (42,), {}, ValueError, "qdrant_path"),
    ("import_mem0", ("<new>",), {}, None, "Qdrant"),
    ("ingest", ([],), U, ValueError, "path"),
    ("ingest", (42,), U, ValueError, "path"),
    ("ingest", ("<new>",), U, FileNotFoundError, "no such file"),
    ("ingest", ("<new>",), {**U, "format": "bogus"}, ValueError, "bogus"),
    ("ingest", ("<new>",), {**U, "batch_size": 0}, ValueError, "batch_size"),
    ("ingest_known", ("x",), {**U, "format": "jsonl"}, ValueError, "conversations"),
    ("ingest_known", ([{"conversation": "c"}],), {**U, "format": "jsonl"}, ValueError, "keys"),
    ("ingest_prepared", ([{"format": "x"}],), U, ValueError, "conversations[0]"),
    ("ingest_prepared", ([],), {}, ValueError, "user_id"),
    ("reembed", ("bogus",), {}, ValueError, "embedder"),
    ("frame", ("bogus",), {}, ValueError, "bogus"),
    ("sql", ("DELETE FROM memories",), {}, None, "read-only"),
    ("sql", ("SELECT nope FROM memories",), {}, None, "nope"),
    ("search_all", (None,), {}, ValueError, "query"),
    ("search_all", ("x",), {"top_k": "x"}, ValueError, "top_k"),
    ("search_all", ("x",), {"where": "x"}, ValueError, "where"),
    ("explain_search", ("x",), {**U, "limit": -1}, ValueError, "top_k"),
    ("timeline", (), {"user_id": 42}, ValueError, "user_id"),
    ("contradictions", (), {"agent_id": 42}, ValueError, "agent_id"),
    ("import_parquet", ("<new>", "<new>"), {}, ValueError, "manifest"),
    ("import_parquet", (42, "<new>"), {}, ValueError, "directory"),
    ("erasure_receipts", (), {"user_id": 42}, ValueError, "user_id"),
    ("create_token", ("has space",), U, ValueError, "name"),
    ("create_token", ("no-scope",), {}, ValueError, "user_id"),
    ("create_token", ("bad-expiry",), {**U, "expires": "garbage"}, ValueError, "expires"),
    ("revoke_token", ("missing",), {}, KeyError, "missing"),
]


def _method(case) -> str:
    return case.values[0] if hasattr(case, "values") else case[0]


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    mem = Memory(os.fspath(tmp_path_factory.mktemp("errors") / "s.duckdb"), config={"embedder": {"provider": "hashing"}})
    mem.stored_id = mem.add("Alice lives in Boston", user_id="alice", infer=False)["results"][0]["id"]
    yield mem
    mem.close()


def says_what_to_do(exc: MemstoreError) -> bool:
    """A hint after the dash, or a rule the argument breaks ("must be ..."), or DuckDB's own
    explanation of a failed analyst query."""
    text = str(exc)
    return bool(exc.hint) or " must " in text or isinstance(exc, QueryError)


@pytest.mark.parametrize(("method", "args", "kwargs", "builtin", "word"), CASES,
                         ids=[f"{_method(c)}-{i}" for i, c in enumerate(CASES)])
def test_bad_arguments_raise_a_typed_error_that_says_what_to_do(m, tmp_path, method, args, kwargs, builtin, word):
    fresh = os.fspath(tmp_path / "new")
    if method == "ingest" and kwargs.get("format") or kwargs.get("batch_size") == 0:
        fresh = os.fspath(tmp_path / "chat.jsonl")
        with open(fresh, "w", encoding="utf-8") as fh:
            fh.write('{"role": "user", "content": "hi"}\n')
    args = tuple(m.stored_id if a == MID else fresh if a == "<new>" else a for a in args)
    with pytest.raises(MemstoreError) as info:
        getattr(m, method)(*args, **kwargs)
    exc = info.value
    if builtin is not None:
        assert isinstance(exc, builtin), f"{type(exc).__name__} is not a {builtin.__name__}"
    assert word.lower() in str(exc).lower(), str(exc)
    assert says_what_to_do(exc), f"{type(exc).__name__}: {exc}"


def test_every_public_method_is_exercised():
    public = {n for n in dir(Memory) if not n.startswith("_") and callable(getattr(Memory, n))}
    without_arguments = {"close", "optimize", "reset", "scrub", "doctor", "retention_policies", "list_tokens",
                         "worker_pids"}
    assert public - without_arguments - {_method(c) for c in CASES} == {"from_config"}     # Memory(config=...) below


@pytest.mark.parametrize(("config", "word"), [({"bogus": 1}, "bogus"), ({"embedder": {"provider": "bogus"}}, "provider"),
                                              ({"embedder": {"provider": "local", "batch_size": 0}}, "batch_size")])
def test_a_bad_config_raises_a_config_error(tmp_path, config, word):
    with pytest.raises(MemstoreError) as info:
        Memory.from_config({"path": os.fspath(tmp_path / "c.duckdb"), **config})
    assert isinstance(info.value, ValueError) and word in str(info.value) and says_what_to_do(info.value)
