"""`memstore ingest FILES --on-ray ADDRESS --to TARGET` and `memstore.ingest_dataset(ds, to=...)`.

Ray does the model work, the store's owner commits:

    driver:  read + group by scope → ask the owner what it holds (ingest_known) → plan the adds
             (memstore/ingest/plan.py: the one-machine runner's own functions, same ids, same cut,
             same order: oldest conversation first per scope)
    Ray:     Dataset of planned conversations (JSON text) → map_batches(Preparer) on an actor pool
             (memstore/on_ray/prepare.py: models loaded once per actor) → prepared JSON text
    driver:  in plan order (preserve_order), groups of whole conversations of one scope →
             owner.ingest_prepared(...) (memstore/wire/prepared.py's JSON, checked there like any
             request, under the caller's token), retried while the owner restarts.

`to` is a store path (the driver opens it and is its owner), a server's URL, or a cluster's
balancer (each scope's conversations go to the shard the placement function names:
memstore/api/cluster_client.py). Nothing of this is pickled towards an owner.

Idempotent and resumable like `memstore ingest`: what the owner holds is skipped when planning and
checked again at commit (a conversation delivered twice stores nothing the second time), so a run
killed anywhere (driver, worker, owner) completes when started again. A worker that dies is
replaced by Ray and its batch run again (`max_restarts` / `max_task_retries`).
"""
from __future__ import annotations

import json
import logging
import os
import time
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from memstore.core.errors import ConfigError, MemstoreError, MissingFileError, ServerUnavailableError
from memstore.core.identity import Scope
from memstore.core.ids import new_id
from memstore.core.model import AddOptions
from memstore.core.timeutil import utcnow
from memstore.ingest.detect import detect_format
from memstore.ingest.options import IngestOptions
from memstore.ingest.plan import ConversationJob, Stager, conversation_states, fail
from memstore.ingest.progress import Progress, wanted
from memstore.ingest.readers import read_source
from memstore.ingest.report import IngestReport
from memstore.ingest.tabular import group_rows
from memstore.ingest.types import Problem, SourceConversation, SourceFormatError
from memstore.wire.prepared import encode_conversation

_LOOKUP = 256                     # conversations per ingest_known call
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")


def open_target(to: Any, config: dict[str, Any], token: str | None = None) -> Any:
    """The owner to commit to: a client for a URL (a cluster's balancer: the cluster client), else
    the store file opened here (or the client of the server that owns it)."""
    from memstore.api.connect import connect, is_url
    from memstore.memory import Memory

    if to is None:
        raise ConfigError("say where to store: --to STORE.duckdb or --to http://HOST:PORT", key="to")
    if is_url(to):
        return connect(str(to).strip(), token=token)
    return Memory(os.fspath(to), config=config)


def init_ray(address: str | None, num_cpus: int | None = None) -> Any:
    """Connect to Ray unless connected: `auto` (or None) joins the cluster running on this machine
    (`ray start`, or $RAY_ADDRESS) and starts a local one when there is none; else the address
    given (`ray://HOST:10001`)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--on-ray needs Ray: pip install 'memstore[ray]'", key="on_ray") from None
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False,
                                  "include_dashboard": False, "logging_level": logging.WARNING}
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        if address not in (None, "", "auto", "local"):        # auto: a cluster `ray start` runs here, else a new one
            kwargs = {"address": address, "ignore_reinit_error": True, "log_to_driver": False}
        ray.init(**kwargs)
    return ray


class RayIngest:
    """One ingest on Ray; `run_files` / `run_rows` return the IngestReport."""

    def __init__(self, target: Any, config: dict[str, Any], options: IngestOptions, *, actors: int | None = None,
                 batch_conversations: int = 8, retry_s: float = 120.0) -> None:
        options.check()
        self.target = target
        self.config = config
        self.opt = options
        self.actors = actors
        self.batch_conversations = batch_conversations
        self.retry_s = retry_s
        self.id = new_id()
        self.now = dt_now()
        from memstore.core.config import MemoryConfig

        cfg = MemoryConfig.from_dict(config)
        llm = cfg.llm.provider == "openai"
        slots = "always" if llm and cfg.slot_supersession == "heuristic" else None
        self.add_options = AddOptions(gather_context=False, keep_all_messages=True, slot_supersession=slots)
        self.n_context = cfg.context_messages
        self.reports: dict[str, IngestReport] = {}
        self.stagers: dict[str, Stager] = {}
        self.jobs: list[tuple[Scope, Any, ConversationJob]] = []
        self.embedder: str | None = None
        self.worker_cpu_s = 0.0
        self.worker_pids: set[int] = set()
        self._t_start = time.perf_counter()
        self.owner_wait_s = 0.0                  # waited for an owner that did not answer (restarting)

    # -- reading and planning -----------------------------------------------------------------------
    def _report(self, scope: Scope) -> IngestReport:
        if scope.key not in self.reports:
            self.reports[scope.key] = IngestReport(ingest_id=self.id, scope=scope.as_dict())
            self.stagers[scope.key] = Stager(scope, self.reports[scope.key])
        return self.reports[scope.key]

    def plan_files(self, paths: list[str], scope: Scope) -> None:
        """Read `paths` (as `memstore ingest` does) and plan their new conversations for `scope`."""
        report = self._report(scope)
        for path in paths:
            if not os.path.isfile(path):
                raise MissingFileError(f"no such file: {path}", path=path)
        for path in paths:
            fmt = self.opt.format if self.opt.format != "auto" else detect_format(path)
            entry: dict[str, Any] = {"path": path, "format": fmt, "conversations": 0, "messages_read": 0, "error": None}
            report.files.append(entry)
            problems: list[Problem] = []
            buffer: list[SourceConversation] = []
            try:
                for conv in read_source(path, fmt, problems, mapping=self.opt.mapping,
                                        max_message_chars=self.opt.max_message_chars):
                    entry["conversations"] += 1
                    entry["messages_read"] += conv.n_read
                    self._notes(report, problems)
                    buffer.append(conv)
                    if len(buffer) >= _LOOKUP:
                        self._stage(scope, buffer)
            except (SourceFormatError, OSError) as exc:
                entry["error"] = str(exc)
                problems.append(Problem(path, str(exc), severity="error"))
            finally:
                self._stage(scope, buffer)
                self._notes(report, problems)

    def plan_rows(self, rows: Iterable[dict[str, Any]], *, name: str, mapping: dict[str, str] | None,
                  scope: dict[str, str | None]) -> None:
        """Plan message rows (a Ray Dataset's): scope per row from `mapping`'s user_id / agent_id /
        run_id columns, else `scope`; rows of a conversation keep their order."""
        mapping = dict(mapping or {})
        scope_cols = {k: mapping.pop(k) for k in SCOPE_FIELDS if k in mapping}
        groups: dict[str, tuple[Scope, list[tuple[str, dict[str, Any]]]]] = {}
        for n, row in enumerate(rows, 1):
            ident = dict(scope)
            for k, col in scope_cols.items():
                if row.get(col) not in (None, ""):
                    ident[k] = str(row[col])
            sc = Scope.from_kwargs(ident.get("user_id"), ident.get("agent_id"), ident.get("run_id"))
            groups.setdefault(sc.key, (sc, []))[1].append((f"row {n}", row))
        for sc, scoped_rows in groups.values():
            report = self._report(sc)
            entry = {"path": name, "format": "dataset", "conversations": 0, "messages_read": 0, "error": None}
            report.files.append(entry)
            problems: list[Problem] = []
            by_conv: dict[Any, list[tuple[str, dict[str, Any]]]] = {}
            for where, row in scoped_rows:      # a conversation's rows together, in their order
                by_conv.setdefault(self._conversation_of(row, mapping), []).append((where, row))
            ordered = [r for rs in by_conv.values() for r in rs]
            buffer: list[SourceConversation] = []
            try:
                for conv in group_rows(ordered, name, "dataset", mapping, problems, self.opt.max_message_chars):
                    entry["conversations"] += 1
                    entry["messages_read"] += conv.n_read
                    self._notes(report, problems)
                    buffer.append(conv)
                    if len(buffer) >= _LOOKUP:
                        self._stage(sc, buffer)
            except SourceFormatError as exc:
                entry["error"] = str(exc)
                problems.append(Problem(name, str(exc), severity="error"))
            finally:
                self._stage(sc, buffer)
                self._notes(report, problems)

    @staticmethod
    def _conversation_of(row: dict[str, Any], mapping: dict[str, str]) -> Any:
        from memstore.ingest.tabular import FIELDS

        col = mapping.get("conversation") or next((c for c in FIELDS["conversation"] if c in row), None)
        return None if col is None else row.get(col)

    @staticmethod
    def _notes(report: IngestReport, problems: list[Problem]) -> None:
        for p in problems:
            report.note(p)
        problems.clear()

    def _stage(self, scope: Scope, buffer: list[SourceConversation]) -> None:
        if not buffer:
            return
        by_format: dict[str, list[dict[str, Any]]] = {}
        for conv in buffer:
            by_format.setdefault(conv.format, []).append(
                {"conversation": conv.id, "keys": [m.source_message_id or "" for m in conv.messages]})
        known: set[tuple[str, str]] = set()
        for fmt, convs in by_format.items():
            answer = self._call(self.target.ingest_known, convs, format=fmt, **scope.as_dict())
            known.update((c, k) for c, k in answer["known"])
            self.embedder = answer.get("embedder") or self.embedder
        stager = self.stagers[scope.key]
        for conv in buffer:
            staged = stager.stage(conv, known)
            if staged is None:
                continue
            states = conversation_states(conv, staged.fresh, scope, batch_size=self.opt.batch_size,
                                         metadata=self.opt.metadata, options=self.add_options,
                                         n_context=self.n_context, now=self.now)
            job = ConversationJob(format=conv.format, id=conv.id, file=conv.file, keys=staged.keys, states=states)
            self.jobs.append((scope, (scope.key, staged.when, staged.seq), job))
        buffer.clear()

    # -- preparing on Ray, committing at the owner ------------------------------------------------
    def run(self, ray: Any) -> IngestReport:
        """Prepare the planned conversations on Ray and commit them; the report (all scopes)."""
        t0, c0 = time.perf_counter(), time.process_time()
        self.jobs.sort(key=lambda j: j[1])
        total = sum(job.n_new for _, _, job in self.jobs)
        for report in self.reports.values():
            report.stages_s["read+plan"] = t0 - self._t_start
        if self.jobs:
            self._check_embedder()
            rows = [{"i": i, "scope": json.dumps(sc.as_dict()), "job": json.dumps(encode_conversation(job))}
                    for i, (sc, _, job) in enumerate(self.jobs)]
            ctx = ray.data.DataContext.get_current()
            ctx.execution_options.preserve_order = True
            ctx.enable_progress_bars = False
            logging.getLogger("ray.data").setLevel(logging.WARNING)
            per_block = max(1, self.batch_conversations)
            ds = ray.data.from_items(rows, override_num_blocks=max(1, (len(rows) + per_block - 1) // per_block))
            blocks = ds.num_blocks() if hasattr(ds, "num_blocks") else len(rows)
            actors = min(self.actors or max(1, int(ray.cluster_resources().get("CPU", 1))), max(1, blocks))
            with warnings.catch_warnings():      # Ray's own deprecation notes about its arguments
                warnings.simplefilter("ignore", DeprecationWarning)
                out = self._map(ds, ray, actors)
            with Progress(total, enabled=wanted(self.opt.progress)) as bar:
                bar.stage("prepare (ray)")
                self._commit_stream(out.iter_rows(), bar)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        report = self._merged()
        report.stages_s["prepare+commit"] = wall
        report.stages_cpu_s["driver"] = cpu
        report.stages_cpu_s["workers"] = self.worker_cpu_s
        if self.owner_wait_s:
            report.stages_s["owner unavailable (waited)"] = self.owner_wait_s
        report.stages_s["total"] = time.perf_counter() - self._t_start
        m = report.messages
        report.status = "done" if not (m["failed"] or any(f.get("error") for f in report.files)) else "done_with_problems"
        return report

    def _map(self, ds: Any, ray: Any, actors: int) -> Any:
        """The Dataset of prepared conversations: `Preparer` on a pool of `actors` actors."""
        from memstore.on_ray.prepare import Preparer

        return ds.map_batches(
                Preparer, batch_size=self.batch_conversations, compute=ray.data.ActorPoolStrategy(size=actors),
                num_cpus=1,
                fn_constructor_args=(json.dumps(self.config),),
                fn_constructor_kwargs={"concurrency": self.opt.concurrency, "retries": self.opt.retries,
                                       "backoff_s": self.opt.backoff_s,
                                       "kill_marker": os.environ.get("MEMSTORE_TEST_RAY_KILL_MARKER")},
                max_restarts=-1, max_task_retries=-1)

    def _check_embedder(self) -> None:
        """The workers embed as the store does: its embedder when none was asked for, else an error
        saying which one to ask for."""
        from memstore.core.config import MemoryConfig
        from memstore.providers.factory import build_embedder, embedder_spec, spec_of_name

        if "embedder" not in self.config and spec_of_name(self.embedder):
            self.config["embedder"] = embedder_spec(spec_of_name(self.embedder))
        name = build_embedder(MemoryConfig.from_dict(self.config).embedder).name
        if self.embedder is not None and name != self.embedder:
            spec = spec_of_name(self.embedder)
            raise ConfigError(f"the store is embedded with {self.embedder!r}; this ingest would embed with {name!r}",
                              key="embedder", hint=f"run it with --embedder {spec}" if spec else
                              "run it with the store's embedder (or re-embed the store first: memstore reembed)")

    def _commit_stream(self, rows: Iterator[dict[str, Any]], bar: Progress) -> None:
        group: list[tuple[ConversationJob, str]] = []
        scope: Scope | None = None
        n = 0
        for row in rows:
            sc, _, job = self.jobs[int(row["i"])]
            self.worker_cpu_s += float(row["cpu_s"])
            self.worker_pids.add(int(row["pid"]))
            if row["error"] is not None or row["prepared"] is None:
                fail(self.reports[sc.key], job, str(row["error"]), stage="prepare")
                bar.advance(job.n_new)
                continue
            if group and (sc != scope or n + job.n_new > self.opt.commit_messages):
                self._commit(scope, group, bar)
                group, n = [], 0
            scope = sc
            group.append((job, row["prepared"]))
            n += job.n_new
        if group:
            self._commit(scope, group, bar)

    def _commit(self, scope: Scope, group: list[tuple[ConversationJob, str]], bar: Progress) -> None:
        report = self.reports[scope.key]
        bar.stage("commit", sum(job.n_new for job, _ in group))
        t0, c0 = time.perf_counter(), time.process_time()
        payload = [json.loads(text) for _, text in group]
        retried = False
        try:
            answer, retried = self._call(self.target.ingest_prepared, payload, ingest_id=self.id,
                                         **scope.as_dict(), _retried=True)
        except MemstoreError as exc:
            for job, _ in group:
                fail(report, job, exc, stage="commit")
            bar.advance(sum(job.n_new for job, _ in group))
            return
        finally:       # the owner's CPU when it is this process (a store path); else the client's
            report.stages_s["commit (owner)"] += time.perf_counter() - t0
            report.stages_cpu_s["commit (owner)"] += time.process_time() - c0
        for (job, _), out in zip(group, answer["conversations"]):
            status = out["status"]
            if status == "stored" or (status == "already_ingested" and retried):
                # after a lost answer, "already ingested" is this run's own commit landing
                report.conversations["ingested"] += 1
                report.messages["stored"] += job.n_new
                for k, v in (out.get("extraction_runs") or {}).items():
                    report.extraction_runs[k] += v
                for k, v in (out.get("memories") or {}).items():
                    report.memories[k] += v
            elif status == "already_ingested":
                report.conversations["already_ingested"] += 1
                report.messages["already_ingested"] += job.n_new
            else:
                fail(report, job, out.get("error") or "failed", stage="commit")
            bar.advance(job.n_new)

    def _call(self, fn: Any, *args: Any, _retried: bool = False, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)`, retried with backoff while the owner is unreachable (restarting)."""
        deadline, delay, retried = time.monotonic() + self.retry_s, 0.5, False
        while True:
            try:
                value = fn(*args, **kwargs)
                return (value, retried) if _retried else value
            except ServerUnavailableError:
                if time.monotonic() + delay > deadline:
                    raise
                retried = True
                self.owner_wait_s += delay
                time.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _merged(self) -> IngestReport:
        """One report for the whole run (its scope: the one scope, or how many)."""
        reports = list(self.reports.values())
        if len(reports) == 1:
            return reports[0]
        out = IngestReport(ingest_id=self.id, scope={"scopes": str(len(reports))})
        for r in reports:
            out.files += r.files
            for name in ("conversations", "messages", "ignored_by_reason", "skipped_by_reason", "warnings_by_reason",
                         "extraction_runs", "memories", "stages_s", "stages_cpu_s"):
                getattr(out, name).update(getattr(r, name))
            out.problems += r.problems
            out.problems_not_listed += r.problems_not_listed
        return out


def dt_now() -> Any:

    return utcnow()


def _options(kw: dict[str, Any]) -> IngestOptions:
    names = ("format", "mapping", "batch_size", "concurrency", "retries", "backoff_s", "max_message_chars",
             "commit_messages", "progress", "metadata")
    return IngestOptions(**{k: kw[k] for k in names if k in kw})


def ingest_files(paths: list[str] | str, *, to: Any, user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None, config: dict[str, Any] | None = None, address: str | None = "auto",
                 actors: int | None = None, batch_conversations: int = 8, token: str | None = None,
                 num_cpus: int | None = None, **options: Any) -> IngestReport:
    """`memstore ingest FILES --on-ray ADDRESS --to TO`: chat export files into one scope, the model
    work on Ray. `config`: the memstore config the workers build their models from (embedder,
    llm, nlp); it must embed as the store does. Other keywords: `Memory.ingest`'s options."""
    scope = Scope.from_kwargs(user_id, agent_id, run_id)
    config = dict(config or {})
    paths = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    ray = init_ray(address, num_cpus)
    target = open_target(to, config, token)
    try:
        job = RayIngest(target, config, _options(options), actors=actors, batch_conversations=batch_conversations)
        job.plan_files(paths, scope)
        return job.run(ray)
    finally:
        target.close()


def ingest_dataset(ds: Any, *, to: Any, mapping: dict[str, str] | None = None, user_id: str | None = None,
                   agent_id: str | None = None, run_id: str | None = None, config: dict[str, Any] | None = None,
                   actors: int | None = None, batch_conversations: int = 8, token: str | None = None,
                   name: str = "dataset", **options: Any) -> IngestReport:
    """Any Ray Dataset of chat rows into memstore, the model work on Ray, the commit at `to`'s
    owner(s). `mapping` names the columns (content, role, ts, conversation, id, name, as for
    JSONL/CSV/Parquet) and may name the scope's: `{"user_id": "customer", ...}`; the keywords
    `user_id` / `agent_id` / `run_id` give it to rows without one."""
    import ray

    config = dict(config or {})
    target = open_target(to, config, token)
    try:
        job = RayIngest(target, config, _options(options), actors=actors, batch_conversations=batch_conversations)
        ray.data.DataContext.get_current().execution_options.preserve_order = True   # a conversation's rows in order
        rows = (r for b in ds.iter_batches(batch_format="pyarrow") for r in b.to_pylist())     # nulls as None
        job.plan_rows(rows, name=name, mapping=mapping, scope={"user_id": user_id, "agent_id": agent_id,
                                                                "run_id": run_id})
        return job.run(ray)
    finally:
        target.close()
