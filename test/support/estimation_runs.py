"""MuJoCo runs for the estimation tests: an rtb-data arm nobody here wrote, tracking a
motion under computed-torque control by the exact model, while a known wrench or
an unknown payload acts.  Everything the tests compare against comes from MuJoCo."""
import pathlib

import numpy as np

from support.optional import require

mujoco = require("mujoco")
rtbdata = require("rtbdata")

from soa_dynamics_ros import RobotModel  # noqa: E402 (the sim's plant needs mujoco)
from soa_dynamics_ros.description.urdf import read_description_text  # noqa: E402
from soa_dynamics_ros.sim.mujoco_plant import MujocoPlant  # noqa: E402

ZOO = pathlib.Path(rtbdata.__file__).resolve().parent / "xacro"
# Interbotix ViperX 300 s: 6 arm joints, the gripper's revolute prop and two
# prismatic fingers, one a mimic of the other (folded onto it: 8 coordinates).
ARM = ZOO / "trossen_descriptions" / "urdf" / "vx300s.urdf.xacro"
TOOL = "/ee_gripper_link"
WRIST = "/gripper_link"
ARM_JOINTS = 6
DT = 0.001
# Computed torque in acceleration units (the reference notes' tracking gains).
KP, KD = 400.0, 40.0
# A pose away from singularities, fingers half open.
HOME = np.array([0.3, -0.4, 0.5, 0.4, 0.6, -0.3, 0.0, 0.03])


def arm_description(dynamics=None):
    """The arm's URDF text; ``dynamics=(damping, friction)`` gives every arm joint that
    ``<dynamics>`` (the description has none)."""
    text = read_description_text(str(ARM), package_paths=[str(ZOO)])
    if dynamics is None:
        return text
    import xml.etree.ElementTree as ET
    root = ET.fromstring(text)
    arm_joints = ("waist", "shoulder", "elbow", "forearm_roll", "wrist_angle", "wrist_rotate")
    for joint in root.iter("joint"):
        if joint.get("name") in arm_joints:
            ET.SubElement(joint, "dynamics", damping=str(dynamics[0]), friction=str(dynamics[1]))
    return ET.tostring(root, encoding="unicode")


def sinusoid(amplitude, frequency, phase=0.0):
    """Desired (q, qd, qdd) at t: HOME plus a sinusoid per joint, starting at rest."""
    amplitude, frequency = np.asarray(amplitude, float), np.asarray(frequency, float)
    w = 2 * np.pi * frequency

    def desired(t):
        # (1 - cos) keeps the start at rest: q(0) = HOME, qd(0) = 0.
        q = HOME + amplitude * (1 - np.cos(w * t + phase)) - amplitude * (1 - np.cos(phase))
        qd = amplitude * w * np.sin(w * t + phase)
        qdd = amplitude * w ** 2 * np.cos(w * t + phase)
        return q, qd, qdd
    return desired


class Run:
    """The recorded samples of one simulation (arrays over time)."""

    def __init__(self, plant, model):
        self.plant, self.model = plant, model
        self.columns = np.array([plant.model.joint(n).dofadr[0] for n in model.joint_names])
        self.t, self.q, self.qd, self.qdd, self.tau, self.true_external = [], [], [], [], [], []
        self.passive, self.constraint = [], []    # MuJoCo's damping; friction loss, limits

    def external_torques(self):
        """J^T w of the plant's wrench, by MuJoCo's body Jacobian (model joint order)."""
        plant = self.plant
        if plant.wrench_link is None:
            return np.zeros(len(self.columns))
        body = plant.model.body(plant.wrench_link).id
        jacp = np.zeros((3, plant.model.nv))
        jacr = np.zeros((3, plant.model.nv))
        mujoco.mj_jacBody(plant.model, plant.data, jacp, jacr, body)
        generalized = jacp.T @ plant.wrench[:3] + jacr.T @ plant.wrench[3:]
        return generalized[self.columns]

    def arrays(self):
        for name in ("t", "q", "qd", "qdd", "tau", "true_external", "passive", "constraint"):
            setattr(self, name, np.array(getattr(self, name)))
        return self


def simulate(desired, duration, wrench=None, window=(np.inf, np.inf), payload=None,
             dynamics=None, on_sample=None, control_model=None):
    """Track ``desired`` for ``duration`` s; ``wrench`` (on TOOL) acts during ``window``.

    ``on_sample(t, q, qd, tau)`` sees each sample as a controller would (before
    the step); the acceleration recorded with it is MuJoCo's for that step.
    """
    text = arm_description(dynamics)
    plant = MujocoPlant(text, urdf_dynamics=dynamics is not None, payload=payload)
    model = control_model or RobotModel.from_urdf(text)
    plant.reset(HOME)
    run = Run(plant, model)
    for k in range(int(round(duration / DT))):
        t = k * DT
        plant.set_wrench(TOOL, wrench) if wrench is not None and window[0] <= t < window[1] \
            else plant.set_wrench(None, None)
        q, qd = plant.positions(), plant.velocities()
        q_d, qd_d, qdd_d = desired(t)
        command = model.inverse_dynamics(q, qd, qdd_d + KP * (q_d - q) + KD * (qd_d - qd))
        tau = plant.set_effort(command)
        mujoco.mj_forward(plant.model, plant.data)
        run.true_external.append(run.external_torques())
        if on_sample is not None:
            on_sample(t, q, qd, tau)
        plant.step()
        run.t.append(t)
        run.q.append(q)
        run.qd.append(qd)
        run.tau.append(tau)
        run.qdd.append(plant.accelerations())
        run.passive.append(plant.data.qfrc_passive[run.columns].copy())
        run.constraint.append(plant.data.qfrc_constraint[run.columns].copy())
    return run.arrays()
