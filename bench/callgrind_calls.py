"""Instructions per public call, counted by callgrind: a repeatable figure for comparing two
versions of the code (wall times on a shared 2-core VM drift by tens of percent).

    .venv/bin/python bench/callgrind_calls.py [--calls N] [--out FILE.json] [robot ...]

Each robot runs in one process under ``valgrind --tool=callgrind``, warm (its kernels
compiled first, outside valgrind).  valgrind 3.19 cannot run AVX-512 instructions, which
``-march=native`` emits on hosts that have them, so the kernels are compiled here with
``-mno-avx512f`` added (a compiler wrapper) into a kernel cache of their own: counts compare
versions of the code, not this build with the production one.  Between quantities the process
calls ``os.getppid()``, and callgrind dumps its counters at every call of ``getppid``
(``--dump-before``), so each dump holds one quantity's ``N`` calls: instructions per call
include the public API's Python and the loop's own few hundred.  Prints a table; ``--out``
writes the figures as JSON, and ``--compare OLD.json`` prints the change against an earlier
run.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import cases

QUANTITIES = ("gravity", "bias", "inverse dynamics", "ID, 1 wrench", "forward dynamics",
              "FD, 1 wrench", "mass matrix", "frame pose", "Jacobian", "task-space inertia",
              "hybrid, 1 constraint", "mixed dynamics", "ID derivatives", "FD derivatives")
DEFAULT_ROBOTS = ("panda", "random_tree_32")


def _inner(robot, calls):
    """Run under callgrind: one getppid() before each quantity's calls and one at the end."""
    for name, _, urdf in cases.robots(only=[robot]):
        with tempfile.NamedTemporaryFile("w", suffix=".urdf") as handle:
            handle.write(urdf)
            handle.flush()
            model = cases.load_ours(handle.name)
        model.prepare_kernels()
        ours = cases.our_cases(model, cases.workload_for(model, samples=10), batches=False)
        chosen = [ours[q] for q in QUANTITIES]
        for case in chosen:                       # warm: first calls bind kernels and frames
            case.call()
        for case in chosen:
            call = case.call
            os.getppid()
            for _ in range(calls):
                call()
        os.getppid()


def _environment(folder):
    """Kernels without AVX-512, in a cache and prebuilt folder of their own."""
    cache = pathlib.Path.home() / ".cache" / "soa_dynamics_ros" / "callgrind"
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    wrapper = pathlib.Path(folder) / "cc"
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which(os.environ.get("CC", "cc"))} "$@" '
                       '-mno-avx512f\n')
    wrapper.chmod(0o700)
    return dict(os.environ, CC=str(wrapper), SOA_DYNAMICS_CACHE=str(cache),
                SOA_DYNAMICS_PREBUILT=str(cache / "prebuilt"),
                PYTHONPATH=os.pathsep.join([str(cases.REPO), sysconfig.get_paths()["purelib"]]))


def _count(robot, calls):
    """{quantity: instructions per call} for ``robot``."""
    with tempfile.TemporaryDirectory() as folder:
        env = _environment(folder)
        # Compile (or load) the robot's kernels outside valgrind, where it is 50x faster.
        subprocess.run([sys.executable, __file__, "--inner", robot, "--calls", "1"], check=True,
                       env=env)
        base = sysconfig.get_config_var("BINDIR") + "/python3"
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=getppid",
                        f"--callgrind-out-file={folder}/cg.out", "--dump-instr=no",
                        os.path.realpath(base), __file__, "--inner", robot, "--calls", str(calls)],
                       check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        dumps = sorted(pathlib.Path(folder).glob("cg.out.*"),
                       key=lambda path: int(path.name.rsplit(".", 1)[1]))
        totals = [int(re.search(r"^(?:summary|totals): (\d+)", path.read_text(), re.M).group(1))
                  for path in dumps]
    # Dump k (k >= 2) holds the calls between marker k-1 and marker k: quantity k-2.
    per_quantity = totals[1:1 + len(QUANTITIES)]
    return {q: round(total / calls) for q, total in zip(QUANTITIES, per_quantity)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robots", nargs="*", default=list(DEFAULT_ROBOTS))
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="write the figures to this JSON file")
    parser.add_argument("--compare", help="a JSON file of an earlier run to compare with")
    args = parser.parse_args()
    if args.inner:
        _inner(args.robots[0], args.calls)
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    results = {robot: _count(robot, args.calls) for robot in args.robots}
    before = json.loads(pathlib.Path(args.compare).read_text()) if args.compare else {}
    for robot, counts in results.items():
        print(f"\n{robot}: instructions per call ({args.calls} calls each)")
        for quantity, count in counts.items():
            old = before.get(robot, {}).get(quantity)
            change = f"  {count - old:+7d} ({(count - old) / old:+.1%})" if old else ""
            print(f"  {quantity:24s} {count:9d}{change}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
