"""A fast pick-and-place in joint space, the trajectory of the feedforward test and demo (no ROS).

Rest-to-rest quintic moves (``s = 10 u^3 - 15 u^4 + 6 u^5``: zero velocity and
acceleration at both poses) home -> pick -> place -> home, with a short dwell
at pick and place (the gripper's time) and at the end.  It is sampled as
trajectory points carrying positions, velocities and accelerations, what a
time-parameterizing planner (MoveIt's) sends to joint_trajectory_controller;
between such points JTC's quintic spline reproduces the moves exactly.

Two robots:

* ``panda``: ``urdf/panda.urdf`` with the gains of franka_ros2's
  ``franka_bringup/config/controllers.yaml`` (its joint_trajectory_controller
  on effort interfaces: p 600, d 30 on joints 1-4; 250/10, 150/10, 50/5 on
  5-7; i 0).  The moves reach 1.9-2.3 rad/s (URDF limits 2.175 and 2.61) and
  4.7-7.2 rad/s^2 (the Panda's datasheet allows 7.5-20).
* ``vx300s``: the Trossen ViperX 300s of ``rtb-data`` (read where pip
  installed it), the zoo arm whose description has real inertias (the zoo's
  KUKA and ABB files have none or placeholders).  Nobody publishes effort
  gains for it, so :func:`bandwidth_gains` gives it the closed-loop bandwidth
  of the Franka gains: ``p = M_jj(q_home) w^2``, ``d = 2 z w M_jj(q_home)``
  with ``w`` and ``z`` those of franka_ros2's joints 1-4 on the Panda at its
  home pose (:func:`franka_bandwidth`).
"""
import pathlib
from dataclasses import dataclass, field

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
FRANKA_GAINS = {joint: dict(p=p, d=d, i=0.0, i_clamp=1.0)
                for joint, (p, d) in zip(PANDA_JOINTS, [(600.0, 30.0)] * 4
                                         + [(250.0, 10.0), (150.0, 10.0), (50.0, 5.0)])}
POINT_SPACING = 0.02        # [s] between trajectory points
SETTLE = 0.3                # [s] after the last point, in the error measure too


@dataclass
class PickAndPlace:
    """Poses (home, pick, place, home) of ``joint_names`` and the duration of each move."""
    robot: str
    joint_names: list
    poses: np.ndarray                       # (4, n)
    move_times: list                        # (3,) [s]
    dwell: float = 0.25                     # [s] at pick and place (and at the end)
    gains: dict = field(default_factory=dict)

    def schedule(self):
        """[(start, end, from pose, to pose)] of the moves and dwells, in time order."""
        segments, t = [], 0.0
        for k, move in enumerate(self.move_times):
            segments.append((t, t + move, self.poses[k], self.poses[k + 1]))
            t += move
            segments.append((t, t + self.dwell, self.poses[k + 1], self.poses[k + 1]))
            t += self.dwell
        return segments

    @property
    def duration(self):
        return self.schedule()[-1][1]

    def sample(self, times):
        """(q, qd, qdd), each (len(times), n), of the path at ``times`` (held after the end)."""
        times = np.atleast_1d(np.asarray(times, dtype=float))
        n = len(self.joint_names)
        q, qd, qdd = (np.zeros((len(times), n)) for _ in range(3))
        segments = self.schedule()
        for row, t in enumerate(times):
            start, end, a, b = next((s for s in segments if t < s[1]), segments[-1])
            span = end - start
            u = min(max((t - start) / span, 0.0), 1.0)
            s = ((6 * u - 15) * u + 10) * u ** 3
            ds = 30 * u ** 2 * (u - 1) ** 2 / span
            dds = 60 * u * (2 * u - 1) * (u - 1) / span ** 2
            q[row], qd[row], qdd[row] = a + s * (b - a), ds * (b - a), dds * (b - a)
        return q, qd, qdd

    def points(self, spacing=POINT_SPACING):
        """(times, q, qd, qdd) of trajectory points every ``spacing`` s, the last at the end."""
        count = int(round(self.duration / spacing))
        times = np.linspace(0.0, self.duration, count + 1)
        return (times, *self.sample(times))


def bandwidth_gains(model, q, omega, zeta):
    """PD gains giving every joint of ``model`` at ``q`` the bandwidth ``omega`` and damping ``zeta``."""
    inertia = np.diag(model.mass_matrix(q))
    return {joint: dict(p=float(m * omega ** 2), d=float(2 * zeta * omega * m), i=0.0, i_clamp=0.0)
            for joint, m in zip(model.joint_names, inertia)}


def franka_bandwidth(model, home):
    """(w, z) of the Franka gains on joints 1-4 of the Panda ``model`` at ``home``."""
    inertia = np.diag(model.mass_matrix(home))[:4]
    p = np.array([FRANKA_GAINS[j]["p"] for j in PANDA_JOINTS[:4]])
    d = np.array([FRANKA_GAINS[j]["d"] for j in PANDA_JOINTS[:4]])
    return float(np.median(np.sqrt(p / inertia))), float(np.median(d / (2 * np.sqrt(p * inertia))))


def zoo_description(relative):
    """Path of a description inside the ``rtb-data`` package (ImportError when it is missing)."""
    import rtbdata
    return pathlib.Path(rtbdata.__file__).resolve().parent / "xacro" / relative


VX300S = "trossen_descriptions/urdf/vx300s.urdf.xacro"
VX300S_JOINTS = ["waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate",
                 "gripper", "left_finger"]
# home, pick, place (then home again), by joint name; inside the joint limits.
POSES = {
    "panda": [dict(zip(PANDA_JOINTS, pose)) for pose in (
        [0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6],          # = config/panda_sim.yaml
        [0.9, -0.15, 0.1, -2.0, 0.0, 1.95, 1.4],
        [-0.7, -0.1, 0.3, -1.75, 0.25, 1.75, -0.3])],
    "vx300s": [dict(zip(VX300S_JOINTS, pose)) for pose in (
        [0.3, -0.4, 0.5, 0.2, 0.6, 0.1, 0.0, 0.03],
        [1.1, 0.2, 0.3, 0.0, 1.0, 0.6, 0.0, 0.03],
        [-0.6, 0.1, 0.2, -0.3, 1.1, -0.4, 0.0, 0.03])],
}
MOVE_TIMES = [0.8, 1.4, 0.9]        # [s] home -> pick -> place -> home


def description(robot):
    """The robot's description: the shipped Panda, or the ViperX where rtb-data is installed."""
    if robot == "vx300s":
        return str(zoo_description(VX300S))
    shipped = REPO / "urdf" / "panda.urdf"
    return str(shipped) if shipped.is_file() else "package://soa_dynamics_ros/urdf/panda.urdf"


def home(robot, joint_names):
    """The home pose in ``joint_names`` order."""
    return np.array([POSES[robot][0][name] for name in joint_names])


def pick_and_place(robot, model, panda_model=None):
    """The task for ``robot`` ("panda" or "vx300s"); ``model`` is its RobotModel.

    ``panda_model`` (the Panda's RobotModel) sets the ViperX's bandwidth; loaded when None.
    """
    names = list(model.joint_names)
    home_pose, pick, place = (np.array([pose[name] for name in names]) for pose in POSES[robot])
    poses = np.array([home_pose, pick, place, home_pose])
    if robot == "panda":
        return PickAndPlace(robot, names, poses, MOVE_TIMES, gains=FRANKA_GAINS)
    if panda_model is None:
        from ..model.robot_model import RobotModel
        panda_model = RobotModel.from_urdf(description("panda"), kernels="off")
    omega, zeta = franka_bandwidth(panda_model, home("panda", PANDA_JOINTS))
    return PickAndPlace(robot, names, poses, MOVE_TIMES,
                        gains=bandwidth_gains(model, home_pose, omega, zeta))


def rms_error(times, positions, task, start):
    """Root mean square over samples of |q - q_d| (all joints, rad and m) from ``start`` to the
    end of the task plus SETTLE; ``times`` in the same clock as ``start``."""
    inside = (times > start) & (times <= start + task.duration + SETTLE)
    desired = task.sample(times[inside] - start)[0]
    return float(np.sqrt(np.mean(np.sum((positions[inside] - desired) ** 2, axis=1))))
