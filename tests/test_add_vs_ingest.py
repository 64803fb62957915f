"""add() and ingest() store the same thing: random conversations go once through `Memory.ingest`
(a JSONL export) and once through `Memory.add`, one call per batch ingest extracted, and every
table of the two DuckDB files is compared row for row.

What is left out of the comparison, and why:
- ids minted per store (memories, messages, extraction runs, history rows): rows that point at
  other rows are compared through what they point at (a memory by its text, valid_from and source
  messages; a message by its time, role and text; a run by its input messages). Entity ids are
  hashes of the name and are compared;
- wall-clock columns (created_at / updated_at of memories, entities, links, history and runs,
  latency_ms): when the write ran, not what was written. A message's created_at is its
  conversation time and IS compared;
- messages.source_file / source_conversation: provenance only an export has (add() takes no file);
- ingest_log and ingest_runs: only ingest writes them.

Both stores are configured as ingest configures itself (`messages_kept=None`,
`context_messages=0`), with the offline heuristic extractor and the bundled local embedder. Both
paths commit through the same write steps and row builders (memstore/pipeline/add.py,
memstore/store/writer.py): add() with the immediate writer, ingest with the batched one. The two
differences this test first found (a memory superseded within its own add() kept as current in
the scope cache; extraction_runs.n_linked counted differently) have their own tests below, on the
smallest input that showed them.
"""
from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from memstore import Memory

SEEDS = (1, 7, 23)
USER = "alice"
BATCH_SIZE = 3                        # small, so conversations are cut into several batches
N_CONVERSATIONS = 12
# What ingest forces on itself (messages_kept=None, context_messages=0).
CONFIG = {"messages_kept": None, "context_messages": 0}

CITIES = ("Boston", "Denver", "Lisbon", "Austin", "Seattle")
EMPLOYERS = ("Acme", "Globex", "Initech")
PEOPLE = ("Ana", "Tom", "Maya")
KIN = ("sister", "brother")
LIKES = ("hiking", "jazz", "sushi", "chess")
# First-person facts: places, moves (also dated in the past: late facts), employers, kin, likes,
# diets, plans, relationships; near-duplicate wordings of the same fact and slot changes, so
# dedupe (exact and semantic) and slot supersession both happen.
TEMPLATES = (
    "I live in {city}.", "I live in {city}", "I live in {city} now.", "I currently live in {city}.",
    "I moved to {city}.", "I just moved to {city}.", "I moved to {city} in {year}.",
    "I have lived in {city} since {year}.",
    "I work at {org}.", "I started working at {org}.", "I quit my job.",
    "My {kin} {name} works at {org}.", "My {kin} {name} lives in {city}.", "My {kin} {name} moved to {city}.",
    "I like {like}.", "I love {like}.", "I really like {like}.",
    "I'm vegetarian.", "I am vegan now.", "I'm planning to move to {city}.",
    "My boyfriend is {name}.", "I broke up with {name}.", "I have a cat named Pixel.",
    "I'm a teacher.", "I work as a nurse.", "I'm sick this week.",
)
SMALL_TALK = ("Can you recommend a book?", "What's the weather like?", "Thanks!")
REPLIES = ("Nice!", "Tell me more.", "That sounds great.", "Got it, thanks for sharing.")


@dataclass
class Msg:
    id: str
    role: str
    content: str
    at: dt.datetime


def make_conversations(seed: int) -> list[list[Msg]]:
    """Conversations of 1-9 messages, times strictly increasing across all of them; about a quarter
    of the user's messages repeat an earlier one word for word."""
    rnd = random.Random(seed)
    t = dt.datetime(2024, 1, 8, 9, 0)
    said: list[str] = []
    convs = []
    for c in range(N_CONVERSATIONS):
        t += dt.timedelta(days=rnd.randint(1, 20), minutes=rnd.randint(0, 600))
        msgs: list[Msg] = []
        for k in range(rnd.randint(1, 9)):
            t += dt.timedelta(minutes=rnd.randint(1, 90), seconds=rnd.randint(0, 59))
            if k % 2 == 1 and rnd.random() < 0.6:
                role, text = "assistant", rnd.choice(REPLIES)
            elif said and rnd.random() < 0.25:
                role, text = "user", rnd.choice(said)
            elif rnd.random() < 0.1:
                role, text = "user", rnd.choice(SMALL_TALK)
            else:
                role = "user"
                text = " ".join(_fact(rnd) for _ in range(rnd.choice((1, 1, 2))))
                said.append(text)
            msgs.append(Msg(f"c{c}-m{k}", role, text, t))
        convs.append(msgs)
    return convs


def _fact(rnd: random.Random) -> str:
    return rnd.choice(TEMPLATES).format(city=rnd.choice(CITIES), org=rnd.choice(EMPLOYERS), name=rnd.choice(PEOPLE),
                                        kin=rnd.choice(KIN), like=rnd.choice(LIKES), year=rnd.choice((2019, 2021)))


def write_jsonl(convs: list[list[Msg]], path: Path) -> None:
    """The conversations as a JSONL export, newest conversation first (as exports list them)."""
    with path.open("w", encoding="utf-8") as f:
        for c, msgs in reversed(list(enumerate(convs))):
            for m in msgs:
                f.write(json.dumps({"conversation_id": f"conv-{c}", "message_id": m.id, "role": m.role,
                                    "content": m.content, "created_at": m.at.isoformat()}) + "\n")


# -- reading a store file back ------------------------------------------------------------------------

def read_tables(path: str) -> dict[str, list[dict[str, Any]]]:
    with duckdb.connect(path, read_only=True) as con:
        out = {}
        for table in ("memories", "entities", "entity_postings", "keyword_postings", "memory_links", "history",
                      "messages", "extraction_runs"):
            cur = con.execute(f"SELECT * FROM {table}")
            cols = [d[0] for d in cur.description]
            out[table] = [dict(zip(cols, row)) for row in cur.fetchall()]
        return out


def snapshot(path: str) -> dict[str, Any]:
    """Every compared table as a sorted list of rows, ids replaced by what they point at."""
    raw = read_tables(path)
    msg_key = {r["id"]: (r["created_at"], r["role"], r["content"]) for r in raw["messages"]}
    run_key = {r["id"]: tuple(msg_key[i] for i in r["input_message_ids"]) for r in raw["extraction_runs"]}
    mem_key = {r["id"]: (r["memory"], r["valid_from"], tuple(msg_key[i] for i in r["source_message_ids"]))
               for r in raw["memories"]}
    assert len(set(mem_key.values())) == len(mem_key), "two memories with the same text, time and source"
    entity_norm = {r["id"]: r["norm"] for r in raw["entities"]}

    def rows(table: str, drop: set[str], mapped: dict[str, Any]) -> list[tuple]:
        out = []
        for r in raw[table]:
            r = {k: (mapped[k](v) if k in mapped else v) for k, v in r.items() if k not in drop}
            out.append(tuple(sorted(r.items())))
        return sorted(out, key=repr)

    ref = lambda table: lambda v: None if v is None else table[v]   # noqa: E731
    snap = {
        "memories": rows("memories", {"id", "created_at", "updated_at", "embedding"}, {
            "superseded_by": ref(mem_key), "extraction_run_id": ref(run_key),
            "source_message_ids": lambda ids: tuple(msg_key[i] for i in ids)}),
        "entities": rows("entities", {"created_at"}, {}),
        "entity_postings": rows("entity_postings", set(), {"entity_id": ref(entity_norm), "memory_id": ref(mem_key)}),
        "keyword_postings": rows("keyword_postings", set(), {"memory_id": ref(mem_key)}),
        "memory_links": rows("memory_links", {"created_at"}, {"src_id": ref(mem_key), "dst_id": ref(mem_key)}),
        "history": rows("history", {"id", "created_at"}, {"memory_id": ref(mem_key)}),
        "messages": rows("messages", {"id", "source_file", "source_conversation"}, {}),
        "extraction_runs": rows("extraction_runs", {"id", "created_at", "latency_ms", "n_linked"}, {
            "input_message_ids": lambda ids: tuple(msg_key[i] for i in ids),
            "facts": lambda text: json.dumps(json.loads(text), sort_keys=True)}),
        # n_linked apart: ingest counts it differently (test_extraction_runs_count_links_the_same_way)
        "n_linked": sorted((run_key[r["id"]], r["n_linked"]) for r in raw["extraction_runs"]),
        "embeddings": {mem_key[r["id"]]: np.asarray(r["embedding"], dtype=np.float32) for r in raw["memories"]},
        "batches": [[msg_key[i] for i in r["input_message_ids"]]
                    for r in sorted(raw["extraction_runs"], key=lambda r: msg_key[r["input_message_ids"][0]])],
    }
    return snap


# -- the two paths --------------------------------------------------------------------------------------

@dataclass
class Pair:
    convs: list[list[Msg]]
    ingest: dict[str, Any]
    add: dict[str, Any]


def run_both(tmp: Path, convs: list[list[Msg]], add_config: dict[str, Any] = CONFIG) -> Pair:
    """Ingest `convs` as a JSONL export into one store, then replay in another store the batches
    ingest extracted, oldest first, one add() each, with the messages' own times and the batch's
    last message time as `timestamp` (what ingest gives a batch)."""
    export = tmp / "export.jsonl"
    write_jsonl(convs, export)
    path_b = str(tmp / "ingest.duckdb")
    with Memory(path_b, config=CONFIG) as m:
        report = m.ingest(export, user_id=USER, batch_size=BATCH_SIZE, progress=False)
        assert report.status == "done" and report.messages["stored"] == sum(len(c) for c in convs)
    ingest = snapshot(path_b)

    by_key = {(m.at, m.role, m.content): m for c in convs for m in c}
    path_a = str(tmp / "add.duckdb")
    with Memory(path_a, config=add_config) as m:
        for batch in ingest["batches"]:
            msgs = [by_key[k] for k in batch]
            m.add([{"role": x.role, "content": x.content, "created_at": x.at.isoformat(), "id": x.id} for x in msgs],
                  user_id=USER, timestamp=msgs[-1].at.isoformat())
    return Pair(convs, ingest, snapshot(path_a))


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: f"seed{s}")
def pair(request, tmp_path_factory) -> Pair:
    return run_both(tmp_path_factory.mktemp(f"parity{request.param}"), make_conversations(request.param))


def test_ingest_batches_are_whole_conversations_in_time_order(pair):
    """The batches the add() path replays: each a run of consecutive messages of one conversation,
    every message in exactly one, no batch over 1½ × batch_size (ingest cuts evenly)."""
    conv_of = {(m.at, m.role, m.content): c for c, msgs in enumerate(pair.convs) for m in msgs}
    batches = pair.ingest["batches"]
    flat = [k for b in batches for k in b]
    assert flat == sorted(conv_of) and len(flat) == len(set(flat))
    for b in batches:
        assert len({conv_of[k] for k in b}) == 1 and len(b) <= BATCH_SIZE * 1.5


def test_the_random_conversations_exercise_dedupe_and_supersession(pair):
    """Guard on the generator: each seed makes duplicates, supersessions and late facts (a fact
    dated before the message that states it: "I have lived in Denver since 2019")."""
    mems = [dict(r) for r in pair.ingest["memories"]]
    runs = [dict(r) for r in pair.ingest["extraction_runs"]]
    outcomes = Counter(f["outcome"] for r in runs for f in json.loads(r["facts"]))
    assert outcomes["duplicate"] > 0 and outcomes["added"] > 10
    assert sum(r["superseded_by"] is not None for r in mems) >= 5
    assert any(r["valid_from"] < min(when for when, _, _ in r["source_message_ids"]) for r in mems)


@pytest.mark.parametrize("table", ("memories", "entities", "entity_postings", "keyword_postings", "memory_links",
                                   "history", "messages", "extraction_runs"))
def test_add_and_ingest_store_the_same_rows(pair, table):
    a, b = pair.add[table], pair.ingest[table]
    only_add = Counter(a) - Counter(b)
    only_ingest = Counter(b) - Counter(a)
    assert not only_add and not only_ingest, _diff(table, only_add, only_ingest)


def test_add_and_ingest_store_the_same_embeddings(pair):
    """Ingest embeds many facts in one call, add() a few: the same vectors (equal today; the
    tolerance is for batched float arithmetic, far below what changes a dedupe decision)."""
    a, b = pair.add["embeddings"], pair.ingest["embeddings"]
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=1e-6, err_msg=str(key))


def _conversation(c: int, *turns: tuple[str, str]) -> list[Msg]:
    """User messages of conversation `c`, given as (ISO time, text)."""
    return [Msg(f"c{c}-m{k}", "user", text, dt.datetime.fromisoformat(at)) for k, (at, text) in enumerate(turns)]


def test_a_fact_superseded_within_its_own_add_is_not_a_duplicate_later(tmp_path):
    """With the scope cache on: "vegetarian" superseded by "vegan" in the same add() is no longer
    current, so stating it again later is added (and supersedes "vegan"), as ingest does."""
    convs = [_conversation(0, ("2024-01-10T10:00", "I'm vegetarian."), ("2024-01-10T11:00", "I am vegan now.")),
             _conversation(1, ("2024-02-20T10:00", "I'm vegetarian."))]
    p = run_both(tmp_path, convs)
    assert p.add["memories"] == p.ingest["memories"]
    assert sum(r["superseded_by"] is None for r in map(dict, p.add["memories"])) == 1


def test_extraction_runs_count_links_the_same_way(tmp_path):
    """A late fact that cuts short an older fact's interval (Fact.narrows) counts its link in
    n_linked on both paths (one builder: memstore/store/rows.py extraction_run_row)."""
    convs = [_conversation(0, ("2024-01-10T10:00", "I have lived in Austin since 2019.")),
             _conversation(1, ("2024-03-10T10:00", "I moved to Denver.")),
             _conversation(2, ("2024-04-01T10:00", "I moved to Boston in 2021."))]
    p = run_both(tmp_path, convs)
    assert p.add["memory_links"] == p.ingest["memory_links"]      # the same links: Denver > Boston > Austin
    assert p.add["n_linked"] == p.ingest["n_linked"]


def _diff(table: str, only_add: Counter, only_ingest: Counter) -> str:
    lines = [f"{table}: {sum(only_add.values())} row(s) only in the add() store, "
             f"{sum(only_ingest.values())} only in the ingest() store"]
    lines += [f"  add()    {dict(r)}" for r in list(only_add)[:8]]
    lines += [f"  ingest() {dict(r)}" for r in list(only_ingest)[:8]]
    return "\n".join(lines)
