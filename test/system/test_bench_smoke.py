"""CI smoke of every benchmark script: it runs and writes its table (no timing assertions)."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

from support.robots import REPO

# The dynamics benchmarks have a test of their own below, which checks their rows too.
DYNAMICS = ("bench_dynamics.py", "bench_cold.py")
# Compiles Pinocchio's C++ for minutes: its smoke below exports and builds nothing.
EXPORT_C = "bench_export_c.py"
SCRIPTS = sorted(path for path in (REPO / "bench").glob("bench_*.py")
                 if path.name not in DYNAMICS + (EXPORT_C,))


def _run_quick(script, output):
    run = subprocess.run([sys.executable, str(script), "--quick", "--output", str(output)],
                         capture_output=True, text=True, cwd=REPO, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_bench_script_quick(script, tmp_path):
    run = _run_quick(script, tmp_path)
    tables = list(pathlib.Path(tmp_path).glob("*.md"))
    assert tables, run.stdout[-2000:]
    assert tables[0].read_text().count("\n") > 3, tables[0].read_text()


def test_dynamics_benchmarks_answer_every_quantity_on_the_quick_robot(tmp_path):
    """A renamed method or option must not turn a row into a recorded error: on the dual-arm robot
    (mimic grippers, two branches) every quantity answers, on both sides, warm and cold."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import cases
    finally:
        sys.path.remove(str(REPO / "bench"))
    _run_quick(REPO / "bench" / "bench_dynamics.py", tmp_path)
    assert "| inverse dynamics | " in (tmp_path / "dynamics-quick.md").read_text()
    warm = json.loads((tmp_path / "dynamics-quick.json").read_text())
    rows = [row for robot in warm["robots"] for row in robot["rows"]]
    assert {row["quantity"] for row in rows} >= set(cases.BATCHES) | {
        "ID, 3 wrenches", "TSI return_info", "hybrid, 3 constraints", "mixed dynamics",
        "subgraph hybrid", "ID, payload attached", "gravity, gravity changed"}
    for row in rows:
        assert row["error"] is None and row["ours_us"] > 0, row
        assert row["pinocchio_us"] and not row.get("pinocchio_errors"), row
    _run_quick(REPO / "bench" / "bench_cold.py", tmp_path)
    assert "| dual_arm_torso |" in (tmp_path / "cold-quick.md").read_text()
    cold = json.loads((tmp_path / "cold-quick.json").read_text())
    for result in cold["results"]:
        for variant in ("ours, empty cache", "ours, robot not seen", "Pinocchio"):
            assert not result[variant]["errors"], (variant, result[variant]["errors"])
            assert set(result[variant]["calls_s"]) == {row["quantity"] for row in rows
                                                      if not row["per_sample"]}


def test_run_all_runs_scripts_that_exist():
    """`make bench` is bench/run_all.sh; every script it names is there."""
    makefile = (REPO / "Makefile").read_text()
    assert "bash bench/run_all.sh" in makefile
    names = re.findall(r"bench_\w+\.py", (REPO / "bench" / "run_all.sh").read_text())
    assert {"bench_dynamics.py", "bench_cold.py"} <= set(names)
    for name in names:
        assert (REPO / "bench" / name).exists(), name


def test_export_c_benchmark_exports_and_writes_its_inputs_without_compiling(tmp_path):
    """bench_export_c.py --export-only: the export, Pinocchio's model and the states that the
    C++ program reads, for the quick robot; a robot it does not know is refused."""
    run = subprocess.run([sys.executable, str(REPO / "bench" / EXPORT_C), "--quick", "--export-only",
                          "--work", str(tmp_path), "--cache", str(tmp_path / "cache")],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    work = tmp_path / "ur5"
    assert {"bench.h", "bench.c", "CMakeLists.txt"} <= {p.name for p in (work / "export").iterdir()}
    assert (work / "description.txt").read_text().split()[0] == "6"
    assert (work / "states.txt").read_text().split()[:4] == ["6", "6", "6", "100"]
    assert not list((tmp_path / "cache").iterdir())
    refused = subprocess.run([sys.executable, str(REPO / "bench" / EXPORT_C), "--robots", "atlas",
                              "--export-only"], capture_output=True, text=True, cwd=REPO,
                             timeout=300)
    assert refused.returncode == 2 and "unknown robot 'atlas'" in refused.stderr
