"""The Panda in Gazebo (gz sim) with gz_ros2_control, driven by the embedded model node.

    ros2 launch soa_dynamics_ros gazebo.launch.py

For a ROS 2 installation with Gazebo (ros_gz_sim, gz_ros2_control,
ros2_controllers, robot_state_publisher). NOT RUN on the machines this
package was developed on: Gazebo cannot be installed there; the MuJoCo arm
(sim.launch.py, `make demo`) speaks the same topics and is what was tested.
See docs/simulation.md.

What it starts:
  * gz sim with an empty world (Gazebo's gravity is 9.8, not 9.81: the node
    is given gravity [0, 0, -9.8] here to match);
  * robot_state_publisher with urdf/panda.ros2_control.xacro (panda.urdf +
    ros2_control tags + the gz_ros2_control plugin, controllers from
    config/panda_controllers.yaml); the robot is spawned from /robot_description;
  * the controller spawners: joint_state_broadcaster, effort_controller
    (forward_command_controller/ForwardCommandController on the effort
    interface);
  * a /clock bridge, and soa_dynamics_node with use_sim_time and
    ~/feedforward remapped to /effort_controller/commands.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare("soa_dynamics_ros")
    controllers = PathJoinSubstitution([share, "config", "panda_controllers.yaml"])
    description = ParameterValue(Command([
        FindExecutable(name="xacro"), " ",
        PathJoinSubstitution([share, "urdf", "panda.ros2_control.xacro"]),
        " controllers:=", controllers]), value_type=str)

    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution(
            [FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
        launch_arguments={"gz_args": [LaunchConfiguration("world"), " -r"]}.items())
    robot_state_publisher = Node(
        package="robot_state_publisher", executable="robot_state_publisher", output="screen",
        parameters=[{"robot_description": description, "use_sim_time": True}])
    spawn = Node(
        package="ros_gz_sim", executable="create", output="screen",
        arguments=["-topic", "robot_description", "-name", "panda", "-allow_renaming", "false"])
    clock_bridge = Node(
        package="ros_gz_bridge", executable="parameter_bridge", output="screen",
        arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"])
    joint_state_broadcaster = Node(
        package="controller_manager", executable="spawner",
        arguments=["joint_state_broadcaster", "--controller-manager", "/controller_manager"])
    effort_controller = Node(
        package="controller_manager", executable="spawner",
        arguments=["effort_controller", "--controller-manager", "/controller_manager"])
    model_node = Node(
        package="soa_dynamics_ros", executable="soa_dynamics_node", name="soa_dynamics",
        output="screen",
        parameters=[PathJoinSubstitution([share, "config", "panda.yaml"]),
                    {"use_sim_time": True,
                     "gravity": [0.0, 0.0, -9.8],     # Gazebo's default world gravity
                     "feedforward_mode": LaunchConfiguration("feedforward_mode")}],
        remappings=[("~/feedforward", "/effort_controller/commands")])

    return LaunchDescription([
        DeclareLaunchArgument("world", default_value="empty.sdf",
                              description="a Gazebo world file"),
        DeclareLaunchArgument("feedforward_mode", default_value="gravity"),
        gazebo, robot_state_publisher, spawn, clock_bridge, model_node,
        # Controllers once the robot (and its gz_ros2_control plugin) exists.
        RegisterEventHandler(OnProcessExit(target_action=spawn,
                                           on_exit=[joint_state_broadcaster])),
        RegisterEventHandler(OnProcessExit(target_action=joint_state_broadcaster,
                                           on_exit=[effort_controller])),
    ])
