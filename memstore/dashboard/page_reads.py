"""Reads: the audit of reads for one scope (config `audit.reads`: memstore/audit/). The searches and
other reads made about them and what each returned (each result opens its memory on the Memories
page, its scores explained as in the Search lab), reads per token over time, and the scope's
memories never read and read most."""
from __future__ import annotations

import re

import altair as alt
import polars as pl
import streamlit as st

from memstore.dashboard import charts, data
from memstore.dashboard.page_memories import OPEN_KEY
from memstore.dashboard.widgets import PageContext, advice_on_error, need_scope, show_table

TITLE = "Reads"
MEMBER_READS = ("search", "get", "get_all", "explain_search")     # reads that return memories to a caller
LIMIT = 5000


def reads_of(m, scope: dict) -> pl.DataFrame:
    """The scope's reads, newest first (at most LIMIT)."""
    df = m.frame("reads", **scope)
    return df.sort("ts", descending=True).head(LIMIT) if not df.is_empty() else df


def read_counts(reads: pl.DataFrame) -> pl.DataFrame:
    """How often each memory id was returned (ids, times read)."""
    if reads.is_empty():
        return pl.DataFrame(schema={"id": pl.Utf8, "times_read": pl.UInt32})
    return (reads.select(pl.col("result_ids").alias("id")).explode("id").drop_nulls()
            .group_by("id").agg(pl.len().cast(pl.UInt32).alias("times_read")))


def per_token(reads: pl.DataFrame) -> pl.DataFrame:
    """Reads per token per hour (token "library" for reads made in-process)."""
    return (reads.with_columns(pl.col("token_name").fill_null("(library)").alias("token"),
                               pl.col("ts").dt.truncate("1h").alias("hour"))
            .group_by("token", "hour").agg(pl.len().alias("reads")).sort("hour"))


def _open_memory(mid: str) -> None:
    """Show memory `mid` on the Memories page (a button's callback: before the next run draws)."""
    st.session_state["page"] = "Memories"
    st.session_state[OPEN_KEY] = mid                                # the Memories page opens it
    for key in ("mem_text", "mem_status", "mem_entities", "mem_dates", "mem_as_of"):   # its filters must not hide it
        st.session_state.pop(key, None)


def render(ctx: PageContext) -> None:
    st.title("Reads")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    tag = re.sub(r"[^A-Za-z0-9]+", "_", data.scope_label(scope))      # widget keys per scope
    with advice_on_error("Reading the audit of reads"):
        reads = reads_of(m, scope)
        memories = m.frame("memories", **scope).select("id", "memory", "created_at")
    if reads.is_empty():
        st.info(f"No reads of {ctx.label} are recorded. Reads are recorded when the store is opened with "
                "config `{\"audit\": {\"reads\": \"on\"}}` (e.g. `memstore serve --config ...`).")
        return
    shown = reads.filter(pl.col("method").is_in(MEMBER_READS))
    st.caption(f"{shown.height} reads about {ctx.label} that returned memories to a caller "
               f"({reads.height - shown.height} analyst frames and queries besides), newest first.")
    table = shown.with_columns(pl.col("token_name").fill_null("(library)")).select(
        "ts", "token_name", "door", "method", "query", "n_results", "ms")
    show_table(table, f"reads {ctx.label}", key=f"reads_table_{tag}")
    if not shown.is_empty():
        render_read(ctx, shown, memories, tag)
    st.subheader("Reads per token over time")
    chart = alt.Chart(per_token(shown if not shown.is_empty() else reads).to_pandas()).mark_line(point=True).encode(
        x=alt.X("hour:T", title="hour"), y=alt.Y("reads:Q", title="reads"), color=alt.Color("token:N", title="token"),
        tooltip=["token", "hour", "reads"])
    st.altair_chart(chart, width="stretch", key=f"reads_tokens_{tag}")
    counts = read_counts(shown)
    seen = memories.join(counts, on="id", how="left").with_columns(pl.col("times_read").fill_null(0))
    most, never = st.columns(2)
    with most:
        st.subheader("Read most")
        show_table(seen.filter(pl.col("times_read") > 0).sort("times_read", descending=True).head(20)
                   .select("memory", "times_read", "id"), f"read most {ctx.label}", key=f"reads_most_{tag}")
    with never:
        st.subheader("Never read")
        show_table(seen.filter(pl.col("times_read") == 0).select("memory", "created_at", "id"),
                   f"never read {ctx.label}", key=f"reads_never_{tag}",
                   caption="Memories of the scope no recorded read returned.")


def render_read(ctx: PageContext, shown: pl.DataFrame, memories: pl.DataFrame, tag: str) -> None:
    """One read: what it returned, each result a way to its memory, and its scores explained."""
    rows = shown.head(200).to_dicts()
    labels = {i: f"{r['ts']:%Y-%m-%d %H:%M:%S} · {r['token_name'] or '(library)'} · {r['method']}"
                 + (f" · {r['query']}" if r["query"] and not r["query_hashed"] else "") for i, r in enumerate(rows)}
    pick = st.selectbox("Inspect a read", list(labels), format_func=labels.get, key=f"reads_pick_{tag}")
    if pick is None:
        return
    r = rows[pick]
    ids, scores = r["result_ids"] or [], r["scores"] or []
    texts = dict(zip(memories["id"].to_list(), memories["memory"].to_list()))
    results = pl.DataFrame({"rank": list(range(1, len(ids) + 1)),
                            "memory": [texts.get(i, "(no longer stored)") for i in ids],
                            "score": [scores[k] if k < len(scores) else None for k in range(len(ids))],
                            "id": ids}, schema={"rank": pl.Int64, "memory": pl.Utf8, "score": pl.Float64, "id": pl.Utf8})
    st.markdown(f"**Returned {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}** to "
                f"`{r['token_name'] or '(library)'}` through {r['door']} in {r['ms']:.1f} ms")
    show_table(results, "read results", key=f"reads_results_{tag}")
    for k, mid in enumerate(ids[:20]):
        if mid in texts:
            st.button(f"Open {k + 1}. {texts[mid][:70]}", key=f"reads_open_{tag}_{pick}_{k}",
                      on_click=_open_memory, args=(mid,))
    if r["method"] == "search" and r["query"] and not r["query_hashed"] and ids:
        explain(ctx, r, ids, tag)


def explain(ctx: PageContext, r: dict, ids: list[str], tag: str) -> None:
    """The read's results as the Search lab explains them (each signal's part of the score),
    recomputed now on the store as it is, beside the score recorded then."""
    st.subheader("Its scores explained")
    st.caption("Recomputed now with the store's weights, as the Search lab shows them; the score recorded "
               "at the time of the read is in the table above.")
    channels = tuple(r["channels"] or data.CHANNELS)
    with advice_on_error("Explaining the scores"):
        cands = ctx.memory.explain_search(r["query"], **ctx.scope, limit=max(100, len(ids)), channels=channels)
        if cands.is_empty():
            st.info("None of these memories is a candidate any more.")
            return
        results = data.search_results(cands, 0.0, cands.height).filter(pl.col("id").is_in(ids))
        sc = ctx.memory.config.search
        weights = {s: float(getattr(sc, f"w_{s}")) for s in data.SIGNALS}
        parts = data.contributions(results, data.effective_weights(weights, channels))
        # the chart's height counts its axis and legend too: a few bars need room beyond 26 px each
        chart = charts.contribution_bars(parts).properties(height=160 + 30 * results.height)
        st.altair_chart(chart, width="stretch", key=f"reads_explain_{tag}")
