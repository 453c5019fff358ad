"""Pinocchio's free-flyer model of a URDF beside ours: the reference of the floating-base
tests (test/model/test_floating_base.py, test_contacts.py)."""
import warnings

import numpy as np

from soa_dynamics_ros import RobotModel
from support.optional import require

pin = require("pinocchio")


def quiet_model(text, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # example-robot-data's massless sensor links
        return RobotModel.from_urdf(text, **options)


class Reference:
    """Pinocchio's free-flyer model of a URDF and the maps between its coordinates and ours."""

    def __init__(self, text, model):
        self.model = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
        self.data = self.model.createData()
        ids = [self.model.getJointId(name) for name in model.joint_names]
        assert all(self.model.joints[i].nq == 1 for i in ids)
        assert self.model.nq == model.nq and self.model.nv == model.nv
        self.q_index = np.r_[np.arange(7), [self.model.joints[i].idx_q for i in ids]]
        self.v_index = np.r_[np.arange(6), [self.model.joints[i].idx_v for i in ids]]

    def q(self, ours):
        theirs = np.zeros(self.model.nq)
        theirs[self.q_index] = ours
        return theirs

    def v(self, ours):
        theirs = np.zeros(self.model.nv)
        theirs[self.v_index] = ours
        return theirs

    def vector(self, theirs):
        return np.asarray(theirs)[self.v_index]

    def matrix(self, theirs, rows=True):
        theirs = np.asarray(theirs)
        return theirs[np.ix_(self.v_index, self.v_index)] if rows else theirs[:, self.v_index]
