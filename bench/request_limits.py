"""What an oversized request costs the server (issue 44: a 40 MB body was stored after 15 s; one
2 MB message took 221 s and ~1 GB of RSS). Starts `memstore serve` (heuristic extractor, hashing
embedder), then sends, one at a time, and measures the server process's CPU seconds (utime +
stime from /proc) and its RSS (sampled every 10 ms; peak and after) against its idle RSS:

- a 40 MB body to `POST /memories` with a Content-Length, and the same body chunked (no length);
- a 2 MB message to `POST /v1/add` (one 2 MB string);
- adds at the limit: messages of 10k / 25k / 50k characters of prose (infer on), to show work
  grows linearly up to `limits.max_message_chars`;
- 1,000 messages in one add (limits.max_messages) and 1,001.

    python bench/request_limits.py
"""
from __future__ import annotations

import http.client
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memstore.testing.server_process import ServerProcess

CONFIG = {"embedder": {"provider": "hashing"}}
WORDS = ("the morning train to Lisbon was late again so Maria walked along the river and bought fresh bread "
         "from the bakery near the old bridge before calling her brother about the weekend trip to Porto").split()


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def prose(chars: int, seed: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 20))).capitalize() + ". "
        out.append(sentence)
        n += len(sentence)
    return "".join(out)[:chars]


def send(port: int, token: str, path: str, body: bytes, *, chunked: bool = False) -> tuple[int, str]:
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    con.putrequest("POST", path)
    con.putheader("Authorization", f"Bearer {token}")
    con.putheader("Content-Type", "application/json")
    try:
        if chunked:
            con.putheader("Transfer-Encoding", "chunked")
            con.endheaders()
            for i in range(0, len(body), 1 << 20):
                part = body[i:i + (1 << 20)]
                con.send(b"%x\r\n" % len(part) + part + b"\r\n")
            con.send(b"0\r\n\r\n")
        else:
            con.putheader("Content-Length", str(len(body)))
            con.endheaders()
            con.send(body)
    except OSError:
        pass                        # the server answered 413 and closed before the rest was sent
    resp = con.getresponse()
    data = resp.read()
    try:
        err = json.loads(data).get("error") or {}
    except (ValueError, AttributeError):
        err = {}
    return resp.status, str(err.get("fields", {}).get("limit") or err.get("type") or "")


def measure(pid: int, label: str, fn, idle: float) -> None:
    peak = [rss_mb(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.01)

    t = threading.Thread(target=sample)
    t.start()
    c0, w0 = cpu_s(pid), time.perf_counter()
    status, what = fn()
    cpu, wall = cpu_s(pid) - c0, time.perf_counter() - w0
    stop.set()
    t.join()
    print(f"{label:46} {status:>4} {what:28} cpu {cpu:6.2f} s  wall {wall:6.2f} s  "
          f"rss peak +{peak[0] - idle:5.0f} MB  after +{rss_mb(pid) - idle:5.0f} MB", flush=True)


def main() -> int:
    store = os.path.join(tempfile.mkdtemp(prefix="memstore-limits-"), "limits.duckdb")
    with ServerProcess(store, config=CONFIG) as srv:
        pid, port, token = srv.proc.pid, srv.port, srv.token or ""
        send(port, token, "/v1/add", json.dumps({"args": ["warm up the server"], "kwargs": {"user_id": "w"}}).encode())
        time.sleep(1.0)
        idle = rss_mb(pid)
        print(f"load: {os.getloadavg()[0]:.2f} (1-min); server pid {pid}, idle RSS {idle:.0f} MB")
        big = json.dumps({"messages": [{"role": "user", "content": "x" * (40 << 20)}], "user_id": "a"}).encode()
        measure(pid, "40 MB body, POST /memories (Content-Length)", lambda: send(port, token, "/memories", big), idle)
        measure(pid, "40 MB body, POST /memories (chunked)", lambda: send(port, token, "/memories", big, chunked=True),
                idle)
        two = json.dumps({"args": [prose(2 << 20, 1)], "kwargs": {"user_id": "b"}}).encode()
        measure(pid, "2 MB message, POST /v1/add", lambda: send(port, token, "/v1/add", two), idle)
        for chars in (10_000, 25_000, 50_000):
            body = json.dumps({"args": [prose(chars, chars)], "kwargs": {"user_id": f"c{chars}"}}).encode()
            measure(pid, f"{chars:,}-character message, infer on", lambda b=body: send(port, token, "/v1/add", b), idle)
        for n in (1000, 1001):
            msgs = [{"role": "user", "content": f"message {i} about the weekend trip"} for i in range(n)]
            body = json.dumps({"args": [msgs], "kwargs": {"user_id": f"d{n}", "infer": False}}).encode()
            measure(pid, f"{n:,} messages in one add, infer off", lambda b=body: send(port, token, "/v1/add", b), idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
