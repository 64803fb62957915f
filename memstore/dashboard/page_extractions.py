"""Extractions: every extraction run — its input messages, the facts returned and what became of
each (added, duplicate, superseded something), model and latency; malformed/failed runs in red,
empty ones in yellow."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import data
from memstore.dashboard.widgets import PageContext, need_scope, row_colors, show_table

TITLE = "Extractions"
RUN_BG = {"malformed": "#ffcdd2", "llm_error": "#e1bee7", "empty": "#fff9c4"}


def _label(row: dict) -> str:
    flag = "⚠ " if row["problem"] else ""
    when = row["said_at"] or row["created_at"]
    return f"{flag}{str(when)[:16]} · {row['status']} · {row['n_facts']} facts · {row['model'] or row['extractor']}"


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f} ms" if value >= 10 else f"{value:.2f} ms"


def render(ctx: PageContext) -> None:
    st.title("Extractions")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    runs = data.extraction_runs(m, scope)
    if runs.is_empty():
        st.info(f"{ctx.label} has no extraction runs (memories added with infer=False, or none yet).")
        return
    counts = dict(runs.group_by("status").len().rows())
    cols = st.columns(4)
    for col, status in zip(cols, ("ok", "empty", "malformed", "llm_error")):
        col.metric(status, counts.get(status, 0))
    n_problems = int(runs["problem"].sum())
    if n_problems:
        st.error(f"{n_problems} run(s) failed (malformed answer or LLM error): their messages are stored, "
                 "no facts were taken from them.")
    c1, c2 = st.columns([3, 1])
    statuses = c1.multiselect("Status", sorted(counts), default=sorted(counts), key="ext_status")
    problems_only = c2.toggle("Problems only", key="ext_problems")
    shown = runs.filter(pl.col("status").is_in(statuses))
    if problems_only:
        shown = shown.filter(pl.col("problem") | (pl.col("status") == "empty"))
    show_table(shown.drop("input_message_ids"), f"extraction runs {ctx.label}", key="runs",
               styler=row_colors("status", RUN_BG), caption=f"{shown.height} of {runs.height} runs")
    if shown.is_empty():
        return
    rows = {r["id"]: r for r in shown.iter_rows(named=True)}
    chosen = st.selectbox("Inspect a run", list(rows), format_func=lambda i: _label(rows[i]), key="ext_pick")
    run = rows[chosen]
    st.subheader(f"Run {run['id'][:8]} · {run['status']}")
    cols = st.columns(5)
    cols[0].metric("extractor", run["extractor"])
    cols[1].metric("model", run["model"] or "—")
    cols[2].metric("latency", _ms(run["latency_ms"]))
    cols[3].metric("facts returned", run["n_facts"])
    cols[4].metric("added", run["n_added"])
    st.caption(f"run `{run['id']}` · prompt {run['prompt_version'] or '—'} · recorded {str(run['created_at'])[:19]}"
               " · said_at: when the newest input message was written")
    if run["error"]:
        st.error(f"Extractor error: {run['error']}")
        if run.get("raw_answer"):
            with st.expander("raw model answer (first 64 KB)"):
                st.code(run["raw_answer"][:20_000], language="json")
    elif run["status"] == "empty":
        st.warning("The extractor found nothing to remember in these messages.")
    left, right = st.columns(2)
    with left:
        st.markdown("**Input messages**")
        show_table(data.messages_by_ids(m, run["input_message_ids"], scope).select("created_at", "role", "content", "id"),
                   "input messages", key="run_inputs")
    with right:
        st.markdown("**Facts → outcome**")
        show_table(data.run_outcomes(m, chosen, scope), "facts", key="run_facts",
                   styler=row_colors("outcome", {"added": "#c8e6c9"}))
