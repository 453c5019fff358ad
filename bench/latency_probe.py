"""Build and run bench/latency_probe.c, the C (rcl) measuring side of the node benchmarks.

    from latency_probe import run_probe
    result = run_probe(joint_names, rate=1000.0, seconds=10.0)   # the probe's JSON, as a dict

The ROS 2 wheels are the only ROS here, so the probe is compiled against the
venv itself (headers in ``<prefix>/include/<pkg>/<pkg>/``, libraries in
``<prefix>/lib``), by the system C compiler, once per change of the source.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import sysconfig
import tempfile

from soa_dynamics_ros.kernels import build

REPO = pathlib.Path(__file__).resolve().parents[1]
SOURCE = REPO / "bench" / "latency_probe.c"
BINARY = REPO / "build" / "bench" / "latency_probe"

# What the probe calls directly; the linker resolves the rest through these.
LIBRARIES = ["rcl", "rcutils", "rmw", "rosidl_runtime_c",
             "sensor_msgs__rosidl_typesupport_c", "sensor_msgs__rosidl_generator_c",
             "std_msgs__rosidl_generator_c", "builtin_interfaces__rosidl_generator_c"]


class ProbeError(RuntimeError):
    """The probe did not build or did not measure; the message carries its stderr."""


def _prefix():
    return pathlib.Path(sys.prefix)


def _library_dirs():
    """<prefix>/lib and the wheels' vendored-library directories (site-packages/ros_*.libs).

    The wheels' own RPATHs point outside the venv (auditwheel's relative paths
    from site-packages, not from <prefix>/lib), so rclpy gets by on the
    LD_LIBRARY_PATH its bootstrapper sets.  The probe carries them in its RPATH
    instead, so it runs without that environment.
    """
    site = pathlib.Path(sysconfig.get_paths()["platlib"])
    return [_prefix() / "lib", *sorted(p for p in site.glob("ros_*.libs") if p.is_dir())]


def _python_library():
    """(directory, -l name) of this interpreter's libpython, or None if it has none.

    The wheels' librcl.so lists librcl_interfaces__rosidl_generator_py.so (and
    other *_generator_py libraries) as dependencies, and those refer to
    Python's data symbols (PyExc_RuntimeError, _Py_TrueStruct) without linking
    libpython: a C program linked against rcl fails to load ("undefined symbol")
    unless it provides them.  The probe never starts an interpreter; the library
    is only there to satisfy the loader.
    """
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return None
    name = sysconfig.get_config_var("LDLIBRARY")              # libpython3.11.so
    return pathlib.Path(sysconfig.get_config_var("LIBDIR")), name[3:].split(".so")[0]


def _compiler():
    compiler = build.compiler()         # the kernels' choice: $CC, else cc or gcc
    if compiler is None:
        raise ProbeError("no C compiler found (tried $CC, cc, gcc)")
    return compiler


def build_probe():
    """Compile the probe if it is missing or older than its source; return its path."""
    if BINARY.exists() and BINARY.stat().st_mtime >= SOURCE.stat().st_mtime:
        return BINARY
    BINARY.parent.mkdir(parents=True, exist_ok=True)
    include = _prefix() / "include"
    includes = [f"-I{d}" for d in sorted(include.iterdir()) if d.is_dir()]
    lib_dirs = _library_dirs()
    python = _python_library()
    if python is not None:
        lib_dirs.append(python[0])
    # --disable-new-dtags: an RPATH (unlike a RUNPATH) also serves the libraries'
    # own dependencies, which is what the wheels' broken RPATHs need.
    link = ["-Wl,--disable-new-dtags", *(f"-L{d}" for d in lib_dirs),
            *(f"-Wl,-rpath,{d}" for d in lib_dirs), *(f"-l{lib}" for lib in LIBRARIES),
            # --no-as-needed: the probe itself uses nothing from libpython, and
            # this gcc links --as-needed by default, which would drop it again.
            *(["-Wl,--no-as-needed", f"-l{python[1]}", "-Wl,--as-needed"] if python else []),
            "-lm"]
    partial = BINARY.with_name(f"{BINARY.name}.partial-{os.getpid()}")
    command = [_compiler(), "-std=c11", "-O2", "-Wall", "-Wextra", "-pthread", *includes,
               str(SOURCE), "-o", str(partial), *link]
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        partial.unlink(missing_ok=True)
        raise ProbeError(f"building {SOURCE.name} failed ({run.returncode}):\n"
                         f"{' '.join(command)}\n{run.stderr}")
    partial.replace(BINARY)   # never leave a half-written binary that looks up to date
    return BINARY


def probe_environment(env=None):
    """The ROS environment of scripts/test.sh and the node processes (test/support/ros_harness.py).

    The node is started with a copy of this process's environment, so the probe
    takes the same ROS_DOMAIN_ID; localhost discovery and AMENT_PREFIX_PATH
    (the venv, for the ament index) are set as scripts/test.sh sets them.
    """
    env = dict(os.environ if env is None else env)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    prefix = str(_prefix())
    paths = [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    if prefix not in paths:
        env["AMENT_PREFIX_PATH"] = os.pathsep.join([prefix, *paths])
    return env


def run_probe(joint_names, rate, seconds, env=None, timeout=None,
              out_topic="/joint_states", in_topic="/soa_dynamics/feedforward_state",
              warmup_timeout=30.0, latencies=False):
    """Run the probe in its own process and return its JSON result as a dict.

    ``latencies``: the dict also holds ``"latencies_ms"``, every answered state's
    latency in the order the answers arrived (to pool several runs).

    ``timeout`` defaults to the run plus the warm-up plus a margin.  A probe
    that overruns it is stopped with SIGINT (it then shuts rcl down cleanly;
    SIGKILL would leave Fast DDS segments in /dev/shm).
    """
    command = [str(build_probe()), "--rate", f"{rate:g}", "--seconds", f"{seconds:g}",
               "--joints", ",".join(joint_names), "--out-topic", out_topic,
               "--in-topic", in_topic, "--warmup-timeout", f"{warmup_timeout:g}"]
    if timeout is None:
        timeout = seconds + warmup_timeout + 30.0
    if not latencies:
        return _run(command, timeout, env)
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory) / "latencies"
        result = _run(command + ["--latencies", str(path)], timeout, env)
        result["latencies_ms"] = [float(line) for line in path.read_text().split()]
    return result


def _run(command, timeout, env):
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=probe_environment(env))
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        raise ProbeError(f"the probe overran {timeout:g} s and was stopped; its stderr:\n{stderr}")
    if process.returncode != 0:
        raise ProbeError(f"the probe failed (exit {process.returncode}); its stderr:\n{stderr}")
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError as error:
        raise ProbeError(f"the probe printed no JSON ({error}): {stdout!r}\n{stderr}") from None
    sys.stderr.write(stderr)   # the probe's one-line summary
    return result


if __name__ == "__main__":
    print(build_probe())
