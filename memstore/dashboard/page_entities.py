"""Entities: the names and things a person would look up — spaCy's named entities and proper nouns
first, common nouns only when they recur as a topic — by degree (hubs flagged: search damps
them); a click on an entity's row lists the memories linked to it."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import charts, data
from memstore.dashboard.widgets import PageContext, from_link, need_scope, picked, row_colors, show_table

TITLE = "Entities"


def render(ctx: PageContext) -> None:
    st.title("Entities")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    n_memories = m.frame("memories", **scope).height
    c1, c2, c3 = st.columns(3)
    hub_degree = c1.number_input("Flag as hub when linked to at least this many memories", min_value=1,
                                 value=data.default_hub_degree(n_memories), key="ent_hub")
    topic_degree = c2.number_input("Show a common noun when it recurs in at least", min_value=1, value=3,
                                   key="ent_topic", help="memories: below that it is a word, not a topic")
    kinds = c3.multiselect("Kinds", list(data.ENTITY_KINDS), default=["name", "topic"], key="ent_kinds",
                           help="name: a named entity or proper noun; topic: a recurring common noun; "
                                "common: a common noun seen less often; time: dates and time words")
    everything = data.entity_degrees(m, scope, int(hub_degree), int(topic_degree))
    degrees = everything.filter(pl.col("kind").is_in(kinds or list(data.ENTITY_KINDS)))
    if degrees.is_empty():
        st.info(f"No entities of these kinds linked to the memories of {ctx.label}.")
        return
    hubs = degrees.filter("hub")["entity"].to_list()
    if hubs:
        st.warning(f"Hub entities (linked to ≥ {hub_degree} of {n_memories} memories): {', '.join(hubs)}. "
                   "They say little about which memory a query means; search damps their weight.")
    st.altair_chart(charts.degree_chart(degrees), width="stretch")
    linked = from_link("entity")
    if linked:
        st.session_state["ent_open"] = linked
    rows = show_table(degrees, f"entities {ctx.label}", key="entities", styler=row_colors("hub", {"True": "#ffcdd2"}),
                      caption=f"{degrees.height} of {everything.height} entities · click a row for its memories",
                      select=True)
    chosen = picked(degrees, rows, "ent_open", column="entity_id")
    if chosen:
        ctx.link["entity"] = chosen
        name = degrees.filter(pl.col("entity_id") == chosen)["entity"][0]
        st.subheader(f"Memories linked to {name}")
        show_table(data.entity_memories(m, chosen, scope), "entity memories", key="entity_memories")
