"""Memories: a filterable table of the scope's memories; one memory's history chain, links and the
source messages it came from."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import data
from memstore.dashboard.widgets import PageContext, need_scope, row_colors, show_table

TITLE = "Memories"
STATUS_BG = {"superseded": "#eeeeee", "expired": "#fff3e0"}


def render(ctx: PageContext) -> None:
    st.title("Memories")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    table = data.memories_table(m, scope)
    all_entities = sorted({e for ents in table["entities"].to_list() for e in ents})
    c1, c2, c3 = st.columns([2, 2, 2])
    text = c1.text_input("Text contains", key="mem_text")
    statuses = c2.multiselect("Status", ["current", "superseded", "expired"], default=["current", "superseded", "expired"],
                              key="mem_status")
    entities = c3.multiselect("Mentions entities", all_entities, key="mem_entities")
    shown = data.filter_memories(table, text, statuses, entities)
    show_table(shown.select("memory", "status", "valid_from", "valid_to", "entities", "sources", "slot", "id"),
               f"memories {ctx.label}", key="memories", styler=row_colors("status", STATUS_BG),
               caption=f"{shown.height} of {table.height} memories of {ctx.label}")
    if shown.is_empty():
        return
    texts = dict(zip(shown["id"].to_list(), shown["memory"].to_list()))
    chosen = st.selectbox("Inspect a memory", list(texts), format_func=lambda i: texts[i], key="mem_pick")
    if chosen:
        render_detail(ctx, table.filter(pl.col("id") == chosen).row(0, named=True))


def render_detail(ctx: PageContext, row: dict) -> None:
    m, scope, mid = ctx.memory, ctx.scope, row["id"]
    st.subheader(row["memory"])
    cols = st.columns(4)
    cols[0].metric("status", row["status"])
    cols[1].metric("valid from", str(row["valid_from"])[:10])
    cols[2].metric("valid to", str(row["valid_to"])[:10] if row["valid_to"] else "open")
    cols[3].metric("source messages", row["sources"])
    st.caption(f"id `{mid}` · entities: {', '.join(row['entities']) or '—'} · extraction run `{row['extraction_run_id']}`")
    chain, history, links, sources = st.tabs(["Supersession chain", "History", "Links", "Source messages"])
    with chain:
        show_table(data.supersession_chain(m, mid, scope), "supersession chain", key="mem_chain",
                   caption="Oldest first: each fact was replaced by the next.")
    with history:
        events = pl.DataFrame(m.history(mid), infer_schema_length=None)
        if "created_at" in events.columns and events.schema["created_at"] == pl.Utf8:   # ISO text: a time
            events = events.with_columns(pl.col("created_at").str.to_datetime(time_unit="us", strict=False))
        if events.is_empty():
            st.caption("No history events (history is off for this store).")
        else:
            show_table(events.select([c for c in ("created_at", "event", "old_memory", "new_memory", "actor_id")
                                      if c in events.columns]), "history", key="mem_history")
    with links:
        show_table(data.memory_links(m, mid, scope), "links", key="mem_links")
    with sources:
        show_table(data.messages_by_ids(m, row["source_message_ids"], scope), "source messages", key="mem_sources")
