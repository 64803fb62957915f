"""End to end, driven by headless Debian Chromium through Playwright (executable_path: no browser
download), twice: through `memstore ui` (the README's path: a `memstore serve` owns the store and the
dashboard is its client) and with `streamlit run app.py` on the file. Narrows dates, moves the
"as of" date, clicks a row open, reopens a copied link, clicks through every page, runs a search,
resolves a contradiction and erases a scope, then checks the store itself; screenshots go to
tests/artifacts/ (prefixed by the mode)."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import playwright.sync_api as playwright
import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                       reason=f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def store_template(tmp_path_factory):
    from memstore.dashboard.demo_store import ensure_demo_store

    template = tmp_path_factory.getbasetemp() / "dashboard-demo" / "demo.duckdb"   # shared with test_app_pages
    template.parent.mkdir(exist_ok=True)
    if not template.exists():
        ensure_demo_store(template)
    return template


MODES = ("ui", "file")


class AppServer:
    """The dashboard on 127.0.0.1:<free port>, headless, on the given store: `memstore ui` (which
    starts a `memstore serve` for the store and stops it on exit) or `streamlit run app.py`."""

    def __init__(self, store: Path, mode: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.mode, self.store = mode, store
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = store.parent / f"dashboard-{mode}.log"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if mode == "ui":
            env.pop("MEMSTORE_PATH", None)
            cmd = [sys.executable, "-m", "memstore.cli", "ui", "--store", str(store), "--headless",
                   "--port", str(port)]
        else:
            env["MEMSTORE_PATH"] = str(store)
            cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", "127.0.0.1",
                   "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
                   "--server.fileWatcherType", "none", "--global.developmentMode", "false",
                   "--client.toolbarMode", "viewer"]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"streamlit did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the dashboard (and, for `memstore ui`, the server it started: the store's write lock
        is held until then)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=45)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()


@pytest.fixture(scope="module", params=MODES)
def server(request, tmp_path_factory, store_template):
    target = tmp_path_factory.mktemp(f"browser-{request.param}") / "demo.duckdb"
    shutil.copyfile(store_template, target)
    srv = AppServer(target, request.param)
    srv.wait_ready()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def page(server):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        pg = browser.new_page(viewport=VIEWPORT)
        pg.set_default_timeout(60_000)
        pg.goto(server.url)
        pg.mode = server.mode          # screenshots are named by mode
        yield pg
        browser.close()


def settle(page) -> None:
    """Wait until the script run is over: no running indicator, no stale (greyed) elements left."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')"
                           " && !document.querySelector('[data-stale=true]')")


VIEWPORT = {"width": 1440, "height": 900}


def shot(page, name: str) -> None:
    """A screenshot of the whole page: the window grows to the page's height (Streamlit scrolls
    inside its main block, so a full-page capture alone would stop at 900 px), then shrinks back."""
    settle(page)
    page.wait_for_timeout(300)    # let charts finish drawing
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                           "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight), 900)")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": min(int(height) + 40, 8000)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / f"{getattr(page, 'mode', 'file')}_{name}.png"), full_page=True)
    page.set_viewport_size(VIEWPORT)


def heading(page, text: str):
    return page.get_by_role("heading", name=text, exact=True).first


def go(page, title: str) -> None:
    page.get_by_test_id("stSidebar").get_by_text(title, exact=True).click()
    heading(page, title).wait_for()


def no_exception(page) -> None:
    assert page.get_by_test_id("stException").count() == 0


def choose(page, label: str, option: str, within=None) -> None:
    """Pick `option` in the selectbox labelled `label` (in `within`, default the page)."""
    box = (within or page).get_by_role("combobox", name=label, exact=True)
    box.click()
    page.get_by_role("option", name=option, exact=True).click()
    playwright.expect(box).to_have_value(option)


def in_table(page, text: str):
    """A table cell (tables draw on a canvas; their cells live in a hidden accessible grid)."""
    cell = page.get_by_role("gridcell", name=text, exact=True, include_hidden=True).first
    cell.wait_for(state="attached")
    return cell


def set_date(page, label: str, day, which: str | None = None) -> None:
    """Type a date into a date input (`which`: "start" / "end" of a range), then leave it (it
    commits on blur)."""
    suffix = f"{label} {which} date" if which else label
    for part, value in (("year", f"{day.year}"), ("month", f"{day.month:02d}"), ("day", f"{day.day:02d}")):
        page.get_by_role("spinbutton", name=f"{part}, {suffix}", exact=True).click()
        page.keyboard.type(value)
    page.keyboard.press("Escape")
    page.get_by_role("heading", level=1).first.click()


def click_row(page, table_index: int, row: int) -> None:
    """Click the selection box of a row of the `table_index`-th table of the page (tables draw on
    a canvas: the box sits in the first column, rows 35 px high under a 35 px header)."""
    grid = page.get_by_test_id("stDataFrame").nth(table_index)
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 35 + 35 * row + 17)


def rows_caption(page, pattern: str):
    return page.get_by_text(re.compile(pattern)).first


RANGE = "Said between (conversation time)"
AS_OF = "As of (conversation time; empty: now)"


def test_dates_as_of_row_click_and_a_link(page, server):
    import datetime as dt

    heading(page, "Overview").wait_for()
    if server.mode == "ui":          # the README's path: the dashboard is the server's client
        page.get_by_text(re.compile("through the memstore server at http://127.0.0.1:")).wait_for()
    go(page, "Memories")
    rows_caption(page, r"^23 of 23 memories of user:alice").wait_for()
    set_date(page, RANGE, dt.date(2024, 5, 1), "start")
    set_date(page, RANGE, dt.date(2024, 5, 31), "end")
    rows_caption(page, r"^4 of 23 memories of user:alice").wait_for()       # the range narrows the rows
    settle(page)                                    # the table's hidden grid is redrawn after the caption
    in_table(page, "Alice lives in Seattle now, in Capitol Hill")
    assert page.get_by_role("gridcell", name="Alice is vegan now", exact=True, include_hidden=True).count() == 0
    page.get_by_label("Text contains").fill("Capitol")
    page.get_by_label("Text contains").press("Enter")
    rows_caption(page, r"^1 of 23 memories of user:alice").wait_for()
    settle(page)
    click_row(page, 0, 0)                                                     # a click opens the memory …
    heading(page, "Alice lives in Seattle now, in Capitol Hill").wait_for()
    conversation = page.get_by_role("tabpanel").first
    conversation.get_by_text("The message(s) this memory came from").wait_for()   # … inside its conversation
    shot(page, "00_memory_in_its_conversation")
    n_turns = int(conversation.get_by_text(re.compile(r"^\d+ rows$")).first.inner_text().split()[0])
    assert n_turns >= 2                   # the turns around it, not only the message
    said = page.get_by_role("gridcell", include_hidden=True).filter(has_text="Capitol Hill")
    playwright.expect(said).not_to_have_count(1)      # the memory's row, and the message it came from
    no_exception(page)

    link = page.url                                                           # copied from the address bar
    assert "page=memories" in link and "mem=" in link and "from=2024-05-01" in link and "to=2024-05-31" in link
    other = page.context.browser.new_page(viewport=VIEWPORT)                  # … and opened elsewhere
    other.set_default_timeout(60_000)
    other.goto(link)
    heading(other, "Alice lives in Seattle now, in Capitol Hill").wait_for()
    rows_caption(other, r"^1 of 23 memories of user:alice").wait_for()       # same dates and text filter
    start_month = other.get_by_role("spinbutton", name=f"month, {RANGE} start date", exact=True)
    assert start_month.get_attribute("aria-valuenow") == "5"
    no_exception(other)
    other.close()

    go(page, "Timeline & contradictions")
    rows_caption(page, r"^23 of 23 facts of user:alice").wait_for()
    set_date(page, AS_OF, dt.date(2024, 3, 1))                                 # the as-of picker …
    rows_caption(page, r"^7 of 23 facts of user:alice").wait_for()            # … changes the timeline
    page.get_by_text(re.compile(r"^As of the end of 01 Mar 2024")).wait_for()
    in_table(page, "Alice lives in Boston")
    assert page.get_by_role("gridcell", name="Alice lives in Seattle now, in Capitol Hill", exact=True,
                            include_hidden=True).count() == 0
    no_exception(page)
    shot(page, "00b_timeline_as_of")
    go(page, "Overview")


def test_click_through_search_and_resolve(page, server):
    from memstore import Memory

    store = server.store
    heading(page, "Overview").wait_for()
    page.get_by_text("current memories").wait_for()
    in_table(page, "user:alice")
    no_exception(page)
    shot(page, "01_overview")

    go(page, "Memories")
    in_table(page, "Alice lives in Seattle now, in Capitol Hill")
    chip = page.locator("[data-testid=stMultiSelectTagsContainer] [data-tag]").first     # "current"
    assert chip.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(227, 234, 242)"   # not red
    page.get_by_label("Text contains").fill("Capitol Hill")
    page.get_by_label("Text contains").press("Enter")
    rows_caption(page, r"^1 of 23 memories").wait_for()
    settle(page)
    click_row(page, 0, 0)
    heading(page, "Alice lives in Seattle now, in Capitol Hill").wait_for()
    page.get_by_role("tab", name="Supersession chain").click()
    in_table(page, "Alice moved to Seattle last weekend")        # the fact it replaced, in its chain
    no_exception(page)
    shot(page, "02_memories")

    go(page, "Search lab")
    query = page.get_by_label("Query")
    query.fill("where does alice live?")
    query.press("Enter")
    page.get_by_text(re.compile(r"result\(s\), no threshold")).wait_for()     # the library's default
    page.get_by_test_id("stVegaLiteChart").first.wait_for()
    page.get_by_text("What each signal adds to the score").first.wait_for()
    in_table(page, "Alice lives in Seattle now, in Capitol Hill")
    no_exception(page)
    shot(page, "03_search_lab")
    page.get_by_role("tab", name="Raw signal values").click()
    shot(page, "03b_search_lab_raw")

    go(page, "Entities")
    page.get_by_text("Hub entities").wait_for()
    no_exception(page)
    shot(page, "04_entities")

    go(page, "Timeline & contradictions")
    page.get_by_text("Validity of every fact").wait_for()
    no_exception(page)
    shot(page, "04b_timeline_alice")

    go(page, "Expirations")
    no_exception(page)
    shot(page, "04c_expirations_alice")

    go(page, "Governance")
    page.get_by_text("History log").first.wait_for()
    no_exception(page)
    shot(page, "05_governance")

    choose(page, "Scope", "user:sam", within=page.get_by_test_id("stSidebar"))
    go(page, "Extractions")
    page.get_by_text("1 run(s) failed (malformed answer or LLM error)", exact=False).wait_for()
    in_table(page, "malformed")
    page.get_by_text("Problems only", exact=True).click()        # the malformed run alone, then open it
    rows_caption(page, r"^1 of \d+ runs").wait_for()
    settle(page)
    click_row(page, 0, 0)
    page.get_by_text("Extractor error: answer is not JSON", exact=False).wait_for()
    page.get_by_text("The model's raw answer").wait_for()
    page.get_by_text("Sure! Sam likes hiking.").first.wait_for()
    no_exception(page)
    shot(page, "06_extractions_malformed")

    go(page, "Expirations")
    in_table(page, "Sam has a gym day pass for the weekend")
    no_exception(page)
    shot(page, "07_expirations")

    go(page, "Timeline & contradictions")
    page.locator("strong", has_text="same subject and slot lives_in: denver vs austin").wait_for()
    shot(page, "08_timeline_before_resolve")
    page.get_by_role("button", name="Keep newer").click()
    page.get_by_text(re.compile("Kept “Sam lives in Austin”")).wait_for()
    page.get_by_text("No contradictions among the current facts of user:sam.").wait_for()
    no_exception(page)
    shot(page, "09_timeline_after_resolve")

    # Erase erin: the receipt as sentences, erin in no selector, nothing offers to add it back
    choose(page, "Scope", "user:erin", within=page.get_by_test_id("stSidebar"))
    go(page, "Governance")
    page.get_by_label("Type `user:erin` to confirm").fill("user:erin")
    page.get_by_label("Type `user:erin` to confirm").press("Enter")
    page.get_by_role("button", name="Erase user:erin").click()
    page.get_by_text("Erased user:erin: verified").wait_for(timeout=120_000)
    page.get_by_text(re.compile(r"^Removed \d+ memories")).wait_for()
    assert page.get_by_text("Complete the demo store").count() == 0
    assert page.get_by_role("heading", name="Erase user:alice").count() == 0
    no_exception(page)
    shot(page, "10_governance_after_erasure")
    sidebar_box = page.get_by_test_id("stSidebar").get_by_role("combobox", name="Scope", exact=True)
    sidebar_box.click()
    options = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    assert "user:erin" not in options and "user:alice" in options

    go(page, "Overview")
    no_exception(page)
    shot(page, "11_overview_after_erasure")

    # What the clicks wrote, read from the file itself once the app (and the server `memstore ui`
    # started for it) has let go of it.
    server.stop()
    from memstore.wire.discovery import live_server

    assert live_server(str(store), timeout=1.0) is None
    with Memory(str(store), config={"read_only": True}) as m:
        assert m.contradictions(user_id="sam").is_empty()
        tl = {r["memory"]: r for r in m.timeline(user_id="sam").iter_rows(named=True)}
        old, new = tl["Sam lives in Denver"], tl["Sam lives in Austin"]
        assert (old["status"], old["superseded_by"], new["status"]) == ("superseded", new["id"], "current")
        assert [(e["event"], e["actor_id"]) for e in m.history(old["id"])][-1] == ("RESOLVE", "dashboard")
        assert m.frame("memories", user_id="erin").is_empty() and len(m.erasure_receipts(user_id="erin")) == 1
