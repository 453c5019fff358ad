#!/usr/bin/env bash
# The test command:   bash scripts/test.sh [--layer NAME] [pytest args...]   (or: make test)
# e.g. bash scripts/test.sh test/ros/test_node.py -x runs one file.
# Without --layer and without files, the whole suite.  Layers (test/README.md):
#   --layer library   the ROS-free library: multibody description algorithms kernels
#                     model embedded estimation plant (a developer's loop)
#   --layer ros       the node and the simulated arm as processes over DDS: ros sim
#   --layer system    across layers, real-time closed loops included: system
# Runs the suite with the venv made by scripts/setup.sh, isolated from other
# ROS 2 processes on the machine (localhost discovery, a domain id per run).
# Exits with pytest's exit code (5 = no tests collected).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
V="$ROOT/.venv"
if ! [ -x "$V/bin/python" ]; then
  echo "[test] no .venv: run 'bash scripts/setup.sh' first" >&2
  exit 2
fi

export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( RANDOM % 100 + 1 ))}"
# The venv has every library of requirements-dev.txt: a test that misses one fails here
# instead of skipping as in a ROS workspace (test/support/optional.py).
export SOA_TEST_REQUIRE_OPTIONAL=1
# get_package_share_directory('soa_dynamics_ros') finds the venv's share/.
export AMENT_PREFIX_PATH="$V${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"

LAYER_PATHS=()
if [ "${1:-}" = "--layer" ]; then
  case "${2:-}" in
    library) LAYER_PATHS=(test/multibody test/description test/algorithms test/kernels
                          test/model test/embedded test/estimation test/plant) ;;
    ros)     LAYER_PATHS=(test/ros test/sim) ;;
    system)  LAYER_PATHS=(test/system) ;;
    *) echo "[test] --layer takes library, ros or system, not '${2:-}'" >&2; exit 2 ;;
  esac
  shift 2
fi

echo "[test] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"
# A layer's folders, or the files named in the arguments; otherwise the whole suite
# (pyproject.toml's testpaths).  The slowest tests are listed at the end (--durations):
# where the time goes is part of every run's output.
exec "$V/bin/python" -m pytest -q --durations=15 "${LAYER_PATHS[@]}" "$@"
