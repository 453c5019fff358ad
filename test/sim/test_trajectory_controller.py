"""The joint_trajectory_controller stand-in without ROS: sampling, the PID + effort law,
refusals, and the pick-and-place tracked on MuJoCo with and without inverse-dynamics efforts.

Sampling is checked against polynomials (numpy.polynomial) that the spline must reproduce
exactly; the command law against the formula of JTC's effort interface written out here;
the closed loop against MuJoCo as the plant.
"""
import re
import time

import numpy as np
import pytest
from numpy.polynomial import Polynomial

from support.optional import require
from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.sim import pick_and_place as pnp
from soa_dynamics_ros.sim.trajectory_controller import (MAX_POINTS, JointTrajectoryControllerEmulation,
                                                        trajectory_points)

require("mujoco")   # the plant of every test here
from soa_dynamics_ros.sim.mujoco_plant import MujocoPlant  # noqa: E402

JOINTS = ["a", "b"]
DT = 1e-3


def _point(time, positions, velocities=(), accelerations=(), effort=()):
    return dict(time=time, positions=positions, velocities=velocities, accelerations=accelerations,
                effort=effort)


def _controller(gains=None):
    return JointTrajectoryControllerEmulation(JOINTS, gains or {})


def _polynomials(rng, degree):
    return [Polynomial(rng.normal(size=degree + 1)) for _ in JOINTS]


def _values(polys, t, derivative=0):
    return np.array([p.deriv(derivative)(t) if derivative else p(t) for p in polys])


@pytest.mark.parametrize("degree, fields", [(1, 1), (3, 2), (5, 3)], ids=["linear", "cubic", "quintic"])
def test_the_spline_reproduces_a_polynomial_of_its_degree(rng, degree, fields):
    """Points from a polynomial of degree 1/3/5 with positions (+ velocities, + accelerations):
    JTC's line/cubic/quintic between them is that polynomial again."""
    polys = _polynomials(rng, degree)
    times = [0.0, 0.3, 0.7, 1.2]
    points = [_point(t, *(_values(polys, t, d) for d in range(fields))) for t in times]
    controller = _controller()
    controller.set_trajectory(trajectory_points(JOINTS, JOINTS, points))
    start = 10.0          # header stamp zero: starts at the first update
    controller.update(start, _values(polys, 0.0), np.zeros(2), DT)
    for t in np.linspace(0.0, 1.2, 37)[:-1]:
        q, qd, qdd, _ = controller.sample(start + t)
        np.testing.assert_allclose(q, _values(polys, t), atol=1e-10)
        np.testing.assert_allclose(qd, _values(polys, t, 1), atol=1e-9)
        if fields > 1:
            np.testing.assert_allclose(qdd, _values(polys, t, 2), atol=1e-8)


def test_before_the_first_point_it_goes_from_the_measured_state_and_after_the_last_it_holds(rng):
    first = _point(0.5, [1.0, -1.0], [0.2, 0.0], [], [3.0, 4.0])
    last = _point(1.0, [2.0, -0.5], [], [], [5.0, 6.0])
    controller = _controller()
    controller.set_trajectory(trajectory_points(JOINTS, JOINTS, [first, last]), start=20.0)
    measured_q, measured_qd = np.array([0.1, 0.2]), np.array([-0.3, 0.4])
    controller.update(19.0, measured_q, measured_qd, DT)      # a stamp one second ahead
    q, qd, _, effort = controller.sample(19.0)
    np.testing.assert_allclose(q, measured_q)
    np.testing.assert_allclose(qd, measured_qd)     # cubic: both ends give velocities
    np.testing.assert_allclose(effort, [3.0, 4.0])  # the first point's
    q, qd, _, _ = controller.sample(20.5 - 1e-9)
    np.testing.assert_allclose(q, [1.0, -1.0], atol=1e-7)
    np.testing.assert_allclose(qd, [0.2, 0.0], atol=1e-6)
    # Between a point with velocities and one without: a line.
    q, qd, qdd, effort = controller.sample(20.75)
    np.testing.assert_allclose(q, [1.5, -0.75])
    np.testing.assert_allclose(qd, [2.0, 1.0])
    np.testing.assert_allclose(qdd, [0.0, 0.0])
    np.testing.assert_allclose(effort, [4.0, 5.0])  # halfway between the points' efforts
    q, qd, qdd, effort = controller.sample(25.0)
    np.testing.assert_allclose(q, [2.0, -0.5])
    np.testing.assert_allclose(qd, [0.0, 0.0])
    np.testing.assert_allclose(effort, [5.0, 6.0])


def test_command_is_effort_plus_velocity_feedforward_plus_pid():
    """effort = ff + ff_velocity_scale v_d + p e + clamp(sum i e dt) + d (v_d - v)."""
    gains = {"a": dict(p=100.0, i=50.0, d=5.0, i_clamp=0.004, ff_velocity_scale=0.5),
             "b": dict(p=10.0, i=2.0, d=1.0, i_clamp=10.0)}
    points = [_point(0.0, [1.0, 2.0], [0.4, -0.2], [], [7.0, -3.0]),
              _point(100.0, [1.0, 2.0], [0.4, -0.2], [], [7.0, -3.0])]
    controller = _controller(gains)
    controller.set_trajectory(trajectory_points(JOINTS, JOINTS, points))
    q, qd = np.array([0.9, 2.1]), np.array([0.1, 0.3])
    for k in range(1, 4):
        effort = controller.update(0.0, q, qd, DT)     # t stays at the first point
        e, e_dot = np.array([0.1, -0.1]), np.array([0.3, -0.5])
        integral = np.clip(np.array([50.0, 2.0]) * e * DT * k, -np.array([0.004, 10.0]),
                           np.array([0.004, 10.0]))
        expected = (np.array([7.0, -3.0]) + np.array([0.5, 0.0]) * np.array([0.4, -0.2])
                    + np.array([100.0, 10.0]) * e + integral + np.array([5.0, 1.0]) * e_dot)
        np.testing.assert_allclose(effort, expected, rtol=1e-12)
    assert integral[0] == 0.004         # the clamp was reached


def test_without_a_trajectory_the_first_measured_position_is_held():
    controller = _controller({"a": dict(p=100.0, d=5.0), "b": dict(p=10.0, d=1.0)})
    hold = np.array([0.3, -0.2])
    controller.update(0.0, hold, np.zeros(2), DT)
    effort = controller.update(0.001, hold + [0.01, 0.02], np.array([1.0, -1.0]), DT)
    np.testing.assert_allclose(effort, [100.0 * -0.01 - 5.0, 10.0 * -0.02 + 1.0])


@pytest.mark.parametrize("names, points, message", [
    (["a", "x"], [_point(0.0, [0, 0])], "unknown joint 'x'"),
    (["a", "a"], [_point(0.0, [0, 0])], "repeats"),
    (["a"], [_point(0.0, [0])], "missing"),
    (JOINTS, [], "no points"),
    (JOINTS, [_point(0.0, [0, 0]), _point(1.0, [0])], "point 1: 1 positions for 2 joints"),
    (JOINTS, [_point(0.0, [0, 0], [1, 2, 3])], "3 velocities"),
    (JOINTS, [_point(0.0, [0, np.nan])], "non-finite positions"),
    (JOINTS, [_point(0.0, [0, 0], [], [], [np.inf, 0])], "non-finite effort"),
    (JOINTS, [_point(0.5, [0, 0]), _point(0.5, [1, 1])], "does not increase"),
    (JOINTS, [_point(k, [0, 0]) for k in range(MAX_POINTS + 1)], f"at most {MAX_POINTS}"),
], ids=["unknown", "repeated", "missing", "empty", "ragged", "ragged rates", "nan", "inf effort",
        "time", "too many"])
def test_bad_trajectories_are_refused_with_the_reason(names, points, message):
    with pytest.raises(InvalidInputError, match=message):
        trajectory_points(JOINTS, names, points)


def test_negative_or_non_finite_gains_are_refused():
    with pytest.raises(InvalidInputError, match=r"gains\.b\.d"):
        _controller({"b": dict(d=-1.0)})
    with pytest.raises(InvalidInputError, match=r"gains\.a\.p"):
        _controller({"a": dict(p=np.nan)})


# ---------------------------------------------------------------------- the pick-and-place
def _model(robot):
    return RobotModel.from_urdf(shipped_urdf("panda.urdf") if robot == "panda"
                                else pnp.description(robot), kernels="off")


@pytest.fixture(scope="module", params=["panda", "vx300s"])
def task(request):
    if request.param == "vx300s":
        require("rtbdata")
    model = _model(request.param)
    return model, pnp.pick_and_place(request.param, model)


def test_the_pick_and_place_is_fast_and_within_the_limits(task):
    model, path = task
    times, q, qd, qdd = path.points()
    # The sampled derivatives are those of the path (central differences of the positions).
    h = 1e-5
    inner = times[1:-1]
    np.testing.assert_allclose(path.sample(inner)[1],
                               (path.sample(inner + h)[0] - path.sample(inner - h)[0]) / (2 * h),
                               atol=1e-6)
    lower = np.array([j.lower for j in model.joints if j.name in path.joint_names])
    upper = np.array([j.upper for j in model.joints if j.name in path.joint_names])
    velocity = np.array([j.velocity for j in model.joints if j.name in path.joint_names])
    assert np.all(q >= lower) and np.all(q <= upper)
    assert np.all(np.abs(qd).max(axis=0) <= velocity)
    torques = model.inverse_dynamics_batch(q, qd, qdd)
    assert np.all(np.abs(torques).max(axis=0) <= model.effort_limits)
    peak = np.abs(qdd).max()
    print(f"{path.robot}: {len(times)} points over {path.duration:.2f} s, peak |qd| "
          f"{np.abs(qd).max():.2f} rad/s, peak |qdd| {peak:.1f} rad/s^2, peak |tau| "
          f"{np.abs(torques).max(axis=0).round(1).tolist()}")
    assert peak > 4.0       # at speed


def _track(path, efforts):
    """The path through the controller on MuJoCo (1 kHz); RMS of |q - q_d| as pnp measures it."""
    plant = MujocoPlant(pnp.description(path.robot), path.joint_names)
    plant.reset(path.poses[0])
    controller = JointTrajectoryControllerEmulation(path.joint_names, path.gains)
    times, q, qd, qdd = path.points()
    efforts = efforts if efforts is not None else [()] * len(times)
    points = [dict(time=t, positions=a, velocities=b, accelerations=c, effort=e)
              for t, a, b, c, e in zip(times, q, qd, qdd, efforts)]
    controller.set_trajectory(trajectory_points(path.joint_names, path.joint_names, points))
    recorded_t, recorded_q = [], []
    while plant.time < path.duration + pnp.SETTLE:
        plant.set_effort(controller.update(plant.time, plant.positions(), plant.velocities(),
                                           plant.timestep))
        plant.step()
        recorded_t.append(plant.time)
        recorded_q.append(plant.positions())
    return pnp.rms_error(np.array(recorded_t), np.array(recorded_q), path, 0.0)


def test_inverse_dynamics_efforts_cut_the_tracking_error_five_fold(task):
    """The target of issue 15, without ROS: same gains, efforts from the model or none."""
    model, path = task
    times, q, qd, qdd = path.points()
    without = _track(path, None)
    with_feedforward = _track(path, model.inverse_dynamics_batch(q, qd, qdd))
    print(f"{path.robot}: RMS tracking error without feedforward {without:.2e}, with "
          f"{with_feedforward:.2e} ({without / with_feedforward:.0f}x)")
    assert without > 1e-2, "the gains are so high that feedforward hardly matters"
    assert with_feedforward * 5 <= without


# ---------------------------------------------------------------------- the sim process in this mode
def _trajectory(names, positions, effort=()):
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    return JointTrajectory(joint_names=list(names), points=[
        JointTrajectoryPoint(positions=list(map(float, positions)),
                             effort=list(map(float, effort)))])


def test_the_sim_refuses_bad_trajectories_and_holds_the_arm_with_a_good_one(tmp_path):
    """Malformed trajectories: a throttled warning naming the problem, time still stands
    still; then a one-point trajectory at the start pose whose effort is Pinocchio's gravity
    holds the arm, the applied effort being that gravity (the PID has no error to act on)."""
    from oracles.pinocchio_reference import PinocchioReference
    from support.ros_harness import RosClient
    from support.sim_harness import POSES, StateRecorder, start_sim
    from support.waiting import wait_for
    from soa_dynamics_ros.sim.arm import TRAJECTORY_TOPIC
    from trajectory_msgs.msg import JointTrajectory
    names = list(POSES["panda"])
    q0 = np.array(list(POSES["panda"].values()))
    gravity = PinocchioReference(open(shipped_urdf("panda.urdf")).read(), names).inverse_dynamics(
        q0, np.zeros(7), np.zeros(7))
    client = RosClient("jtc_sim_test")
    states = StateRecorder(client, names)
    sim = start_sim("panda", tmp_path, "-p", "controller:=joint_trajectory", "-p", "publish_clock:=true",
                    *[arg for joint in names for arg in ("-p", f"gains.{joint}.p:=100.0",
                                                         "-p", f"gains.{joint}.d:=5.0")])
    try:
        trajectories = client.publisher(JointTrajectory, TRAJECTORY_TOPIC)
        wait_for(lambda: states.count() > 0, 30, what="the sim's joint states")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            trajectories.publish(_trajectory(names[:6] + ["nonexistent"], q0))
            trajectories.publish(_trajectory(names, [np.nan] + list(q0[1:])))
            trajectories.publish(_trajectory(names, q0[:5]))
            time.sleep(0.01)
        waiting_log = sim.log()
        start = states.latest()[0]
        trajectories.publish(_trajectory(names, q0, gravity))
        wait_for(lambda: (states.latest() or (0,))[0] > start + 1.0, 60, what="1 s of simulation")
    finally:
        client.close()
        code = sim.stop()
    assert code == 0, sim.log()[-3000:]
    warnings = re.findall(r"joint_trajectory rejected: ([^;]*);", waiting_log)
    assert 1 <= len(warnings) <= 2, waiting_log[-2000:]        # throttled: one per 2 s
    assert all(any(reason in w for reason in ("unknown joint 'nonexistent'", "non-finite positions",
                                              "5 positions for 7 joints")) for w in warnings)
    assert "first trajectory" not in waiting_log
    rows = [r for r in states.rows if r[0] > start + 1e-9]
    drift = np.max([np.abs(r[2] - q0) for r in rows])
    applied = np.array([r[4] for r in rows])
    print(f"held by the trajectory's gravity effort: drift {drift:.1e} rad over {rows[-1][0] - start:.2f} s")
    assert drift < 1e-6
    np.testing.assert_allclose(applied, np.tile(gravity, (len(rows), 1)), atol=1e-4)


@pytest.mark.parametrize("argument, reason", [
    ("controller:=position", "controller must be one of"),
    ("gains.panda_joint2.d:=-1.0", r"gains.panda_joint2.d must be finite and >= 0"),
])
def test_the_sim_refuses_a_bad_controller_configuration(tmp_path, argument, reason):
    from support.ros_harness import RosProcess
    sim = RosProcess("soa_dynamics_sim", "-p", "urdf_file:=urdf/panda.urdf",
                     "-p", "controller:=joint_trajectory", "-p", argument,
                     log_dir=tmp_path, name="bad_sim")
    try:
        sim.process.wait(60)
    finally:
        code = sim.stop()
    assert code == 1 and re.search(reason, sim.log()), sim.log()[-2000:]
