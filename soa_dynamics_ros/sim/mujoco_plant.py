"""A URDF robot as a MuJoCo plant, without ROS: the physics behind ``soa_dynamics_sim``.

MuJoCo computes the dynamics independently of this project, which makes it an
honest judge of the torques the embedded model produces.  Loading follows the
recipe measured in ``../shared/notes/reference-libraries.md``:

* every ``<visual>`` and ``<collision>`` is deleted (no meshes needed, no
  ``package://`` mesh paths to resolve, no contacts);
* MuJoCo's defaults are neutralized: 1 ms time step (not 2 ms), no
  ``fusestatic`` (every URDF link stays a body, so a payload or a wrench can
  go on any link), URDF ``<dynamics damping friction>`` removed unless asked
  for, zero armature;
* mimic joints: MuJoCo's URDF importer turns them into joint equality
  constraints; they are made stiff (time constant 2 steps, impedance 0.9999: with
  MuJoCo's default 0.9 the soft coupling leaks enough force that light PR2
  fingers held by exact gravity torques creep 2e-3 rad in 5 s; now 2e-5)
  so the coupling matches the model's folding of mimic joints.

Joint order of efforts and positions: ``joints`` (default
:attr:`RobotModel.joint_names`, the independent joints), mapped by name.

MuJoCo's warnings go to :func:`route_warnings`' handler (by default the
``soa_dynamics_ros.mujoco`` logger), never to ``MUJOCO_LOG.TXT`` in the working
directory: a diverged simulation warns at every step (a 965 MB file once).
"""
import logging
import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

from ..errors import InvalidInputError, UnknownNameError
from ..model.robot_model import RobotModel
from ..description.urdf import read_description_text

DEFAULT_TIMESTEP = 0.001
# MuJoCo's own detection of a blown-up state; it then resets mjData to qpos0.
_BAD_STATE_WARNINGS = {mujoco.mjtWarning.mjWARN_BADQPOS: "NaN, inf or huge positions",
                       mujoco.mjtWarning.mjWARN_BADQVEL: "NaN, inf or huge velocities",
                       mujoco.mjtWarning.mjWARN_BADQACC: "NaN, inf or huge accelerations"}
_logger = logging.getLogger("soa_dynamics_ros.mujoco")


def route_warnings(handler):
    """Send every MuJoCo warning text to ``handler(text)`` (process-wide), not to MUJOCO_LOG.TXT."""
    mujoco.set_mju_user_warning(handler)


def _log_warning(text):
    _logger.warning("MuJoCo: %s", text.strip())


def log_warnings_unless_routed():
    """MuJoCo's warnings to the ``soa_dynamics_ros.mujoco`` logger, unless a handler is set."""
    if mujoco.get_mju_user_warning() is None:
        route_warnings(_log_warning)


def strip_urdf(text, keep_dynamics=False):
    """URDF text without visual/collision geometry (and without <dynamics> unless kept)."""
    root = ET.fromstring(text)
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    if not keep_dynamics:
        for joint in root.iter("joint"):
            for element in joint.findall("dynamics"):
                joint.remove(element)
    # ros2_control / gazebo extension tags mean nothing to MuJoCo.
    for tag in ("ros2_control", "gazebo", "transmission"):
        for element in root.findall(tag):
            root.remove(element)
    return ET.tostring(root, encoding="unicode")


class MujocoPlant:
    """MuJoCo model and data for a URDF, with joint mapping by name.

    ``description``: URDF/xacro text or a path (``package://`` allowed).
    ``payload``: optional ``dict(link=, mass=, com=, inertia=)`` welded to a link.
    """

    def __init__(self, description, joints=None, timestep=DEFAULT_TIMESTEP,
                 urdf_dynamics=False, joint_limits=True, payload=None):
        log_warnings_unless_routed()
        self.text = read_description_text(description)
        self.reference = RobotModel.from_urdf(self.text, kernels="off")
        self.joint_names = list(joints) if joints else self.reference.joint_names
        unknown = [n for n in self.joint_names if n not in self.reference.joint_names]
        if unknown:
            raise UnknownNameError("joint", unknown[0], self.reference.joint_names)
        if len(set(self.joint_names)) != len(self.joint_names):
            raise InvalidInputError(f"joints {self.joint_names} repeats a name")
        self.timestep = float(timestep)
        self.urdf_dynamics = bool(urdf_dynamics)
        self.joint_limits = bool(joint_limits)
        limits = dict(zip(self.reference.joint_names, self.reference.effort_limits))
        self.effort_limits = np.array([limits[n] for n in self.joint_names])
        self.payload = None
        self.model = self.data = None
        self._build(payload)
        self.wrench_link, self.wrench = None, np.zeros(6)
        self.wrench_window = (0.0, math.inf)

    # ------------------------------------------------------------------ building
    def _spec(self, payload):
        spec = mujoco.MjSpec.from_string(strip_urdf(self.text, self.urdf_dynamics))
        spec.compiler.fusestatic = False
        spec.option.timestep = self.timestep
        if not self.joint_limits:
            spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
        for equality in spec.equalities:          # mimic joints, stiff
            equality.solref = [2 * self.timestep, 1.0]
            equality.solimp = [0.9999, 0.99999, 0.001, 0.5, 2.0]
        for joint in spec.joints:
            joint.armature = 0.0
        if payload is not None and float(payload.get("mass", 0.0)) > 0.0:
            self.check_link(payload["link"])
            parent = spec.body(payload["link"])
            body = parent.add_body(name="soa_payload")
            body.mass = float(payload["mass"])
            body.ipos = np.asarray(payload.get("com", (0.0, 0.0, 0.0)), dtype=float)
            inertia = np.asarray(payload.get("inertia", np.zeros(9)), dtype=float).reshape(3, 3)
            if not np.any(inertia):
                inertia = np.eye(3) * 1e-9     # a point mass (MuJoCo wants positive inertia)
            body.fullinertia = [inertia[0, 0], inertia[1, 1], inertia[2, 2],
                                inertia[0, 1], inertia[0, 2], inertia[1, 2]]
            body.explicitinertial = True
        return spec

    def _build(self, payload):
        """(Re)compile, keeping positions, velocities and time of the previous model."""
        old = None
        if self.data is not None:
            old = (self.state_positions(), self.state_velocities(), self.data.time)
        self.model = self._spec(payload).compile()
        self.data = mujoco.MjData(self.model)
        self.payload = dict(payload) if payload and float(payload.get("mass", 0.0)) > 0.0 else None
        self.state_names = [self.model.joint(i).name for i in range(self.model.njnt)]
        qposadr = {name: int(self.model.jnt_qposadr[i]) for i, name in enumerate(self.state_names)}
        dofadr = {name: int(self.model.jnt_dofadr[i]) for i, name in enumerate(self.state_names)}
        missing = [n for n in self.joint_names if n not in dofadr]
        if missing:
            raise InvalidInputError(f"MuJoCo model has no joints {missing}")
        self._qpos = np.array([qposadr[n] for n in self.joint_names], dtype=int)
        self._dof = np.array([dofadr[n] for n in self.joint_names], dtype=int)
        self._state_qpos = np.array([qposadr[n] for n in self.state_names], dtype=int)
        self._state_dof = np.array([dofadr[n] for n in self.state_names], dtype=int)
        # Where each of ``joints`` sits among ``state_names``.
        self.joint_state_index = np.array([self.state_names.index(n) for n in self.joint_names],
                                          dtype=int)
        self._mimics = [(eq, self.model.eq_obj1id[eq], self.model.eq_obj2id[eq])
                        for eq in range(self.model.neq)
                        if self.model.eq_type[eq] == mujoco.mjtEq.mjEQ_JOINT]
        if old is not None:
            names, q, qd, time = old[0][0], old[0][1], old[1][1], old[2]
            self._set_state(names, q, qd)
            self.data.time = time
        mujoco.mj_forward(self.model, self.data)

    def check_link(self, link):
        """UnknownNameError unless ``link`` is a link of the robot (every link is a MuJoCo body)."""
        if link not in self.reference.frame_names:
            raise UnknownNameError("link", link, self.reference.frame_names)

    def set_payload(self, payload):
        """Weld a payload (``dict(link, mass, com, inertia)``) to a link; ``None`` removes it."""
        self._build(payload)

    # ------------------------------------------------------------------ state
    def _set_state(self, names, positions, velocities):
        index = {name: i for i, name in enumerate(self.state_names)}
        for name, q, qd in zip(names, positions, velocities):
            i = index[name]
            self.data.qpos[self._state_qpos[i]] = q
            self.data.qvel[self._state_dof[i]] = qd

    def reset(self, positions=None):
        """Rest at ``positions`` (``joints`` order; mimic joints follow their masters)."""
        mujoco.mj_resetData(self.model, self.data)
        if positions is not None:
            positions = np.asarray(positions, dtype=float)
            if positions.shape != (len(self.joint_names),):
                raise InvalidInputError(f"{positions.size} positions for {len(self.joint_names)} joints")
            self.data.qpos[self._qpos] = positions
        self._sync_mimics()
        mujoco.mj_forward(self.model, self.data)

    def _sync_mimics(self):
        for eq, mimic, master in self._mimics:
            data = self.model.eq_data[eq]
            q = self.data.qpos[self.model.jnt_qposadr[master]]
            self.data.qpos[self.model.jnt_qposadr[mimic]] = data[0] + data[1] * q
            v = self.data.qvel[self.model.jnt_dofadr[master]]
            self.data.qvel[self.model.jnt_dofadr[mimic]] = data[1] * v

    def default_positions(self):
        """Zero where the joint range allows, else the nearest limit (``joints`` order)."""
        q = np.zeros(len(self.joint_names))
        for k, name in enumerate(self.joint_names):
            joint = self.model.joint(name)
            if self.model.jnt_limited[joint.id]:
                low, high = self.model.jnt_range[joint.id]
                q[k] = min(max(0.0, low), high)
        return q

    @property
    def time(self):
        return float(self.data.time)

    def positions(self):
        return self.data.qpos[self._qpos].copy()

    def velocities(self):
        return self.data.qvel[self._dof].copy()

    def accelerations(self):
        return self.data.qacc[self._dof].copy()

    def state_positions(self):
        """(names, positions) of every joint, mimic joints included."""
        return list(self.state_names), self.data.qpos[self._state_qpos].copy()

    def state_velocities(self):
        return list(self.state_names), self.data.qvel[self._state_dof].copy()

    # ------------------------------------------------------------------ inputs
    def set_effort(self, effort):
        """Joint efforts in ``joints`` order, clamped to the URDF effort limits; returns them."""
        effort = np.clip(np.asarray(effort, dtype=float), -self.effort_limits, self.effort_limits)
        self.data.qfrc_applied[:] = 0.0
        self.data.qfrc_applied[self._dof] = effort
        return effort

    def set_wrench(self, link, wrench, start=0.0, duration=math.inf):
        """A wrench ``[f; t]`` (root axes, about the link origin) on a link; None clears.

        It acts during the steps that begin in ``[start, start + duration)``
        (simulated seconds; by default always).
        """
        if not (math.isfinite(start) and duration > 0.0):
            raise InvalidInputError(f"wrench window: start {start} must be finite and duration "
                                    f"{duration} positive")
        if link:
            self.check_link(link)
            self.wrench_link, self.wrench = link, np.asarray(wrench, dtype=float).reshape(6)
        else:
            self.wrench_link, self.wrench = None, np.zeros(6)
        self.wrench_window = (float(start), float(start) + float(duration))

    def wrench_acting(self):
        """The wrench ``[f; t]`` acting during the coming step (zeros outside its window)."""
        start, end = self.wrench_window
        if self.wrench_link is None or not start <= self.data.time < end:
            return np.zeros(6)
        return self.wrench.copy()

    def external_joint_torques(self):
        """The joint torques (``joints`` order) of the wrench acting in the coming step: J^T w.

        MuJoCo's Jacobian of the link origin, independent of the project's model;
        a mimic joint's share goes to its master (times the multiplier), as the
        model folds mimic joints.
        """
        wrench = self.wrench_acting()
        if not np.any(wrench):
            return np.zeros(len(self.joint_names))
        body = self.model.body(self.wrench_link).id
        linear, angular = np.zeros((3, self.model.nv)), np.zeros((3, self.model.nv))
        mujoco.mj_jac(self.model, self.data, linear, angular, self.data.xpos[body], body)
        torques = linear.T @ wrench[:3] + angular.T @ wrench[3:]
        for eq, mimic, master in self._mimics:
            torques[self.model.jnt_dofadr[master]] += \
                self.model.eq_data[eq][1] * torques[self.model.jnt_dofadr[mimic]]
        return torques[self._dof]

    def _apply_wrench(self):
        self.data.xfrc_applied[:] = 0.0
        wrench = self.wrench_acting()
        if not np.any(wrench):
            return
        body = self.model.body(self.wrench_link).id
        force, torque = wrench[:3], wrench[3:]
        # MuJoCo applies xfrc_applied at the body's centre of mass, in world axes.
        lever = self.data.xpos[body] - self.data.xipos[body]
        self.data.xfrc_applied[body, :3] = force
        self.data.xfrc_applied[body, 3:] = torque + np.cross(lever, force)

    def step(self, count=1):
        for _ in range(count):
            self._apply_wrench()
            mujoco.mj_step(self.model, self.data)

    def divergence(self):
        """Why the simulation has blown up since the last reset, or None while it is sane.

        MuJoCo replaces a NaN/huge state by ``qpos0`` at rest (and counts it); a
        state that is not finite and escaped that check counts too.
        """
        for warning, what in _BAD_STATE_WARNINGS.items():
            if self.data.warning[warning].number:
                return f"MuJoCo found {what}"
        if not (np.all(np.isfinite(self.data.qpos)) and np.all(np.isfinite(self.data.qvel))):
            return "non-finite joint state"
        return None

    # ------------------------------------------------------------------ observation
    def link_pose(self, link):
        """4x4 pose of a link frame in the world (= root link) frame."""
        body = self.model.body(link)
        pose = np.eye(4)
        pose[:3, :3] = self.data.xmat[body.id].reshape(3, 3)
        pose[:3, 3] = self.data.xpos[body.id]
        return pose
