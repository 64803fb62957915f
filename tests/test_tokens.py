"""Token storage and checking without a server: create / list / revoke on a real store file, bad
input as typed errors, what reset / export / forget do to tokens, and the server-side check
(`Access.verify`) with its throttled last-use stamps."""
from __future__ import annotations

import datetime as dt
import threading

import pytest

from memstore import Memory
from memstore.core.errors import AuthError, InvalidInputError, MemstoreError, NotFoundError
from memstore.governance.api_tokens import parse_expiry
from memstore.server.auth import Access

CONFIG = {"embedder": {"provider": "hashing"}}


@pytest.fixture
def m(tmp_path):
    mem = Memory(str(tmp_path / "t.duckdb"), config=CONFIG)
    yield mem
    mem.close()


def test_create_list_revoke_round_trip(m):
    a = m.create_token("alice-laptop", user_id=" alice ", expires="30d")
    b = m.create_token("support-ro", agent_id="support-bot", read_only=True)
    assert a["token"] != b["token"] and len(a["token"]) > 40 and a["user_id"] == "alice"
    rows = {r["name"]: r for r in m.list_tokens()}
    assert rows["alice-laptop"]["scope"] == "user_id=alice" and rows["alice-laptop"]["rights"] == "read-write"
    assert rows["support-ro"]["scope"] == "agent_id=support-bot" and rows["support-ro"]["rights"] == "read-only"
    days = (dt.datetime.fromisoformat(rows["alice-laptop"]["expires_at"]) - dt.datetime.utcnow()).days
    assert days in (29, 30) and rows["support-ro"]["expires_at"] is None
    assert not any(a["token"] in str(r) or b["token"] in str(r) for r in m.list_tokens())
    assert m.revoke_token("alice-laptop") == {"revoked": "alice-laptop"}
    assert [r["name"] for r in m.list_tokens()] == ["support-ro"]
    with pytest.raises(NotFoundError, match="no token named 'alice-laptop'"):
        m.revoke_token("alice-laptop")


def test_bad_input_is_a_typed_error_that_says_what_to_do(m):
    m.create_token("dup", user_id="a")
    with pytest.raises(InvalidInputError, match="exists already"):
        m.create_token("dup", user_id="b")
    with pytest.raises(InvalidInputError, match="not usable"):
        m.create_token("has space", user_id="a")
    with pytest.raises(InvalidInputError, match="in the past"):
        m.create_token("old", user_id="a", expires="2001-01-01")
    with pytest.raises(Exception, match="identifier|user_id|scope"):
        m.create_token("noscope")
    assert [r["name"] for r in m.list_tokens()] == ["dup"]


def test_expiry_forms():
    now = dt.datetime(2026, 1, 1)
    assert parse_expiry("12h", now) == dt.datetime(2026, 1, 1, 12)
    assert parse_expiry("2w", now) == dt.datetime(2026, 1, 15)
    assert parse_expiry(None) is None
    with pytest.raises(MemstoreError):
        parse_expiry("soonish")


def test_reset_keeps_tokens_export_leaves_them_out_forget_erases_the_scopes(m, tmp_path):
    m.add("I am Ann", user_id="ann", infer=False)
    m.create_token("ann-1", user_id="ann")
    m.create_token("ben-1", user_id="ben")
    m.reset()
    assert {r["name"] for r in m.list_tokens()} == {"ann-1", "ben-1"}
    manifest = m.export_parquet(str(tmp_path / "export"))
    assert "api_tokens" not in manifest["tables"]
    m.add("I am Ann again", user_id="ann", infer=False)
    receipt = m.forget(user_id="ann")
    assert receipt["verified"] and receipt["rows_removed"].get("api_tokens") == 1
    assert [r["name"] for r in m.list_tokens()] == ["ben-1"]


def test_verify_admin_scoped_expired_and_wrong(m):
    ok = m.create_token("ok", user_id="alice", read_only=True)["token"]
    short = m.create_token("short", user_id="alice", expires="1s")["token"]
    access = Access(m, "the-admin-token")
    assert access.verify("Bearer the-admin-token").admin
    assert access.verify("bearer  the-admin-token ").admin
    grant = access.verify(f"Bearer {ok}")
    assert (grant.name, grant.scope, grant.read_only, grant.admin) == ("ok", {"user_id": "alice"}, True, False)
    for bad in ("", "Bearer", "Basic the-admin-token", "Bearer the-admin-tokeN", f"Bearer {ok}x", "Bearer mst_"):
        with pytest.raises(AuthError, match="missing or wrong bearer token"):
            access.verify(bad)
    import time
    time.sleep(1.05)
    with pytest.raises(AuthError, match="token 'short' expired"):
        access.verify(f"Bearer {short}")


def test_a_scoped_token_cannot_become_the_admin_token(m):
    """$MEMSTORE_TOKEN set to a scoped token would make it admin: the server refuses to start."""
    from memstore.core.errors import ConfigError

    tok = m.create_token("alice-1", user_id="alice")["token"]
    with pytest.raises(ConfigError, match="MEMSTORE_TOKEN"):
        Access(m, tok)


def test_last_use_is_written_at_most_once_a_minute(m):
    tok = m.create_token("busy", user_id="alice")["token"]
    access = Access(m, "adm")
    for _ in range(50):
        access.verify(f"Bearer {tok}")
    for t in threading.enumerate():         # a stray flush thread would have written by now
        if t.name == "memstore-token-use":
            t.join(10)
    assert m.list_tokens()[0]["last_used_at"] is None
    access.flush_use()
    assert m.list_tokens()[0]["last_used_at"] is not None
