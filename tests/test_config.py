"""Configuration: unknown keys are errors naming the key; from_config; MEMSTORE_PATH."""
from __future__ import annotations

import os

import pytest

from memstore import ConfigError, Memory, MemoryConfig


@pytest.mark.parametrize("config, key", [
    ({"pathh": "x.duckdb"}, "pathh"),
    ({"llm": {"modle": "gpt-4o"}}, "llm.modle"),
    ({"embedder": {"dim": 384}}, "embedder.dim"),
    ({"nlp": {"name": "en_core_web_sm"}}, "nlp.name"),
    ({"llm": {"provider": "openai", "base_url": "http://x", "temprature": 0.2}}, "llm.temprature"),
])
def test_unknown_keys_raise_config_error_naming_the_key(config, key, tmp_path):
    with pytest.raises(ConfigError) as err:
        MemoryConfig.from_dict(config)
    assert repr(key) in str(err.value) and err.value.fields["key"] == key
    assert "known keys" in str(err.value)  # and says what would have been valid
    with pytest.raises(ConfigError, match=repr(key)):
        Memory.from_config({**config, "path": str(tmp_path / "never.duckdb")})
    assert not (tmp_path / "never.duckdb").exists()  # nothing was created


@pytest.mark.parametrize("config, key", [
    ({"llm": {"provider": "anthropic"}}, "llm.provider"),
    ({"embedder": {"provider": "sentence-transformers"}}, "embedder.provider"),
    ({"history": "sometimes"}, "history"),
    ({"dedupe_similarity": 1.5}, "dedupe_similarity"),
    ({"messages_kept": -1}, "messages_kept"),
    ({"search": {"w_keyword": -0.3}}, "search.w_keyword"),
    ({"search": {"w_episode": float("nan")}}, "search.w_episode"),
    ({"search": {"b": 1.5}}, "search.b"),
    ({"search": {"candidate_k": 0}}, "search.candidate_k"),
    ({"search": {"w_semantic": 0, "w_keyword": 0, "w_entity": 0}}, "search.w_semantic"),
    ({"llm": "openai"}, None),
])
def test_bad_values_raise_config_error(config, key):
    with pytest.raises(ConfigError) as err:
        MemoryConfig.from_dict(config)
    if key:
        assert err.value.fields["key"] == key and repr(key) in str(err.value)


def test_from_config_builds_a_working_memory(tmp_path):
    path = str(tmp_path / "cfg" / "store.duckdb")
    m = Memory.from_config({"path": path, "messages_kept": 2, "history": "redacted", "top_k": 7,
                            "llm": {"provider": "heuristic"}})
    try:
        assert m.path == path and os.path.exists(path)
        assert (m.config.messages_kept, m.config.history, m.config.top_k) == (2, "redacted", 7)
        mid = m.add("I live in Boston", user_id="alice")["results"][0]["id"]
        assert m.history(mid)[0]["new_memory"] is None  # redacted history keeps events, not text
        m.add([{"role": "user", "content": f"turn {i}"} for i in range(4)], user_id="alice", infer=False)
        assert m.db.scalar("SELECT count(*) FROM messages") == 2
    finally:
        m.close()
    assert MemoryConfig.from_dict({"llm": {"api_key": "sk-secret"}}).to_dict()["llm"]["api_key"] == "***"


def test_config_object_is_accepted_as_is(tmp_path):
    cfg = MemoryConfig.from_dict({"path": str(tmp_path / "obj.duckdb"), "top_k": 3})
    with Memory(config=cfg) as m:
        assert m.path == str(tmp_path / "obj.duckdb") and m.config.top_k == 3


def test_memstore_path_env_var_is_used_when_no_path_given(tmp_path, monkeypatch):
    env_path = str(tmp_path / "env" / "from_env.duckdb")
    monkeypatch.setenv("MEMSTORE_PATH", env_path)
    with Memory() as m:
        assert m.path == env_path
        m.add("I like tea", user_id="alice", infer=False)
    assert os.path.exists(env_path)

    # an explicit path (positional or in the config) wins over the environment
    explicit = str(tmp_path / "explicit.duckdb")
    with Memory(explicit) as m:
        assert m.path == explicit
    cfg_path = str(tmp_path / "cfg.duckdb")
    with Memory(config={"path": cfg_path}) as m:
        assert m.path == cfg_path
    with Memory(env_path) as m:
        assert [r["memory"] for r in m.get_all(user_id="alice")["results"]] == ["I like tea"]


def test_default_path_without_env(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMSTORE_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    with Memory() as m:
        assert os.path.abspath(m.path) == str(tmp_path / "data" / "memstore.duckdb")
    assert (tmp_path / "data" / "memstore.duckdb").exists()


def test_reopening_with_another_embedder_size_is_refused(tmp_path):
    path = str(tmp_path / "dim.duckdb")
    with Memory(path, config={"embedder": {"provider": "hashing", "dims": 64}}) as m:
        m.add("I like tea", user_id="alice", infer=False)
    with pytest.raises(Exception, match="64-d") as err:
        Memory(path, config={"embedder": {"provider": "hashing", "dims": 32}})
    assert "embedder" in str(err.value)


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, "2"])
def test_threads_must_be_a_whole_number_of_at_least_one(threads):
    with pytest.raises(ConfigError, match="'threads'") as err:
        MemoryConfig.from_dict({"threads": threads})
    assert err.value.fields["key"] == "threads"


def test_threads_sets_duckdb_threads_of_the_file_and_survives_reopen(tmp_path):
    m = Memory(str(tmp_path / "t.duckdb"), config={"threads": 1, "embedder": {"provider": "hashing"}})
    try:
        setting = "SELECT current_setting('threads')"
        assert m.db.run_instance("doc:threads", setting) == [(1,)]
        m.db.reopen()
        assert m.db.run_instance("doc:threads", setting) == [(1,)]
        m.add("I live in Lisbon", user_id="u", infer=False)
        assert len(m.get_all(filters={"user_id": "u"})["results"]) == 1
    finally:
        m.close()
