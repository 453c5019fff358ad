"""The node's ten services: each request unpacked (conversions), answered by the live model.

Every service answers: ``success=false`` with a message naming the problem
for any bad request, and a model error never escapes into the executor.  A
new service is a handler method here plus its line in :data:`SERVICES`.
"""
import time
import traceback
import warnings

import numpy as np

from . import conversions
from .throttled_log import MAX_LOG_TEXT
from .. import plant
from ..errors import InvalidInputError, JointLimitWarning, SoaDynamicsError, clipped, shown
from ..model.floating_base import BASE_VELOCITY_NAMES
from ..srv import (DynamicsDerivatives, EvaluateTrajectory, ForwardDynamics, GravityTorques,
                   HybridDynamics, IdentifyPayload, InverseDynamics, MassMatrix, MixedDynamics,
                   SetPayload, TaskSpaceInertia)

# Service name -> type; each is answered by the ModelServices method of the same name.
SERVICES = {
    "gravity_torques": GravityTorques,
    "inverse_dynamics": InverseDynamics,
    "forward_dynamics": ForwardDynamics,
    "mass_matrix": MassMatrix,
    "task_space_inertia": TaskSpaceInertia,
    "hybrid_dynamics": HybridDynamics,
    "mixed_dynamics": MixedDynamics,
    "set_payload": SetPayload,
    "evaluate_trajectory": EvaluateTrajectory,
    "identify_payload": IdentifyPayload,
    "dynamics_derivatives": DynamicsDerivatives,
}

# ~/dynamics_derivatives: each kind and the request fields it reads besides the state.
DERIVATIVE_KINDS = {
    "inverse": {"acceleration", "wrenches"},
    "forward": {"effort", "wrenches"},
    "gravity": set(),
}


# A reply's message is cut to this many characters: it can quote the request.
MAX_REPLY_TEXT = 2000


class ModelNotReady(SoaDynamicsError):
    """A request arrived before any robot description was loaded."""


class ModelServices:
    """The service handlers of a node serving ``host.live`` (an embedded.ModelHost)."""

    def __init__(self, host, statistics, logger):
        self.host = host
        self.statistics = statistics        # diagnostics.Statistics: services answered
        self.logger = logger

    def callbacks(self):
        """{service name: (type, callback)} for every service (served by ros.request_gate)."""
        return {name: (service_type, self._guarded(name, getattr(self, name)))
                for name, service_type in SERVICES.items()}

    def _guarded(self, name, handler):
        def callback(request, response):
            started = time.perf_counter()
            try:
                if self.host.live is None:
                    raise ModelNotReady("no robot model loaded yet (robot_description, urdf_file "
                                        "or the /robot_description topic)")
                handler(request, response)
                response.success = True
            except SoaDynamicsError as error:
                response.success = False
                response.message = clipped(str(error), MAX_REPLY_TEXT)
            except Exception as error:  # noqa: BLE001 - a service must answer, not crash the node
                self.logger.error(clipped(f"~/{name} failed unexpectedly: {error}\n"
                                          f"{traceback.format_exc()}", MAX_LOG_TEXT))
                response.success = False
                response.message = clipped(f"internal error: {type(error).__name__}: {error}",
                                           MAX_REPLY_TEXT)
            self.statistics.services += 1
            self.statistics.service_time += time.perf_counter() - started
            return response
        return callback

    # ------------------------------------------------------------------ request unpacking
    @property
    def live(self):
        return self.host.live

    def _joint_names(self, what, names):
        """A request's joint-name list, no longer than the model's (every name once at most)."""
        return list(conversions.bounded(what, names, self.live.model.dof))

    def _request_state(self, request):
        """(q, v, where state.name's entries go in v) of a request: the joints its state
        names over the measured ones, after a floating base's pose and twist (the
        request's base_pose and base_twist, else the measured ones)."""
        state = request.state
        self._joint_names("state.name", state.name)
        names, positions, velocities = conversions.joint_state_arrays(state)
        q, qd = self.live.model_state(*self.live.merged_state(names, positions, velocities),
                                      *conversions.request_base(request))
        return q, qd, self.live.order_of(names) + self._base_entries

    @property
    def _base_entries(self):
        """How many entries a floating base puts before the joints' in v and the answers."""
        return len(BASE_VELOCITY_NAMES) if self.live.floating_base else 0

    @property
    def _answer_names(self):
        """The names of an answer's entries: a floating base's six (zero in the requests'
        accelerations and efforts), then the joints."""
        return list(BASE_VELOCITY_NAMES[:self._base_entries]) + self.live.model.joint_names

    def _in_model_order(self, values, order, what):
        """A request vector given in state.name order, as a full model-order vector."""
        full = np.zeros(self.live.model.dof)
        full[order] = conversions.vector_in_order(values, len(order), what)
        return full

    # ------------------------------------------------------------------ handlers
    def gravity_torques(self, request, response):
        q, _, _ = self._request_state(request)
        response.name = self._answer_names
        response.effort = self.live.model.gravity_torques(q).tolist()

    def inverse_dynamics(self, request, response):
        q, qd, order = self._request_state(request)
        qdd = self._in_model_order(request.acceleration, order, "acceleration")
        wrenches = conversions.wrenches_from_messages(request.wrenches)
        response.name = self._answer_names
        response.effort = self.live.model.inverse_dynamics(q, qd, qdd, wrenches).tolist()

    def forward_dynamics(self, request, response):
        q, qd, order = self._request_state(request)
        tau = self._in_model_order(request.effort, order, "effort")
        wrenches = conversions.wrenches_from_messages(request.wrenches)
        response.name = self._answer_names
        response.acceleration = self.live.model.forward_dynamics(q, qd, tau, wrenches).tolist()

    def mass_matrix(self, request, response):
        """M(q), and C(q, qd) with the energies where the model has them."""
        q, qd, _ = self._request_state(request)
        model = self.live.model
        response.name = self._answer_names
        response.mass_matrix = model.mass_matrix(q).ravel().tolist()
        if self.live.floating_base:
            response.message = ("coriolis, kinetic_energy and potential_energy are not "
                                "available on floating-base robots yet")
            return
        response.coriolis = conversions.row_major(model.coriolis_matrix(q, qd))
        response.kinetic_energy = model.kinetic_energy(q, qd)
        response.potential_energy = model.potential_energy(q)

    def task_space_inertia(self, request, response):
        q, _, _ = self._request_state(request)
        model = self.live.model
        joints = self._joint_names("joints", request.joints)
        target = model.subgraph(joints) if joints else model
        info = target.task_space_inertia_info(q, request.frame, damping=request.damping or None)
        response.name = target.joint_names
        response.inertia = info.inertia.ravel()
        response.inertia_inverse = info.inertia_inverse.ravel()
        response.condition_number = info.condition_number
        response.rank = info.rank

    def hybrid_dynamics(self, request, response):
        q, qd, order = self._request_state(request)
        tau = self._in_model_order(request.feedforward_torque, order, "feedforward_torque")
        result = self.live.model.hybrid_dynamics(
            q, qd, conversions.constraints_from_messages(request.constraints), tau,
            conversions.wrenches_from_messages(request.wrenches))
        response.name = result.joint_names
        response.acceleration = result.qdd.tolist()
        response.constraint_torque = result.constraint_torques.tolist()
        response.constraint_force_magnitude = result.nu.tolist()
        response.rank = result.rank
        if result.dropped_directions.shape[1]:
            response.message = (f"{result.dropped_directions.shape[1]} redundant or singular "
                                "constraint direction(s) dropped")

    def mixed_dynamics(self, request, response):
        q, qd, order = self._request_state(request)
        qdd = self._in_model_order(request.acceleration, order, "acceleration")
        tau = self._in_model_order(request.effort, order, "effort")
        prescribed = self._joint_names("prescribed", request.prescribed)
        qdd_all, tau_all = self.live.model.mixed_dynamics(q, qd, qdd, tau, prescribed)
        response.name = self._answer_names
        response.acceleration = qdd_all.tolist()
        response.effort = tau_all.tolist()

    def dynamics_derivatives(self, request, response):
        """The derivatives of ID, FD or gravity at the request's state, n x n row-major."""
        kind = request.kind
        if kind not in DERIVATIVE_KINDS:
            raise InvalidInputError(f"kind {kind[:64]!r} unknown: expected one of "
                                    f"{', '.join(map(repr, DERIVATIVE_KINDS))}")
        # A field the kind does not read is refused, not ignored: it is a client's mistake
        # (e.g. efforts sent for the inverse derivatives, which take accelerations).
        for field in sorted({"acceleration", "effort", "wrenches"} - DERIVATIVE_KINDS[kind]):
            if len(getattr(request, field)):
                raise InvalidInputError(f"kind {kind!r} takes no {field}")
        q, qd, order = self._request_state(request)
        model = self.live.model
        if kind == "gravity":
            matrices = {"dg_dq": model.gravity_derivatives(q)}
        else:
            wrenches = conversions.wrenches_from_messages(request.wrenches)
            if kind == "inverse":
                qdd = self._in_model_order(request.acceleration, order, "acceleration")
                matrices = dict(zip(("dtau_dq", "dtau_dqd"),
                                    model.inverse_dynamics_derivatives(q, qd, qdd, wrenches)))
            else:
                tau = self._in_model_order(request.effort, order, "effort")
                matrices = dict(zip(("dqdd_dq", "dqdd_dqd", "dqdd_dtau"),
                                    model.forward_dynamics_derivatives(q, qd, tau, wrenches)))
        response.name = self._answer_names
        response.size = model.dof
        for field, matrix in matrices.items():
            setattr(response, field, conversions.row_major(matrix))

    def set_payload(self, request, response):
        model = self.live.model
        if request.detach:
            model.detach_payload(request.payload.name)
            self.logger.info(f"payload {shown(request.payload.name)} detached")
        else:
            attached = len(model.payloads)
            if request.payload.name not in model.payloads and attached >= conversions.MAX_PAYLOADS:
                raise InvalidInputError(
                    f"payload {shown(request.payload.name)}: {attached} payloads attached already, "
                    f"at most {conversions.MAX_PAYLOADS}; detach one first")
            payload = conversions.payload_from_message(request.payload)
            model.attach_payload(**payload)
            self.logger.info(f"payload {payload['name']!r} ({payload['mass']} kg) attached to "
                             f"{payload['link']!r}")
        response.payloads = list(model.payloads)

    def evaluate_trajectory(self, request, response):
        """Torques along a JointTrajectory (plant.torques); joints it omits hold their synced position."""
        model, live = self.live.model, self.live
        trajectory = request.trajectory
        points = conversions.bounded_trajectory_points(trajectory.points,
                                                       model.kernels[1] is not None)
        if not points:
            raise InvalidInputError("the trajectory has no points")
        names = self._joint_names("trajectory.joint_names", trajectory.joint_names)
        payloads = [conversions.payload_from_message(payload) for payload in conversions.bounded(
            "payloads", request.payloads, conversions.MAX_REQUEST_PAYLOADS)]
        payload_names = [payload["name"] for payload in payloads]
        if "" in payload_names or len(set(payload_names)) != len(payload_names):
            raise InvalidInputError(f"request payloads need distinct, non-empty names: "
                                    f"{payload_names}")
        time_from_start, given, velocities, accelerations = conversions.trajectory_arrays(
            points, len(names))
        held = [name for name in model.joint_names if name not in names]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", JointLimitWarning)
            path = live.joint_path(names, time_from_start, given, velocities, accelerations,
                                   check_limits=True)
        added = []
        try:
            # Attached for this evaluation only, under names no attached
            # payload has, so that persistent payloads are never replaced.
            for payload in payloads:
                name = f"evaluate_trajectory/{payload['name']}"
                while name in model.payloads:
                    name += "'"
                model.attach_payload(**{**payload, "name": name})
                added.append(name)
            report = plant.torque_report(model, path, plant.path_torques(model, path))
        finally:
            for name in added:
                model.detach_payload(name)
        response.name = report.joint_names
        response.points = len(path)
        response.effort = report.torques.ravel().tolist()
        response.peak_effort = report.peak.tolist()
        response.limit_ratio = report.ratio.tolist()
        response.within_limits = not report.violated
        first = report.first_violation
        response.first_violation_time = float(first[0]) if first else -1.0
        notes = [f"{name!r} not in the trajectory: held at its synced position" for name in held[:3]]
        notes += [str(w.message) for w in caught]
        if first:
            notes.insert(0, f"{first[1]!r} exceeds its effort limit at t={first[0]:g} s")
        response.message = "; ".join(notes)

    def identify_payload(self, request, response):
        """The load on a link from the recent joint states (embedded.estimation); bounded work."""
        name = conversions.bounded("payload name", request.name, conversions.MAX_NAME_LENGTH)
        outcome = self.host.identify_payload(request.link, request.duration, request.apply, name)
        if request.apply and not outcome.applied:
            raise InvalidInputError(f"nothing attached: {outcome.message}")
        result = outcome.result
        response.inertia = conversions.inertia_message(result.mass, result.com, result.inertia)
        response.residual = float(result.residual)
        response.samples = outcome.samples
        response.applied = outcome.applied
        response.message = outcome.message
        if outcome.applied:
            self.logger.info(f"~/identify_payload: {outcome.message}")
