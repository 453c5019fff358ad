"""Small hand-written descriptions shared by tests in more than one folder."""

# Links but no moving joint: every consumer must refuse it ("has no moving joints").
FIXED_ONLY = """<robot name="statue">
  <link name="base"/>
  <link name="head"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="neck" type="fixed"><parent link="base"/><child link="head"/></joint>
</robot>"""
