#!/usr/bin/env bash
# The whole benchmark in one command:   bash bench/run_all.sh [--quick]   (or: make bench)
# Warm per-call (bench_dynamics.py), the generic module against the per-robot
# kernels (bench_generic.py), cold start (bench_cold.py), then the node's
# latency (bench_node_latency.py), then the exported C library against Pinocchio's
# C++ API (bench_export_c.py: compiles Pinocchio's side once, minutes); each prints a progress line per robot and
# writes its table to bench/results/.  Extra arguments go to every script:
# the options they share, --quick (the CI smoke) and --output DIR.  The machine's other load shows in the numbers:
# run it on a quiet machine, or note the load beside the table.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="$ROOT/.venv/bin/python"
[ -x "$PYTHON" ] || { echo "[bench] no .venv: run 'bash scripts/setup.sh' first" >&2; exit 2; }
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( RANDOM % 100 + 1 ))}"

for script in bench_dynamics.py bench_generic.py bench_floating_base.py bench_cold.py bench_node_latency.py bench_export_c.py; do
  echo "[bench] === $script $* ($(date -u +%H:%M:%S) UTC)"
  "$PYTHON" "bench/$script" "$@"
done
echo "[bench] done ($(date -u +%H:%M:%S) UTC): tables in bench/results/"
