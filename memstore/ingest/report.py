"""The ingest report: what was read, stored, left out (and why), extracted, and how long each stage took.

Every message read is accounted for exactly once:
read = stored + already_ingested + ignored + skipped + failed.

>>> r = IngestReport(ingest_id="x", scope={"user_id": "alice"})
>>> r.messages["read"] += 3; r.messages["stored"] += 2; r.note(Problem("f.json", "empty message", "c1", "m3"))
>>> r.messages["skipped"], r.balanced()
(1, True)
>>> print(r.summary().splitlines()[0])
ingest x for user_id=alice: 2 of 3 messages stored, 0 already ingested, 0 ignored, 1 skipped, 0 failed
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memstore.ingest.types import Problem

MAX_LISTED_PROBLEMS = 1000


def process_age() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere): what a command spent
    before the ingest began — interpreter start, imports, opening the store, loading models.

    >>> age = process_age()
    >>> age is None or age > 0
    True
    """
    try:
        with open("/proc/self/stat") as f:
            started_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class IngestReport:
    ingest_id: str
    scope: dict[str, str]
    status: str = "running"
    files: list[dict[str, Any]] = field(default_factory=list)
    conversations: Counter = field(default_factory=lambda: Counter(
        read=0, ingested=0, already_ingested=0, empty=0, skipped=0, failed=0))
    messages: Counter = field(default_factory=lambda: Counter(
        read=0, stored=0, already_ingested=0, ignored=0, skipped=0, failed=0))
    ignored_by_reason: Counter = field(default_factory=Counter)
    skipped_by_reason: Counter = field(default_factory=Counter)
    warnings_by_reason: Counter = field(default_factory=Counter)
    extraction_runs: Counter = field(default_factory=Counter)
    memories: Counter = field(default_factory=lambda: Counter(added=0, deduplicated=0, superseded=0))
    stages_s: Counter = field(default_factory=Counter)        # wall time per stage
    stages_cpu_s: Counter = field(default_factory=Counter)    # process CPU time (all threads) per stage
    problems: list[Problem] = field(default_factory=list)
    problems_not_listed: int = 0
    startup_s: float | None = field(default_factory=process_age)   # process start -> this ingest's start

    # -- accounting ------------------------------------------------------------------------------
    def note(self, p: Problem) -> None:
        """Count one problem: ignored/skipped messages by reason, file errors, warnings, failures."""
        if p.unread:
            self.messages["read"] += 1
        if p.severity == "ignored":
            self.messages["ignored"] += 1
            self.ignored_by_reason[_reason_key(p.reason)] += 1
            return
        if p.severity == "skipped":
            if p.message is not None:
                self.messages["skipped"] += 1
            else:
                self.conversations["skipped"] += 1
            self.skipped_by_reason[_reason_key(p.reason)] += 1
        elif p.severity == "warning":
            self.warnings_by_reason[_reason_key(p.reason)] += 1
        if len(self.problems) < MAX_LISTED_PROBLEMS:
            self.problems.append(p)
        else:
            self.problems_not_listed += 1

    def balanced(self) -> bool:
        """True when every message read is accounted for exactly once."""
        m = self.messages
        return m["read"] == m["stored"] + m["already_ingested"] + m["ignored"] + m["skipped"] + m["failed"]

    # -- output ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"ingest_id": self.ingest_id, "scope": dict(self.scope), "status": self.status,
                "files": list(self.files), "conversations": dict(self.conversations),
                "messages": dict(self.messages), "ignored_by_reason": dict(self.ignored_by_reason),
                "skipped_by_reason": dict(self.skipped_by_reason),
                "warnings_by_reason": dict(self.warnings_by_reason),
                "extraction_runs": dict(self.extraction_runs), "memories": dict(self.memories),
                "stages_s": {k: round(v, 3) for k, v in self.stages_s.items()},
                "stages_cpu_s": {k: round(v, 3) for k, v in self.stages_cpu_s.items()},
                "startup_s": None if self.startup_s is None else round(self.startup_s, 3),
                "problems": [p.to_dict() for p in self.problems],
                "problems_not_listed": self.problems_not_listed}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)

    def summary(self) -> str:
        """A few lines for people (the CLI prints this)."""
        m, c, mem = self.messages, self.conversations, self.memories
        who = ", ".join(f"{k}={v}" for k, v in self.scope.items())
        lines = [(f"ingest {self.ingest_id} for {who}: {m['stored']} of {m['read']} messages stored, "
                  f"{m['already_ingested']} already ingested, {m['ignored']} ignored, {m['skipped']} skipped, "
                  f"{m['failed']} failed"),
                 (f"conversations: {c['read']} read, {c['ingested']} ingested, {c['already_ingested']} already "
                  f"ingested, {c['empty']} empty, {c['skipped']} skipped, {c['failed']} failed"),
                 "extraction runs: " + (", ".join(f"{n} {s}" for s, n in sorted(self.extraction_runs.items()))
                                        or "none"),
                 (f"memories: {mem['added']} added, {mem['deduplicated']} deduplicated, "
                  f"{mem['superseded']} superseded"),
                 "time: " + ", ".join(f"{k} {v:.1f}s" for k, v in self.stages_s.items())
                 + (f" (CPU {self.stages_cpu_s['total']:.1f}s)" if "total" in self.stages_cpu_s else "")
                 + ("" if self.startup_s is None else
                    f"; before it, {self.startup_s:.1f}s since the process started (start-up: imports, opening the store)")]
        for f in self.files:
            if f.get("error"):
                lines.append(f"FILE ERROR {f['path']}: {f['error']}")
        for title, counts in (("ignored", self.ignored_by_reason), ("skipped", self.skipped_by_reason),
                              ("warnings", self.warnings_by_reason)):
            if counts:
                lines.append(f"{title}: " + "; ".join(f"{n}× {r}" for r, n in counts.most_common(8)))
        failed = [p for p in self.problems if p.severity in ("failed", "error")]
        for p in failed[:10]:
            where = " / ".join(x for x in (p.file, p.conversation, p.message) if x)
            lines.append(f"{p.severity.upper()} {where}: {p.reason}")
        if len(failed) > 10:
            lines.append(f"... and {len(failed) - 10} more (see the report's problems)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _reason_key(reason: str) -> str:
    """Group reasons that differ only by where they happened ("line 7: ..." → "...") or by a number."""
    if ": " in reason and reason.split(": ", 1)[0].split(" ")[0] in ("line", "row"):
        reason = reason.split(": ", 1)[1]
    if reason.startswith("line ") and " is not valid JSON" in reason:
        return "line is not valid JSON"
    if reason.startswith("message is ") and "over the limit" in reason:
        return "message over max_message_chars"
    return reason
