"""The MuJoCo arm and the embedded model node, remapped so feedforward drives the arm.

    ros2 launch soa_dynamics_ros sim.launch.py                  # Panda, gravity feedforward
    ros2 launch soa_dynamics_ros sim.launch.py robot:=dual_arm_torso

Equivalent without launch (as on machines where launch is not installable;
`make demo` does this and reports on the loop):

    soa_dynamics_sim --ros-args --params-file config/panda_sim.yaml &
    soa_dynamics_node --ros-args --params-file config/panda.yaml \
        -r '~/feedforward:=/effort_controller/commands'

The sim speaks what Gazebo + gz_ros2_control + an effort
forward_command_controller/ForwardCommandController named effort_controller
speak (see gazebo.launch.py), so the node's configuration is the same against both.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

# Robots with both config/<robot>.yaml and config/<robot>_sim.yaml
# (test/test_launch_files.py checks each exists and starts the sim with it).
ROBOTS = ["panda", "ur5", "dual_arm_torso", "double_pendulum"]


def generate_launch_description():
    robot = LaunchConfiguration("robot")
    # A list of substitutions is concatenated: "<share>/config/<robot>" + "_sim.yaml".
    # (A nested list inside PathJoinSubstitution needs ros2/launch#838, Kilted.)
    config_of_robot = PathJoinSubstitution([FindPackageShare("soa_dynamics_ros"), "config", robot])
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="panda", choices=ROBOTS,
                              description="a shipped robot (config/<robot>_sim.yaml and "
                                          "config/<robot>.yaml)"),
        DeclareLaunchArgument("sim_params", default_value=[config_of_robot, "_sim.yaml"],
                              description="soa_dynamics_sim parameters"),
        DeclareLaunchArgument("node_params", default_value=[config_of_robot, ".yaml"],
                              description="soa_dynamics_node parameters"),
        DeclareLaunchArgument("feedforward_mode", default_value="gravity",
                              choices=["gravity", "inverse_dynamics", "computed_torque", "off"],
                              description="the node's feedforward_mode"),
        Node(
            package="soa_dynamics_ros",
            executable="soa_dynamics_sim",
            name="soa_dynamics_sim",
            output="screen",
            parameters=[LaunchConfiguration("sim_params")],
        ),
        Node(
            package="soa_dynamics_ros",
            executable="soa_dynamics_node",
            name="soa_dynamics",
            output="screen",
            # No ramp: the simulated arm is released at its first command and has
            # no controller of its own to hold it while the feedforward ramps in.
            parameters=[LaunchConfiguration("node_params"),
                        {"feedforward_mode": LaunchConfiguration("feedforward_mode"),
                         "feedforward_ramp_time": 0.0}],
            remappings=[("~/feedforward", "/effort_controller/commands")],
        ),
    ])
