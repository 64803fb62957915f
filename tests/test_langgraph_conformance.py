"""What LangGraph's own store suites (bench/outside/langgraph_suites.py, run against a LangGraph
checkout) found, kept as tests that need no network: no put is ever dropped, every namespace
LangGraph allows works with the default MemstoreStore, LangGraph's filter semantics, and
`index={"dims", "embed", "fields"}` with the application's own embedding function."""
from __future__ import annotations

import math

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import InvalidNamespaceError

from memstore.core.errors import ConfigError, FilterError
from memstore.integrations.langgraph import MemstoreStore


@pytest.fixture
def store(store_path):
    s = MemstoreStore(store_path, config={"embedder": {"provider": "hashing"}})
    yield s
    s.close()


def test_same_text_under_three_namespaces_is_three_items(store):
    """The silent loss: the third put of one key and value under a sibling namespace stored nothing."""
    for leaf in ("a", "b", "c"):
        store.put(("memories", "alice", leaf), "k", {"content": "Alice likes tea"})
    for leaf in ("a", "b", "c"):
        item = store.get(("memories", "alice", leaf), "k")
        assert item is not None and item.value == {"content": "Alice likes tea"}
    assert len(store.search(("memories", "alice"), limit=10)) == 3
    store.put(("memories", "alice", "c"), "k", {"content": "Alice likes tea"})     # same put again: an update
    assert len(store.search(("memories", "alice"), limit=10)) == 3


def test_namespaces_without_a_user_work_by_default(store):
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("users", "123"), "k", {"data": "u"})
    store.put(("memories",), "m", {"content": "shared"})
    store.put(("test", "foo"), "key2", {"data": "value2"})
    assert store.get(("test",), "key1").value == {"data": "value1"}
    assert store.get(("users", "123"), "k").value == {"data": "u"}
    assert store.get(("memories",), "m").value == {"content": "shared"}
    assert {i.key for i in store.search(("test",))} == {"key1", "key2"}        # a prefix spans sub-namespaces
    assert {i.namespace for i in store.search((), limit=10)} == {("test",), ("users", "123"), ("memories",),
                                                                 ("test", "foo")}
    assert store.list_namespaces(prefix=("test",)) == [("test",), ("test", "foo")]
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})                                            # LangGraph's own rule
    # a namespace's user (position 1) is a memstore user: forget() erases what the graph stored for it
    assert [r["metadata"]["langgraph"]["key"] for r in store.memory.get_all(user_id="123")["results"]] == ["k"]


def test_list_nested_big_and_special_filters(store):
    ns = ("docs",)
    store.put(ns, "d1", {"tags": ["draft"], "user": {"access-level": "nested"}, "price": 10, "on": True})
    store.put(ns, "d2", {"tags": ["draft", "final"], "user": {"access-level": "x"}, "price": 20, "on": False})
    store.put(ns, "d3", {"tags": ["final"], "123abc": "ok", "price": -5})
    keys = lambda flt: sorted(i.key for i in store.search(ns, filter=flt, limit=10))  # noqa: E731
    assert keys({"tags": ["draft"]}) == ["d1"]                       # a list matches an equal list
    assert keys({"user.access-level": "nested"}) == ["d1"]           # a dotted key is a nested path
    assert keys({"123abc": "ok"}) == ["d3"]
    assert keys({"price": {"$lt": 10 ** 100}}) == ["d1", "d2", "d3"]  # beyond 128 bits: no DuckDB error
    assert keys({"price": {"$gt": -(10 ** 40)}, "on": True}) == ["d1"]
    assert keys({"price": {"$lt": math.inf}}) == ["d1", "d2", "d3"]
    assert keys({"price": {"$eq": math.nan}}) == []
    assert keys({"price": 10}) == ["d1"] and keys({"on": False}) == ["d2"]
    assert keys({"user": {"access-level": "x"}}) == ["d2"]
    assert keys({"price": {"$ne": 10}}) == ["d2", "d3"]
    with pytest.raises(FilterError, match="Invalid filter key"):
        store.search(ns, filter={"access') = 'public' OR '1'='1' OR json_extract(value, '$.": "x"})
    with pytest.raises(ValueError, match="unknown filter operator"):
        store.search(ns, filter={"price": {"$regex": "1"}})


def test_filter_pages_are_exact(store):
    for i in range(12):
        store.put(("items",), f"i{i:02d}", {"tags": ["even"] if i % 2 == 0 else ["odd"], "n": i})
    pages = [store.search(("items",), filter={"tags": ["even"]}, limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 2]
    assert len({i.key for p in pages for i in p}) == 6


def _char_embed(texts):
    """A deterministic embedding of the application's own (letter counts a..z)."""
    return [[float(t.lower().count(chr(97 + j))) + 1e-3 for j in range(26)] for t in texts]


def test_index_with_own_embedding_function(store_path):
    store = MemstoreStore(store_path, index={"dims": 26, "embed": _char_embed, "fields": ["text"]})
    try:
        assert store.index_config["dims"] == 26 and store.memory._rt.embedder.dim == 26
        store.put(("user_123", "memories"), "1", {"text": "zzzz zebra", "other": "aaaa"})
        store.put(("user_123", "memories"), "2", {"text": "bbbb bubble"})
        store.put(("user_123", "memories"), "3", {"text": "zzzz"}, index=False)
        hits = store.search(("user_123",), query="zzz")
        assert [h.key for h in hits] == ["1", "2", "3"]            # index=False comes last, unscored (as LangGraph)
        assert 0.5 < hits[0].score <= 1.0 and hits[0].score > hits[1].score and hits[2].score is None
        assert [h.key for h in store.search(("user_123",), query="bbb", limit=1)] == ["2"]
    finally:
        store.close()
    with pytest.raises(ConfigError, match="dims"):
        MemstoreStore(store_path, index={"dims": 0, "embed": _char_embed})


def test_index_embed_over_an_open_memory_keeps_vectors_with_items(memory):
    """index["embed"] also over a Memory already open (or a served store): the field vectors are
    kept with each item, each item scores its best field as LangGraph's distance_type says."""
    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    for distance, expect in (("cosine", cosine), ("inner_product", lambda a, b: sum(x * y for x, y in zip(a, b))),
                             ("l2", lambda a, b: -math.dist(a, b))):
        memory.reset()
        store = MemstoreStore(memory, index={"dims": 26, "embed": _char_embed, "fields": ["a", "b"],
                                             "distance_type": distance})
        store.put(("docs",), "x", {"a": "aaaa", "b": "zzzz"})
        store.put(("docs",), "y", {"a": "mmmm"})
        hit = store.search(("docs",), query="zzz")[0]
        q = _char_embed(["zzz"])[0]
        best = max(expect(q, v) for v in _char_embed(["aaaa", "zzzz"]))     # its best field, not its text
        assert hit.key == "x" and hit.score == pytest.approx(best, abs=1e-6), distance
    with pytest.raises(ConfigError, match="distance_type"):
        MemstoreStore(memory, index={"dims": 26, "embed": _char_embed, "distance_type": "manhattan"})
