"""Batch kernels that compute several samples per instruction (issue 14, item 4).

The batch kernels run blocks of consecutive samples through a vectorized copy
of the single-sample core and the rows left over through the core itself.
Each row must be the single-sample kernel's answer (and the numpy path's) to
1e-12, whatever block it falls in, and a failing sample keeps the status
convention ``4 * index + status`` with the first failing index.
"""
import numpy as np
import pytest

from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros.model import RobotModel

TOL = 1e-12
# More than two blocks of the widest vectors (8 lanes with AVX-512) plus a tail.
SAMPLES = 19
ROBOTS = ([shipped_urdf(name) for name in SHIPPED_ROBOTS]
          + [random_tree_urdf(seed, moving_joints=n, mimic_fraction=mimic,
                              prismatic_fraction=0.25, continuous_fraction=0.25)
             for seed, n, mimic in ((21, 9, 0.0), (22, 14, 0.3))])
IDS = [name for name in SHIPPED_ROBOTS] + ["random21", "random22_mimic"]
KERNELS = {  # batch kernel: (single-sample kernel, number of (N, dof) inputs)
    "gravity_torques_batch": ("gravity_torques", 1),
    "inverse_dynamics_batch": ("inverse_dynamics", 3),
    "forward_dynamics_batch": ("forward_dynamics", 3)}


def _inputs(robot, rng, count=SAMPLES):
    q, qd, qdd = rng.uniform(-2, 2, (3, count, robot.dof))
    return q, qd, qdd


@pytest.mark.parametrize("source", ROBOTS, ids=IDS)
def test_every_row_is_the_single_sample_kernel(source, traced_robot, rng):
    robot = traced_robot(source)
    p = robot.parameters()
    arrays = _inputs(robot, rng)
    for batch, (single, inputs) in KERNELS.items():
        rows = robot.compiled(batch)(*arrays[:inputs], p)
        assert isinstance(rows, np.ndarray), (batch, rows)
        for s in range(SAMPLES):
            expected = robot.compiled(single)(*(a[s] for a in arrays[:inputs]), p)
            assert_close(rows[s], expected, f"{batch} row {s}", TOL)


@pytest.mark.parametrize("source", ROBOTS, ids=IDS)
def test_batches_through_the_api_agree_with_the_numpy_path(source, rng):
    fast = RobotModel.from_urdf(source, kernels="c")
    slow = RobotModel.from_urdf(source, kernels="off")
    Q, QD, QDD = _inputs(fast, rng)
    tau = slow.inverse_dynamics_batch(Q, QD, QDD)
    assert_close(fast.inverse_dynamics_batch(Q, QD, QDD), tau, "ID batch", TOL)
    assert_close(fast.gravity_torques_batch(Q), slow.gravity_torques_batch(Q), "g batch", TOL)
    # The numpy path takes another (equally exact) order of operations for
    # forward dynamics; its agreement with the kernels is the existing 1e-10.
    assert_close(fast.forward_dynamics_batch(Q, QD, tau), slow.forward_dynamics_batch(Q, QD, tau),
                 "FD batch", 1e-10)


@pytest.mark.parametrize("bad_sample", [0, 5, 9, SAMPLES - 1])
@pytest.mark.parametrize("bad_value", [np.nan, np.inf])
def test_a_bad_sample_is_named_whichever_block_it_is_in(bad_sample, bad_value, traced_robot, rng):
    robot = traced_robot(shipped_urdf("panda.urdf"))
    p = robot.parameters()
    q, qd, qdd = _inputs(robot, rng)
    qdd[bad_sample, 3] = bad_value
    later = min(bad_sample + 2, SAMPLES - 1)
    q[later, 0] = np.nan            # a later bad sample must not be the one reported
    for batch, (_, inputs) in KERNELS.items():
        arrays = (q, qd, qdd)[:inputs]
        expected = 4 * bad_sample + 1 if inputs == 3 else 4 * later + 1
        assert robot.compiled(batch)(*arrays, p) == expected, batch


MASSLESS_TIP = """<robot name="massless_tip">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="l2"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 0.5"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>"""


def test_a_singular_hinge_in_a_block_is_status_2_of_the_first_sample(traced_robot, rng):
    robot = traced_robot(MASSLESS_TIP)
    p = robot.parameters()
    q, qd, tau = _inputs(robot, rng)
    assert robot.compiled("forward_dynamics_batch")(q, qd, tau, p) == 2
    qd[0, 1] = np.nan              # an earlier bad input wins over the singular hinge
    assert robot.compiled("forward_dynamics_batch")(q, qd, tau, p) == 1
    # Inverse dynamics has no singular case: every row is answered.
    rows = robot.compiled("inverse_dynamics_batch")(q, qd, tau, p)
    assert rows == 4 * 0 + 1
    qd[0, 1] = 0.0
    rows = robot.compiled("inverse_dynamics_batch")(q, qd, tau, p)
    assert isinstance(rows, np.ndarray) and np.all(np.isfinite(rows))


@pytest.mark.parametrize("kernel", ["inverse_dynamics", "forward_dynamics",
                                    "inverse_dynamics_derivatives",
                                    "forward_dynamics_derivatives"])
def test_the_batches_of_a_tree_robot_are_vectorized(kernel, traced_robot):
    """Inverse and forward dynamics batches and their derivatives' go through the lanes
    core (gravity's does not: it measured no faster, see the generator)."""
    source = traced_robot(shipped_urdf("panda.urdf")).generated_source(kernel)
    assert f"{kernel}_core, {kernel}_lanes)" in source


def test_a_workspace_too_large_for_the_stack_leaves_the_batch_sample_by_sample(
        traced_robot, monkeypatch):
    """A lanes core keeps a copy of its core's workspace per lane on the stack: above
    MAX_LANES_WORKSPACE doubles a sample the batch runs the single core (lowered here
    below the Panda's 4 x 7 x 7 for its forward dynamics derivatives)."""
    from soa_dynamics_ros.kernels import c_emission
    robot = traced_robot(shipped_urdf("panda.urdf"))
    kernel = "forward_dynamics_derivatives"
    monkeypatch.setattr(c_emission, "MAX_LANES_WORKSPACE", 4 * 7 * 7)
    assert f"{kernel}_core, {kernel}_lanes)" in robot.generated_source(kernel)
    monkeypatch.setattr(c_emission, "MAX_LANES_WORKSPACE", 4 * 7 * 7 - 1)
    source = robot.generated_source(kernel)
    assert f"{kernel}_core, NULL)" in source and f"{kernel}_lanes(" not in source


@pytest.mark.parametrize("seed, solve", [(24, "soa_cholesky_solve"), (22, "soa_tree_solve")])
def test_a_mimic_robot_solves_its_forward_dynamics_lane_by_lane(seed, solve, traced_robot, rng):
    """Mimic joints couple hinges, so the forward dynamics kernel forms M and h and then
    solves: its lanes core fills one M per lane and solves each, by the dense Cholesky or
    by the LTL of M's tree sparsity (mimic joints within one branch), as the single core
    does; every row of a batch, in blocks and in the tail, is the single core's answer."""
    robot = traced_robot(random_tree_urdf(seed, moving_joints=12, mimic_fraction=0.3))
    source = robot.generated_source("forward_dynamics")
    lanes = source[source.index("forward_dynamics_lanes("):]
    assert f"{solve}(m + l * " in lanes, "another solve than the single core's"
    p = robot.parameters()
    q, qd, tau = _inputs(robot, rng)
    rows = robot.compiled("forward_dynamics_batch")(q, qd, tau, p)
    assert isinstance(rows, np.ndarray), rows
    for s in range(SAMPLES):
        assert_close(rows[s], robot.compiled("forward_dynamics")(q[s], qd[s], tau[s], p),
                     f"row {s}", TOL)


def test_lanes_take_sine_and_cosine_of_an_angle_together():
    """The lanes core asks for both at once (runtime.h's soa_vsincos: libmvec's vector
    sin and cos, or one libm sincos per lane), as GCC makes of the single-sample core's
    sin and cos of one angle; the rows above hold it to that core."""
    from soa_dynamics_ros.kernels import generator
    tree = RobotModel.from_urdf(shipped_urdf("ur5.urdf"), kernels="off").tree
    source, _ = generator.generate_source(tree, "inverse_dynamics", "lanes_check")
    lanes = source[source.index("inverse_dynamics_lanes("):]
    assert lanes.count("soa_vsincos(") == tree.dof
    assert "soa_vsin(" not in lanes and "soa_vcos(" not in lanes


def test_lanes_take_vector_sine_and_cosine_where_the_toolchain_has_them(traced_robot):
    """With glibc's libmvec (build.vector_math) the lanes' sin and cos come from it, all
    lanes per call: its AVX-512 variant for 8 lanes where the CPU has AVX-512F, else its
    AVX2 one for 4 where it has AVX2 (the machines here have had one or the other);
    elsewhere from libm.  Exactly one of the two is imported."""
    import subprocess
    from soa_dynamics_ros.kernels import build
    robot = traced_robot(shipped_urdf("ur5.urdf"))
    library = robot.compiled("inverse_dynamics_batch").__self__.__file__
    imported = subprocess.run(["nm", "-D", "--undefined-only", library], capture_output=True,
                              text=True, check=True).stdout
    defines, _ = build.vector_math()
    flags = f" {build.host_cpu()} "
    avx512, avx2 = " avx512f " in flags, " avx2 " in flags
    expected = ("_ZGVeN8v_sin" if avx512 else "_ZGVdN4v_sin") if defines and (avx512 or avx2) \
        else None
    for variant in ("_ZGVeN8v_sin", "_ZGVdN4v_sin"):
        assert (variant in imported) == (variant == expected), (variant, defines, flags, library)


def test_lanes_agree_with_the_single_core_at_large_angles(traced_robot, rng):
    """Vector sin and cos reduce large arguments their own way: rows of angles up to the
    validation bound (continuous joints turn without limit) against the single core."""
    from soa_dynamics_ros.validation import MAX_MAGNITUDE
    robot = traced_robot(shipped_urdf("ur5.urdf"))
    p = robot.parameters()
    q, qd, qdd = _inputs(robot, rng)
    magnitudes = np.array([1e3, 1e6, 1e9, 1e15, 1e30, MAX_MAGNITUDE])
    q *= rng.choice(magnitudes, size=q.shape) / 2
    rows = robot.compiled("inverse_dynamics_batch")(q, qd, qdd, p)
    assert isinstance(rows, np.ndarray), rows
    for s in range(SAMPLES):
        expected = robot.compiled("inverse_dynamics")(q[s], qd[s], qdd[s], p)
        assert_close(rows[s], expected, f"row {s} at angles {q[s]}", TOL)
