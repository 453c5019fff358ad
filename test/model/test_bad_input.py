"""Bad arguments raise a specific, readable error and change nothing."""
import subprocess
import sys
import threading
import tracemalloc
import warnings

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import REPO
from soa_dynamics_ros import InvalidInputError, RobotModel, UnknownNameError
from soa_dynamics_ros.validation import MAX_MAGNITUDE, as_samples, as_vector


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf(random_tree_urdf(7, moving_joints=6))


def calls(model):
    n = model.dof
    z = np.zeros(n)
    frame = model.frame_names[-1]
    return {
        "gravity_torques": lambda v: model.gravity_torques(v),
        "inverse_dynamics(q)": lambda v: model.inverse_dynamics(v, z, z),
        "inverse_dynamics(qd)": lambda v: model.inverse_dynamics(z, v, z),
        "inverse_dynamics(qdd)": lambda v: model.inverse_dynamics(z, z, v),
        "bias_torques(qd)": lambda v: model.bias_torques(z, v),
        "mass_matrix": lambda v: model.mass_matrix(v),
        "forward_dynamics(tau)": lambda v: model.forward_dynamics(z, z, v),
        "frame_pose": lambda v: model.frame_pose(v, frame),
        "jacobian": lambda v: model.jacobian(v, frame),
        "center_of_mass": lambda v: model.center_of_mass(v),
    }


@pytest.mark.parametrize("call", list(calls(RobotModel.from_urdf(random_tree_urdf(7, moving_joints=6)))))
def test_wrong_length_nan_inf_and_junk_are_refused(model, call):
    function = calls(model)[call]
    good = np.zeros(model.dof)
    function(good)
    for bad, message in ((np.zeros(model.dof + 1), "shape"), (np.zeros((model.dof, 1)), "shape"),
                         (np.r_[good[:-1], np.nan], "NaN or inf at index"),
                         (np.r_[np.inf, good[1:]], "NaN or inf at index \\[0\\]"),
                         (np.r_[good[:-1], 1e200], "beyond 1e\\+50"),
                         (["a"] * model.dof, "numeric"), (None, "numeric|shape")):
        with pytest.raises(InvalidInputError, match=message):
            function(bad)


def test_unknown_frame_lists_close_matches(model):
    with pytest.raises(UnknownNameError, match=r"unknown frame 'link_3'.*did you mean.*'link3'"):
        model.jacobian(np.zeros(model.dof), "link_3")
    with pytest.raises(UnknownNameError, match="unknown frame 'zzz'$"):
        model.frame_pose(np.zeros(model.dof), "zzz")
    with pytest.raises(UnknownNameError, match="unknown joint"):
        model.joint_index("nope")


@pytest.mark.parametrize("wrenches, error, message", [
    ({"ghost": np.zeros(6)}, UnknownNameError, "unknown frame 'ghost'"),
    ({"base": np.zeros(5)}, InvalidInputError, "wrench on 'base'.*shape"),
    ({"base": [0, 0, np.nan, 0, 0, 0]}, InvalidInputError, "wrench on 'base'.*NaN"),
    ([np.zeros(6)], InvalidInputError, "map link names"),
])
def test_bad_wrenches(model, wrenches, error, message):
    z = np.zeros(model.dof)
    with pytest.raises(error, match=message):
        model.inverse_dynamics(z, z, z, wrenches)
    with pytest.raises(error, match=message):
        model.forward_dynamics(z, z, z, wrenches)


def test_bad_gravity_keeps_the_old_value(model):
    before = model.gravity
    for bad in ([0, 0], [0, np.nan, 0], "down"):
        with pytest.raises(InvalidInputError, match="gravity"):
            model.gravity = bad
    np.testing.assert_array_equal(model.gravity, before)


def test_gravity_getter_returns_a_copy(model):
    model.gravity[2] = 100.0
    assert model.gravity[2] == -9.81


def test_library_imports_without_ros():
    code = ("import sys, soa_dynamics_ros; "
            "assert not any(m.split('.')[0] in ('rclpy', 'rosidl_runtime_py') for m in sys.modules), "
            "sorted(m for m in sys.modules if 'rcl' in m)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_batches_match_single_calls_and_refuse_bad_shapes(model, rng):
    Q, QD, QDD = rng.normal(size=(3, 20, model.dof))
    assert_close(model.inverse_dynamics_batch(Q, QD, QDD),
                 [model.inverse_dynamics(*s) for s in zip(Q, QD, QDD)], "ID batch", 1e-14)
    assert_close(model.gravity_torques_batch(Q), [model.gravity_torques(q) for q in Q], "g batch", 1e-14)
    assert_close(model.forward_dynamics_batch(Q, QD, QDD),
                 [model.forward_dynamics(*s) for s in zip(Q, QD, QDD)], "FD batch", 1e-14)
    assert model.inverse_dynamics_batch(Q[:0], QD[:0], QDD[:0]).shape == (0, model.dof)
    with pytest.raises(InvalidInputError, match=r"QD must have shape \(20,"):
        model.inverse_dynamics_batch(Q, QD[:5], QDD)
    with pytest.raises(InvalidInputError, match=r"Q must have shape \(N,"):
        model.gravity_torques_batch(Q[:, :-1])
    Q[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"sample\(s\) \[3\]"):
        model.gravity_torques_batch(Q)


def test_overflowing_and_complex_values_are_invalid_input(model):
    """Python ints beyond float range used to raise OverflowError; complex arrays were
    accepted with only a ComplexWarning (their imaginary parts dropped)."""
    n = model.dof
    z = np.zeros(n)
    huge, complex_values = [10**400] * n, np.full(n, 1 + 2j)
    entry_points = [*calls(model).values(),
                    lambda v: model.gravity_torques_batch([v]),
                    lambda v: model.inverse_dynamics_batch([v], [z], [z]),
                    lambda v: model.forward_dynamics_batch([z], [z], [v]),
                    lambda v: setattr(model, "gravity", v[:3]),
                    lambda v: model.attach_payload("p", model.frame_names[-1], 1.0, com=v[:3]),
                    lambda v: model.attach_payload("p", model.frame_names[-1], 1.0,
                                                   inertia=np.diag(v[:3])),
                    lambda v: model.inverse_dynamics(
                        z, z, z, wrenches={model.frame_names[-1]: np.resize(v, 6)})]
    gravity = model.gravity
    for function in entry_points:
        for bad, message in ((huge, "too large for a float"), (complex_values, "complex")):
            with warnings.catch_warnings():
                warnings.simplefilter("error")     # a ComplexWarning is a failure
                with pytest.raises(InvalidInputError, match=message):
                    function(bad)
    np.testing.assert_array_equal(model.gravity, gravity)
    assert model.payloads == {}


@pytest.fixture
def frequent_thread_switches():
    """Switch threads every 10 us instead of 5 ms, so that races show within a test."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(interval)


def test_concurrent_payload_changes_are_atomic(frequent_thread_switches):
    """Two threads attaching and detaching: no 'dictionary changed size', and the final
    inertias are those of the payloads attached (checked against Pinocchio)."""
    urdf = random_tree_urdf(5, moving_joints=6)
    model = RobotModel.from_urdf(urdf, kernels="off")
    links = model.frame_names[-2:]
    errors = []

    def churn(name, link):
        try:
            for _ in range(300):
                model.attach_payload(name, link, 1.5, com=[0.1, 0.0, 0.0])
                model.payloads
                model.detach_payload(name)
            model.attach_payload(name, link, 1.5, com=[0.1, 0.0, 0.0])
        except Exception as error:  # noqa: BLE001 - any error is the defect
            errors.append(error)
    threads = [threading.Thread(target=churn, args=(f"p{i}", link)) for i, link in enumerate(links)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(model.payloads) == ["p0", "p1"]
    reference = PinocchioReference(urdf, model.joint_names)
    for link in links:
        reference.attach(link, 1.5, np.array([0.1, 0.0, 0.0]), np.zeros((3, 3)))
    q = np.linspace(-1, 1, model.dof)
    z = np.zeros(model.dof)
    assert_close(model.gravity_torques(q), reference.inverse_dynamics(q, z, z),
                 "gravity with both payloads")


def test_a_batch_sees_one_state_while_gravity_and_payloads_change(frequent_thread_switches):
    """kernels='off': every row of a batch comes from the same payload and gravity state."""
    urdf = random_tree_urdf(5, moving_joints=6)
    model = RobotModel.from_urdf(urdf, kernels="off")
    link = model.frame_names[-1]
    q = np.linspace(-1, 1, model.dof)
    z = np.zeros(model.dof)
    stop = threading.Event()

    def toggle():
        while not stop.is_set():
            model.gravity = [0.0, 0.0, -9.81]
            model.attach_payload("p", link, 3.0)
            model.gravity = [0.0, 0.0, -1.62]
            model.detach_payload("p")
    states = []
    for gravity in ([0.0, 0.0, -9.81], [0.0, 0.0, -1.62]):
        for payload in (False, True):
            reference = PinocchioReference(urdf, model.joint_names, gravity=gravity)
            if payload:
                reference.attach(link, 3.0, np.zeros(3), np.zeros((3, 3)))
            states.append(reference.inverse_dynamics(q, z, z))
    thread = threading.Thread(target=toggle)
    thread.start()
    try:
        for _ in range(20):
            rows = model.gravity_torques_batch(np.tile(q, (100, 1)))
            np.testing.assert_array_equal(rows, np.tile(rows[0], (100, 1)))
            assert min(np.abs(rows[0] - state).max() for state in states) < 1e-9 * max(
                1.0, np.abs(states).max())
    finally:
        stop.set()
        thread.join()


def test_mass_matrix_of_a_large_star_without_mimic_joints_stays_near_n_by_n():
    """G is the identity: no dense G^T M G (O(n^2) extra, O(n^3) time) may be formed."""
    links = 3000
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" '
                'ixz="0" iyz="0"/></inertial>')
    parts = [f'<robot name="star"><link name="hub">{inertial}</link>']
    for i in range(links):
        parts.append(f'<link name="l{i}">{inertial}</link><joint name="j{i}" type="revolute">'
                     f'<parent link="hub"/><child link="l{i}"/><origin xyz="0.1 0 0"/>'
                     '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'
                     '</joint>')
    model = RobotModel.from_urdf("".join(parts) + "</robot>", kernels="off")
    q = np.zeros(model.dof)
    result_bytes = model.dof ** 2 * 8
    tracemalloc.start()
    try:
        mass = model.mass_matrix(q)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert mass.shape == (links, links)
    # The hinge-space matrix carries one extra row and column (the root): 1.1 x is slack.
    assert peak < 1.1 * result_bytes, f"peak {peak / 2**20:.0f} MiB for a {result_bytes / 2**20:.0f} MiB result"
    # Each arm's centre of mass lies on its own joint axis: it contributes only its izz,
    # and arms on different joints of a fixed hub do not couple.
    np.testing.assert_allclose(np.diag(mass), np.full(links, 0.1), rtol=1e-12)
    assert not np.any(mass - np.diag(np.diag(mass)))


@pytest.mark.parametrize("bad, message", [
    (np.nan, "NaN or inf"), (np.inf, "NaN or inf"), (-np.inf, "NaN or inf"),
    (2 * MAX_MAGNITUDE, "values beyond"), (-2 * MAX_MAGNITUDE, "values beyond")])
def test_range_checks_name_each_kind_of_bad_entry_and_pass_the_limit_itself(bad, message):
    """as_vector and as_samples first test the whole array by its minimum and maximum;
    every kind of bad entry must still fall through to the check that names it, and
    the limit itself stays valid."""
    limits = np.array([MAX_MAGNITUDE, -MAX_MAGNITUDE, 0.0])
    np.testing.assert_array_equal(as_vector("v", limits, 3), limits)
    rows = np.tile(limits, (4, 1))
    np.testing.assert_array_equal(as_samples("S", rows, 3), rows)
    vector = limits.copy()
    vector[1] = bad
    with pytest.raises(InvalidInputError, match=rf"v holds {message}.* at index \[1\]"):
        as_vector("v", vector, 3)
    samples = np.zeros((5, 3))
    samples[2, 0] = samples[4, 2] = bad
    with pytest.raises(InvalidInputError, match=rf"S holds {message}.* in sample\(s\) \[2, 4\]"):
        as_samples("S", samples, 3)
