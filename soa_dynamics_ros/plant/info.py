"""A summary of a robot description: tree, joints, limits, masses, inertia validation."""
import numpy as np

from ..validation import inertia_problems
from .chain import LinkTree


def robot_info(model):
    """Plain-data description of ``model`` (JSON-ready apart from inf limits)."""
    description = model.description
    tree = LinkTree(model)
    meta = {joint.name: joint for joint in model.joints}
    joints = []
    for joint in description.joints.values():
        entry = {"name": joint.name, "type": joint.type, "parent": joint.parent,
                 "child": joint.child}
        if joint.name in meta:
            info = meta[joint.name]
            entry.update({"axis": (joint.axis / np.linalg.norm(joint.axis)).tolist(),
                          "lower": info.lower, "upper": info.upper, "effort": info.effort,
                          "velocity": info.velocity, "mimic_of": info.mimic_of,
                          "independent": info.mimic_of is None})
        joints.append(entry)
    links, problems = [], []
    for link in description.links.values():
        entry = {"name": link.name, "depth": tree.depth(link.name),
                 "mass": float(link.mass) if link.has_inertial else 0.0,
                 "has_inertial": bool(link.has_inertial)}
        if link.has_inertial:
            found = inertia_problems(link.mass, link.inertia)
            entry["inertia_problems"] = found
            problems.extend(f"link {link.name!r}: {p}" for p in found)
        links.append(entry)
    zero = np.zeros(model.dof)
    return {
        "robot": model.name,
        "root": description.root,
        "dof": model.dof,
        "joint_names": model.joint_names,
        "moving_joints": len(model.joints),
        "mimic_joints": [j.name for j in model.joints if j.mimic_of],
        "joints": joints,
        "links": links,
        "total_mass": model.total_mass,
        "center_of_mass_at_zero": model.center_of_mass(zero).tolist(),
        "inertia_valid": not problems,
        "inertia_problems": problems,
    }
