"""The exported C library (``soa-dynamics export-c``) against Pinocchio's C++ API, per call,
in one process, on the same random states (issue 47 part 3).

For each robot: export its library (prefix ``bench``, one frame: the tool), write
Pinocchio's model of the same URDF joint by joint and the random states in both joint
orders, build ``bench/cpp/export_vs_pinocchio.cpp`` against both, run it and write
``bench/results/export_c_vs_pinocchio.md`` and ``.json``: the time per call of each
side, their ratio (target <= 0.5), and the operations of each exported kernel, counted
in the exported C, against the operations its trace holds.

Pinocchio's translation unit (``bench/cpp/pinocchio_side.cpp``) compiles for minutes: its
object, the exported library and the program are cached under
``~/.cache/soa_dynamics_ros/bench/``, keyed by a hash of their sources and flags, so a
re-export rebuilds only the library.  Headers and libraries: the ``pin`` wheel's
``cmeel.prefix``, Eigen from Debian's libeigen3-dev.

    python bench/bench_export_c.py [--robots panda,ur5] [--quick] [--export-only]
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import REPO, WARM_TARGET, choose_frames, load_ours, load_pinocchio  # noqa: E402
from results_file import fmt, ratio_cell, run_header, write_results  # noqa: E402

PREFIX = "bench"
CPP = HERE / "cpp"
PINOCCHIO_PREFIX = pathlib.Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"
EIGEN = pathlib.Path("/usr/include/eigen3")
# The definitions pinocchio's CMake config exports (lib/cmake/pinocchio); no -march=native:
# the wheel's libraries are built without it and Eigen's alignment would differ.
PINOCCHIO_DEFINITIONS = ("-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
                         "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
                         "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
                         "-DPINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION")
CXX_FLAGS = ("-std=c++17", "-O3", "-DNDEBUG")
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) \
    / "soa_dynamics_ros" / "bench"
FUNCTIONS = ("gravity", "inverse dynamics", "mass matrix", "forward dynamics", "jacobian")
# Each function's exported kernel and Pinocchio's call.
KERNELS = {"gravity": "gravity_torques", "inverse dynamics": "inverse_dynamics",
           "mass matrix": "mass_matrix", "forward dynamics": "forward_dynamics",
           "jacobian": "jacobian"}
PINOCCHIO_CALLS = {"gravity": "computeGeneralizedGravity", "inverse dynamics": "rnea",
                   "mass matrix": "crba", "forward dynamics": "aba",
                   "jacobian": "computeFrameJacobian (LOCAL_WORLD_ALIGNED)"}
# Ours and Pinocchio's answers of the first state agree to this (relative to the largest).
AGREEMENT = 1e-9


def _random_tree_urdf():
    from support.robot_generator import random_tree_urdf
    return random_tree_urdf(3030, moving_joints=32, mimic_fraction=0.0, fixed_fraction=0.1)


# name: (source, URDF text, the Jacobian's frame or None for the deepest leaf)
ROBOTS = {
    "panda": ("urdf/panda.urdf", lambda: (REPO / "urdf/panda.urdf").read_text(), "panda_hand"),
    "ur5": ("urdf/ur5.urdf", lambda: (REPO / "urdf/ur5.urdf").read_text(), "tool0"),
    "random_tree_32": ("test/support/robot_generator.py (seed 3030, 32 joints)",
                       _random_tree_urdf, None),
}
QUICK_ROBOTS = ("ur5",)


# ---------------------------------------------------------------------------- operation counts
class _TracedCounts:
    """A sink for :func:`kernels.generator.emit_kernel`: each kernel's operations by kind, as
    the C emission counts them from the trace."""

    def __init__(self):
        self.counts = {}

    def kernel(self, name, arrays, outputs, trace, doc, shape, workspace=(), solve=None,
               prelude=(), parts=1, links=()):
        from soa_dynamics_ros.kernels.c_emission import core_source
        self.counts[name] = core_source(name, arrays, outputs, trace, doc, workspace, solve,
                                        prelude)[1]

    def batch(self, *_, **__):
        """Batches are not exported."""


def traced_counts(model, frame):
    """``{function: {kind: count}}`` of the traces the exported kernels are printed from."""
    from soa_dynamics_ros.kernels import generator
    sink = _TracedCounts()
    for function in FUNCTIONS:
        kernel = KERNELS[function]
        generator.emit_kernel(sink, model.tree, kernel, frame if kernel == "jacobian" else None)
    return {function: sink.counts[KERNELS[function]] for function in FUNCTIONS}


_OPERATORS = {"mul": re.compile(r" \* "), "add": re.compile(r" \+ "), "sub": re.compile(r" - "),
              "div": re.compile(r" / "), "neg": re.compile(r"= -[A-Za-z_(]"),
              "sin": re.compile(r"\bsin\("), "cos": re.compile(r"\bcos\(")}


def exported_counts(source):
    """``{function: {kind: count}}`` counted in the exported C: the operators of the
    assignments in each kernel's core (the jacobian: frame 0's)."""
    counts = {}
    for function in FUNCTIONS:
        core = KERNELS[function] + ("_f0" if KERNELS[function] == "jacobian" else "") + "_core"
        match = re.search(r"static int " + core + r"\(.*?\n\{\n(.*?)\n\}\n", source, re.S)
        if match is None:
            raise RuntimeError(f"the exported source has no {core}")
        body = "\n".join(line for line in match.group(1).splitlines()
                         if re.match(r"\s*(const double \w+|out\[\d+\]) = ", line))
        counts[function] = {kind: len(pattern.findall(body)) for kind, pattern in _OPERATORS.items()}
    return counts


# ---------------------------------------------------------------------------- inputs
def deepest_frame(model):
    return choose_frames(model)[0]


def write_description(ref, frame, path):
    """Pinocchio's model of the URDF as pinocchio_side.cpp reads it: per joint its name, type,
    parent, axis, placement and the inertia of its body; the frame; gravity."""
    import pinocchio
    model = ref.model
    data = model.createData()
    pinocchio.forwardKinematics(model, data, pinocchio.neutral(model))
    lines = [str(model.njoints - 1)]

    def placement(se3):
        return " ".join(repr(float(x)) for x in (*se3.rotation.ravel(), *se3.translation))

    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        # The axis of an unaligned joint: its motion subspace, [v; w], of one column.
        subspace = np.asarray(data.joints[jid].S).ravel()
        axis = subspace[3:] if "Revolute" in joint.shortname() else subspace[:3]
        inertia = model.inertias[jid]
        # Names by index: a URDF name may hold white space, which separates the fields.
        lines.append(" ".join([f"joint{jid}", joint.shortname(), str(model.parents[jid]),
                               *(repr(float(x)) for x in axis), placement(model.jointPlacements[jid]),
                               repr(float(inertia.mass)), *(repr(float(x)) for x in inertia.lever),
                               *(repr(float(x)) for x in inertia.inertia.ravel())]))
    frame_id = model.getFrameId(frame, pinocchio.FrameType.BODY)
    lines.append(f"tool {model.frames[frame_id].parentJoint} "
                 f"{placement(model.frames[frame_id].placement)}")
    lines.append(" ".join(repr(float(x)) for x in model.gravity.linear))
    path.write_text("\n".join(lines) + "\n")


def write_states(model, ref, count, path, seed=47):
    """``count`` random states in our joint order and in Pinocchio's, with the map between."""
    n = model.dof
    if ref.model.nv != n:
        raise RuntimeError(f"Pinocchio has {ref.model.nv} velocities for our {n} joints (mimic "
                           "joints are not benchmarked)")
    rng = np.random.default_rng(seed)
    column = np.array([ref.model.joints[ref.model.getJointId(name)].idx_v
                       for name in model.joint_names])
    lines = [f"{n} {ref.model.nq} {n} {count}", " ".join(map(str, column))]
    for _ in range(count):
        q, qd, qdd = rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
        tau = rng.uniform(-20, 20, n)
        ours = np.concatenate((q, qd, qdd, tau))
        theirs = [ref.configuration(q)]
        for vector in (qd, qdd, tau):
            mapped = np.zeros(n)
            mapped[column] = vector
            theirs.append(mapped)
        lines.append(" ".join(repr(float(x)) for x in np.concatenate((ours, *theirs))))
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------- building
def _digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def _run(command, what):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout


def _pinocchio_version():
    import pinocchio
    return pinocchio.__version__


def pinocchio_object(cache):
    """pinocchio_side.o, compiled once per source, flags and Pinocchio version."""
    sources = [(CPP / name).read_bytes() for name in ("pinocchio_side.cpp", "pinocchio_side.h")]
    flags = [*CXX_FLAGS, *PINOCCHIO_DEFINITIONS, f"-I{PINOCCHIO_PREFIX / 'include'}", f"-I{EIGEN}"]
    target = cache / f"pinocchio_side-{_digest(*sources, *flags, _pinocchio_version())}.o"
    if not target.exists():
        print(f"[bench] compiling Pinocchio's side once (minutes): {target}", flush=True)
        partial = target.with_suffix(".partial.o")
        _run(["c++", *flags, "-c", str(CPP / "pinocchio_side.cpp"), "-o", str(partial)],
             "compiling pinocchio_side.cpp")
        partial.replace(target)
    return target


def exported_library(export_dir, cache):
    """The exported library built by its own CMakeLists.txt (Release, as a user builds it)."""
    source = (export_dir / f"{PREFIX}.c").read_bytes()
    key = _digest(source, (export_dir / f"{PREFIX}.h").read_bytes(),
                  (export_dir / "CMakeLists.txt").read_bytes())
    target = cache / f"lib{PREFIX}-{key}.a"
    if not target.exists():
        build = export_dir / "build"
        _run(["cmake", "-S", str(export_dir), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
             "configuring the exported library")
        _run(["cmake", "--build", str(build)], "building the exported library")
        shutil.copyfile(build / f"lib{PREFIX}.a", target)
    return target


def benchmark_program(export_dir, cache):
    pin_object = pinocchio_object(cache)
    library = exported_library(export_dir, cache)
    header = (export_dir / f"{PREFIX}.h").read_bytes()
    main = CPP / "export_vs_pinocchio.cpp"
    lib = PINOCCHIO_PREFIX / "lib"
    flags = [*CXX_FLAGS, f"-I{export_dir}", f"-I{CPP}"]
    link = [f"-L{lib}", f"-Wl,-rpath,{lib}", "-lpinocchio_default", "-lpinocchio_parsers", "-lm"]
    digest = _digest(main.read_bytes(), header, pin_object.name, library.name, *flags, *link)
    target = cache / f"export_vs_pinocchio-{digest}"
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        _run(["c++", *flags, str(main), str(pin_object), str(library), "-o", str(partial), *link],
             "building export_vs_pinocchio")
        partial.replace(target)
    return target


# ---------------------------------------------------------------------------- the run
def prepare(name, work, states):
    """Export ``name``'s library into ``work`` and write its inputs; returns what the run needs."""
    from soa_dynamics_ros.kernels.export import export_c
    source, load, frame = ROBOTS[name]
    urdf = work / f"{name}.urdf"
    urdf.write_text(load())
    model = load_ours(urdf)
    frame = frame or deepest_frame(model)
    export_dir = work / "export"
    export_c(model, export_dir, PREFIX, [frame])
    ref = load_pinocchio(urdf, model.joint_names)
    write_description(ref, frame, work / "description.txt")
    write_states(model, ref, states, work / "states.txt")
    traced = traced_counts(model, frame)
    exported = exported_counts((export_dir / f"{PREFIX}.c").read_text())
    return dict(robot=name, source=source, dof=model.dof, frame=frame, export_dir=export_dir,
                traced=traced, exported=exported)


def measure(case, work, rounds, cache):
    program = benchmark_program(case["export_dir"], cache)
    output = _run([str(program), str(work / "description.txt"), str(work / "states.txt"),
                   case["frame"], str(rounds)], "export_vs_pinocchio")
    measured = json.loads(output)
    rows = {}
    for function in FUNCTIONS:
        m = measured["functions"][function]
        ours, theirs = np.median(m["ours_ns"]), np.median(m["pinocchio_ns"])
        if not m["difference"] <= AGREEMENT:
            raise RuntimeError(f"{case['robot']} {function}: ours and Pinocchio's differ by "
                               f"{m['difference']:.2e} (relative)")
        rows[function] = dict(ours_ns=float(ours), pinocchio_ns=float(theirs),
                              ratio=float(ours / theirs), ours_min_ns=min(m["ours_ns"]),
                              pinocchio_min_ns=min(m["pinocchio_ns"]),
                              difference=m["difference"])
    return rows, measured["states"], measured["rounds"]


def _total(counts):
    return sum(counts.values())


def report(results, states, rounds, load_before, load_after):
    lines = ["# Exported C library against Pinocchio's C++ API, per call", "",
             run_header("bench/bench_export_c.py"), "",
             f"Load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, "
             f"after: {' '.join(f'{x:.2f}' for x in load_after)}. One process, the same "
             f"{states} random states, median of {rounds} rounds (each round: every state once, "
             f"ours then Pinocchio's). Exported library: its CMakeLists.txt, Release. Pinocchio "
             f"{_pinocchio_version()} (the pin wheel's libraries). Target: ratio <= "
             f"{WARM_TARGET} (bold when missed).", ""]
    for r in results:
        lines += [f"## {r['robot']} ({r['dof']} joints; Jacobian of {r['frame']}; {r['source']})", "",
                  "| function | Pinocchio's call | ours [ns] | Pinocchio [ns] | ours / Pinocchio "
                  "| exported ops (in the C) | traced ops | ours [ops/ns] |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for function in FUNCTIONS:
            row = r["rows"][function]
            exported, traced = _total(r["exported"][function]), _total(r["traced"][function])
            lines.append(f"| {function} | `{PINOCCHIO_CALLS[function]}` | {fmt(row['ours_ns'], 1)} "
                         f"| {fmt(row['pinocchio_ns'], 1)} "
                         f"| {ratio_cell(row['ours_ns'], row['pinocchio_ns'], WARM_TARGET)} "
                         f"| {exported} | {traced} | {fmt(traced / row['ours_ns'])} |")
        lines.append("")
    lines += ["Ops: arithmetic operations (mul, add, sub, div, neg, sin, cos) of the kernel's "
              "core, counted in the exported C and in the trace it is printed from; ops/ns: "
              "the traced operations per nanosecond of a call (the kernels are straight-line "
              "code, so this is how close a call runs to the machine's arithmetic rate). The "
              "exported forward dynamics of a robot whose hinges couple adds a dense solve "
              "outside the core."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", help=f"comma-separated, of {', '.join(ROBOTS)} (default: all)")
    parser.add_argument("--states", type=int, default=1000, help="random states (default 1000)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds (default 30)")
    parser.add_argument("--quick", action="store_true",
                        help=f"the smoke: {', '.join(QUICK_ROBOTS)}, 100 states, 5 rounds")
    parser.add_argument("--export-only", action="store_true",
                        help="export and write the inputs, build and run nothing")
    parser.add_argument("--output", default=str(HERE / "results"), help="results folder")
    parser.add_argument("--cache", default=str(CACHE), help="build cache folder")
    parser.add_argument("--work", help="keep the exports and inputs here (default: a temporary folder)")
    args = parser.parse_args(argv)
    names = args.robots.split(",") if args.robots else list(QUICK_ROBOTS if args.quick else ROBOTS)
    unknown = [name for name in names if name not in ROBOTS]
    if unknown:
        parser.error(f"unknown robot {unknown[0][:40]!r}; known: {', '.join(ROBOTS)}")
    states, rounds = (100, 5) if args.quick else (args.states, args.rounds)
    if not (1 <= states <= 100_000 and 1 <= rounds <= 10_000):
        parser.error("--states must be in 1..100000 and --rounds in 1..10000")
    cache = pathlib.Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench_export_c_") as temporary:
        root = pathlib.Path(args.work or temporary)
        load_before = os.getloadavg()
        results = []
        for name in names:
            work = root / name
            work.mkdir(parents=True, exist_ok=True)
            print(f"[bench] {name}: exporting", flush=True)
            case = prepare(name, work, states)
            if args.export_only:
                print(f"[bench] {name}: exported to {case['export_dir']}", flush=True)
                continue
            case["rows"], states_run, rounds_run = measure(case, work, rounds, cache)
            print(f"[bench] {name}: " + ", ".join(
                f"{f} {case['rows'][f]['ratio']:.2f}" for f in FUNCTIONS), flush=True)
            results.append(case)
        if args.export_only:
            return 0
        markdown = report(results, states, rounds, load_before, os.getloadavg())
    data = {"header": run_header("bench/bench_export_c.py"), "load_before": load_before,
            "states": states, "rounds": rounds, "target": WARM_TARGET,
            "pinocchio": _pinocchio_version(),
            "robots": [{key: case[key] for key in ("robot", "source", "dof", "frame", "rows",
                                                   "traced", "exported")} for case in results]}
    print(markdown)
    write_results(args.output, "export_c_vs_pinocchio", markdown, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
