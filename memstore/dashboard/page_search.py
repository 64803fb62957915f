"""Search lab: a query's ranked results, each a stacked bar of what every signal (semantic, keyword,
entity, recency, slot, person, episode) adds to its score, in score units — the raw signal values are
a second view; the channels that recalled each, the threshold as a line; two settings side by side.
The defaults (threshold, weights) are the store's config, as `search()` uses them."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import charts, data
from memstore.dashboard.widgets import (
    PageContext,
    advice_on_error,
    need_scope,
    show_table,
)

TITLE = "Search lab"
CHANNELS = data.CHANNELS


def settings(col, tag: str, defaults: dict, narrow: bool) -> dict:
    """Widgets for one search setting; returns explain_search kwargs plus top_k and threshold.
    `defaults`: the store's threshold and weights (data.search_defaults)."""
    store_threshold = defaults["threshold"]
    with col.expander(f"Setting {tag}", expanded=True):
        a, b, c = st.columns([1, 1, 2]) if not narrow else (st, st, st)
        top_k = a.slider("top k", 1, 50, 10, key=f"s{tag}_topk")
        threshold = b.slider("threshold", 0.0, 1.0, float(store_threshold or 0.0), 0.01, key=f"s{tag}_threshold",
                             help="Minimum fused score. The default is the store's `threshold` config "
                                  f"({'none' if store_threshold is None else store_threshold}), as search() uses it.")
        channels = c.multiselect("channels", CHANNELS, default=list(CHANNELS), key=f"s{tag}_channels")
        wcols = st.columns(len(data.SIGNALS)) if not narrow else st.columns(2) * (len(data.SIGNALS) // 2 + 1)
        w = {name: wc.slider(f"weight {name}", 0.0, 1.0, float(defaults["weights"][name]), 0.05, key=f"s{tag}_w_{name}")
             for wc, name in zip(wcols, data.SIGNALS)}
        include_superseded = st.checkbox("include superseded", key=f"s{tag}_superseded")
    return {"top_k": top_k, "threshold": threshold, "channels": tuple(channels), "weights": w,
            "include_superseded": include_superseded}


def run(ctx: PageContext, query: str, s: dict) -> pl.DataFrame | None:
    if not s["channels"]:
        st.warning("Pick at least one channel.")
        return None
    if sum(v for name, v in s["weights"].items() if name not in CHANNELS or name in s["channels"]) <= 0:
        st.warning("All weights of the chosen channels are 0.")
        return None
    with advice_on_error("Search"), st.spinner("Searching…"):
        cands = ctx.memory.explain_search(query, **ctx.scope, limit=s["top_k"], channels=s["channels"],
                                          weights=s["weights"], include_superseded=s["include_superseded"])
        return data.search_results(cands, s["threshold"], s["top_k"])
    return None


def show_results(results: pl.DataFrame, s: dict, tag: str) -> None:
    if results.is_empty():
        st.info("No candidates.")
        return
    above = int(results["above_threshold"].sum())
    if s["threshold"] > 0:
        st.markdown(f"**{above} result(s) at or above {s['threshold']:.2f}** ({results.height} candidates shown)")
    else:
        st.markdown(f"**{above} result(s)**, no threshold (the store's default)")
    parts = data.contributions(results, data.effective_weights(s["weights"], s["channels"]))
    added, raw = st.tabs(["What each signal adds to the score", "Raw signal values"])
    with added:
        st.caption("Each bar is a result's score, split into what each signal adds (weight × signal value, "
                   "scaled like the score): the parts add up to the score.")
        st.altair_chart(charts.contribution_bars(parts, s["threshold"]), width="stretch", key=f"chart_parts_{tag}")
    with raw:
        st.caption("What each signal measured, in [0, 1], before weighting: a long bar with a small weight adds little.")
        st.altair_chart(charts.raw_signal_bars(parts), width="stretch", key=f"chart_raw_{tag}")
    show_table(results, f"search results {tag}", key=f"results_{tag}",
               column_config={"score": st.column_config.ProgressColumn("score", min_value=0.0, max_value=1.0,
                                                                        format="%.3f")})


def render(ctx: PageContext) -> None:
    st.title("Search lab")
    if not need_scope(ctx):
        return
    st.caption(f"Searching {ctx.label}: candidates from three channels, fused in SQL (score in [0, 1]).")
    query = st.text_input("Query", key="search_query", placeholder="e.g. where does alice live?")
    compare = st.toggle("Compare two settings", key="search_compare")
    cfg = data.search_defaults(ctx.memory)
    tags = ("A", "B") if compare else ("A",)
    cols = st.columns(len(tags))
    specs = [(tag, col, settings(col, tag, cfg, narrow=compare)) for tag, col in zip(tags, cols)]
    if not query.strip():
        st.info("Type a query to see how each signal ranks the scope's memories.")
        return
    outs = {}
    for tag, col, s in specs:
        with col:
            if compare:
                st.markdown(f"### Setting {tag}")
            res = run(ctx, query, s)
            if res is not None:
                outs[tag] = res
                show_results(res, s, tag)
    if compare and len(outs) == 2:
        st.subheader("A vs B")
        st.caption("rank in each setting (empty: below threshold or not recalled); moved = rank B − rank A")
        show_table(data.compare_results(outs["A"], outs["B"]), "search comparison", key="results_compare")
