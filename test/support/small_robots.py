"""Small hand-written descriptions shared by tests in more than one folder."""

# Links but no moving joint: every consumer must refuse it ("has no moving joints").
FIXED_ONLY = """<robot name="statue">
  <link name="base"/>
  <link name="head"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="neck" type="fixed"><parent link="base"/><child link="head"/></joint>
</robot>"""

# A moving joint whose child has no mass: a singular hinge (no forward dynamics).
MASSLESS = """<robot name="massless">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="l1"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>"""
