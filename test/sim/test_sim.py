"""The MuJoCo arm: the plant without ROS, then soa_dynamics_sim alone as a process."""
import re
import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.srv import GetParameters
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from support.optional import require
from support.robots import example_robot_path, shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for
from support.sim_harness import POSES, StateRecorder, reset_client, start_sim, stamp_seconds
from oracles.pinocchio_reference import PinocchioReference
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import InvalidInputError

require("mujoco")   # the simulated arm's plant
from soa_dynamics_ros.sim.mujoco_plant import MujocoPlant, strip_urdf  # noqa: E402


def plant_and_model(robot):
    path = shipped_urdf(f"{robot}.urdf")
    plant, model = MujocoPlant(path), RobotModel.from_urdf(path, kernels="off")
    q0 = np.array([POSES[robot][n] for n in plant.joint_names])
    plant.reset(q0)
    return plant, model, q0


def hold(plant, torque, steps):
    q0 = plant.positions()
    for _ in range(steps):
        plant.set_effort(torque(plant.positions()))
        plant.step()
    return np.abs(plant.positions() - q0).max()


# ---------------------------------------------------------------------- the plant, no ROS
@pytest.mark.parametrize("robot, tolerance", [("panda", 1e-10), ("dual_arm_torso", 1e-5)])
def test_plant_is_held_by_the_model_gravity_torques(robot, tolerance):
    plant, model, _ = plant_and_model(robot)
    assert plant.joint_names == model.joint_names and plant.model.opt.timestep == 1e-3
    assert hold(plant, model.gravity_torques, 1000) < tolerance
    plant.reset(plant.positions())
    assert hold(plant, lambda q: np.zeros(model.dof), 300) > 1e-2


def test_mimic_joints_follow_their_master():
    plant, _, _ = plant_and_model("dual_arm_torso")
    names, q = plant.state_positions()
    for mimic in ("l_gripper_r_finger_joint", "l_gripper_l_finger_tip_joint"):
        assert q[names.index(mimic)] == pytest.approx(q[names.index("l_gripper_l_finger_joint")])
    plant.set_effort(np.where(np.array(plant.joint_names) == "l_gripper_l_finger_joint", 0.05, 0.0))
    plant.step(200)
    names, q = plant.state_positions()
    master = q[names.index("l_gripper_l_finger_joint")]
    assert master > POSES["dual_arm_torso"]["l_gripper_l_finger_joint"] + 1e-3
    assert q[names.index("l_gripper_r_finger_tip_joint")] == pytest.approx(master, abs=1e-5)


def test_external_wrench_matches_the_model_convention():
    """Root axes, about the link origin, acting on the robot: ID with that wrench holds the arm."""
    plant, model, q0 = plant_and_model("panda")
    wrench = np.array([5.0, -3.0, 8.0, 0.4, 0.2, -0.3])
    plant.set_wrench("panda_link6", wrench)
    tau = lambda q: model.inverse_dynamics(q, np.zeros(7), np.zeros(7),  # noqa: E731
                                           {"panda_link6": wrench})
    assert hold(plant, tau, 500) < 1e-10
    plant.reset(q0)
    assert hold(plant, model.gravity_torques, 300) > 1e-4      # the wrench is really there


def test_wrench_acts_only_during_its_window():
    """Outside [start, start + duration) gravity torques hold the arm; inside, ID with the wrench does."""
    plant, model, q0 = plant_and_model("panda")
    wrench = np.array([5.0, -3.0, 8.0, 0.4, 0.2, -0.3])
    plant.set_wrench("panda_link6", wrench, start=0.2, duration=0.3)
    with_wrench = lambda q: model.inverse_dynamics(q, np.zeros(7), np.zeros(7),  # noqa: E731
                                                   {"panda_link6": wrench})
    assert hold(plant, model.gravity_torques, 200) < 1e-10          # t in [0, 0.2)
    assert hold(plant, with_wrench, 300) < 1e-10                    # t in [0.2, 0.5)
    assert hold(plant, model.gravity_torques, 300) < 1e-10          # after the window
    plant.reset(q0)
    plant.data.time = 0.2
    assert hold(plant, model.gravity_torques, 300) > 1e-4           # the wrench is really there


def test_external_joint_torques_are_the_wrench_through_the_jacobian():
    """J^T w against Pinocchio's Jacobian of the link origin; zero outside the window."""
    urdf = open(shipped_urdf("panda.urdf")).read()
    plant, model, q0 = plant_and_model("panda")
    reference = PinocchioReference(urdf, model.joint_names)
    wrench = np.array([5.0, -3.0, 8.0, 0.4, 0.2, -0.3])
    plant.set_wrench("panda_link6", wrench, start=0.1, duration=0.1)
    assert not np.any(plant.external_joint_torques())
    plant.data.time = 0.1
    expected = reference.jacobian(q0, "panda_link6").T @ wrench
    assert plant.external_joint_torques() == pytest.approx(expected, abs=1e-12)
    plant.data.time = 0.2
    assert not np.any(plant.external_joint_torques())
    with pytest.raises(InvalidInputError, match="duration"):
        plant.set_wrench("panda_link6", wrench, start=0.0, duration=0.0)


def test_payload_on_a_link():
    plant, model, q0 = plant_and_model("panda")
    plant.set_payload(dict(link="panda_hand", mass=2.0, com=[0.0, 0.0, 0.05], inertia=np.zeros(9)))
    assert plant.positions() == pytest.approx(q0)                # rebuilt, state kept
    assert hold(plant, model.gravity_torques, 300) > 1e-3         # unknown to the model: sags
    plant.reset(q0)
    model.attach_payload("box", "panda_hand", 2.0, [0.0, 0.0, 0.05])
    assert hold(plant, model.gravity_torques, 1000) < 1e-10


def test_efforts_are_clamped_to_the_urdf_limits():
    plant, model, _ = plant_and_model("panda")
    applied = plant.set_effort(np.full(7, 1000.0))
    assert applied.tolist() == model.effort_limits.tolist()


def test_strip_urdf_removes_geometry_and_dynamics_unless_asked():
    text = open(shipped_urdf("double_pendulum.urdf")).read().replace(
        "</joint>", '<dynamics damping="0.5" friction="0.1"/></joint>', 1)
    assert "<dynamics" not in strip_urdf(text) and "<visual" not in strip_urdf(text)
    assert MujocoPlant(text).model.dof_damping.max() == 0.0
    damped = MujocoPlant(text, urdf_dynamics=True).model
    assert damped.dof_damping.max() == 0.5 and damped.dof_frictionloss.max() == 0.1


# ---------------------------------------------------------------------- the sim process
@pytest.fixture(scope="module")
def client():
    ros = RosClient("sim_test")
    yield ros
    ros.close()


def test_sim_answers_its_services_while_commands_flood_in(client, tmp_path):
    """A client publishing commands faster than the 1 kHz loop takes them starves neither
    ~/reset nor the parameter services (rclpy's single-threaded executor, with the loop's
    changing timeouts, ran only the first ready entity of each wait, subscriptions first)."""
    gravity = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off").gravity_torques(
        np.array(list(POSES["panda"].values())))
    sim = start_sim("panda", tmp_path, "-p", "wait_for_command:=false", name="sim_flooded")
    commands = client.node.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
    flooding = threading.Event()

    def flood():
        message = Float64MultiArray(data=gravity.tolist())
        while flooding.is_set():
            for _ in range(20):
                commands.publish(message)
            time.sleep(0.001)
    thread = threading.Thread(target=flood, daemon=True)
    waits = []
    try:
        reset = reset_client(client)
        parameters = client.client(GetParameters, "/soa_dynamics_sim/get_parameters")
        wait_for(lambda: commands.get_subscription_count() > 0, 30, what="the sim's command subscription")
        flooding.set()
        thread.start()
        time.sleep(0.5)
        # Each answer took 3-9 ms here, while the old executor kept them waiting up to 5 s:
        # 2 s is a bound on starvation, not on speed.
        for _ in range(5):
            started = time.monotonic()
            assert client.call(reset, Trigger.Request(), timeout=2.0).success
            answer = client.call(parameters, GetParameters.Request(names=["command_timeout"]),
                                 timeout=2.0)
            waits.append(time.monotonic() - started)
            assert answer.values[0].double_value == 0.1
    finally:
        flooding.clear()
        thread.join(timeout=5)
        client.node.destroy_publisher(commands)
        assert sim.stop() == 0, sim.log()[-3000:]
    print(f"reset + get_parameters under a command flood: {max(waits) * 1e3:.0f} ms at most")


@pytest.mark.realtime
def test_sim_runs_in_real_time_and_rejects_bad_commands(client, tmp_path):
    """1 kHz against the wall clock; wrong-length commands are refused with a throttled
    warning; the last valid command holds for command_timeout, then zero effort."""
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")
    q0 = np.array(list(POSES["panda"].values()))
    states = StateRecorder(client, model.joint_names)
    sim = start_sim("panda", tmp_path, "-p", "command_timeout:=0.3", "-p", "publish_clock:=true",
                    "-p", "wait_for_command:=false", realtime=True)
    commands = client.node.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
    clock = client.collect(Clock, "/clock")
    reports = client.collect(DiagnosticArray, "/diagnostics")
    try:
        wait_for(lambda: commands.get_subscription_count() > 0, 30, what="the sim's command subscription")
        wait_for(lambda: states.count() > 500, 30, what="the sim's joint states")
        wall0, count0 = time.monotonic(), states.count()
        time.sleep(2.0)
        rate = (states.count() - count0) / (time.monotonic() - wall0)
        # Hold with valid commands for a while, then send only bad ones.
        gravity = model.gravity_torques(q0).tolist()
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            commands.publish(Float64MultiArray(data=gravity))
            time.sleep(0.01)
        last_valid = states.latest()[0]
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            commands.publish(Float64MultiArray(data=gravity[:5]))
            commands.publish(Float64MultiArray(data=gravity + [0.0]))
            time.sleep(0.01)
        rows = [r for r in states.rows if r[0] > last_valid - 0.5]
    finally:
        client.node.destroy_publisher(commands)
        assert sim.stop() == 0, sim.log()[-3000:]
    print(f"sim alone: {rate:.0f} joint states per second")
    assert rate > 800
    assert clock and abs(stamp_seconds(clock[-1][1].clock) - states.rows[-1][0]) < 1.0
    # From the first step that applied a valid command (delivery may lag on a
    # loaded machine) until shortly before the timeout.
    applied = [r[0] for r in rows if np.allclose(r[4], gravity)]
    assert applied and applied[0] <= last_valid, "the valid commands were applied"
    kept = [r for r in rows if applied[0] <= r[0] < last_valid + 0.25]
    dropped = [r for r in rows if r[0] > last_valid + 0.35]
    assert kept and all(np.allclose(r[4], gravity) for r in kept), "last valid command kept"
    assert dropped and all(not np.any(r[4]) for r in dropped), "zero effort after the timeout"
    warnings = re.findall(r"rejected \((\d+) values for 7 joints", sim.log())
    assert set(warnings) <= {"5", "8"} and 1 <= len(warnings) <= 2, sim.log()[-2000:]
    # Where the loop's time went around its longest command gap, and its longest collection.
    values = [{kv.key: kv.value for kv in status.values} for _, report in reports
              for status in report.status if status.name.endswith("MuJoCo arm")]
    gaps = [v["command_gap_max_detail"] for v in values if v["command_gap_max_detail"]]
    assert gaps and all(re.search(r"this thread [\d.]+ ms on a CPU, [\d.]+ ms waiting for one, "
                                  r"[\d.]+ ms collecting garbage", gap) for gap in gaps), gaps
    assert all(float(v["gc_pause_max_ms"]) >= 0.0 for v in values) and values


def test_sim_refuses_a_bad_configuration(tmp_path):
    sim = RosProcess("soa_dynamics_sim", "-p", "urdf_file:=urdf/panda.urdf",
                     "-p", "initial_positions:=[0.1, 0.2]", log_dir=tmp_path, name="bad_sim")
    try:
        sim.process.wait(60)
    finally:
        code = sim.stop()
    assert code == 1 and "initial_positions has 2 values for 7 joints" in sim.log()


@pytest.mark.parametrize("parameters, reason", [
    (["-p", "contact_frames:=[FL_FOOT, NO_SUCH_FRAME]"], "unknown: ['NO_SUCH_FRAME']"),
    (["-p", "contact_frames:=[FL_FOOT]", "-p", "publish_period:=0.0"], "publish_period must be > 0"),
    (["-p", "contact_frames:=[FL_FOOT]", "-p", "initial_positions:=[0.1]"],
     "initial_positions must be 12 finite numbers"),
])
def test_floating_base_sim_refuses_a_bad_configuration(tmp_path, parameters, reason):
    require("nav_msgs.msg")
    urdf = example_robot_path("solo_description/robots/solo12.urdf")
    sim = RosProcess("soa_dynamics_sim", "-p", "floating_base:=true", "-p", f"urdf_file:={urdf}",
                     *parameters, log_dir=tmp_path, name="bad_floating_sim")
    try:
        sim.process.wait(60)
    finally:
        code = sim.stop()
    assert code == 1 and reason in sim.log(), sim.log()


def test_ros2_control_wrapper_keeps_the_physics_and_declares_effort_interfaces():
    """urdf/panda.ros2_control.xacro (for Gazebo) = panda.urdf + world link + ros2_control tags."""
    import xml.etree.ElementTree as ET
    import xacro
    import yaml
    wrapper, plain = shipped_urdf("panda.ros2_control.xacro"), shipped_urdf("panda.urdf")
    a, b = RobotModel.from_urdf(wrapper), RobotModel.from_urdf(plain)
    q = np.array(list(POSES["panda"].values()))
    assert a.joint_names == b.joint_names
    assert np.abs(a.gravity_torques(q) - b.gravity_torques(q)).max() == 0.0
    assert MujocoPlant(wrapper).joint_names == b.joint_names
    root = ET.fromstring(xacro.process_file(wrapper, mappings={"controllers": "/c.yaml"}).toxml())
    hardware = root.find("ros2_control")
    assert hardware.find("hardware/plugin").text == "gz_ros2_control/GazeboSimSystem"
    joints = hardware.findall("joint")
    assert [j.get("name") for j in joints] == b.joint_names
    assert all(j.find("command_interface").get("name") == "effort" for j in joints)
    initial = [float(j.find("state_interface/param").text) for j in joints]
    assert initial == list(POSES["panda"].values())
    assert root.find("gazebo/plugin/parameters").text == "/c.yaml"
    controllers = yaml.safe_load(open(shipped_urdf("../config/panda_controllers.yaml")))
    assert (controllers["controller_manager"]["ros__parameters"]["effort_controller"]["type"]
            == "forward_command_controller/ForwardCommandController")
    assert controllers["effort_controller"]["ros__parameters"]["joints"] == b.joint_names
    assert controllers["effort_controller"]["ros__parameters"]["interface_name"] == "effort"
    sim = yaml.safe_load(open(shipped_urdf("../config/panda_sim.yaml")))
    assert sim["soa_dynamics_sim"]["ros__parameters"]["initial_positions"] == initial


# ---------------------------------------------------------------------- defect 13: bad physics
def test_a_diverged_simulation_is_detected_and_logged_not_written_to_the_working_directory(
        tmp_path, monkeypatch, caplog):
    """A wrench of 1e30 N blows the state up: MuJoCo's warnings go to the logger (not to
    MUJOCO_LOG.TXT in the working directory) and divergence() says so; reset clears it."""
    monkeypatch.chdir(tmp_path)
    plant, _, q0 = plant_and_model("panda")
    plant.set_wrench("panda_hand", [1e30, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert plant.divergence() is None
    with caplog.at_level("WARNING", logger="soa_dynamics_ros.mujoco"):
        plant.step(5)
    assert plant.divergence() is not None
    assert any("MuJoCo:" in record.getMessage() for record in caplog.records)
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    plant.set_wrench("", None)
    plant.reset(q0)
    assert plant.divergence() is None


def _states_are_finite(states):
    with states.lock:
        return all(np.all(np.isfinite(r[2])) and np.all(np.isfinite(r[3])) for r in states.rows)


def test_sim_refuses_insane_parameters_and_never_publishes_a_diverged_state(client, tmp_path):
    """payload_mass 1e30 or NaN is refused with a reason and changes nothing; a wrench that
    makes the simulation diverge resets the arm instead of publishing NaN; set_parameters
    keeps answering; no MUJOCO_LOG.TXT appears in the sim's working directory."""
    from rcl_interfaces.srv import SetParameters
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from support.sim_harness import parameter_value
    from soa_dynamics_ros.ros.processes import ChildProcess
    import os
    from support.installation import EXECUTABLES
    names = list(POSES["panda"])
    states = StateRecorder(client, names)
    command = [str(EXECUTABLES / "soa_dynamics_sim"), "--ros-args",
               "-p", f"urdf_file:={shipped_urdf('panda.urdf')}",
               "-p", f"initial_positions:={list(POSES['panda'].values())}",
               "-p", "wait_for_command:=false", "-p", "real_time_factor:=2.0"]
    sim = ChildProcess(command, tmp_path / "sim.log", os.environ.copy(), cwd=tmp_path)
    setter = None

    def set_parameter(**values):
        """The result of the last parameter (the service sets them one by one, in order)."""
        request = SetParameters.Request(parameters=[
            ParameterMsg(name=k, value=parameter_value(v)) for k, v in values.items()])
        return client.call(setter, request, timeout=10.0).results[-1]
    try:
        wait_for(lambda: states.count() > 100, 60, what="the sim's joint states")
        setter = client.client(SetParameters, "/soa_dynamics_sim/set_parameters")
        assert set_parameter(payload_link="panda_hand").successful     # mass 0: no payload yet
        for mass, reason in ((1e30, "more than 100 times the robot's mass"),
                             (float("nan"), "finite"), (float("inf"), "finite"), (-1.0, ">= 0")):
            result = set_parameter(payload_mass=mass)
            assert not result.successful and reason in result.reason, (mass, result.reason)
        for name, value in (("payload_com", [0.0, 0.0, float("nan")]),
                            ("wrench", [float("nan")] * 6), ("command_timeout", float("nan")),
                            ("real_time_factor", -1.0)):
            result = set_parameter(**{name: value})
            assert not result.successful and name.split("_")[0] in result.reason, (name, result)
        # A sane payload is still accepted afterwards: the node answers and nothing changed before.
        assert set_parameter(payload_mass=1.0).successful
        assert set_parameter(payload_mass=0.0).successful
        # Divergence: an absurd (but finite) wrench.
        count = states.count()
        assert set_parameter(wrench_link="panda_hand", wrench=[1e30, 0.0, 0.0, 0.0, 0.0, 0.0]).successful
        wait_for(lambda: "simulation diverged" in sim.log(), 30, what="the divergence report")
        assert set_parameter(wrench=[0.0] * 6).successful          # still answering
        wait_for(lambda: states.count() > count + 200, 30, what="states after the divergence")
    finally:
        code = sim.stop()
    log = sim.log()
    assert code == 0, log[-3000:]
    assert _states_are_finite(states), "a non-finite joint state was published"
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert "MuJoCo:" in log and log.count("MuJoCo:") < 20, log[-3000:]    # rate-limited
    assert "Traceback" not in log, log[-3000:]
