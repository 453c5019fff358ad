"""Orocos KDL as a second, independent oracle for serial chains: its solvers on a
chain built by ``oracles.kdl_chain`` (which documents the frame conventions).

``ChainIdSolver_RNE`` works in tip coordinates and computes
``f[i] = I a + v x I v - f_ext[i]``: ``f_ext[i]`` is the wrench acting *on*
segment i, in segment i's tip axes, about its tip origin.
"""
import numpy as np

from oracles.kdl_chain import SerialChain, from_kdl_frame, kdl
from oracles.urdf_geometry import inverse_transform

__all__ = ["KdlChain", "kdl"]


class KdlChain(SerialChain):
    """A serial chain of a URDF with KDL's dynamics, Jacobian and position solvers."""

    def __init__(self, urdf_xml, root, tip, gravity=(0.0, 0.0, -9.81)):
        super().__init__(urdf_xml, root, tip)
        self.nj = self.chain.getNrOfJoints()
        self.ns = self.chain.getNrOfSegments()
        self.gravity = kdl.Vector(*gravity)
        self.rne = kdl.ChainIdSolver_RNE(self.chain, self.gravity)
        self.dyn = kdl.ChainDynParam(self.chain, self.gravity)
        self.jac_solver = kdl.ChainJntToJacSolver(self.chain)
        self.fk = kdl.ChainFkSolverPos_recursive(self.chain)

    # ------------------------------------------------------------ conversions
    def _array(self, values):
        array = kdl.JntArray(self.nj)
        for i, value in enumerate(values):
            array[i] = float(value)
        return array

    @staticmethod
    def _numpy(array):
        return np.array([array[i] for i in range(array.rows())])

    def tip_poses(self, q):
        """4x4 pose of every segment tip frame in the root frame (KDL FK)."""
        # One call per segment: the List[Frame] overload of the binding fills a copy of
        # the list, leaving the caller's frames untouched.
        return [self.frame(q, segment) for segment in range(self.ns)]

    def frame(self, q, segment=-1):
        """4x4 pose of a segment tip (default: the chain tip) in the root frame."""
        frame = kdl.Frame()
        number = self.ns if segment < 0 else segment + 1
        assert self.fk.JntToCart(self._array(q), frame, number) >= 0
        return from_kdl_frame(frame)

    def segment_wrenches(self, q, wrenches):
        """Project wrenches ``{link: [f; t]}`` (root axes, about the link origin, acting on
        the robot) as KDL RNE ``f_ext``: per segment, tip axes, about the tip origin.
        Wrenches on links rigidly attached to the root are dropped (they do no work)."""
        result = [kdl.Wrench.Zero() for _ in range(self.ns)]
        if not wrenches:
            return result
        poses = self.tip_poses(q)
        for link, wrench in wrenches.items():
            segment, placement = self.link_body[link]
            if segment < 0:
                continue
            # Link origin in the segment tip frame (constant).
            r = (inverse_transform(self.tip_from_body[segment]) @ placement)[:3, 3]
            rotation = poses[segment][:3, :3]
            force = rotation.T @ np.asarray(wrench[:3], dtype=float)
            torque = rotation.T @ np.asarray(wrench[3:], dtype=float) + np.cross(r, force)
            result[segment] += kdl.Wrench(kdl.Vector(*force), kdl.Vector(*torque))
        return result

    # ------------------------------------------------------------ solvers
    def inverse_dynamics(self, q, qd, qdd, wrenches=None):
        torques = kdl.JntArray(self.nj)
        status = self.rne.CartToJnt(self._array(q), self._array(qd), self._array(qdd),
                                    self.segment_wrenches(q, wrenches), torques)
        assert status == 0, f"ChainIdSolver_RNE failed with {status}"
        return self._numpy(torques)

    def mass_matrix(self, q):
        mass = kdl.JntSpaceInertiaMatrix(self.nj)
        assert self.dyn.JntToMass(self._array(q), mass) == 0
        return np.array([[mass[r, c] for c in range(self.nj)] for r in range(self.nj)])

    def coriolis(self, q, qd):
        """C(q, qd) qd (no gravity)."""
        torques = kdl.JntArray(self.nj)
        assert self.dyn.JntToCoriolis(self._array(q), self._array(qd), torques) == 0
        return self._numpy(torques)

    def gravity_torques(self, q):
        torques = kdl.JntArray(self.nj)
        assert self.dyn.JntToGravity(self._array(q), torques) == 0
        return self._numpy(torques)

    def jacobian(self, q, segment=-1):
        """6 x nj Jacobian of a segment tip (default: the chain tip), reference point at
        that tip, base axes, rows [v; w]."""
        jacobian = kdl.Jacobian(self.nj)
        number = self.ns if segment < 0 else segment + 1
        assert self.jac_solver.JntToJac(self._array(q), jacobian, number) == 0
        return np.array([[jacobian[r, c] for c in range(self.nj)] for r in range(6)])
