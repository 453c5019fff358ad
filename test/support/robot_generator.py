"""Random fixed-base URDF trees for tests: branches, non-unit axes, every joint type.

The generator writes URDF text only; tests hand the same text to this project
and to the reference libraries.
"""
import numpy as np


def _vector(values):
    return " ".join(f"{value:.17g}" for value in values)


def _random_inertial(rng):
    mass = rng.uniform(0.2, 5.0)
    # Principal moments of a real body: (b+c, a+c, a+b) with a, b, c >= 0
    # always satisfies the triangle inequality.
    a, b, c = rng.uniform(0.001, 0.05, 3) * mass
    com = rng.uniform(-0.15, 0.15, 3)
    rpy = rng.uniform(-np.pi, np.pi, 3)
    return (f'<inertial><origin xyz="{_vector(com)}" rpy="{_vector(rpy)}"/>'
            f'<mass value="{mass:.17g}"/>'
            f'<inertia ixx="{b + c:.17g}" ixy="0" ixz="0" iyy="{a + c:.17g}" iyz="0" '
            f'izz="{a + b:.17g}"/></inertial>')


def random_tree_urdf(seed, moving_joints=10, branching=0.35, fixed_fraction=0.2,
                     prismatic_fraction=0.15, continuous_fraction=0.15, mimic_fraction=0.15):
    """URDF text of a random tree with ``moving_joints`` moving joints (plus fixed ones)."""
    rng = np.random.default_rng(seed)
    links = ['<link name="base">' + _random_inertial(rng) + "</link>"]
    joints = []
    link_names = ["base"]
    independent = []          # (name, type) of joints a mimic joint may follow
    moving = 0
    while moving < moving_joints:
        parent = (link_names[rng.integers(len(link_names))] if rng.random() < branching
                  else link_names[-1])
        index = len(link_names)
        child = f"link{index}"
        is_fixed = rng.random() < fixed_fraction
        origin = (f'<origin xyz="{_vector(rng.uniform(-0.3, 0.3, 3))}" '
                  f'rpy="{_vector(rng.uniform(-np.pi, np.pi, 3))}"/>')
        if is_fixed:
            # Some fixed children are bare frames (no inertial), as tool frames are.
            inertial = _random_inertial(rng) if rng.random() < 0.5 else ""
            joints.append(f'<joint name="joint{index}" type="fixed"><parent link="{parent}"/>'
                          f'<child link="{child}"/>{origin}</joint>')
        else:
            moving += 1
            inertial = _random_inertial(rng)
            draw = rng.random()
            if draw < prismatic_fraction:
                joint_type = "prismatic"
            elif draw < prismatic_fraction + continuous_fraction:
                joint_type = "continuous"
            else:
                joint_type = "revolute"
            # Axes deliberately not unit length: the URDF loader must normalize.
            axis = rng.normal(size=3) * rng.uniform(0.5, 2.0)
            limit = ('<limit effort="50" velocity="3"/>' if joint_type == "continuous" else
                     '<limit lower="-2.5" upper="2.5" effort="50" velocity="3"/>')
            mimic = ""
            name = f"joint{index}"
            if independent and rng.random() < mimic_fraction:
                master = independent[rng.integers(len(independent))]
                mimic = (f'<mimic joint="{master}" multiplier="{rng.uniform(0.3, 1.5) * rng.choice([-1, 1]):.17g}" '
                         f'offset="{rng.uniform(-0.3, 0.3):.17g}"/>')
            else:
                independent.append(name)
            joints.append(f'<joint name="{name}" type="{joint_type}"><parent link="{parent}"/>'
                          f'<child link="{child}"/>{origin}<axis xyz="{_vector(axis)}"/>'
                          f'{limit}{mimic}</joint>')
        links.append(f'<link name="{child}">{inertial}</link>')
        link_names.append(child)
    return (f'<?xml version="1.0"?>\n<robot name="random_tree_{seed}">\n'
            + "\n".join(links + joints) + "\n</robot>\n")
