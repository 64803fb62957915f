"""Opening something that is not a store, or one file twice with different modes, gives a clear
typed error (and one line from the CLI), not a DuckDB traceback; `search --explain` prints every
signal, `time` included."""
from __future__ import annotations

import pytest

from memstore import Memory
from memstore.core.errors import ConfigError
from tests.test_cli_core import cli

HASHING = {"embedder": {"provider": "hashing"}}


def test_cli_store_that_is_a_directory_or_not_a_store(tmp_path):
    (tmp_path / "some_dir").mkdir()
    (tmp_path / "README.md").write_text("# hello\n" * 200)
    for target, words in ((tmp_path / "some_dir", "is a directory"), (tmp_path / "README.md", "not a memstore store")):
        out = cli("list", "--user", "alice", "--store", f"{target}{'/' if target.is_dir() else ''}")
        assert out.returncode != 0 and words in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) <= 2


def test_read_only_beside_writable_in_one_process(store_path):
    with Memory(store_path, config=HASHING) as m:
        m.add("I like tea", user_id="u", infer=False)
        with pytest.raises(ConfigError, match="already open writable in this process"):
            Memory(store_path, config={**HASHING, "read_only": True})


def test_search_explain_prints_the_time_signal(tmp_path):
    store = str(tmp_path / "e.duckdb")
    assert cli("add", "I moved to Lisbon in May 2023", "--raw", "--user", "ana", "--store", store).returncode == 0
    out = cli("search", "where did I move in May 2023", "--user", "ana", "--store", store, "--explain")
    assert out.returncode == 0, out.stderr
    assert " time " in out.stdout and " recency " in out.stdout, out.stdout
