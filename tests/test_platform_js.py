"""mem0's npm SDK (`mem0ai`'s MemoryClient; also its 2.x release, which Mastra's @mastra/mem0 uses,
on the v1 / v2 paths) and the Vercel AI SDK provider (`@mem0/vercel-ai-provider`: its memory helpers
and its language model over a scripted OpenAI-compatible LLM), unchanged, under Node against a real
`memstore serve`: every method
of the client either works (its answer checked) or is refused as not supported
(tests/platform_js/sdk_scenario.mjs). The packages come from npm, pinned in
tests/platform_js/package.json (.ci/run installs them; this test installs them when missing and
skips, saying why, only when Node/npm are missing or npm cannot reach its registry)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memstore.testing.openai_server import ScriptedOpenAIServer
from memstore.testing.server_process import ServerProcess

JS = Path(__file__).parent / "platform_js"
HASHING = {"embedder": {"provider": "hashing"}}


def _node_modules() -> Path:
    """tests/platform_js/node_modules, installed from npm when missing (pytest.skip when it cannot be)."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node/npm are not installed (.ci/run installs Debian's nodejs and npm)")
    modules = JS / "node_modules"
    if not all((modules / p / "package.json").exists() for p in ("mem0ai", "mem0ai-v2", "ai", "@mem0/vercel-ai-provider")):
        out = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=JS,
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            text = out.stderr + out.stdout
            if any(k in text for k in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "network")):
                pytest.skip(f"npm cannot reach its registry to install mem0ai: {text.strip()[-300:]}")
            raise AssertionError(f"npm install failed:\n{text[-3000:]}")
    return modules


def _llm(body: dict) -> str:
    """The LLM behind the Vercel provider's model: says which city only if a memory told it."""
    said = json.dumps(body["messages"])
    return "You like Kyoto" if "Memory: My favourite city is Kyoto" in said else "I do not know"


def test_npm_sdk_and_vercel_provider_against_memstore_serve(tmp_path):
    _node_modules()
    with ServerProcess(tmp_path / "s.duckdb", config=HASHING) as srv, ScriptedOpenAIServer(chat_responder=_llm) as llm:
        admin = srv.client()
        alice = admin.create_token("js-alice-laptop", user_id="js-alice")["token"]
        env = {**os.environ, "MEMSTORE_URL": srv.url, "MEMSTORE_TOKEN": srv.token, "MEMSTORE_ALICE_TOKEN": alice,
               "MEM0_TELEMETRY": "false", "MEM0_DIR": str(tmp_path / "mem0"), "OPENAI_BASE_URL": llm.base_url}
        out = subprocess.run(["node", "sdk_scenario.mjs"], cwd=JS, capture_output=True, text=True, env=env,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-4000:] + out.stdout[-2000:]
        done = {d["method"]: d["status"] for d in map(json.loads, out.stdout.splitlines()) if d}
        # what the scenario checked, method by method (a method it skipped would be missing here)
        works = {"ping", "add", "get", "getAll", "search", "update", "history", "users", "batchUpdate", "batchDelete",
                 "delete", "deleteAll", "deleteUsers", "deleteUser", "scoped token",
                 "vercel-ai-provider addMemories + getMemories", "vercel-ai-provider retrieveMemories",
                 "vercel-ai-provider searchMemories", "vercel-ai-provider createMem0 + generateText",
                 "mem0ai 2.x add / search / getAll"}
        refused = {"getProject", "updateProject", "getWebhooks", "createWebhook", "updateWebhook", "deleteWebhook",
                   "feedback", "createMemoryExport", "getMemoryExport", "getProfile", "generateProfile",
                   "getProfileSettings", "updateProfileSettings", "sampleProfiles", "getProfileJob",
                   "add with customCategories"}
        assert {m for m, s in done.items() if s == "works"} == works
        assert {m for m, s in done.items() if s == "refused as not supported"} == refused
        # what the SDK wrote is in the store, seen through memstore's own client
        kyoto = admin.search("Kyoto", user_id="js-vercel")["results"]
        assert [r["memory"] for r in kyoto][:1] == ["My favourite city is Kyoto"]
        assert llm.chat_calls == 1                                    # generateText reached the LLM once
