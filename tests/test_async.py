"""AsyncMemory: the same results as Memory (it runs the one sync core in a thread)."""
from __future__ import annotations

import asyncio

from memstore import AsyncMemory, Memory


def _strip_times(records: list[dict]) -> list[dict]:
    """Records without ids and times (they differ between two stores), in text order: memories of
    one add share created_at, so their relative order is not part of the contract."""
    return sorted(({k: v for k, v in r.items() if k not in ("id", "created_at", "updated_at", "valid_from",
                                                            "source_message_ids")} for r in records),
                  key=lambda r: r["memory"])


def test_async_add_search_get_all_delete_match_sync(tmp_path):
    text = "I'm vegetarian and I live in Boston. I work at Google."
    with Memory(str(tmp_path / "sync.duckdb")) as m:
        s_add = m.add(text, user_id="alice")
        s_all = m.get_all(user_id="alice")["results"]
        s_search = m.search("where does alice live?", user_id="alice")["results"]
        s_get = m.get(s_add["results"][0]["id"])

    async def run():
        async with AsyncMemory(str(tmp_path / "async.duckdb")) as am:
            a_add = await am.add(text, user_id="alice")
            a_all = (await am.get_all(user_id="alice"))["results"]
            a_search = (await am.search("where does alice live?", user_id="alice"))["results"]
            a_get = await am.get(a_add["results"][0]["id"])
            a_hist = await am.history(a_add["results"][0]["id"])
            deleted = await am.delete(a_add["results"][0]["id"])
            after = (await am.get_all(user_id="alice"))["results"]
            gone = await am.delete_all(user_id="alice")
            left = (await am.get_all(user_id="alice"))["results"]
            return a_add, a_all, a_search, a_get, a_hist, deleted, after, gone, left

    a_add, a_all, a_search, a_get, a_hist, deleted, after, gone, left = asyncio.run(run())
    assert sorted(r["memory"] for r in a_add["results"]) == sorted(r["memory"] for r in s_add["results"])
    assert _strip_times(a_all) == _strip_times(s_all)
    assert a_search and sorted((r["memory"], round(r["score"], 5)) for r in a_search) == \
        sorted((r["memory"], round(r["score"], 5)) for r in s_search)
    assert _strip_times([a_get]) == _strip_times([s_get])
    assert [h["event"] for h in a_hist] == ["ADD"]
    assert deleted["deleted"] == 1 and len(after) == len(a_all) - 1
    assert gone["deleted"] == len(after) and left == []


def test_concurrent_async_adds_for_different_users_do_not_interfere(tmp_path):
    users = [f"user{i}" for i in range(6)]

    async def run():
        am = AsyncMemory(str(tmp_path / "conc.duckdb"))
        try:
            outs = await asyncio.gather(*[
                am.add([{"role": "user", "content": f"{u} fact {k}: likes item{k} in city{u[-1]}"} for k in range(3)],
                       user_id=u, infer=False)
                for u in users for _ in range(2)])  # every user twice at once: the second must dedupe fully
            per_user = {u: (await am.get_all(user_id=u))["results"] for u in users}
            return outs, per_user, am.sync.db
        finally:
            am.close()

    outs, per_user, _ = asyncio.run(run())
    added = [r for o in outs for r in o["results"] if r["event"] == "ADD"]
    assert len(added) == len(users) * 3                             # the concurrent duplicates were caught
    assert sum(r["event"] == "NONE" for o in outs for r in o["results"]) == len(users) * 3   # their sources kept
    for u in users:
        assert sorted(r["memory"] for r in per_user[u]) == sorted(f"{u} fact {k}: likes item{k} in city{u[-1]}"
                                                                  for k in range(3))
        assert all(r["user_id"] == u for r in per_user[u])


def test_async_passes_attributes_and_errors_through(tmp_path):
    async def run():
        async with AsyncMemory(str(tmp_path / "e.duckdb")) as am:
            assert am.path.endswith("e.duckdb")  # plain attributes pass through
            try:
                await am.add("I like tea")
            except Exception as exc:
                return type(exc).__name__
    assert asyncio.run(run()) == "IdentityError"
