"""The compiled path reads every array as numpy would (issue 43).

Every public quantity that reaches compiled code is given each of its array
arguments (joint vectors, wrenches, constraint blocks, sample batches) in every
layout numpy reads (big-endian, strided, negative strides, Fortran order, unaligned,
read-only, float32, int, object, lists and tuples, an ndarray subclass): the answer
is Pinocchio's for the values numpy reads from it (the numpy path's where Pinocchio
has no such quantity), or InvalidInputError for shapes no path takes.  Hostile
Python objects (test/support/hostile_inputs.py) are thrown at every compiled entry
point in a subprocess, once as built and once with the generic module built under
AddressSanitizer: neither may crash.
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.hostile_inputs import unaligned
from support.numerics import assert_close
from support.robots import REPO, shipped_urdf
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.model import RobotModel

HOSTILE_SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "support" / "hostile_inputs.py"


class Subclass(np.ndarray):
    pass


def _read_only(values):
    array = values.copy()
    array.flags.writeable = False
    return array


def _strided(values):
    return np.repeat(values, 2, axis=-1)[..., ::2]


LAYOUTS = {
    "list": lambda v: v.tolist(), "tuple": lambda v: tuple(v.tolist()),
    "big-endian": lambda v: v.astype(">f8"), "strided": _strided,
    "negative strides": lambda v: v[::-1, ...].copy()[::-1, ...],
    "Fortran order": np.asfortranarray, "unaligned": unaligned,
    "unaligned big-endian": lambda v: unaligned(v.astype(">f8")),
    "read-only": _read_only, "float32": lambda v: v.astype(np.float32),
    "int": lambda v: np.round(3 * v).astype(np.int64), "object": lambda v: v.astype(object),
    "subclass": lambda v: v.copy().view(Subclass)}


def _as_read(value):
    """The values numpy reads from ``value``: what the reference is given."""
    return np.array(value, dtype=float)


@pytest.fixture(scope="module")
def panda():
    xml = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    model = RobotModel.from_urdf(xml, kernels="generic")
    assert model.kernels == ("generic", "c")
    numpy_path = RobotModel.from_urdf(xml, kernels="off")
    return model, numpy_path, PinocchioReference(xml, model.joint_names)


def _state(model):
    rng = np.random.default_rng(43)
    n = model.dof
    alpha = np.zeros((6, 2))
    alpha[0, 0] = alpha[2, 1] = 1.0
    alpha[4, 1] = 0.5
    return {"q": rng.uniform(-1.5, 1.5, n), "qd": rng.normal(size=n), "qdd": rng.normal(size=n),
            # a wrench of round numbers, whose bytes swapped are tiny but finite: read
            # without its byte order, it is silently no wrench at all
            "tau": rng.normal(size=n) * 5, "w": np.array([10.0, -20.0, 5.0, 1.5, -0.5, 2.0]),
            "alpha": alpha,
            "beta": np.array([0.3, -0.2])}


def _mixed_reference(reference, q, qd, qdd, tau, prescribed, wrenches=None):
    """Mixed dynamics from Pinocchio's M and h: the prescribed joints' qdd given, the
    others' tau."""
    mass = reference.mass_matrix(q)
    bias = reference.inverse_dynamics(q, qd, np.zeros_like(q), wrenches)
    given = np.zeros(len(q), dtype=bool)
    given[prescribed] = True
    free = ~given
    accelerations = np.where(given, qdd, 0.0)
    accelerations[free] = np.linalg.solve(
        mass[np.ix_(free, free)], tau[free] - bias[free] - mass[np.ix_(free, given)] @ qdd[given])
    return np.concatenate((accelerations, mass @ accelerations + bias))


LINK = "panda_hand_tcp"
PRESCRIBED = (["panda_joint1", "panda_joint4"], [0, 3])     # mixed dynamics: names, columns


def _quantities(model, numpy_path, reference):
    """name -> (the model's answer, the reference answer, the array arguments varied):
    each a function of the argument dict."""
    def w(a):
        return {LINK: a["w"]}

    def constraints(a):
        return [(LINK, a["alpha"], a["beta"])]

    def with_and_without_wrench(name, answer, expected, varied, expected_with_wrench=None):
        """``name`` and ``name with a wrench`` (on LINK): ``answer(a, *wrenches)``,
        ``expected(a, *wrenches)`` (``expected_with_wrench`` where Pinocchio has none)."""
        wrenched = expected_with_wrench or expected
        return {name: (answer, expected, varied),
                f"{name} with a wrench": (lambda a: answer(a, w(a)), lambda a: wrenched(a, w(a)),
                                          varied + ("w",))}

    flat = np.concatenate

    def derivatives(kind, third):
        """``<kind>_dynamics_derivatives`` with and without a wrench: Pinocchio's without,
        the numpy path's with (Pinocchio holds a wrench fixed in its joint's frame)."""
        name = f"{kind}_dynamics_derivatives"
        return with_and_without_wrench(
            name, lambda a, *w: flat(getattr(model, name)(a["q"], a["qd"], a[third], *w)),
            lambda a: flat(getattr(reference, name)(a["q"], a["qd"], a[third])),
            ("q", "qd", third),
            lambda a, w: flat(getattr(numpy_path, name)(a["q"], a["qd"], a[third], w)))

    names, columns = PRESCRIBED
    return {
        "gravity_torques": (lambda a: model.gravity_torques(a["q"]),
                            lambda a: reference.inverse_dynamics(a["q"], 0 * a["q"], 0 * a["q"]),
                            ("q",)),
        "bias_torques": (lambda a: model.bias_torques(a["q"], a["qd"]),
                         lambda a: reference.inverse_dynamics(a["q"], a["qd"], 0 * a["q"]),
                         ("q", "qd")),
        **with_and_without_wrench(
            "inverse_dynamics",
            lambda a, *w: model.inverse_dynamics(a["q"], a["qd"], a["qdd"], *w),
            lambda a, *w: reference.inverse_dynamics(a["q"], a["qd"], a["qdd"], *w),
            ("q", "qd", "qdd")),
        **with_and_without_wrench(
            "forward_dynamics",
            lambda a, *w: model.forward_dynamics(a["q"], a["qd"], a["tau"], *w),
            lambda a, *w: reference.forward_dynamics(a["q"], a["qd"], a["tau"], *w),
            ("q", "qd", "tau")),
        "mass_matrix": (lambda a: model.mass_matrix(a["q"]),
                        lambda a: reference.mass_matrix(a["q"]), ("q",)),
        "frame_pose": (lambda a: model.frame_pose(a["q"], LINK),
                       lambda a: reference.frame_pose(a["q"], LINK), ("q",)),
        "frame_poses": (lambda a: model.frame_poses(a["q"])[LINK],
                        lambda a: reference.frame_pose(a["q"], LINK), ("q",)),
        "jacobian": (lambda a: model.jacobian(a["q"], LINK),
                     lambda a: reference.jacobian(a["q"], LINK), ("q",)),
        "frame_twist": (lambda a: model.frame_twist(a["q"], a["qd"], LINK),
                        lambda a: reference.frame_twist(a["q"], a["qd"], LINK), ("q", "qd")),
        "frame_acceleration": (
            lambda a: model.frame_acceleration(a["q"], a["qd"], a["qdd"], LINK),
            lambda a: reference.frame_acceleration(a["q"], a["qd"], a["qdd"], LINK),
            ("q", "qd", "qdd")),
        "jacobian_time_derivative": (
            lambda a: model.jacobian_time_derivative(a["q"], a["qd"], LINK),
            lambda a: reference.jacobian_time_derivative(a["q"], a["qd"], LINK), ("q", "qd")),
        "jacobian_derivative_product": (
            lambda a: model.jacobian_derivative_product(a["q"], a["qd"], LINK),
            lambda a: reference.jacobian_time_derivative(a["q"], a["qd"], LINK) @ a["qd"],
            ("q", "qd")),
        "inertial_regressor": (
            lambda a: model.inertial_regressor(a["q"], a["qd"], a["qdd"])
            @ model.inertial_parameters(),
            lambda a: reference.inverse_dynamics(a["q"], a["qd"], a["qdd"]), ("q", "qd", "qdd")),
        "task_space_inertia": (
            lambda a: model.task_space_inertia(a["q"], LINK),
            lambda a: np.linalg.inv(reference.task_space_compliance(a["q"], [LINK])), ("q",)),
        "center_of_mass": (lambda a: model.center_of_mass(a["q"]),
                           lambda a: numpy_path.center_of_mass(a["q"]), ("q",)),
        **derivatives("inverse", "qdd"),
        **derivatives("forward", "tau"),
        "gravity_derivatives": (lambda a: model.gravity_derivatives(a["q"]),
                                lambda a: reference.gravity_derivatives(a["q"]), ("q",)),
        # Pinocchio's energies and C (the same calls as test_coriolis_energy.py's)
        "coriolis_matrix": (lambda a: model.coriolis_matrix(a["q"], a["qd"]),
                            lambda a: reference.coriolis_matrix(a["q"], a["qd"]), ("q", "qd")),
        "kinetic_energy": (lambda a: model.kinetic_energy(a["q"], a["qd"]),
                           lambda a: reference.kinetic_energy(a["q"], a["qd"]), ("q", "qd")),
        "potential_energy": (lambda a: model.potential_energy(a["q"]),
                             lambda a: reference.potential_energy(a["q"]), ("q",)),
        **with_and_without_wrench(
            "mixed_dynamics",
            lambda a, *w: flat(model.mixed_dynamics(a["q"], a["qd"], a["qdd"], a["tau"], names,
                                                    *w)),
            lambda a, *w: _mixed_reference(reference, a["q"], a["qd"], a["qdd"], a["tau"],
                                           columns, *w),
            ("q", "qd", "qdd", "tau")),
        **with_and_without_wrench(
            "hybrid_dynamics",
            lambda a, *w: model.hybrid_dynamics(a["q"], a["qd"], constraints(a), a["tau"],
                                                *w).qdd,
            lambda a, *w: reference.hybrid_dynamics(a["q"], a["qd"], constraints(a), a["tau"],
                                                    *w)[0],
            ("q", "qd", "tau", "alpha", "beta")),
    }


QUANTITY_NAMES = list(_quantities(None, None, None))


def _check_every_layout(quantity, answer, expected, varied, state):
    assert_close(answer(state), expected(state), quantity)
    for argument in varied:
        for layout, make in LAYOUTS.items():
            given = dict(state, **{argument: make(state[argument])})
            read = dict(state, **{argument: _as_read(given[argument])})
            assert_close(answer(given), expected(read), f"{quantity}, {argument} {layout}")


@pytest.mark.parametrize("quantity", QUANTITY_NAMES)
def test_every_layout_gives_the_answer_of_the_values_numpy_reads(panda, quantity):
    model, numpy_path, reference = panda
    _check_every_layout(quantity, *_quantities(model, numpy_path, reference)[quantity],
                        _state(model))


@pytest.mark.parametrize("quantity", QUANTITY_NAMES)
def test_shapes_no_path_takes_are_refused_by_name(panda, quantity):
    model, numpy_path, reference = panda
    answer, _, varied = _quantities(model, numpy_path, reference)[quantity]
    state = _state(model)
    for argument in varied:
        value = state[argument]
        # (None stands for zero velocity and torque in some queries: only q must be given)
        for bad in (np.float64(1.0), np.zeros(()), value[..., :-1], value[..., None],
                    np.zeros((0,)), "abcdefg", value.astype(complex),
                    np.full(value.shape, np.inf, dtype=">f8")) + (None,) * (argument == "q"):
            with pytest.raises(InvalidInputError):
                answer(dict(state, **{argument: bad}))


BATCHES = {
    "gravity_torques_batch": (1, lambda reference, q, qd, x: reference.inverse_dynamics(
        q, 0 * q, 0 * q)),
    "inverse_dynamics_batch": (3, lambda reference, q, qd, x: reference.inverse_dynamics(
        q, qd, x)),
    "forward_dynamics_batch": (3, lambda reference, q, qd, x: reference.forward_dynamics(
        q, qd, x)),
    "inverse_dynamics_derivatives_batch": (3, lambda reference, q, qd, x: np.concatenate(
        reference.inverse_dynamics_derivatives(q, qd, x))),
    "forward_dynamics_derivatives_batch": (3, lambda reference, q, qd, x: np.concatenate(
        reference.forward_dynamics_derivatives(q, qd, x))),
    "gravity_derivatives_batch": (1, lambda reference, q, qd, x: reference.gravity_derivatives(
        q))}


@pytest.mark.parametrize("batch", list(BATCHES))
def test_batches_read_every_layout(panda, batch):
    model, _, reference = panda
    inputs, expected = BATCHES[batch]
    rng = np.random.default_rng(4343)
    samples = [rng.uniform(-1.5, 1.5, (40, model.dof)) for _ in range(inputs)]
    function = getattr(model, batch)
    for position in range(inputs):
        for layout, make in LAYOUTS.items():
            given = list(samples)
            given[position] = make(samples[position])
            read = [_as_read(array) for array in given] + [samples[0]] * (3 - inputs)
            answer = function(*given)
            answer = np.concatenate(answer, axis=1) if type(answer) is tuple else answer
            for row in (0, 17, 39):
                assert_close(answer[row], expected(reference, *(x[row] for x in read)),
                             f"{batch} sample {row}, input {position} {layout}")


def test_a_robots_own_kernels_read_every_layout():
    """The per-robot kernels (runtime.h) of gravity and of inverse dynamics with and
    without a wrench (``kernels="c"`` compiles each, a link set's too, at its first
    call)."""
    xml = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    model = RobotModel.from_urdf(xml, kernels="c")
    state = _state(model)
    quantities = _quantities(model, None, PinocchioReference(xml, model.joint_names))
    for quantity in ("gravity_torques", "inverse_dynamics", "inverse_dynamics with a wrench"):
        _check_every_layout(quantity, *quantities[quantity], state)


def test_a_constraint_list_that_changes_while_it_is_read_is_answered_or_refused(panda):
    """Issue 43's segfault: a frame name whose hashing replaces the constraint's alpha
    after the compiled code checked it.  Run in a subprocess, where a crash is a failure
    and not the end of the test run."""
    script = f"""
import numpy as np
from soa_dynamics_ros.model import RobotModel
model = RobotModel.from_urdf({shipped_urdf("panda.urdf")!r}, kernels="generic")
link = model.frame_names[-1]
class Sneaky(str):
    def __hash__(self):
        constraint[1] = [[0.0, 0.0]] * 6
        return str.__hash__(self)
for _ in range(20):
    constraint = [Sneaky(link), np.eye(6)[:, :2].copy(), np.zeros(2)]
    answer = model.hybrid_dynamics(np.zeros(model.dof), np.zeros(model.dof), [constraint])
print("answered", answer.qdd.shape)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env=_environment())
    assert result.returncode == 0, result.stderr[-2000:]
    assert "answered (7,)" in result.stdout


def _environment(**extra):
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(REPO) + (os.pathsep + path if path else ""),
                **extra)


def test_hostile_objects_never_crash_a_compiled_entry_point():
    result = subprocess.run([sys.executable, str(HOSTILE_SCRIPT)], capture_output=True,
                            text=True, timeout=1200, env=_environment())
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert "calls " in result.stdout


def test_the_generic_module_under_address_sanitizer_reads_hostile_input_cleanly(
        address_sanitized_generic_module):
    library, path, name = address_sanitized_generic_module
    result = subprocess.run(
        [sys.executable, str(HOSTILE_SCRIPT), "--asan-module", str(path), name],
        capture_output=True, text=True, timeout=1800,
        env=_environment(LD_PRELOAD=library, PYTHONMALLOC="malloc",
                         ASAN_OPTIONS="detect_leaks=0:exitcode=86"))
    assert "AddressSanitizer" not in result.stderr, result.stderr[-4000:]
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert "calls " in result.stdout
