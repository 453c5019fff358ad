#!/usr/bin/env bash
# One-command set-up for soa_dynamics_ros:   bash scripts/setup.sh   (or: make setup)
#
# Idempotent; run it again after pulling. On Debian 12 (Python 3.10-3.13) it:
#   1. apt-installs what is missing of: cmake, make, g++, libeigen3-dev, python3-pykdl
#      (and python3-venv / python3-dev when the chosen Python needs them);
#   2. creates .venv in the checkout and pip-installs ROS 2 Kilted from PyPI
#      wheels, the ament/rosidl build tools and the test/reference libraries
#      (requirements-dev.txt);
#   3. makes Debian's PyKDL importable in .venv (and nothing else from
#      /usr/lib/python3/dist-packages);
#   4. points the wheels' CMake files at this venv's Python/numpy headers;
#   5. builds and installs this package with CMake into .venv (share/ files,
#      ament index entry, generated interfaces);
#   6. pip-installs the Python library from the checkout in editable mode,
#      and builds its generic compiled kernels (once per machine).
# Environment: PYTHON (default python3) picks the interpreter for a new .venv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
V="$ROOT/.venv"
BUILD="$ROOT/build"
PYTHON="${PYTHON:-python3}"
START=$SECONDS

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
PIP_Q=(-q)
if [ -n "${CI:-}" ]; then PIP_Q+=(--progress-bar off); fi

log()  { printf '[setup] %s\n' "$*"; }
warn() { printf '\n[setup] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n[setup] !!! WARNING: %s\n[setup] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' "$*" >&2; }
die()  { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$((SECONDS - START))s"; }

# pip, minus the "Location 'file:///...' is ignored" lines that a machine-wide
# find-links/extra-index-url configuration can print for every package.
pip_q() {
  "$VPY" -m pip "$@" "${PIP_Q[@]}" 2>&1 | { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }
}

# Run a noisy command with its output in a log file; show the log on failure.
run_logged() {
  local name="$1"; shift
  local logf="$BUILD/setup-$name.log"
  mkdir -p "$BUILD"
  if ! "$@" >"$logf" 2>&1; then
    tail -n 80 "$logf" >&2
    die "'$name' failed (full log: $logf)"
  fi
}

# ---------------------------------------------------------------------------
# 1. System packages (Debian)
# ---------------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  SUDO=(none)
fi

APT_OK=1
apt_install() {  # apt_install PKG...: installs those not yet installed
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    warn "apt-get is not available: cannot install ${missing[*]}. Install them by hand."
    APT_OK=0; return 0
  fi
  if [ "${SUDO[0]:-}" = none ]; then
    warn "not root and no sudo: cannot install ${missing[*]}. Install them by hand."
    APT_OK=0; return 0
  fi
  local apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
  # Refresh the package lists only when needed: a package apt does not know yet.
  local need_update=0
  for p in "${missing[@]}"; do
    apt-cache policy "$p" 2>/dev/null | grep 'Candidate: [^(]' >/dev/null || need_update=1
  done
  if [ $need_update -eq 1 ]; then
    log "apt-get update"
    "${apt[@]}" update -qq || warn "apt-get update failed"
  fi
  log "apt-get install ${missing[*]}"
  if ! "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    # Stale package lists give 404s: refresh once and retry.
    log "apt-get install failed; apt-get update and retry"
    "${apt[@]}" update -qq || true
    "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || { warn "apt-get install ${missing[*]} failed"; APT_OK=0; }
  fi
}

log "checking the base Python ($PYTHON)"
if [ -x "$V/bin/python" ] && "$V/bin/python" -c 'pass' 2>/dev/null; then
  BASE_PY="$V/bin/python"       # reuse the existing venv's interpreter
else
  command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (set PYTHON=/path/to/python3.11)"
  BASE_PY="$(command -v "$PYTHON")"
fi
PY_VER="$("$BASE_PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
case "$PY_VER" in
  3.10|3.11|3.12|3.13) ;;
  *) die "Python $PY_VER: the ROS 2 Kilted wheels exist for Python 3.10-3.13 only (set PYTHON=...)" ;;
esac

APT_PKGS=()
command -v cmake >/dev/null 2>&1 || APT_PKGS+=(cmake)
command -v make  >/dev/null 2>&1 || APT_PKGS+=(make)
{ command -v c++ >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; } || APT_PKGS+=(g++)
# Eigen's headers: the C++ benchmark against Pinocchio (bench/bench_export_c.py) compiles with them.
[ -f /usr/include/eigen3/Eigen/Core ] || APT_PKGS+=(libeigen3-dev)
APT_PKGS+=(python3-pykdl)
if [ "$BASE_PY" != "$V/bin/python" ] && ! "$BASE_PY" -c 'import ensurepip' 2>/dev/null; then
  APT_PKGS+=("python$PY_VER-venv")      # Debian splits venv/ensurepip off
fi
PY_INC="$("$BASE_PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
if [ ! -f "$PY_INC/Python.h" ]; then
  APT_PKGS+=("python$PY_VER-dev")       # headers for the generated interface extensions
fi
apt_install "${APT_PKGS[@]}"
command -v cmake >/dev/null 2>&1 || die "cmake is required (apt-get install cmake)"
command -v make  >/dev/null 2>&1 || die "make is required (apt-get install make)"
command -v c++   >/dev/null 2>&1 || die "a C++ compiler is required (apt-get install g++)"

# ---------------------------------------------------------------------------
# 2. Virtual environment and Python packages
# ---------------------------------------------------------------------------
if [ "$BASE_PY" != "$V/bin/python" ]; then
  if [ -e "$V" ]; then
    log "removing broken $V"
    rm -rf "$V"
  fi
  log "creating $V with $BASE_PY (Python $PY_VER)"
  "$BASE_PY" -m venv "$V"
fi
VPY="$V/bin/python"
log "upgrading pip"
pip_q install --upgrade pip
log "installing ROS 2 Kilted wheels, build tools and test libraries (requirements-dev.txt)"
pip_q install -r "$ROOT/requirements-dev.txt"
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
log "python packages ready ($(elapsed))"

# ---------------------------------------------------------------------------
# 3. PyKDL (Debian's python3-pykdl) in the venv, without the rest of
#    /usr/lib/python3/dist-packages (Debian's yaml etc. would shadow the venv's)
# ---------------------------------------------------------------------------
PYKDL_STATUS="not available"
PYKDL_SO=""
if dpkg-query -W -f='${Status}' python3-pykdl 2>/dev/null | grep 'install ok installed' >/dev/null; then
  PYKDL_SO="$(dpkg -L python3-pykdl | grep -E '/PyKDL[^/]*\.so$' | head -n 1 || true)"
fi
mkdir -p "$V/pykdl"
find "$V/pykdl" -maxdepth 1 -type l -delete
if [ -n "$PYKDL_SO" ] && [ -f "$PYKDL_SO" ]; then
  ln -s "$PYKDL_SO" "$V/pykdl/$(basename "$PYKDL_SO")"
  printf '%s\n' "$V/pykdl" > "$SITE/soa_pykdl.pth"
  if "$VPY" -c 'import PyKDL' 2>/dev/null; then
    PYKDL_STATUS="ok ($(basename "$PYKDL_SO"))"
    log "PyKDL importable in the venv"
  else
    warn "PyKDL is installed ($PYKDL_SO) but does not import in the venv's Python $PY_VER: KDL reference checks will not run"
    PYKDL_STATUS="installed but NOT importable"
  fi
else
  rm -f "$SITE/soa_pykdl.pth"
  warn "python3-pykdl is not installed: KDL reference checks will not run (apt-get install python3-pykdl, then re-run)"
fi

# ---------------------------------------------------------------------------
# 4. The wheels' CMake files hard-code the wheel builder's include paths
#    (/opt/python/cp3xx-cp3xx/...): point them at this venv's.
# ---------------------------------------------------------------------------
log "rewriting /opt/python include paths in $V/share/**/*.cmake"
"$VPY" "$ROOT/scripts/wheel_cmake_paths.py" "$V/share"

# ---------------------------------------------------------------------------
# 5. CMake build of this package, installed into the venv
# ---------------------------------------------------------------------------
if [ -f "$BUILD/CMakeCache.txt" ]; then
  cached_src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")"
  cached_prefix="$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")"
  if [ "$cached_src" != "$ROOT" ] || [ "$cached_prefix" != "$V" ]; then
    log "build/ was configured for another checkout or prefix: starting it afresh"
    rm -rf "$BUILD"
  fi
fi
export PATH="$V/bin:$PATH"
log "cmake configure (build dir: build/)"
run_logged cmake-configure cmake -S "$ROOT" -B "$BUILD" -Wno-dev \
  -DCMAKE_PREFIX_PATH="$V" -DCMAKE_INSTALL_PREFIX="$V" \
  -DPython3_EXECUTABLE="$VPY" -DBUILD_TESTING=OFF \
  -DSOA_INSTALL_PYTHON_PACKAGE=OFF
log "cmake build"
run_logged cmake-build cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)"
log "cmake install into $V"
run_logged cmake-install cmake --install "$BUILD"
log "package built and installed ($(elapsed))"

# ---------------------------------------------------------------------------
# 6. The Python library, editable from the checkout. Compat mode writes a .pth
#    with the checkout's path; rosidl's generated soa_dynamics_ros/msg, /srv in
#    site-packages join it through pkgutil.extend_path in __init__.py.
# ---------------------------------------------------------------------------
log "pip install -e . (editable, compat mode)"
# (setuptools warns that compat mode is "transitional": pyproject.toml caps
# setuptools at a version known to have it; the warning goes to the log.)
run_logged pip-editable "$VPY" -m pip install --no-deps --config-settings editable_mode=compat -e "$ROOT"

# ---------------------------------------------------------------------------
# Checks and summary
# ---------------------------------------------------------------------------
log "checking the environment"
( cd / && AMENT_PREFIX_PATH="$V" ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST "$VPY" - <<'PYEOF'
import rclpy
import builtin_interfaces.msg, std_msgs.msg, sensor_msgs.msg, geometry_msgs.msg  # noqa: F401
import trajectory_msgs.msg, visualization_msgs.msg, diagnostic_msgs.msg, std_srvs.srv  # noqa: F401
from ament_index_python.packages import get_package_share_directory
share = get_package_share_directory("soa_dynamics_ros")
print(f"[setup]   rclpy imports; share directory: {share}")
PYEOF
) || die "environment check failed (rclpy / messages / ament index)"
LIB_STATUS="ok"
if ! LIB_OUT="$(cd / && "$VPY" -c 'import soa_dynamics_ros as m; print(list(m.__path__))' 2>&1)"; then
  LIB_STATUS="does NOT import (see the error above)"
  warn "import soa_dynamics_ros failed from outside the checkout:
$LIB_OUT"
else
  log "  soa_dynamics_ros.__path__ = $LIB_OUT"
fi

# The generic compiled kernels (one module for every robot, soa_dynamics_ros/kernels/
# generic.c) are part of the installation: built now into the venv (not the kernel
# cache, which users empty), so a first model, of any robot, never waits.
KERNELS_STATUS="not built (see the warning above)"
if KERNELS_OUT="$(cd / && "$VPY" -c 'from soa_dynamics_ros import kernels as k; print(k.install_generic_module().__name__, "in", k.prebuilt_dir())' 2>&1)"; then
  KERNELS_STATUS="$KERNELS_OUT"
else
  warn "the generic compiled kernels did not build (models use numpy):
$KERNELS_OUT"
fi

ROS_VER="$("$VPY" -c 'import importlib.metadata as m; print(m.version("ros-kilted-rclpy"))' 2>/dev/null || echo '?')"
cat <<EOF
[setup] ------------------------------------------------------------------
[setup] done in $(elapsed)
[setup]   venv:          $V (Python $PY_VER)
[setup]   ROS 2:         Kilted, rclpy $ROS_VER (rmw_fastrtps_cpp), from PyPI wheels
[setup]   share dir:     $V/share/soa_dynamics_ros
[setup]   library:       editable from $ROOT ($LIB_STATUS)
[setup]   PyKDL:         $PYKDL_STATUS
[setup]   C kernels:     $KERNELS_STATUS
[setup]   apt:           $([ $APT_OK -eq 1 ] && echo ok || echo 'INCOMPLETE (see warnings above)')
[setup]   run the tests: bash scripts/test.sh   (or: make test)
[setup] ------------------------------------------------------------------
EOF
