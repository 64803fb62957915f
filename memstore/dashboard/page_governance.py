"""Governance: the history log (when each event happened in the conversation and when it was
stored, for the days chosen), erasure receipts (looked up by user), retention policies, the doctor,
and erasing a scope (typed confirmation, then the receipt)."""
from __future__ import annotations

import json

import polars as pl
import streamlit as st

from memstore.dashboard import data
from memstore.dashboard.widgets import (
    PageContext,
    advice_on_error,
    date_range,
    from_link,
    need_scope,
    read_only_note,
    show_table,
)
from memstore.governance.forget_scope import ErasureIncompleteError

TITLE = "Governance"
EVENTS = ["ADD", "UPDATE", "DELETE", "SUPERSEDE", "RESOLVE", "EXPIRE"]


ERASED_KEY = "gov_erased"     # the receipt of the erasure just done ("gov_": forgotten when a scope is chosen)


def render(ctx: PageContext) -> None:
    st.title("Governance")
    m = ctx.memory
    receipt = st.session_state.get(ERASED_KEY)
    if receipt:
        render_receipt(receipt)
    if not need_scope(ctx):
        render_receipts(ctx)
        return
    st.subheader(f"History log · {ctx.label}")
    log = data.history_log(m, ctx.scope)
    when = log.select(pl.coalesce("said_at", "stored_at").alias("t"))["t"]
    lo, hi = data.day_bounds(when)
    c1, c2 = st.columns(2)
    start, end = date_range(ctx, "gov_dates", lo, hi, container=c1,
                            help="Events that happened in these days: conversation time (an analyst's action, "
                                 "which has none, by when it was stored).")
    events = c2.multiselect("Events (empty: all)", EVENTS, key="gov_events")
    if events:
        log = log.filter(pl.col("event").is_in(events))
    shown = data.in_days(log.with_columns(pl.coalesce("said_at", "stored_at").alias("_t")), "_t", start, end).drop("_t")
    show_table(shown, f"history {ctx.label}", key="history",
               caption=f"{shown.height:,} of {log.height:,} events · said at: in the conversation · stored at: written")
    render_receipts(ctx)
    render_policies_and_doctor(ctx)
    render_erase(ctx)


def render_receipts(ctx: PageContext) -> None:
    st.subheader("Erasure receipts")
    m = ctx.memory
    typed = st.text_input("User (empty: every receipt)", key="receipts_user", value=from_link("receipts_user") or "",
                          help="Receipts store no name, only a keyed hash of the scope: type the user id to find "
                               "that user's erasures (as `memstore receipts --user NAME` does).").strip()
    if typed:
        ctx.link["receipts_user"] = typed
    with advice_on_error("Looking up receipts"):
        receipts = m.erasure_receipts(user_id=typed) if typed else m.erasure_receipts()
        if receipts:
            show_table(data.receipts_table(receipts), "erasure receipts", key="receipts",
                       caption=f"{len(receipts):,} erasure(s)" + (f" of user {typed}" if typed else "")
                               + "; a receipt names no person: the scope is kept as a keyed hash")
        else:
            st.caption(f"No erasure of user {typed!r} is recorded in this store." if typed else
                       "No scope has been erased from this store.")


def render_policies_and_doctor(ctx: PageContext) -> None:
    m = ctx.memory
    st.subheader("Retention policies")
    policies = m.retention_policies()
    if policies.is_empty():
        st.caption("None: messages and history text are kept until erased.")
    else:
        show_table(policies, "retention policies", key="retention")

    st.subheader("Doctor")
    if st.button("Check the store's invariants", key="gov_doctor"):
        with advice_on_error("Doctor"), st.spinner("Checking…"):
            problems = m.doctor()
            if problems.is_empty():
                st.success("Healthy: every invariant holds.")
            else:
                st.error(f"{problems.height} problem(s) found.")
                show_table(problems, "doctor", key="doctor")


def render_erase(ctx: PageContext) -> None:
    st.subheader(f"Erase {ctx.label}")
    counts = data.erasure_preview(ctx.memory, ctx.scope)
    st.markdown("Erasure removes every row naming this scope — "
                + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items())
                + " — from every table and registered Parquet export, rewrites the file so no deleted bytes remain, "
                "verifies, and stores a receipt. **It cannot be undone.**")
    disabled = read_only_note(ctx)
    typed = st.text_input(f"Type `{ctx.label}` to confirm", key="gov_erase_confirm", disabled=disabled)
    ok = typed.strip() == ctx.label
    if st.button(f"Erase {ctx.label}", key="gov_erase", type="primary", disabled=disabled or not ok):
        with advice_on_error("Erasure"), st.spinner(f"Erasing {ctx.label} and rewriting the store file…"):
            try:
                receipt = ctx.memory.forget(**ctx.scope, actor_id=ctx.actor_id)
            except ErasureIncompleteError as exc:   # rows gone, file not rewritten: show its receipt
                receipt = exc.receipt
            erased = {"scope": ctx.label, **json.loads(json.dumps(receipt, default=str))}
            st.session_state.pop("gov_erase_confirm", None)
            st.session_state[ERASED_KEY] = erased
            st.rerun()


def render_receipt(receipt: dict) -> None:
    """The receipt of the erasure just done, as sentences; the full JSON behind an expander."""
    verified = receipt.get("verified")
    (st.success if verified else st.error)(
        f"Erased {receipt['scope']}: " + ("verified, nothing of it is left in the store's files."
                                          if verified else "NOT verified: some of its data may be left — see below."))
    st.markdown("\n".join(f"- {line}" for line in data.receipt_lines(receipt)))
    with st.expander("The full receipt (JSON, as stored)"):
        st.json({k: v for k, v in receipt.items() if k != "scope"})
