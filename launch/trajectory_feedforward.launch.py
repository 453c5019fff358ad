"""Trajectory efforts for a joint_trajectory_controller on an effort interface (Jazzy, Kilted).

The planner (MoveIt, a script) publishes its JointTrajectory to
``trajectory_topic``; the node fills every point's ``effort`` (inverse
dynamics with the node's payloads and gravity) and passes the trajectory on
to the controller, which adds those efforts to its PID output
(ros2_controllers PR #1200, Jazzy and later):

    ros2 launch soa_dynamics_ros trajectory_feedforward.launch.py robot:=panda \
        robot_compensates_gravity:=false

Equivalent without launch:

    soa_dynamics_node --ros-args --params-file config/panda.yaml \
        -p feedforward_mode:=off -p robot_compensates_gravity:=false \
        -r '~/trajectory_in:=/planned_trajectory' \
        -r '~/trajectory_out:=/joint_trajectory_controller/joint_trajectory'

The ~/feedforward stream is off: the trajectory controller owns the effort
command interface, and its points carry the feedforward.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

# Robots with a config/<robot>.yaml (test/ros/test_launch_files.py checks each exists).
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
        DeclareLaunchArgument("trajectory_topic", default_value="/planned_trajectory",
                              description="where the planner publishes its JointTrajectory "
                              "(the node's ~/trajectory_in)"),
        DeclareLaunchArgument("controller_topic",
                              default_value="/joint_trajectory_controller/joint_trajectory",
                              description="the joint_trajectory_controller's trajectory topic "
                              "(the node's ~/trajectory_out)"),
        DeclareLaunchArgument("robot_compensates_gravity", default_value="false",
                              choices=["true", "false"],
                              description="true for arms that add their own gravity torques "
                              "(README, 'Robots that compensate their own gravity')"),
        DeclareLaunchArgument("joint_states_topic", default_value="/joint_states"),
        Node(
            package="soa_dynamics_ros",
            executable="soa_dynamics_node",
            name="soa_dynamics",
            output="screen",
            parameters=[params_file, {
                "feedforward_mode": "off",
                "robot_compensates_gravity": LaunchConfiguration("robot_compensates_gravity"),
            }],
            remappings=[("~/trajectory_in", LaunchConfiguration("trajectory_topic")),
                        ("~/trajectory_out", LaunchConfiguration("controller_topic")),
                        ("joint_states", LaunchConfiguration("joint_states_topic"))],
        ),
    ])
