"""Retention (messages and history text, global or per scope, most specific wins) and the history
policy (full / redacted / off) on every write path: add, supersede, update, delete."""
from __future__ import annotations

import datetime as dt

import pytest

from memstore import Memory
from memstore.cli import main as cli
from memstore.governance.retention import RetentionError

HASHING = {"embedder": {"provider": "hashing"}}
OLD, RECENT, NOW = dt.datetime(2024, 1, 1), dt.datetime(2024, 5, 25), dt.datetime(2024, 6, 1)


@pytest.fixture(scope="module")
def nlp_memory(tmp_path_factory):
    """One Memory (spaCy loaded once); each test resets it."""
    m = Memory(str(tmp_path_factory.mktemp("ret") / "r.duckdb"), config={**HASHING, "messages_kept": None})
    yield m
    m.close()


@pytest.fixture
def m(nlp_memory):
    nlp_memory.reset()
    nlp_memory.db.con.execute("DELETE FROM retention_policies")
    return nlp_memory


def seed(m: Memory) -> None:
    """Each of ann, ben and cid has an old and a recent message (and the memories/history they made)."""
    for user in ("ann", "ben", "cid"):
        for when in (OLD, RECENT):
            m.add([{"role": "user", "content": f"{user} note from {when:%B}", "created_at": when.isoformat()}],
                  user_id=user, infer=False)
    m.db.con.execute("UPDATE history h SET created_at = m.valid_from FROM memories m WHERE m.id = h.memory_id")


def messages(m: Memory, user: str) -> int:
    return m.db.scalar("SELECT count(*) FROM messages WHERE user_id = ?", [user])


def test_global_policy_with_scope_overrides(m):
    seed(m)
    m.set_retention("messages", 30)                       # global
    m.set_retention("messages", None, user_id="ben")      # ben keeps everything
    m.set_retention("messages", 3, user_id="cid")         # cid: stricter than global
    assert m.apply_retention(now=NOW, dry_run=True) == {"messages": 3, "history_text": 0, "reads": 0}
    assert messages(m, "ann") == 2                        # dry run changed nothing
    assert m.apply_retention(now=NOW) == {"messages": 3, "history_text": 0, "reads": 0}
    assert (messages(m, "ann"), messages(m, "ben"), messages(m, "cid")) == (1, 2, 0)
    assert m.apply_retention(now=NOW) == {"messages": 0, "history_text": 0, "reads": 0}   # idempotent
    assert len(m.get_all(user_id="ann")["results"]) == 2                     # memories untouched


def test_history_text_retention_keeps_events_and_times(m):
    seed(m)
    m.set_retention("history_text", 60, user_id="ann")
    before = m.db.rows("h", sql="SELECT id, event, created_at FROM history WHERE user_id = 'ann' ORDER BY id")
    assert m.apply_retention(now=NOW) == {"messages": 0, "history_text": 1, "reads": 0}
    after = m.db.rows("h", sql="SELECT id, event, created_at FROM history WHERE user_id = 'ann' ORDER BY id")
    assert after == before
    texts = m.db.rows("t", sql="SELECT created_at, new_memory FROM history WHERE user_id = 'ann' ORDER BY created_at")
    assert texts[0][1] is None and texts[1][1] == "ann note from May"
    assert m.db.scalar("SELECT count(*) FROM history WHERE user_id = 'ben' AND new_memory IS NULL") == 0


def test_most_specific_policy_wins(m):
    m.add("agent scoped note", user_id="dee", agent_id="bot", infer=False, timestamp=OLD)
    m.add("plain note", user_id="dee", infer=False, timestamp=OLD)
    m.db.con.execute("UPDATE messages SET created_at = ?", [OLD])
    m.set_retention("messages", 1, user_id="dee")
    m.set_retention("messages", None, user_id="dee", agent_id="bot")
    assert m.apply_retention(now=NOW)["messages"] == 1
    assert m.db.rows("x", sql="SELECT agent_id FROM messages") == [("bot",)]


def test_policies_are_listed_replaced_and_cleared(m):
    m.set_retention("messages", 30)
    m.set_retention("messages", 10)                      # replaces, not adds
    m.set_retention("history_text", 90, user_id="ann")
    frame = m.retention_policies()
    assert frame.select("target", "user_id", "retain_days").rows() == [
        ("history_text", "ann", 90), ("messages", None, 10)]
    assert m.clear_retention("messages") is True and m.clear_retention("messages") is False
    assert m.retention_policies().height == 1


@pytest.mark.parametrize("target, days, match", [
    ("messagez", 3, "unknown retention target 'messagez'"),
    ("messages", -1, "retain_days must be a whole number"),
    ("messages", 2.5, "retain_days must be a whole number"),
])
def test_bad_policy_is_a_clear_error_and_stores_nothing(m, target, days, match):
    with pytest.raises(RetentionError, match=match):
        m.set_retention(target, days)
    assert m.retention_policies().height == 0


def test_forget_removes_the_scopes_policies(m):
    m.add("x", user_id="eve", infer=False)
    m.set_retention("messages", 5, user_id="eve")
    m.set_retention("messages", 30)
    r = m.forget(user_id="eve")
    assert r["rows_removed"]["retention_policies"] == 1
    assert m.retention_policies()["user_id"].to_list() == [None]


@pytest.mark.filterwarnings("ignore:store .* was embedded with")   # the CLI's default embedder; nothing is embedded
def test_cli_retention(m, capsys):
    path = m.db.path
    seed(m)
    m.close()
    try:
        assert cli(["retention", "set", "messages", "30", "--store", path]) == 0
        assert cli(["retention", "set", "messages", "forever", "--user", "ben", "--store", path]) == 0
        assert cli(["retention", "show", "--store", path]) == 0
        out = capsys.readouterr().out
        assert "messages      30 day(s)" in out and "forever      user_id=ben" in out
        assert cli(["retention", "apply", "--dry-run", "--now", NOW.isoformat(), "--store", path]) == 0
        assert "would remove 2 message(s)" in capsys.readouterr().out
        assert cli(["retention", "apply", "--now", NOW.isoformat(), "--store", path]) == 0
        assert "removed 2 message(s)" in capsys.readouterr().out
        with pytest.raises(SystemExit):
            cli(["retention", "set", "messages", "soon", "--store", path])
    finally:
        m.db.reopen()


# -- history policy --------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["full", "redacted", "off"])
def test_history_policy_on_every_write_path(m, policy):
    m.config.history = policy
    try:
        m.add("I live in Boston", user_id="hal")
        m.add("I moved to Denver", user_id="hal")                      # supersedes Boston
        rows = {r["memory"]: r["id"] for r in m.get_all(user_id="hal", include_superseded=True)["results"]}
        denver = next(i for t, i in rows.items() if "Denver" in t)
        m.update(denver, "Hal lives in Denver, Colorado")
        m.delete(denver)
        events = m.db.rows("h", sql="SELECT event, old_memory, new_memory, user_id, scope_key FROM history "
                                    "ORDER BY created_at, event")
    finally:
        m.config.history = "full"
    if policy == "off":
        assert events == []
        return
    assert sorted({e[0] for e in events}) == ["ADD", "DELETE", "SUPERSEDE", "UPDATE"]
    assert all(e[3] == "hal" and e[4] == "u=hal|a=|r=" for e in events)      # identity on every row
    texts = [t for e in events for t in e[1:3] if t is not None]
    if policy == "redacted":
        assert texts == []
    else:
        joined = " ".join(texts)
        assert "Boston" in joined and "Denver, Colorado" in joined
