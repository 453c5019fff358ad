#!/usr/bin/env bash
# The test command:   bash scripts/test.sh [pytest args...]   (or: make test)
# e.g. bash scripts/test.sh test/ros/test_node.py -x runs one file.
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
# get_package_share_directory('soa_dynamics_ros') finds the venv's share/.
export AMENT_PREFIX_PATH="$V${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"

echo "[test] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"
# Files named in the arguments are what runs; otherwise the whole suite
# (pyproject.toml's testpaths).
exec "$V/bin/python" -m pytest -q "$@"
