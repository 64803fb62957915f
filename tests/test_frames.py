"""m.frame(): one Polars frame per projection, scoped; the entity_degrees / extraction_outcomes views."""
from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from memstore import Memory
from memstore.analysis.frames import TABLE_FRAMES, UnknownFrameError, frame_query
from memstore.core.errors import IdentityError

# Frames and views do not depend on what the vectors mean: the hashing embedder keeps this file fast.
CONFIG = {"embedder": {"provider": "hashing"}}


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    mem = Memory(tmp_path_factory.mktemp("frames") / "store.duckdb", config=CONFIG)
    mem.add("I'm vegetarian and I live in Boston", user_id="alice")
    mem.add("I'm vegetarian", user_id="alice")                                   # a duplicate fact
    mem.add("hmm ok", user_id="alice")                                           # no facts at all
    mem.add([{"role": "user", "content": "Carol visited Boston"}], user_id="alice", infer=False,
            expiration_date="2020-01-01")                                         # expired
    mem.add([{"role": "user", "content": "Remind me to call Dana"}], user_id="alice", agent_id="coach",
            infer=False)
    mem.add([{"role": "user", "content": "Bob lives in Paris"}], user_id="bob", infer=False,
            metadata={"topic": "travel"})
    yield mem
    mem.close()


def test_memories_frame_is_scoped_and_drops_embeddings(m):
    alice = m.frame("memories", user_id="alice")
    assert isinstance(alice, pl.DataFrame)
    assert set(alice["user_id"]) == {"alice"}
    assert "embedding" not in alice.columns
    expected = m.db.scalar("SELECT count(*) FROM memories WHERE user_id = 'alice'")
    assert alice.height == expected == 4
    assert "Carol visited Boston" in alice["memory"].to_list()          # every status, expired too
    coach = m.frame("memories", user_id="alice", agent_id="coach")
    assert coach["memory"].to_list() == ["Remind me to call Dana"]


def test_embeddings_kept_on_request_as_float32_array(m):
    df = m.frame("memories", user_id="bob", embeddings=True)
    assert df.schema["embedding"] == pl.Array(pl.Float32, m.db.dim)
    stored = m.db.rows("t", {"id": df["id"][0]}, sql="SELECT embedding FROM memories WHERE id = $id")[0][0]
    assert df["embedding"][0].to_list() == pytest.approx(list(stored), abs=0)


@pytest.mark.parametrize("name", sorted(TABLE_FRAMES))
def test_every_frame_filters_by_scope_like_polars_does(m, name):
    everything = m.frame(name)
    bob = m.frame(name, user_id="bob")
    if "user_id" in everything.columns:
        assert bob.equals(everything.filter(pl.col("user_id") == "bob"))
    assert bob.height <= everything.height


def test_frame_row_order_is_stable(m):
    for name in TABLE_FRAMES:
        assert m.frame(name).equals(m.frame(name)), name


def test_entities_frame_scoped_to_the_entities_the_scope_mentions(m):
    bob_entities = set(m.frame("entities", user_id="bob")["id"])
    bob_postings = set(m.frame("postings", user_id="bob")["entity_id"])
    assert bob_entities == bob_postings
    assert bob_entities                                                   # Bob / Paris
    alice_only = set(m.frame("postings", user_id="alice")["entity_id"]) - bob_postings
    assert alice_only and not (alice_only & bob_entities)
    assert "embedding" not in m.frame("entities").columns


def test_postings_frame_names_the_entity(m):
    postings = m.frame("postings", user_id="bob")
    names = m.frame("entities").select(pl.col("id").alias("entity_id"), pl.col("name").alias("expected"))
    joined = postings.join(names, on="entity_id")
    assert joined.height == postings.height > 0
    assert joined["entity"].to_list() == joined["expected"].to_list()


def test_unknown_frame_and_bad_scope_are_clear_errors(m):
    with pytest.raises(UnknownFrameError, match="no frame named 'memory'.*memories, history"):
        m.frame("memory")
    with pytest.raises(IdentityError, match="user_id must be a non-empty string"):
        m.frame("memories", user_id="  ")


def test_scoping_a_relation_without_identity_columns_is_refused():
    with pytest.raises(IdentityError, match="has no user_id column"):
        frame_query("some_view", {"user_id": "alice"}, columns=["x", "y"])


def test_entity_degrees_view_matches_a_polars_recount(m):
    view = m.frame("entity_degrees")
    postings = m.frame("postings")
    mems = m.frame("memories").select(pl.col("id").alias("memory_id"), "invalidated_at", "expiration_date")
    now = pl.lit(dt.datetime.now(dt.timezone.utc).replace(tzinfo=None))
    recount = (postings.join(mems, on="memory_id")
               .with_columns(current=pl.col("invalidated_at").is_null()
                             & (pl.col("expiration_date").is_null() | (pl.col("expiration_date") > now)))
               .group_by("entity_id", "scope_key")
               .agg(degree=pl.col("memory_id").n_unique(),
                    current_degree=pl.col("memory_id").filter(pl.col("current")).n_unique()))
    got = view.select("entity_id", "scope_key", "degree", "current_degree")
    key = ["entity_id", "scope_key"]
    assert got.sort(key).equals(recount.sort(key).select(got.columns).cast(got.schema))
    boston = view.filter((pl.col("entity") == "Boston") & (pl.col("user_id") == "alice"))
    assert boston["degree"].to_list() == [2] and boston["current_degree"].to_list() == [1]  # one expired


def test_extraction_outcomes_has_a_row_per_fact_and_maps_added_facts(m):
    out = m.frame("extraction_outcomes", user_id="alice")
    runs = m.frame("extraction_runs", user_id="alice")
    per_run = out.group_by("extraction_run_id").len()
    expected = runs.select(pl.col("id").alias("extraction_run_id"),
                           pl.max_horizontal(pl.col("n_facts"), pl.lit(1)).cast(pl.UInt32).alias("len"))
    assert per_run.sort("extraction_run_id").equals(expected.sort("extraction_run_id"))
    empty = out.filter(pl.col("status") == "empty")
    assert empty.height == 1 and empty["fact"].null_count() == 1
    added = out.filter(pl.col("outcome") == "added")
    mems = m.frame("memories", user_id="alice").select(pl.col("id").alias("memory_id"), pl.col("memory").alias("fact"))
    assert added.join(mems, on=["memory_id", "fact"]).height == added.height > 0
    dup = out.filter(pl.col("outcome").str.starts_with("duplicate"))
    assert dup.height == 1 and dup["memory_id"].null_count() == 1
