#!/bin/sh
# Re-run the test suites and clients written by others against memstore (issue 33):
#   1. LangGraph's own store tests (in-memory, SQLite and Postgres suites), unchanged, against
#      MemstoreStore embedded and through `memstore serve`;
#   2. schemathesis (OpenAPI fuzzing, default checks) against a real `memstore serve`;
#   3. the MCP Inspector's CLI against `memstore mcp` (stdio).
# Needs network once for what it fetches; CI runs the offline equivalents (tests/test_langgraph_conformance.py,
# tests/test_openapi_fuzz.py, tests/test_mcp_honesty.py).
#
#   LANGGRAPH=/path/to/langgraph   a LangGraph work tree or git dir (default: clone it into $WORK)
#   INSPECTOR=/path/with/node_modules   where `npm install @modelcontextprotocol/inspector` was run
#   EXAMPLES=10                    schemathesis examples per operation
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python}
WORK=${WORK:-$(mktemp -d)}
EXAMPLES=${EXAMPLES:-10}
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
cd "$REPO"
echo "load: $(uptime)"

echo "== 1. LangGraph store suites"
if [ -z "${LANGGRAPH:-}" ]; then
    LANGGRAPH="$WORK/langgraph"
    git clone --depth 1 -q https://github.com/langchain-ai/langgraph "$LANGGRAPH"
fi
"$PY" -m pip show pytest-mock >/dev/null 2>&1 || echo "(pytest-mock missing: the in-memory suite's module will not import)"
"$PY" bench/outside/langgraph_suites.py --checkout "$LANGGRAPH" --target embedded || true
"$PY" bench/outside/langgraph_suites.py --checkout "$LANGGRAPH" --target serve || true

echo "== 2. schemathesis against memstore serve"
STORE="$WORK/fuzz.duckdb"
"$PY" -m memstore.cli serve --store "$STORE" --config '{"embedder": {"provider": "hashing"}}' \
    > "$WORK/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do [ -f "$STORE.server.json" ] && break; sleep 1; done
URL=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['url'])" "$STORE.server.json")
TOKEN=$(cat "$STORE.server-token")
"$PY" -m schemathesis.cli run "$URL/openapi.json" -H "Authorization: Bearer $TOKEN" -n "$EXAMPLES" --seed 1 \
    --no-color | tail -25 || true
kill $SERVER 2>/dev/null || true

echo "== 3. MCP Inspector (CLI mode) against memstore mcp"
if [ -n "${INSPECTOR:-}" ] && [ -x "$INSPECTOR/node_modules/.bin/mcp-inspector" ]; then
    I="$INSPECTOR/node_modules/.bin/mcp-inspector"
    call() {
        echo "-- $*"
        "$I" --cli "$PY" -m memstore.cli mcp --store "$WORK/mcp.duckdb" --user alice "$@" 2>&1 | tr -d '\n' | cut -c1-300
        echo
    }
    call --method tools/list
    call --method tools/call --tool-name add_memory --tool-arg "text=Prefers window seats"
    call --method tools/call --tool-name add_memory --tool-arg "text=I live in Boston"
    call --method tools/call --tool-name list_entities --tool-arg foo=bar
    call --method tools/call --tool-name forget_me --tool-arg confirm=true
else
    echo "skipped: set INSPECTOR to a folder where 'npm install @modelcontextprotocol/inspector' was run"
fi
