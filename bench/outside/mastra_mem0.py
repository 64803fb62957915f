"""Mastra's mem0 integration (`@mastra/mem0`, unchanged; it calls mem0's npm SDK 2.x) against a real
`memstore serve`: only its `host` points at memstore. Creates memories for a user, searches them,
and checks what memstore stored. Too heavy for CI (its peer `@mastra/core` brings ~500 MB of
packages), so scripts/run_outside_suites.sh runs it ("mastra" part); CI runs the same SDK release
directly (tests/test_platform_js.py).

    npm install --prefix /tmp/mastra --no-audit --no-fund --ignore-scripts @mastra/mem0@0.1.4
    python bench/outside/mastra_mem0.py --modules /tmp/mastra/node_modules

Exit status 0 when both calls return the memories and memstore holds exactly them for the user.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

SCRIPT = """
import { Mem0Integration } from "@mastra/mem0";
const mem0 = new Mem0Integration({ config: { apiKey: process.env.MEMSTORE_TOKEN, host: process.env.MEMSTORE_URL,
                                             userId: "mastra-alice" } });
console.log("CREATE " + JSON.stringify(await mem0.createMemory("I love hiking in the Alps\\nI am allergic to peanuts",
                                                               { infer: false })));
console.log("SEARCH " + JSON.stringify(await mem0.searchMemory("hiking")));
"""


def main() -> int:
    from memstore.testing.server_process import ServerProcess

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", required=True, help="a node_modules folder holding @mastra/mem0")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mastra-mem0-")
    os.symlink(os.path.abspath(args.modules), os.path.join(work, "node_modules"))
    with open(os.path.join(work, "run.mjs"), "w", encoding="utf-8") as fh:
        fh.write(SCRIPT)
    with ServerProcess(os.path.join(work, "s.duckdb"), config={"embedder": {"provider": "hashing"}}) as srv:
        env = {**os.environ, "MEMSTORE_TOKEN": srv.token or "", "MEMSTORE_URL": srv.url, "MEM0_TELEMETRY": "false",
               "MEM0_DIR": work}
        out = subprocess.run(["node", "run.mjs"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        print(out.stdout.strip() or out.stderr[-2000:])
        stored = sorted(r["memory"] for r in srv.client().get_all(user_id="mastra-alice")["results"])
    print("memstore holds:", stored)
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    ok = (out.returncode == 0 and stored == ["I am allergic to peanuts", "I love hiking in the Alps"]
          and all("hiking in the Alps" in lines.get(k, "") for k in ("CREATE", "SEARCH")))
    print("mastra @mastra/mem0 against memstore:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
