"""Trajectory efforts without ROS: the node's ~/trajectory_out computation against Pinocchio.

Efforts at given rates equal Pinocchio's ``rnea`` with the same payload and
gravity; positions alone converge to them as the sampling gets finer; a robot
that compensates its own gravity gets inverse dynamics minus the robot's (not
the payload's) gravity; every malformed trajectory is refused and changes
nothing.
"""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.embedded.live_model import LiveModel
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.plant import payload_gravity_torques

POSE = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
GRAVITY = np.array([0.3, -0.2, -9.7])      # not the default: the node's gravity is used
# A payload with an offset centre of mass and a full inertia (about its COM).
PAYLOAD = dict(name="tool", link="panda_link7", mass=2.5, com=np.array([0.02, -0.01, 0.12]),
               inertia=np.array([[0.020, 0.001, -0.002], [0.001, 0.030, 0.003],
                                 [-0.002, 0.003, 0.015]]))
# The trajectory's joints, not in model order; panda_joint7 is omitted (held).
ORDER = [3, 0, 5, 1, 4, 2]


@pytest.fixture
def xml():
    with open(shipped_urdf("panda.urdf")) as handle:
        return handle.read()


def live_model(xml, payload=True, compensates=False):
    model = RobotModel.from_urdf(xml)
    model.gravity = GRAVITY
    if payload:
        model.attach_payload(**PAYLOAD)
    live = LiveModel(model)
    live.robot_compensates_gravity = compensates
    live.update_state(model.joint_names, POSE, np.zeros(7), now=0.0)
    return live


def reference(xml, joint_names, payload=True):
    ref = PinocchioReference(xml, joint_names, gravity=GRAVITY)
    if payload:
        ref.attach(PAYLOAD["link"], PAYLOAD["mass"], PAYLOAD["com"], PAYLOAD["inertia"])
    return ref


def analytic_path(times):
    """q(t) and its exact rates for the trajectory's six joints (model-order columns ORDER)."""
    amplitude = np.array([0.4, 0.3, -0.5, 0.25, 0.6, -0.35])
    omega = np.array([2.0, 3.0, 1.5, 2.5, 3.5, 1.0])
    phase = omega * times[:, None]
    q = POSE[ORDER] + amplitude * np.sin(phase)
    return q, amplitude * omega * np.cos(phase), -amplitude * omega**2 * np.sin(phase)


def exact_efforts(ref, q, qd, qdd, compensate=None):
    """Pinocchio rnea per point with joint 7 held at POSE[6], columns in ORDER."""
    efforts = []
    for row_q, row_qd, row_qdd in zip(q, qd, qdd):
        full = [np.zeros(7), np.zeros(7), np.zeros(7)]
        full[0][6] = POSE[6]
        for target, row in zip(full, (row_q, row_qd, row_qdd)):
            target[ORDER] = row
        tau = ref.inverse_dynamics(*full)
        if compensate is not None:     # the robot's own gravity, from a payload-free reference
            tau = tau - compensate.inverse_dynamics(full[0], np.zeros(7), np.zeros(7))
        efforts.append(tau[ORDER])
    return np.array(efforts)


def names_of(live):
    return [live.model.joint_names[i] for i in ORDER]


def test_given_rates_are_used_as_they_are(xml):
    live = live_model(xml)
    times = np.sort(np.random.default_rng(3).uniform(0.0, 2.0, 40))   # non-uniform steps
    q, qd, qdd = analytic_path(times)
    efforts = live.trajectory_efforts(names_of(live), times, q, qd, qdd)
    expected = exact_efforts(reference(xml, live.model.joint_names), q, qd, qdd)
    assert efforts.shape == (40, 6)
    assert_close(efforts, expected, "efforts at given rates vs pin.rnea with the payload", 1e-6)


@pytest.mark.parametrize("payload", [True, False], ids=["payload", "no-payload"])
def test_robot_compensating_gravity_gets_the_payload_gravity_only(xml, payload):
    live = live_model(xml, payload=payload, compensates=True)
    times = np.linspace(0.0, 1.5, 20)
    q, qd, qdd = analytic_path(times)
    efforts = live.trajectory_efforts(names_of(live), times, q, qd, qdd)
    joints = live.model.joint_names
    expected = exact_efforts(reference(xml, joints, payload), q, qd, qdd,
                             compensate=reference(xml, joints, payload=False))
    assert_close(efforts, expected, "rnea (with payload) - robot gravity (without)", 1e-6)
    # The payload's gravity alone, at rest, is what is left of the static torques.
    at_rest = live.trajectory_efforts(live.model.joint_names, [0.0], [POSE])
    held = reference(xml, joints, payload).inverse_dynamics(POSE, np.zeros(7), np.zeros(7)) - \
        reference(xml, joints, payload=False).inverse_dynamics(POSE, np.zeros(7), np.zeros(7))
    assert_close(at_rest[0], held, "payload gravity at rest", 1e-9)
    assert_close(payload_gravity_torques(live.model, POSE[None])[0], held, "payload gravity", 1e-9)
    if not payload:
        assert np.abs(at_rest).max() < 1e-9


def test_positions_alone_converge_to_the_exact_efforts(xml):
    live = live_model(xml)
    ref = reference(xml, live.model.joint_names)
    errors = []
    for count in (50, 100, 200):
        # Non-uniform times: a smooth warp of uniform ones.
        uniform = np.linspace(0.0, 1.0, count)
        times = 2.0 * (uniform + 0.1 * np.sin(2 * np.pi * uniform) / (2 * np.pi))
        q, qd, qdd = analytic_path(times)
        efforts = live.trajectory_efforts(names_of(live), times, q)
        exact = exact_efforts(ref, q, qd, qdd)
        errors.append(np.abs(efforts - exact).max() / np.abs(exact).max())
    assert errors[-1] < 0.01, errors               # "within a few percent": 0.4 % measured
    assert errors[0] > errors[1] > errors[2], errors   # and converging
    # Given velocities, differentiated accelerations converge as well.
    times = np.linspace(0.0, 2.0, 200)
    q, qd, qdd = analytic_path(times)
    efforts = live.trajectory_efforts(names_of(live), times, q, qd)
    exact = exact_efforts(ref, q, qd, qdd)
    assert np.abs(efforts - exact).max() / np.abs(exact).max() < 0.03


def test_fewer_than_three_points_are_held_still(xml):
    live = live_model(xml)
    ref = reference(xml, live.model.joint_names)
    q = np.array([POSE[ORDER], POSE[ORDER] + 0.1])
    efforts = live.trajectory_efforts(names_of(live), [0.0, 1.0], q)
    assert_close(efforts, exact_efforts(ref, q, np.zeros_like(q), np.zeros_like(q)),
                 "static torques at each point", 1e-9)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(names=a["names"][:-1] + ["elbow"]), "unknown joint column 'elbow'"),
    (lambda a: a.update(names=a["names"][:-1] + a["names"][:1]), "appears twice"),
    (lambda a: a["positions"].__setitem__((2, 1), np.nan), "NaN or inf in sample(s) [2]"),
    (lambda a: a["velocities"].__setitem__((4, 0), np.inf), "NaN or inf in sample(s) [4]"),
    (lambda a: a["time"].__setitem__(3, a["time"][2]), "time must increase strictly: sample 3"),
    (lambda a: a.update(positions=a["positions"][:, :5]), "positions must have shape (5, 6)"),
    (lambda a: a.update(time=[], positions=np.zeros((0, 6)), velocities=None), "no points"),
    (lambda a: a.update(names=[], positions=np.zeros((5, 0)), velocities=None), "names no joints"),
    # The bounds of ~/desired_state (before: 1e40 rad gave efforts of 1e86 N m)
    (lambda a: a["positions"].__setitem__((1, 2), 1e40),
     "trajectory positions must be within +-1000, as desired states; point(s) [1]"),
    (lambda a: a["positions"].__setitem__((1, 2), -1000.5), "trajectory positions must be"),
    (lambda a: a["velocities"].__setitem__((3, 0), 2e4),
     "trajectory velocities must be within +-10000, as desired states; point(s) [3]"),
    (lambda a: a.update(accelerations=np.full((5, 6), 1.5e6)),
     "trajectory accelerations must be within +-1e+06"),
    (lambda a: a.update(velocities=None, time=np.linspace(0.0, 1e-6, 5)),
     "trajectory velocities (differentiated from the positions over time_from_start)"),
], ids=["unknown", "repeated", "nan", "inf", "time", "ragged", "empty", "no-joints",
        "position 1e40", "position beyond 1e3", "velocity", "acceleration", "differentiated"])
def test_malformed_trajectories_are_refused_and_change_nothing(xml, change, message):
    live = live_model(xml)
    before = (live.position.copy(), live.model.payloads.keys(), live.model.gravity)
    times = np.linspace(0.0, 1.0, 5)
    q, qd, _ = analytic_path(times)
    arguments = dict(names=names_of(live), time=times, positions=q, velocities=qd)
    change(arguments)
    with pytest.raises(InvalidInputError) as refusal:
        live.trajectory_efforts(arguments["names"], arguments["time"], arguments["positions"],
                                arguments["velocities"], arguments.get("accelerations"))
    assert message in str(refusal.value)
    assert np.array_equal(live.position, before[0]) and live.model.payloads.keys() == before[1]
    assert np.array_equal(live.model.gravity, before[2])


def test_an_omitted_joint_never_measured_is_refused(xml):
    model = RobotModel.from_urdf(xml)
    live = LiveModel(model)
    with pytest.raises(InvalidInputError, match=r"\['panda_joint7'\] are not in the trajectory"):
        live.trajectory_efforts(model.joint_names[:6], [0.0], [POSE[:6]])
