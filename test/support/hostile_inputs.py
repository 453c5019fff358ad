"""Hostile Python objects thrown at every compiled entry point (issue 43).

Run as a script (``python hostile_inputs.py [--asan-module PATH NAME]``), never inside
the test process: what it checks is that no call crashes the interpreter, which a
crash would take down with it.  Each call must return or raise an ordinary exception;
a ``SystemError`` (a C function that returned NULL without an exception, or a result
with one set) counts as a failure.  With ``--asan-module`` the models use that build
of the generic module (test_hostile_arrays.py builds it with AddressSanitizer).

Prints ``calls N`` and exits 0 when every call behaved; prints the failures and exits
1 otherwise.
"""
import itertools
import pathlib
import sys
import warnings

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]


class HostileError(Exception):
    """What the hostile objects below raise on purpose."""


class RaisingNumber:
    def __float__(self):
        raise HostileError("__float__")

    def __index__(self):
        raise HostileError("__index__")

    def __int__(self):
        raise HostileError("__int__")


class ChangingNumber:
    """A different value (finite, NaN, huge, inf) at every conversion."""
    values = itertools.cycle([0.5, float("nan"), 1e300, float("inf"), -2.0])

    def __float__(self):
        return next(self.values)

    def __index__(self):
        return 3


class RaisingLength:
    def __len__(self):
        raise HostileError("__len__")

    def __getitem__(self, index):
        return 0.0


class ShiftySequence:
    """Its length and items change at every call."""

    def __init__(self, length):
        self.length = length
        self.calls = 0

    def __len__(self):
        self.calls += 1
        return self.length + self.calls % 3 - 1

    def __getitem__(self, index):
        self.calls += 1
        if index >= self.length + self.calls % 2:
            raise IndexError(index)
        return [0.1, "x", None, [1.0, 2.0], 1e308][self.calls % 5]


class ShiftyArray:
    """``__array__`` answers another shape, dtype or an error at every call."""

    def __init__(self, length):
        self.length = length
        self.calls = 0

    def __array__(self, dtype=None, copy=None):
        self.calls += 1
        choices = [np.zeros(self.length), np.zeros(self.length + 1),
                   np.zeros((self.length, 2)), np.zeros(self.length, dtype=">f8")]
        if self.calls % 5 == 4:
            raise HostileError("__array__")
        return choices[self.calls % 4]


class ShiftyName(str):
    """A frame name that runs ``action`` whenever it is hashed or compared."""

    def __new__(cls, value, action):
        name = super().__new__(cls, value)
        name.action = action
        return name

    def __hash__(self):
        self.action()
        return str.__hash__(self)

    def __eq__(self, other):
        self.action()
        return str.__eq__(self, other)


def _vectors(dof):
    """Hostile stand-ins for a vector of ``dof`` joint values."""
    return [
        None, "abc", b"abcdefgh" * dof, 1.0, np.float64(1.0), np.zeros(()), np.zeros(0),
        np.zeros(dof + 1), np.zeros((dof, 1)), np.zeros((1, dof)), np.zeros(dof, dtype=object),
        np.array([RaisingNumber()] * dof, dtype=object), [RaisingNumber()] * dof,
        [ChangingNumber()] * dof, np.zeros(dof, dtype=complex), np.zeros(dof, dtype="U3"),
        np.zeros(dof, dtype=[("a", float)]), np.zeros(dof, dtype=np.float16),
        np.zeros(2 * dof)[::2], np.zeros(dof, dtype=">f8"), unaligned(np.zeros(dof)),
        np.full(dof, np.nan), np.full(dof, 1e300), np.zeros(dof, dtype=bool),
        RaisingLength(), ShiftySequence(dof), ShiftyArray(dof), [[0.0]] * dof,
        np.zeros(dof, dtype=np.uint64) - 1, [10 ** 400] * dof, object(), {}]


def unaligned(values):
    """A copy of ``values`` at an odd address (numpy reads it; a C double load may not)."""
    raw = np.empty(values.nbytes + 1, dtype=np.uint8)[1:]
    array = raw.view(values.dtype).reshape(values.shape)
    array[...] = values
    return array


def _wrenches(link):
    """Hostile stand-ins for a ``{link: wrench}`` dict (and a few that are no dict)."""
    good = np.arange(6.0)
    holder = {}

    def clear_holder():
        holder.clear()

    name = ShiftyName(link, clear_holder)
    holder[name] = good.copy()
    return [
        holder, {link: None}, {link: good[:5]}, {link: np.zeros((6, 1))}, {link: "abcdef"},
        {link: [RaisingNumber()] * 6}, {link: [ChangingNumber()] * 6},
        {link: good.astype(">f8")}, {link: unaligned(good)}, {link: np.repeat(good, 2)[::2]},
        {link: good.astype(object)}, {link: [1.0, 2, True, 4.0, 5.0, 2 ** 70]},
        {link: (0.0,) * 6}, {link: [0.0] * 7}, {link: [float("nan")] * 6},
        {"no such link": good}, {1: good}, {None: good}, {(link,): good},
        {ShiftyName(link, lambda: None): good}, [(link, good)], link, 6.0, None,
        {link: ShiftyArray(6)}, {link: ShiftySequence(6)}, {link: RaisingLength()}]


def _constraints(link):
    """Hostile constraint lists for hybrid dynamics, the first ones those that mutate
    themselves while the compiled code reads them (issue 43's segfault)."""
    alpha, beta = np.eye(6)[:, :2].copy(), np.zeros(2)
    cases = []

    def mutating(action):
        constraint = [None, alpha.copy(), beta.copy()]
        outer = [constraint]
        constraint[0] = ShiftyName(link, lambda: action(outer, constraint))
        cases.append(outer)

    mutating(lambda outer, c: c.__setitem__(1, [[0.0] * 2] * 6))        # alpha: a list
    mutating(lambda outer, c: c.__setitem__(1, np.eye(6)))               # alpha: wider
    mutating(lambda outer, c: c.__setitem__(2, None))
    mutating(lambda outer, c: outer.clear())
    mutating(lambda outer, c: outer.extend([[link, np.eye(6), np.zeros(6)]] * 3))
    mutating(lambda outer, c: c.clear())
    cases += [
        [], None, link, [(link,)], [(link, alpha)], [(link, alpha, beta, 1)],
        [("no such link", alpha, beta)], [(1, alpha, beta)], [(None, alpha, beta)],
        [(link, alpha.astype(">f8"), beta)], [(link, alpha, beta.astype(">f8"))],
        [(link, unaligned(alpha), beta)], [(link, alpha, unaligned(beta))],
        [(link, np.asfortranarray(alpha), beta)], [(link, np.repeat(alpha, 2, 1)[:, ::2], beta)],
        [(link, alpha.T, beta)], [(link, np.zeros((6, 0)), np.zeros(0))],
        [(link, np.zeros((6, 7)), np.zeros(7))], [(link, alpha, np.zeros(3))],
        [(link, np.full((6, 2), np.nan), beta)], [(link, alpha, [RaisingNumber()] * 2)],
        [(link, alpha.astype(object), beta)], [(link, ShiftyArray(6), beta)],
        [(link, alpha, beta)] * 200, ((link, alpha, beta),), [[link, alpha, beta]]]
    return cases


def _frames(link):
    return [None, 1, -1, 10 ** 30, "", "no such link", [link], (link,), b"link",
            ShiftyName(link, lambda: None), ShiftyName(link, _raise), RaisingNumber(), object()]


def _raise():
    raise HostileError("name")


class Run:
    """Calls that must not crash, and the ones that misbehaved."""

    def __init__(self):
        self.calls = 0
        self.failures = []

    def call(self, label, function, *arguments):
        """``label``: the call's name and what was replaced, formatted only for a failure."""
        self.calls += 1
        try:
            function(*arguments)
        except SystemError as error:
            self.failures.append(f"{' '.join(repr(part)[:60] for part in label)}: "
                                 f"SystemError {error}")
        except Exception:
            pass


def _replaced(arguments, position, value):
    return arguments[:position] + (value,) + arguments[position + 1:]


# The public calls that take (joint vectors..., frame).
FRAME_MOTION_CALLS = ("frame_twist", "frame_acceleration", "jacobian_time_derivative",
                      "jacobian_derivative_product")


def public_calls(model):
    """(label, function, valid arguments, positions of joint vectors) of every public
    quantity that reaches compiled code."""
    n = model.dof
    q, z = np.linspace(0.1, 0.7, n), np.zeros(n)
    link = model.frame_names[-1]
    wrench = {link: np.arange(6.0)}
    constraint = [(link, np.eye(6)[:, :2].copy(), np.zeros(2))]
    first = model.joint_names[0]
    subgraph = model.subgraph(model.joint_names[: max(1, n - 1)])
    k = subgraph.dof
    zk = np.zeros(k)
    return [
        ("gravity_torques", model.gravity_torques, (q,), (0,)),
        ("bias_torques", model.bias_torques, (q, z), (0, 1)),
        ("inverse_dynamics", model.inverse_dynamics, (q, z, z), (0, 1, 2)),
        ("inverse_dynamics+w", model.inverse_dynamics, (q, z, z, wrench), (0, 1, 2)),
        ("forward_dynamics", model.forward_dynamics, (q, z, z), (0, 1, 2)),
        ("forward_dynamics+w", model.forward_dynamics, (q, z, z, wrench), (0, 1, 2)),
        ("mass_matrix", model.mass_matrix, (q,), (0,)),
        ("frame_pose", model.frame_pose, (q, link), (0,)),
        ("frame_poses", model.frame_poses, (q,), (0,)),
        ("jacobian", model.jacobian, (q, link), (0,)),
        ("center_of_mass", model.center_of_mass, (q,), (0,)),
        ("frame_twist", model.frame_twist, (q, z, link), (0, 1)),
        ("frame_acceleration", model.frame_acceleration, (q, z, z, link), (0, 1, 2)),
        ("jacobian_time_derivative", model.jacobian_time_derivative, (q, z, link), (0, 1)),
        ("jacobian_derivative_product", model.jacobian_derivative_product, (q, z, link),
         (0, 1)),
        ("task_space_inertia", model.task_space_inertia, (q, link), (0,)),
        ("inertial_regressor", model.inertial_regressor, (q, z, z), (0, 1, 2)),
        ("inverse_dynamics_derivatives", model.inverse_dynamics_derivatives, (q, z, z),
         (0, 1, 2)),
        ("inverse_dynamics_derivatives+w", model.inverse_dynamics_derivatives,
         (q, z, z, wrench), (0, 1, 2)),
        ("forward_dynamics_derivatives", model.forward_dynamics_derivatives, (q, z, z),
         (0, 1, 2)),
        ("forward_dynamics_derivatives+w", model.forward_dynamics_derivatives,
         (q, z, z, wrench), (0, 1, 2)),
        ("gravity_derivatives", model.gravity_derivatives, (q,), (0,)),
        ("coriolis_matrix", model.coriolis_matrix, (q, z), (0, 1)),
        ("kinetic_energy", model.kinetic_energy, (q, z), (0, 1)),
        ("potential_energy", model.potential_energy, (q,), (0,)),
        ("mixed_dynamics", model.mixed_dynamics, (q, z, z, z, [first]), (0, 1, 2, 3)),
        ("mixed_dynamics+w", model.mixed_dynamics, (q, z, z, z, [first], wrench),
         (0, 1, 2, 3)),
        ("hybrid_dynamics", model.hybrid_dynamics, (q, z, constraint, z), (0, 1, 3)),
        ("hybrid_dynamics+w", model.hybrid_dynamics, (q, z, constraint, z, wrench),
         (0, 1, 3)),
        ("subgraph.forward_dynamics", subgraph.forward_dynamics, (q, zk, zk), (0, 1, 2)),
        ("subgraph.mass_matrix", subgraph.mass_matrix, (q,), (0,)),
        ("subgraph.hybrid_dynamics", subgraph.hybrid_dynamics, (q, zk, constraint, zk),
         (0, 1, 3)),
        ("subgraph.inverse_dynamics_derivatives", subgraph.inverse_dynamics_derivatives,
         (q, zk, zk), (0, 1, 2)),
    ]


def hostile_public_calls(model, run):
    """Every public quantity with each joint vector, frame, wrench dict and constraint
    list replaced by each hostile object."""
    n = model.dof
    link = model.frame_names[-1]
    for label, function, arguments, positions in public_calls(model):
        run.call((label,), function, *arguments)
        for position in positions:
            for value in _vectors(n if position == 0 or not label.startswith("subgraph")
                                  else len(arguments[1])):
                run.call((label, position, value), function,
                         *_replaced(arguments, position, value))
        if label.endswith("+w"):
            for wrenches in _wrenches(link):
                run.call((label, wrenches), function,
                         *arguments[:-1], wrenches)
        if "hybrid" in label:
            for constraints in _constraints(link):
                run.call((label, constraints), function,
                         *_replaced(arguments, 2, constraints))
        if label in ("frame_pose", "jacobian", "task_space_inertia"):
            for frame in _frames(link):
                run.call((label, frame), function, arguments[0], frame)
        if label in FRAME_MOTION_CALLS:
            for frame in _frames(link):
                run.call((label, frame), function, *arguments[:-1], frame)
    q = np.linspace(0.1, 0.7, n)
    batches = [("gravity_torques_batch", 1), ("inverse_dynamics_batch", 3),
               ("forward_dynamics_batch", 3), ("inverse_dynamics_derivatives_batch", 3),
               ("forward_dynamics_derivatives_batch", 3), ("gravity_derivatives_batch", 1)]
    samples = [np.tile(q, (40, 1)), np.asfortranarray(np.tile(q, (40, 1))),
               np.tile(q, (40, 2))[:, ::2], np.tile(q, (40, 1)).astype(">f8"),
               unaligned(np.tile(q, (40, 1))), np.zeros((0, n)), np.zeros((40, n + 1)),
               np.zeros(n), [[ChangingNumber()] * n] * 3, ShiftyArray(n)]
    for name, inputs in batches:
        function = getattr(model, name)
        for position in range(inputs):
            for value in samples:
                arguments = [np.tile(q, (40, 1))] * inputs
                arguments[position] = value
                run.call((name, position, value), function, *arguments)
    for prescribed in ([ShiftyName(model.joint_names[0], _raise)], [None], "no such joint",
                       [RaisingNumber()], ShiftySequence(2)):
        run.call(("mixed_dynamics", prescribed), model.mixed_dynamics, q, q, q, q, prescribed)


def hostile_module_calls(model, run):
    """The generic module's functions called directly, each argument in turn replaced
    by each hostile object (the functions take raw arrays and answer a status)."""
    compiled, params = model.generic_kernels()
    if compiled is None:
        return
    module, capsule = compiled.module, compiled.model
    n, link = model.dof, model.frame_names[-1]
    q, z, wrench = np.linspace(0.1, 0.7, n), np.zeros(n), {link: np.arange(6.0)}
    constraint = [(link, np.eye(6)[:, :2].copy(), np.zeros(2))]
    frame = compiled.frame_index[link]
    Q = np.tile(q, (40, 1))
    # [position, unit quaternion, joints] of at least the free joint's 7
    floating_q, floating_base = np.zeros(max(n, 6) + 1), np.array([0.0, 0.0, -9.81, 0.99, 1.01])
    floating_q[6], floating_v = 1.0, np.zeros(max(n, 6))
    signatures = {
        "gravity_torques": (q,), "bias_torques": (q, z), "inverse_dynamics": (q, z, z),
        "inverse_dynamics_wrenches": (q, z, z, wrench), "forward_dynamics": (q, z, z),
        "forward_dynamics_wrenches": (q, z, z, wrench), "torques_with_wrenches": (q, z, wrench),
        "mixed_dynamics": (q, z, z, z, np.ones(n)),
        "mixed_dynamics_wrenches": (q, z, z, z, np.ones(n), wrench),
        "mass_matrix": (q,), "jacobian": (frame, q), "frame_poses": (-1, q),
        "frame_twist": (frame, q, z), "frame_acceleration": (frame, q, z, z),
        "jacobian_time_derivative": (frame, q, z), "jacobian_derivative_product": (frame, q, z),
        "inertial_regressor": (q, z, z),
        "task_space_inertia": (np.array([float(frame)]), 0, 6, q, 0.0, True),
        "hybrid_dynamics": (q, z, z, constraint),
        "hybrid_dynamics_wrenches": (q, z, z, constraint, wrench),
        "inverse_dynamics_derivatives": (q, z, z),
        "inverse_dynamics_derivatives_wrenches": (q, z, z, wrench),
        "forward_dynamics_derivatives": (q, z, z),
        "forward_dynamics_derivatives_wrenches": (q, z, z, wrench),
        "gravity_derivatives": (q,), "gravity_torques_batch": (Q,),
        "inverse_dynamics_batch": (Q, Q, Q), "forward_dynamics_batch": (Q, Q, Q),
        "inverse_dynamics_derivatives_batch": (Q, Q, Q),
        "forward_dynamics_derivatives_batch": (Q, Q, Q), "gravity_derivatives_batch": (Q,),
        "coriolis_matrix": (q, z), "kinetic_energy": (q, z), "potential_energy": (q,),
        # a floating-base model's (these models are fixed-base: wrong numbers, same reads)
        "floating_centroidal_momentum_matrix": (floating_q, floating_base)}
    others = ([capsule, params, frame, -1, 2 ** 40, 10 ** 30, -10 ** 30, True, 0.5,
               np.array([1e300]), np.array([-1.0]), np.array([np.nan]), np.zeros((2, 2)),
               np.zeros(0), RaisingNumber()]
              + _vectors(n) + _wrenches(link) + _constraints(link))
    calls = {name: (capsule, *arguments, params) for name, arguments in signatures.items()}
    # (no model: the lengths are q's)
    calls["floating_inputs"] = (floating_q, floating_v, floating_v, floating_base)
    for name, full in calls.items():
        function = getattr(module, name)
        run.call((name,), function, *full)
        run.call((name, "too few"), function, *full[:-1])
        run.call((name, "too many"), function, *full, params)
        for position, value in itertools.product(range(len(full)), others):
            run.call((name, position, value), function,
                     *_replaced(full, position, value))


def models(asan_module=None):
    from soa_dynamics_ros import RobotModel, kernels
    from support.robot_generator import random_tree_urdf
    if asan_module is not None:
        path, name = asan_module
        from soa_dynamics_ros.kernels import build
        module = build.load(name, path)
        kernels.generic_module = lambda: module
    return [RobotModel.from_urdf(str(REPO / "urdf" / "panda.urdf"), kernels="generic"),
            RobotModel.from_urdf(random_tree_urdf(22, moving_joints=8, mimic_fraction=0.3),
                                 kernels="generic")]


def main(argv):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    asan_module = (argv[2], argv[3]) if len(argv) > 3 and argv[1] == "--asan-module" else None
    warnings.simplefilter("ignore")
    run = Run()
    for model in models(asan_module):
        assert model.kernels[1] == "c", model.kernels
        hostile_public_calls(model, run)
        hostile_module_calls(model, run)
    print(f"calls {run.calls}")
    for failure in run.failures[:50]:
        print(failure)
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
