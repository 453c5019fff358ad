"""The joint model: the one place that knows joint types.

A joint type is a :class:`JointModel`, looked up by its URDF type name with
:func:`joint_model`.  Each says, one function per concern (as spatial_v2's
``jcalc``):

* ``motion``: one of :data:`JOINT_MOTIONS`, the code path of the compiled
  recursions (:mod:`soa_dynamics_ros.kernels.generic`) that moves the child;
* ``moving``: whether it has a coordinate (a fixed joint has none and merges
  its child link into the parent body);
* ``hinge_map(axis)``: the motion subspace H, the spatial motion ``[v; w]`` of
  a unit joint rate in the joint frame (see :mod:`.spatial` for conventions);
* ``placement(rotation, translation, axis, q)``: the child body's placement in
  its parent's frame at coordinate ``q``, given the joint frame's placement
  ``(rotation, translation)``.  It is written with numpy operations only, so
  the kernel generator traces this same function with symbolic ``q``;
* ``unit`` and ``effort_unit``: of the coordinate (``rad`` or ``m``) and of
  its generalized force (``N m`` or ``N``);
* ``bounded``: whether the coordinate has position limits (a continuous joint
  has none; URDF requires ``<limit>`` on a bounded joint).

Adding a joint type means a new entry in :data:`JOINT_MODELS` here and its
reading in :mod:`soa_dynamics_ros.description.urdf`; every algorithm asks
this module.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .spatial import rotation_about_axis, skew


# The ways a joint moves its child body, each a code path of the compiled recursions
# (kernels/generic.c's JOINT_<MOTION> is the motion's index here).
JOINT_MOTIONS = ("none", "rotation", "translation")


@dataclass(frozen=True)
class JointModel:
    """How one joint type moves its child body (see the module docstring)."""
    name: str
    motion: str
    moving: bool
    bounded: bool
    unit: str
    effort_unit: str
    hinge_map: Callable
    placement: Callable


def _rotation_hinge_map(axis):
    column = np.zeros(6)
    column[3:] = axis
    return column


def _translation_hinge_map(axis):
    column = np.zeros(6)
    column[:3] = axis
    return column


def _no_hinge_map(axis):
    return np.zeros(6)


def _rotation_placement(rotation, translation, axis, q):
    if np.count_nonzero(axis) > 1:
        # R (1 + sin q K + (1 - cos q) K^2) with R K and R K^2 formed once: about an axis
        # off the coordinate axes Rodrigues' matrix is dense, and R times it would cost a
        # kernel 69 operations per joint against 37 (a coordinate axis keeps the
        # product, which folds to fewer).
        k = skew(axis)
        turned = rotation @ k
        return rotation + np.sin(q) * turned + (1.0 - np.cos(q)) * (turned @ k), translation
    return rotation @ rotation_about_axis(axis, q), translation


def _translation_placement(rotation, translation, axis, q):
    return rotation, translation + rotation @ (axis * q)


def _fixed_placement(rotation, translation, axis, q):
    return rotation, translation


REVOLUTE = JointModel("revolute", motion="rotation", moving=True, bounded=True, unit="rad",
                      effort_unit="N m", hinge_map=_rotation_hinge_map,
                      placement=_rotation_placement)
CONTINUOUS = JointModel("continuous", motion="rotation", moving=True, bounded=False, unit="rad",
                        effort_unit="N m", hinge_map=_rotation_hinge_map,
                        placement=_rotation_placement)
PRISMATIC = JointModel("prismatic", motion="translation", moving=True, bounded=True, unit="m",
                       effort_unit="N", hinge_map=_translation_hinge_map,
                       placement=_translation_placement)
FIXED = JointModel("fixed", motion="none", moving=False, bounded=False, unit=None,
                   effort_unit=None, hinge_map=_no_hinge_map, placement=_fixed_placement)

# URDF type name -> model: every joint type the package supports.
JOINT_MODELS = {model.name: model for model in (REVOLUTE, CONTINUOUS, PRISMATIC, FIXED)}


def joint_model(type_name):
    """The :class:`JointModel` of a supported URDF joint type (KeyError otherwise)."""
    return JOINT_MODELS[type_name]


def is_moving(type_name):
    """Whether a supported URDF joint type has a coordinate."""
    return JOINT_MODELS[type_name].moving
