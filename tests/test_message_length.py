"""One limit on a message's length (config key `limits.max_message_chars`): add() refuses a longer
message with a typed error and stores nothing; ingest skips it and reports why; both read the
same config key, so a message one of them takes the other takes too."""
from __future__ import annotations

import json

import pytest

from memstore import Memory
from memstore.core.errors import ConfigError, RequestTooLargeError


def _export(path, texts):
    path.write_text("\n".join(json.dumps({"role": "user", "content": t}) for t in texts) + "\n")
    return path


@pytest.mark.parametrize("infer", [True, False])
def test_add_refuses_a_message_over_the_limit_and_stores_nothing(store_path, infer):
    with Memory(store_path, config={"limits": {"max_message_chars": 50}}) as m:
        with pytest.raises(RequestTooLargeError, match=r"message #1 has 60 characters; the limit is 50") as err:
            m.add([{"role": "user", "content": "I live in Quito"}, {"role": "user", "content": "y" * 60}],
                  user_id="u", infer=infer)
        assert "limits.max_message_chars" in str(err.value.hint)
        assert m.db.scalar("SELECT count(*) FROM messages") == 0
        assert m.db.scalar("SELECT count(*) FROM memories") == 0
        assert m.add("z" * 50, user_id="u", infer=infer) is not None     # at the limit: taken


def test_ingest_and_add_apply_the_same_configured_limit(store_path, tmp_path):
    over, under = "I keep bees. " + "b" * 60, "I keep goats on the farm."
    with Memory(store_path, config={"limits": {"max_message_chars": 50}}) as m:
        r = m.ingest(_export(tmp_path / "chat.jsonl", [under, over]), user_id="farm", progress=False)
        assert r.messages["stored"] == 1 and r.messages["skipped"] == 1
        assert any("over the limit of 50" in p.reason for p in r.problems)
        with pytest.raises(RequestTooLargeError, match="the limit is 50"):
            m.add(over, user_id="farm", infer=False)
        # an explicit ingest limit still wins for that ingest
        r2 = m.ingest(_export(tmp_path / "chat2.jsonl", [over]), user_id="farm2", progress=False,
                      max_message_chars=1000)
        assert r2.messages["stored"] == 1


def test_the_default_limit_is_the_same_for_add_and_ingest(memory):
    assert memory.config.limits.max_message_chars == 200_000
    with pytest.raises(RequestTooLargeError, match="the limit is 200,000"):
        memory.add("a" * 200_001, user_id="u", infer=False)


@pytest.mark.parametrize("bad", [0, -1, "10", True, 1.5])
def test_a_bad_limit_is_a_config_error(store_path, bad):
    with pytest.raises(ConfigError, match="max_message_chars"):
        Memory(store_path, config={"limits": {"max_message_chars": bad}})
