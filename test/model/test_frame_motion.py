"""Frame twist, classical frame acceleration, the Jacobian's time derivative and dJ/dt qd
(issue 47 part 5): against Pinocchio on shipped, rtb-data and example-robot-data robots
(mimic joints included), on the compiled path and the numpy path; against differences of
the model's own poses and Jacobians along a trajectory (no library); and on bad input."""
import pathlib

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states
from support.robots import quiet_model, reference_robot_params, reference_robot_text, shipped_urdf
from soa_dynamics_ros.errors import InvalidInputError, UnknownNameError

KERNELS = ["generic", "off"]


@pytest.fixture(scope="module", params=reference_robot_params())
def xml(request):
    return reference_robot_text(request.param)


@pytest.mark.parametrize("kernels", KERNELS)
def test_frame_motion_matches_pinocchio(xml, kernels, rng):
    model = quiet_model(xml, kernels)
    reference = PinocchioReference(xml, model.joint_names)
    for q, qd, qdd in random_states(model, 4, rng):
        for frame in model.frame_names:
            derivative = reference.jacobian_time_derivative(q, qd, frame)
            assert_close(model.frame_twist(q, qd, frame), reference.frame_twist(q, qd, frame),
                         f"twist of {frame}")
            assert_close(model.frame_acceleration(q, qd, qdd, frame),
                         reference.frame_acceleration(q, qd, qdd, frame),
                         f"classical acceleration of {frame}")
            assert_close(model.jacobian_time_derivative(q, qd, frame), derivative,
                         f"dJ/dt of {frame}")
            assert_close(model.jacobian_derivative_product(q, qd, frame), derivative @ qd,
                         f"dJ/dt qd of {frame}")


def test_the_generic_module_answers_as_the_numpy_path(xml, rng):
    """The C loop is the numpy recursion's, to round-off, called directly (so the
    compiled path is the one answering, not the numpy fallback)."""
    model, numpy_path = quiet_model(xml, "generic"), quiet_model(xml, "off")
    compiled, params = model.generic_kernels()
    for q, qd, qdd in random_states(model, 3, rng):
        for frame in model.frame_names:
            index = compiled.frame_index[frame]
            for name, rates in (("frame_twist", (qd,)), ("frame_acceleration", (qd, qdd)),
                                ("jacobian_time_derivative", (qd,)),
                                ("jacobian_derivative_product", (qd,))):
                answer = compiled.function(name, index)(q, *rates, params)
                assert type(answer) is np.ndarray, f"{name} of {frame} declined: {answer}"
                assert_close(answer, getattr(numpy_path, name)(q, *rates, frame),
                             f"{name} of {frame}", rtol=1e-12)


def _skew_part(matrix):
    """The vector w of the skew-symmetric part [w]x of ``matrix``."""
    return 0.5 * np.array([matrix[2, 1] - matrix[1, 2], matrix[0, 2] - matrix[2, 0],
                           matrix[1, 0] - matrix[0, 1]])


@pytest.mark.parametrize("kernels", KERNELS)
def test_motion_is_the_derivative_of_poses_and_jacobians(xml, kernels, rng):
    """Along q(t) = q + t qd + t^2 qdd / 2, at t = 0: dJ/dt is the central difference of
    jacobian(q(t)); the twist the first differences of the frame pose (dR/dt R^T = [w]x);
    the classical acceleration the second differences (d2R/dt2 R^T = [alpha]x + [w]x^2,
    whose skew part is [alpha]x)."""
    model = quiet_model(xml, kernels)
    step = 1e-4
    for q, qd, qdd in random_states(model, 2, rng):
        def along(t):
            return q + t * qd + 0.5 * t * t * qdd
        for frame in model.frame_names:
            derivative = model.jacobian_time_derivative(q, qd, frame)
            # dJ/dt depends on qd only: along a line (qdd = 0) the difference is exact to O(h^2)
            line = [model.jacobian(q + t * qd, frame) for t in (-step, step)]
            assert_close(derivative, (line[1] - line[0]) / (2 * step), f"dJ/dt of {frame}",
                         rtol=1e-6)
            before, now, after = (model.frame_pose(along(t), frame) for t in (-step, 0, step))
            velocity = (after - before) / (2 * step)
            twist = np.concatenate((velocity[:3, 3], _skew_part(velocity[:3, :3] @ now[:3, :3].T)))
            assert_close(model.frame_twist(q, qd, frame), twist, f"twist of {frame}", rtol=1e-6)
            curvature = (after - 2 * now + before) / step ** 2
            acceleration = np.concatenate((curvature[:3, 3],
                                           _skew_part(curvature[:3, :3] @ now[:3, :3].T)))
            assert_close(model.frame_acceleration(q, qd, qdd, frame), acceleration,
                         f"classical acceleration of {frame}", rtol=1e-5)
            assert_close(model.jacobian(q, frame) @ qdd
                         + model.jacobian_derivative_product(q, qd, frame),
                         model.frame_acceleration(q, qd, qdd, frame),
                         f"J qdd + dJ/dt qd of {frame}", rtol=1e-12)


def _calls(model, frame, q=None, qd=None, qdd=None):
    n = model.dof
    q, qd, qdd = (np.zeros(n) if v is None else v for v in (q, qd, qdd))
    return {"frame_twist": lambda: model.frame_twist(q, qd, frame),
            "frame_acceleration": lambda: model.frame_acceleration(q, qd, qdd, frame),
            "jacobian_time_derivative": lambda: model.jacobian_time_derivative(q, qd, frame),
            "jacobian_derivative_product": lambda: model.jacobian_derivative_product(q, qd,
                                                                                     frame)}


@pytest.mark.parametrize("kernels", KERNELS)
def test_bad_input_raises_the_errors_of_jacobian(kernels):
    model = quiet_model(pathlib.Path(shipped_urdf("panda.urdf")).read_text(), kernels)
    n, link = model.dof, model.frame_names[-1]
    for name, call in _calls(model, "panda_link_8").items():
        with pytest.raises(UnknownNameError, match="unknown frame 'panda_link_8'.*did you mean"):
            call()
    for frame in (None, 3, ["panda_link8"]):
        for name, call in _calls(model, frame).items():
            with pytest.raises(UnknownNameError):
                call()
    for bad in (np.zeros(n + 1), np.zeros(n - 1), np.full(n, np.nan), np.full(n, np.inf),
                "abc"):
        for argument in ("q", "qd", "qdd"):
            for name, call in _calls(model, link, **{argument: bad}).items():
                if argument == "qdd" and name != "frame_acceleration":
                    continue
                with pytest.raises(InvalidInputError):
                    call()


@pytest.mark.parametrize("kernels", ["c", "auto"])
def test_modes_with_robot_kernels_answer_from_the_generic_module(kernels, rng):
    """Where a robot gets kernels of its own, frame motion (which has none) is the generic
    module's from the first call: no robot kernel is asked for."""
    xml = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    model, numpy_path = quiet_model(xml, kernels), quiet_model(xml, "off")
    if model.kernels.backend is None:
        pytest.skip("no C compiler")
    for q, qd, qdd in random_states(model, 2, rng):
        for frame in ("panda_hand_tcp", "panda_link3"):
            for name, rates in (("frame_twist", (qd,)), ("frame_acceleration", (qd, qdd)),
                                ("jacobian_time_derivative", (qd,)),
                                ("jacobian_derivative_product", (qd,))):
                assert_close(getattr(model, name)(q, *rates, frame),
                             getattr(numpy_path, name)(q, *rates, frame), name, rtol=1e-12)
    assert not model.kernels.routes.requests and not model.kernels.routes.ready
