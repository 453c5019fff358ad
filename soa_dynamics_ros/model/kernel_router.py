"""The kernel router: which compiled function answers each of a RobotModel's calls.

Compiled kernels (:mod:`soa_dynamics_ros.kernels`) are two more implementations of
the same recursions in C, built with the system C compiler: the *generic* module,
compiled once per machine for every robot, answers gravity, bias, inverse, forward,
mixed and hybrid dynamics (wrenches included), mass matrix, Jacobians, frame poses,
frame twists and classical accelerations, Jacobian time derivatives, the inertial
regressor, centre of mass, batches, the task-space compliance ``J M^-1 J^T`` of any
frames and parts, and the same for subgraphs, and the Coriolis matrix and the energies,
from a model's first call; *per-robot* straight-line kernels (gravity, bias, inverse and
forward dynamics without wrenches, mass matrix, one frame's Jacobian and task-space
inertia) replace it where they exist
once compiled.  ``kernels=`` picks: ``"auto"`` (default) uses the generic module when
a compiler is there and compiles a per-robot kernel in a background thread once it
has been asked for :data:`AUTO_COMPILE_AFTER` times (``model.kernels.prepare()``
compiles them at once); ``"c"`` compiles per-robot kernels at first use, in the
caller; ``"generic"`` uses the generic module only; ``"off"`` keeps the numpy path
only.  The environment variable ``SOA_DYNAMICS_KERNELS`` (one of those modes)
replaces what ``"auto"`` means for a whole process.  Task-space inertia (one frame's
full Lambda without options: the per-robot kernel when ready) and hybrid dynamics
decide the rank of the compliance in the generic module by the numpy path's rule,
dense where mimic joints couple hinges; the numpy path decides it where an eigenvalue
lies within round-off of the threshold, and raises for a singular task-space inertia
without damping.

One :class:`KernelRouter` per model (``model.kernels``) holds the kernel mode, the
generic module's functions bound to the model's compiled tree, the per-robot
kernels as they become ready (compiled at once, in the caller, or in one background
thread after :data:`AUTO_COMPILE_AFTER` requests), the functions bound per frame and
per wrenched link set, and the stand-ins (:meth:`KernelRouter._pending`) that ask
for a kernel until it is there.  The model's methods call what the router publishes
on the model (:meth:`RobotModel._use_router`: ``_fast``, ``_wrenched``, the per-frame
dicts) inline, so a warm call pays no Python call of the router's; what compiled
code declines goes back to the model's numpy path.
"""
import logging
import os
import queue
import threading
import types

import numpy as np

from ..errors import InvalidInputError
from ..kernels.generator import (DERIVATIVE_KERNELS, MAX_WRENCHED_LINKS,
                                 WRENCHED_DERIVATIVE_KERNELS, WRENCHED_KERNELS)
from . import derivatives

KERNEL_MODES = ("auto", "off", "c", "generic")
# Kernels the single-call methods reach through RobotModel._fast: a robot's own once
# ready, the generic module's meanwhile.
FAST_KERNELS = ("gravity_torques", "bias_torques", "inverse_dynamics", "mass_matrix",
                "forward_dynamics") + DERIVATIVE_KERNELS
# Generic functions the single-call methods with wrenches reach through RobotModel._fast.
FAST_WRENCHED = ("inverse_dynamics_wrenches", "forward_dynamics_wrenches")
# ... and the other derivatives, where a helper's Python call is a sizeable share of the call,
# and the quantities only the generic module computes, where it is a third of an energy's.
FAST_GENERIC = FAST_WRENCHED + (
    "inverse_dynamics_derivatives_wrenches", "forward_dynamics_derivatives_wrenches",
    "coriolis_matrix", "kinetic_energy", "potential_energy")
# What prepare_kernels(derivatives=False) (a node's start-up) leaves to the generic module
# for good: the derivative kernels and their batch versions (in the same modules).
_DERIVATIVES_AND_BATCHES = DERIVATIVE_KERNELS + tuple(name + "_batch"
                                                      for name in DERIVATIVE_KERNELS)
# Functions of the generic module a model binds to its compiled tree at once.
GENERIC_FUNCTIONS = tuple(dict.fromkeys(FAST_KERNELS + FAST_WRENCHED + (
    "mixed_dynamics", "torques_with_wrenches",
    "mixed_dynamics_wrenches", "gravity_torques_batch",
    "inverse_dynamics_batch", "forward_dynamics_batch", "inertial_regressor") + FAST_GENERIC
    + derivatives.COMPILED_FUNCTIONS))
# The generic module's function behind each per-frame kernel frame_pose and jacobian call.
_GENERIC_FRAME_FUNCTIONS = {"frame_pose": "frame_poses", "jacobian": "jacobian"}
# Per-frame calls only the generic module answers (no per-robot kernel), in the order
# the model takes their dicts (RobotModel._use_router).
FRAME_MOTION_FUNCTIONS = ("frame_twist", "frame_acceleration", "jacobian_time_derivative",
                          "jacobian_derivative_product")
# kernels="auto": a kernel is compiled (in the background) once this many
# calls (or batch samples) asked for it: a model used a few times never pays
# for tracing and compiling; a controller at 1 kHz gets its kernel after ~2 s.
AUTO_COMPILE_AFTER = 2000
# Overrides what kernels="auto" means for the whole process (e.g. "off" or "c").
KERNELS_ENV = "SOA_DYNAMICS_KERNELS"
_logger = logging.getLogger("soa_dynamics_ros.kernels")
_NDARRAY = np.ndarray
_jobs = None
_jobs_lock = threading.Lock()


def _compile_in_background(job):
    """Queue ``job`` for the one daemon compile thread (a process may exit mid-compile)."""
    global _jobs
    with _jobs_lock:
        if _jobs is None:
            _jobs = queue.Queue()

            def worker():
                while True:
                    _jobs.get()()
            threading.Thread(target=worker, name="soa-kernels", daemon=True).start()
    _jobs.put(job)


def _forward_at_wrench_torques(forward, torques_with_wrenches):
    """Forward dynamics with wrenches as ``forward`` (the robot's own kernel, no wrenches)
    at tau + G^T sum J^T w: qdd is linear in tau.  It answers until the robot's wrenched
    kernel for those links is ready, or for good above that kernel's trace cap.  The
    generic module's own wrenched pass ran slower everywhere: for mimic robots it forms M
    by a general composite-body pass, and over the cap its articulated-body pass costs
    about twice this (docs/performance.md, "Design measurements").  What the generic function declines
    (its status: _wrenched_fallback converts, or the numpy path names the problem) goes
    back."""
    def forward_dynamics_wrenches(q, qd, tau, wrenches, params):
        torques = torques_with_wrenches(q, tau, wrenches, params)
        if type(torques) is not _NDARRAY:
            return torques
        return forward(q, qd, torques, params)
    return forward_dynamics_wrenches


def _no_kernel(*arguments):
    """Stands in for a generic function where there is no generic module: the status
    None, which sends _fallback to the numpy path."""
    return None


class KernelControls(tuple):
    """``model.kernels``: the kernel mode and backend in use, ``(mode, backend or None)``
    as when it was read (a tuple, as it always was), and the model's kernel management;
    ``parameters``: the model's packed inertias and gravity (``p``) as when it was read."""

    def __new__(cls, router, parameters):
        controls = super().__new__(cls, router.state)
        controls.router = router
        controls.parameters = parameters
        return controls

    @property
    def mode(self):
        """``"auto"``, ``"off"``, ``"c"`` or ``"generic"`` (the environment's for "auto")."""
        return self[0]

    @property
    def backend(self):
        """The compiler backend in use, or None (the numpy path only)."""
        return self[1]

    def set_mode(self, mode):
        """Switch the kernel backend: ``"auto"``, ``"off"``, ``"c"`` or ``"generic"``."""
        self.router.set_mode(mode)

    def prepare(self, frames=(), derivatives=True, wrenches=True):
        """See :meth:`KernelRouter.prepare`."""
        return self.router.prepare(frames, derivatives, wrenches)

    def cached(self, frames=(), derivatives=True, wrenches=True):
        """See :meth:`KernelRouter.cached`."""
        return self.router.cached(frames, derivatives, wrenches)

    @property
    def routes(self):
        """See :attr:`KernelRouter.routes`."""
        return self.router.routes


class KernelRouter:
    """Kernel dispatch of one :class:`~soa_dynamics_ros.model.RobotModel` (``model.kernels``
    is its :class:`KernelControls`)."""

    def __init__(self, tree, mode, on_change):
        """``tree``: the parsed robot; ``on_change(dispatch)`` takes what the model's
        methods call inline, after each :meth:`set_mode`."""
        self._tree = tree
        self._on_change = on_change
        self._compiled = None
        self.set_mode(mode)

    def set_mode(self, mode):
        """Switch the kernel backend: ``"auto"``, ``"off"``, ``"c"`` or ``"generic"``."""
        from .. import kernels as kernel_module
        if mode not in KERNEL_MODES:
            raise InvalidInputError(f"kernels must be one of {KERNEL_MODES}, not {mode!r}")
        if mode == "auto" and os.environ.get(KERNELS_ENV, "auto") in KERNEL_MODES:
            mode = os.environ.get(KERNELS_ENV, "auto")
        backend = kernel_module.default_backend() if mode == "auto" else (
            None if mode in ("off", "generic") else mode)
        generic = mode != "off" and (mode != "auto" or backend is not None)
        if self._tree.dof == 0:
            # Nothing moves: every answer is empty and the numpy path gives its shape.
            backend, generic = None, False
        self._kernel_mode = mode
        self._kernel_set = None if backend is None else kernel_module.Kernels(
            self._tree, backend, self._tree.name)
        # The generic model of the parsed tree is kept across switches ("c" to
        # "generic" when the robot's kernels are not cached): building it again costs
        # a large tree's tables a second time.
        built, self._compiled = self._compiled, None
        if generic and built is not None:
            self._compiled = built
        elif generic:
            try:
                self._compiled = kernel_module.compiled_tree(self._tree)
            except Exception:
                if mode == "generic":
                    raise
                _logger.exception("the generic kernels failed to build; using numpy")
        self._generic = {} if self._compiled is None else {
            name: self._compiled.function(name) for name in GENERIC_FUNCTIONS}
        # frame -> what frame_pose and jacobian call (_bind_frame): one dict per kernel,
        # looked up inline (a 1 kHz controller calls them every cycle)
        self._bound_poses, self._bound_jacobians = {}, {}
        self._bound = {"frame_pose": self._bound_poses, "jacobian": self._bound_jacobians,
                       **{name: {} for name in FRAME_MOTION_FUNCTIONS}}
        self._ready = {}           # kernel or (kernel, frame) -> callable once usable
        self._generic_only = ()    # kernels never compiled (prepare_kernels)
        self._requests = {}        # auto mode: how often each kernel was asked for
        # Per wrenched kernel, what answered the last wrenched call for good (_wrenched_call),
        # called first: the robot's kernel of one link set, which declines any other
        # links, or the generic function where no kernel of the robot's will come.  A
        # lookup by the first link (next(iter()), dict.get) was a sixth of a warm
        # wrenched call's instructions; it stays behind, for calls alternating link sets.
        self._wrenched = types.SimpleNamespace(**dict.fromkeys(WRENCHED_KERNELS, _no_kernel))
        self._last_wrenched = {name: {} for name in WRENCHED_KERNELS}
        # The single-call model kernels as attributes, the cheapest lookup there
        # is: the generic function, or a stand-in until a per-robot kernel is
        # ready (see _pending); the FAST_GENERIC functions, _no_kernel without a
        # generic module.
        self._fast = types.SimpleNamespace(**{
            name: self._generic[name] if self._kernel_set is None and self._generic
            else self._pending(name) for name in FAST_KERNELS}, **{
            name: self._generic.get(name, _no_kernel) for name in FAST_GENERIC})
        self._on_change(types.SimpleNamespace(
            kernel_set=self._kernel_set, compiled=self._compiled, generic=self._generic,
            fast=self._fast, wrenched=self._wrenched,
            bound_poses=self._bound_poses, bound_jacobians=self._bound_jacobians,
            bound_frame_motion=tuple(self._bound[name] for name in FRAME_MOTION_FUNCTIONS),
            kernel=self._kernel,
            bind_frame=self._bind_frame, wrenched_call=self._wrenched_call))

    @property
    def routes(self):
        """For diagnostics and tests, read-only live views of what answers each call:
        ``ready`` (kernel, or ``(kernel, frame or links)`` -> the robot's own function,
        None where it has none for good), ``requests`` (auto mode: how often each was
        asked for), ``generic`` (the generic module's functions), ``single`` (what each
        single call tries first), ``wrenched`` (what answered the last wrenched call for
        good) and ``last_wrenched`` (per wrenched kernel, first link -> the robot's
        kernel last used), ``frame_pose`` and ``jacobian`` (frame -> what they call),
        ``kernel_set`` (the :class:`~soa_dynamics_ros.kernels.Kernels`, or None)."""
        view = types.MappingProxyType
        return types.SimpleNamespace(
            ready=view(self._ready), requests=view(self._requests), generic=view(self._generic),
            single=view(vars(self._fast)), wrenched=view(vars(self._wrenched)),
            last_wrenched=view({name: view(links) for name, links
                                in self._last_wrenched.items()}),
            frame_pose=view(self._bound_poses), jacobian=view(self._bound_jacobians),
            kernel_set=self._kernel_set)

    @property
    def state(self):
        """The kernel mode and backend in use: ``(mode, backend or None)``."""
        if self._kernel_set is not None:
            return self._kernel_mode, self._kernel_set.backend
        return self._kernel_mode, None if self._compiled is None else "c"

    def prepare(self, frames=(), derivatives=True, wrenches=True):
        """Compile (or load from the on-disk cache) every kernel now; seconds per kernel module.

        ``frames``: the links whose pose, Jacobian and task-space inertia are asked for,
        and wrenches applied to (each alone and, two to four of them, all at once: inverse
        and forward dynamics, and the inverse dynamics derivatives).  A ROS
        node calls this at start-up so that no control cycle pays for it, with
        ``derivatives=False, wrenches=False``: the derivative and wrenched kernels
        are then neither compiled now nor later, and the generic module answers them
        (in a node their compile would run beside the 1 kHz feedforward, and a
        service round trip hides their speed).
        """
        if self._kernel_set is None:
            return {}
        self._generic_only = (
            () if derivatives else _DERIVATIVES_AND_BATCHES + WRENCHED_DERIVATIVE_KERNELS) + (
            () if wrenches else WRENCHED_KERNELS)
        for frame in frames:
            self._tree.frame(frame)
        for (name, frame), function in self._kernel_set.prepare(frames, derivatives,
                                                                wrenches).items():
            self._set_ready(name if frame is None else (name, frame), function)
        return dict(self._kernel_set.compile_seconds)

    def cached(self, frames=(), derivatives=True, wrenches=True):
        """True when :meth:`prepare` would load every kernel from the disk cache
        (the generic module included: ``set_mode("c")`` then compiles nothing)."""
        from .. import kernels as kernel_module
        if self._kernel_set is None:
            return True
        return kernel_module.generic_cached() and self._kernel_set.cached(frames, derivatives,
                                                                          wrenches)

    def batch_kernel(self, name, count):
        """Batch kernel ``name`` for ``count`` samples: the robot's own once ready (each
        sample counts as a call towards compiling it in auto mode), else the generic
        module's, else None (the per-sample loop)."""
        kernel = None if self._kernel_set is None else self._kernel(name, weight=max(count, 1))
        return kernel or self._generic.get(name)

    def _set_ready(self, key, function):
        """Kernel ``key`` is built (``function``) or known not to exist (None)."""
        self._ready[key] = function
        # What answered wrenched calls for good may not any more (a generic function
        # when its kernel comes, or one that _fast no longer holds).
        vars(self._wrenched).update(dict.fromkeys(WRENCHED_KERNELS, _no_kernel))
        if key in FAST_KERNELS:
            # with no kernel of its own (a derivative kernel above the size cap) the
            # generic function answers for good, without _pending's asking
            setattr(self._fast, key, function or self._generic.get(key, _no_kernel))
            if key == "forward_dynamics" and function is not None and self._generic:
                # what no wrenched kernel of its own answers (none yet, none for these
                # links, or none for good: over the trace cap)
                self._fast.forward_dynamics_wrenches = _forward_at_wrench_torques(
                    function, self._generic["torques_with_wrenches"])
        elif function is not None and type(key) is tuple and key[0] in self._bound:
            self._bound[key[0]][key[1]] = function

    def _pending(self, name, frame=None, generic=None):
        """Stands in for per-robot kernel ``name`` (of ``frame``) until it is ready: the
        generic function (``generic``, or the module's ``name``) meanwhile, or None (no
        generic module), which sends callers to the numpy path."""
        generic = generic or self._generic.get(name)

        def pending(*arguments):
            kernel = self._kernel(name, frame) or generic
            return None if kernel is None else kernel(*arguments)
        return pending

    def _kernel(self, name, frame=None, weight=1):
        """The ready kernel, or None (numpy path) while it is not (yet) available."""
        key = name if frame is None else (name, frame)
        function = self._ready.get(key)
        if function is not None or self._kernel_set is None or name in self._generic_only:
            return function
        if self._kernel_mode != "auto":
            function = self._kernel_set.get(name, frame)
            self._set_ready(key, function)
            return function
        count = self._requests.get(key, 0)
        self._requests[key] = count + weight
        if count < AUTO_COMPILE_AFTER <= count + weight:
            kernel_set = self._kernel_set

            def build():
                try:
                    function = kernel_set.get(name, frame)
                except Exception:  # pragma: no cover - the numpy path keeps answering
                    _logger.exception("kernel %s for %s failed to build; using numpy", name,
                                      self._tree.name)
                    return
                if kernel_set is self._kernel_set:
                    self._set_ready(key, function)
            _compile_in_background(build)
        return None

    def _wrenched_call(self, name, vectors, wrenches, params):
        """A wrenched call the function last used (self._wrenched) did not answer: the
        answer of the robot's kernel last used for the first link, else of its own kernel
        ``name`` for exactly these links (up to MAX_WRENCHED_LINKS), else of the generic
        function, which declines unknown links (the numpy path names them) as its status.
        What answers for good is called first from then on."""
        links = tuple(wrenches) if type(wrenches) is dict else ()
        if links:
            kernel = self._last_wrenched[name].get(links[0])
            answer = None if kernel is None else kernel(*vectors, wrenches, params)
            if type(answer) in (_NDARRAY, tuple):
                setattr(self._wrenched, name, kernel)
                return answer
        final = self._kernel_set is None or name in self._generic_only
        if (links and not final and len(links) <= MAX_WRENCHED_LINKS
                and all(type(link) is str and link in self._tree.frames for link in links)):
            key = tuple(sorted(links))
            kernel = self._kernel(name, key)
            if kernel is not None:
                answer = kernel(*vectors, wrenches, params)
                if type(answer) in (_NDARRAY, tuple):
                    self._last_wrenched[name][links[0]] = kernel
                    setattr(self._wrenched, name, kernel)
                    return answer
            # Without a kernel for good (over the size cap, which is the kernel's, not the
            # links'), no link set has one: the generic function answers from then on
            # (asking for the kernel each time would cost as much as the answer).
            final = kernel is None and (name, key) in self._ready
        generic = getattr(self._fast, name)
        answer = generic(*vectors, wrenches, params)
        if final and type(answer) in (_NDARRAY, tuple):
            setattr(self._wrenched, name, generic)
        return answer

    def _bind_frame(self, kernel, frame):
        """What frame_pose, jacobian or a FRAME_MOTION_FUNCTIONS call (``kernel``) calls for
        ``frame``, kept in its dict: the robot's own kernel once ready, meanwhile the
        generic function bound to the frame through a stand-in that asks for the kernel
        (_pending); the generic function alone where no robot kernel exists; None for
        what is not a known frame's name, or without compiled code."""
        compiled = self._compiled
        if type(frame) is not str or frame not in self._tree.frames:
            return None
        bound = self._bound[kernel]
        generic = None if compiled is None else compiled.function(
            _GENERIC_FRAME_FUNCTIONS.get(kernel, kernel), compiled.frame_index[frame])
        if self._kernel_set is None or kernel in FRAME_MOTION_FUNCTIONS:
            if generic is not None:
                bound[frame] = generic
            return generic
        own = self._kernel(kernel, frame)
        if own is not None:
            return own
        function = bound[frame] = self._pending(kernel, frame, generic)
        return function
