"""`make demo` (soa_dynamics_ros.demo), shortened: it runs, reports and plots."""
import os
import subprocess
import sys

from ros_harness import REPO


def test_demo_reports_and_plots(tmp_path):
    env = dict(os.environ, SOA_DYNAMICS_KERNELS="off")     # no compile wait in a short run
    output = tmp_path / "loop.png"
    result = subprocess.run([sys.executable, "-m", "soa_dynamics_ros.demo", "--output", str(output),
                             "--phase", "1.0", "--warm-up", "0"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=180)
    report = result.stdout
    print(report[-3000:])
    assert result.returncode == 0, report[-3000:] + result.stderr[-3000:]
    for expected in ("drift WITH gravity feedforward", "drift WITHOUT feedforward",
                     "feedforward latency", "~/gravity_torques", "~/inverse_dynamics",
                     "~/forward_dynamics", "~/mass_matrix", "~/task_space_inertia",
                     "~/hybrid_dynamics", "~/mixed_dynamics", "~/set_payload",
                     "~/evaluate_trajectory"):
        assert expected in report
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
