"""Pinocchio as an independent oracle, with URDF-name based coordinate mapping.

Pinocchio is built without mimic folding (every mimic joint is its own joint);
the mimic relations are read here from the URDF with the standard library and
applied as q_joint = m q_master + o, which keeps this oracle independent of
the project's own URDF parser.
"""
import xml.etree.ElementTree as ET

import numpy as np

from support.optional import require

pin = require("pinocchio")


class PinocchioReference:
    def __init__(self, urdf_xml, joint_names, gravity=(0.0, 0.0, -9.81)):
        self.model = pin.buildModelFromXML(urdf_xml)
        self.model.gravity = pin.Motion(np.asarray(gravity, dtype=float), np.zeros(3))
        self.data = self.model.createData()
        self.joint_names = list(joint_names)
        column = {name: i for i, name in enumerate(self.joint_names)}
        robot = ET.fromstring(urdf_xml)
        moving = set(self.model.names[1:])     # Pinocchio's joints: the URDF's moving ones
        mimics = {}
        for joint in robot.findall("joint"):
            tag = joint.find("mimic")
            # A <mimic> of a joint that does not move (or does not exist) is followed by nothing.
            if tag is not None and tag.get("joint") in moving:
                mimics[joint.get("name")] = (tag.get("joint"), float(tag.get("multiplier", 1)),
                                             float(tag.get("offset", 0)))
        # For each Pinocchio joint: (idx_q, idx_v, nq, {column: multiplier}, offset).
        self.joints = []
        self.selection = np.zeros((self.model.nv, len(self.joint_names)))
        for jid in range(1, self.model.njoints):
            name = self.model.names[jid]
            multiplier, offset, master = 1.0, 0.0, name
            while master in mimics:
                master, m, o = mimics[master]
                offset += multiplier * o
                multiplier *= m
            joint = self.model.joints[jid]
            self.joints.append((joint.idx_q, joint.idx_v, joint.nq, column[master], multiplier, offset))
            self.selection[joint.idx_v, column[master]] = multiplier

    def configuration(self, q):
        config = np.zeros(self.model.nq)
        for idx_q, _, nq, col, multiplier, offset in self.joints:
            angle = multiplier * q[col] + offset
            if nq == 2:  # continuous joints: (cos, sin)
                config[idx_q:idx_q + 2] = np.cos(angle), np.sin(angle)
            else:
                config[idx_q] = angle
        return config

    def _zero_forces(self):
        forces = pin.StdVec_Force()
        for _ in range(self.model.njoints):
            forces.append(pin.Force.Zero())
        return forces

    def joint_forces(self, wrenches):
        """Pinocchio's external forces from ``{joint name: [f; t]}``, each wrench acting on
        the body that joint moves, in the joint's frame about its origin."""
        forces = self._zero_forces()
        for name, wrench in wrenches.items():
            forces[self.model.getJointId(name)] = pin.Force(np.asarray(wrench, dtype=float))
        return forces

    def _external_forces(self, config, wrenches):
        forces = self._zero_forces()
        if not wrenches:
            return forces
        pin.forwardKinematics(self.model, self.data, config)
        pin.updateFramePlacements(self.model, self.data)
        for link, wrench in wrenches.items():
            fid = self.model.getFrameId(link, pin.FrameType.BODY)
            point = self.data.oMf[fid].translation
            force, moment = np.asarray(wrench[:3]), np.asarray(wrench[3:])
            about_world_origin = pin.Force(force, moment + np.cross(point, force))
            jid = self.model.frames[fid].parentJoint
            forces[jid] += self.data.oMi[jid].actInv(about_world_origin)
        return forces

    def inverse_dynamics(self, q, qd, qdd, wrenches=None):
        config = self.configuration(q)
        s = self.selection
        forces = self._external_forces(config, wrenches)
        return s.T @ pin.rnea(self.model, self.data, config, s @ qd, s @ qdd, forces)

    def mass_matrix(self, q):
        mass = pin.crba(self.model, self.data, self.configuration(q))
        mass = np.triu(mass) + np.triu(mass, 1).T
        return self.selection.T @ mass @ self.selection

    def forward_dynamics(self, q, qd, tau, wrenches=None):
        bias = self.inverse_dynamics(q, qd, np.zeros_like(q), wrenches)
        return np.linalg.solve(self.mass_matrix(q), tau - bias)

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        """Pinocchio's computeRNEADerivatives, folded onto the independent joints (the
        chain rule through q_joint = m q_master + o: S^T D S); no external forces."""
        s = self.selection
        dtau_dq, dtau_dv, _ = pin.computeRNEADerivatives(self.model, self.data,
                                                         self.configuration(q), s @ qd, s @ qdd)
        return s.T @ dtau_dq @ s, s.T @ dtau_dv @ s

    def gravity_derivatives(self, q):
        s = self.selection
        return s.T @ pin.computeGeneralizedGravityDerivatives(
            self.model, self.data, self.configuration(q)) @ s

    def forward_dynamics_derivatives(self, q, qd, tau):
        """Pinocchio's computeABADerivatives.  With mimic joints (which ABA cannot fold)
        the same quantities from Pinocchio's folded RNEA derivatives and mass matrix:
        dqdd/dq = -M^-1 dtau/dq at qdd = FD(q, qd, tau), and so on."""
        s = self.selection
        if s.shape[0] != s.shape[1]:
            mass = self.mass_matrix(q)
            dtau_dq, dtau_dqd = self.inverse_dynamics_derivatives(
                q, qd, self.forward_dynamics(q, qd, tau))
            return (-np.linalg.solve(mass, dtau_dq), -np.linalg.solve(mass, dtau_dqd),
                    np.linalg.inv(mass))
        dqdd_dq, dqdd_dv, dqdd_dtau = pin.computeABADerivatives(
            self.model, self.data, self.configuration(q), s @ qd, s @ tau)
        # Pinocchio fills only the upper triangle of M^-1.
        dqdd_dtau = np.triu(dqdd_dtau) + np.triu(dqdd_dtau, 1).T
        return s.T @ dqdd_dq @ s, s.T @ dqdd_dv @ s, s.T @ dqdd_dtau @ s

    def coriolis_matrix(self, q, qd):
        """computeCoriolisMatrix folded onto the independent joints: S^T C S."""
        s = self.selection
        return s.T @ pin.computeCoriolisMatrix(self.model, self.data, self.configuration(q),
                                               s @ qd) @ s

    def kinetic_energy(self, q, qd):
        return pin.computeKineticEnergy(self.model, self.data, self.configuration(q),
                                        self.selection @ qd)

    def potential_energy(self, q):
        return pin.computePotentialEnergy(self.model, self.data, self.configuration(q))

    def joint_torque_regressor(self, q, qd, qdd):
        """Pinocchio's computeJointTorqueRegressor folded onto the independent joints
        (S^T Y): columns in Pinocchio's joint order, ten per joint in Pinocchio's order
        (m, m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz about the joint frame origin)."""
        s = self.selection
        return s.T @ pin.computeJointTorqueRegressor(self.model, self.data,
                                                     self.configuration(q), s @ qd, s @ qdd)

    def frame_pose(self, q, link):
        pin.framesForwardKinematics(self.model, self.data, self.configuration(q))
        return self.data.oMf[self.model.getFrameId(link, pin.FrameType.BODY)].homogeneous

    def jacobian(self, q, link):
        config = self.configuration(q)
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        jacobian = pin.computeFrameJacobian(self.model, self.data, config, fid,
                                            pin.LOCAL_WORLD_ALIGNED)
        return jacobian @ self.selection

    def classical_drift(self, q, qd, link):
        """Classical acceleration [dv/dt; dw/dt] of a link origin at qdd = 0 (root axes)."""
        pin.forwardKinematics(self.model, self.data, self.configuration(q), self.selection @ qd,
                              np.zeros(self.model.nv))
        pin.updateFramePlacements(self.model, self.data)
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        return pin.getFrameClassicalAcceleration(self.model, self.data, fid,
                                                 pin.LOCAL_WORLD_ALIGNED).vector

    def _frame_id(self, link):
        return self.model.getFrameId(link, pin.FrameType.BODY)

    def frame_twist(self, q, qd, link):
        """getFrameVelocity, LOCAL_WORLD_ALIGNED: [v; w] of a link origin in root axes."""
        pin.forwardKinematics(self.model, self.data, self.configuration(q), self.selection @ qd)
        return pin.getFrameVelocity(self.model, self.data, self._frame_id(link),
                                    pin.LOCAL_WORLD_ALIGNED).vector

    def frame_acceleration(self, q, qd, qdd, link):
        """getFrameClassicalAcceleration, LOCAL_WORLD_ALIGNED."""
        pin.forwardKinematics(self.model, self.data, self.configuration(q), self.selection @ qd,
                              self.selection @ qdd)
        return pin.getFrameClassicalAcceleration(self.model, self.data, self._frame_id(link),
                                                 pin.LOCAL_WORLD_ALIGNED).vector

    def jacobian_time_derivative(self, q, qd, link):
        """getFrameJacobianTimeVariation, LOCAL_WORLD_ALIGNED, folded on the independent
        joints (dJ/dt S: S is constant)."""
        pin.computeJointJacobiansTimeVariation(self.model, self.data, self.configuration(q),
                                               self.selection @ qd)
        pin.updateFramePlacements(self.model, self.data)
        return pin.getFrameJacobianTimeVariation(self.model, self.data, self._frame_id(link),
                                                 pin.LOCAL_WORLD_ALIGNED) @ self.selection

    def task_space_compliance(self, q, links, columns=None):
        """J M^-1 J^T for the stacked frame Jacobians (optionally over some joints only)."""
        columns = slice(None) if columns is None else columns
        jacobian = np.vstack([self.jacobian(q, link)[:, columns] for link in links])
        mass = self.mass_matrix(q)[np.ix_(*(2 * [np.arange(len(self.joint_names))[columns]]))]
        return jacobian @ np.linalg.solve(mass, jacobian.T)

    def hybrid_dynamics(self, q, qd, constraints, tau, wrenches=None, columns=None):
        """KKT solution of Gauss' principle: M qdd + h = tau + A^T nu, A qdd = beta - alpha^T drift."""
        n = len(self.joint_names)
        columns = np.arange(n) if columns is None else np.asarray(columns)
        full_qd = np.zeros(n)
        full_qd[columns] = qd
        mass = self.mass_matrix(q)[np.ix_(columns, columns)]
        bias = self.inverse_dynamics(q, full_qd, np.zeros(n), wrenches)[columns]
        rows, targets = [], []
        for link, alpha, beta in constraints:
            rows.append(alpha.T @ self.jacobian(q, link)[:, columns])
            targets.append(beta - alpha.T @ self.classical_drift(q, full_qd, link))
        constraint = np.vstack(rows)
        m = constraint.shape[0]
        kkt = np.block([[mass, -constraint.T], [constraint, np.zeros((m, m))]])
        solution = np.linalg.solve(kkt, np.concatenate((tau - bias, *targets)))
        return solution[:len(columns)], solution[len(columns):], constraint

    def attach(self, link, mass, com, inertia):
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        frame = self.model.frames[fid]
        self.model.inertias[frame.parentJoint] = (self.model.inertias[frame.parentJoint]
                                                  + frame.placement.act(pin.Inertia(mass, com, inertia)))
        self.data = self.model.createData()
