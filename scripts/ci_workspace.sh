#!/usr/bin/env bash
# The package as a ROS user gets it:   bash scripts/ci_workspace.sh jazzy|kilted
#
# In a colcon workspace outside the checkout, with ROS 2 from PyPI's ros-<distro>-*
# wheels (.ci/wheels-<distro>.txt) on Python 3.12:
#   1. a venv cached under ~/.cache/soa_dynamics_ros/ci-venvs/<distro>-<hash of the
#      wheel list and the interpreter> (SOA_CI_CACHE moves it), so a warm run pays
#      only the build;
#   2. colcon build of this checkout: Jazzy with --symlink-install (what developers
#      use), Kilted plain (what a release install is), so both kinds of install are
#      exercised on every change;
#   3. with install/setup.bash sourced: the smoke run (test/ros/test_workspace_smoke.py:
#      the node from install/, feedforward, a service call, SIGINT exits 0) and the
#      `soa-dynamics` CLI from PATH;
#   4. colcon test: the ament linters (flake8, pep257) and the ROS test layer, pytest_ros
#      (all of test/ros, from the installed workspace; tests needing a library the venv
#      lacks skip and say so), then colcon test-result.
# One run at a time per distribution and venv: a second one waits for the first (flock).
# Environment: SOA_CI_PYTHON picks the interpreter (default: python3.12 on PATH, else pyenv's);
# SOA_CI_CTEST_REGEX the ctests of step 4; SOA_CI_LOCK_TIMEOUT how long to wait (s, 3600).
set -euo pipefail

DISTRO="${1:-}"
# KNOWN_FAILURES: pytest --deselect arguments, each a failure of this distribution that is
# reported and not yet fixed (docs/ros_workspace.md lists them); the rest of the layer runs.
case "$DISTRO" in
  jazzy)  BUILD_MODE=(--symlink-install)
          # Jazzy's rclpy reads a message whose encapsulation options (byte 3) are not 0;
          # the node's CDR reader, as Kilted's rclpy, refuses it.
          KNOWN_FAILURES="--deselect test/ros/test_joint_state_reader.py::test_every_encapsulation_reads_as_rclpy" ;;
  kilted) BUILD_MODE=()
          KNOWN_FAILURES="" ;;
  *) echo "usage: bash scripts/ci_workspace.sh jazzy|kilted" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHEELS="$ROOT/.ci/wheels-$DISTRO.txt"
CACHE="${SOA_CI_CACHE:-$HOME/.cache/soa_dynamics_ros}"
START=$SECONDS
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

log() { printf '[ws %s %4ss] %s\n' "$DISTRO" "$((SECONDS - START))" "$*"; }
die() { printf '[ws %s] FAILED: %s\n' "$DISTRO" "$*" >&2; exit 1; }

PYTHON="${SOA_CI_PYTHON:-}"
if [ -z "$PYTHON" ]; then
  # (a pyenv shim named python3.12 exists but fails when 3.12 is not pyenv's selected version)
  for candidate in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
      PYTHON="$candidate"; break
    fi
  done
fi
[ -n "$PYTHON" ] || die "no Python 3.12 (install it, or set SOA_CI_PYTHON)"
PY_ID="$("$PYTHON" -c 'import sys; print(sys.version.split()[0], sys.platform)')"

# ---------------------------------------------------------------- 1. the venv, cached
KEY="$( { cat "$WHEELS" "$ROOT/scripts/wheel_cmake_paths.py"; echo "$PY_ID"; } | sha256sum | cut -c1-16)"
VENV="$CACHE/ci-venvs/$DISTRO-$KEY"

# The venv and the workspace are shared by every run of this distribution and key (other
# clones, other users of the cache): one run at a time uses them, a second one waits. The
# lock is the open file below, released when this script ends.
LOCK="$CACHE/ci-locks/$DISTRO-$KEY.lock"
LOCK_TIMEOUT="${SOA_CI_LOCK_TIMEOUT:-3600}"
mkdir -p "$(dirname "$LOCK")"
exec {LOCK_FD}>>"$LOCK"
if ! flock -n "$LOCK_FD"; then
  log "waiting for another run on $DISTRO to end ($(head -c 200 "$LOCK" 2>/dev/null || true); lock: $LOCK)"
  flock -w "$LOCK_TIMEOUT" "$LOCK_FD" || die "the other run held $LOCK for over ${LOCK_TIMEOUT}s"
  log "the other run ended: going on"
fi
printf 'held by pid %s (%s) since %s\n' "$$" "$ROOT" "$(date -u +%H:%M:%SZ)" >"$LOCK"
if [ ! -f "$VENV/.complete" ]; then
  log "creating $VENV (Python $PY_ID, $(basename "$WHEELS"))"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --progress-bar off -r "$WHEELS" \
    2> >(grep -v "^WARNING: Location 'file:.*' is ignored" >&2) || die "pip install -r $WHEELS"
  "$VENV/bin/python" "$ROOT/scripts/wheel_cmake_paths.py" "$VENV/share"
  touch "$VENV/.complete"
else
  log "venv cached: $VENV"
fi
log "$("$VENV/bin/python" -c 'import importlib.metadata as m, sys, numpy; print("Python", sys.version.split()[0], "numpy", numpy.__version__, "rclpy", m.version("ros-'"$DISTRO"'-rclpy"))')"

# ---------------------------------------------------------------- 2. colcon build
WS="$CACHE/ci-ws/$DISTRO-$KEY"
mkdir -p "$WS"
cd "$WS"
# shellcheck disable=SC1091
source "$VENV/bin/activate"
export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( RANDOM % 100 + 101 ))}"
export SOA_DYNAMICS_CACHE="$WS/kernel-cache"   # an empty kernel cache, as a new user has
rm -rf "$SOA_DYNAMICS_CACHE" log
# The workspace is kept between runs for a warm build, but CMake refuses a build folder
# configured from another source folder (each CI run is a new clone): start it afresh then.
CACHED_SOURCE="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/soa_dynamics_ros/CMakeCache.txt 2>/dev/null || true)"
if [ -n "$CACHED_SOURCE" ] && [ "$CACHED_SOURCE" != "$ROOT" ]; then
  log "the workspace was built from $CACHED_SOURCE: building afresh from $ROOT"
  rm -rf build install
fi
log "colcon build ${BUILD_MODE[*]:-(plain install)} in $WS"
colcon --log-base log build --base-paths "$ROOT" "${BUILD_MODE[@]}" \
  --event-handlers console_cohesion- status- summary+ \
  --cmake-args -Wno-dev -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=ON \
  >"$WS/build.log" 2>&1 || { tail -n 60 "$WS/build.log" >&2; die "colcon build (log: $WS/build.log)"; }
log "built"

# ---------------------------------------------------------------- 3. smoke run from install/
set +u
# shellcheck disable=SC1091
source install/setup.bash
set -u
PKG_PREFIX="$WS/install/soa_dynamics_ros"
for exe in soa_dynamics_node soa_dynamics_sim; do
  [ -x "$PKG_PREFIX/lib/soa_dynamics_ros/$exe" ] || die "$exe is not executable in install/"
done
compgen -G "$PKG_PREFIX/share/soa_dynamics_ros/kernels/soa_generic_*.so" >/dev/null \
  || die "the generic compiled module was not built into share/soa_dynamics_ros/kernels"
[ "$(command -v soa-dynamics)" = "$PKG_PREFIX/bin/soa-dynamics" ] || die "soa-dynamics is not on PATH from install/"
soa-dynamics --help >/dev/null || die "soa-dynamics --help"
log "smoke run (test/ros/test_workspace_smoke.py)"
( cd "$WS" && python -m pytest -q -p no:cacheprovider --rootdir "$ROOT" "$ROOT/test/ros/test_workspace_smoke.py" ) \
  || die "smoke run"

# ---------------------------------------------------------------- 4. colcon test
# The linters and the ROS test layer, pytest_ros (test/ros: the installed node and sim as
# processes over Fast DDS, real rclpy), as `colcon test` runs them. Pytest's skip reasons
# (a reference library this venv lacks, test/support/optional.py) and slowest tests are
# printed from its log.
CTEST_REGEX="${SOA_CI_CTEST_REGEX:-^(flake8|pep257|pytest_ros)$}"
log "colcon test (ctest -R '$CTEST_REGEX')"
rm -rf build/soa_dynamics_ros/test_results
[ -z "$KNOWN_FAILURES" ] || log "known failures on $DISTRO, left out: ${KNOWN_FAILURES//--deselect /}"
PYTEST_ADDOPTS="-rs --durations=10 $KNOWN_FAILURES" colcon --log-base log test --base-paths "$ROOT" \
  --packages-select soa_dynamics_ros --event-handlers console_cohesion- status- summary+ \
  --ctest-args -R "$CTEST_REGEX" >"$WS/test.log" 2>&1 || true
TEST_OUTPUT="log/latest_test/soa_dynamics_ros/stdout_stderr.log"
# (ctest prefixes each line of a test's output with the test's number)
sed -n 's/^[0-9]*: //p' "$TEST_OUTPUT" 2>/dev/null \
  | grep -E '^(SKIPPED|[0-9.]+s (call|setup|teardown) )|^=+ .*(passed|failed|skipped|error).* =+$' \
  | sed "s|\.\./||g; s|/*${ROOT#/}/||; s/^/    /" || true
colcon --log-base log test-result --verbose --test-result-base build/soa_dynamics_ros \
  || { tail -n 60 "$WS/test.log" >&2; die "colcon test (log: $WS/test.log, $WS/$TEST_OUTPUT)"; }
log "OK ($DISTRO: Python $PY_ID, $(python -c 'import numpy; print("numpy", numpy.__version__)'))"
