"""Articulated-body forward dynamics (ABA): hinge torques in, accelerations out."""
from . import articulated_body


def forward_dynamics(tree, q_hinge, qd_hinge, tau_hinge, root_acceleration, body_forces=None,
                     free=None):
    """Hinge accelerations; hinges not ``free`` are locked (zero acceleration)."""
    bodies = articulated_body.gather(tree, q_hinge, qd_hinge, tau_hinge, body_forces, free)
    qdd, _ = articulated_body.scatter(tree, bodies, root_acceleration)
    return qdd
