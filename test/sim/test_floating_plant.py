"""The floating-base robot in MuJoCo (issue 46 part 7): its base state is the model's
convention (checked through MuJoCo's own foot velocities and positions), and it stands
on whole-body gravity feedforward plus joint PD far better than on PD alone."""
import numpy as np
import pytest

from soa_dynamics_ros.sim.floating_plant import FloatingPlant, stand
from support.robots import example_robot_path
from support.optional import require

mujoco = require("mujoco")

SOLO = "solo_description/robots/solo12.urdf"
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
STANDING = np.array([0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6])
KP, KD = 3.0, 0.1


@pytest.fixture(scope="module")
def plant():
    return FloatingPlant(str(example_robot_path(SOLO)), FEET)


def test_the_base_state_is_the_models_convention(plant, rng):
    """A tumbling robot in the air: the library's foot positions and velocities from the
    plant's (q, v) are MuJoCo's own."""
    plant.place(STANDING, height_above_ground=1.0)
    data = plant.data
    data.qvel[:] = rng.uniform(-2.0, 2.0, plant.model.nv)
    for _ in range(20):                 # a turned base, away from MuJoCo's initial pose
        plant.step(np.zeros(len(STANDING)))
    mujoco.mj_forward(plant.model, data)     # (a step leaves xpos at the state before it)
    q, v = plant.state()
    model = plant.reference
    for foot in FEET:
        body = plant.model.body(foot).id
        velocity = np.zeros(6)          # [angular; linear] in world axes at the link frame (XBODY)
        mujoco.mj_objectVelocity(plant.model, data, mujoco.mjtObj.mjOBJ_XBODY, body, velocity, 0)
        np.testing.assert_allclose(model.frame_pose(q, foot)[:3, 3], data.xpos[body],
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(model.jacobian(q, foot) @ v, np.r_[velocity[3:], velocity[:3]],
                                   rtol=0, atol=1e-9)


def test_whole_body_gravity_feedforward_holds_the_base_height_where_pd_alone_sags(plant):
    with_feedforward, _ = stand(plant, STANDING, KP, KD, True, 2.0, feedforward_every=10)
    pd_alone, _ = stand(plant, STANDING, KP, KD, False, 2.0)
    assert with_feedforward < 5e-3
    assert pd_alone >= 5 * with_feedforward
