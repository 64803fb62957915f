"""update / delete / delete_all: identity is immutable, changed text is re-embedded and re-linked,
and a deleted memory leaves no row naming it outside history — in a fresh process too."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memstore
from memstore import IdentityError, Memory, NotFoundError

REPO = Path(memstore.__file__).resolve().parent.parent

# Run in a separate interpreter on the closed store file: which tables name which ids, and get().
PROBE = r"""
import json, sys
import duckdb
from memstore import Memory
path, ids = sys.argv[1], json.loads(sys.argv[2])
con = duckdb.connect(path, read_only=True)
tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                    "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'").fetchall()]
naming = {i: sorted(t for t in tables
                    if con.execute(f'SELECT count(*) FROM "{t}" r WHERE contains(CAST(r AS VARCHAR), ?)', [i]).fetchone()[0])
          for i in ids}
con.close()
m = Memory(path, config={"read_only": True})
print(json.dumps({"naming": naming, "get": {i: m.get(i) is not None for i in ids}}))
"""


def probe(path: str, ids: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", PROBE, path, json.dumps(ids)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def tables_naming(m: Memory, memory_id: str) -> set[str]:
    tables = [r[0] for r in m.db.rows("t", sql="SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = 'main' AND table_type = 'BASE TABLE'")]
    return {t for t in tables
            if m.db.scalar(f'SELECT count(*) FROM "{t}" r WHERE contains(CAST(r AS VARCHAR), ?)', [memory_id])}


def postings(m: Memory, memory_id: str) -> tuple[set[str], set[str]]:
    ents = {r[0] for r in m.db.rows("t", [memory_id], sql="SELECT e.norm FROM entity_postings p JOIN entities e "
                                                           "ON e.id = p.entity_id WHERE p.memory_id = ?")}
    terms = {r[0] for r in m.db.rows("t", [memory_id], sql="SELECT term FROM keyword_postings WHERE memory_id = ?")}
    return ents, terms


@pytest.fixture
def boston(memory):
    out = memory.add("I live in Boston and I work at Google", user_id="alice")
    return next(r["id"] for r in out["results"] if "Boston" in r["memory"])


# -- update ----------------------------------------------------------------------------------------

def test_update_reembeds_and_relinks(memory, boston):
    ents, terms = postings(memory, boston)
    assert "boston" in ents and "boston" in terms
    old_vec = memory.db.arrow("t", {"id": boston}, sql="SELECT embedding FROM memories WHERE id = $id").to_pylist()

    out = memory.update(boston, text="Alice moved to Seattle to join Amazon")
    assert out["event"] == "UPDATE" and out["previous_memory"] == "Alice lives in Boston"

    ents, terms = postings(memory, boston)
    assert "boston" not in ents and "boston" not in terms
    assert {"seattle", "amazon"} <= ents and {"seattle", "amazon"} <= terms
    rec = memory.get(boston)
    assert rec["memory"] == "Alice moved to Seattle to join Amazon" and rec["user_id"] == "alice"
    new_vec = memory.db.arrow("t", {"id": boston}, sql="SELECT embedding FROM memories WHERE id = $id").to_pylist()
    assert new_vec != old_vec
    expected = memory._rt.embedder.embed([rec["memory"]])[0]
    assert sum(a * b for a, b in zip(new_vec[0]["embedding"], expected)) > 0.99
    assert memory.db.scalar("SELECT doc_len FROM memories WHERE id = ?", [boston]) == sum(
        r[0] for r in memory.db.rows("t", [boston], sql="SELECT tf FROM keyword_postings WHERE memory_id = ?"))

    hits = memory.search("Seattle Amazon", user_id="alice")["results"]
    assert hits[0]["id"] == boston and hits[0]["memory"] == "Alice moved to Seattle to join Amazon"
    assert all("Boston" not in h["memory"] for h in memory.search("Boston", user_id="alice")["results"])

    hist = memory.history(boston)
    assert [h["event"] for h in hist] == ["ADD", "UPDATE"]
    assert (hist[1]["old_memory"], hist[1]["new_memory"]) == ("Alice lives in Boston",
                                                              "Alice moved to Seattle to join Amazon")
    assert hist[1]["user_id"] == "alice"


def test_update_replaces_postings_of_the_old_text(memory, boston):
    memory.update(boston, text="likes quiet mornings")
    ents, terms = postings(memory, boston)
    assert "boston" not in ents and "boston" not in terms and {"quiet", "morning"} <= terms


def test_update_metadata_only_keeps_text_vector_and_postings(memory, boston):
    before_post = postings(memory, boston)
    before_vec = memory.db.arrow("t", {"id": boston}, sql="SELECT embedding FROM memories WHERE id = $id").to_pylist()
    memory.update(boston, metadata={"source": "profile", "confidence": 0.9})
    rec = memory.get(boston)
    assert rec["memory"] == "Alice lives in Boston" and rec["metadata"] == {"source": "profile", "confidence": 0.9}
    assert postings(memory, boston) == before_post
    assert memory.db.arrow("t", {"id": boston}, sql="SELECT embedding FROM memories WHERE id = $id").to_pylist() \
        == before_vec
    assert [h["event"] for h in memory.history(boston)] == ["ADD", "UPDATE"]


@pytest.mark.parametrize("key", ["user_id", "agent_id", "run_id"])
def test_update_cannot_change_identity(memory, boston, key):
    before = memory.get(boston)
    with pytest.raises(IdentityError, match=key):
        memory.update(boston, text="Alice lives in Paris", metadata={key: "mallory"})
    assert memory.get(boston) == before
    assert [h["event"] for h in memory.history(boston)] == ["ADD"]
    with pytest.raises(NotFoundError):          # user_id= is the caller's scope: it must match, never moves it
        memory.update(boston, text="Alice lives in Paris", user_id="mallory")
    assert memory.get(boston)["user_id"] == "alice"


def test_update_unknown_id_and_empty_text(memory, boston):
    with pytest.raises(NotFoundError, match="no memory with id 'nope'"):
        memory.update("nope", text="x")
    with pytest.raises(ValueError, match="empty"):
        memory.update(boston, text="   ")
    assert memory.get(boston)["memory"] == "Alice lives in Boston"


# -- delete ----------------------------------------------------------------------------------------

def test_delete_leaves_no_row_naming_the_memory_in_a_fresh_process(llm_memory, llm_server, store_path):
    """Real links and a real supersession (the LLM path), then delete both ends of them."""
    m = llm_memory
    llm_server.push_chat('{"facts": ["Alice lives in Boston", "Alice likes jazz", "Alice works at Google"]}')
    first = {r["memory"]: r["id"] for r in m.add("I live in Boston, like jazz, work at Google",
                                                 user_id="alice")["results"]}
    boston, jazz, google = first["Alice lives in Boston"], first["Alice likes jazz"], first["Alice works at Google"]

    def answer(body):
        shown = dict(re.findall(r"^(m\d+): (.+)$", body["messages"][-1]["content"], re.M))
        sid = {text: short for short, text in shown.items()}
        return json.dumps({"facts": [{"text": "Alice lives in Seattle near the jazz clubs",
                                      "supersedes": [sid["Alice lives in Boston"]],
                                      "linked_memory_ids": [sid["Alice likes jazz"], sid["Alice works at Google"]]}]})
    llm_server.chat_responder = answer
    seattle = next(r["id"] for r in m.add("I moved to Seattle", user_id="alice")["results"] if r["event"] == "ADD")
    assert m.get(boston)["superseded_by"] == seattle
    assert {"memories", "entity_postings", "keyword_postings", "memory_links", "history"} <= tables_naming(m, jazz)
    assert {"memories", "keyword_postings", "memory_links", "history"} <= tables_naming(m, seattle)

    m.delete(jazz)     # the target of a "related" link
    m.delete(seattle)  # the source of a "supersedes" link and of the link to google
    for gone in (jazz, seattle):
        assert m.get(gone) is None
        assert tables_naming(m, gone) == {"history"}
        assert [h["event"] for h in m.history(gone)] == ["ADD", "DELETE"]
        with pytest.raises(NotFoundError):
            m.delete(gone)
    assert m.db.scalar("SELECT count(*) FROM memory_links") == 0
    # what the deleted memory had superseded is current again
    assert m.get(boston)["superseded_by"] is None and m.get(boston)["status"] == "current"
    assert sorted(r["id"] for r in m.get_all(user_id="alice")["results"]) == sorted([boston, google])
    m.close()

    seen = probe(store_path, [jazz, seattle, boston, google])
    assert seen["naming"][jazz] == seen["naming"][seattle] == ["history"]
    assert "memories" in seen["naming"][boston] and "memories" in seen["naming"][google]
    assert seen["get"] == {jazz: False, seattle: False, boston: True, google: True}


def test_delete_all_removes_one_users_memories_and_leaves_others(memory, store_path):
    a = [r["id"] for r in memory.add("I live in Boston and I love jazz", user_id="alice")["results"]]
    a += [r["id"] for r in memory.add("I work at Google", user_id="alice", agent_id="planner")["results"]]
    b = [r["id"] for r in memory.add("I live in Boston and I love jazz", user_id="bob")["results"]]
    assert len(a) == 3 and len(b) == 2
    out = memory.delete_all(user_id="alice")
    assert out["deleted"] == 3
    assert memory.get_all(user_id="alice")["results"] == []
    assert sorted(r["id"] for r in memory.get_all(user_id="bob")["results"]) == sorted(b)
    for mid in a:
        assert tables_naming(memory, mid) == {"history"}
        assert memory.history(mid)[-1]["event"] == "DELETE"
    for mid in b:
        assert {"memories", "entity_postings", "keyword_postings"} <= tables_naming(memory, mid)
    # bob still finds his Boston memory through both keyword and entity tables
    assert memory.db.scalar("SELECT count(*) FROM keyword_postings WHERE term = 'boston' AND user_id = 'bob'") == 1
    assert memory.db.scalar("SELECT count(*) FROM keyword_postings WHERE user_id = 'alice'") == 0
    assert memory.db.scalar("SELECT count(*) FROM entity_postings WHERE user_id = 'alice'") == 0
    assert memory.delete_all(user_id="alice")["deleted"] == 0
    with pytest.raises(IdentityError):
        memory.delete_all()
    memory.close()

    seen = probe(store_path, a + b)
    assert all(seen["naming"][i] == ["history"] for i in a)
    assert all("memories" in seen["naming"][i] for i in b)
    assert seen["get"] == {**{i: False for i in a}, **{i: True for i in b}}


def entity_names(m: Memory) -> set[str]:
    return {r[0] for r in m.db.rows("e", sql="SELECT norm FROM entities")}


def test_delete_removes_entities_no_other_memory_names(memory):
    sister = memory.add("My sister Maria lives in Lisbon", user_id="alice", infer=False)["results"][0]["id"]
    memory.add("Bob visited Lisbon", user_id="bob", infer=False)
    assert {"maria", "lisbon"} <= entity_names(memory)
    memory.delete(sister)
    names = entity_names(memory)
    assert "maria" not in names          # named only by the deleted memory: gone with it
    assert "lisbon" in names             # bob's memory still names it
    assert memory.doctor().height == 0


def test_update_removes_entities_the_new_text_no_longer_names(memory):
    mid = memory.add("My sister Maria lives in Lisbon", user_id="alice", infer=False)["results"][0]["id"]
    memory.update(mid, text="Alice's sister Maria lives in Porto")
    names = entity_names(memory)
    assert "porto" in names and "lisbon" not in names and "maria" in names
    assert memory.doctor().height == 0


def test_update_refuses_a_text_another_current_memory_holds(memory):
    from memstore.core.errors import DuplicateMemoryError
    a = memory.add("Alice lives in Boston", user_id="alice", infer=False)["results"][0]["id"]
    b = memory.add("Alice likes tea", user_id="alice", infer=False)["results"][0]["id"]
    other = memory.add("Alice likes tea", user_id="bob", infer=False)["results"][0]["id"]
    with pytest.raises(DuplicateMemoryError, match=a):
        memory.update(b, text="Alice lives in Boston")
    assert memory.get(b)["memory"] == "Alice likes tea"            # nothing changed
    assert [e["event"] for e in memory.history(b)] == ["ADD"]
    memory.update(other, text="Alice lives in Boston")            # another scope: allowed
    assert memory.get(other)["memory"] == "Alice lives in Boston"


def test_add_keeps_a_falsy_expiration_date(memory):
    from memstore.core.errors import MemstoreError
    r = memory.add("Alice is at the conference", user_id="alice", infer=False, expiration_date=0)
    assert memory.get(r["results"][0]["id"])["expiration_date"] is not None   # 1970: already expired
    with pytest.raises(MemstoreError, match="expiration_date"):
        memory.add("Alice is at home", user_id="alice", infer=False, expiration_date="")


def test_reset_forgets_ingest_records_so_a_file_ingests_again(memory, tmp_path):
    import json
    export = tmp_path / "chat.jsonl"
    export.write_text("\n".join(json.dumps({"role": "user", "content": t, "conversation_id": "c1"})
                                for t in ("I live in Boston", "I am vegetarian")) + "\n")
    first = memory.ingest(str(export), user_id="alice")
    assert memory.get_all(user_id="alice")["results"]
    out = memory.reset()
    assert {"ingest_log", "ingest_runs", "memories"} <= set(out["tables"])
    assert not memory.get_all(user_id="alice")["results"]
    again = memory.ingest(str(export), user_id="alice")
    assert again.memories["added"] == first.memories["added"] > 0
