"""The README and docs/ as a user meets them: every code block runs as written, every shell
line survives bash, the parameter table matches the node's, and the Sphinx site builds
without a warning."""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

import pytest

from support.robots import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([A-Za-z]*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
# Blocks naming these are what .ci/run itself runs (set-up, tests, demo), benchmarks (make
# bench: minutes each), or need a ROS installation that the checkout's venv is not (colcon,
# rosdep, ros2).
RUN_ELSEWHERE = ("scripts/setup.sh", "scripts/test.sh", "make ", "bench/", "colcon ", "rosdep ",
                 "ros2 ", "source ", "pip install", "apt-get", "sphinx-build", "git clone", "mkdir -p ~")
VENV_BIN = REPO / ".venv" / "bin"
# A block whose last command starts a node in the foreground runs until stopped, as it does
# for the user: it runs as written when it is still up after STARTED seconds and then ends
# cleanly on SIGINT.
FOREGROUND_NODE = re.compile(r"(?:^|/)soa_dynamics_(?:node|sim)\b[^&]*\Z", re.S)
STARTED = 8.0


def blocks(language):
    """(page, line, code) of every fenced block of ``language`` in the README and docs."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            if match.group(1) == language:
                found.append((page, text[:match.start()].count("\n") + 1, match.group(2)))
    return found


def block_id(block):
    page, line, _ = block
    return f"{page.relative_to(REPO)}:{line}"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A folder that looks like the checkout (urdf/, config/, examples/, .venv) where blocks
    may write their plots without touching the checkout."""
    root = tmp_path_factory.mktemp("docs_sandbox")
    for name in ("urdf", "config", "examples", ".venv", "soa_dynamics_ros"):
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    return root


def environment():
    return dict(os.environ, PYTHONPATH=str(REPO), MPLBACKEND="Agg",
                PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")


def run(command, cwd, timeout):
    return subprocess.run(command, cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def run_until_stopped(command, cwd):
    """Start a block that runs a node in the foreground; (whether it was still up after
    STARTED seconds, its exit code after SIGINT, its output)."""
    process = subprocess.Popen(command, cwd=cwd, env=environment(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        process.wait(timeout=STARTED)
        up = False
    except subprocess.TimeoutExpired:
        up = True
        os.killpg(process.pid, signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return up, None, output
    return up, process.returncode, output


def test_there_are_blocks_to_run():
    """The tests below parametrize over blocks: an empty harvest would pass them all."""
    assert len(blocks("python")) >= 5 and len(blocks("bash")) >= 4


@pytest.mark.parametrize("block", blocks("python"), ids=block_id)
def test_python_blocks_run_as_written(block, sandbox):
    page, line, code = block
    result = run([sys.executable, "-c", code], sandbox, timeout=300)
    assert result.returncode == 0, \
        f"{block_id(block)} fails as written:\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("block", blocks("bash"), ids=block_id)
def test_shell_lines_keep_their_tildes_quoted(block):
    """bash expands an unquoted ``~/feedforward:=...`` to the home folder and the remap is
    silently lost: every word that reaches a command must keep what the page shows."""
    page, line, code = block
    syntax = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
    assert syntax.returncode == 0, f"{block_id(block)}: {syntax.stderr}"
    sentinel = "/HOME-WAS-EXPANDED-HERE"
    for number, text in enumerate(code.replace("\\\n", " ").splitlines(), line + 1):
        if "~" not in text or text.lstrip().startswith("#"):
            continue
        words = text.split("#", 1)[0]
        expanded = subprocess.run(["bash", "-c", f"set -- {words}; printf '%s\\n' \"$@\""],
                                  env={"HOME": sentinel, "PATH": os.environ["PATH"]},
                                  capture_output=True, text=True)
        # A path under the home folder (mkdir -p ~/ws) means the expansion; a ROS remap or
        # parameter (name:=value) never does.
        remaps = [word for word in expanded.stdout.splitlines() if ":=" in word]
        assert not any(sentinel in word for word in remaps), \
            f"{page.relative_to(REPO)}:{number}: bash turns a '~' of this line into the home " \
            f"folder; quote it: {text.strip()}"


@pytest.mark.parametrize("block", [b for b in blocks("bash")
                                   if not any(word in b[2] for word in RUN_ELSEWHERE)],
                         ids=block_id)
def test_shell_blocks_run_as_written(block, sandbox):
    if not VENV_BIN.is_dir():
        pytest.skip("the pages' commands are written for the checkout's .venv "
                    "(bash scripts/setup.sh); this installation has none")
    command = ["bash", "-euo", "pipefail", "-c", block[2]]
    if FOREGROUND_NODE.search(block[2].strip()):
        up, code, output = run_until_stopped(command, sandbox)
        assert up and code == 0, f"{block_id(block)}: up after {STARTED:g} s: {up}, exit code " \
                                 f"after SIGINT: {code}\n{output[-3000:]}"
        return
    result = run(command, sandbox, timeout=300)
    assert result.returncode == 0, \
        f"{block_id(block)} fails as written:\n{result.stdout[-1500:]}\n{result.stderr[-3000:]}"


def test_the_node_parameter_table_is_the_nodes():
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import parameter_table
    finally:
        sys.path.remove(str(REPO / "docs"))
    document = parameter_table.NODE_DOC.read_text()
    assert parameter_table.written(document) == document, \
        "docs/node.md's parameter table differs from ros/parameters.py: " \
        "run python docs/parameter_table.py"


def test_the_documentation_site_builds_without_warnings(tmp_path):
    sphinx = shutil.which("sphinx-build", path=str(pathlib.Path(sys.executable).parent))
    if sphinx is None:
        pytest.skip("sphinx-build is not installed (requirements-dev.txt has it)")
    result = run([sphinx, "-W", "--keep-going", "-q", "-b", "html", str(REPO / "docs"),
                  str(tmp_path / "html")], REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "html" / "api.html").exists()
