"""The owner's side door for its front processes: compact requests over a Unix socket (pickle).

With `memstore serve --fronts N` the front processes accept HTTP, parse JSON and run the model
work (memstore/server/fronts.py); the owner (the one process holding the store file) answers
only what needs the store, one message each way:

    ("admit", authorization, method, kwargs)  -> kwargs as the token may call it (scope, actor_id)
    ("commit", authorization, prepared_add)   -> what add() returns (through the group committer)
    ("search", authorization, kwargs, vector) -> what search() returns (the query's vector given)
    ("snap", authorization, args, kwargs, vector, key, generation)
                                              -> ("fresh",): the front's snapshot copy is current, or
                                                 ("searched", result, key, scope, snapshot or None)
                                                 (memstore/server/front_search.py)
    ("context", prepared_add)                 -> the add with the LLM's context read from the store
    ("failed_run", prepared_add, error)       -> records a failed LLM call, as add() does
    ("reads", [row, ...])                     -> the audit of reads: searches a front answered from
                                                 its snapshot copies (memstore/audit/read_rows.py)

Every call that acts for a request carries its `Authorization` header and is verified here
(memstore/server/auth.py): a revoked token is refused from the next call on, and a scoped token
gets exactly what it gets from the owner's own routes. A message is a 4-byte length and a pickle;
the socket is private to the owner's user (0600 in a 0700 folder), as the fronts are its own
children. Errors travel as their class and fields (`pack_error`) and are raised again in the front.

>>> import socket
>>> a, b = socket.socketpair()
>>> send_msg(a, ("ping",)); recv_msg(b)
('ping',)
"""
from __future__ import annotations

import os
import pickle
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from memstore.core.errors import ServerUnavailableError
from memstore.pipeline.workers import pack_error, unpack_error

_LEN = struct.Struct("!I")


def send_msg(sock: socket.socket, value: Any) -> None:
    """One message: its length, then its pickle."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        buf += chunk
    return bytes(buf)


def recv_msg(sock: socket.socket) -> Any:
    """The next message (ConnectionError when the other side closed)."""
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return pickle.loads(_recv_exact(sock, n))


class OwnerRPCServer:
    """Accept the fronts' connections on `path`; one thread per connection runs `handle(message)`
    and sends back ("ok", value) or ("err", packed error)."""

    def __init__(self, path: str, handle: Callable[[tuple], Any]) -> None:
        self.path = path
        self._handle = handle
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        self._sock.bind(path)
        os.chmod(path, 0o600)
        self._sock.listen(256)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="memstore-owner-rpc", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="memstore-owner-rpc-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    msg = recv_msg(conn)
                except (ConnectionError, OSError, EOFError):
                    return
                try:
                    reply: tuple = ("ok", self._handle(msg))
                except BaseException as exc:  # noqa: BLE001 - every error goes back to the front that asked
                    reply = ("err", pack_error(exc))
                try:
                    send_msg(conn, reply)
                except (ConnectionError, OSError):      # the front died while we worked: nothing to tell
                    return

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.close()
        finally:
            if os.path.exists(self.path):
                os.unlink(self.path)


class OwnerClient:
    """The front's end: `call(op, *args)` on one connection per thread (opened on first use)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def _conn(self) -> socket.socket:
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.path)
            self._local.sock = sock
        return sock

    def call(self, *msg: Any) -> Any:
        """Send `msg`, wait for the answer; the owner's error is raised here as its own class."""
        try:
            sock = self._conn()
            send_msg(sock, msg)
            status, value = recv_msg(sock)
        except (ConnectionError, OSError, EOFError) as exc:
            self._drop()
            raise ServerUnavailableError(f"the server's owner process did not answer ({type(exc).__name__}: {exc})",
                                         hint="the server is stopping or restarting; retry. A write that was "
                                              "in flight may or may not have been applied") from None
        if status == "err":
            raise unpack_error(value)
        return value

    def _drop(self) -> None:
        sock = getattr(self._local, "sock", None)
        self._local.sock = None
        if sock is not None:
            sock.close()

