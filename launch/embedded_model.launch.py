"""The embedded model node for a shipped robot (ROS 2 installs with launch/launch_ros).

    ros2 launch soa_dynamics_ros embedded_model.launch.py robot:=panda \
        command_topic:=/effort_controller/commands

Equivalent without launch (as on machines where launch is not installable):

    soa_dynamics_node --ros-args --params-file config/panda.yaml \
        -r '~/feedforward:=/effort_controller/commands'
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

# Robots with a config/<robot>.yaml (test/test_launch_files.py checks each exists).
ROBOTS = ["panda", "ur5", "dual_arm_torso", "double_pendulum"]


def generate_launch_description():
    robot = LaunchConfiguration("robot")
    params_file = LaunchConfiguration("params_file")
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="panda", choices=ROBOTS,
                              description="a shipped robot (config/<robot>.yaml)"),
        # A list of substitutions is concatenated: "<share>/config/<robot>" + ".yaml".
        # (A nested list inside PathJoinSubstitution needs ros2/launch#838, Kilted.)
        DeclareLaunchArgument("params_file", default_value=[PathJoinSubstitution([
            FindPackageShare("soa_dynamics_ros"), "config", robot]), ".yaml"],
            description="node parameters (config/<robot>.yaml by default)"),
        DeclareLaunchArgument("command_topic", default_value="/effort_controller/commands",
                              description="where ~/feedforward is remapped (an effort "
                              "forward_command_controller/ForwardCommandController's ~/commands)"),
        DeclareLaunchArgument("joint_states_topic", default_value="/joint_states"),
        Node(
            package="soa_dynamics_ros",
            executable="soa_dynamics_node",
            name="soa_dynamics",
            output="screen",
            parameters=[params_file],
            remappings=[("~/feedforward", LaunchConfiguration("command_topic")),
                        ("joint_states", LaunchConfiguration("joint_states_topic"))],
        ),
    ])
