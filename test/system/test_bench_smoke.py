"""CI smoke of every benchmark script: it runs and writes its table (no timing assertions)."""
import pathlib
import subprocess
import sys

import pytest

from support.robots import REPO

SCRIPTS = sorted((REPO / "bench").glob("bench_*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_bench_script_quick(script, tmp_path):
    run = subprocess.run([sys.executable, str(script), "--quick", "--output", str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tables = list(pathlib.Path(tmp_path).glob("*.md"))
    assert tables, run.stdout[-2000:]
    assert tables[0].read_text().count("\n") > 3, tables[0].read_text()
