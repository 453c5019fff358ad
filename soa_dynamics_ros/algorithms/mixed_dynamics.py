"""Mixed dynamics (DARTS): some hinges have known accelerations, the rest known torques.

The articulated-body gather carries prescribed hinges rigidly; the scatter
computes the free accelerations; the torque of a prescribed hinge is then the
projection of the force across it, H (P a + z).
"""
from . import articulated_body


def mixed_dynamics(tree, q_hinge, qd_hinge, qdd_hinge, tau_hinge, prescribed, root_acceleration,
                   body_forces=None):
    """``(qdd, tau)`` per hinge: ``qdd`` given where ``prescribed``, ``tau`` elsewhere."""
    free = ~prescribed
    bodies = articulated_body.gather(tree, q_hinge, qd_hinge, tau_hinge, body_forces, free,
                                     qdd_hinge)
    qdd, acceleration = articulated_body.scatter(tree, bodies, root_acceleration, qdd_hinge)
    forces = articulated_body.hinge_forces(tree, bodies, acceleration)
    tau = tau_hinge.copy()
    tau[prescribed] = (tree.hinge_map * forces).sum(axis=1)[prescribed]
    return qdd, tau
