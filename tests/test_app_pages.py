"""The Streamlit dashboard through Streamlit's AppTest (the real script, in-process, no browser): every
page renders on the demo store, and its actions (resolve, purge, erase) change the store through the
library — checked by reading the store afterwards. Also: a store another process is writing, a
missing path, an empty store, and the `memstore ui` command."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from memstore import Memory
from memstore.dashboard.main import PAGES

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
TITLES = [p.TITLE for p in PAGES]


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    """The demo store, built once per session (test_app_browser.py reuses the same file)."""
    from memstore.dashboard.demo_store import ensure_demo_store

    template = tmp_path_factory.getbasetemp() / "dashboard-demo" / "demo.duckdb"
    template.parent.mkdir(exist_ok=True)
    if not template.exists():
        ensure_demo_store(template)
    return template


@pytest.fixture
def store(demo_template, tmp_path, monkeypatch) -> Path:
    """A private copy of the demo store, named by MEMSTORE_PATH (tests that write get their own)."""
    path = tmp_path / "demo.duckdb"
    shutil.copyfile(demo_template, path)
    monkeypatch.setenv("MEMSTORE_PATH", str(path))
    return path


@pytest.fixture(scope="module")
def shared_store(demo_template, tmp_path_factory) -> Path:
    """One copy for the read-only page tests."""
    path = tmp_path_factory.mktemp("pages") / "demo.duckdb"
    shutil.copyfile(demo_template, path)
    return path


def app(scope: str | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90).run()
    if scope:
        at.selectbox(key="scope").set_value(scope).run()
    if page:
        at.radio(key="page").set_value(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest, kind: str) -> str:
    return "\n".join(str(e.value) for e in getattr(at, kind))


def elements(at: AppTest) -> list:
    """Every element of the rendered page, in page order."""
    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)
    return list(walk(at._tree))


def frame(at: AppTest, key: str) -> pl.DataFrame:
    """The table shown by widgets.show_table(key=...): the dataframe just before its CSV button."""
    els = elements(at)
    at_button = next((i for i, e in enumerate(els) if e.type == "download_button" and e.key == f"csv_{key}"), None)
    assert at_button is not None, f"no table {key!r} on the page"
    table = next(e for e in reversed(els[:at_button]) if e.type == "dataframe")
    return pl.from_pandas(table.value)


def all_text(at: AppTest) -> str:
    """Text of messages, headings, metric labels and table cells."""
    parts = [texts(at, k) for k in ("markdown", "info", "success", "warning", "error", "subheader", "caption")]
    parts += [str(m.label) for m in at.metric]
    parts += [e.value.to_string() for e in elements(at) if e.type == "dataframe"]
    return "\n".join(parts)


def charts(at: AppTest) -> list[tuple[dict, list[pl.DataFrame]]]:
    """Every Altair chart of the page: its Vega-Lite spec and its data sets as frames."""
    import pyarrow as pa

    out = []
    for e in elements(at):
        if e.type == "vega_lite_chart":
            sets = [pl.from_arrow(pa.ipc.open_stream(d.data.data).read_all()) for d in e.proto.datasets]
            out.append((json.loads(e.proto.spec), sets))
    return out


def memory_id(m: Memory, user: str, text: str) -> str:
    tl = m.timeline(user_id=user)
    return tl.filter(pl.col("memory") == text)["id"][0]


# -- every page renders ----------------------------------------------------------------------------
EXPECT = {  # a fact each page must show for alice / for sam (from data/demo and demo_store.py)
    "Overview": ("scopes", "scopes"),
    "Memories": ("Alice lives in Seattle now, in Capitol Hill", "Sam lives in Austin"),
    "Extractions": ("25 of 25 runs", "1 run(s) failed"),
    "Search lab": ("Type a query", "Type a query"),
    "Timeline & contradictions": ("No contradictions among the current facts of user:alice",
                                  "same subject and slot lives_in: denver vs austin"),
    "Expirations": ("Alice is in Lisbon this week", "Sam has a gym day pass for the weekend"),   # a transient state
    "Entities": ("Hub entities (linked to ≥ 6 of 23 memories): Alice.", "Hub entities (linked to ≥ 3 of 6 memories): Sam."),
    "Governance": ("Erase user:alice", "Erase user:sam"),
    "Reads": ("No reads of user:alice are recorded", "No reads of user:sam are recorded"),   # the audit is off
}


@pytest.mark.parametrize("page", TITLES)
def test_every_page_renders_for_both_demo_scopes(page, shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page=page)
    for scope, wanted in zip(("user:alice", "user:sam"), EXPECT[page]):
        at.selectbox(key="scope").set_value(scope).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.title[0].value == page
        assert wanted in all_text(at), f"{page} / {scope}: {wanted!r} not shown"


def test_overview_counts_match_the_library(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app()
    metrics = {m.label: m.value for m in at.metric}
    with Memory(str(shared_store)) as m:
        tl = m.frame("timeline")
        assert metrics["scopes"] == "5"
        assert metrics["current memories"] == str((tl["status"] == "current").sum())
        assert metrics["superseded"] == str((tl["status"] == "superseded").sum())
        assert metrics["messages"] == str(m.frame("messages").height)
    scopes = frame(at, "overview_scopes")
    assert scopes["scope"].to_list() == ["user:alice", "user:bob", "user:carol", "user:erin", "user:sam"]
    assert scopes.filter(pl.col("scope") == "user:sam")["failed_runs"].to_list() == [1]
    assert "Malformed or failed extraction runs in: user:sam" in texts(at, "warning")


def test_memories_filter_and_detail(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Memories")
    at.text_input(key="mem_text").input("seattle").run()
    shown = frame(at, "memories")
    assert shown["memory"].to_list() and all("seattle" in t.lower() for t in shown["memory"].to_list())
    at.multiselect(key="mem_status").set_value(["superseded"]).run()
    assert sorted(frame(at, "memories")["memory"].to_list()) == [  # the move itself, and the plan it fulfilled
        "Alice is moving to Seattle next month", "Alice moved to Seattle last weekend"]
    at.multiselect(key="mem_status").set_value(["current", "superseded", "expired"]).run()
    with Memory(str(shared_store)) as m:
        target = memory_id(m, "alice", "Alice lives in Seattle now, in Capitol Hill")
    at.session_state["mem_open"] = target             # what a click on its row does (the browser test clicks)
    at.run()
    assert not at.exception
    assert at.subheader[0].value == "Alice lives in Seattle now, in Capitol Hill"
    chain = frame(at, "mem_chain")
    assert chain["memory"].to_list() == ["Alice lives in Boston", "Alice moved to Seattle last weekend",
                                         "Alice lives in Seattle now, in Capitol Hill"]
    assert chain["status"].to_list() == ["superseded", "superseded", "current"]
    links = frame(at, "mem_links")
    assert links.select("kind", "direction", "other_memory").rows() == \
        [("supersedes", "outgoing", "Alice moved to Seattle last weekend")]   # the plan ended with that move
    sources = frame(at, "mem_sources")          # the source message inside its conversation
    said = sources.filter(pl.col("source"))
    assert said.height >= 1 and any("Capitol Hill" in c for c in said["content"].to_list())
    assert sources.height > said.height and sources["said_at"].is_sorted()     # turns around it, in order
    assert frame(at, "mem_history")["event"].to_list()[0] == "ADD"


def test_extractions_flag_the_malformed_run(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(scope="user:sam", page="Extractions")
    runs = frame(at, "runs")
    bad = runs.filter(pl.col("problem"))
    assert bad.select("status", "model").rows() == [("malformed", "demo-llm")]
    at.toggle(key="ext_problems").set_value(True).run()
    assert frame(at, "runs")["status"].to_list() == ["malformed"]
    at.session_state["ext_open"] = bad["id"][0]        # a click on its row
    at.run()
    assert "Extractor error: answer is not JSON" in texts(at, "error")
    assert "Sure! Sam likes hiking." in "\n".join(c.value for c in at.code)     # the model's raw answer
    assert frame(at, "run_inputs")["content"].to_list() == ["I like hiking on weekends"]
    assert frame(at, "run_facts").is_empty()
    # the good LLM run: both facts added, with their memories
    at.toggle(key="ext_problems").set_value(False).run()
    good = runs.filter((pl.col("model") == "demo-llm") & (pl.col("status") == "ok"))["id"][0]
    at.session_state["ext_open"] = good
    at.run()
    facts = frame(at, "run_facts")
    assert sorted(facts["fact"].to_list()) == ["Sam is learning Portuguese", "Sam plays the cello"]
    assert set(facts["outcome"].to_list()) == {"added"} and facts["memory_id"].null_count() == 0


def test_search_lab_shows_what_the_library_ranks(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Search lab")
    assert at.slider(key="sA_threshold").value == 0.0      # the library's default: no threshold
    query = "where does alice live?"
    at.text_input(key="search_query").input(query).run()
    assert not at.exception
    results = frame(at, "results_A")
    with Memory(str(shared_store)) as m:
        lib = m.search(query, user_id="alice", top_k=10, explain=True)["results"]     # library defaults
        weights = {s: getattr(m.config.search, f"w_{s}") for s in ("person", "semantic")}
    assert results["memory"].to_list() == [r["memory"] for r in lib]
    assert results["score"].to_list() == pytest.approx([r["score"] for r in lib])
    assert results["channels"][0] == "+".join(lib[0]["explain"]["channels"])
    assert f"{len(lib)} result(s)**, no threshold" in texts(at, "markdown")
    # first chart: what each signal adds, stacked, in score units summing to the score
    (spec, (parts,)), (raw_spec, _) = charts(at)
    assert spec["layer"][0]["encoding"]["x"]["field"] == "part" and spec["layer"][0]["encoding"]["x"]["stack"] == "zero"
    sums = parts.group_by("rank").agg(pl.col("part").sum(), pl.col("score").first()).sort("rank")
    assert sums["part"].to_list() == pytest.approx(sums["score"].to_list())
    top = parts.filter(pl.col("rank") == 1)
    person, semantic = (top.filter(pl.col("signal") == s).row(0, named=True) for s in ("person", "semantic"))
    assert person["value"] == 1.0 and person["weight"] == weights["person"]   # raw 1.0 for every Alice memory …
    assert person["part"] < semantic["part"] / 5                                # … but it adds little
    assert raw_spec["encoding"]["x"]["field"] == "value"                       # the raw values: second view
    # compare: B uses the keyword channel alone (person/episode/slot are off then: parts still sum)
    at.toggle(key="search_compare").set_value(True).run()
    at.multiselect(key="sB_channels").set_value(["keyword"]).run()
    assert not at.exception
    b = frame(at, "results_B")
    assert set(b["channels"].to_list()) == {"keyword"}
    b_parts = charts(at)[2][1][0]
    assert set(b_parts.filter(pl.col("part") > 0)["signal"].to_list()) == {"keyword"}
    assert b_parts.group_by("rank").agg(pl.col("part").sum(), pl.col("score").first()).select(
        (pl.col("part") - pl.col("score")).abs().max()).item() < 1e-9
    compared = frame(at, "results_compare")
    assert {"rank_a", "rank_b", "moved"} <= set(compared.columns)
    assert compared.filter(pl.col("memory") == "Alice lives in Seattle now, in Capitol Hill")["rank_a"].to_list() == [1]


def test_search_lab_nonsense_query_gets_no_long_bars(shared_store, monkeypatch):
    """ "xyzzy plugh" matches nothing: the episode signal is 1 for some memories, but what it adds is
    its small weight's share, and no result is drawn anywhere near a good match."""
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Search lab")
    at.text_input(key="search_query").input("xyzzy plugh").run()
    (_, (parts,)), _ = charts(at)
    episode = parts.filter(pl.col("signal") == "episode")
    assert episode["value"].max() == 1.0
    assert episode["part"].max() < 0.1
    assert parts.group_by("rank").agg(pl.col("part").sum())["part"].max() < 0.4


# -- actions write through the library ------------------------------------------------------------
def test_resolve_keep_newer_supersedes_the_older(store):
    at = app(scope="user:sam", page="Timeline & contradictions")
    at.text_input(key="actor").input("tester").run()
    keep = [b for b in at.button if (b.key or "").startswith("keep_newer_")]
    assert len(keep) == 1
    keep[0].click().run()
    assert not at.exception
    assert "Kept “Sam lives in Austin”" in texts(at, "success")
    assert "No contradictions among the current facts of user:sam." in texts(at, "success")
    with Memory(str(store)) as m:
        old, new = memory_id(m, "sam", "Sam lives in Denver"), memory_id(m, "sam", "Sam lives in Austin")
        assert m.contradictions(user_id="sam").is_empty()
        assert (m.get(old)["status"], m.get(old)["superseded_by"], m.get(new)["status"]) == \
            ("superseded", new, "current")
        assert [(e["event"], e["actor_id"]) for e in m.history(old)][-1] == ("RESOLVE", "tester")


def test_resolve_both_true_keeps_both_current(store):
    at = app(scope="user:sam", page="Timeline & contradictions")
    next(b for b in at.button if (b.key or "").startswith("dismiss_")).click().run()
    assert "Marked both facts as true" in texts(at, "success")
    with Memory(str(store)) as m:
        assert m.contradictions(user_id="sam").is_empty()
        assert {r["memory"] for r in m.get_all(user_id="sam")["results"]} >= {"Sam lives in Denver", "Sam lives in Austin"}
        assert "compatible" in m.frame("links", user_id="sam")["kind"].to_list()


def test_purge_needs_confirmation_then_deletes_the_expired(store):
    at = app(scope="user:sam", page="Expirations")
    assert frame(at, "expirations").select("when", "memory").rows() == [
        ("expired", "Sam has a gym day pass for the weekend"), ("soon", "Sam has a dentist appointment on Friday")]
    assert at.button(key="exp_purge").proto.disabled
    with Memory(str(store)) as m:
        gone = memory_id(m, "sam", "Sam has a gym day pass for the weekend")
    at.checkbox(key="exp_confirm").check().run()
    assert not at.button(key="exp_purge").proto.disabled
    at.button(key="exp_purge").click().run()
    assert not at.exception
    assert "purged 1 expired memories" in texts(at, "success")
    assert frame(at, "expirations")["memory"].to_list() == ["Sam has a dentist appointment on Friday"]
    with Memory(str(store)) as m:
        assert m.get(gone) is None
        assert [e["event"] for e in m.history(gone)][-1] == "EXPIRE"
        assert m.get(memory_id(m, "sam", "Sam has a dentist appointment on Friday"))["status"] == "current"


def test_erase_needs_the_typed_scope_and_shows_the_receipt(store):
    at = app(scope="user:sam", page="Governance")
    at.button(key="gov_doctor").click().run()
    assert "Healthy: every invariant holds." in texts(at, "success")
    assert at.button(key="gov_erase").proto.disabled
    at.text_input(key="gov_erase_confirm").input("sam").run()
    assert at.button(key="gov_erase").proto.disabled        # the label, not just the id
    at.text_input(key="gov_erase_confirm").input("user:sam").run()
    at.button(key="gov_erase").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the receipt of the erased scope, as sentences; the JSON behind an expander
    assert "Erased user:sam: verified" in texts(at, "success")
    summary = texts(at, "markdown")
    assert "Removed 6 memories" in summary and "needles" not in all_text(at)
    assert at.expander[0].label == "The full receipt (JSON, as stored)"
    receipt = json.loads(at.expander[0].json[0].value)
    assert receipt["verified"] is True and receipt["rows_removed"]["memories"] == 6
    # no other scope is picked for the person, sam is in no selector, and nothing offers to re-add it
    assert at.selectbox(key="scope").value is None
    assert "user:sam" not in at.selectbox(key="scope").options
    assert not [h for h in texts(at, "subheader").splitlines() if h.startswith("Erase ")]
    assert not [b for b in at.button if "demo" in (b.key or "") or "Complete" in str(b.label)]
    assert frame(at, "receipts")["memories"].to_list() == [6]
    for page in TITLES:
        at.radio(key="page").set_value(page).run()
        assert not at.exception, page
        assert page == "Governance" or "user:sam" not in all_text(at), page    # Governance: the receipt
        for box in at.selectbox:
            assert not [o for o in box.options if "user:sam" in str(o)], (page, box.key)
    at.radio(key="page").set_value("Governance").run()
    at.selectbox(key="scope").set_value("user:alice").run()      # choosing a scope ends the receipt view
    assert "Erase user:alice" in texts(at, "subheader") and "Erased user:sam" not in texts(at, "success")
    at.text_input(key="receipts_user").input("sam").run()          # receipts looked up by user
    assert frame(at, "receipts")["memories"].to_list() == [6]
    at.text_input(key="receipts_user").input("alice").run()
    assert "No erasure of user 'alice'" in texts(at, "caption")
    with Memory(str(store)) as m:
        assert m.frame("memories", user_id="sam").is_empty() and m.frame("messages", user_id="sam").is_empty()
        assert len(m.erasure_receipts(user_id="sam")) == 1
        assert m.frame("memories", user_id="alice").height == 23      # other scopes untouched


# -- opening stores ---------------------------------------------------------------------------------
HOLD = textwrap.dedent("""
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("CREATE TABLE IF NOT EXISTS writer_was_here (x INTEGER)")
    print("locked", flush=True)
    sys.stdin.read()
""")


def test_a_store_held_by_a_process_that_is_not_a_server_is_one_sentence(store):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        at = AppTest.from_file(APP, default_timeout=90).run()
        assert not at.exception, [e.value for e in at.exception]
        err = texts(at, "error")
        assert f"PID {holder.pid}" in err and "memstore serve --store" in err
        assert "Traceback" not in all_text(at)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with Memory(str(store)) as m:      # the writer's work is intact
        assert m.sql("SELECT count(*) AS n FROM writer_was_here")["n"][0] == 0


def test_a_missing_store_is_reported_not_created(tmp_path, monkeypatch):
    missing = tmp_path / "nope" / "x.duckdb"
    monkeypatch.setenv("MEMSTORE_PATH", str(missing))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert f"No store at `{missing}`" in texts(at, "error")
    assert not missing.exists()


def test_with_no_store_named_the_demo_store_is_built_on_first_run(tmp_path, monkeypatch):
    from memstore.dashboard import demo_store, main, store

    target = tmp_path / "data" / "demo.duckdb"
    monkeypatch.delenv("MEMSTORE_PATH", raising=False)
    for module in (main, store):
        monkeypatch.setattr(module, "DEFAULT_DEMO_STORE", target)
    # erin's export only (the smallest), to keep this fast; the full build is the session fixture
    monkeypatch.setattr(demo_store, "DEMO_FILES", tuple(f for f in demo_store.DEMO_FILES if f[1] == "erin"))
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception, [e.value for e in at.exception]
    assert target.exists()
    assert at.selectbox(key="scope").options == ["user:erin", "user:sam"]
    assert f"store: `{os.path.abspath(target)}`" in texts(at, "caption")


def test_an_empty_store_gives_advice_on_every_page(tmp_path, monkeypatch):
    path = tmp_path / "empty.duckdb"
    Memory(str(path)).close()
    monkeypatch.setenv("MEMSTORE_PATH", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    for title in TITLES:
        at.radio(key="page").set_value(title).run()
        assert not at.exception, (title, [e.value for e in at.exception])
        assert "memstore ingest FILE --user alice" in texts(at, "info"), title


# -- memstore ui -----------------------------------------------------------------------------------
def test_ui_command_runs_streamlit_on_the_packaged_app(tmp_path):
    import argparse

    from memstore.cli import ui

    parser = argparse.ArgumentParser()
    ui.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ui", "--store", str(tmp_path / "s.duckdb"), "--port", "8611"])
    cmd, env = ui.streamlit_command(args)
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and Path(cmd[4]).is_file()
    assert Path(cmd[4]).read_text() == (ROOT / "app.py").read_text()        # the same thin entry point
    assert cmd[cmd.index("--server.port") + 1] == "8611" and cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert env["MEMSTORE_PATH"] == str(tmp_path / "s.duckdb")


# -- charts that scale and label, readable numbers and times ------------------------------------------
def test_overview_growth_is_a_total_plus_the_biggest_scopes(store):
    with Memory(str(store)) as m:            # 8 scopes: the 5 biggest are drawn, the rest as "others"
        for user in ("uma", "vic", "wes"):
            m.add(f"I live in Oslo and my name is {user}", user_id=user, infer=False)
    at = app()
    [(spec, (growth,))] = [c for c in charts(at) if c[0].get("encoding", {}).get("x", {}).get("field") == "day"]
    assert set(growth["scope"].to_list()) == {"all scopes", "user:alice", "user:bob", "user:carol", "user:erin",
                                              "user:sam", "others"}
    total = growth.filter(pl.col("scope") == "all scopes")["memories"].max()
    assert total == sum(int(v) for v in frame(at, "overview_scopes")["memories"].to_list())
    assert spec["encoding"]["x"]["axis"]["format"] == "%b %Y"            # months with their year
    assert spec["encoding"]["y"]["axis"]["format"] == ",d"               # thousands separators


def test_timeline_gantt_spans_the_data_and_dots_every_fact(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Timeline & contradictions")          # alice: 2024 only, the store was built today
    [(spec, sets)] = charts(at)
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["bar", "point"]                    # no "now" rule: today is far after the data
    domain_end = spec["layer"][0]["encoding"]["x"]["scale"]["domain"][1]
    assert domain_end["year"] == 2024 or (domain_end["year"], domain_end["month"]) == (2025, 1)
    facts = sets[0]
    with Memory(str(shared_store)) as m:
        assert facts.height == m.timeline(user_id="alice").height       # one dot (and bar) per fact


def test_entity_chart_labels_every_bar(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Entities")
    [(spec, (bars,))] = charts(at)
    assert spec["encoding"]["y"]["axis"]["labelOverlap"] is False
    assert spec["height"] >= 22 * bars.height


def test_numbers_and_times_are_readable():
    from memstore.dashboard import widgets
    from memstore.dashboard.data import _when

    class Col:
        def metric(self, label, value):
            self.shown = (label, value)
    col = Col()
    widgets.metric(col, "messages", 110500)
    assert col.shown == ("messages", "110,500")
    assert _when("2026-12-03 16:57:49.786816") == "3 Dec 2026, 16:57:49"


def test_memory_history_times_are_timestamps_not_iso_text(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Memories")
    at.session_state["mem_open"] = frame(at, "memories")["id"][0]
    at.run()
    history = frame(at, "mem_history")
    assert history.schema["stored_at"] == history.schema["said_at"] == pl.Datetime("us")   # YYYY-MM-DD HH:mm:ss


# -- one default store --------------------------------------------------------------------------------
def test_one_default_store_for_library_cli_dashboard_and_demo(tmp_path):
    from memstore.core.config import DEFAULT_PATH, MemoryConfig
    from memstore.dashboard.demo_store import DEFAULT_DEMO_STORE
    from memstore.dashboard.store import choose_store_path

    assert MemoryConfig().path == DEFAULT_PATH == "data/memstore.duckdb"
    assert choose_store_path("", env={}) == str(DEFAULT_DEMO_STORE) == DEFAULT_PATH
    demo = (ROOT / "scripts" / "demo.py").read_text()
    assert "DEFAULT_PATH" in demo and "quickstart.duckdb" not in demo
    help_text = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py"), "--help"], capture_output=True,
                               text=True, check=True, cwd=tmp_path).stdout
    assert DEFAULT_PATH in help_text


def test_the_sidebar_says_which_file_it_serves(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app()
    assert f"store: `{os.path.abspath(shared_store)}`" in texts(at, "caption")


def test_overview_growth_of_a_single_day_store_draws_points(tmp_path, monkeypatch):
    """Found trying the dashboard on a new store: every memory valid today gave a line of one
    point per scope, which draws nothing; the chart then marks its points."""
    path = tmp_path / "today.duckdb"
    with Memory(str(path)) as m:             # the dashboard's embedder (no mismatch warning)
        m.add("I live in Oslo", user_id="uma", infer=False)
    monkeypatch.setenv("MEMSTORE_PATH", str(path))
    at = app()
    [(spec, (growth,))] = [c for c in charts(at) if c[0].get("encoding", {}).get("x", {}).get("field") == "day"]
    assert growth["day"].n_unique() == 1
    assert spec["mark"].get("point") is True, spec["mark"]


# -- the server path: `memstore ui` makes the dashboard a client of `memstore serve` ------------------
@pytest.fixture(scope="module")
def served_store(demo_template, tmp_path_factory):
    """A copy of the demo store owned by a real `memstore serve` (as `memstore ui` starts one)."""
    from memstore.testing.server_process import ServerProcess

    path = tmp_path_factory.mktemp("served") / "demo.duckdb"
    shutil.copyfile(demo_template, path)
    with ServerProcess(path):
        yield path


@pytest.mark.parametrize("page", TITLES)
def test_every_page_works_through_the_server(page, served_store, monkeypatch):
    """The README's launch path: the dashboard as a client of the store's server (the Search lab
    once failed there: a MemoryClient has no `.config`)."""
    monkeypatch.setenv("MEMSTORE_PATH", str(served_store))
    at = app(page=page)
    assert "through the memstore server at http://127.0.0.1:" in texts(at, "caption")
    for scope, wanted in zip(("user:alice", "user:sam"), EXPECT[page]):
        at.selectbox(key="scope").set_value(scope).run()
        if page == "Search lab":
            at.text_input(key="search_query").input("where does alice live?").run()
            wanted = "result(s)"
        assert not at.exception, [e.value for e in at.exception]
        assert wanted in all_text(at), f"{page} / {scope}: {wanted!r} not shown through the server"


def test_search_lab_starts_from_the_servers_settings(demo_template, tmp_path):
    """Through a server started with its own threshold, the Search lab's defaults are the server's."""
    from memstore.testing.server_process import ServerProcess

    path = tmp_path / "demo.duckdb"
    shutil.copyfile(demo_template, path)
    with ServerProcess(path, config={"threshold": 0.2, "search": {"w_person": 0.1}}):
        os.environ["MEMSTORE_PATH"] = str(path)
        try:
            at = app(page="Search lab")
            assert at.slider(key="sA_threshold").value == 0.2 and at.slider(key="sA_w_person").value == 0.1
        finally:
            os.environ.pop("MEMSTORE_PATH", None)


# -- time: date ranges, as of, both clocks ------------------------------------------------------------
def test_the_date_range_narrows_memories_runs_and_history(shared_store, monkeypatch):
    import datetime as dt

    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    may = (dt.date(2024, 5, 1), dt.date(2024, 5, 31))
    at = app(page="Memories")
    every = frame(at, "memories")
    at.date_input(key="mem_dates").set_value(may).run()
    shown = frame(at, "memories")
    assert 0 < shown.height < every.height
    assert shown["valid_from"].dt.month().unique().to_list() == [5]
    assert "Alice lives in Seattle now, in Capitol Hill" in shown["memory"].to_list()
    assert set(shown["memory"]) == set(every.filter(pl.col("valid_from").dt.month() == 5)["memory"])
    at.radio(key="page").set_value("Extractions").run()
    runs = frame(at, "runs")
    at.date_input(key="ext_dates").set_value(may).run()
    assert 0 < frame(at, "runs").height < runs.height
    at.radio(key="page").set_value("Governance").run()
    log = frame(at, "history")
    assert log["stored_at"].dt.date().n_unique() == 1 and log["said_at"].dt.month().n_unique() > 6   # two clocks
    at.date_input(key="gov_dates").set_value(may).run()
    narrowed = frame(at, "history")
    assert 0 < narrowed.height < log.height and narrowed["said_at"].dt.month().unique().to_list() == [5]
    at.radio(key="page").set_value("Overview").run()
    assert frame(at, "overview_scopes").height == 5
    at.date_input(key="ov_dates").set_value((dt.date(2024, 3, 1), dt.date(2024, 3, 31))).run()
    march = frame(at, "overview_scopes")
    assert 0 < march.height < 5 and (march["said_in_period"] > 0).all()


def test_the_as_of_date_changes_the_timeline(shared_store, monkeypatch):
    import datetime as dt

    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Timeline & contradictions")
    now = {r["memory"]: r["status"] for r in frame(at, "timeline").iter_rows(named=True)}
    assert now["Alice lives in Boston"] == "superseded"
    at.date_input(key="tl_as_of").set_value(dt.date(2024, 3, 1)).run()
    then = {r["memory"]: r["status"] for r in frame(at, "timeline").iter_rows(named=True)}
    assert then["Alice lives in Boston"] == "current"            # before the move
    assert "Alice lives in Seattle now, in Capitol Hill" not in then   # not said yet
    with Memory(str(shared_store)) as m:     # the library's as_of agrees
        lib = {r["memory"] for r in m.get_all(user_id="alice", as_of="2024-03-01T23:59:59", top_k=1000)["results"]}
    assert {t for t, st in then.items() if st == "current"} == lib
    at.radio(key="page").set_value("Memories").run()
    at.date_input(key="mem_as_of").set_value(dt.date(2024, 3, 1)).run()
    assert set(frame(at, "memories").filter(pl.col("status") == "current")["memory"]) == lib


def test_the_growth_chart_uses_conversation_time_and_fits_its_data(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app()
    [(spec, (growth,))] = [c for c in charts(at) if c[0].get("encoding", {}).get("x", {}).get("field") == "day"]
    domain = spec["encoding"]["x"]["scale"]["domain"]
    assert [d[:10] for d in domain] == [str(growth["day"].min())[:10], str(growth["day"].max())[:10]]
    assert growth["day"].min().year == growth["day"].max().year == 2024       # the demo's conversations
    assert spec["encoding"]["y"]["title"] == "memories" and "conversation" in spec["encoding"]["x"]["title"]


# -- drill-down and links ------------------------------------------------------------------------------
def test_a_link_reopens_the_same_view(shared_store, monkeypatch):
    import datetime as dt

    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(scope="user:alice", page="Memories")
    at.date_input(key="mem_dates").set_value((dt.date(2024, 5, 1), dt.date(2024, 5, 31))).run()
    shown = frame(at, "memories")
    target = shown.filter(pl.col("memory") == "Alice lives in Seattle now, in Capitol Hill")["id"][0]
    at.session_state["mem_open"] = target
    at.run()
    link = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}
    assert link["page"] == "memories" and link["scope"] == "user:alice" and link["mem"] == target
    assert (link["from"], link["to"]) == ("2024-05-01", "2024-05-31")
    fresh = AppTest.from_file(APP, default_timeout=90)            # another browser session opening the link
    for k, v in link.items():
        fresh.query_params[k] = v
    fresh.run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.title[0].value == "Memories" and fresh.selectbox(key="scope").value == "user:alice"
    assert fresh.subheader[0].value == "Alice lives in Seattle now, in Capitol Hill"
    assert frame(fresh, "memories")["id"].to_list() == shown["id"].to_list()     # the same filters
    assert fresh.date_input(key="mem_dates").value == (dt.date(2024, 5, 1), dt.date(2024, 5, 31))


def test_entities_are_names_and_recurring_topics(shared_store, monkeypatch):
    monkeypatch.setenv("MEMSTORE_PATH", str(shared_store))
    at = app(page="Entities")
    ents = frame(at, "entities")
    kinds = dict(zip(ents["entity"].to_list(), ents["kind"].to_list()))
    assert kinds["Alice"] == kinds["Tom"] == kinds["Seattle"] == "name"        # Alice was tagged NOUN
    assert not {"week", "weekend", "month", "job", "October"} & set(kinds)      # time words, one-off nouns
    first_topic = ents["kind"].to_list().index("topic") if "topic" in kinds.values() else ents.height
    assert set(ents["kind"].to_list()[:first_topic]) == {"name"}                # names first
    at.multiselect(key="ent_kinds").set_value(["name", "topic", "common", "time"]).run()
    assert {"week", "job"} <= set(frame(at, "entities")["entity"].to_list())    # nothing is lost, only hidden
