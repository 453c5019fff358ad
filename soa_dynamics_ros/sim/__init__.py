"""Simulation: the MuJoCo plant built from a URDF, the simulated arm's ROS node
and the closed-loop demo.
"""
