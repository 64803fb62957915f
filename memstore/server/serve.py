"""`memstore serve`: one process owns the store file; everything else is its client.

It refuses to start when another server owns the store (naming its URL) or when a process that is
not a server holds the file (naming its PID); it binds loopback unless TLS is configured; it writes
`<store>.server.json` once it listens and removes it on exit.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import sys
from typing import Any

from memstore.core.errors import ConfigError, StoreLockedError
from memstore.wire.discovery import live_server, load_or_create_token, remove_info, token_file, write_info

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
OWNER_THREADS = 1             # DuckDB threads of the owner with --fronts, unless config `threads` says
MAX_AUTO_FRONTS = 4           # --fronts auto: one a core up to this (the owner's commit limit, see choose_fronts)


def choose_fronts(fronts: int | str | None, *, cores: int | None = None, shard: bool = False) -> tuple[int, str]:
    """How many front processes `memstore serve` runs, and why (the banner and /health say it).

    `auto` (the default): one a core, at most MAX_AUTO_FRONTS, when the machine has 2 or more cores;
    none on one core (a front only adds a process hop there) or for a shard (fronts do not run with
    --shard yet). Measured on 2 cores, 8 clients adding (infer=False, hashing embedder): the
    default without fronts 86 adds/s at 8.5 ms of owner CPU an add; `--fronts 2` 120 adds/s at 4.4
    ms. The owner's own work (~3-4 ms an add) then caps one store at ~250-300 adds/s, which 4 fronts
    reach; past that, add shards (README, "Many machines").

    >>> choose_fronts("auto", cores=2), choose_fronts("auto", cores=1)[0], choose_fronts("auto", cores=32)[0]
    ((2, 'auto: one a core on 2 cores'), 0, 4)
    >>> choose_fronts("auto", cores=8, shard=True)
    (0, 'auto: none for a shard (--fronts does not run with --shard yet)')
    >>> choose_fronts("3")
    (3, 'asked for')
    """
    if fronts is None or (isinstance(fronts, str) and fronts.strip().lower() == "auto"):
        n = (os.cpu_count() or 1) if cores is None else cores
        if shard:
            return 0, "auto: none for a shard (--fronts does not run with --shard yet)"
        if n < 2:
            return 0, f"auto: none on {n} core"
        return min(n, MAX_AUTO_FRONTS), f"auto: one a core on {n} cores" + (
            f" (at most {MAX_AUTO_FRONTS})" if n > MAX_AUTO_FRONTS else "")
    try:
        value = int(fronts)
    except (TypeError, ValueError):
        raise ConfigError(f"--fronts is {fronts!r}", hint="give a whole number of front processes, or auto",
                          key="fronts") from None
    if value < 0:
        raise ConfigError(f"--fronts is {value}", hint="give a whole number of front processes >= 0, or auto",
                          key="fronts")
    return value, "asked for"


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def pick_port(host: str, port: int | None) -> int:
    """`port` if given; else 8765 when free, else a free port chosen by the OS."""
    if port is not None:
        return port
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, DEFAULT_PORT))
            return DEFAULT_PORT
        except OSError:
            s.bind((host, 0))
            return s.getsockname()[1]


def check_serve(store: str, host: str, tls: bool) -> None:
    """Refuse what must not start: a second server on the store, or an exposed plain-HTTP bind."""
    other = live_server(store)
    if other is not None:
        raise StoreLockedError(f"a memstore server already owns {store} at {other['url']} (pid {other.get('pid')})",
                               hint=f"connect to it (Memory({store!r}) and the CLI do so by themselves), "
                                    f"or stop it first", url=other["url"])
    if not is_loopback(host) and not tls:
        raise ConfigError(f"refusing to serve {store} on {host} over plain HTTP: the bearer token and every memory "
                          f"would cross the network in clear",
                          hint="bind 127.0.0.1 (the default) and put a TLS proxy in front, or pass "
                               "--ssl-certfile and --ssl-keyfile", key="host")


def serve(store: str, *, host: str = DEFAULT_HOST, port: int | None = None, analyst_api: bool = True,
          config: dict[str, Any] | None = None, ssl_certfile: str | None = None, ssl_keyfile: str | None = None,
          log_level: str = "warning", group_commit: bool = True, quiet: bool = False,
          shard: str | None = None, workers: int | None = None, publish_to: str | None = None,
          publish_every: str | float = "60s", publish_data_path: str | None = None,
          fronts: int | str = "auto") -> int:
    """Serve `store` until interrupted; returns the exit code. `shard="i/N"`: this server is shard i
    of N and refuses scopes it does not own (memstore/cluster/shard_guard.py). `workers` processes
    (default: one per core; 0: none) run the model work of adds (memstore/pipeline/workers.py);
    this process reads, commits and answers. `fronts` processes (default 0: none) take the HTTP
    and the model work of adds and searches; this process then only authenticates, commits and
    searches for them (memstore/server/fronts.py), and `workers` defaults to 0. `publish_to`:
    publish the store to a DuckLake lake every `publish_every` (memstore/lake/schedule.py)."""
    import uvicorn

    from memstore.memory import Memory
    from memstore.server.app import create_app
    from memstore.server.group_commit import GroupCommitter

    store = os.path.abspath(store)
    layout = None
    if shard:
        from memstore.core.placement import parse_shard

        layout = parse_shard(shard)
    tls = bool(ssl_certfile and ssl_keyfile)
    check_serve(store, host, tls)
    fronts, fronts_why = choose_fronts(fronts, shard=layout is not None)
    if fronts and layout is not None:
        raise ConfigError("--fronts does not run with --shard yet", hint="serve a shard with --fronts 0", key="fronts")
    token = load_or_create_token(store)
    port = pick_port(host, port)
    scheme = "https" if tls else "http"
    url = f"{scheme}://{host if ':' not in host else f'[{host}]'}:{port}"
    logging.getLogger("mcp").setLevel(logging.WARNING)     # its session manager's INFO lines are noise here
    _one_blas_thread()
    memory = Memory(store, config=config, embedded=True)
    if fronts:
        owner_threads(memory)
    write_info(store, url, state="starting")      # clients wait for us instead of hitting the lock
    try:
        committer = GroupCommitter(memory) if group_commit else None
        if layout is None:
            app = create_app(memory, token=token, analyst_api=analyst_api, committer=committer)
        else:
            from memstore.cluster.shard_guard import ShardGuard
            from memstore.cluster.shard_routes import mount_shard_routes

            guard = {"shard": layout[0], "shards": layout[1]}
            app = create_app(ShardGuard(memory, **guard), token=token, analyst_api=analyst_api,
                             committer=ShardGuard(committer, **guard) if committer is not None else None,
                             shard=f"{layout[0]}/{layout[1]}")
            mount_shard_routes(app, memory, token=token, **guard)
    except BaseException:
        remove_info(store, pid=os.getpid())
        memory.close()
        raise

    def announce() -> None:
        write_info(store, url)
        if not quiet:
            print(f"memstore serve: {store}\n  url   {url}  (API docs at {url}/docs)\n  token "
                  f"{os.environ.get('MEMSTORE_TOKEN') and '$MEMSTORE_TOKEN' or token_file(store)}\n"
                  f"  workers {memory.workers} (processes preparing adds)\n"
                  + f"  fronts  {fronts} ({fronts_why}; processes taking the HTTP, adds and searches)\n" +
                  f"  Memory({store!r}), the CLI and `memstore ui` now talk to this server. Ctrl-C stops it.",
                  flush=True)

    app.router.on_startup.append(announce)
    app.state.layout = {"fronts": fronts, "fronts_chosen": fronts_why}      # /health
    try:
        _warm(memory)           # before announcing "ready": the first request does not wait for the models
        memory.start_workers(((os.cpu_count() or 1) if not fronts else 0) if workers is None else workers)
        front = _start_fronts(fronts, app, memory, committer, host, port, ssl_certfile, ssl_keyfile,
                              log_level) if fronts else None
    except BaseException:
        remove_info(store, pid=os.getpid())
        memory.close()
        raise
    _freeze_heap()
    publisher = _publisher(memory, publish_to, publish_every, publish_data_path)
    where: dict[str, Any] = ({"host": host, "port": port, "ssl_certfile": ssl_certfile, "ssl_keyfile": ssl_keyfile}
                             if front is None else {"uds": front.owner_http})    # the fronts hold the port
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False, timeout_graceful_shutdown=10,
                                           **where))
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()        # uvicorn shuts down gracefully on a signal, then re-raises it: see _stop
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        remove_info(store, pid=os.getpid())
        if front is not None:
            front.stop()                    # their adds in flight commit before the committer stops
        if committer is not None:
            committer.close()
        app.state.access.flush_use()        # the tokens' last use, before the file closes
        if publisher is not None:
            publisher.stop(final=True)      # the last writes reach the lake before the store closes
        memory.close()
        if not quiet:
            print(f"memstore serve: stopped; {store} is closed", flush=True)
    if not server.started:
        print(f"error: could not listen on {host}:{port} (see the message above)", file=sys.stderr)
        return 1
    return 0


class _Fronts:
    """The owner's side of --fronts: the listening socket, the front processes, the side door."""

    def __init__(self, sock: Any, pool: Any, rpc: Any, folder: str, owner_http: str) -> None:
        self.sock, self.pool, self.rpc, self.folder, self.owner_http = sock, pool, rpc, folder, owner_http

    def stop(self) -> None:
        import shutil

        self.pool.stop()
        self.rpc.close()
        self.sock.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def owner_threads(memory: Any) -> int:
    """DuckDB threads of a server's owner with fronts: OWNER_THREADS unless config `threads` names
    them. The fronts do the parallel work; the owner runs small statements (a group's INSERTs and
    COMMIT), each 25-40 % cheaper in CPU on one DuckDB thread, without hand-offs to worker threads
    (bench/server.py --fronts 2 --threads 1). Returns the threads in use."""
    if memory.config.threads is None:
        memory.config.threads = OWNER_THREADS
        memory.db.set_threads(OWNER_THREADS)
    return int(memory.config.threads)


def _start_fronts(n: int, app: Any, memory: Any, committer: Any, host: str, port: int, ssl_certfile: str | None,
                  ssl_keyfile: str | None, log_level: str) -> _Fronts:
    """Bind the port, open the owner's side door and start `n` front processes on the port."""
    from memstore.server.fronts import FrontPool, OwnerDoor, private_socket_dir
    from memstore.server.owner_rpc import OwnerRPCServer

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"could not listen on {host}:{port}: {exc.strerror or exc}",
                          hint="pick another --port, or stop what listens there", key="port") from None
    folder = private_socket_dir()
    owner_http = os.path.join(folder, "http.sock")
    door = OwnerDoor(memory, app.state.access, committer)
    rpc = OwnerRPCServer(os.path.join(folder, "rpc.sock"), door)
    mem0 = getattr(memory, "_mem0", None)
    pool = FrontPool(n, sock, config=memory.config, rpc_path=rpc.path, owner_http=owner_http,
                     default_prompt=mem0.custom_instructions if mem0 else None, ssl_certfile=ssl_certfile,
                     ssl_keyfile=ssl_keyfile, log_level=log_level)
    fronts = _Fronts(sock, pool, rpc, folder, owner_http)
    try:
        pool.start()
    except BaseException:
        fronts.stop()
        raise
    app.state.front_pids = pool.pids
    app.state.front_searches = door.snapshots.stats       # /health: searches fronts answered from copies
    app.state.owner_ops = door.ops                         # /health: the fronts' messages and their CPU
    return fronts


def _publisher(memory: Any, lake: str | None, every: str | float, data_path: str | None) -> Any:
    """--publish-to: the lake publisher thread (memstore/lake/schedule.py), started."""
    if not lake:
        return None
    from memstore.lake.schedule import Publisher, parse_every

    return Publisher(memory.db, lake, parse_every(every), data_path=data_path).start()


class _Stopped(Exception):
    """SIGTERM / SIGINT after uvicorn's graceful shutdown: leave serve() through its clean-up."""


def _stop(signum: int, frame: Any) -> None:
    raise _Stopped(signum)


def _one_blas_thread() -> None:
    """NumPy's BLAS on one thread for the whole server process. Many request threads run spaCy and
    searches at once; with a BLAS thread per core, spaCy's products switch the count to 1 and back
    around each product (memstore/providers/thinc_ops.py), which under concurrency cost 5-10x the
    CPU per add (bench/server.py --workers 0 --infer on, 2 cores, load ~27: owner 150-310 ms per add
    and 2 adds/s with BLAS threads, 21-33 ms and 15 adds/s with one). The server's parallelism is
    its requests and its worker processes, not the threads of one product."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency of memstore
        return
    threadpool_limits(1, user_api="blas")


def _freeze_heap() -> None:
    """Keep what is loaded by now (spaCy's vocabulary, the models, the app: millions of objects)
    out of the garbage collector's full passes. Without it, every full pass walked them all: ~40 %
    of the owner's CPU in py-spy samples of bench/server.py's searches (8 clients, 2 cores). These
    objects live as long as the server; requests' garbage is still collected as before."""
    import gc

    gc.collect()
    gc.freeze()


def _warm(memory: Any) -> None:
    """Load the embedding model and spaCy now, so the first request does not wait for them."""
    try:
        # an add prepared and dropped: spaCy and the embedder run, nothing is stored, no LLM call
        memory.prepare_add("warm up", user_id="memstore-warm-up", infer=False)
    except Exception:
        pass
