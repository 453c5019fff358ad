"""Start-up in either order, on an arm this project did not write, with the defaults a user
gets from two terminals: the simulated arm is held from the first command on.

The robot is the Trossen ViperX 300s from the `rtb-data` package (as pip installed it,
never copied here): six arm joints, a gripper motor and mimic fingers, 8 coordinates.
(The package's KUKA LBR iiwa 14 URDF has no <inertial> at all: no gravity to hold.)
Each start order runs from three kernel caches:
- empty, and no generic module installed (an installation that skipped setup.sh): the node
  meets the robot and compiles in a child process; it sends no command until compiled
  code is in (the numpy path is too slow for 1 kHz), and the sim waits;
- the generic module only (setup.sh installed it; a robot the machine never saw): the
  generic module feeds forward from the first state while the child compiles the robot's
  own kernels, which the node then loads, usually in the middle of the hold;
- complete (the robot seen before): its kernels are loaded at start-up.
The sim runs with its defaults (time stands still until the first command), paced in
real time, plus lockstep: on this shared 2-core machine (load average 8-11 while four
engineers ran builds and tests) neither process can be sure of the CPU every
millisecond, and a free-running sim then drops an arm whatever the node does (measured
2026-11-23: 0.2-1.2 s gaps, the node's kernels off included).  Lockstep makes the
physics independent of that while every stall of the node still shows: a state not
answered within lockstep_timeout (0.5 s) or a command older than command_timeout fails
the test.  Requirements (issue 12): no wall-time gap between two commands at the sim
(``command_gap_max_ms`` in its /diagnostics) longer than the node's state_timeout after
the first command, and joint drift < 1e-3 rad over at least 5 s of simulated time after it.
One stall is not the node's: a state the middleware delivers after state_timeout, which
the node drops by design (it never answers stale data) and logs with where the time went.
A lockstep timeout and its gap are excused only for such a drop whose delay was not spent
queued in the node (a CI run saw one state arrive 332.7 ms after it was published, 0.6 ms
of it in the node's queue, 2026-11-27).
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from support.optional import require
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for
from support.sim_harness import stamp_seconds
from soa_dynamics_ros import kernels
from soa_dynamics_ros.kernels import build
from soa_dynamics_ros.description.urdf import read_description_text
from soa_dynamics_ros.ros.parameters import PARAMETERS

rtbdata = require("rtbdata")
require("mujoco")   # the simulated arm's plant
from soa_dynamics_ros.sim.arm import LOCKSTEP_TIMEOUT  # noqa: E402

URDF = pathlib.Path(rtbdata.__file__).parent / "xacro" / "trossen_descriptions" / "urdf" / "vx300s.urdf.xacro"
POSE = dict(waist=0.3, shoulder=-0.4, elbow=0.5, forearm_roll=0.2, wrist_angle=0.6,
            wrist_rotate=0.1, gripper=0.0, left_finger=0.03)
STATE_TIMEOUT = PARAMETERS["state_timeout"].default      # [s] the node's default
# The node's log line for a dropped stale state (ros/node.py): total delay, and the part of
# it spent queued in the node after the middleware received the state.
STALE_DROP = re.compile(r"a joint state arrived ([\d.]+) ms after it was published "
                        r"\(([\d.]+) ms of it queued in this node")
HOLD = 5.0                  # [simulated s] after the first command
DRIFT_LIMIT = 1e-3          # [rad] (and m for the fingers)


class Observer:
    """Joint states (sim time, positions) and the sim's longest command gap per period."""

    def __init__(self, client):
        self.states, self.gaps = [], []
        self.published_on_numpy_path = []       # the node's, per diagnostics period
        self.sim_gc_pause_max = 0.0             # [ms] the sim's longest garbage collection
        # Reliable and deep, as the sim publishes: with the sensor-data profile (best effort,
        # depth 5) a CI run lost the last 123 ms of the hold while the kernels compiled from
        # an empty cache and this process waited for the CPU.
        client.node.create_subscription(JointState, "/joint_states", self._on_state, QoSProfile(
            depth=2000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE))
        client.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self._index = None

    def _on_state(self, message):
        if self._index is None:
            self._index = [list(message.name).index(n) for n in POSE]
        self.states.append((stamp_seconds(message.header.stamp),
                            np.asarray(message.position)[self._index]))

    def _on_diagnostics(self, message):
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            if values.get("kernels", "").startswith("numpy path"):
                self.published_on_numpy_path.append(int(values["feedforward_published"]))
            if "command_gap_max_ms" in values:
                self.gaps.append((float(values["command_gap_max_ms"]) / 1e3,
                                  int(values["lockstep_timeouts"]),
                                  values["command_gap_max_detail"]))
                self.sim_gc_pause_max = max(self.sim_gc_pause_max,
                                            float(values.get("gc_pause_max_ms") or 0.0))

    def latest_time(self):
        return self.states[-1][0] if self.states else None


def _start_sim(log_dir):
    return RosProcess("soa_dynamics_sim", "-p", f"urdf_file:={URDF}",
                      "-p", f"initial_positions:={list(POSE.values())}",
                      "-p", "publish_clock:=true", "-p", "lockstep:=true",
                      log_dir=log_dir, name="sim", realtime=True)


def _start_node(log_dir):
    # No ramp: the simulated arm is released at its first command (launch/sim.launch.py).
    return RosProcess("soa_dynamics_node", "-p", f"urdf_file:={URDF}",
                      "-p", "feedforward_mode:=gravity", "-p", "feedforward_ramp_time:=0.0",
                      "-r", "~/feedforward:=/effort_controller/commands",
                      log_dir=log_dir, name="node", realtime=True)


def _with_generic_module(directory):
    """``directory`` created, holding a copy of the generic module this test process uses
    (and its hash record, without which it is not loaded)."""
    directory.mkdir(parents=True)
    library = kernels.generic_module().__file__
    shutil.copy(library, directory)
    shutil.copy(build.record_path(library), directory)
    return directory


@pytest.fixture(scope="module")
def complete_cache(tmp_path_factory):
    """A kernel cache (SOA_DYNAMICS_CACHE) holding the robot's kernels, compiled once."""
    root = tmp_path_factory.mktemp("complete_cache")
    subprocess.run([sys.executable, "-m", "soa_dynamics_ros.embedded.warmup"],
                   input=read_description_text(str(URDF), [], 30.0), text=True, check=True,
                   env={**os.environ, "SOA_DYNAMICS_CACHE": str(root)}, timeout=600)
    return root


def _imports_after(log, text):
    """The modules a process imported after its log line containing ``text``."""
    later = log.split(text, 1)[1]
    return [line.rsplit("|", 1)[1].strip() for line in later.splitlines()
            if line.startswith("import time:")]


def _without_imports(log):
    return "\n".join(line for line in log.splitlines() if not line.startswith("import time:"))


@pytest.mark.realtime
@pytest.mark.parametrize("cache", ["empty", "generic module only", "complete"])
@pytest.mark.parametrize("order", ["sim first", "node first"])
def test_the_arm_is_held_from_the_first_command_in_either_start_order(
        request, tmp_path, monkeypatch, order, cache):
    # The installation's generic module (scripts/setup.sh) is there unless the cache is empty.
    monkeypatch.setenv("SOA_DYNAMICS_PREBUILT", str(
        tmp_path / "prebuilt" if cache == "empty" else _with_generic_module(tmp_path / "prebuilt")))
    monkeypatch.setenv("SOA_DYNAMICS_CACHE", str(
        request.getfixturevalue("complete_cache") if cache == "complete" else tmp_path / "cache"))
    # Every import is logged (to stderr, in order with the ROS log lines): an import inside
    # the 1 kHz loop pauses it (np.median's first call imported numpy.ma: 30-70 ms).
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    client = RosClient("startup")
    observer = Observer(client)
    sim = node = None
    try:
        if order == "sim first":
            sim = _start_sim(tmp_path)
            wait_for(lambda: observer.states, 60, interval=0.05, what="the sim's joint states")
            node = _start_node(tmp_path)
        else:
            node = _start_node(tmp_path)
            wait_for(lambda: "loaded from parameters" in node.log(), 60, interval=0.05,
                     what="the node's model")
            sim = _start_sim(tmp_path)
        # (from an empty cache the robot's kernels compile first: tens of seconds on a loaded
        # machine)
        wait_for(lambda: "first command at t=" in sim.log(), 300, interval=0.05,
                 what="the first command at the sim")
        start = float(sim.log().split("first command at t=")[1].split()[0])
        # Two diagnostics periods past the hold, so that every gap in it is reported.
        wait_for(lambda: (observer.latest_time() or 0.0) >= start + HOLD, 10 + 6 * HOLD,
                 interval=0.05, what=f"{HOLD} s of simulation after the first command")
        if cache == "generic module only":     # (the switch is inside the gaps checked)
            wait_for(lambda: "compiled kernels in use" in node.log(), 300, interval=0.1,
                     what="the robot's own kernels loaded")
        gaps_until = len(observer.gaps) + 2
        wait_for(lambda: len(observer.gaps) >= gaps_until, 30, interval=0.05,
                 what="the sim's diagnostics")
        sim_log = sim.log()     # up to here: stopping the node first ends the commands
    finally:
        client.close()
        codes = [p.stop() for p in (node, sim) if p is not None]
    logs = "\n".join(_without_imports(p.log())[-3000:] for p in (sim, node) if p is not None)
    assert codes == [0, 0], logs
    q0 = np.array(list(POSE.values()))
    # Every state seen from the first command on (at least HOLD s: waited for above); the arm
    # is held until the processes stop, and a fall does not come back to the pose, so a
    # state lost in between cannot hide one.
    held = [(t, q) for t, q in observer.states if t >= start]
    drift = np.max([np.abs(q - q0) for _, q in held], axis=0)
    unseen = max(np.diff([t for t, _ in held]), default=0.0)
    gap, _, gap_detail = max(observer.gaps)
    timeouts = observer.gaps[-1][1]
    print(f"{order}, {cache} cache: first command at t={start:.3f} s; drift over "
          f"{held[-1][0] - start:.2f} s {drift.max():.2e} ({len(held)} states seen, longest "
          f"span unseen {unseen * 1e3:.0f} ms); longest command gap at the sim "
          f"{gap * 1e3:.1f} ms ({gap_detail}); lockstep timeouts: {timeouts}; the sim's longest "
          f"garbage collection {observer.sim_gc_pause_max:.1f} ms")
    assert "no valid command" not in sim_log, logs
    assert not _imports_after(sim_log, "first command at t="), logs
    if cache == "complete":     # (the executor, made after the model, imports its module)
        assert not [module for module in _imports_after(node.log(), "loaded from parameters")
                    if not module.startswith("rclpy.experimental")], logs
    # No command from the numpy path (too slow for 1 kHz in real time) while the kernels
    # compile from an empty cache: the first one comes from compiled code.  (A compile
    # shorter than one diagnostics period leaves nothing to check here.)
    assert not any(observer.published_on_numpy_path), logs
    if cache == "generic module only":
        # Whether the first command reaches the sim before the robot's own kernels are in
        # is a race between DDS discovery of the two processes (up to ~3 s here) and the
        # compile (2.5 s for this arm on a quiet machine), so it is not asserted; that the
        # generic module feeds forward while they compile is checked in-process
        # (test_embedded_layer.py), and here that the node takes that path and that no
        # command came from the numpy path.
        assert "the generic compiled module answers meanwhile" in node.log(), logs
    # Drops logged as delayed outside the node (at most one line per withheld-log period, so
    # several within one are counted once: never more excused than happened).
    delayed_outside = sum(float(queued) < STATE_TIMEOUT * 1e3
                          for _, queued in STALE_DROP.findall(node.log()))
    assert timeouts <= delayed_outside, (
        f"{timeouts} states not answered within the lockstep timeout "
        f"({delayed_outside} dropped as delayed before reaching the node)\n{logs}")
    # (before the node withheld its numpy-path commands: 48-266 ms in these runs)
    longest_allowed = LOCKSTEP_TIMEOUT + STATE_TIMEOUT if timeouts else STATE_TIMEOUT
    assert gap <= longest_allowed, (f"a {gap * 1e3:.1f} ms gap between commands at the sim "
                                    f"({gap_detail})\n{logs}")
    assert drift.max() < DRIFT_LIMIT, dict(zip(POSE, drift))
