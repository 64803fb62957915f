#!/bin/sh
# Re-run the test suites and clients written by others against memstore (issue 33):
#   1. LangGraph's own store tests (in-memory, SQLite and Postgres suites), unchanged, against
#      MemstoreStore embedded and through `memstore serve` (bench/outside/langgraph_suites.py);
#   2. schemathesis (OpenAPI fuzzing, its default checks) against a real `memstore serve`, seeds 1-3;
#   3. the MCP Inspector's CLI against `memstore mcp` (stdio) and /mcp of `memstore serve` (HTTP)
#      (bench/outside/mcp_inspector.py);
#   4. Mastra's mem0 integration (@mastra/mem0, on mem0's npm SDK 2.x) against `memstore serve`
#      (bench/outside/mastra_mem0.py; CI runs mem0's SDKs themselves: tests/test_platform_js.py).
# CI runs the in-process equivalents (tests/test_langgraph_conformance.py, tests/test_openapi_fuzz.py,
# tests/test_schemathesis_findings.py, tests/test_mcp_honesty.py).
#
#   LANGGRAPH=/path/to/langgraph   a LangGraph work tree or git dir (default: clone it into $WORK)
#   INSPECTOR=/path                a folder where `npm install @modelcontextprotocol/inspector@2.12.0` ran
#                                  (default: install it into $WORK)
#   EXAMPLES=10                    schemathesis examples per operation;  SEEDS="1 2 3"
#   MASTRA=/path                   a folder where `npm install @mastra/mem0@0.1.4` ran (default: install it into $WORK)
#   ONLY="langgraph schemathesis mcp mastra"  the parts to run
# Needs pytest-mock for LangGraph's in-memory suite, schemathesis, node/npm.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python}
case "$PY" in */*) [ "${PY#/}" = "$PY" ] && PY="$(pwd)/$PY" ;; esac   # the parts run in other folders
WORK=${WORK:-$(mktemp -d)}
EXAMPLES=${EXAMPLES:-10}
SEEDS=${SEEDS:-1 2 3}
ONLY=${ONLY:-langgraph schemathesis mcp mastra}
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
cd "$REPO"
echo "load: $(uptime)"
status=0

case " $ONLY " in *" langgraph "*)
    echo "== 1. LangGraph store suites"
    if [ -z "${LANGGRAPH:-}" ]; then
        LANGGRAPH="$WORK/langgraph"
        [ -d "$LANGGRAPH" ] || git clone --depth 1 -q https://github.com/langchain-ai/langgraph "$LANGGRAPH"
    fi
    "$PY" -c "import pytest_mock" 2>/dev/null || echo "(pytest-mock missing: the in-memory suite's module will not import)"
    "$PY" bench/outside/langgraph_suites.py --checkout "$LANGGRAPH" --target embedded || status=1
    "$PY" bench/outside/langgraph_suites.py --checkout "$LANGGRAPH" --target serve || status=1
;; esac

case " $ONLY " in *" schemathesis "*)
    echo "== 2. schemathesis against memstore serve (seeds: $SEEDS, $EXAMPLES examples per operation)"
    for seed in $SEEDS; do
        mkdir -p "$WORK/fuzz$seed"          # the server's working directory: exports the fuzzer asks for land here
        STORE="$WORK/fuzz$seed/s.duckdb"
        (cd "$WORK/fuzz$seed" && exec "$PY" -m memstore.cli serve --store "$STORE" --workers 0 --fronts 0 \
            --config '{"embedder": {"provider": "hashing"}}' > serve.log 2>&1) &
        SERVER=$!
        for _ in $(seq 1 120); do [ -f "$STORE.server.json" ] && break; sleep 1; done
        sleep 2
        URL=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['url'])" "$STORE.server.json")
        (cd "$WORK/fuzz$seed" && "$PY" -m schemathesis.cli --config-file "$REPO/scripts/schemathesis.toml" \
            run "$URL/openapi.json" \
            -H "Authorization: Bearer $(cat "$STORE.server-token")" -n "$EXAMPLES" --seed "$seed" \
            --generation-database none --no-color > report.txt 2>&1) || status=1
        tail -3 "$WORK/fuzz$seed/report.txt"
        kill $SERVER 2>/dev/null || true
        wait $SERVER 2>/dev/null || true
    done
;; esac

case " $ONLY " in *" mcp "*)
    echo "== 3. MCP Inspector (CLI mode) against memstore mcp (stdio) and memstore serve /mcp (HTTP)"
    if [ -z "${INSPECTOR:-}" ]; then
        INSPECTOR="$WORK/inspector"
        [ -x "$INSPECTOR/node_modules/.bin/mcp-inspector" ] || \
            npm install --prefix "$INSPECTOR" --no-audit --no-fund @modelcontextprotocol/inspector@2.12.0 >/dev/null
    fi
    "$PY" bench/outside/mcp_inspector.py --inspector "$INSPECTOR/node_modules/.bin/mcp-inspector" || status=1
;; esac

case " $ONLY " in *" mastra "*)
    echo "== 4. Mastra's @mastra/mem0 against memstore serve (host changed, nothing else)"
    if [ -z "${MASTRA:-}" ]; then
        MASTRA="$WORK/mastra"
        [ -d "$MASTRA/node_modules/@mastra/mem0" ] || \
            npm install --prefix "$MASTRA" --no-audit --no-fund --ignore-scripts @mastra/mem0@0.1.4 >/dev/null
    fi
    "$PY" bench/outside/mastra_mem0.py --modules "$MASTRA/node_modules" || status=1
;; esac
exit $status
