"""`make demo` (soa_dynamics_ros.sim.demo), shortened: it runs, reports and plots (all parts:
gravity hold and fall; the pick-and-place without and with trajectory feedforward; estimation)."""
import subprocess
import sys

from support.optional import needs
from support.robots import REPO


@needs("mujoco", "rtbdata", "matplotlib")   # the plant, the vx300s arm, the plots
def test_demo_reports_and_plots(tmp_path):
    # On its compiled kernels, as `make demo` runs (the numpy path takes ~1 ms per state
    # on this machine: too slow for 1 kHz in real time); compiled once per machine.
    output = tmp_path / "loop.png"
    result = subprocess.run([sys.executable, "-m", "soa_dynamics_ros.sim.demo", "--output", str(output),
                             "--phase", "1.0", "--warm-up", "240"], cwd=REPO,
                            capture_output=True, text=True, timeout=900)
    report = result.stdout
    print(report)           # the whole report (all parts), shown when the test fails
    assert result.returncode == 0, report[-3000:] + result.stderr[-3000:]
    for expected in ("drift WITH gravity feedforward", "drift WITHOUT feedforward",
                     "feedforward latency", "~/gravity_torques", "~/inverse_dynamics",
                     "~/forward_dynamics", "~/mass_matrix", "~/task_space_inertia",
                     "~/hybrid_dynamics", "~/mixed_dynamics", "~/set_payload",
                     "~/evaluate_trajectory", "panda   RMS tracking error WITHOUT feedforward",
                     "vx300s  RMS tracking error WITHOUT feedforward",
                     "RMS tracking error WITH feedforward",
                     "external torques, from 100 ms after the start",
                     "payload (never told to the node)"):
        assert expected in report
    for png in (output, tmp_path / "trajectory_feedforward.png", tmp_path / "estimation.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_demo_finds_the_repository_without_a_ros_environment():
    """`make demo` runs the venv's Python with no AMENT_PREFIX_PATH: the demo must find
    config/ in the repository itself (it looked in soa_dynamics_ros/ after the layers moved
    into folders, and then failed asking for AMENT_PREFIX_PATH)."""
    from soa_dynamics_ros.sim.clients import REPO as demo_repository
    assert (demo_repository / "config" / "panda_sim.yaml").is_file(), demo_repository
