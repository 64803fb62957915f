"""What the pages show, as Polars frames built from library calls (`Memory.frame`, `timeline`, …).
No SQL here: the library's frames and views are the interface; Polars does the joins a page needs.

A scope is a dict of the identity keys that are set, e.g. {"user_id": "alice"}.

>>> scope_label({"user_id": "alice"}), scope_label({"user_id": "a", "agent_id": "bot"})
('user:alice', 'user:a · agent:bot')
>>> df = pl.DataFrame({"user_id": ["a", "a", None], "agent_id": [None, None, "bot"], "run_id": [None] * 3})
>>> [scope_label(s) for s in scopes_of(df)]
['agent:bot', 'user:a']
"""
from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import polars as pl

from memstore.core.identity import IDENTITY_KEYS
from memstore.core.rules.signals import CHANNELS, SIGNALS, effective_weights  # noqa: F401  (the pages read them here)
from memstore.core.timeutil import utcnow

Scope = dict[str, str]
_SHORT = {"user_id": "user", "agent_id": "agent", "run_id": "run"}



def scope_label(scope: Scope) -> str:
    """'user:alice · agent:bot' — how a scope is shown (and typed to confirm its erasure)."""
    return " · ".join(f"{_SHORT[k]}:{scope[k]}" for k in IDENTITY_KEYS if scope.get(k))


def scopes_of(*frames: pl.DataFrame) -> list[Scope]:
    """Distinct scopes (identity triples) found in frames with user_id / agent_id / run_id columns."""
    found: set[tuple[Any, ...]] = set()
    for df in frames:
        if df.is_empty():
            continue
        found.update(df.select(list(IDENTITY_KEYS)).unique().rows())
    scopes = [{k: v for k, v in zip(IDENTITY_KEYS, row) if v} for row in found]
    return sorted((s for s in scopes if s), key=scope_label)


def list_scopes(m: Any) -> list[Scope]:
    """Every scope with memories, messages or extraction runs in the store (from the
    `scope_summary` view: one aggregate query, not a read of the memories and messages tables)."""
    return scopes_of(m.frame("scope_summary").select(list(IDENTITY_KEYS)))


# -- overview ---------------------------------------------------------------------------------------
SUMMARY_COUNTS = ("memories", "current", "superseded", "expired", "messages", "extraction_runs", "failed_runs")


def scope_summary(m: Any) -> pl.DataFrame:
    """One row per scope: memories by status, messages, extraction runs (problems counted apart),
    sorted by scope label. `m` is a store, or a lake's Fleet (memstore/lake/fleet.py): then one row
    per shard and scope, with the `shard` column after the scope."""
    keys = list(IDENTITY_KEYS)
    df = m.frame("scope_summary")
    shard = ["shard"] if "shard" in df.columns else []
    labels = [scope_label({k: v for k, v in zip(keys, row) if v}) for row in df.select(keys).iter_rows()]
    return df.select(*shard, *keys, *SUMMARY_COUNTS, "last_activity").insert_column(
        0, pl.Series("scope", labels, dtype=pl.Utf8)).filter(pl.col("scope") != "").sort("scope", *shard)


def _scope_column(df: pl.DataFrame) -> pl.Expr:
    """The scope label of each row as an expression ('user:alice · agent:bot')."""
    parts = [pl.when(pl.col(k).is_not_null() & (pl.col(k) != "")).then(pl.lit(f"{_SHORT[k]}:") + pl.col(k))
             for k in IDENTITY_KEYS if k in df.columns]
    return pl.concat_str(parts, separator=" · ", ignore_nulls=True).alias("scope")


def growth(per_day: pl.DataFrame, top: int = 5) -> pl.DataFrame:
    """Cumulative number of memories by the day they became valid (frame of the `memories_per_day`
    view): one line for the whole store ("all scopes") and, when there are several scopes, one per
    `top` biggest scope and "others" for the rest.

    >>> d = pl.DataFrame({"user_id": ["a", "a", "b"], "agent_id": [None] * 3, "run_id": [None] * 3,
    ...                   "day": [dt.date(2024, 1, 2), dt.date(2024, 1, 5), dt.date(2024, 1, 5)], "memories": [1, 1, 1]})
    >>> g = growth(d, top=1)
    >>> g.filter(pl.col("scope") == "all scopes")["memories"].to_list()
    [1, 3]
    >>> sorted(set(g["scope"].to_list()))
    ['all scopes', 'others', 'user:a']
    """
    if per_day.is_empty():
        return pl.DataFrame(schema={"day": pl.Date, "scope": pl.Utf8, "memories": pl.Int64})
    df = per_day.with_columns(_scope_column(per_day), pl.col("memories").cast(pl.Int64).alias("n"))
    sizes = df.group_by("scope").agg(pl.col("n").sum()).sort("n", "scope", descending=[True, False])
    frames = [df.with_columns(pl.lit("all scopes").alias("scope"))]
    if sizes.height > 1:
        keep = sizes["scope"].head(top).to_list()
        frames.append(df.with_columns(pl.when(pl.col("scope").is_in(keep)).then(pl.col("scope"))
                                      .otherwise(pl.lit("others")).alias("scope")))
    daily = pl.concat([f.select("day", "scope", "n") for f in frames]).group_by("day", "scope").agg(
        pl.col("n").sum()).sort("day", "scope")
    cum = daily.with_columns(pl.col("n").cum_sum().over("scope").alias("memories")).select("day", "scope", "memories")
    last = cum["day"].max()     # every line runs to the last day (a scope that stopped growing stays flat)
    ends = cum.group_by("scope").agg(pl.col("day").max().alias("until"), pl.col("memories").last()).filter(
        pl.col("until") < last).select(pl.lit(last).alias("day"), "scope", "memories")
    return pl.concat([cum, ends]).sort("day", "scope")


def said_by_scope(per_day: pl.DataFrame, start: dt.date | None = None, end: dt.date | None = None) -> pl.DataFrame:
    """Per scope (and shard, in a lake): memories that became valid (conversation time) between
    `start` and `end` (dates, both included; None: open) and the last day one did (`last_said`).

    >>> d = pl.DataFrame({"user_id": ["a", "a", "b"], "agent_id": [None] * 3, "run_id": [None] * 3,
    ...                   "day": [dt.date(2024, 1, 2), dt.date(2024, 5, 5), dt.date(2024, 1, 5)], "memories": [1, 2, 1]})
    >>> said_by_scope(d, dt.date(2024, 5, 1), dt.date(2024, 5, 31)).sort("scope").rows()
    [('user:a', 2, datetime.date(2024, 5, 5)), ('user:b', 0, datetime.date(2024, 1, 5))]
    """
    keys = ["scope", *(["shard"] if "shard" in per_day.columns else [])]
    if per_day.is_empty():
        return pl.DataFrame(schema={"scope": pl.Utf8, **({"shard": pl.Utf8} if len(keys) > 1 else {}),
                                    "said_in_period": pl.Int64, "last_said": pl.Date})
    df = per_day.with_columns(_scope_column(per_day), pl.col("memories").cast(pl.Int64))
    inside = pl.lit(True)
    if start is not None:
        inside = inside & (pl.col("day") >= start)
    if end is not None:
        inside = inside & (pl.col("day") <= end)
    return df.group_by(keys).agg(pl.col("memories").filter(inside).sum().alias("said_in_period"),
                                 pl.col("day").max().alias("last_said"))


def day_bounds(days: pl.Series) -> tuple[dt.date, dt.date]:
    """The first and last day of a column of dates or datetimes (today, twice, when empty)."""
    vals = days.drop_nulls()
    if vals.is_empty():
        today = utcnow().date()
        return today, today
    lo, hi = vals.min(), vals.max()
    def as_day(v: Any) -> Any:
        return v.date() if isinstance(v, dt.datetime) else v
    return as_day(lo), as_day(hi)


def as_of_moment(day: dt.date | None) -> dt.datetime | None:
    """The moment an "as of" day means (the end of it); None: now."""
    from memstore.analysis.periods import as_of_time

    return as_of_time(day) if day is not None else None


def in_days(df: pl.DataFrame, column: str, start: dt.date | None, end: dt.date | None) -> pl.DataFrame:
    """Rows whose `column` (a date or datetime) falls between the days `start` and `end`, both
    included (None: open)."""
    from memstore.analysis.periods import in_period

    if df.schema.get(column) == pl.Date:
        if start is not None:
            df = df.filter(pl.col(column) >= start)
        return df.filter(pl.col(column) <= end) if end is not None else df
    return in_period(df, column, start, end)


# -- memories ---------------------------------------------------------------------------------------
def memories_table(m: Any, scope: Scope) -> pl.DataFrame:
    """The scope's memories (every status) with validity, entities and how many source messages.
    `valid_from` is conversation time (when it was said / became true), `stored_at` when it was
    written to the store."""
    tl = m.frame("timeline", **scope).select(
        "id", "memory", "status", "valid_from", "valid_to", "slot", "superseded_by", "superseded_by_memory",
        "invalidated_at", "expiration_date", pl.col("created_at").alias("stored_at"))
    mem = m.frame("memories", **scope).select(
        "id", "attributed_to", "source_message_ids", "extraction_run_id", "metadata")
    ents = m.frame("postings", **scope).group_by("memory_id").agg(pl.col("entity").sort().alias("entities"))
    out = tl.join(mem, on="id", how="left").join(ents, left_on="id", right_on="memory_id", how="left")
    return out.with_columns(
        pl.col("entities").fill_null([]),
        pl.col("source_message_ids").list.len().fill_null(0).alias("sources"),
    ).sort("valid_from", "id", descending=[True, False])


def filter_memories(df: pl.DataFrame, text: str = "", statuses: list[str] | None = None,
                    entities: list[str] | None = None) -> pl.DataFrame:
    """Memories whose text contains `text` (any case), with one of `statuses`, naming all `entities`."""
    if text.strip():
        df = df.filter(pl.col("memory").str.to_lowercase().str.contains(text.strip().lower(), literal=True))
    if statuses:
        df = df.filter(pl.col("status").is_in(statuses))
    for ent in entities or []:
        df = df.filter(pl.col("entities").list.contains(ent))
    return df


def supersession_chain(m: Any, memory_id: str, scope: Scope) -> pl.DataFrame:
    """The facts this memory replaced and the facts that replaced it, oldest first (this one included)."""
    tl = m.frame("timeline", **scope)
    links = m.frame("links", **scope).filter(pl.col("kind") == "supersedes")
    replaced_by = dict(zip(links["dst_id"].to_list(), links["src_id"].to_list()))
    replaced_by.update({r["id"]: r["superseded_by"] for r in tl.iter_rows(named=True) if r["superseded_by"]})
    # One memory may replace several (a move also ends the plan to move): the chain follows the
    # predecessor on the same slot, else the latest one.
    rows = {r["id"]: r for r in tl.iter_rows(named=True)}
    olds: dict[str, list[str]] = {}
    for old, new in replaced_by.items():
        olds.setdefault(new, []).append(old)

    def predecessor(new: str) -> str:
        slot = (rows.get(new) or {}).get("slot")
        return max(olds[new], key=lambda o: ((rows.get(o) or {}).get("slot") == slot,
                                             str((rows.get(o) or {}).get("valid_from") or ""), o))
    replaces = {new: predecessor(new) for new in olds}
    chain, seen = [memory_id], {memory_id}
    while chain[0] in replaces and replaces[chain[0]] not in seen:
        chain.insert(0, replaces[chain[0]])
        seen.add(chain[0])
    while chain[-1] in replaced_by and replaced_by[chain[-1]] not in seen:
        chain.append(replaced_by[chain[-1]])
        seen.add(chain[-1])
    order = pl.DataFrame({"step": list(range(1, len(chain) + 1)), "id": chain})
    return order.join(tl.select("id", "memory", "status", "valid_from", "valid_to"), on="id", how="left").sort(
        "step").select("step", "memory", "status", "valid_from", "valid_to", "id")


def memory_links(m: Any, memory_id: str, scope: Scope) -> pl.DataFrame:
    """Links from and to one memory, with the other memory's text."""
    links = m.frame("links", **scope).filter((pl.col("src_id") == memory_id) | (pl.col("dst_id") == memory_id))
    texts = m.frame("timeline", **scope).select(pl.col("id").alias("other_id"), pl.col("memory").alias("other_memory"),
                                                pl.col("status").alias("other_status"))
    out = links.with_columns(
        pl.when(pl.col("src_id") == memory_id).then(pl.lit("outgoing")).otherwise(pl.lit("incoming")).alias("direction"),
        pl.when(pl.col("src_id") == memory_id).then(pl.col("dst_id")).otherwise(pl.col("src_id")).alias("other_id"))
    return out.join(texts, on="other_id", how="left").select(
        "kind", "direction", "other_memory", "other_status", "other_id", "created_at")


def messages_by_ids(m: Any, ids: list[str] | None, scope: Scope) -> pl.DataFrame:
    """The scope's messages with these ids, in time order."""
    msgs = m.frame("messages", **scope)
    return msgs.filter(pl.col("id").is_in(list(ids or []))).sort("created_at", "id").select(
        "created_at", "role", "content", "source_file", "source_conversation", "source_message_id", "id")


def conversation_around(m: Any, ids: list[str] | None, scope: Scope, turns: int = 3) -> pl.DataFrame:
    """The source messages `ids` inside their conversation: `turns` messages before and after each
    (same source conversation when known, else the scope's messages in time order), oldest first,
    with `source` True on the messages the memory came from and `said_at` their conversation time.

    >>> import datetime as dt
    >>> t = [dt.datetime(2024, 1, 1, 10, i) for i in range(8)]
    >>> msgs = pl.DataFrame({"id": [f"m{i}" for i in range(8)], "created_at": t, "role": ["user"] * 8,
    ...                      "content": list("abcdefgh"), "source_conversation": ["c"] * 8})
    >>> around(msgs, ["m4"], turns=2)["content"].to_list()
    ['c', 'd', 'e', 'f', 'g']
    """
    return around(m.frame("messages", **scope), ids, turns)


def around(msgs: pl.DataFrame, ids: list[str] | None, turns: int) -> pl.DataFrame:
    """`conversation_around` on a messages frame."""
    wanted = list(ids or [])
    conv = pl.col("source_conversation") if "source_conversation" in msgs.columns else pl.lit(None)
    df = msgs.with_columns(conv.fill_null("").alias("_conv")).sort("_conv", "created_at", "id").with_columns(
        pl.int_range(pl.len()).over("_conv").alias("_pos"))
    hits = df.filter(pl.col("id").is_in(wanted)).select("_conv", "_pos")
    if hits.is_empty():
        return df.head(0).select(pl.lit(False).alias("source"), pl.col("created_at").alias("said_at"), "role",
                                 "content", "id")
    near = pl.lit(False)
    for conv_key, pos in hits.iter_rows():
        near = near | ((pl.col("_conv") == conv_key) & ((pl.col("_pos") - pos).abs() <= turns))
    return df.filter(near).sort("created_at", "id").select(
        pl.col("id").is_in(wanted).alias("source"), pl.col("created_at").alias("said_at"), "role", "content", "id")


# -- extractions ------------------------------------------------------------------------------------
PROBLEM_STATUSES = ("malformed", "llm_error")


def extraction_runs(m: Any, scope: Scope) -> pl.DataFrame:
    """The scope's extraction runs, newest first (by conversation time), with a `problem` flag for
    malformed / failed runs. `said_at` is when its messages were said (recorded with the run; for
    runs stored before that, the newest input message's time), `stored_at` when the run was
    written; `raw_answer` is the model's answer when one was kept (malformed runs)."""
    runs = m.frame("extraction_runs", **scope)
    msgs = m.frame("messages", **scope).select(pl.col("id").alias("message_id"), "created_at")
    said = (runs.select("id", pl.col("input_message_ids").alias("message_id")).explode("message_id")
            .join(msgs, on="message_id", how="inner").group_by("id").agg(pl.col("created_at").max().alias("_said")))
    recorded = pl.col("said_at") if "said_at" in runs.columns else pl.lit(None, dtype=pl.Datetime("us"))
    raw = pl.col("raw_answer") if "raw_answer" in runs.columns else pl.lit(None, dtype=pl.Utf8)
    return runs.join(said, on="id", how="left").with_columns(
        pl.coalesce(recorded, pl.col("_said")).alias("said_at"),
        pl.col("created_at").alias("stored_at"),
        raw.alias("raw_answer"),
        pl.col("status").is_in(PROBLEM_STATUSES).alias("problem"),
        pl.col("input_message_ids").list.len().fill_null(0).alias("messages"),
    ).select("said_at", "status", "extractor", "model", "n_facts", "n_added", "n_deduplicated", "messages",
             "latency_ms", "error", "problem", "stored_at", "id", "input_message_ids", "prompt_version", "raw_answer"
             ).sort("said_at", "stored_at", "id", descending=[True, True, False], nulls_last=True)


def run_outcomes(m: Any, extraction_run_id: str, scope: Scope) -> pl.DataFrame:
    """What became of each fact of one extraction run (from the extraction_outcomes view)."""
    out = m.frame("extraction_outcomes", **scope).filter(pl.col("extraction_run_id") == extraction_run_id)
    return out.filter(pl.col("fact_index").is_not_null()).sort("fact_index").select(
        "fact_index", "fact", "outcome", "attributed_to", "n_linked", "n_supersedes", "memory_id")


# -- search -----------------------------------------------------------------------------------------
def search_defaults(m: Any) -> dict[str, Any]:
    """The threshold and signal weights search() uses on this store: the open Memory's config, or
    what the store's server reports on /health (the dashboard as a client of `memstore ui`'s
    server), else the library's defaults (an older server)."""
    from memstore.core.rules.signals import search_defaults as of_config

    if hasattr(m, "config"):
        return of_config(m.config)
    info = m.server_info() if hasattr(m, "server_info") else {}
    reported = info.get("search_defaults") if isinstance(info, dict) else None
    return reported if reported else of_config(None)



def search_results(candidates: pl.DataFrame, threshold: float, top_k: int) -> pl.DataFrame:
    """Rank the candidate table, mark the ones at/above `threshold`, keep `top_k`, name the channels."""
    if candidates.is_empty():
        return pl.DataFrame(schema={"rank": pl.UInt32, "memory": pl.Utf8, "score": pl.Float64,
                                    "above_threshold": pl.Boolean, "channels": pl.Utf8,
                                    **{s: pl.Float64 for s in SIGNALS}, "status": pl.Utf8, "id": pl.Utf8})
    channel = [pl.when(pl.col(f"by_{c}")).then(pl.lit(c)).otherwise(None) for c in CHANNELS]
    return candidates.head(top_k).with_columns(
        pl.concat_str(channel, separator="+", ignore_nulls=True).alias("channels"),
        (pl.col("score") >= threshold).alias("above_threshold"),
    ).select("rank", "memory", "score", "above_threshold", "channels", *SIGNALS, "status", "id")




def contributions(results: pl.DataFrame, weights: dict[str, float]) -> pl.DataFrame:
    """What each signal adds to each result's score, in score units (one row per result and signal).

    The fused score is Σ w·s over a denominator fixed per query (a signal that does not apply to
    the query, like `slot` for a question about no attribute, leaves it; the keyword signal counts
    times semantic when semantic counts), so each signal's part is w·s scaled by score / Σ w·s:
    the parts of a result add up to its score exactly.

    >>> r = pl.DataFrame({"rank": [1], "memory": ["Alice lives in Seattle"], "score": [0.5],
    ...                   **{s: [1.0 if s == "person" else 0.0] for s in SIGNALS}})
    >>> w = {s: 0.0 for s in SIGNALS} | {"semantic": 0.5, "person": 0.04}
    >>> c = contributions(r.with_columns(semantic=pl.lit(0.9)), w)
    >>> round(c["part"].sum(), 6), c.filter(pl.col("signal") == "person")["value"][0]
    (0.5, 1.0)
    """
    rows = results.with_columns(pl.format("{}. {}", pl.col("rank"), pl.col("memory").str.slice(0, 60)).alias("result"))
    # search fuses the keyword signal times semantic when semantic counts (fuse_scores.sql)
    gate = pl.col("semantic").cast(pl.Float64) if weights.get("semantic", 0.0) > 0 else pl.lit(1.0)
    rows = rows.with_columns(gate.alias("_gate"))
    weighted = pl.sum_horizontal([pl.col(s).cast(pl.Float64) * float(weights.get(s, 0.0))
                                  * (pl.col("_gate") if s == "keyword" else 1.0) for s in SIGNALS])
    rows = rows.with_columns(pl.when(weighted > 0).then(pl.col("score") / weighted).otherwise(0.0).alias("_scale"))
    long = rows.unpivot(index=["result", "rank", "score", "_scale", "_gate"], on=list(SIGNALS),
                        variable_name="signal", value_name="value")
    return long.with_columns(
        pl.col("value").cast(pl.Float64),
        pl.col("signal").replace_strict({s: float(weights.get(s, 0.0)) for s in SIGNALS},
                                        return_dtype=pl.Float64).alias("weight"),
    ).with_columns((pl.col("value") * pl.col("weight") * pl.col("_scale")
                    * pl.when(pl.col("signal") == "keyword").then(pl.col("_gate")).otherwise(1.0)).alias("part")).select(
        "result", "rank", "signal", "value", "weight", "part", "score").sort("rank", "signal")


def compare_results(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Side-by-side ranks of two result lists (rank null: not returned by that setting)."""
    left = a.filter(pl.col("above_threshold")).select("id", "memory", pl.col("rank").alias("rank_a"))
    right = b.filter(pl.col("above_threshold")).select("id", "memory", pl.col("rank").alias("rank_b"))
    out = left.join(right, on=["id", "memory"], how="full", coalesce=True)
    return out.with_columns((pl.col("rank_b").cast(pl.Int64) - pl.col("rank_a").cast(pl.Int64)).alias("moved")
                            ).sort(pl.coalesce("rank_a", "rank_b"))


# -- expirations ------------------------------------------------------------------------------------
def expirations(m: Any, scope: Scope | None, within_days: float, now: dt.datetime | None = None) -> pl.DataFrame:
    """Memories that have expired, or that expire within `within_days` (`when`: expired | soon)."""
    now = now or utcnow()
    tl = m.frame("timeline", **(scope or {}))
    soon = now + dt.timedelta(days=within_days)
    df = tl.filter(pl.col("expiration_date").is_not_null() & pl.col("invalidated_at").is_null()
                   & (pl.col("expiration_date") <= soon))
    labels = [scope_label({k: r[k] for k in IDENTITY_KEYS if r.get(k)}) for r in
              df.select(list(IDENTITY_KEYS)).iter_rows(named=True)]
    return df.with_columns(
        pl.when(pl.col("expiration_date") <= now).then(pl.lit("expired")).otherwise(pl.lit("soon")).alias("when"),
        pl.Series("scope", labels, dtype=pl.Utf8),
    ).select("when", "memory", "expiration_date", "scope", "valid_from", "id").sort("expiration_date")


# -- entities ---------------------------------------------------------------------------------------
def default_hub_degree(n_memories: int) -> int:
    """Degree from which an entity counts as a hub: linked to a quarter of the scope's memories, and
    at least 3 (search damps such entities: they say little about which memory is meant).

    >>> default_hub_degree(21), default_hub_degree(4)
    (6, 3)
    """
    return max(3, math.ceil(n_memories / 4))


NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                         "LANGUAGE", "PROPN"})
TIME_WORDS = frozenset({"day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
                        "time", "today", "tomorrow", "yesterday", "tonight", "morning", "evening", "night", "hour",
                        "minute", "january", "february", "march", "april", "may", "june", "july", "august",
                        "september", "october", "november", "december", "monday", "tuesday", "wednesday",
                        "thursday", "friday", "saturday", "sunday", "summer", "winter", "spring", "fall", "autumn"})


def entity_kind(name: str, label: str | None, degree: int, topic_degree: int = 3) -> str:
    """name | topic | time | common: what an entity is to a person looking things up. spaCy's entity
    labels and proper nouns are names (so is a capitalised "noun", e.g. a person's name spaCy
    tagged NOUN); dates and time words are `time`; a common noun is a `topic` only when it recurs
    (in at least `topic_degree` memories), else `common`.

    >>> [entity_kind(*a) for a in [("Tom", "PERSON", 1), ("Alice", "NOUN", 9), ("week", "NOUN", 4),
    ...                            ("October", "PROPN", 2), ("cello", "NOUN", 3), ("job", "NOUN", 1)]]
    ['name', 'name', 'time', 'time', 'topic', 'common']
    """
    word = (name or "").strip()
    if (label in ("DATE", "TIME")) or word.lower() in TIME_WORDS:
        return "time"
    if label in NAME_LABELS or (word[:1].isupper() and label in (None, "NOUN")):
        return "name"
    return "topic" if degree >= topic_degree else "common"


ENTITY_KINDS = ("name", "topic", "common", "time")


def entity_degrees(m: Any, scope: Scope, hub_degree: int, topic_degree: int = 3) -> pl.DataFrame:
    """Entities of the scope, names first then topics (each by degree), `kind` and `hub` flagged."""
    deg = m.frame("entity_degrees", **scope)
    kinds = [entity_kind(n, lab, d, topic_degree) for n, lab, d in
             zip(deg["entity"].to_list(), deg["label"].to_list(), deg["degree"].to_list())]
    return deg.with_columns(pl.Series("kind", kinds, dtype=pl.Utf8), (pl.col("degree") >= hub_degree).alias("hub")
                            ).with_columns(pl.col("kind").replace_strict(
                                {k: i for i, k in enumerate(ENTITY_KINDS)}, return_dtype=pl.Int32).alias("_order")
                            ).sort("_order", "degree", "entity", descending=[False, True, False]).select(
        "entity", "kind", "label", "degree", "current_degree", "hub", "entity_id")


def entity_memories(m: Any, entity_id: str, scope: Scope) -> pl.DataFrame:
    """The scope's memories linked to one entity."""
    ids = m.frame("postings", **scope).filter(pl.col("entity_id") == entity_id)["memory_id"].to_list()
    return m.frame("timeline", **scope).filter(pl.col("id").is_in(ids)).select(
        "memory", "status", "valid_from", "valid_to", "id").sort("valid_from")


# -- governance -------------------------------------------------------------------------------------
def history_log(m: Any, scope: Scope | None, events: list[str] | None = None) -> pl.DataFrame:
    """History events, newest first by conversation time, optionally of some event kinds only:
    `said_at` when it happened in the conversation (empty for an analyst's action, which happened
    when stored), `stored_at` when it was written."""
    df = m.frame("history", **(scope or {}))
    if events:
        df = df.filter(pl.col("event").is_in(events))
    said = pl.col("said_at") if "said_at" in df.columns else pl.lit(None, dtype=pl.Datetime("us"))
    return df.with_columns(said.alias("said_at"), pl.col("created_at").alias("stored_at")).sort(
        pl.coalesce("said_at", "stored_at"), "id", descending=[True, False]).select(
        "said_at", "stored_at", "event", "old_memory", "new_memory", "actor_id", "memory_id", "id")


def erasure_preview(m: Any, scope: Scope) -> dict[str, int]:
    """How many rows of each kind the scope holds (what forget() will remove)."""
    return {name: m.frame(name, **scope).height for name in ("memories", "history", "messages", "extraction_runs",
                                                             "links", "postings")}


_ROW_NAMES = {  # receipt table names in plain words (singular, plural)
    "memories": ("memory", "memories"), "messages": ("message", "messages"),
    "history": ("history event", "history events"), "extraction_runs": ("extraction run", "extraction runs"),
    "memory_links": ("link between memories", "links between memories"),
    "entity_postings": ("entity mention", "entity mentions"), "keyword_postings": ("search-index entry", "search-index entries"),
    "entities": ("entity no other scope mentions", "entities no other scope mentions"),
    "ingest_runs": ("ingest run", "ingest runs"), "ingest_log": ("ingest log row", "ingest log rows"),
    "retention_policies": ("retention policy", "retention policies"),
}


def _when(value: Any) -> str:
    """A timestamp as people read it: '3 Dec 2026, 16:57:49' (no microseconds).

    >>> _when("2026-12-03 16:57:49.786816"), _when(None)
    ('3 Dec 2026, 16:57:49', '—')
    """
    if value is None or value == "":
        return "—"
    try:
        t = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    return f"{t.day} {t:%b %Y, %H:%M:%S}"


def receipt_lines(receipt: dict[str, Any]) -> list[str]:
    """An erasure receipt as a few sentences (no field names), for the person who erased.

    >>> r = {"completed_at": "2026-12-03 16:57:49.786816", "actor_id": "me", "verified": True, "method": "rewrite",
    ...      "rows_removed": {"memories": 6, "messages": 1, "ingest_log": 0}, "files_rewritten": [],
    ...      "verification": {"needles_checked": 2, "needles_shared": 1, "files_scanned": 1, "bytes_scanned": 4206592},
    ...      "timings_ms": {"total": 2167.7}, "id": "7f62"}
    >>> for line in receipt_lines(r): print(line)
    Done on 3 Dec 2026, 16:57:49 by me, in 2.2 s.
    Removed 6 memories and 1 message.
    The store file was rewritten, so the deleted rows' bytes are gone from it, not just marked deleted.
    Checked: 1 file (4.2 MB) searched for 2 distinctive pieces of the erased text; none was found (1 also appears in another scope's data and was not counted).
    Receipt 7f62, kept in the store; it names no person (the scope is stored only as a keyed hash).
    """
    order = list(_ROW_NAMES)
    counts = sorted((receipt.get("rows_removed") or {}).items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)
    removed = [(n, _ROW_NAMES.get(k, (k.replace("_", " "),) * 2)) for k, n in counts if n]
    words = [f"{n:,} {names[0] if n == 1 else names[1]}" for n, names in removed]
    total_ms = (receipt.get("timings_ms") or {}).get("total")
    lines = [f"Done on {_when(receipt.get('completed_at'))} by {receipt.get('actor_id') or 'unknown'}"
             + (f", in {total_ms / 1000:.1f} s." if total_ms is not None else ".")]
    lines.append("Removed " + (", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else
                               (words[0] if words else "nothing (the scope held no rows)")) + ".")
    if receipt.get("method") == "rewrite":
        lines.append("The store file was rewritten, so the deleted rows' bytes are gone from it, not just marked deleted.")
    if receipt.get("files_rewritten"):
        lines.append(f"{len(receipt['files_rewritten']):,} Parquet export file(s) were rewritten without the scope's rows.")
    v = receipt.get("verification") or {}
    if v:
        found = sum(len(x) if isinstance(x, (list, dict)) else int(bool(x)) for x in (v.get("hits") or {}).values())
        shared = int(v.get("needles_shared") or 0)
        size = f"{(v.get('bytes_scanned') or 0) / 1e6:,.1f} MB"
        files = int(v.get("files_scanned") or 0)
        lines.append(f"Checked: {files:,} file{'' if files == 1 else 's'} ({size}) searched for "
                     f"{v.get('needles_checked', 0):,} distinctive pieces of the erased text; "
                     + (f"{found} found — the erasure is NOT complete." if found or not receipt.get("verified")
                        else "none was found")
                     + (f" ({shared} also {'appears' if shared == 1 else 'appear'} in another scope's data and "
                        f"{'was' if shared == 1 else 'were'} not counted)." if shared else "."))
    lines.append(f"Receipt {receipt.get('id')}, kept in the store; it names no person "
                 "(the scope is stored only as a keyed hash).")
    return lines


def receipts_table(receipts: list[dict[str, Any]]) -> pl.DataFrame:
    """Stored erasure receipts, newest first, with readable times and what was removed."""
    rows = [{"completed": _when(r.get("completed_at")), "verified": bool(r.get("verified")),
             "memories": int((r.get("rows_removed") or {}).get("memories", 0)),
             "messages": int((r.get("rows_removed") or {}).get("messages", 0)),
             "by": str(r.get("actor_id") or ""), "scope keys": ", ".join(r.get("scope_keys") or []),
             "id": str(r.get("id")), "_at": str(r.get("completed_at") or "")} for r in receipts]
    return pl.DataFrame(rows).sort("_at", descending=True).drop("_at")


# -- export -----------------------------------------------------------------------------------------
def csv_safe(df: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs, arrays) as JSON text, so the frame can be written as CSV.

    >>> csv_safe(pl.DataFrame({"a": [["x", "y"]]}))["a"][0]
    '["x", "y"]'
    """
    nested = [c for c, t in df.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    if not nested:
        return df
    return df.with_columns(pl.Series(c, [None if v is None else json.dumps(v, default=str) for v in df[c].to_list()],
                                     dtype=pl.Utf8) for c in nested)
