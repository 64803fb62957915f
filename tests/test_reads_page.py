"""The dashboard's Reads page (the audit of reads) on a demo store whose reads a real `memstore
serve` recorded (the admin token and a scoped token): through Streamlit's AppTest, and in headless
Chromium like the other pages (tests/test_app_browser.py)."""
from __future__ import annotations

import os
import shutil

import pytest
from streamlit.testing.v1 import AppTest
from test_app_pages import APP, all_text, charts, frame

from memstore.api.http_client import MemoryClient
from memstore.testing.server_process import ServerProcess

AUDIT = {"audit": {"reads": "on", "flush_s": 0.2}}


@pytest.fixture(scope="module")
def audited_store(tmp_path_factory):
    """A copy of the demo store with reads: alice's searches by the admin and by alice's phone."""
    from memstore.dashboard.demo_store import ensure_demo_store

    template = tmp_path_factory.getbasetemp() / "dashboard-demo" / "demo.duckdb"     # shared with the page tests
    template.parent.mkdir(exist_ok=True)
    if not template.exists():
        ensure_demo_store(template)
    path = tmp_path_factory.mktemp("reads-page") / "demo.duckdb"
    shutil.copyfile(template, path)
    with ServerProcess(path, config=AUDIT) as srv:
        admin = srv.client()
        found = admin.search("where does alice live?", user_id="alice", top_k=5)["results"]
        admin.get_all(user_id="alice")
        phone = MemoryClient(srv.url, token=admin.create_token("alice-phone", user_id="alice")["token"])
        phone.search("what does alice eat?", top_k=3)
        n = admin.frame("reads", user_id="alice").height
    assert n >= 3
    return path, found


def _copy(template, tmp_path):
    """A private copy: a test that opens the store (AppTest keeps it open) leaves it locked."""
    path = tmp_path / "demo.duckdb"
    shutil.copyfile(template, path)
    return path


def test_reads_page_shows_alices_reads_and_opens_a_result(audited_store, monkeypatch, tmp_path):
    template, found = audited_store
    path = _copy(template, tmp_path)
    monkeypatch.setenv("MEMSTORE_PATH", str(path))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="scope").set_value("user:alice").run()
    at.radio(key="page").set_value("Reads").run()
    assert not at.exception, [e.value for e in at.exception]
    reads = frame(at, "reads_table_user_alice")
    assert set(reads["query"].drop_nulls()) == {"where does alice live?", "what does alice eat?"}
    assert set(reads["token_name"]) == {"admin", "alice-phone"}
    text = all_text(at)
    assert "Reads per token over time" in text and "Never read" in text
    most = frame(at, "reads_most_user_alice")
    assert found[0]["id"] in most["id"].to_list()
    tokens = {row["token"] for spec, sets in charts(at) for s in sets if "token" in s.columns for row in s.to_dicts()}
    assert tokens == {"admin", "alice-phone"}
    pick = at.selectbox(key="reads_pick_user_alice")
    choice = next(i for i, label in enumerate(pick.options) if "where does alice live?" in label)   # labels shown
    pick.set_value(choice).run()
    shown = frame(at, "reads_results_user_alice")
    assert shown["id"].to_list() == [r["id"] for r in found]
    assert shown["score"].to_list() == pytest.approx([r["score"] for r in found])
    assert "Its scores explained" in all_text(at)
    parts = [d for spec, sets in charts(at) for d in sets if "signal" in d.columns]     # the Search lab's bars
    assert parts and parts[0]["result"].n_unique() == len(found)
    open_first = next(b for b in at.button if (b.key or "").startswith("reads_open_"))
    open_first.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="page").value == "Memories"
    assert at.session_state["mem_open"] == found[0]["id"]            # the Memories page shows it opened
    assert found[0]["memory"] in all_text(at)


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.browser
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} not found (apt-get install -y chromium)")
def test_reads_page_in_chromium(audited_store, tmp_path):
    import playwright.sync_api as playwright
    from test_app_browser import ARTIFACTS, LAUNCH_ARGS, VIEWPORT, AppServer, choose, go, heading, in_table, no_exception, shot

    template, found = audited_store
    server = AppServer(_copy(template, tmp_path), "file")
    server.wait_ready()
    try:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(60_000)
            page.goto(server.url)
            heading(page, "Overview").wait_for(timeout=180_000)
            choose(page, "Scope", "user:alice", within=page.get_by_test_id("stSidebar"))
            go(page, "Reads")
            in_table(page, "where does alice live?")
            in_table(page, "alice-phone")
            page.get_by_text("Reads per token over time").wait_for()
            page.get_by_test_id("stVegaLiteChart").first.wait_for()
            no_exception(page)
            shot(page, "12_reads")
            first = page.get_by_role("button", name="Open 1.").first
            first.wait_for()
            text = first.inner_text().split(". ", 1)[1]
            first.click()
            page.get_by_role("heading", name="Memories", exact=True).first.wait_for()
            page.get_by_role("heading", name=text).first.wait_for()
            no_exception(page)
            shot(page, "13_reads_opened_memory")
            browser.close()
    finally:
        server.stop()
