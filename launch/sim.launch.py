"""The MuJoCo arm and the embedded model node, remapped so feedforward drives the arm.

    ros2 launch soa_dynamics_ros sim.launch.py                  # Panda, gravity feedforward
    ros2 launch soa_dynamics_ros sim.launch.py robot:=dual_arm_torso

Equivalent without launch (as on machines where launch is not installable;
`make demo` does this and reports on the loop):

    soa_dynamics_sim --ros-args --params-file config/panda_sim.yaml &
    soa_dynamics_node --ros-args --params-file config/panda.yaml \
        -r ~/feedforward:=/effort_controller/commands

The sim speaks what Gazebo + gz_ros2_control + a JointGroupEffortController
named effort_controller speak (see gazebo.launch.py), so the node's
configuration is the same against both.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, TextSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    robot = LaunchConfiguration("robot")
    config = PathJoinSubstitution([FindPackageShare("soa_dynamics_ros"), "config"])
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="panda",
                              description="panda or dual_arm_torso (config/<robot>_sim.yaml)"),
        DeclareLaunchArgument("sim_params", default_value=PathJoinSubstitution(
            [config, [robot, TextSubstitution(text="_sim.yaml")]]),
            description="soa_dynamics_sim parameters"),
        DeclareLaunchArgument("node_params", default_value=PathJoinSubstitution(
            [config, [robot, TextSubstitution(text=".yaml")]]),
            description="soa_dynamics_node parameters"),
        DeclareLaunchArgument("feedforward_mode", default_value="gravity",
                              description="gravity | inverse_dynamics | computed_torque | off"),
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
            parameters=[LaunchConfiguration("node_params"),
                        {"feedforward_mode": LaunchConfiguration("feedforward_mode")}],
            remappings=[("~/feedforward", "/effort_controller/commands")],
        ),
    ])
