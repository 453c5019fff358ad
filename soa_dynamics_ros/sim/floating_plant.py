"""A floating-base URDF robot standing in MuJoCo, without ROS.

The robot as :class:`~soa_dynamics_ros.sim.mujoco_plant.MujocoPlant` loads it (no
visual or collision geometry, every link a body, 1 ms steps), plus:

* a free joint above the URDF's root link;
* a ground plane at z = 0 and a contact sphere of ``sphere_radius`` centred on each of
  ``contact_frames`` (the only geometry that collides);
* the base state in the model's convention (docs/floating_base.md): MuJoCo's free
  joint keeps ``qpos = [x y z qw qx qy qz]`` and ``qvel = [linear velocity in world
  axes, angular velocity in body axes]``; :meth:`base_state` turns both into
  ``q[:7] = [x y z qx qy qz qw]`` and ``v[:6]`` in the base frame, as
  nav_msgs/Odometry's twist (child frame).

:func:`stand` is the standing experiment of ``soa_dynamics_demo`` in one process,
through the library: joint PD about a standing pose, with or without whole-body gravity
feedforward, and the base height's drift (the demo runs it through ``soa_dynamics_sim``
and the node, :mod:`.standing_demo`).
"""
import math

import mujoco
import numpy as np

from ..description.urdf import read_description_text
from ..errors import InvalidInputError
from ..model.floating_base import rotation_from_quaternion
from ..model.robot_model import RobotModel
from .mujoco_plant import DEFAULT_TIMESTEP, log_warnings_unless_routed, strip_urdf

DEFAULT_SPHERE_RADIUS = 0.005      # [m] small: the contact acts close to the contact frame
FREE_JOINT = "soa_free_base"


class FloatingPlant:
    """MuJoCo model and data of a floating-base robot on the ground (module docstring)."""

    def __init__(self, description, contact_frames, timestep=DEFAULT_TIMESTEP,
                 sphere_radius=DEFAULT_SPHERE_RADIUS):
        log_warnings_unless_routed()
        text = read_description_text(description)
        self.reference = RobotModel.from_urdf(text, kernels="off", floating_base=True)
        unknown = [frame for frame in contact_frames if frame not in self.reference.frame_names]
        if unknown or not contact_frames:
            raise InvalidInputError(f"contact_frames {list(contact_frames)} must name frames of "
                                    f"{self.reference.name!r}; unknown: {unknown}")
        self.contact_frames = list(contact_frames)
        self.sphere_radius = float(sphere_radius)
        spec = mujoco.MjSpec.from_string(strip_urdf(text))
        spec.compiler.fusestatic = False
        spec.option.timestep = float(timestep)
        for joint in spec.joints:
            joint.armature = 0.0
        spec.body(self.reference.base_link).add_freejoint(name=FREE_JOINT)
        spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE,
                                size=[0.0, 0.0, 1.0])
        for frame in self.contact_frames:
            spec.body(frame).add_geom(name=f"contact_{frame}", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                                      size=[self.sphere_radius, 0.0, 0.0], mass=0.0)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self.joint_names = self.reference.joint_names
        free = self.model.joint(FREE_JOINT)
        self._base_qpos, self._base_dof = int(free.qposadr[0]), int(free.dofadr[0])
        joints = [self.model.joint(name) for name in self.joint_names]
        self._qpos = np.array([int(joint.qposadr[0]) for joint in joints])
        self._dof = np.array([int(joint.dofadr[0]) for joint in joints])
        self._actuated = np.zeros(self.model.nv)

    def base_state(self):
        """(q[:7], v[:6]) of the base in the model's convention (module docstring)."""
        qpos = self.data.qpos[self._base_qpos:self._base_qpos + 7]
        qvel = self.data.qvel[self._base_dof:self._base_dof + 6]
        quaternion = np.r_[qpos[4:7], qpos[3]]
        rotation = rotation_from_quaternion(quaternion)
        return np.r_[qpos[:3], quaternion], np.r_[rotation.T @ qvel[:3], qvel[3:6]]

    def state(self):
        """(q, v) of the whole robot in the model's convention."""
        pose, twist = self.base_state()
        return (np.r_[pose, self.data.qpos[self._qpos]], np.r_[twist, self.data.qvel[self._dof]])

    def place(self, joints, height_above_ground=0.0):
        """The base level above the origin, the joints at ``joints``, at rest, the lowest
        contact sphere ``height_above_ground`` above the ground."""
        q = self.reference.neutral_configuration()
        q[7:] = joints
        lowest = min(self.reference.frame_pose(q, frame)[2, 3] for frame in self.contact_frames)
        mujoco.mj_resetData(self.model, self.data)
        base = self.data.qpos[self._base_qpos:self._base_qpos + 7]
        base[:] = [0.0, 0.0, self.sphere_radius + height_above_ground - lowest, 1.0, 0.0, 0.0, 0.0]
        self.data.qpos[self._qpos] = joints
        mujoco.mj_forward(self.model, self.data)

    def step(self, effort):
        """One time step with joint efforts ``effort`` (joint_names order)."""
        self._actuated[self._dof] = effort
        self.data.qfrc_applied[:] = self._actuated
        mujoco.mj_step(self.model, self.data)

    @property
    def base_height(self):
        """[m] of the base origin above the ground."""
        return float(self.data.qpos[self._base_qpos + 2])

    @property
    def time(self):
        return float(self.data.time)


def stand(plant, joints, kp, kd, feedforward, seconds, settle=0.5, feedforward_every=1):
    """Hold ``joints`` by joint PD (``kp`` [N m/rad], ``kd`` [N m s/rad]) plus, when
    ``feedforward``, the whole-body gravity torques of the measured state on the contact
    frames (``plant.reference.whole_body_gravity``, what the node publishes), computed
    every ``feedforward_every`` steps and held between (a feedforward at a lower rate).

    Returns (largest |base height - its height after ``settle`` s| over the next
    ``seconds`` [m], the base heights sampled every step after ``settle``).  The robot is
    placed with its contact spheres on the ground at rest.
    """
    plant.place(joints)
    model, contacts = plant.reference, [(frame, "point") for frame in plant.contact_frames]
    steps, settle_steps = int(round((settle + seconds) / plant.model.opt.timestep)), \
        int(round(settle / plant.model.opt.timestep))
    heights, held = [], np.zeros(len(joints))
    for step in range(steps):
        q, v = plant.state()
        if feedforward and step % feedforward_every == 0:
            held = model.whole_body_gravity(q, contacts).tau
        plant.step(held + kp * (joints - q[7:]) - kd * v[6:])
        if step >= settle_steps:
            heights.append(plant.base_height)
    heights = np.array(heights)
    drift = float(np.max(np.abs(heights - heights[0]))) if heights.size else math.nan
    return drift, heights
