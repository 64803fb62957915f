"""Extractions: every extraction run — when its messages were said and when it was stored, its input
messages, the model's raw answer, the facts returned and what became of each (added, duplicate,
superseded something), model and latency; malformed/failed runs in red, empty ones in yellow. A
click on a run's row opens it."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import data
from memstore.dashboard.widgets import PageContext, date_range, from_link, need_scope, picked, row_colors, show_table

TITLE = "Extractions"
RUN_BG = {"malformed": "#ffcdd2", "llm_error": "#e1bee7", "empty": "#fff9c4"}


OPEN_KEY = "ext_open"


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
    linked = from_link("run")
    if linked:
        st.session_state[OPEN_KEY] = linked
    lo, hi = data.day_bounds(runs["said_at"])
    c0, c1, c2 = st.columns([2, 2, 1])
    start, end = date_range(ctx, "ext_dates", lo, hi, container=c0,
                            help="Runs over messages said in these days (conversation time).")
    statuses = c1.multiselect("Status", sorted(counts), default=sorted(counts), key="ext_status")
    problems_only = c2.toggle("Problems only", key="ext_problems")
    shown = data.in_days(runs.filter(pl.col("status").is_in(statuses)), "said_at", start, end)
    if problems_only:
        shown = shown.filter(pl.col("problem") | (pl.col("status") == "empty"))
    view = shown.drop("input_message_ids")
    rows = show_table(view, f"extraction runs {ctx.label}", key="runs", styler=row_colors("status", RUN_BG),
                      caption=f"{shown.height} of {runs.height} runs · click a row to open it", select=True)
    if shown.is_empty():
        return
    chosen = picked(view, rows, OPEN_KEY)
    if chosen is None:
        st.caption("Click a run's row to see its messages, the model's answer and what became of each fact.")
        return
    ctx.link["run"] = chosen
    run = shown.filter(pl.col("id") == chosen).row(0, named=True)
    st.subheader(f"Run {run['id'][:8]} · {run['status']}")
    cols = st.columns(5)
    cols[0].metric("extractor", run["extractor"])
    cols[1].metric("model", run["model"] or "—")
    cols[2].metric("latency", _ms(run["latency_ms"]))
    cols[3].metric("facts returned", run["n_facts"])
    cols[4].metric("added", run["n_added"])
    st.caption(f"run `{run['id']}` · prompt {run['prompt_version'] or '—'} · said {str(run['said_at'])[:19]} "
               f"(conversation time: its newest input message) · stored {str(run['stored_at'])[:19]}")
    if run["error"]:
        st.error(f"Extractor error: {run['error']}")
    if run.get("raw_answer"):
        st.markdown("**The model's raw answer**")
        st.code(run["raw_answer"][:20_000], language="json" if run["raw_answer"].lstrip()[:1] in "[{" else None,
                wrap_lines=True)
        if len(run["raw_answer"]) > 20_000:
            st.caption(f"First 20,000 of {len(run['raw_answer']):,} characters (the CSV/Parquet export has it all).")
    elif run["extractor"] == "llm" and run["status"] == "ok":
        st.caption("The model's raw answer is kept only when it could not be read (a malformed run); "
                   "this run's facts are listed below.")
    if run["status"] == "empty":
        st.warning("The extractor found nothing to remember in these messages.")
    left, right = st.columns(2)
    with left:
        st.markdown("**Input messages**")
        show_table(data.messages_by_ids(m, run["input_message_ids"], scope).select(
            pl.col("created_at").alias("said_at"), "role", "content", "id"), "input messages", key="run_inputs")
    with right:
        st.markdown("**Facts → outcome**")
        show_table(data.run_outcomes(m, chosen, scope), "facts", key="run_facts",
                   styler=row_colors("outcome", {"added": "#c8e6c9"}))
