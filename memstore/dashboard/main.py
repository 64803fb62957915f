"""The dashboard's entry point: sidebar (store, lake, scope, who is acting), page choice, page render.
`app.py` at the repo root and `memstore ui` both run `main()`.

A lake named in the sidebar (or $MEMSTORE_LAKE, `memstore ui --lake L`) turns the Overview into the
whole fleet's and adds the Fleet page; with a lake and no store named, those two pages are all."""
from __future__ import annotations

import re
import threading
from pathlib import Path

import streamlit as st

from memstore.core.errors import MemstoreError
from memstore.dashboard import (
    data,
    page_entities,
    page_expirations,
    page_extractions,
    page_fleet,
    page_governance,
    page_memories,
    page_overview,
    page_reads,
    page_search,
    page_timeline,
)
from memstore.dashboard.demo_store import DEFAULT_DEMO_STORE, ensure_demo_store
from memstore.dashboard.store import (
    OpenStore,
    StoreLockedError,
    choose_lake,
    choose_store_path,
    open_memory,
    store_named,
)
from memstore.dashboard.widgets import PageContext, show_flash, style_page

PAGES = (page_overview, page_memories, page_extractions, page_search, page_timeline, page_expirations,
         page_entities, page_governance, page_reads)
_build_lock = threading.Lock()
# Widgets whose options or defaults depend on the scope: forgotten when the scope changes.
SCOPED_PREFIXES = ("mem_", "ext_", "ent_", "tl_", "gov_", "exp_confirm")
# What a link (the address's query parameters) carries besides the page and the scope; see read_link.
LINK_KEYS = ("mem", "run", "from", "to", "as_of", "q", "receipts_user", "entity")


def page_slug(title: str) -> str:
    """A page's name in links: "Timeline & contradictions" -> "timeline-contradictions".

    >>> [page_slug(p.TITLE) for p in PAGES][:5]
    ['overview', 'memories', 'extractions', 'search-lab', 'timeline-contradictions']
    """
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def read_link() -> None:
    """Once per browser session: open the view the address names (?page=…&scope=…&mem=…&from=…),
    so a copied link reopens the same page, scope, memory and filters. The widgets take the other
    values (`widgets.from_link`) when they are first drawn."""
    if st.session_state.get("_link_read"):
        return
    st.session_state["_link_read"] = True
    params = st.query_params.to_dict()
    titles = {page_slug(p.TITLE): p.TITLE for p in (*PAGES, page_fleet)}
    if params.get("page") in titles:
        st.session_state["page"] = titles[params["page"]]
    if params.get("scope"):
        st.session_state["scope"] = params["scope"]
    for name in LINK_KEYS:
        if params.get(name):
            st.session_state[f"_link_{name}"] = params[name]


def write_link(title: str, ctx: PageContext) -> None:
    """Put the view shown (page, scope, and what the page added: memory, filters) in the address."""
    params = {"page": page_slug(title), **({"scope": ctx.label} if ctx.scope else {}), **ctx.link}
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)


def _scope_changed() -> None:
    for key in [k for k in st.session_state if str(k).startswith(SCOPED_PREFIXES)]:
        del st.session_state[key]


@st.cache_resource(show_spinner=False)
def _open(path: str) -> OpenStore:
    return open_memory(path)


def _build_demo(path: str, *, complete: bool = False) -> None:
    with _build_lock:
        if Path(path).exists() and not complete:
            return
        bar = st.progress(0.0, text="Building the demo store from data/demo…")
        try:
            ensure_demo_store(path, progress=lambda f, msg: bar.progress(min(1.0, f), text=msg))
        except FileNotFoundError as exc:          # not a checkout: no data/demo to build from
            bar.empty()
            st.error(f"No store at `{path}`, and {exc}.")
            st.stop()
        bar.empty()


def store_field() -> str:
    return st.sidebar.text_input("Store (DuckDB file)", key="store_path",
                                 placeholder=f"demo: {DEFAULT_DEMO_STORE.name}",
                                 help="Empty: $MEMSTORE_PATH, else the demo store built from data/demo "
                                      "(none when a lake is named).")


def lake_field() -> str | None:
    typed = st.sidebar.text_input("Lake (DuckLake catalog)", key="lake_spec", placeholder="postgres:dbname=lake host=…",
                                  help="The lake the shards publish into (`memstore publish`, `serve --publish-to`): "
                                       "the Overview then shows every shard and a Fleet page lists them. "
                                       "Empty: $MEMSTORE_LAKE, else none.")
    return choose_lake(typed)


@st.cache_resource(show_spinner="Opening the lake…")
def _open_fleet(lake: str):
    from memstore.lake.fleet import Fleet

    return Fleet(lake)


def open_fleet(lake: str) -> object | None:
    """The lake named in the sidebar, read-only; None after showing why not."""
    try:
        return _open_fleet(lake)
    except MemstoreError as exc:
        st.error(f"Cannot read the lake: {exc}")
    except ImportError as exc:          # memstore[lake] not installed
        st.error(f"Cannot read the lake: {exc} — pip install 'memstore[lake]'")
    return None


def open_store(typed: str) -> OpenStore | None:
    """The store named in the sidebar: a client of its server, or opened here; None after showing why not."""
    path = choose_store_path(typed)
    if not Path(path).exists():
        if Path(path) == DEFAULT_DEMO_STORE:
            _build_demo(path)
        else:
            st.error(f"No store at `{path}` — check the path, or create one with "
                     f"`memstore ingest FILE --user alice --store {path}`.")
            return None
    try:
        return _open(path)
    except StoreLockedError as exc:
        st.error(f"Cannot open the store: {exc}")
    except MemstoreError as exc:
        st.error(f"Cannot open `{path}`: {exc}")
    return None


def sidebar_context(opened: OpenStore) -> PageContext:
    m = opened.memory
    sb = st.sidebar
    scopes = data.list_scopes(m)
    labels = [data.scope_label(s) for s in scopes]
    if st.session_state.get("scope") not in labels and "scope" in st.session_state:
        # gone (just erased): nothing is picked for the person until they choose
        st.session_state["scope"] = None
    label = sb.selectbox("Scope", labels, key="scope", on_change=_scope_changed,
                         placeholder="choose a scope") if labels else None
    actor = sb.text_input("Acting as (actor_id in history)", value="dashboard", key="actor").strip() or "dashboard"
    sb.caption(opened.where)
    warm_up(m, scopes)
    scope = scopes[labels.index(label)] if label in labels else None
    return PageContext(memory=m, scope=scope, scopes=scopes, actor_id=actor, read_only=opened.read_only)


@st.cache_resource(show_spinner=False)
def _warmed(memory_id: int) -> dict:
    return {}


def warm_up(m, scopes: list[dict]) -> None:
    """Load the embedding model and the NLP pipeline in a background thread when the dashboard
    opens (once per open store), so the first search does not wait for them."""
    state = _warmed(id(m))
    if state or not scopes:
        return
    state["thread"] = threading.Thread(target=_warm, args=(m, scopes[0]), name="memstore-warm-up", daemon=True)
    state["thread"].start()


def _warm(m, scope: dict) -> None:
    try:
        m.explain_search("warm up", **scope, limit=1)
    except Exception:
        pass


def main() -> None:
    st.set_page_config(page_title="memstore", page_icon=":material/neurology:", layout="wide")
    style_page()
    st.sidebar.title("memstore")
    read_link()
    typed = store_field()
    lake = lake_field()
    fleet = open_fleet(lake) if lake else None
    if lake and not store_named(typed):          # the lake alone: no store, no demo store
        if fleet is None:
            st.stop()
        st.sidebar.caption(fleet.where)  # type: ignore[attr-defined]
        ctx = PageContext(memory=None, scope=None, read_only=True, fleet=fleet)
        pages: tuple = (page_overview, page_fleet)
    else:
        opened = open_store(typed)
        if opened is None:
            st.stop()
        ctx = sidebar_context(opened)
        ctx.fleet = fleet
        if fleet is not None:
            st.sidebar.caption(fleet.where)  # type: ignore[attr-defined]
        pages = PAGES + ((page_fleet,) if fleet is not None else ())
    titles = [p.TITLE for p in pages]
    if st.session_state.get("page") not in titles and "page" in st.session_state:
        del st.session_state["page"]             # a page of the other mode (the lake was named or cleared)
    title = st.sidebar.radio("Page", titles, key="page")
    st.sidebar.caption("The address bar links to this view (page, scope, open memory, dates): copy it to share.")
    show_flash()
    pages[titles.index(title)].render(ctx)
    write_link(title, ctx)
