"""Small hand-written descriptions shared by tests in more than one folder."""

# Links but no moving joint: every consumer must refuse it ("has no moving joints").
FIXED_ONLY = """<robot name="statue">
  <link name="base"/>
  <link name="head"><inertial><mass value="1"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="neck" type="fixed"><parent link="base"/><child link="head"/></joint>
</robot>"""

# A moving joint whose child has no mass: a singular hinge (no forward dynamics).
MASSLESS = """<robot name="massless">
  <link name="base"><inertial><mass value="1"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="l1"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>"""

# A mimic pair on massless links behind a massive one: M is singular where hinges couple.
MASSLESS_MIMIC = """<robot name="massless_mimic">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="l2"/>
  <link name="l3"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.2 0 0"/>
    <axis xyz="0 1 0"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/><axis xyz="1 0 0"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/><mimic joint="j2" multiplier="-0.7"/></joint>
</robot>"""

# An arm with a scaled mimic gripper: two sibling fingers follow one joint (one scaled,
# prismatic, with an offset), and a third hinge follows it from below its own master
# (its rate's hinges are ancestor and descendant).  M keeps the arm's tree sparsity: the
# compiled forward derivatives solve along the tree with coupled, scaled hinges.
_INERTIA = '<inertia ixx="{0}" ixy="0.001" ixz="0" iyy="{0}" iyz="0" izz="{1}"/>'


def _link(name, mass, com, ixx, izz):
    return (f'<link name="{name}"><inertial><mass value="{mass}"/><origin xyz="{com}"/>'
            + _INERTIA.format(ixx, izz) + '</inertial></link>')


def _joint(name, kind, parent, child, xyz, axis, mimic=""):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="0.1 0 0.2"/><axis xyz="{axis}"/>'
            f'<limit effort="10" velocity="2" lower="-2" upper="2"/>{mimic}</joint>')


SCALED_MIMIC_GRIPPER = ('<robot name="scaled_mimic_gripper"><link name="base"/>'
                        + _link("upper", 2.0, "0.1 0 0.05", 0.05, 0.02)
                        + _link("fore", 1.2, "0.15 0.01 0", 0.03, 0.01)
                        + _link("finger_a", 0.2, "0.02 0 0", 0.002, 0.001)
                        + _link("finger_b", 0.25, "0.02 0.01 0", 0.003, 0.001)
                        + _link("tip_a", 0.1, "0.01 0 0.01", 0.001, 0.0005)
                        + _joint("shoulder", "revolute", "base", "upper", "0 0 0.3", "0 0 1")
                        + _joint("elbow", "revolute", "upper", "fore", "0.3 0 0", "0 1 0")
                        + _joint("finger", "revolute", "fore", "finger_a", "0.3 0.02 0", "1 0 0")
                        + _joint("finger_mirror", "prismatic", "fore", "finger_b", "0.3 -0.02 0",
                                 "0 1 0", '<mimic joint="finger" multiplier="-0.6" offset="0.01"/>')
                        + _joint("tip", "revolute", "finger_a", "tip_a", "0.05 0 0", "0 0 1",
                                 '<mimic joint="finger" multiplier="1.4"/>')
                        + '</robot>')


# A point mass that j2 can turn onto j1's axis: at q2 = pi/2 nothing resists j1 (its
# articulated inertia is 2 * (0.5 cos q2)^2), a singular hinge in that sample only.
POINT_ONTO_AXIS = """<robot name="point_onto_axis">
  <link name="base"/>
  <link name="l1"/>
  <link name="l2"><inertial><origin xyz="0.5 0 0"/><mass value="2"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-3" upper="3"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>
    <limit effort="1" velocity="1" lower="-3" upper="3"/></joint>
</robot>"""


def two_link_arm(elbow):
    """Two links on hinges about y, the elbow ``elbow`` m from the shoulder: its kernels
    compile in seconds, and each elbow length is a structure of its own (its own kernel
    module names)."""
    return f"""<robot name="two_links">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="2"/>
    <inertia ixx="0.01" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0.15 0 0.01"/><mass value="1.5"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>
    <origin xyz="{elbow} 0 0"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
</robot>"""
