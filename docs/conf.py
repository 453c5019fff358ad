"""Sphinx configuration: the topic pages (Markdown, through MyST) and the API reference.

Build: ``.venv/bin/sphinx-build -W -b html docs build/docs``.  rosdoc2 finds this
project through ``rosdoc2.yaml``.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

project = "soa_dynamics_ros"
author = "SOA Dynamics Maintainers"
copyright = "the soa_dynamics_ros authors, Apache-2.0"  # noqa: A001 - Sphinx's name
release = "0.1.0"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
# The API reference documents the ROS-free library; the node's modules import rclpy and
# generated messages, which a docs build on a machine without ROS does not have.
autodoc_mock_imports = ["rclpy", "soa_dynamics_ros.msg", "soa_dynamics_ros.srv"]
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_member_order = "bysource"
html_theme = "alabaster"
