"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb + pg_ctl in a temp folder, on a
free port of 127.0.0.1, as the `postgres` user (PostgreSQL refuses to run as root).

Settings are the ones a lake catalog that must be erasable needs (see memstore/lake/erasure.py):
`wal_recycle = off` so WAL segments that held erased rows are unlinked rather than kept for reuse.

>>> # with PostgresCluster() as pg:
>>> #     pg.dsn   -> 'dbname=lake host=127.0.0.1 port=54321 user=postgres'
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from memstore.testing.server_process import free_port

SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "wal_recycle": "off",           # erasure: old WAL segments are deleted, not renamed for reuse
    "wal_init_zero": "on",
    "fsync": "off",                 # a test cluster: nothing to keep across a power cut
    "synchronous_commit": "off",
    "full_page_writes": "on",
    "max_connections": "50",
    "shared_buffers": "32MB",
}


def pg_bin(name: str) -> str | None:
    """Path of a PostgreSQL server program (`initdb`, `pg_ctl`, `psql`), or None when not installed."""
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else shutil.which(name)


def available() -> bool:
    """True when PostgreSQL's server programs are installed (Debian's `postgresql` package)."""
    return pg_bin("initdb") is not None and pg_bin("pg_ctl") is not None


class PostgresCluster:
    """initdb + pg_ctl start in a temp folder; `.dsn` (libpq key=value), `.data_dir`, `.psql(sql)`, `.stop()`."""

    def __init__(self, *, dbname: str = "lake", port: int | None = None, base: str | None = None) -> None:
        self.dbname = dbname
        self.port = port or free_port()
        if base is None and os.geteuid() == 0:
            base = "/tmp"        # the `postgres` user must reach it: not a root-only $TMPDIR (pytest's tmp_path)
        self.base = Path(tempfile.mkdtemp(prefix="memstore-pg-", dir=base))
        self.data_dir = self.base / "data"
        self.log = self.base / "postgres.log"
        self._as_root = os.geteuid() == 0
        self.user = "postgres" if self._as_root else pwd.getpwuid(os.geteuid()).pw_name
        self.started = False

    @property
    def dsn(self) -> str:
        """libpq connection string of the test database."""
        return f"dbname={self.dbname} host=127.0.0.1 port={self.port} user={self.user}"

    def _cmd(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if self._as_root else argv

    def _run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self._cmd(argv), check=True, capture_output=True, text=True, **kw)

    def start(self) -> PostgresCluster:
        """Create the cluster and database and start the server (waits until it accepts connections)."""
        if not available():
            raise RuntimeError("PostgreSQL is not installed: apt-get install -y postgresql")
        if self._as_root:
            uid = pwd.getpwnam("postgres")
            os.chown(self.base, uid.pw_uid, uid.pw_gid)
        os.chmod(self.base, 0o700)
        self._run([pg_bin("initdb"), "-D", str(self.data_dir), "-A", "trust", "-U", self.user, "-E", "UTF8",
                   "--no-sync"])
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as f:
            for k, v in {**SETTINGS, "port": str(self.port), "unix_socket_directories": f"'{self.base}'"}.items():
                f.write(f"{k} = {v}\n")
        self._run([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log), "-w", "-t", "60", "start"])
        self.started = True
        deadline = time.monotonic() + 30
        while True:
            try:
                self._run([pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, self.dbname])
                break
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        return self

    def create_database(self, name: str) -> str:
        """Create another database in the cluster; its libpq connection string."""
        self._run([pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name])
        return f"dbname={name} host=127.0.0.1 port={self.port} user={self.user}"

    def pause(self) -> None:
        """Stop the server, keeping the cluster (a lake that cannot be reached)."""
        self._run([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])

    def resume(self) -> None:
        """Start the server again after `pause`."""
        self._run([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log), "-w", "-t", "60", "start"])

    def psql(self, sql: str, *, dbname: str | None = None) -> str:
        """Run `sql` with psql on the test database (or `dbname`); its output (tuples only, unaligned)."""
        out = self._run([pg_bin("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d",
                         dbname or self.dbname,
                         "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
        return out.stdout

    def stop(self) -> None:
        """Stop the server (fast) and delete the cluster's folder."""
        if self.started:
            subprocess.run(self._cmd([pg_bin("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"]),
                           capture_output=True, check=False)
            self.started = False
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
