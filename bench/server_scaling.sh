#!/usr/bin/env bash
# Scaling of `memstore serve` on a many-core machine (issue 27): the same bench with the model work
# in the server process (--workers 0) and in 14 worker processes (--workers 14), 1..16 clients,
# adds with extraction (rule-based extractor, spaCy, embedder) and searches. About 5 minutes.
#
#   bash bench/server_scaling.sh                 # hashing embedder
#   EMBEDDER=local bash bench/server_scaling.sh  # the bundled ONNX embedder
#   PYTHON=.venv/bin/python SECONDS_PER_CELL=5 bash bench/server_scaling.sh
#
# Prints each run's table (ops/s, p50/p95, owner and workers CPU ms per op, Amdahl on 16 and 64
# cores) and the load average; read the CPU per op first, it does not depend on the load.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
EMB="${EMBEDDER:-hashing}"
SECS="${SECONDS_PER_CELL:-5}"
echo "== $(date -u)  cores=$(nproc)  $(uptime)"
"$PY" bench/server.py --embedder "$EMB" --workers 0 --clients 1,2,4,8,16 --seconds "$SECS" \
      --label "workers=0 embedder=$EMB" 2>&1 | grep -v '^  '
echo "== $(uptime)"
"$PY" bench/server.py --embedder "$EMB" --workers 14 --clients 1,2,4,8,16 --seconds "$SECS" --no-in-process \
      --label "workers=14 embedder=$EMB" 2>&1 | grep -v '^  '
echo "== $(date -u)  $(uptime)"
